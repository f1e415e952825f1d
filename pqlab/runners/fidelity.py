"""Harness fidelity: does pqlab report what liboqs's own C loop measures?

    python -m pqlab fidelity --budget 2

For a few operations, four arms measure the same liboqs build in one run, in blocks that alternate (the
order rotates from block to block, so drifts of the machine hit every arm alike):

- ``pqlab``: backend ``liboqs``, pqlab's lean path (a sample's calls in pqlab's C loop, one call from Python
  per sample: :mod:`pqlab.backends.liboqs`), timed by :func:`pqlab.measure.timing.measure` with its output
  checks, exactly as :func:`pqlab.benchmark.bench` does;
- ``liboqs-python``: the same harness through liboqs-python (backend ``liboqs-python``), the binding a user
  calls;
- ``bare``: a bare loop over liboqs-python, ``t0 = perf_counter_ns(); kem.encap_secret(pk); t1 = ...``;
- ``native``: pqlab's C runner (:mod:`pqlab.runners.native`), liboqs timed from C one call per sample, on the
  same input as pqlab (one signature verified, one ciphertext decapsulated, again and again; a fresh message
  per signature).

Each arm's ratio over ``native`` is of mean times per call: pooled, and paired by block (each block a pair of
fresh processes, as a round is: the median of the per-block ratios with its 95 % t-interval,
:func:`pqlab.measure.stats.interval_over_rounds`).  pqlab's path is within 5 % of native where that interval
lies at or below 1.05.
"""
from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get, random_message
from pqlab.backends.base import Noop
from pqlab.backends.liboqs import lean_noop_trial
from pqlab.core import inputs
from pqlab.core.formatting import fmt_percent
from pqlab.core.inputs import positive_number
from pqlab.core.schema import convert_unit
from pqlab.liboqs.loader import import_oqs
from pqlab.measure.stats import CONFIDENCE, interval_over_rounds, round_values
from pqlab.measure.timing import measure
from pqlab.runners.base import RunnerError, call_json, failure
from pqlab.runners.native import run_native

#: (algorithm, operation) pairs measured by default (all liboqs).
DEFAULT_OPERATIONS = (("ML-KEM-768", "encaps"), ("ML-KEM-768", "decaps"), ("ML-DSA-44", "verify"),
                      ("ML-DSA-44", "sign"))
#: |arm/native - 1| allowed
TOLERANCE = 0.05
ARMS = ("pqlab", "liboqs-python", "bare", "native")


def bare_call(name: str, operation: str, message: bytes) -> Callable[[], object]:
    """A zero-argument call of liboqs-python itself (no pqlab adapter), with fresh keys."""

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
    deadline = clock() + convert_unit(budget_s, "s", "ns")
    while len(out) < min_samples or clock() < deadline:
        t0 = clock()
        call()
        t1 = clock()
        append(t1 - t0)
    return np.asarray(out, dtype=float)


def _block(name: str, operation: str, arm: str, message: bytes, budget_s: float) -> tuple[list[float], int]:
    """One block of one arm in this process: (ns per call of each sample, loops per sample)."""

    if arm == "bare":
        return time_bare(bare_call(name, operation, message), budget_s).tolist(), 1
    trial = get(name, "liboqs" if arm == "pqlab" else "liboqs-python").trial(operation, message)
    # the arms alternate in blocks of equal time: no early stop at a precision target
    s = measure(trial.run, trial.check, budget_s=budget_s, min_samples=1, fresh=trial.fresh,
                repeat=trial.repeat, output=trial.output, target_rel_ci=None)
    return s.time_ns.tolist(), s.loops


def _block_in_worker(name: str, operation: str, arm: str, message: bytes,
                     budget_s: float) -> tuple[np.ndarray, int]:
    """One block of one arm in a fresh process, as the native arm's is (a process's luck, its memory placement
    and caches, is not carried from block to block by one arm only)."""


    if arm == "native":

        result = run_native(name, [operation], len(message), budget_s, "default", min_samples=1,
                            max_samples=1_000_000, warmup=3, pool=1)
        return np.asarray(result["operations"][0]["samples_ns"], dtype=float), 1
    cmd = [sys.executable, "-m", "pqlab.runners.fidelity", name, operation, arm, message.hex(),
           repr(budget_s)]
    proc, out = call_json(cmd, what=f"the fidelity worker ({arm})", timeout_s=60 + 10 * budget_s)
    if out is None or proc.returncode != 0:
        raise RunnerError(f"the fidelity worker ({arm}, {name} {operation}) failed: {failure(proc, out)}")
    return np.asarray(out["samples_ns"], dtype=float), int(out["loops"])


