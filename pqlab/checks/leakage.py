"""A timing-leakage screen: does an operation's time depend on its secret input?

One operation runs on two or more fixed input classes (valid vs invalid ciphertext, Marvin's padding classes,
a short vs a full nonce), all of one length.  Every *block* runs each class once, in an order drawn at random
per block, so that drift, frequency changes and a neighbour's noise hit every class alike; the program of
``native/leakage/`` (``native/PROTOCOL.md``'s ``screen``; or pqlab's lean C loop for liboqs) times each call
and checks its output after the clock.
Per block the difference of each class to the first (the baseline) is one paired observation; the tests are:

* the **sign test** (``scipy.stats.binomtest`` on how many differences are positive),
* the **Wilcoxon signed-rank test** (``scipy.stats.wilcoxon``),
* the **Friedman test** across all classes when there are more than two (``scipy.stats.friedmanchisquare``),

each at the family-wise `alpha` split over the screen's tests (Bonferroni).  Block order is randomised, so
with no leak every class's time is exchangeable within a block and the paired tests hold their level despite
drift and autocorrelation (the timings are multimodal and autocorrelated; nothing assumes otherwise).  The
blocks are split over several fresh processes of the program (:data:`PROCESSES`, same inputs, each warmed up),
so that one process's JIT decisions and code layout do not decide the result.  These are not the benchmark's
rounds (:data:`pqlab.runners.rounds.ROUNDS`, each a median): a screen keeps every block's raw times.

The effect is the **median of the paired differences** with a percentile **bootstrap interval**
(``scipy.stats.bootstrap`` over blocks).  A *leak* is a significant test together with a median difference
whose interval excludes zero; a test that is significant while no interval excludes zero (part of the
distribution moved, by less than the median resolves: a branch predicted differently in some calls) is
an *unresolved difference*, with its mean difference, neither a leak nor a clean result.  When nothing is
found the screen says "no leak found" and gives the widest bound of those intervals (:func:`bound`, at least
the counter's step): a bound on the *median* difference at this sample size, not the smallest leak the screen
would find, and never "constant time".  What the screen finds is measured by **injection** (:func:`injected`):
the same screen, at the same blocks, of one class labelled several times, with a known delay busy-waited
inside the timed interval of one copy only (a ``screen`` request's ``delays_ns``); a zero-delay copy is the
duplicate-class run beside it.  A leak in the slow tail alone does not move the median difference,
so it can at best come out "unresolved"; a delay below the counter's step is invisible.

**Load.**  A screen on a loaded machine (other processes' CPU or steal, :mod:`pqlab.measure.noise`) keeps its
verdict and names the load (:attr:`Screen.load`, :attr:`Screen.others_cores`, and its reason): a load steady
over a block adds to every class of the block alike and cancels in the paired differences.  It gives **no
verdict** only where the load cannot cancel (:func:`unjudgeable`): other processes and steal left it no more
than :data:`FREE_CORES` of a core free, or its clock moved between its start and its end (the scalar reference
loop, a chain of integer operations whose time follows the frequency, by
:data:`pqlab.measure.noise.SHIFT_LIMIT` or more); that reason names the load and how long a quiet rerun takes.
The vector loop is recorded too but does not gate: two readings of it a few seconds apart in one process moved
by 11-12 % while the scalar loop held within 2 % (memory traffic of the program's processes, not a frequency
change), and a paired block shares whatever it measures across its classes.

    screen(program, target, blocks=...) -> Screen     one screen (refuses bad input before anything runs)
    analyse(times, classes, alpha=...)                the statistics of a blocks x classes array of times
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pqlab.core import inputs
from pqlab.core.errors import BadInput, UnknownName
from pqlab.measure import noise
from pqlab.runners import leakage as programs

#: Family-wise significance level of one screen (split over its tests).
ALPHA = 0.01
#: Confidence of the bootstrap intervals of the median difference (and so of :func:`bound`).
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
MIN_BLOCKS = 20
#: Processes a screen's blocks are split over by default: one process's JIT, code layout and branch-predictor
#: aliasing can hide or inflate an effect (Bouncy Castle 1.83's FrodoKEM leak measured 7 to 25 us in ten JVMs
#: with the same inputs), so the blocks run in fresh processes of one program with the same inputs, each a
#: consecutive part of the order.  Not the benchmark's rounds (:data:`pqlab.runners.rounds.ROUNDS`): the
#: paired tests run over every block of every process.
PROCESSES = 4
#: Verdicts.
LEAK, NO_LEAK, NO_VERDICT, NOT_SCREENED = "leak", "no leak found", "no verdict", "not screened"
#: A significant test while no median difference's interval excludes zero: part of the distribution moved.
UNRESOLVED = "unresolved difference"
#: The rule for load (issue #41): a screen keeps its verdict while other processes and steal (in cores:
#: ``others_cores`` plus the steal share of every core, :func:`load_cores`) leave more than this much of a
#: core free, and gives none where they take the rest (:func:`unjudgeable`).  Why a load may stay: every block
#: runs its classes back to back in an order drawn at random, so a load steady over a block (a block lasts
#: from microseconds to tens of milliseconds) slows every class of the block alike and cancels in the paired
#: differences: in issue #41 a program with planted leaks, screened beside two spinning processes, gave the
#: differences it gave on a quiet machine, and the old rule (no verdict from
#: :data:`pqlab.measure.noise.BUSY_OTHERS_CORES` cores of load) refused every screen of a researcher's machine
#: with its usual background load.  Why a heavy load may not: with no free core the scheduler shares the
#: program's core in time slices of milliseconds, as long as a block or longer, so the load is no longer
#: steady over a block but lands on single calls of single classes, where the random order is all that holds
#: the tests' level.  The evidence on a machine is measured by :func:`pqlab.studies.timing_leakage.under_load`
#: and stated by its ``describe_load_check``; on the project's 2-core KVM guest (AMD EPYC, 2026-11-29,
#: issue #41's closing note) the standard ``spin`` load (one core busy, other processes 0.93-1.15 cores) left
#: python-rsa 4.9's leak at 210 ns [180, 241] (quiet: 250 [211, 281]) and Bouncy Castle 1.83's at 13770 ns
#: [9974, 17792] (quiet: 12504 [9854, 15002]), both flagged, and 0 of 20 false-positive screens said leak
#: (quiet: 0 of 20).
FREE_CORES = 0.5


@dataclass
class Screen:
    """One screen: what ran, its times (blocks x classes, ns), the tests, the differences and the verdict."""

    program: str
    target: str
    classes: list[str]
    verdict: str
    reason: str = ""  #: why there is no verdict or no screen; what the verdict rests on
    implementation: str = ""
    version: str = ""
    operation: str = ""
    counter: str = ""
    times: np.ndarray | None = None
    tests: pd.DataFrame = field(default_factory=pd.DataFrame)
    differences: pd.DataFrame = field(default_factory=pd.DataFrame)
    bound_ns: float | None = None  #: the widest bound of the median differences' intervals (:func:`bound`)
    alpha: float = ALPHA
    wall_s: float | None = None
    noise: dict = field(default_factory=dict)
    processes: int = 0  #: processes the blocks ran in (:data:`PROCESSES`)
    load: str = ""  #: the load the machine carried during the screen (:func:`describe_load`); "" when quiet
    others_cores: float | None = None  #: other processes' CPU during the screen, in cores (None: unknown)
    quiet_s: float | None = None  #: how long the screen would take on a quiet machine (:func:`quiet_seconds`)
    injected_ns: list | None = None  #: per class, what its injected wait really added (median; power check)

    @property
    def blocks(self) -> int:
        return 0 if self.times is None else len(self.times)

    def summary(self) -> dict:
        """One row for a table: the verdict, the largest difference with its interval, the samples, the
        time."""
        row = {"program": self.program, "target": self.target, "implementation": self.implementation,
               "version": self.version, "operation": self.operation, "verdict": self.verdict,
               "blocks": self.blocks, "processes": self.processes,
               "classes": len(self.classes),
               "wall_s": self.wall_s, "bound_ns": self.bound_ns, "reason": self.reason,
               "load": self.load, "others_cores": self.others_cores, "quiet_s": self.quiet_s,
               "clock_moved": _moved(self.noise), "no_free_core": _no_free_core(self.noise)}
        if not self.differences.empty:
            top = self.differences.loc[self.differences["median_ns"].abs().idxmax()]
            row.update(largest=top["pair"], median_ns=top["median_ns"], ci_low_ns=top["ci_low_ns"],
                       ci_high_ns=top["ci_high_ns"], min_p=float(self.tests["p"].min()))
        return row


def order(blocks: int, k: int, seed: int) -> list[list[int]]:
    """Each block's order of the `k` classes, drawn at random (a fresh permutation per block)."""
    rng = np.random.default_rng(seed)
    return [rng.permutation(k).tolist() for _ in range(blocks)]


