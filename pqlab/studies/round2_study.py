"""Notebook 04, the study's side: study 003's own numbers (NIST round 2: its time columns recomputed from
its cycles and clock), and which of today's parameter sets each of its ancestors is compared with, on what
basis, against which of our builds.  Companion of :mod:`pqlab.studies.signature_cycles` (our measurements,
tables and ratios).

* :func:`recompute_reference`, :func:`count_reference_matches`, :func:`reference_verdict`,
  :func:`describe_reference`: the study's time columns against its cycles and stated clock (which follow);
  :func:`counts_markdown` and :func:`recomputed_table` show them;
* :func:`sphincs_round2_sizes`: the round-2 SPHINCS+ sets as their reference code defines them, with the
  key and signature lengths that follow (``data/reference/04_study_sphincs_round2_params.csv``);
* :func:`dilithium_parameters`: round-2 Dilithium and FIPS 204 (ML-DSA) constants, evaluated, with each
  mode's public key and signature length (``data/reference/04_study_dilithium_params.csv``);
* :func:`pair_basis`: a pair is "same parameter set" only where every length compared is equal; otherwise
  the basis says what differs (Dilithium: every constant that changed);
* :func:`our_builds`: which of our builds each study build is compared with, from the study's own
  numbers: where its "opt" code costs what its "ref" code costs, both face our portable build;
* :func:`describe_pairing`: the paragraph that says all that, from the data;
* :func:`compare_ancestors`, :func:`describe_ancestors`, :func:`ancestors_caption`: today's mean cycles per
  call over the study's, for core cycles only (with another counter the pairs stay and the ratios are empty).
"""
from __future__ import annotations

import ast
import math
import operator
import re

import numpy as np
import pandas as pd

from pqlab.core.formatting import Column, fmt_bytes, fmt_count, fmt_percent, markdown, table
from pqlab.core.schema import convert_unit
from pqlab.measure import cycles
from pqlab.measure.cycles import per_call
from pqlab.publish.context import frequency_text

REFERENCE_TABLE = "04_round2_signatures"
SPHINCS_TABLE = "04_study_sphincs_round2_params"
DILITHIUM_TABLE = "04_study_dilithium_params"
#: Dilithium constants named in a pairing's basis, with their usual symbols
DILITHIUM_SYMBOLS = (("ETA", "η"), ("TAU", "τ"), ("D", "d"), ("GAMMA1", "γ1"), ("GAMMA2", "γ2"),
                     ("BETA", "β"), ("OMEGA", "ω"))
#: Largest relative gap between the study's opt and ref cycles for which its opt code counts as portable code
SAME_COST = 0.02
BUILD_OPTIMISED, BUILD_PORTABLE = "liboqs optimised", "liboqs portable"

# ----- the study's numbers
def recompute_reference(ref: pd.DataFrame, clock_hz: float | None = None) -> pd.DataFrame:
    """The study's rows with their time columns recomputed from cycles and the stated clock.

    ``*_time_recomputed_s`` = cycles / clock, rounded to the study's 6 decimals; ``*_matches``
    says whether the published time equals it; ``verify_time_belongs_to`` names the rows whose
    recomputed verify time equals the published one (where the value came from).
    """
    clock = float(clock_hz or ref.attrs["source"]["clock_hz"])
    out = ref.copy()
    for op in ("sign", "verify"):
        out[f"{op}_time_recomputed_s"] = (out[f"{op}_cycles"] / clock).round(6)
        out[f"{op}_time_matches"] = np.isclose(out[f"{op}_time_s"], out[f"{op}_time_recomputed_s"], rtol=0,
                                               atol=1e-9)
    recomputed = out["verify_time_recomputed_s"].to_numpy()
    out["verify_time_belongs_to"] = [
        ",".join(str(r) for r in out["row"][np.isclose(recomputed, v, rtol=0, atol=1e-9)]) or "none"
        for v in out["verify_time_s"]]
    out.attrs = ref.attrs
    return out


