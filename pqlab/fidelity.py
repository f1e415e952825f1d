"""Harness fidelity: does pqlab report what a bare loop over liboqs-python would?

    python -m pqlab fidelity --budget 2

For a few operations, pqlab's median (the adapter's trial, timed by
:func:`pqlab.timing.measure` with its output checks, exactly as :func:`pqlab.benchmark.bench`
does) is set against a bare loop that calls liboqs-python directly::

    t0 = perf_counter_ns(); kem.encap_secret(pk); t1 = perf_counter_ns()

Both get the same sampling budget, split into blocks that alternate (the order rotates from
block to block), so drifts of the machine hit both alike.  A third arm, pqlab with the loop
count forced to 1, separates the effect of loop calibration (a sample's value is the mean
of `loops` back-to-back calls) from the rest of the harness.  The ratio pqlab/bare (of the
pooled medians, and paired: the median of the per-block ratios, with its quartiles as the
noise band) should be within 5% for operations above 100 microseconds; below that, Python's
own call costs show, which is what the harness no-op overhead (also printed) measures.
"""
from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

#: (algorithm, operation) pairs measured by default (all liboqs).
DEFAULT_OPERATIONS = (("ML-KEM-768", "encaps"), ("ML-DSA-44", "sign"), ("SPHINCS+-SHAKE-128f-simple", "sign"))
#: |pqlab/bare - 1| allowed for operations slower than SLOW_NS
TOLERANCE = 0.05
SLOW_NS = 100_000
ARMS = ("pqlab", "pqlab_loops1", "bare")


def bare_call(name: str, operation: str, message: bytes) -> Callable[[], object]:
    """A zero-argument call of liboqs-python itself (no pqlab adapter), with fresh keys."""
    from .liboqs_loader import import_oqs

    oqs = import_oqs()
    if operation in ("sign", "verify"):
        sig = oqs.Signature(name)
        pk = sig.generate_keypair()
        if operation == "sign":
            return functools.partial(sig.sign, message)
        signature = sig.sign(message)
        return functools.partial(sig.verify, message, signature, pk)
    kem = oqs.KeyEncapsulation(name)
    pk = kem.generate_keypair()
    if operation == "encaps":
        return functools.partial(kem.encap_secret, pk)
    if operation == "decaps":
        ct, _ = kem.encap_secret(pk)
        return functools.partial(kem.decap_secret, ct)
    raise ValueError(f"the bare loop knows sign, verify, encaps and decaps, not {operation!r}")


def time_bare(call: Callable[[], object], budget_s: float, min_samples: int = 1) -> np.ndarray:
    """Single calls timed back to back with perf_counter_ns for `budget_s` seconds (ns per call)."""
    clock = time.perf_counter_ns
    out = []
    append = out.append
    deadline = clock() + budget_s * 1e9
    while len(out) < min_samples or clock() < deadline:
        t0 = clock()
        call()
        t1 = clock()
        append(t1 - t0)
    return np.asarray(out, dtype=float)


def _pqlab_block(trial, budget_s: float, loops: int | None) -> tuple[np.ndarray, int]:
    from .timing import measure

    # the arms alternate in blocks of equal time: no early stop at a precision target
    s = measure(trial.run, trial.check, budget_s=budget_s, min_samples=1, loops=loops, fresh=trial.fresh,
                target_rel_ci=None)
    return s.time_ns, s.loops