def analyse(times, classes, alpha: float = ALPHA, confidence: float = CONFIDENCE, seed: int = 0
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tests, differences) of a blocks x classes array of times: one row per test with its p-value and the
    Bonferroni threshold it is held to, one row per class against the baseline (the first) with the median
    paired difference and its bootstrap interval."""
    from scipy import stats

    times = np.asarray(times, dtype=float)
    k = times.shape[1]
    tests, diffs = [], []
    for j in range(1, k):
        d = times[:, j] - times[:, 0]
        pair = f"{classes[j]} - {classes[0]}"
        nonzero = d[d != 0]
        sign_p = stats.binomtest(int((nonzero > 0).sum()), len(nonzero), 0.5).pvalue if len(nonzero) else 1.0
        wilcoxon_p = stats.wilcoxon(nonzero).pvalue if len(nonzero) else 1.0
        tests += [{"pair": pair, "test": "sign", "p": float(sign_p)},
                  {"pair": pair, "test": "Wilcoxon signed-rank", "p": float(wilcoxon_p)}]
        boot = stats.bootstrap((d,), np.median, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                               method="percentile", vectorized=True, batch=100, random_state=seed + j)
        lo, hi = boot.confidence_interval
        diffs.append({"pair": pair, "median_ns": float(np.median(d)), "ci_low_ns": float(lo),
                      "ci_high_ns": float(hi), "mean_ns": float(np.mean(d)),
                      "share_slower": float((nonzero > 0).mean()) if len(nonzero) else 0.5})
    if k > 2:
        tests.append({"pair": "all classes", "test": "Friedman",
                      "p": float(stats.friedmanchisquare(*times.T).pvalue)})
    tests = pd.DataFrame(tests)
    tests["threshold"] = alpha / len(tests)
    tests["significant"] = tests["p"] < tests["threshold"]
    return tests, pd.DataFrame(diffs)


def resolution(times) -> float:
    """The counter's step as the screen saw it: the smallest gap between two distinct times (ns)."""
    values = np.unique(np.asarray(times, dtype=float))
    return float(np.diff(values).min()) if len(values) > 1 else 0.0