def count_reference_matches(recomputed: pd.DataFrame) -> dict:
    """How many published times follow from the cycles; whether the verify column is a permutation."""
    pub = np.sort(recomputed["verify_time_s"].to_numpy())
    rec = np.sort(recomputed["verify_time_recomputed_s"].to_numpy())
    per_family = (recomputed.groupby("family", sort=False)[["sign_time_matches", "verify_time_matches"]]
                  .sum().astype(int))
    per_family.insert(0, "rows", recomputed.groupby("family", sort=False).size())
    per_family = per_family.reset_index()  # a column, so that tables show it
    return {"rows": int(len(recomputed)), "sign_matches": int(recomputed["sign_time_matches"].sum()),
            "verify_matches": int(recomputed["verify_time_matches"].sum()),
            "verify_is_permutation": bool(len(pub) == len(rec) and np.allclose(pub, rec, rtol=0, atol=1e-9)),
            "verify_from_other_rows": int((~recomputed["verify_time_matches"]
                                           & (recomputed["verify_time_belongs_to"] != "none")).sum()),
            "clock_hz": float(recomputed.attrs["source"]["clock_hz"]), "per_family": per_family}


def counts_markdown(counts: dict) -> str:
    """The counts of :func:`count_reference_matches` as a Markdown list (a deterministic, checked output)."""
    facts = [("rows", counts["rows"]), ("rows whose sign time = sign cycles / clock", counts["sign_matches"]),
             ("rows whose verify time = verify cycles / clock", counts["verify_matches"]),
             ("published verify times are a permutation of the recomputed ones",
              "yes" if counts["verify_is_permutation"] else "no"),
             ("mismatching rows holding another row's recomputed verify time",
              counts["verify_from_other_rows"])]
    return "\n".join(f"- {markdown(label)}: {value if isinstance(value, str) else fmt_count(value)}"
                     for label, value in facts)


#: the columns :func:`recomputed_table` shows: both verify times in one unit, so that they compare at a glance
RECOMPUTED_COLUMNS = ["row", "family", "scheme", "version", "verify_cycles",
                      Column("verify_time_s", "Verify time, published", "time", "ms"),
                      Column("verify_time_recomputed_s", "Verify time, recomputed", "time", "ms"),
                      Column("verify_time_belongs_to", "Recomputed in rows", "text")]


def recomputed_table(recomputed: pd.DataFrame, matching: bool, rows: int | None = None):
    """The study's rows whose published verify time matches the one recomputed from its cycles (`matching`),
    or those that do not (the first `rows`), as a reader sees them (:func:`pqlab.core.formatting.table`)."""
    part = recomputed.loc[recomputed["verify_time_matches"] == matching]
    return table(part if rows is None else part.head(rows), RECOMPUTED_COLUMNS)


def reference_verdict(counts: dict) -> str:
    """Which of the study's time columns follow from its cycle columns and stated clock, from the counts
    (Markdown): each column as a whole, then how many rows match."""
    n = counts["rows"]
    follow = [op for op in ("sign", "verify") if counts[f"{op}_matches"] == n]
    fail = [op for op in ("sign", "verify") if counts[f"{op}_matches"] < n]

    def cols(ops) -> str:
        return " and ".join(f"**{op}**" for op in ops) + (" time columns" if len(ops) > 1 else " time column")

    if not fail:
        return (f"Both of the study's time columns follow from its cycle columns and its stated clock, in "
                f"all {n} rows.")
    parts = []
    if follow:
        parts.append(f"The study's {cols(follow)} {'follow' if len(follow) > 1 else 'follows'} from its "
                     f"cycles and its stated clock in all {n} rows")
    parts.append(("the" if follow else "The study's")
                 + f" {cols(fail)} {'do' if len(fail) > 1 else 'does'} not: "
                 + ", ".join(f"{op} time matches in {counts[f'{op}_matches']} of {n} rows" for op in fail))
    return "; ".join(parts) + "."