def measure_fidelity(operations=DEFAULT_OPERATIONS, budget_s: float = 2.0, blocks: int = 20, message_bytes: int = 100,
                     seed: int = 0, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """One row per operation: medians of pqlab, pqlab with loops=1 and the bare loop, and ratios.

    `budget_s` is each arm's sampling time per operation, spread over `blocks` alternating blocks
    (pqlab's warm-ups and output checks come on top, as in a bench run).  `ratio` is the ratio of
    the pooled medians; `paired_ratio` the median of the per-block ratios, which cancels load that
    changes from block to block.  `within_5pct` (operations over 100 us only) is True when both are
    within 5%, False when both are outside, None when they disagree or the operation is faster.
    """
    from . import inputs
    from .algorithms import get, random_message

    budget_s = inputs.positive_number(budget_s, "budget_s")
    blocks = inputs.count(blocks, "blocks")
    message = random_message(inputs.message_size(message_bytes), seed)
    for name, operation in operations:
        inputs.operations([get(name, "liboqs")], [operation])
    rows = []
    for name, operation in operations:
        if progress:
            progress(f"{name} {operation}")
        trial = get(name, "liboqs").trial(operation, message)
        bare = bare_call(name, operation, message)
        samples: dict[str, list[np.ndarray]] = {arm: [] for arm in ARMS}
        loops_used: list[int] = []
        block_s = budget_s / blocks
        for i in range(blocks):
            order = ARMS[i % len(ARMS):] + ARMS[:i % len(ARMS)]  # rotate: no arm always goes first
            for arm in order:
                if arm == "bare":
                    samples[arm].append(time_bare(bare, block_s))
                else:
                    values, loops = _pqlab_block(trial, block_s, None if arm == "pqlab" else 1)
                    samples[arm].append(values)
                    if arm == "pqlab":
                        loops_used.append(loops)
        med = {arm: float(np.median(np.concatenate(samples[arm]))) for arm in ARMS}
        ratio = med["pqlab"] / med["bare"]
        # the spread of the ratio from block to block: how far noise alone moves it
        block_ratios = [np.median(p) / np.median(b) for p, b in zip(samples["pqlab"], samples["bare"])]
        block_q1, paired, block_q3 = np.percentile(block_ratios, [25, 50, 75])
        slow = med["bare"] >= SLOW_NS
        inside = [abs(r - 1) <= TOLERANCE for r in (ratio, paired)]
        verdict = inside[0] if slow and inside[0] == inside[1] else None
        rows.append({
            "algorithm": name, "operation": operation,
            "pqlab_us": med["pqlab"] / 1e3, "bare_us": med["bare"] / 1e3, "ratio": ratio,
            "paired_ratio": float(paired), "within_5pct": verdict, "slow": slow,
            "pqlab_loops1_us": med["pqlab_loops1"] / 1e3, "ratio_loops1": med["pqlab_loops1"] / med["bare"],
            "block_ratio_q1": float(block_q1), "block_ratio_q3": float(block_q3),
            "loops_min": min(loops_used), "loops_max": max(loops_used),
            "pqlab_samples": int(sum(a.size for a in samples["pqlab"])),
            "bare_samples": int(sum(a.size for a in samples["bare"])),
        })
    return pd.DataFrame(rows)


def measure_noop(budget_s: float = 0.2) -> dict:
    """What the harness itself costs: pqlab's no-op (as bench measures it) and bare timer costs, in ns."""
    from .algorithms import Noop
    from .inputs import positive_number
    from .timing import measure

    budget_s = positive_number(budget_s, "budget_s")
    trial = Noop().trial()
    s = measure(trial.run, trial.check, budget_s=budget_s)
    fed = Noop().trial("noop", bytes(100), fed=True)
    s_fed = measure(fed.run, fed.check, budget_s=budget_s, fresh=fed.fresh)
    clock = time.perf_counter_ns
    empty = time_bare(lambda: None, budget_s / 2)
    back_to_back = []
    deadline = clock() + budget_s / 2 * 1e9
    while clock() < deadline:
        t0 = clock()
        t1 = clock()
        back_to_back.append(t1 - t0)
    return {"pqlab_noop_ns": float(np.median(s.time_ns)), "pqlab_noop_loops": s.loops,
            "pqlab_noop_fed_ns": float(np.median(s_fed.time_ns)),
            "bare_empty_call_ns": float(np.median(empty)), "timer_back_to_back_ns": float(np.median(back_to_back))}


#: A round whose mean per call lies this far or more above its side's fastest round counts as slow
SLOW_ROUND = 0.10


def round_means(values) -> np.ndarray:
    """The per-round means of samples labelled with their rounds (:func:`pqlab.stats.has_rounds`); empty for
    samples without rounds."""
    from .stats import round_values

    r = round_values(values, "mean")
    return np.array([]) if r is None else r.to_numpy(float)


def fastest_rounds(numerator, denominator, slow: float = SLOW_ROUND) -> dict:
    """How the rounds of the two sides of a ratio ran (each round a fresh process): ``fastest_ratio``, the
    numerator's fastest round mean over the denominator's (what the ratio is where neither side was slowed);
    per side (``num_``/``den_``) the rounds, how many were `slow` or more above that side's fastest round,
    and how far the slowest one was (``_worst``: 0.3 is 30 % above the fastest).  NaN and 0 without rounds.

    A whole process now and then runs slower on a shared virtual machine (the host, not the code); a ratio
    of two runs made one after the other moves with how many of each side's rounds that hit.  When the ratio
    of the fastest rounds lies on the other side of 1 than the ratio itself, slow rounds made the difference."""
    out = {}
    means = {}
    for side, values in (("num", numerator), ("den", denominator)):
        m = round_means(values)
        m = m[np.isfinite(m) & (m > 0)]
        means[side] = m
        fastest = m.min() if m.size else np.nan
        out.update({f"{side}_rounds": int(m.size), f"{side}_slow": int((m >= fastest * (1 + slow)).sum()),
                    f"{side}_worst": float(m.max() / fastest - 1) if m.size else np.nan})
    out["fastest_ratio"] = (float(means["num"].min() / means["den"].min()) if means["num"].size and means["den"].size
                            else np.nan)
    return out


def format_fidelity(df: pd.DataFrame, noop: dict | None = None) -> str:
    """The table the `fidelity` command prints."""
    def verdict(row) -> str:
        if not row["slow"]:
            return f"n/a (<{SLOW_NS / 1e3:g} us)"
        if row["within_5pct"] is None or pd.isna(row["within_5pct"]):
            return "unclear (noise)"
        return "yes" if row["within_5pct"] else "NO"

    shown = pd.DataFrame({
        "operation": df["algorithm"] + " " + df["operation"],
        "pqlab median us": df["pqlab_us"].map("{:.2f}".format),
        "bare median us": df["bare_us"].map("{:.2f}".format),
        "pqlab/bare": df["ratio"].map("{:.3f}".format),
        "paired (q1-q3)": [f"{m:.3f} ({a:.3f}-{b:.3f})" for m, a, b in
                           zip(df["paired_ratio"], df["block_ratio_q1"], df["block_ratio_q3"])],
        f"within {TOLERANCE:.0%}": df.apply(verdict, axis=1),
        "loops": [f"{a}" if a == b else f"{a}-{b}" for a, b in zip(df["loops_min"], df["loops_max"])],
        "pqlab us (loops=1)": df["pqlab_loops1_us"].map("{:.2f}".format),
        "loops=1/bare": df["ratio_loops1"].map("{:.3f}".format),
    })
    text = shown.to_string(index=False)
    if hasattr(os, "getloadavg"):
        text += (f"\n\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
                 "(other processes add noise to both arms alike; the per-block ratios show how much)")
    if noop:
        text += (f"\nharness overhead: pqlab no-op {noop['pqlab_noop_ns']:.1f} ns per call "
                 f"(loops={noop['pqlab_noop_loops']}), {noop['pqlab_noop_fed_ns']:.1f} ns fed a fresh message per "
                 f"call as sign is; bare empty call {noop['bare_empty_call_ns']:.0f} ns "
                 f"including the timer; perf_counter_ns back to back {noop['timer_back_to_back_ns']:.0f} ns")
    return text