def bound(differences: pd.DataFrame, step: float = 0.0) -> float:
    """The widest bound of the pairs' bootstrap intervals of the median difference, and never less than the
    counter's step (ns): what the median difference may reach at this sample size.  Not a detectable effect
    (a leak in the tail alone leaves the median where it is): :func:`injected` measures what the screen
    finds."""
    return max(float(differences[["ci_low_ns", "ci_high_ns"]].abs().to_numpy().max()), step)


def leaking(tests: pd.DataFrame, differences: pd.DataFrame) -> pd.DataFrame:
    """The pairs that leak: a significant test of the pair (or of all classes, Friedman) and a median
    difference whose interval excludes zero."""
    hits = set(tests.loc[tests["significant"], "pair"])
    excludes_zero = (differences["ci_low_ns"] > 0) | (differences["ci_high_ns"] < 0)
    return differences[excludes_zero & (differences["pair"].isin(hits) | ("all classes" in hits))]


def validate(program: str, target: str, classes, blocks: int, warmup_blocks: int, alpha: float,
             processes: int | None = None, seed: int = 1) -> dict:
    """Every input of a screen, checked once where it enters, before anything runs (bad input: one line
    naming it): ``{"entry": the target's list entry, "classes", "blocks", "warmup_blocks", "alpha", "seed",
    "processes"}`` in their clean forms.  `processes` None: :data:`PROCESSES`, fewer when `blocks` cannot give
    each process :data:`MIN_BLOCKS`."""
    if program not in programs.names():
        raise UnknownName("screen program", program, programs.names())
    blocks = inputs.count(blocks, "blocks", MIN_BLOCKS, inputs.MAX_SCREEN_BLOCKS)
    warmup_blocks = inputs.count(warmup_blocks, "warmup_blocks", 0)
    alpha = inputs.fraction(alpha, "alpha")
    seed = inputs.count(seed, "seed", 0, 2**64 - 1)
    most = blocks // MIN_BLOCKS
    processes = (max(1, min(PROCESSES, most)) if processes is None else inputs.count(
        processes, f"processes (each runs at least {MIN_BLOCKS} of the {blocks} blocks)", 1, most))
    why = programs.why_not(program)
    if why:
        raise programs.LeakageRunError(why)
    entry = programs.target(program, target)
    classes = list(entry["classes"] if classes is None else inputs.names(classes, f"classes of {target}"))
    for c in classes:
        if c not in entry["classes"]:
            raise UnknownName(f"class of {target}", c, entry["classes"])
    if len(classes) < 2:
        raise BadInput(f"a screen compares two or more classes, not {len(classes)}: pass classes=None for "
                       f"all of {target}'s ({', '.join(entry['classes'])})")
    return {"entry": entry, "classes": classes, "blocks": blocks, "warmup_blocks": warmup_blocks,
            "alpha": alpha, "seed": seed, "processes": processes}


