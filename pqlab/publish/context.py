"""The run context a reader needs beside any result: machine, counter, frequency, versions, liboqs
build and git state, generated from the runs' metadata (never typed).

    context_markdown([run_a, run_b])  -> the block at the top of a notebook's results: its caveats, then
                                         the context table
    context_line([run_a])             -> one short line for a figure's footer or a table's note
    caveats([run_a])                  -> what a reader must weigh before citing the runs' numbers (profile,
                                         rounds, busy rounds, non-conforming implementations timed)
"""
from __future__ import annotations

from collections.abc import Iterable

from pqlab.core import paths
from pqlab.core.errors import shell_command
from pqlab.core.escaping import markdown
from pqlab.core.quantities import (
    fmt_count,
    fmt_percent,
    fmt_span,
    fmt_time_ns,
    not_resolved_text,
    resolved_rel,
)
from pqlab.core.schema import convert_unit
from pqlab.measure.cycles import CORE_CYCLES, TSC, describe
from pqlab.measure.noise import describe_noise

#: the libraries whose versions are shown (pqlab.measure.machine records more)
SHOWN_PACKAGES = ("liboqs-python", "cryptography", "pycryptodome", "pqcrypto", "numpy", "pandas")


def as_runs(runs) -> list:
    """`runs` as a list of runs: one run, an iterable of runs (None left out) or None (no runs)."""
    if runs is None:
        return []
    if hasattr(runs, "meta"):
        return [runs]
    return [r for r in runs if r is not None]


def _unique(values: Iterable) -> list:
    return [v for v in dict.fromkeys(v for v in values if v not in (None, "", {}))]


def counter_text(meta: dict) -> str:
    """The counter a run used, as recorded (label, frequency where known, or why there is none)."""
    counter = meta.get("counter")
    if not isinstance(counter, dict):
        return "not recorded"
    if counter.get("error"):
        return f"unavailable ({counter['error']})"
    label = counter.get("label") or "none"
    if counter.get("hz"):
        text = f"{label} at {convert_unit(float(counter['hz']), 'Hz', 'GHz'):.3f} GHz"
    else:
        text = label
    why = counter.get("reason")
    return f"{text} ({why})" if why and label == "none" else text


def frequency_text(meta: dict) -> str:
    """Governor, limits and boost state, or why they are unknown."""
    f = meta.get("frequency") or {}
    if not f:
        return "not recorded"
    if not f.get("available"):
        return f"unknown: {f.get('reason', 'not exposed')}"
    parts = [f"governor {f.get('scaling_governor') or '?'}"]
    if f.get("scaling_max_freq"):
        parts.append(f"max {convert_unit(int(f['scaling_max_freq']), 'kHz', 'GHz'):.2f} GHz")
    parts.append(f"boost {f.get('boost') or 'unknown'}")
    return ", ".join(parts)


def liboqs_text(meta: dict) -> str:
    info = meta.get("liboqs") or {}
    if not info:
        return "not loaded"
    config = info.get("build_config") or {}
    options = ", ".join(f"{k.removeprefix('OQS_')}={v}" for k, v in config.items() if k != "OQS_VERSION_TEXT")
    return (f"{info.get('liboqs_version', '?')} ({info.get('options', '?')} build; "
            f"{options or 'options unknown'})")


def git_text(meta: dict) -> str:
    g = meta.get("git") or {}
    if not g.get("commit"):
        return f"unknown ({g.get('reason', 'not a git checkout')})"
    return f"{g['commit'][:12]}" + (" (uncommitted changes)" if g.get("dirty") else "")


def _run_id(run) -> str | None:
    """A run's id (a run in memory carries it as an attribute; a loaded one in its metadata too)."""
    return getattr(run, "run_id", None) or run.meta.get("run_id")


def _run_ids(runs) -> list[str]:
    """The runs' ids, each once."""
    return _unique(_run_id(r) for r in as_runs(runs))


