"""Notebook 04's generated text (Markdown), every number from the data: cycles against time, the optimised
build's speed-up, what pqlab's path adds over the native runner (and why a ratio lies below 1), a second
implementation against liboqs, and the closing note with its numbers."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from pqlab.core.formatting import fmt_cycles, fmt_factor, fmt_factor_ci, fmt_percent, fmt_time_ns
from pqlab.core.schema import convert_unit
from pqlab.measure.cycles import per_call
from pqlab.measure.stats import CONFIDENCE
from pqlab.publish.context import precision_markdown, read_costs_text
from pqlab.runners.fidelity import SLOW_ROUND
from pqlab.studies import conforming
from pqlab.studies.signature_cycles.measure import SIGNATURE_OPERATIONS
from pqlab.studies.signature_cycles.rows import CLOCK_TOLERANCE
from pqlab.studies.signature_cycles.tables import lookup

#: Native operations shorter than SHORT_NS and longer than LONG_NS (ns), whose pqlab / native ratios are
#: told apart
SHORT_NS, LONG_NS = 5e5, 5e6


def describe_clock(summary: dict | None, counter: dict, tolerance: float = CLOCK_TOLERANCE,
                   rows: pd.DataFrame | None = None) -> str:
    """Cycles against time in our runs, or why that check is skipped here (Markdown)."""
    if summary is None:
        if counter["basis"] == "time_ns":
            return "No cycle counter ran, so there is no clock to check: times are shown as measured."
        ghz = rows["implied_ghz"].dropna() if rows is not None else pd.Series(dtype=float)
        # a counter's rate in Hz is cycles per second
        seen = (f" Here ticks / ns has a median of {ghz.median():.4f} over {len(ghz)} rows against the "
                f"stated {convert_unit(counter['hz'], 'cycles', 'Gcycles'):.4f} GHz."
                if len(ghz) and counter.get("hz") else "")
        return (f"**The clock-consistency check is skipped**: it applies to core cycles only. These are "
                f"{counter['unit']}, elapsed time counted at a fixed rate, so cycles / time is that rate by "
                f"construction and would confirm nothing.{seen} Times are shown as measured.")
    nominal = (f"; /proc/cpuinfo reports {summary['nominal_ghz']:.2f} GHz, the clock the hypervisor "
               f"announces, not the one the core runs at" if summary.get("nominal_ghz") else "")
    n_out = summary["rows"] - summary["consistent"]
    text = (f"Over {summary['rows']} measured rows the implied clock (median cycles / median time) has a "
            f"median of **{summary['clock_ghz']:.2f} GHz** (quartiles "
            f"{summary['clock_q1']:.2f}–{summary['clock_q3']:.2f} GHz){nominal}. {summary['consistent']} "
            f"rows lie within ±{tolerance:.0%} of their run's clock")
    if n_out:
        outside = summary["outside"]
        below = outside[outside["verdict"].str.startswith("below")].sort_values("implied_ghz")
        above = (outside[outside["verdict"].str.startswith("above")]
                 .sort_values("implied_ghz", ascending=False))
        text += f"; {n_out} {'does' if n_out == 1 else 'do'} not"
        if len(below):
            listed = ", ".join(f"{r.algorithm} {r.operation} ({r.build}, {r.implied_ghz:.2f} GHz)"
                               for r in below.head(4).itertuples())
            text += (f". {len(below)} {'lies' if len(below) == 1 else 'lie'} below, e.g. "
                     f"{listed}{' …' if len(below) > 4 else ''}: their wall time "
                     f"includes time without user cycles (descheduling by other load, or kernel work such as "
                     f"page faults), so their cycles are the better measure")
        if len(above):
            text += (f". {len(above)} {'lies' if len(above) == 1 else 'lie'} above (up to "
                     f"{above['implied_ghz'].iloc[0]:.2f} GHz): the core's boost "
                     f"clock was higher while they ran, as it is when the rest of the machine is idle")
        text += "."
    else:
        text += ", i.e. all of them: every time shown follows from its cycles at the measured clock."
    return text


def describe_speedups(speedups: pd.DataFrame, faster: float = 1.1) -> str:
    """The optimised build's speed-up (Markdown), and which ratios compare unlike work (``unlike_work``)."""
    s = speedups.dropna(subset=["speedup"])
    if s.empty:
        return "The portable build was not measured in this run."
    sign = s[s["operation"] == "sign"].sort_values("speedup")
    by_op = s.groupby("operation")["speedup"].median()
    ops = ", ".join(f"{op} {by_op[op]:.2f}×" for op in SIGNATURE_OPERATIONS if op in by_op)
    n_fast = int((s["speedup"] >= faster).sum())
    text = (f"Median speed-up of the optimised build over {s['algorithm'].nunique()} algorithms: {ops}. "
            f"{n_fast} of {len(s)} operations run at least {faster:.1f}× faster optimised")
    same = s[s["speedup"] < faster]
    if len(same):
        listed = ", ".join(f"{r.algorithm} {r.operation} ({r.speedup:.2f}×)"
                           for r in same.head(6).itertuples())
        text += f"; no gain for {listed}{' …' if len(same) > 6 else ''}"
    if len(sign):
        hi, lo = sign.iloc[-1], sign.iloc[0]
        text += (f". Signing gains most in {hi['algorithm']} ({hi['speedup']:.1f}×) and least in "
                 f"{lo['algorithm']} ({lo['speedup']:.2f}×).")
    unlike = conforming.describe_unlike_work(s, "speedup")
    return text + (f" {unlike}" if unlike else "")