def describe_reference(counts: dict) -> str:
    """The study's time columns against its cycles and clock (Markdown)."""
    ghz = convert_unit(counts["clock_hz"], "Hz", "GHz")
    n, mismatched = counts["rows"], counts["rows"] - counts["verify_matches"]
    perm = ("a permutation of the values recomputed from the verify cycles: the right numbers, attached "
            "to the wrong rows" if counts["verify_is_permutation"]
            else "not a permutation of the recomputed values")
    text = (f"{reference_verdict(counts)} Recomputing the study's times as cycles / {ghz:.3f} GHz (its "
            f"stated clock), rounded to its six decimals: the **sign** time matches in "
            f"**{counts['sign_matches']} of {n}** rows, the **verify** time in "
            f"**{counts['verify_matches']} of {n}**.")
    if mismatched:
        text += (f" The published verify column is {perm}; {counts['verify_from_other_rows']} of the "
                 f"{mismatched} mismatching rows carry exactly the recomputed verify time of another row.")
    return text + " Below, times are only ever measured, never derived from cycles with an assumed clock."


def sphincs_heir(parameter: str) -> str | None:
    """liboqs's name for a round-2 SPHINCS+ parameter ("sha256-128f" -> SPHINCS+-SHA2-128f-simple)."""
    m = re.fullmatch(r"(sha256|shake256)-(\d{3}[fs])", parameter)
    if not m:
        return None
    return f"SPHINCS+-{'SHA2' if m.group(1) == 'sha256' else 'SHAKE'}-{m.group(2)}-simple"



# ----- today's heirs: parameter sets and builds
#: Today's standard (its liboqs name) for a round-2 parameter set of the study.  Dilithium's sets changed
#: after round 2 (ML-DSA-44 sits between the medium and recommended module dimensions, both pairs kept);
#: SPHINCS+ heirs by name (:func:`sphincs_heir`).  How each pair relates, and which of our builds faces
#: which of the study's, is computed from the code's constants and lengths and from the study's own
#: numbers (:mod:`pqlab.studies.round2_study`).  Haraka, weak and FALCON-768 have no heir.
ANCESTORS = (
    ("CRYSTALS-DILITHIUM", "medium", "ML-DSA-44"),
    ("CRYSTALS-DILITHIUM", "recommended", "ML-DSA-44"),
    ("CRYSTALS-DILITHIUM", "very-high", "ML-DSA-65"),
    ("FALCON", "512", "Falcon-512"),
    ("FALCON", "1024", "Falcon-1024"),
)


def ancestor_pairs(ref: pd.DataFrame) -> pd.DataFrame:
    """(scheme, parameter) of the study -> today's algorithm."""
    pairs = [dict(scheme=s, parameter=p, algorithm=a) for s, p, a in ANCESTORS]
    for p in sorted(ref.loc[ref["scheme"] == "SPHINCS+", "parameter"].unique()):
        heir = sphincs_heir(p)
        if heir:
            pairs.append(dict(scheme="SPHINCS+", parameter=p, algorithm=heir))
    return pd.DataFrame(pairs)


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.LShift: operator.lshift}


def evaluate(expression: str, names: dict[str, int]) -> int:
    """A C constant expression of integers, earlier constants, + - * / << and parentheses, as C evaluates
    it for these (positive, exactly divisible) values."""
    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return ev(node.left) // ev(node.right)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError(f"unsupported constant expression {expression!r}")

    return ev(ast.parse(expression, mode="eval").body)