def run_context(runs) -> list[tuple[str, str]]:
    """(what, value) pairs describing where the runs measured; a value that differs between runs lists each
    value with the runs it belongs to ("0.14.0 (default build; ...) (runs A, B); not loaded (run C)")."""
    listed = as_runs(runs)
    metas = [r.meta for r in listed]
    if not metas:
        return []
    ids = [_run_id(r) or "?" for r in listed]

    def joined(get) -> str:
        by_value: dict[str, list[str]] = {}
        for run_id, m in zip(ids, metas):
            value = get(m)
            shown = str(value) if value not in (None, "", {}) else "not recorded"
            by_value.setdefault(shown, []).append(run_id)
        if len(by_value) == 1:
            return next(iter(by_value))
        return "; ".join(f"{v} ({'run' if len(r) == 1 else 'runs'} {', '.join(dict.fromkeys(r))})"
                         for v, r in by_value.items())

    def cpu(m) -> str:
        c = m.get("cpu") or {}
        cores = c.get("usable_cores") or c.get("logical_cores")
        model = c.get("model") or "unknown CPU"
        return f"{model}, {cores} cores" if cores else model

    def implementations() -> str:
        by_backend: dict[str, list] = {}
        every = {k: v for m in metas for k, v in (m.get("implementations") or {}).items()}
        for key, label in sorted(every.items()):
            by_backend.setdefault(key.rpartition("@")[2], []).append(label)
        return "; ".join(f"{b}: {' / '.join(dict.fromkeys(v))}" for b, v in by_backend.items()
                         if b != "pqlab") or "not recorded"

    def packages(m) -> str:
        p = m.get("packages") or {}
        return ", ".join(f"{k} {p[k]}" for k in SHOWN_PACKAGES if p.get(k))

    return [
        ("CPU", joined(cpu)),
        ("cycle counter", joined(counter_text)),
        ("frequency", joined(frequency_text)),
        ("hypervisor", joined(lambda m: m.get("hypervisor") or "none detected")),
        ("kernel", joined(lambda m: m.get("kernel"))),
        ("Python", joined(lambda m: m.get("python"))),
        ("libraries", joined(packages)),
        ("OpenSSL (cryptography)", joined(lambda m: m.get("openssl"))),
        ("liboqs", joined(liboqs_text)),
        ("implementations (checked against the installed packages)", implementations()),
        ("git commit", joined(git_text)),
        ("noise during the runs (rounds)", noise_text(runs)),
        ("caveats", " ".join(caveats(runs)) or "none recorded"),
        ("runs", ", ".join(_run_ids(runs))),
    ]


def _rounds_per_measurement(run) -> list[int]:
    table = getattr(run, "measurements", None)
    if table is None or "rounds" not in getattr(table, "columns", ()):
        return []
    return [int(x) for x in table["rounds"].dropna() if x > 0]


def caveats(runs) -> list[str]:
    """What a reader must weigh before citing the runs' numbers, each a sentence from the runs and the
    profile: the profile they were made in (the quick one checks that everything runs, the full one is the
    paper's), the rounds each measurement had (intervals over few rounds are wide, and a ratio whose interval
    does not resolve it is shown as not resolved), the rounds that ran while the machine was busy, and the
    implementations timed although they fail their known-answer or invalid-input checks."""
    listed = as_runs(runs)
    if not listed:
        return []
    out = []
    rounds = [n for r in listed if r.meta.get("round_noise") for n in _rounds_per_measurement(r)]
    profile = paths.PROFILE
    made = f"Made in the {profile} profile"
    if profile == "quick":
        made += ", which checks that everything runs: cite the full profile's numbers (make reproduce)"
    if rounds:
        made += (f"; each measurement had {fmt_span(rounds, fmt_count)} rounds, and its interval is over "
                 "those rounds (a ratio whose interval does not resolve it is shown as not resolved)")
    out.append(made + ".")
    noise = [x for r in listed for x in (r.meta.get("round_noise") or [])]
    busy = [x for x in noise if x.get("busy")]
    if noise:
        out.append(f"{fmt_count(len(busy))} of {fmt_count(len(noise))} rounds ran while the machine was busy "
                   "(other processes' CPU or steal)" + (": their measurements carry the flag busy." if busy
                                                         else "."))
    timed = sorted({k for r in listed for k in (r.meta.get("allowed_nonconforming") or [])})
    if timed:
        out.append(f"Timed although non-conforming (they fail known-answer or invalid-input checks): "
                   f"{', '.join(timed)}.")
    return out