def _fmt_basis(value, basis: str) -> str:
    return fmt_time_ns(value) if basis == "time_ns" else fmt_cycles(value)


def describe_python_over_native(fidelity: pd.DataFrame, counter: dict, noop: float | None = None,
                                runs=()) -> str:
    """What pqlab's path adds over the native runner, both counted with the same counter (Markdown); then
    :func:`pqlab.studies.conforming.caveat` of `runs`."""
    f = fidelity.dropna(subset=["ratio"])
    if f.empty:
        return "The native runner measured nothing in common with pqlab in this run."
    basis = counter["basis"]
    by_op = f.groupby("operation")["ratio"].median()
    ops = ", ".join(f"{op} {by_op[op]:.2f}" for op in SIGNATURE_OPERATIONS if op in by_op)
    worst = f.sort_values("ratio").iloc[-1]
    text = (f"pqlab / native, {per_call(counter)} on both sides (median over {f['algorithm'].nunique()} "
            f"algorithms): {ops}. The largest ratio is {worst['algorithm']} {worst['operation']}'s "
            f"({worst['ratio']:.2f}, {_fmt_basis(worst[f'added_{basis}'], basis)} added).")
    fast, slow = f[f["native_time_ns_mean"] < SHORT_NS], f[f["native_time_ns_mean"] >= LONG_NS]
    if len(fast) and len(slow):
        text += (f" Operations under {fmt_time_ns(SHORT_NS)} natively: median ratio "
                 f"{fast['ratio'].median():.2f} ({len(fast)} operations); over {fmt_time_ns(LONG_NS)}: "
                 f"{slow['ratio'].median():.2f} ({len(slow)}).")
    if noop:
        text += f" A do-nothing call through the harness costs {_fmt_basis(noop, basis)}."
    return text + describe_below_one(f) + conforming.paragraph(runs)