def sphincs_round2_sizes() -> pd.DataFrame:
    """Per round-2 SPHINCS+ set: n, hypertree height h and layers d, FORS height a and trees k, Winternitz w,
    and the lengths the reference code derives from them (SPX_PK_BYTES = 2n, SPX_SK_BYTES = 4n, SPX_BYTES =
    n (1 + k (a + 1) + h + d len), len = len1 + len2 for w)."""
    from pqlab.core.references import load_reference  # loads yaml

    ref = load_reference(SPHINCS_TABLE)
    wide = ref.pivot_table(index="parameter_set", columns="constant", values="value", aggfunc="first")
    rows = []
    for name, c in wide.iterrows():
        n, w = int(c["SPX_N"]), int(c["SPX_WOTS_W"])
        logw = int(math.log2(w))
        len1 = 8 * n // logw
        len2 = int(math.floor(math.log2(len1 * (w - 1)) / logw)) + 1
        h, d, a, k = (int(c[x]) for x in ("SPX_FULL_HEIGHT", "SPX_D", "SPX_FORS_HEIGHT", "SPX_FORS_TREES"))
        rows.append({"parameter_set": name, "n": n, "h": h, "d": d, "a": a, "k": k, "w": w,
                     "public_key_bytes": 2 * n, "secret_key_bytes": 4 * n,
                     "signature_bytes": n * (1 + k * (a + 1) + h + d * (len1 + len2))})
    return pd.DataFrame(rows)


def dilithium_parameters() -> pd.DataFrame:
    """Per revision (round2, fips204) and mode: every constant evaluated, the public key length
    (SEEDBYTES + K N (bits of Q - D) / 8) and the signature length of that revision's code."""
    from pqlab.core.references import load_reference  # loads yaml

    ref = load_reference(DILITHIUM_TABLE)
    rows = []
    for (revision, mode), g in ref.groupby(["revision", "mode"], sort=False):
        values: dict[str, int] = {}
        for r in g.itertuples():
            values[r.constant] = evaluate(str(r.expression), values)
        k, n = values["K"], values["N"]
        t1 = n * (values["Q"].bit_length() - values["D"]) // 8
        z_bits = (2 * values["GAMMA1"] - 1).bit_length()  # z's coefficients lie in (-GAMMA1, GAMMA1]
        if revision == "round2":
            signature = values["L"] * n * z_bits // 8 + values["OMEGA"] + k + n // 8 + 8
        else:
            signature = values["CTILDEBYTES"] + values["L"] * n * z_bits // 8 + values["OMEGA"] + k
        rows.append({"revision": revision, "mode": int(mode), **values,
                     "public_key_bytes": values["SEEDBYTES"] + k * t1, "signature_bytes": signature})
    return pd.DataFrame(rows)


def _dilithium_mode(params: pd.DataFrame, revision: str, public_key_bytes) -> pd.Series | None:
    hit = params[(params["revision"] == revision) & (params["public_key_bytes"] == public_key_bytes)]
    return hit.iloc[0] if len(hit) == 1 else None


def dilithium_changes(old: pd.Series, new: pd.Series) -> str:
    """The constants that differ between two Dilithium modes: "(k, l) 4×3 → 4×4, η 6 → 2, ..."."""
    parts = []
    if (old["K"], old["L"]) != (new["K"], new["L"]):
        parts.append(f"(k, l) {old['K']}×{old['L']} → {new['K']}×{new['L']}")
    for name, symbol in DILITHIUM_SYMBOLS:
        if old[name] != new[name]:
            parts.append(f"{symbol} {fmt_count(old[name])} → {fmt_count(new[name])}")
    return ", ".join(parts) if parts else "no constant changed"


def _size_changes(pairs) -> list[str]:
    return [f"{what} {fmt_bytes(a)} → {fmt_bytes(b)}" for what, a, b in pairs
            if a is not None and b is not None and not (isinstance(a, float) and math.isnan(a))
            and int(a) != int(b)]


