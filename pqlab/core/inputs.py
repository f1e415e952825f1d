"""What a caller asks for, checked before anything is measured (the API and the CLI share these).

Each check returns the value in its clean form or raises :class:`~pqlab.core.errors.BadInput` with one
line naming the problem and the fix (an unknown name: :class:`~pqlab.core.errors.UnknownName` with its
close matches).  Operations: ``None`` or ``"all"`` means every operation of each algorithm; a list
names operations that every algorithm asked for must have (an algorithm that lacks one is named).
"""
from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import BadInput, UnknownName, choice, warn  # noqa: F401 - choice is inputs.choice too
from pqlab.core.quantities import fmt_bytes_binary
from pqlab.core.schema import KIND_OPERATIONS, MESSAGE_OPERATIONS

#: Message sizes above this get a warning with the memory they need.
LARGE_MESSAGE_BYTES = 64 << 20
#: The most random bits Python draws at once (``random.getrandbits``).
RANDOM_BITS = 2**31 - 1
#: The largest message size measured: a reproducible message is drawn as one random number of 8 bits per
#: byte, and Python draws at most :data:`RANDOM_BITS` at once (256 MiB less one byte).
MAX_MESSAGE_BYTES = RANDOM_BITS // 8
#: Every operation an algorithm can have.
OPERATIONS = tuple(dict.fromkeys(op for ops in KIND_OPERATIONS.values() for op in ops))


#: Fewest rounds with which an interval is shown (below it, rows and ratios have none and say why).
MIN_ROUNDS = 3
#: Upper bounds of the counts a caller gives, each about what one day of this machine can do, so that a
#: mistyped count is refused at once instead of running for ever.  Rounds (``rounds``, ``max_rounds``) and
#: fidelity blocks: each is one or more fresh worker processes with warm-ups, a second or so, 10,000 of them
#: several hours.
MAX_ROUND_COUNT = 10_000
#: Samples of one item in one round (``min_samples``, ``max_samples``): each is a row of the run's samples
#: table, and the budget stops sampling only once ``min_samples`` are taken; a sample lasts 20 µs or more
#: (pqlab.measure.timing), so this many is over half an hour of one item (the timing loop's own
#: "as many as the budget allows")
MAX_SAMPLES = 100_000_000
#: Runs that ``calibrate --repeats`` makes, each a whole benchmark run.
MAX_REPEATS = 1000
#: Blocks of a leakage screen (``calibrate --screen``): each block's times are kept, and the bootstrap
#: resamples them 100 at a time (800 MB at this bound).
MAX_SCREEN_BLOCKS = 1_000_000