def describe_below_one(f: pd.DataFrame) -> str:
    """The pqlab / native ratios below 1 with their intervals, and why (from the rounds:
    :func:`with_round_checks`)."""
    below = f[f["ratio"] < 1].sort_values("ratio")
    if below.empty:
        return " No ratio lies below 1."
    ci = "ratio_ci_low" in below

    def shown(r) -> str:
        return (f"{r['algorithm']} {r['operation']} "
                + (fmt_factor_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]) if ci
                   else fmt_factor(r["ratio"])))

    clear = below[below["ratio_ci_high"] < 1] if ci else below.iloc[:0]
    text = (f" **Below 1** ({len(below)} of {len(f)} operations, {len(clear)} of them with the whole "
            "interval below 1): " + "; ".join(shown(r) for _, r in below.iterrows()) + ". pqlab's path runs "
            "the same C code and more, so a ratio below 1 says that the two sides ran under different "
            "conditions, not that pqlab's path is faster.")
    if "ratio_fastest_rounds" not in below:
        return text + " This run did not record its rounds, so which conditions is not known."
    n_rounds, p_rounds = int(f["native_rounds"].sum()), int(f["pqlab_rounds"].sum())
    n_slow, p_slow = int(f["native_slow_rounds"].sum()), int(f["pqlab_slow_rounds"].sum())
    text += (f" They are separate runs, measured one after the other, each round a fresh process: over the "
             f"{len(f)} operations, {n_slow} of the native runner's {n_rounds} rounds ran "
             f"{fmt_percent(SLOW_ROUND, 0)} or more above that operation's fastest native round, against "
             f"{p_slow} of pqlab's {p_rounds}.")
    explained = below[below["ratio_fastest_rounds"] >= 1]
    if len(explained):
        text += (" On the fastest round of each side, pqlab / native is at or above 1 for "
                 + "; ".join(f"{r['algorithm']} {r['operation']} ({r['ratio_fastest_rounds']:.2f}; native: "
                             f"{int(r['native_slow_rounds'])} slow of {int(r['native_rounds'])} rounds, the "
                             f"slowest {fmt_percent(r['native_worst_round'], 0)} above its fastest)"
                             for _, r in explained.iterrows())
                 + ": slow rounds of the machine, not the harness, put the ratio below 1.")
    rest = below[~(below["ratio_fastest_rounds"] >= 1)]
    if len(rest):
        text += (" On their fastest rounds too, pqlab / native stays below 1 for "
                 + "; ".join(f"{r['algorithm']} {r['operation']} ({r['ratio_fastest_rounds']:.2f})"
                             for _, r in rest.iterrows())
                 + f": slow rounds do not explain {'it' if len(rest) == 1 else 'them'}, and this run records "
                 "nothing else that would (both harnesses verify one signature again and again).")
    return text


def describe_implementations(implementations: pd.DataFrame, counter: dict, runs=()) -> str:
    """A second implementation against liboqs, per algorithm, operation and liboqs build (Markdown); then
    :func:`pqlab.studies.conforming.caveat` of `runs`."""
    if implementations.empty:
        return "No algorithm was measured through a second implementation in this run."
    parts = []
    for alg, g in implementations.groupby("algorithm", sort=False):
        per_build = []
        for build, h in g.groupby("liboqs_build", sort=False):
            ops = ", ".join(f"{r.operation} {r.ratio:.2f}×" for r in h.itertuples())
            per_build.append(f"{ops} that of liboqs's {build.split()[-1]} build")
        parts.append(f"{alg} through OpenSSL needs " + "; and ".join(per_build))
    return ". ".join(parts) + f" ({per_call(counter)})." + conforming.paragraph(runs)


NOTE_RATIOS = (("ML-DSA-44", "sign"), ("Falcon-512", "verify"), ("SPHINCS+-SHA2-128f-simple", "sign"))
NOTE_SPEEDUPS = ("ML-DSA-44", "Falcon-512", "SPHINCS+-SHAKE-128f-simple")


def closing_numbers(fidelity: pd.DataFrame, speedups: pd.DataFrame) -> dict:
    """The closing note's numbers: pqlab/native ratios and optimised/portable speed-ups, each
    ``(value, ci_low, ci_high)`` (None where not measured; the bounds NaN where the table has none)."""
    def get(table, alg, op, col):
        v = lookup(table, alg, op, col)
        if v is None:
            return None
        return v, *((lookup(table, alg, op, f"{col}_ci_{end}") if f"{col}_ci_{end}" in table else None)
                    or np.nan for end in ("low", "high"))

    out = {}
    for alg, op in NOTE_RATIOS:
        out[f"ratio {alg} {op}"] = get(fidelity, alg, op, "ratio")
    for alg in NOTE_SPEEDUPS:
        for op in SIGNATURE_OPERATIONS:
            out[f"speedup {alg} {op}"] = get(speedups, alg, op, "speedup")
    return out