def pair_basis(scheme: str, parameter: str, study_sizes: dict, today: dict) -> str:
    """Why a round-2 set and today's are put side by side: "same parameter set" only where every length
    compared is equal (public key, secret key, and, where the round-2 code gives it, the signature); else
    what differs (for Dilithium, every constant that changed)."""
    r2_sig = None
    if scheme == "SPHINCS+":
        sets = sphincs_round2_sizes().set_index("parameter_set")
        short = parameter.split("-", 1)[-1]
        r2_sig = int(sets.loc[short, "signature_bytes"]) if short in sets.index else None
    if scheme == "CRYSTALS-DILITHIUM":
        params = dilithium_parameters()
        old = _dilithium_mode(params, "round2", study_sizes["public_key_bytes"])
        new = _dilithium_mode(params, "fips204", today["public_key_bytes"])
        if old is None or new is None:
            return "parameters not found for these key lengths"
        r2_sig = int(old["signature_bytes"])
        changed = dilithium_changes(old, new)
    diffs = _size_changes((("public key", study_sizes["public_key_bytes"], today["public_key_bytes"]),
                           ("secret key", study_sizes["secret_key_bytes"], today["secret_key_bytes"]),
                           ("signature", r2_sig, today["signature_max_bytes"])))
    if scheme == "CRYSTALS-DILITHIUM":
        return f"other parameter set: {changed}" + (f"; {', '.join(diffs)}" if diffs else "")
    if not diffs:
        return ("same parameter set (public key, secret key" + (", signature" if r2_sig else "")
                + " lengths equal)")
    return "lengths differ: " + ", ".join(diffs)


def study_opt_vs_ref(ref: pd.DataFrame) -> pd.DataFrame:
    """The study's own opt / ref cycles per scheme, parameter set and operation (median over its rows)."""
    med = ref.groupby(["scheme", "parameter", "build"])[["sign_cycles", "verify_cycles"]].median()
    wide = med.unstack("build")
    out = wide.xs("opt", axis=1, level="build") / wide.xs("ref", axis=1, level="build")
    return out.dropna().rename(columns={"sign_cycles": "sign_opt_over_ref",
                                        "verify_cycles": "verify_opt_over_ref"})


def our_builds(ref: pd.DataFrame, schemes, same_cost: float = SAME_COST) -> dict[tuple[str, str], str]:
    """(scheme, study build) -> our build it is compared with.  "ref" always faces our portable build; "opt"
    faces it too where the study's opt code costs what its ref code costs (within `same_cost` for every set
    and operation), else our optimised build."""
    ratios = study_opt_vs_ref(ref)
    out = {}
    for scheme in schemes:
        gap = ((ratios.loc[scheme] - 1).abs().to_numpy().max() if scheme in ratios.index.get_level_values(0)
               else None)
        out[(scheme, "ref")] = BUILD_PORTABLE
        out[(scheme, "opt")] = BUILD_PORTABLE if gap is not None and gap <= same_cost else BUILD_OPTIMISED
    return out


def describe_pairing(ref: pd.DataFrame, ancestors: pd.DataFrame, same_cost: float = SAME_COST) -> str:
    """Which build faces which, and why, from the study's own opt/ref numbers; how each pair was made."""
    if ancestors.empty:
        return "No heir of the study's round-2 schemes was measured in this run."
    ratios = study_opt_vs_ref(ref)
    lines = []
    for scheme, g in ancestors.groupby("r2_scheme", sort=False):
        gap = ((ratios.loc[scheme] - 1).abs().to_numpy().max() if scheme in ratios.index.get_level_values(0)
               else None)
        opt = g.loc[g["r2_build"] == "opt", "our_build"]
        faces = opt.iloc[0].split()[-1] if len(opt) else "(no opt row)"
        spread = ("no opt/ref pair to compare" if gap is None else
                  f"the study's opt and ref cycles differ by at most {fmt_percent(gap)}")
        verdict = ("so its opt code is treated as portable code and both face our portable build"
                   if faces == "portable" else f"so its opt rows face our {faces} build")
        lines.append(f"- **{scheme}**: {spread}, {verdict}. Pairs: "
                     + "; ".join(f"{r['r2_parameter']} → {r['algorithm']} ({r['basis']})"
                                 for _, r in g.drop_duplicates(["r2_parameter", "algorithm"]).iterrows())
                     + ".")
    return ("Today's sets against the study's, by the lengths and constants of their code (a pair is called "
            f"the same parameter set only where every length compared is equal); an opt build counts as "
            f"portable code when it costs within {fmt_percent(same_cost, 0)} of the ref build:\n\n"
            + "\n".join(lines))



