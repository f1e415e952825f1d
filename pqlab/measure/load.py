"""A standard background load to calibrate against: what a researcher's laptop always has, started and stopped
by pqlab itself so that "under load" means the same thing on every machine.

    with load.running("spin"):
        run = pqlab.bench([...])

* ``spin``: one process spinning one core flat out (a build, a video call, a browser tab gone wild);
* ``bursty``: one process that alternates busy and idle stretches of random length (:data:`BURST_S`), about
  half busy (an editor, a mail client, an indexer);
* ``none``: nothing.

The load runs as ``python -m pqlab.measure.load KIND``, a process of its own with no other work, at the
scheduler's default priority (it competes as the user's other work would).  :func:`running` stops it on the
way out, whatever happened, and :func:`describe` says in one line what ran.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time

from pqlab.core.inputs import choice

#: The standard loads: name -> what it is (one line).
LOADS = {"none": "no background load",
         "spin": "one process spinning one core flat out",
         "bursty": "one process alternating busy and idle stretches at random, about half busy"}
#: The bounds of the bursty load's busy and idle stretches, seconds.
BURST_S = (0.005, 0.05)


def describe(kind: str) -> str:
    """One line on a standard load (e.g. for a run's parameters and the calibration table)."""
    return LOADS[kind]


@contextlib.contextmanager
def running(kind: str):
    """Run the standard load `kind` (:data:`LOADS`) for the duration of the block; ``"none"`` runs nothing."""

    kind = choice(kind, "load", tuple(LOADS))
    if kind == "none":
        yield None
        return
    proc = subprocess.Popen([sys.executable, "-m", "pqlab.measure.load", kind], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(0.2)  # let it start before anything is measured
        if proc.poll() is not None:
            raise RuntimeError(f"the {kind} load exited at once (status {proc.returncode})")
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else "spin"
    if kind not in LOADS or kind == "none":
        print(f"error: unknown load {kind!r}: one of {', '.join(k for k in LOADS if k != 'none')}",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    rng = random.Random(os.getpid())
    while True:
        if kind == "spin":
            _spin(1.0)
        else:
            _spin(rng.uniform(*BURST_S))
            time.sleep(rng.uniform(*BURST_S))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