def cores() -> int:
    """The machine's logical CPUs: what :mod:`pqlab.measure.noise`'s ``others_cores`` and steal are shares
    of."""
    return os.cpu_count() or 1


def load_cores(record: dict) -> float | None:
    """The cores other processes and the hypervisor took during a screen: ``others_cores`` plus the steal
    share of every core (steal None counts as none); None where the machine does not say."""
    if record.get("others_cores") is None:
        return None
    return record["others_cores"] + (record.get("steal") or 0.0) * cores()


def describe_load(record: dict) -> str:
    """The load of a screen's noise record in a few words: "other processes used 1.02 cores of 2, steal 0.4%"
    ("steal unknown" where the machine does not report it); "" where the machine does not say."""
    if record.get("others_cores") is None:
        return ""
    steal = "unknown" if record.get("steal") is None else f"{record['steal']:.1%}"
    return f"other processes used {record['others_cores']:.2f} cores of {cores()}, steal {steal}"


def _moved(record: dict) -> str:
    """How the clock (the scalar reference loop) moved between the screen's start and end: '' when by less
    than :data:`pqlab.measure.noise.SHIFT_LIMIT`."""
    a, b = record.get("scalar_start_ns"), record.get("scalar_end_ns")
    return f"{b / a - 1:+.0%}" if a and b and abs(b / a - 1) >= noise.SHIFT_LIMIT else ""


def _no_free_core(record: dict) -> bool:
    """Whether other processes and steal left the screen no more than :data:`FREE_CORES` of a core."""
    taken = load_cores(record)
    return taken is not None and taken >= cores() - FREE_CORES


