"""Notebook 01: AES-256, RSA-2048 and SPHINCS+ per operation, beside study 000 (Java + Bouncy Castle).

Absolute times from another machine, language and year do not compare; ratios between operations *within*
one system do (signing over verifying, key generation over decryption ...), and so do sizes where the
encodings are the same.  A *system* is one source of times:

* the study: its published means of five cold calls (no samples, so its ratios carry no interval);
* each Python backend here: medians of many calls (:func:`pqlab.bench`);
* each Bouncy Castle release run here (the current one, and the study's own release when Maven provides it):
  its *cold* first calls after JVM start, summarised like the study (mean of the first N), and its JIT-warmed
  *steady state* (median).

Every ratio of ours comes with an interval over rounds (pqlab.stats.round_interval) of the same statistic the system reports
(:func:`pqlab.stats.ratio_ci`); a study value divided by ours uses :func:`pqlab.stats.ratio_to_published`
(interval from our side only).  Every sentence that states a number, a version or a machine fact is built
here from the data.  The study did not say whether its SPHINCS+ was the simple or the robust variant, so its
SPHINCS+ row is compared with both.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .. import flags, plotting
from ..formatting import fmt_bytes, fmt_factor, fmt_factor_ci, fmt_percent, fmt_time_ns
from ..reference import load_reference, reference_source
from ..results import round_records, verified_rows, with_rounds
from ..stats import CONFIDENCE, MIN_SAMPLES, ratio_ci, ratio_to_published

TOPIC = "01_aes_rsa_sphincs"
#: our algorithm -> the study's row it is compared with (the study's SPHINCS+ variant is not stated)
STUDY_ROW = {"AES-256-CBC": "AES-256-CBC", "RSA-2048-PKCS1v15-enc": "RSA-2048", "RSA-2048": "RSA-2048",
             "SPHINCS+-SHAKE-128f-simple": "SPHINCS+-SHAKE-128f", "SPHINCS+-SHAKE-128f-robust": "SPHINCS+-SHAKE-128f"}
#: the within-system ratios compared with the study's: (study row, numerator, denominator)
PAIRS = [("SPHINCS+-SHAKE-128f", "sign", "verify"), ("SPHINCS+-SHAKE-128f", "sign", "keygen"),
         ("RSA-2048", "keygen", "decrypt"), ("RSA-2048", "decrypt", "encrypt"), ("AES-256-CBC", "keygen", "encrypt")]
#: Operations that play the same role in the study's three columns.
OPERATION_ROLE = {"keygen": "keygen", "encrypt": "encrypt/sign", "sign": "encrypt/sign", "encaps": "encrypt/sign",
                  "decrypt": "decrypt/verify", "verify": "decrypt/verify", "decaps": "decrypt/verify"}
STUDY = "study"
COLD, STEADY, PYTHON = "jvm cold", "jvm steady state", "python"


def variant_of(algorithm: str) -> str:
    """"simple" / "robust" for SPHINCS+ names, "" otherwise."""
    return algorithm.rsplit("-", 1)[1] if algorithm.startswith("SPHINCS+") else ""


def variants(study_row: str) -> list[str]:
    """Our variants compared with one study row: ["robust", "simple"] for its SPHINCS+, [""] otherwise."""
    return sorted({variant_of(a) for a, s in STUDY_ROW.items() if s == study_row}) or [""]


def study_platform() -> dict:
    """The study's platform as transcribed (``sources.yaml``): Bouncy Castle release, Java."""
    return reference_source(TOPIC)["platform"]


def study_label(reference: pd.DataFrame | None = None) -> str:
    """E.g. "study (BC 1.72, mean of 5)", from the transcribed platform and method."""
    ref = load_reference(TOPIC) if reference is None else reference
    return f"{STUDY} (BC {study_platform()['bouncycastle']}, mean of {int(ref['runs'].iloc[0])})"


# ----- times per system -----
def _values(run, algorithm: str, backend: str, operation: str, phase: str | None = None):
    """One operation's per-call times: labelled with their rounds where the run measured in rounds (ratios are
    then paired by round), else a plain array (no interval)."""
    s = run.samples
    sel = (s["algorithm"] == algorithm) & (s["backend"] == backend) & (s["operation"] == operation)
    if phase is not None:
        sel &= s["phase"] == phase
    return with_rounds(s.loc[sel].dropna(subset=["time_ns"]), "time_ns", round_records(run))