def noise_text(runs) -> str:
    """Per run that measured in rounds, the noise its rounds saw (:func:`pqlab.measure.noise.describe_noise`);
    runs without rounds are counted, not described."""

    parts, without = [], 0
    for r in as_runs(runs):
        if r.meta.get("round_noise"):
            parts.append(f"{r.run_id}: {describe_noise(r.meta)}")
        else:
            without += 1
    if without:
        parts.append(f"{without} run(s) without rounds (a runner that cannot do them, or made before rounds)")
    return "; ".join(parts) or "not recorded"


def context_markdown(runs, title: str = "Run context") -> str:
    """A Markdown block with :func:`run_context` (for the top of a notebook's results): a table of two
    columns, every value from the metadata escaped (:func:`pqlab.core.formatting.markdown`), so it shows as
    written."""
    rows = run_context(runs)
    if not rows:
        return f"**{markdown(title)}:** no run."
    lines = [f"**Caveats.** {markdown(' '.join(caveats(runs)))}", "",
             f"**{markdown(title)}** (from the runs' metadata)", "", "| | |", "|---|---|"]
    lines += [f"| {markdown(k)} | {markdown(v)} |" for k, v in rows]
    return "\n".join(lines)


def context_line(runs) -> str:
    """One short line: CPU, hypervisor, counter, liboqs build and run ids (a figure's footer), as plain text
    straight from the metadata: whoever writes it escapes it for its language (pqlab.core.formatting)."""
    metas = [r.meta for r in as_runs(runs)]
    if not metas:
        return ""
    m = metas[0]
    cpu = (m.get("cpu") or {}).get("model") or "unknown CPU"
    parts = [cpu, m.get("hypervisor") or "bare metal or undetected", f"counter {counter_text(m)}"]
    loaded = [f"{i.get('liboqs_version', '?')} {i.get('options', '')}".strip()
              for i in (x.get("liboqs") or {} for x in metas) if i]
    if loaded:  # every build the runs loaded: a figure comparing two builds names both
        parts.append("liboqs " + " and ".join(dict.fromkeys(loaded)))
    ids = _run_ids(runs)
    parts.append(("run " if len(ids) == 1 else "runs ") + ", ".join(ids))
    return " · ".join(parts)


def counter_markdown(counter: dict, availability: dict) -> str:
    """Which counter a run's cycles come from, why, and what one read costs here (Markdown), from its
    ``meta["counter"]`` and ``meta["counters"]``."""

    label = counter.get("label")
    if label not in (CORE_CYCLES, TSC):
        return (f"**No cycle counter ran** ({markdown(counter.get('reason') or counter.get('error'))}): the "
                "tables show measured times, and ratios are ratios of mean times per call.")
    text = f"Cycles here are **{describe(label, counter.get('hz'))}** (`cycles_source` = `{label}`"
    text += f"; rate from {markdown(counter['hz_source'])})" if label == TSC else ")"
    if counter.get("reason") and counter["reason"] != "auto":
        text += f", chosen because: {markdown(counter['reason'])}"
    return (text + ". " + read_costs_text(availability)
            + f" `{shell_command('pqlab machine')}` shows the same on one screen.")