def unjudgeable(record: dict) -> str:
    """Why a screen with this noise record can give no verdict: its machine had no free core
    (:data:`FREE_CORES`) or its clock moved; "" when a load, if any, cancels in the paired blocks."""
    moved = _moved(record)
    return "; ".join(filter(None, [
        _no_free_core(record)
        and f"other processes and steal left no more than {FREE_CORES:g} of a core free",
        moved and f"the clock's reference loop moved ({moved})"]))


def quiet_seconds(wall_s: float, cpu_s: float) -> float:
    """How long a screen would take on a quiet machine: the CPU time its processes used (what a load does not
    add), and never more than it took (`wall_s`): a runtime's extra threads (a JVM's compiler) run beside
    it."""
    return min(wall_s, cpu_s)


def screen(program: str, target: str, *, classes=None, blocks: int = 2000, warmup_blocks: int = 50,
           alpha: float = ALPHA, seed: int = 1, processes: int | None = None, delays_ns=None) -> Screen:
    """Screen `target` of screen program `program` (:mod:`pqlab.runners.leakage`) over `blocks` blocks, run in
    `processes` fresh processes of the program (default :data:`PROCESSES`), each with the same inputs and its
    own `warmup_blocks`.

    Bad input (an unknown program, target or class, too few blocks) is refused before anything runs; a program
    that cannot run here raises its one-line reason.  A class that fails its check gives a :class:`Screen`
    with verdict "not screened" and the reason.  `delays_ns` (one per class; :func:`injected`): the program
    busy-waits that long inside the timed interval of each call of that class; the screen then keeps its times
    and load and leaves the statistics to :func:`injected` (verdict "" unless the load forbids one)."""
    checked = validate(program, target, classes, blocks, warmup_blocks, alpha, processes, seed)
    entry, classes, processes = checked["entry"], checked["classes"], checked["processes"]
    blocks, warmup_blocks, alpha, seed = (checked[k] for k in ("blocks", "warmup_blocks", "alpha", "seed"))
    base = Screen(program, target, classes, NOT_SCREENED, implementation=entry["implementation"],
                  version=entry["version"], operation=entry["operation"], counter=entry["counter"],
                  alpha=alpha, processes=processes)
    before, start = noise.snapshot(), noise.reference_times()
    began, times, spun = time.monotonic(), [], []
    for part in np.array_split(np.asarray(order(blocks, len(classes), seed)), processes):
        request = {"target": target, "classes": classes, "order": part.tolist(),
                   "warmup_blocks": warmup_blocks, "seed": seed}
        if delays_ns is not None and any(delays_ns):
            request["delays_ns"] = [int(d) for d in delays_ns]
        try:
            document = programs.run(program, request)
            times.append(document["times_ns"])
            spun.append(document.get("injected_ns"))
        except programs.ClassCheckFailed as exc:
            base.reason = str(exc)
            return base
    base.wall_s = time.monotonic() - began
    base.quiet_s = quiet_seconds(base.wall_s, noise.snapshot()["own_cpu"] - before["own_cpu"])
    record = noise.round_record(0, before, start)
    base.noise, base.others_cores = record, record.get("others_cores")
    base.load = describe_load(record) if record["busy"] else ""
    base.times = np.concatenate([np.asarray(t, dtype=float) for t in times])
    why = unjudgeable(record)
    if delays_ns is not None and any(delays_ns):  # the power check: its statistics are injected()'s
        base.injected_ns = [float(np.median([p[i] for p in spun if p])) if any(spun) else 0.0
                            for i in range(len(classes))]
        base.verdict = NO_VERDICT if why else ""
        base.reason = f"no verdict: {why}" if why else ""
        return base
    base.tests, base.differences = analyse(base.times, classes, alpha, seed=seed)
    base.bound_ns = bound(base.differences, resolution(base.times))
    if why:
        base.verdict = NO_VERDICT
        base.reason = (f"no verdict: {why} during the screen ({describe_load(record) or 'load unknown'}); a "
                       f"quiet rerun takes about {base.quiet_s:.0f} s")
        return base
    if not leaking(base.tests, base.differences).empty:
        hit = base.tests.loc[base.tests["p"].idxmin()]
        base.verdict = LEAK
        base.reason = (f"{hit['test']} p = {_p(hit['p'])} below {_p(hit['threshold'])} "
                       f"(family-wise alpha {alpha:g} over {len(base.tests)} tests)")
    elif base.tests["significant"].any():
        hit = base.tests.loc[base.tests["p"].idxmin()]
        mean = base.differences.loc[base.differences["mean_ns"].abs().idxmax()]
        base.verdict = UNRESOLVED
        base.reason = (f"{hit['test']} p = {_p(hit['p'])}, but no median difference's interval excludes "
                       f"zero: part of the distribution moved (largest mean difference {mean['mean_ns']:.1f} "
                       f"ns, {mean['pair']})")
    else:
        base.verdict = NO_LEAK
        base.reason = (f"no test significant at {blocks} blocks; the {CONFIDENCE:.0%} bootstrap intervals of "
                       f"the median difference reach {base.bound_ns:.0f} ns (a bound on the median, not the "
                       "smallest leak the screen finds: the injected delays measure that)")
    if base.load:
        base.reason += f"; under load ({base.load}), which the paired blocks cancel while it is steady"
    return base