def describe_caveats(ref: pd.DataFrame, runs) -> str:
    """One sentence per caveat that applies to comparing our cycles with the study's, as a Markdown list:
    what the study's provenance leaves open and what our runs' metadata says about the machine."""

    src = ref.attrs.get("source", {})
    metas = [r.meta for r in runs if r is not None]
    items = []
    if not any(w in str(src.get("method", "")).lower()
               for w in ("rdtsc", "rdpmc", "perf", "core cycles", "tsc")):
        items.append("The study does not say which counter its benchmark code read (core cycles or the "
                     "time-stamp counter), so its cycles and ours may count different things.")
    if "turbo" in str(src.get("machine", "")).lower():
        items.append(f"The study ran with Turbo Boost disabled; here the frequency state is: "
                     f"{'; '.join(dict.fromkeys(frequency_text(m) for m in metas)) or 'not recorded'}.")
    hypervisors = sorted({m.get("hypervisor") for m in metas if m.get("hypervisor")})
    if hypervisors:
        items.append(f"Our runs ran under a hypervisor ({', '.join(hypervisors)}): other guests may share "
                     "the physical core and its caches.")
    return "\n".join(f"- {item}" for item in items)


# --------------------------------------------------------------------------- today against round 2


def compare_ancestors(ref: pd.DataFrame, rows: pd.DataFrame, counter: dict) -> pd.DataFrame:
    """Today's ML-DSA, Falcon and SPHINCS+ beside their round-2 ancestors, in cycles.

    Each study build faces the build :func:`our_builds` names (its "ref" rows our portable
    build, its "opt" rows too where they cost what its ref rows cost); ``basis`` says how each pair relates
    (:func:`pair_basis`).  Where the study has several rows for one set and build (SPHINCS+
    sha256-128f) their median is used.  The study averaged its cycles over its iterations, so ours are the
    mean cycles per call too.  ``*_ratio`` = today / round 2 (below 1: today needs fewer cycles).  Only core
    cycles are compared: the study counted at the core clock (Turbo Boost off), and TSC reference cycles are
    another quantity, never put in one ratio with core cycles; with another counter the pairs and their
    basis stay, and today's cycles and the ratios are left empty.
    """
    pairs = ancestor_pairs(ref)
    r2 = (ref.groupby(["scheme", "parameter", "build"], as_index=False)
          .agg(r2_pk_bytes=("public_key_bytes", "first"), r2_sk_bytes=("secret_key_bytes", "first"),
               r2_sign_cycles=("sign_cycles", "median"), r2_verify_cycles=("verify_cycles", "median"),
               r2_rows=("row", "size")))
    r2 = r2.merge(pairs, on=["scheme", "parameter"])
    builds = our_builds(ref, r2["scheme"].unique())
    r2["our_build"] = [builds[(s, b)] for s, b in zip(r2["scheme"], r2["build"], strict=True)]
    liboqs = rows[rows["build"].isin([BUILD_OPTIMISED, BUILD_PORTABLE])]
    today_sizes = liboqs.drop_duplicates("algorithm").set_index("algorithm")[
        ["public_key_bytes", "secret_key_bytes", "signature_max_bytes"]]
    r2["basis"] = [pair_basis(s, p, {"public_key_bytes": pk, "secret_key_bytes": sk},
                              today_sizes.loc[a].to_dict()) if a in today_sizes.index else ""
                   for s, p, a, pk, sk in zip(r2["scheme"], r2["parameter"], r2["algorithm"],
                                              r2["r2_pk_bytes"], r2["r2_sk_bytes"], strict=True)]
    means = (rows.pivot_table(index=["algorithm", "build"], columns="operation", values="cycles_mean",
                              dropna=False)
             .reindex(columns=["sign", "verify"]))
    if counter.get("label") != cycles.CORE_CYCLES:
        means[:] = np.nan
    today = pd.DataFrame({"sign_cycles_today": means["sign"], "verify_cycles_today": means["verify"]},
                         index=means.index).reset_index()
    pk = rows.drop_duplicates(["algorithm", "build"])[["algorithm", "build", "public_key_bytes"]]
    today = today.merge(pk, on=["algorithm", "build"]).rename(
        columns={"build": "our_build", "public_key_bytes": "pk_bytes_today"})
    m = r2.merge(today, on=["algorithm", "our_build"], how="inner")
    m["pk_bytes_today"] = pd.to_numeric(m["pk_bytes_today"], errors="coerce").astype("Int64")
    m["sign_ratio"] = m["sign_cycles_today"].astype(float) / m["r2_sign_cycles"]
    m["verify_ratio"] = m["verify_cycles_today"].astype(float) / m["r2_verify_cycles"]
    m = m.rename(columns={"build": "r2_build", "parameter": "r2_parameter", "scheme": "r2_scheme"})
    cols = ["r2_scheme", "r2_parameter", "r2_build", "algorithm", "our_build", "basis", "r2_pk_bytes",
            "pk_bytes_today", "r2_sign_cycles", "sign_cycles_today", "sign_ratio", "r2_verify_cycles",
            "verify_cycles_today", "verify_ratio"]
    order = {s: i for i, s in enumerate(["CRYSTALS-DILITHIUM", "FALCON", "SPHINCS+"])}
    m = (m.assign(_s=m["r2_scheme"].map(order))
         .sort_values(["_s", "algorithm", "r2_parameter", "r2_build"]).drop(columns="_s"))
    out = m[cols].reset_index(drop=True)
    out.attrs["r2_machine"] = str(ref.attrs.get("source", {}).get("machine",
                                                                  "the study's machine")).split(",")[0]
    return out