def positive_number(value, name: str, *, zero: bool = False) -> float:
    """A finite number > 0 (a budget, a duration), or >= 0 with `zero`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise BadInput(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")
    return number


def fraction(value, name: str) -> float:
    """A number strictly between 0 and 1 (a significance level, a precision target)."""
    number = positive_number(value, name)
    if number >= 1:
        raise BadInput(f"{name} must be a number between 0 and 1 (exclusive), got {value!r}")
    return number


def factor(value, name: str) -> float:
    """A finite factor >= 1: the smallest ratio either way that counts as a change (1.05 = 5 %; 1 = any)."""
    number = positive_number(value, name)
    if number < 1:
        raise BadInput(f"{name} must be a finite number >= 1 (the smallest factor either way called a "
                       f"change: 1.05 = 5 %, 1 = any significant difference), got {value!r}")
    return number


#: The longest name that becomes part of a file name (a study, a label, a run id).
MAX_LABEL = 100
_SAFE_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_LABEL - 1}}}")


def file_label(value, name: str, *, empty: bool = False) -> str:
    """A name that becomes part of a file name (a study, a label, a run id): 1 to 100 letters, digits, '.',
    '_' or '-', starting with a letter or digit (no path separator); "" too with `empty`."""
    if isinstance(value, str) and (_SAFE_NAME.fullmatch(value) or (empty and value == "")):
        return value
    raise BadInput(f"{name} {value!r} cannot be part of a file name: use 1 to {MAX_LABEL} letters, digits, "
                   "'.', '_' or '-', starting with a letter or digit (for example 01_aes_rsa_sphincs)")


def names(value, what: str) -> list:
    """One name (a str) or several, at least one (algorithms: names, pairs or adapters)."""
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, Iterable) else [value]
    if not items:
        raise BadInput(f"no {what} given: name at least one (e.g. ML-DSA-44)")
    return items


def precision_target(value) -> float | None:
    """A precision target (pqlab.measure.timing.measure's `target_rel_ci`): None, or a fraction in (0, 1)."""
    if value is None:
        return None
    target = positive_number(value, "target_rel_ci")
    if target >= 1:
        raise BadInput(f"target_rel_ci is a fraction of the median (0.01 = ±1 %), got {value!r}")
    return target


def _whole(value) -> int | None:
    """`value` as an int when it is a whole number (100 or 100.0), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return int(value) if math.isfinite(value) and float(value).is_integer() else None


#: the bound of a count no ``MAX_*`` above bounds more tightly: a billion of anything (warm-up calls, jobs,
#: repeats) is more than a day's work here, and a larger number is a typo
MAX_COUNT = 1_000_000_000


def count(value, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number from `minimum` to `maximum` (samples, blocks, repeats, jobs, rounds; `maximum` one of
    the ``MAX_*`` above, default :data:`MAX_COUNT`): refused with ">= minimum" below it (or when no whole
    number), with the range above."""
    n, top = _whole(value), MAX_COUNT if maximum is None else maximum
    if n is None or n < minimum:
        raise BadInput(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if n > top:
        raise BadInput(f"{name} must be a whole number from {minimum} to {top}, got {value!r}")
    return n


def sample_bounds(min_samples, max_samples) -> tuple[int, int]:
    """1 <= min_samples <= max_samples <= :data:`MAX_SAMPLES`."""
    low = count(min_samples, "min_samples", 1, MAX_SAMPLES)
    high = count(max_samples, "max_samples", 1, MAX_SAMPLES)
    if low > high:
        raise BadInput(f"min_samples ({low}) must not exceed max_samples ({high}): lower one or raise the "
                       "other")
    return low, high


def message_size(value) -> int:
    """One message size: a whole number of bytes from 0 to :data:`MAX_MESSAGE_BYTES`."""

    n = _whole(value)
    if n is None or n < 0:
        raise BadInput(f"a message size must be a whole number of bytes >= 0, got {value!r}")
    if n > MAX_MESSAGE_BYTES:
        raise BadInput(f"message size {n} B is above the largest pqlab measures, {MAX_MESSAGE_BYTES} B "
                       f"({fmt_bytes_binary(MAX_MESSAGE_BYTES + 1)} less one byte: a reproducible message is "
                       f"drawn as one random number of at most {RANDOM_BITS:,} bits): choose a smaller size")
    return n


def message_sizes(value, copies: int = 6) -> list[int]:
    """One size or several, each checked; a warning for each above :data:`LARGE_MESSAGE_BYTES` saying
    how much memory it can take (`copies`: objects of that size held at once: the message, the fresh one
    of the call, the output, and the decrypted and tampered copies of the checks)."""

    sizes = list(value) if isinstance(value, Iterable) and not isinstance(value, (str, bytes)) else [value]
    if not sizes:
        raise BadInput("no message size given: give at least one (e.g. 100)")
    sizes = [message_size(v) for v in sizes]
    for size in dict.fromkeys(sizes):
        if size > LARGE_MESSAGE_BYTES:
            warn(f"message size {fmt_bytes_binary(size)} is above {fmt_bytes_binary(LARGE_MESSAGE_BYTES)}: "
                 f"measuring it can hold up to {fmt_bytes_binary(copies * size)} in memory at once "
                 "(messages, outputs and the copies the checks make)")
    return sizes


def operations(algos: Sequence, wanted) -> list[list[str]]:
    """The operations to measure of each algorithm, in its order.  `wanted`: None or "all" (every
    operation of each), or names that each algorithm must have."""
    if wanted is None or wanted == "all" or (not isinstance(wanted, str) and list(wanted) == ["all"]):
        return [list(algo.operations) for algo in algos]
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    if not wanted:
        raise BadInput("no operation given: name some (e.g. sign verify) or ask for all")
    for op in wanted:
        if op not in OPERATIONS:
            raise UnknownName("operation", op, OPERATIONS, f"operations are {', '.join(OPERATIONS)}, or all")
    for op in dict.fromkeys(wanted):
        lacking = [f"{a.name}@{a.backend} ({a.kind}: {', '.join(a.operations)})" for a in algos
                   if op not in a.operations]
        if lacking:
            raise BadInput(f"{', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no operation "
                           f"{op!r}: ask for operations every algorithm has, measure the others in another "
                           "run, or ask for all (each algorithm's own operations)")
    return [[op for op in algo.operations if op in wanted] for algo in algos]


def unique(algos: Sequence) -> list:
    """`algos` (adapters or names) without repeats of the same one, each dropped with a warning.  Two
    adapter objects are the same when they are one object (the registry gives one per name and backend)."""
    out, seen = [], set()
    for algo in algos:
        key, label = (algo, algo) if isinstance(algo, str) else (id(algo), f"{algo.name}@{algo.backend}")
        if key in seen:
            warn(f"{label} was asked for more than once: measured once")
            continue
        seen.add(key)
        out.append(algo)
    return out


def plan(algos: Sequence, wanted, sizes: Sequence[int]) -> list[tuple]:
    """(algorithm, operation, message size or None) for every measurement a run will make."""
    return [(algo, op, size) for algo, ops in zip(algos, operations(algos, wanted)) for op in ops
            for size in (sizes if op in MESSAGE_OPERATIONS else [None])]


def round_counts(rounds, max_rounds, factor: int = 3) -> tuple[int, int]:
    """MIN_ROUNDS <= rounds <= max_rounds <= :data:`MAX_ROUND_COUNT` (pqlab.runners.rounds: below the minimum
    no interval can be given); `max_rounds` None: `factor` times `rounds`, at most MAX_ROUND_COUNT."""
    low = _whole(rounds)
    if low is None or low < MIN_ROUNDS:
        raise BadInput(f"rounds must be a whole number >= {MIN_ROUNDS}, got {rounds!r}: an interval over "
                       f"fewer rounds is not shown, so a run with fewer would have none")
    low = count(low, "rounds", MIN_ROUNDS, MAX_ROUND_COUNT)
    high = (min(low * factor, MAX_ROUND_COUNT) if max_rounds is None
            else count(max_rounds, "max_rounds", 1, MAX_ROUND_COUNT))
    if high < low:
        raise BadInput(f"max_rounds ({high}) is below rounds ({low}): choose max_rounds >= rounds")
    return low, high


def output_file(value, option: str = "--out", *, force: bool = False, stores=()) -> Path:
    """A file the caller asked pqlab to write (``--out FILE``), checked before anything runs: never a symbolic
    link (refused even with `force`: pqlab does not write through one), never inside the results store
    (:data:`pqlab.core.paths.RESULTS` and its subfolders; for each folder of `stores`, a command's own results
    folder, the folder and its ``machines/`` subfolders: their files belong to the runs), not a folder, and
    not an existing file unless `force`.  Returns the path as given."""


    path = Path(os.fspath(value))
    if path.is_symlink():
        raise BadInput(f"{option} {path} is a symbolic link: pqlab never writes through one (not even with "
                       "--force); name the file itself or another path")
    if path.is_dir():
        raise BadInput(f"{option} {path} is a folder: name a file")
    where = path.parent.resolve() / path.name  # the folder's links resolved, the file's own name kept
    results = Path(paths.RESULTS).resolve()
    for store in [results, *(Path(f).resolve() for f in stores)]:
        # RESULTS holds runs only, at any depth; another results folder holds them in itself and in machines/
        tree = store if store == results else store / "machines"
        if where.parent == store or where == tree or tree in where.parents:
            raise BadInput(f"{option} {path} is inside the results folder {store}, whose files belong to its "
                           "runs: write it somewhere else")
    if path.exists() and not force:
        raise BadInput(f"{option} {path} exists already: pass --force to replace it, or name another file")
    return path