def bc_release(run) -> str:
    """The Bouncy Castle release a run measured (its metadata, as the JVM reported it)."""
    return str(run.meta.get("bouncycastle_version") or run.measurements["library_version"].iloc[0])


def system_values(study_run=None, bc_runs=(), reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per system, algorithm and operation: the value the system reports (ms), its statistic and its raw
    samples (ns; empty for the study).  Columns: system, kind, statistic, study_row, variant, algorithm,
    operation, value_ms, n, values."""
    ref = load_reference(TOPIC) if reference is None else reference
    rows = []
    label = study_label(ref)
    for r in ref.itertuples():
        row = STUDY_ROW[r.algorithm]
        for variant in variants(row):
            rows.append({"system": label, "kind": STUDY, "statistic": "mean", "study_row": row, "variant": variant,
                         "algorithm": r.study_label, "operation": r.operation, "value_ms": float(r.time_ms),
                         "n": int(r.runs), "values": np.array([])})
    if study_run is not None:
        for r in verified_rows(study_run.measurements).itertuples():
            v = _values(study_run, r.algorithm, r.backend, r.operation)
            rows.append({"system": r.backend, "kind": PYTHON, "statistic": "median",
                         "study_row": STUDY_ROW.get(r.algorithm, r.algorithm), "variant": variant_of(r.algorithm),
                         "algorithm": r.algorithm, "operation": r.operation,
                         "value_ms": float(np.median(v)) / 1e6 if v.size else np.nan, "n": v.size, "values": v})
    for run in (r for r in bc_runs if r is not None):
        release, first = bc_release(run), int(run.meta.get("params", {}).get("cold", MIN_SAMPLES))
        ok = verified_rows(run.measurements).drop_duplicates(["algorithm", "operation"])
        for r in ok.itertuples():
            cold = _values(run, r.algorithm, r.backend, r.operation, "cold")[:first]
            warm = _values(run, r.algorithm, r.backend, r.operation, "warm")
            base = {"study_row": STUDY_ROW.get(r.algorithm, r.algorithm), "variant": variant_of(r.algorithm),
                    "algorithm": r.algorithm, "operation": r.operation}
            rows.append({"system": f"BC {release} cold (mean of first {cold.size})", "kind": COLD,
                         "statistic": "mean", **base, "value_ms": cold.mean() / 1e6 if cold.size else np.nan,
                         "n": cold.size, "values": cold})
            rows.append({"system": f"BC {release} steady state", "kind": STEADY, "statistic": "median", **base,
                         "value_ms": float(np.median(warm)) / 1e6 if warm.size else np.nan, "n": warm.size,
                         "values": warm})
    return pd.DataFrame(rows)


def times_by_system(values: pd.DataFrame) -> pd.DataFrame:
    """Wide table of times (ms): one row per study row, variant and operation, one column per system."""
    wide = values.pivot_table(index=["study_row", "variant", "operation"], columns="system", values="value_ms",
                              aggfunc="first", sort=False)
    return wide[list(dict.fromkeys(values["system"]))].reset_index()


# ----- ratios with intervals -----
def ratio_table(values: pd.DataFrame, pairs=PAIRS) -> pd.DataFrame:
    """Within-system ratios, long form: one row per (study row, variant, ratio, system) with the system's
    statistic and its interval over rounds (``ci_low``/``ci_high``; empty for the study's single numbers)."""
    rows = []
    for (row, variant, system), g in values.groupby(["study_row", "variant", "system"], sort=False):
        by_op = g.set_index("operation")
        for study_row, num, den in pairs:
            if study_row != row or num not in by_op.index or den not in by_op.index:
                continue
            a, b = by_op.loc[num], by_op.loc[den]
            if a.kind == STUDY:
                ratio, low, high = a.value_ms / b.value_ms, np.nan, np.nan
            else:
                ratio, low, high = ratio_ci(a["values"], b["values"], a.statistic)
            rows.append({"study_row": row, "variant": variant, "algorithm": a.algorithm, "ratio": f"{num} / {den}",
                         "system": system, "kind": a.kind, "statistic": a.statistic, "value": ratio,
                         "ci_low": low, "ci_high": high, "samples": f"{a.n} / {b.n}"})
    return pd.DataFrame(rows)


def _agrees(value: float, low: float, high: float, ref: float, factor: float) -> bool:
    """Within `factor` of `ref`: the interval (or the value, without one) meets [ref / factor, ref * factor]."""
    lo, hi = (low, high) if np.isfinite(low) and np.isfinite(high) else (value, value)
    return hi >= ref / factor and lo <= ref * factor


def agreement(ratios: pd.DataFrame, factor: float = 2.0) -> pd.DataFrame:
    """Each of our ratios against the study's: ``study`` (its ratio), ``agrees`` (our interval meets the band
    ``study / factor .. study * factor``)."""
    ref = ratios[ratios["kind"] == STUDY].set_index(["study_row", "variant", "ratio"])["value"]
    ours = ratios[ratios["kind"] != STUDY].copy()
    ours["study"] = [ref.get((r.study_row, r.variant, r.ratio), np.nan) for r in ours.itertuples()]
    ours = ours[np.isfinite(ours["study"])]
    ours["agrees"] = [_agrees(r.value, r.ci_low, r.ci_high, r.study, factor) for r in ours.itertuples()]
    ours.attrs["factor"] = factor
    return ours


def describe_ratios(ratios: pd.DataFrame, factor: float = 2.0) -> str:
    """Markdown: per ratio, the study's value beside each of ours (with its interval) and whether ours is
    consistent with it within `factor`; then which kind of system is consistent most often (a conclusion only
    where the data give one)."""
    agree = agreement(ratios, factor)
    if agree.empty:
        return "No ratio of ours can be set beside one of the study's."
    lines = []
    for (row, variant, ratio), g in agree.groupby(["study_row", "variant", "ratio"], sort=False):
        label = f"{row}" + (f" ({variant}; the study's variant is not stated)" if variant else "")
        parts = [f"{r.system} {fmt_factor_ci(r.value, r.ci_low, r.ci_high)}" + ("" if r.agrees else " ✗")
                 for r in g.itertuples()]
        lines.append(f"- **{label}, {ratio}**: study {g['study'].iloc[0]:.3g}; ours: " + "; ".join(parts)
                     + f" — {int(g['agrees'].sum())} of {len(g)} consistent with it within a factor of {factor:g}.")
    by_kind = agree.groupby("kind")["agrees"].mean().sort_values(ascending=False)
    text = ("Ratios within each system (✗: our interval lies wholly outside a factor of "
            f"{factor:g} around the study's ratio; the study's ratios are single numbers):\n\n" + "\n".join(lines))
    if len(by_kind) > 1 and by_kind.iloc[0] > by_kind.iloc[1]:
        text += (f"\n\nThe {by_kind.index[0]} systems are consistent with the study most often "
                 f"({by_kind.iloc[0]:.0%} of their ratios, against {by_kind.iloc[1]:.0%} for the {by_kind.index[1]} "
                 "systems).")
        if by_kind.index[0] == COLD:
            text += (" That fits the study's method (a mean of first calls in a fresh JVM, no warm-up mentioned): its "
                     "ratios describe first calls (class loading, interpreter, JIT compilation), not the "
                     "algorithms' steady state.")
    return text


def study_over_ours(values: pd.DataFrame) -> pd.DataFrame:
    """The study's time over ours, like for like only: its mean of five cold calls over each of our Bouncy Castle
    cold means (same statistic), interval from our side (:func:`pqlab.stats.ratio_to_published`)."""
    study = values[values["kind"] == STUDY].set_index(["study_row", "variant", "operation"])["value_ms"]
    rows = []
    for r in values[values["kind"] == COLD].itertuples():
        published = study.get((r.study_row, r.variant, r.operation))
        if published is None or r.n == 0:
            continue
        ratio, low, high = ratio_to_published(published * 1e6, r.values, "mean")
        rows.append({"study_row": r.study_row, "variant": r.variant, "operation": r.operation, "system": r.system,
                     "study_ms": published, "ours_ms": r.value_ms, "study_over_ours": ratio, "ci_low": low,
                     "ci_high": high, "ours_calls": r.n})
    return pd.DataFrame(rows)


def describe_study_over_ours(table: pd.DataFrame) -> str:
    """Markdown: how much slower or faster the study's machine ran the same cold calls (a machine factor)."""
    if table.empty:
        return "No Bouncy Castle cold calls were measured here, so no time of the study's can be set beside ours."
    parts = []
    for system, g in table.groupby("system", sort=False):
        lo, hi = g["study_over_ours"].min(), g["study_over_ours"].max()
        parts.append(f"against {system}: {fmt_factor(lo)} to {fmt_factor(hi)} over {len(g)} operations")
    return ("The study's mean of its first calls over ours (same statistic, same calls in a fresh JVM; the interval "
            "of each is in the table, from our side only): " + "; ".join(parts) + ". Such factors mix the two "
            "machines and JVMs; only the ratios within a system say something about the algorithms.")


# ----- Bouncy Castle runs and sizes -----
CURRENT, STUDYS = "current release", "the study's release"


def run_bouncycastle(algorithms, *, study_release: bool = True, **kwargs) -> dict:
    """The study's platform again: `algorithms` on the runner's Bouncy Castle release and, with
    `study_release`, on the release the study used (read from the reference data).  Returns
    ``{label: (run or None, reason)}``; the reason is what did not run and why, as recorded (e.g. Maven's
    message when the registry does not provide the release).  `kwargs` go to :func:`pqlab.jvm.bc_run`."""
    from .. import jvm

    out = {CURRENT: jvm.bc_run(algorithms, **kwargs)[::2]}
    if study_release:
        release = study_platform()["bouncycastle"]
        out[STUDYS] = (jvm.bc_run(algorithms, version=release, **kwargs)[::2] if release != jvm.default_version()
                       else (None, f"the runner's release is the study's ({release})"))
    return out


def describe_bc(releases: dict) -> str:
    """Markdown: what ran on each Bouncy Castle release, or why not (the recorded reason, e.g. Maven's message).
    `releases`: label -> (run or None, reason)."""
    lines = []
    for label, (run, reason) in releases.items():
        if run is None:
            lines.append(f"- **{label}: not run.** {reason}")
            continue
        apis = "; ".join(sorted(set(run.measurements["implementation"])))
        text = f"- **Bouncy Castle {bc_release(run)}** on Java {run.meta.get('java_version', '?')} ({label}): {apis}."
        lines.append(text + (f" Not run: {reason}." if reason else ""))
    return "\n".join(lines)


def _rows_for(frame: pd.DataFrame, study_row: str, variant: str) -> pd.DataFrame:
    return frame[(frame["algorithm"].map(STUDY_ROW) == study_row) & (frame["algorithm"].map(variant_of) == variant)]


def size_columns(table: pd.DataFrame) -> list:
    """The paper table's columns of :func:`size_table`: every size in bytes with its unit in the header, each
    Bouncy Castle release's column included; the encodings stay in the CSV (the text says them)."""
    from ..formatting import Column

    releases = [c for c in table.columns if c.startswith("BC ")]
    return ["study_row", "variant", "key", Column("published", "Published", "size"), Column("ours", "Ours", "size"),
            Column("ours_note", "Ours, varying", "text"), *[Column(c, c, "size") for c in releases]]


def size_table(ours: pd.DataFrame, bc_runs=(), reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Sizes beside the study's: one row per study row, variant and key; the published size, ours (raw keys;
    RSA in DER) and each Bouncy Castle release's (encoded keys: X.509 SubjectPublicKeyInfo / PKCS#8 DER)."""
    ref = load_reference(f"{TOPIC}_sizes") if reference is None else reference
    ref = ref.rename(columns={"private_key_bytes": "secret_key_bytes"})
    keys = {"public_key_bytes": "public key", "secret_key_bytes": "secret key", "symmetric_key_bytes": "symmetric key",
            "signature_bytes": "signature"}
    encoded = {"public_key_bytes": "public_key_encoded_bytes", "secret_key_bytes": "secret_key_encoded_bytes"}

    def one(frame: pd.DataFrame, col: str):
        vals = sorted(frame[col].dropna().astype(int).unique()) if col in frame else []
        return int(vals[0]) if len(vals) == 1 else None

    def spread(frame: pd.DataFrame, col: str) -> str:
        vals = sorted(frame[col].dropna().astype(int).unique()) if col in frame else []
        return f"{fmt_bytes(vals[0])}–{fmt_bytes(vals[-1])} (by key)" if len(vals) > 1 else ""  # short: a table cell

    rows = []
    for r in ref.itertuples():
        study_row = STUDY_ROW[r.algorithm]
        for variant in variants(study_row):
            mine = _rows_for(ours, study_row, variant)
            for col, key in keys.items():
                if pd.isna(getattr(r, col)):
                    continue
                row = {"study_row": study_row, "variant": variant, "key": key, "published": int(getattr(r, col)),
                       "ours": one(mine, col), "ours_note": spread(mine, col),
                       "ours_encoding": mine["key_encoding"].iloc[0] if len(mine) else None}
                for run in (x for x in bc_runs if x is not None):
                    row[f"BC {bc_release(run)}"] = one(_rows_for(run.sizes, study_row, variant), encoded.get(col, col))
                rows.append(row)
    return pd.DataFrame(rows)


def describe_sizes(sizes: pd.DataFrame) -> str:
    """Markdown: which published size each of our sources reproduces to the byte, and which it does not."""
    sources = [c for c in sizes.columns if c == "ours" or c.startswith("BC ")]
    lines = []
    for d in sizes.to_dict("records"):
        have = {s: int(d[s]) for s in sources if d.get(s) is not None and not pd.isna(d[s])}
        same = [s if s != "ours" else f"ours ({d['ours_encoding']})" for s, v in have.items() if v == d["published"]]
        other = [f"{s if s != 'ours' else 'ours (' + str(d['ours_encoding']) + ')'} {fmt_bytes(v)}"
                 for s, v in have.items() if v != d["published"]]
        variant = f" ({d['variant']})" if d["variant"] else ""
        text = f"- {d['study_row']}{variant} {d['key']}, published {fmt_bytes(d['published'])}: "
        text += ("equal to the byte in " + ", ".join(same)) if same else "reproduced by none of our sources"
        if d.get("ours_note"):
            text += f"; ours {d['ours_note']}"
        lines.append(text + (f"; {', '.join(other)}" if other else "") + ".")
    return "\n".join(lines)


# ----- caveats, numbers, figures -----
def caveats(values: pd.DataFrame, study_run=None, bc_runs=(), reference: pd.DataFrame | None = None,
            overhead_share: float = 0.01) -> str:
    """Markdown, one sentence per caveat that applies here, each built from the data: the study's platform and
    method, measurements with few samples, operations for which the harness's own call cost is more than
    `overhead_share` of the median, and the spread of RSA key generation's cold calls."""
    src = (reference.attrs.get("source") if reference is not None else None) or reference_source(TOPIC)
    out = [f"The study's platform: {src['machine']}; its method: {src['method']}."]
    runs = [r for r in (study_run, *bc_runs) if r is not None]
    if runs:
        m = pd.concat([verified_rows(r.measurements) for r in runs], ignore_index=True)
        few = m[flags.has(m["flags"], "few-samples")]
        if len(few):
            out.append(f"{len(few)} of {len(m)} of our measurements have fewer than {MIN_SAMPLES} samples (flag "
                       "few-samples): their intervals are wide and their ratios uncertain.")
    if study_run is not None and study_run.meta.get("harness_overhead_ns"):
        overhead = float(study_run.meta["harness_overhead_ns"])
        m = verified_rows(study_run.measurements)
        fast = m[m["time_ns_median"] * overhead_share < overhead]
        if len(fast):
            out.append(f"A do-nothing call through pqlab's harness costs {fmt_time_ns(overhead)}, more than "
                       f"{fmt_percent(overhead_share, 0)} of the median of {len(fast)} operations here (the fastest: "
                       f"{fmt_time_ns(fast['time_ns_median'].min())}); their times include it.")
    keygen = values[(values["kind"] == COLD) & (values["study_row"] == "RSA-2048") & (values["operation"] == "keygen")]
    for r in keygen.itertuples():
        if r.values.size > 1:
            out.append(f"RSA key generation searches for random primes: the {r.values.size} calls of {r.system} span "
                       f"{fmt_time_ns(r.values.min())} to {fmt_time_ns(r.values.max())}, so a mean of so few "
                       "calls is a noisy statistic.")
    return "\n".join(f"- {c}" for c in out)


def _key(text: str) -> str:
    """A stable key for numbers.tex: lower-case words joined by "_" ("SPHINCS+" spelled "sphincsplus")."""
    return re.sub(r"[^a-z0-9]+", "_", text.replace("+", "plus").lower()).strip("_")


def numbers(ratios: pd.DataFrame, sizes: pd.DataFrame | None = None, study_over: pd.DataFrame | None = None) -> dict:
    """Every number the notebook quotes, under stable keys (for numbers.tex)."""
    out = {}
    for r in ratios.itertuples():
        key = _key(f"{r.study_row}_{r.variant}_{r.ratio.replace(' / ', '_over_')}_{r.system}")
        out[key] = float(r.value)
        if r.kind != "study":  # a published ratio has no interval; ours may lack one (NaN: not measured)
            out[f"{key}_ci_low"], out[f"{key}_ci_high"] = float(r.ci_low), float(r.ci_high)
    for r in (sizes.itertuples(index=False) if sizes is not None else []):
        for source, value in r._asdict().items():
            if (source in ("published", "ours") or source.startswith("BC ")) and value is not None and not pd.isna(value):
                out[_key(f"{r.study_row}_{r.variant}_{r.key}_bytes_{source}")] = int(value)
    for r in (study_over.itertuples() if study_over is not None else []):
        out[_key(f"study_over_ours_{r.study_row}_{r.variant}_{r.operation}_{r.system}")] = float(r.study_over_ours)
    return out


def role_times(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows for an operation-time chart: label "algorithm (backend)", role, median and quartiles in ms (a
    Bouncy Castle release is named in the label; its cold phase is left out)."""
    df = verified_rows(measurements)
    df = df[df["operation"].isin(OPERATION_ROLE) & ~flags.has(df["flags"], "jvm-cold")]
    backend = np.where(df["backend"] == "bouncycastle", "BC " + df["library_version"].astype(str), df["backend"])
    return pd.DataFrame({"label": df["algorithm"] + "\n(" + backend + ")", "role": df["operation"].map(OPERATION_ROLE),
                         "median_ms": df["time_ns_median"] / 1e6, "q1_ms": df["time_ns_q1"] / 1e6,
                         "q3_ms": df["time_ns_q3"] / 1e6})


def _runs(runs) -> list:
    return [runs] if hasattr(runs, "measurements") else [r for r in runs if r is not None]


@plotting.styled
def plot_operation_times(runs, title: str, width: float = plotting.FULL_WIDTH):
    """Median and quartiles per operation of `runs` (log axis), grouped by the study's three columns."""
    measurements = pd.concat([r.measurements for r in _runs(runs)], ignore_index=True)
    return plotting.grouped_bars(role_times(measurements), category="label", group="role", value="median_ms",
                                 low="q1_ms", high="q3_ms", ylabel="time per operation (ms, log)", title=title,
                                 width=width)


@plotting.styled
def plot_ratios(ratios: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Each within-system ratio per system, with its interval over rounds as error bars (none for the study)."""
    df = ratios.assign(label=ratios["study_row"] + np.where(ratios["variant"] != "", " " + ratios["variant"], "")
                       + "\n" + ratios["ratio"])
    return plotting.grouped_bars(df, category="label", group="system", value="value", low="ci_low", high="ci_high",
                                 ylabel="ratio within a system (log)", height=3.0, width=width,
                                 title=f"Ratios between operations (bars: {fmt_percent(CONFIDENCE, 0)} intervals "
                                       "over rounds; none for the study's single numbers or one JVM)")


def _sizes(runs) -> pd.DataFrame:
    return pd.concat([r.sizes for r in _runs(runs)], ignore_index=True).drop_duplicates("algorithm")


def key_sizes(runs) -> pd.DataFrame:
    """Key sizes of `runs` in long form for a bar chart (raw keys; RSA as DER), one row per algorithm and key."""
    long = _sizes(runs).melt(id_vars="algorithm", var_name="key", value_name="bytes",
                                                   value_vars=["public_key_bytes", "secret_key_bytes",
                                                               "symmetric_key_bytes"]).dropna()
    return long.assign(key=long["key"].str.replace("_bytes", "").str.replace("_", " "))


@plotting.styled
def plot_key_sizes(runs, width: float = plotting.FULL_WIDTH):
    return plotting.grouped_bars(key_sizes(runs), category="algorithm", group="key", value="bytes",
                                 ylabel="bytes (log)", title="Key sizes (raw keys; RSA as DER)", width=width)


@plotting.styled
def plot_signature_sizes(runs, width: float = plotting.FULL_WIDTH):
    sig = _sizes(runs).dropna(subset=["signature_bytes"]).assign(kind="signature")
    return plotting.grouped_bars(sig, category="algorithm", group="kind", value="signature_bytes",
                                 ylabel="bytes (log)", title="Signature sizes", width=width)


def results_table(runs) -> pd.DataFrame:
    """Every measurement of `runs` in µs: median, quartiles and the interval over rounds of the median."""
    df = pd.concat([r.raw_summary().assign(time_ns_ci_low=r.measurements["time_ns_ci_low"],
                                       time_ns_ci_high=r.measurements["time_ns_ci_high"],
                                       library_version=r.measurements["library_version"])
                    for r in _runs(runs)], ignore_index=True)
    out = df[["algorithm", "backend", "library_version", "operation", "samples", "flags"]].copy()
    for stat in ("median", "q1", "q3", "ci_low", "ci_high"):
        out[f"time_us_{stat}"] = df[f"time_ns_{stat}"] / 1e3
    return out