def _p(p: float) -> str:
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def tests_of(k: int) -> int:
    """How many tests a screen of `k` classes runs (sign and Wilcoxon per pair against the baseline, Friedman
    when more than two): the Bonferroni divisor of its alpha."""
    return 2 * (k - 1) + (1 if k > 2 else 0)


def injected(program: str, target: str, klass: str, blocks: int, delays_ns, *, tests: int = 2,
             alpha: float = ALPHA, warmup_blocks: int = 50, seed: int = 1, processes: int | None = None
             ) -> pd.DataFrame:
    """The power check of one screen: `klass` of `target` labelled ``2 + len(delays_ns)`` times and screened
    over `blocks` blocks as :func:`screen` does, the program busy-waiting each of `delays_ns` inside the
    timed interval of one copy only (the first copy is the baseline, the second gets no delay: the
    duplicate-class run).  Each copy is judged against the baseline as a pair of the screen would be, at the
    per-test threshold of a screen that runs `tests` tests (``alpha / tests``): one row per copy with the
    nominal delay, what the wait really added (``injected_ns``, the program's own counter), the median
    difference with its interval, the smallest p and whether the screen **found** it (a leak) or raised an
    alarm (a leak or an unresolved difference).  A screen with no verdict (the load, :func:`unjudgeable`)
    gives rows with ``found`` None."""
    delays = [0, *(int(d) for d in delays_ns)]
    classes = [klass] * (1 + len(delays))
    s = screen(program, target, classes=classes, blocks=blocks, warmup_blocks=warmup_blocks, alpha=alpha,
               seed=seed, processes=processes, delays_ns=[0, *delays])
    rows = []
    for j, d in enumerate(delays, start=1):
        row = {"delay_ns": d, "injected_ns": (s.injected_ns or [0.0] * len(classes))[j], "blocks": s.blocks,
               "processes": s.processes, "verdict": s.verdict, "reason": s.reason, "found": None,
               "alarm": None, "load": s.load, "others_cores": s.others_cores, "wall_s": s.wall_s}
        if s.times is not None and s.verdict != NO_VERDICT:
            tests_j, diff = analyse(s.times[:, [0, j]], [klass, f"{klass}+{d}"], 2 * alpha / tests, seed=seed)
            found = not leaking(tests_j, diff).empty
            row.update(found=found, alarm=found or bool(tests_j["significant"].any()),
                       median_ns=float(diff["median_ns"].iloc[0]), ci_low_ns=float(diff["ci_low_ns"].iloc[0]),
                       ci_high_ns=float(diff["ci_high_ns"].iloc[0]), mean_ns=float(diff["mean_ns"].iloc[0]),
                       min_p=float(tests_j["p"].min()))
        rows.append(row)
    return pd.DataFrame(rows)