def numbers(closing: dict, runs=()) -> dict[str, float | str | None]:
    """Every number of the closing note under a stable key (letters, digits, "_"), interval bounds
    as ``<key>_ci_low`` and ``<key>_ci_high``: python_over_native_<algorithm>_<op> and
    portable_over_optimised_<algorithm>_<op>; ``cycles_mldsa_caveat``: :func:`conforming.paper_caveat` of
    `runs`."""
    out = {}
    for name, value in closing.items():
        kind, alg, op = name.split(" ")
        key = re.sub(r"[^a-z0-9]+", "_", "_".join(("python_over_native" if kind == "ratio" else
                                                   "portable_over_optimised", alg.replace("+", "plus"),
                                                   op)).lower())
        out[key], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = value if value is not None else (None,) * 3
    out = {k: None if v is None or np.isnan(v) else v for k, v in out.items()}  # None: not measured
    return {**out, "cycles_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}


def write_closing_note(numbers: dict, clock: dict | None, reference: dict, run_ids: dict, durations: dict,
                       counter: dict, measurements: pd.DataFrame, tolerance: float = CLOCK_TOLERANCE) -> str:
    """The notebook's closing note (Markdown), every number from the data; `measurements`: pqlab's rows,
    whose precision it states (:func:`pqlab.publish.context.precision_markdown`)."""
    def factor(v, digits: int = 2) -> str:
        return fmt_factor(None) if v is None else fmt_factor_ci(*v, digits=digits)

    ratios = "; ".join(f"{k.split(' ', 1)[1]}: **{factor(v)}**" for k, v in numbers.items()
                       if k.startswith("ratio"))
    sp = []
    for alg in NOTE_SPEEDUPS:
        vals = [numbers.get(f"speedup {alg} {op}") for op in SIGNATURE_OPERATIONS]
        sp.append(f"{alg}: " + ", ".join(f"{op} **{factor(v, 1)}**"
                                         for op, v in zip(SIGNATURE_OPERATIONS, vals, strict=True)))
    total = sum(durations.values())
    if clock is not None:
        timing = (f"core cycles; the counter ran at {clock['clock_ghz']:.2f} GHz (median over rows); "
                  f"{clock['consistent']} of {clock['rows']} rows lie within ±{tolerance:.0%} of their run's "
                  "clock")
    elif counter["basis"] == "cycles":
        timing = (f"{counter['unit']} (rate from {counter['hz_source']}); the clock-consistency check "
                  "applies to core cycles only and was skipped")

    else:
        timing = f"no cycle counter ({counter.get('reason')}): times only"
    clock_ghz = convert_unit(reference["clock_hz"], "Hz", "GHz")
    return (
        "### Closing note\n\n"
        f"- **Harness fidelity** (pqlab / native C runner, {per_call(counter)}, same counter, same liboqs "
        f"build, a fresh message per signature on both sides; {fmt_percent(CONFIDENCE, 0)} intervals over "
        f"rounds in brackets): {ratios}.\n"
        f"- **Optimised / portable** (portable liboqs / optimised, {per_call(counter)}): {'; '.join(sp)}.\n"
        f"- **Cycles**: {timing}. {read_costs_text(counter.get('availability') or {})}\n"
        f"- {precision_markdown(measurements)}\n"
        f"- **The study's times**: sign time = cycles / {clock_ghz:.3f} GHz in "
        f"{reference['sign_matches']} of {reference['rows']} rows, verify time in "
        f"{reference['verify_matches']} of {reference['rows']}.\n"
        f"- Measuring took {total:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in durations.items())
        + "); runs: " + ", ".join(f"`{v}`" for v in run_ids.values()) + "."
    )