# --------------------------------------------------------------------------- text


def ancestors_caption(counter: dict) -> str:
    """The caption of the round-2 table: a comparison in core cycles, else the pairs only."""
    if counter.get("label") == cycles.CORE_CYCLES:
        return (f"Today's standards against their round-2 ancestors: today / round 2 {per_call(counter)}, "
                "intervals from our samples only")
    return ("Today's standards and their round-2 ancestors, paired by the lengths and constants of their "
            f"code (no cycle ratio: the study counted core cycles, this run {counter['unit']})")


def describe_ancestors(ancestors: pd.DataFrame, counter: dict) -> str:
    """Today's standards against their round-2 ancestors, per scheme and build (Markdown)."""
    if counter.get("label") != cycles.CORE_CYCLES:
        ours = (f"this run counted {counter['unit']}" if counter["basis"] == "cycles"
                else "no cycle counter ran here")
        return (f"Not compared: the study counted cycles at its core clock (Turbo Boost off), and {ours}"
                + (f" ({counter['reason']})" if counter.get("reason") else "") + "; the two are different "
                "quantities and never share a ratio. A machine with a PMU gives this comparison.")
    if ancestors.empty:
        return "No heir of the study's round-2 schemes was measured in this run."

    def span(v: pd.Series) -> str:
        lo, hi = v.min(), v.max()
        return f"{lo:.2g}×" if np.isclose(lo, hi, rtol=0.05) else f"{lo:.2g}–{hi:.2g}×"

    parts = []
    for ours, sub in ancestors.groupby("our_build", sort=False):
        label = ours.split()[-1]
        build = '" and "'.join(dict.fromkeys(sub["r2_build"]))
        per = []
        for scheme, g in sub.groupby("r2_scheme", sort=False):
            names = list(dict.fromkeys(g["algorithm"]))
            heirs = ", ".join(names) if len(names) <= 2 else f"{len(names)} of today's parameter sets"
            per.append(f"{heirs} against {scheme} ({len(g)} pair{'s' if len(g) > 1 else ''}): sign "
                       f"{span(g['sign_ratio'])}, verify {span(g['verify_ratio'])}")
        parts.append(f"**our {label} build against the study's \"{build}\" rows**: " + "; ".join(per))
    machine = ancestors.attrs.get("r2_machine", "the study's machine")
    return (f"Today's {per_call(counter)} over the study's core-clock cycles (below 1: fewer today; the "
            f"study on an {machine} with Turbo Boost off, ours on this machine). " + ". ".join(parts)

            + ". Cycles on two micro-architectures years apart compare only roughly.")

