"""Measuring here for the atlas: this machine once per liboqs build, each build as its own platform under
its own machine identity (the default build under this machine's id, any other under the override
``<id>+<build>-build``, recorded as an override), each run packed into a bundle with
``python -m pqlab bundle`` (:func:`measure_local`); :func:`merge` imports bundles as
``python -m pqlab merge`` does.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pqlab import benchmark
from pqlab.core import inputs, paths
from pqlab.core.builds import parse
from pqlab.liboqs import loader
from pqlab.measure import machine
from pqlab.store import bundle
from pqlab.studies.atlas.compared import TOPIC


def local_identity(build: str) -> str:
    """The machine id a local liboqs build is recorded under: this machine's own for the default build,
    ``<id>+<build>-build`` (an identity override) for any other."""
    own = machine.machine_id()
    return own if build == "default" else machine.check_machine_id(f"{own}+{build}-build", "local identity")


def find_bundles(patterns) -> list[Path]:
    """The bundle files the patterns name (relative ones from the project root); a pattern that matches
    nothing is an error, raised before anything is measured."""
    found = []
    for pattern in patterns:
        full = pattern if Path(pattern).is_absolute() else str(paths.ROOT / pattern)
        hits = sorted(Path(p) for p in glob.glob(full))
        if not hits:
            raise FileNotFoundError(f"bundles: no file matches {pattern!r} (relative patterns start at "
                                    f"{paths.ROOT})")
        found += hits
    return found


def measure_local(builds, algorithms, *, message_bytes: int, budget_s: float, min_samples: int,
                  staging: Path | str | None = None) -> list[dict]:
    """Measure `algorithms` once per liboqs build in `builds`, each in a fresh process under
    :func:`local_identity`, then pack each run into a bundle (``python -m pqlab bundle``).  Every build
    is checked before anything is measured.  Returns ``[{"build", "machine_id", "override", "run_id",
    "bundle", "run"}]`` (``run``: the :class:`pqlab.store.results.Run`, its conformance record in its
    metadata)."""

    budget_s = inputs.positive_number(budget_s, "budget_s")
    min_samples = inputs.count(min_samples, "min_samples", 1, inputs.MAX_SAMPLES)
    for build in builds:
        parse(build)  # an unknown build: one line naming those there are
    for build in builds:
        loader.build_environment(build)  # built on first need; cannot be: a one-line error
    staging = Path(staging or paths.OUTPUT / "build" / TOPIC / "local")
    out = []
    for build in builds:
        ident = local_identity(build)
        env = {} if build == "default" else {machine.ID_OVERRIDE: ident}
        folder = staging / ident
        shutil.rmtree(folder, ignore_errors=True)
        # every build is timed; its record says whether it conforms
        run = benchmark.bench_in_worker(algorithms, build=build, message_bytes=message_bytes,
                                        budget_s=budget_s, min_samples=min_samples, study=TOPIC,
                                        folder=folder, env=env, allow_nonconforming=True)
        target = staging / f"{ident}.tar.gz"
        # the staging folder's bundle of an earlier run (`bundle --out` never replaces)
        target.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pqlab", "bundle", "--folder", str(folder), "--no-notebooks", "--out",
               str(target)]
        proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"bundling the {build} build's run failed: "
                               f"{proc.stderr.strip().splitlines()[-1:]}")
        out.append({"build": build, "machine_id": ident,
                    "override": bool(env) or bool(run.meta.get("machine_id_override")),
                    "run_id": run.run_id, "bundle": target, "run": run})
        _PACKED_HERE.add(target.resolve())
    return out


#: the bundles :func:`measure_local` packed in this process: this host's own runs (the default build's carries
#: this machine's id, which a merge refuses from any other bundle)
_PACKED_HERE: set[Path] = set()


def merge(bundles, folder: Path | str | None = None) -> list[dict]:
    """Import bundles into the results store, as ``python -m pqlab merge`` does
    (:func:`pqlab.store.bundle.merge_bundles`): those :func:`measure_local` packed here first, with
    ``override=True`` (they are this machine's own), then the others, without it (a bundle from elsewhere that
    carries this machine's id is refused)."""
    bundles = list(bundles)
    own = [b for b in bundles if Path(b).resolve() in _PACKED_HERE]
    others = [b for b in bundles if Path(b).resolve() not in _PACKED_HERE]
    return ((bundle.merge_bundles(own, folder, override=True) if own else [])
            + (bundle.merge_bundles(others, folder) if others else []))