def read_costs_text(availability: dict) -> str:
    """The cost of one TSC read and of one perf_event read here, or why it was not measured (Markdown)."""
    tsc, perf = availability.get("tsc") or {}, availability.get("perf") or {}
    parts = []
    if tsc.get("available"):
        parts.append(f"One TSC read costs {fmt_time_ns(tsc['read_cost_ns'])} ({tsc['read_cost_ticks']:.0f} "
                     f"ticks) from Python and {tsc['read_cost_ticks_in_c']:.0f} ticks inside C")
    else:
        parts.append(f"No TSC here ({markdown(tsc.get('error', 'not recorded'))})")
    if perf.get("available"):
        parts.append(f"one perf_event read costs {fmt_time_ns(perf['read_cost_ns'])} "
                     f"({perf['read_cost_ticks']:.0f} core cycles) from Python")
    else:
        parts.append(f"a perf_event read could not be measured: core cycles are unavailable here "
                     f"({markdown(perf.get('error', 'not recorded'))})")
    return "; ".join(parts) + "."


def interval_method(rounds) -> str:
    """How every interval pqlab shows is made (:func:`pqlab.measure.stats.round_interval`), with the counts of
    rounds it came from (`rounds`: one count per row or ratio; missing ones ignored): "95 % t-intervals on the
    logarithms of the per-round values (3 to 18 rounds), widened by the machine's drift over those rounds"."""
    from pqlab.measure.stats import CONFIDENCE

    return (f"{fmt_percent(CONFIDENCE, 0)} t-intervals on the logarithms of the per-round values "
            f"({fmt_span(rounds, fmt_count)} rounds), widened by the machine's drift over those rounds")


def precision_markdown(measurements) -> str:
    """How precise the medians of a measurements table are, every number from its rows (Markdown): how the
    intervals were made (:func:`pqlab.measure.stats.round_interval`: rounds, a t quantile on logarithms, the
    machine's drift; the confidence level and the rows' round counts), the median and worst half-width of the
    rows whose interval resolves them, how many do not (:func:`pqlab.core.formatting.resolved_rel`: never
    shown as a precision), and how many are wider than their target (flag ``precision-not-reached``)."""
    import pandas as pd

    from pqlab.measure.stats import CONFIDENCE

    level = fmt_percent(CONFIDENCE, 0)
    rel = pd.to_numeric(measurements["time_ns_rel_ci"], errors="coerce") if "time_ns_rel_ci" in measurements \
        else pd.Series(dtype=float)
    rows = measurements[rel.notna()] if len(rel) else measurements.iloc[0:0]
    if rows.empty:
        return (f"**Precision of the medians**: not recorded (no row has a {level} interval: fewer rounds "
                "than an interval needs, or an older run).")
    rel = rel[rel.notna()]
    ok = rel.map(resolved_rel).astype(bool)
    rounds = rows["rounds"] if "rounds" in rows else []
    method = f"half the interval over the estimate; {interval_method(rounds)}"
    parts = [f"median ±{fmt_percent(rel[ok].median(), 2)}, worst ±{fmt_percent(rel[ok].max(), 2)} over "
             f"{fmt_count(ok.sum())} rows"] if ok.any() else []
    if not ok.all():
        parts.append(f"{fmt_count((~ok).sum())} of {fmt_count(len(rel))} rows {not_resolved_text()}, left "
                     "out of the median and the worst")
    targets = (pd.to_numeric(rows["target_rel_ci"], errors="coerce") if "target_rel_ci" in rows
               else rel * float("nan"))
    if targets.notna().any():
        known = targets.dropna().unique()
        target = f" of ±{fmt_percent(known[0], 2)}" if len(known) == 1 else ""
        parts.append(f"{fmt_count((rel > targets).sum())} of {fmt_count(targets.notna().sum())} rows are "
                     f"wider than their target{target} (flag `precision-not-reached`, whose detail says what "
                     "ended their rounds)")
    return f"**Precision of the medians** ({method}): {'; '.join(parts)}."