def measure_fidelity(operations=DEFAULT_OPERATIONS, budget_s: float = 2.0, blocks: int = 20,
                     message_bytes: int = 100, seed: int = 0,
                     progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """One row per operation: each arm's estimate (µs per call) and its ratio over the native C loop's, pooled
    and paired.

    Every block of every arm runs in a fresh process.  `budget_s` is each arm's sampling time per operation,
    spread over `blocks` alternating blocks (warm-ups, output checks and process starts come on top).  Every
    arm is summarised by its mean time per call: native's samples are single calls and pqlab's means of a
    sample's calls, and only the mean per call is the same statistic whatever a sample holds (a median of
    means of several calls is not a median of calls).  ``<arm>_ratio`` is the ratio of the pooled means over
    native's; ``<arm>_paired`` the median of the per-block ratios (which cancels load that changes from block
    to block), with its interval ``<arm>_low``/``<arm>_high``
    (:func:`pqlab.measure.stats.interval_over_rounds`: a block is a pair of fresh processes, as a round is).
    ``within_5pct``: pqlab's interval at or below 1 + TOLERANCE (True), above it (False), or across it (None:
    more blocks would tell)."""

    budget_s = inputs.positive_number(budget_s, "budget_s")
    blocks = inputs.count(blocks, "blocks", 1, inputs.MAX_ROUND_COUNT)
    message = random_message(inputs.message_size(message_bytes), seed)
    for name, operation in operations:
        inputs.operations([get(name, "liboqs")], [operation])
    rows = []
    for name, operation in operations:
        if progress:
            progress(f"{name} {operation}")
        samples: dict[str, list[np.ndarray]] = {arm: [] for arm in ARMS}
        loops: dict[str, set[int]] = {arm: set() for arm in ARMS}
        block_s = budget_s / blocks
        for i in range(blocks):
            for arm in ARMS[i % len(ARMS):] + ARMS[:i % len(ARMS)]:  # rotate: no arm always goes first
                values, n = _block_in_worker(name, operation, arm, message, block_s)
                samples[arm].append(values)
                loops[arm].add(n)
        mean = {arm: float(np.mean(np.concatenate(samples[arm]))) for arm in ARMS}
        row = {"algorithm": name, "operation": operation,
               **{f"{arm}_us": convert_unit(mean[arm], "ns", "µs") for arm in ARMS}}
        for arm in ARMS[:-1]:
            block = [np.mean(a) / np.mean(n) for a, n in zip(samples[arm], samples["native"], strict=True)]
            paired, low, high, _ = interval_over_rounds(block)
            row.update({f"{arm}_ratio": mean[arm] / mean["native"], f"{arm}_paired": paired,
                        f"{arm}_low": low, f"{arm}_high": high})
        low, high = row["pqlab_low"], row["pqlab_high"]
        row.update({"within_5pct": True if high <= 1 + TOLERANCE else False if low > 1 + TOLERANCE else None,
                    "loops_min": min(loops["pqlab"]), "loops_max": max(loops["pqlab"]),
                    **{f"{arm}_samples": int(sum(a.size for a in samples[arm])) for arm in ARMS}})
        rows.append(row)
    return pd.DataFrame(rows)


def measure_noop(budget_s: float = 0.2) -> dict:
    """What the harness itself costs: pqlab's no-op (as bench measures it) and bare timer costs, in ns."""

    budget_s = positive_number(budget_s, "budget_s")
    trial = Noop().trial()
    s = measure(trial.run, trial.check, budget_s=budget_s)
    fed = Noop().trial("noop", bytes(100), fed=True)
    s_fed = measure(fed.run, fed.check, budget_s=budget_s, fresh=fed.fresh)

    lean = lean_noop_trial()
    s_lean = measure(lean.run, lean.check, budget_s=budget_s, repeat=lean.repeat, output=lean.output)
    clock = time.perf_counter_ns
    empty = time_bare(lambda: None, budget_s / 2)
    back_to_back = []
    deadline = clock() + convert_unit(budget_s / 2, "s", "ns")
    while clock() < deadline:
        t0 = clock()
        t1 = clock()
        back_to_back.append(t1 - t0)
    return {"pqlab_noop_ns": float(np.median(s.time_ns)), "pqlab_noop_loops": s.loops,
            "pqlab_noop_fed_ns": float(np.median(s_fed.time_ns)),
            "lean_noop_ns": float(np.median(s_lean.time_ns)), "bare_empty_call_ns": float(np.median(empty)),
            "timer_back_to_back_ns": float(np.median(back_to_back))}


#: A round whose mean per call lies this far or more above its side's fastest round counts as slow
SLOW_ROUND = 0.10


def round_means(values) -> np.ndarray:
    """The per-round means of samples labelled with their rounds (:func:`pqlab.measure.stats.has_rounds`);
    empty for samples without rounds."""

    r = round_values(values, "mean")
    return np.array([]) if r is None else r.to_numpy(float)


def fastest_rounds(numerator, denominator, slow: float = SLOW_ROUND) -> dict:
    """How the rounds of the two sides of a ratio ran (each round a fresh process): ``fastest_ratio``, the
    numerator's fastest round mean over the denominator's (what the ratio is where neither side was slowed);
    per side (``num_``/``den_``) the rounds, how many were `slow` or more above that side's fastest round,
    and how far the slowest one was (``_worst``: 0.3 is 30 % above the fastest).  NaN and 0 without rounds.

    A whole process now and then runs slower on a shared virtual machine (the host, not the code); a ratio of
    two runs made one after the other moves with how many of each side's rounds that hit.  When the ratio of
    the fastest rounds lies on the other side of 1 than the ratio itself, slow rounds made the difference."""
    out = {}
    means = {}
    for side, values in (("num", numerator), ("den", denominator)):
        m = round_means(values)
        m = m[np.isfinite(m) & (m > 0)]
        means[side] = m
        fastest = m.min() if m.size else np.nan
        out.update({f"{side}_rounds": int(m.size), f"{side}_slow": int((m >= fastest * (1 + slow)).sum()),
                    f"{side}_worst": float(m.max() / fastest - 1) if m.size else np.nan})
    out["fastest_ratio"] = (float(means["num"].min() / means["den"].min())
                            if means["num"].size and means["den"].size else np.nan)
    return out


def format_fidelity(df: pd.DataFrame, noop: dict | None = None) -> str:
    """The table the `fidelity` command prints."""

    def verdict(v) -> str:
        return "unclear (noise)" if v is None or pd.isna(v) else "yes" if v else "NO"

    level = fmt_percent(CONFIDENCE, 0)

    shown = {"operation": df["algorithm"] + " " + df["operation"],
             "native us": df["native_us"].map("{:.2f}".format)}
    for arm in ARMS[:-1]:
        shown[f"{arm} us"] = df[f"{arm}_us"].map("{:.2f}".format)
        shown[f"{arm}/native"] = df[f"{arm}_ratio"].map("{:.3f}".format)
        shown[f"{arm} paired [{level} CI]"] = [f"{m:.3f} [{a:.3f}, {b:.3f}]" for m, a, b in
                                               zip(df[f"{arm}_paired"], df[f"{arm}_low"], df[f"{arm}_high"],
                                                   strict=True)]
    shown[f"pqlab <= {1 + TOLERANCE:g}"] = df["within_5pct"].map(verdict)
    shown["loops"] = [f"{a}" if a == b else f"{a}-{b}"
                      for a, b in zip(df["loops_min"], df["loops_max"], strict=True)]
    text = pd.DataFrame(shown).to_string(index=False)
    text += ("\n\nmean time per call (us) of each arm; ratios over native's: pooled, and paired by block "
             f"(the median of the per-block ratios, each block a pair of fresh processes, with its {level} "
             "t-interval)")
    if hasattr(os, "getloadavg"):
        text += (f"\n\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
                 "(other processes add noise to every arm alike; the per-block ratios show how much)")
    if noop:
        text += (f"\nharness overhead: pqlab no-op {noop['pqlab_noop_ns']:.1f} ns per call "
                 f"(loops={noop['pqlab_noop_loops']}), {noop['pqlab_noop_fed_ns']:.1f} ns fed a fresh "
                 f"message per call as sign is; the lean path's C loop {noop['lean_noop_ns']:.2f} ns per "
                 f"call; bare empty call {noop['bare_empty_call_ns']:.0f} ns including the timer; "
                 f"perf_counter_ns back to back {noop['timer_back_to_back_ns']:.0f} ns")
    return text


def main(argv: list[str] | None = None) -> int:
    """A fidelity worker: one block of one arm, its samples as JSON on stdout (:func:`_block_in_worker`)."""

    name, operation, arm, message, budget = argv if argv is not None else sys.argv[1:]
    values, loops = _block(name, operation, arm, bytes.fromhex(message), float(budget))
    print(json.dumps({"samples_ns": values, "loops": loops}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
