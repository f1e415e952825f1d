"""What notebook 04 measures: every signature's keygen, sign and verify in each liboqs build (the optimised
``default`` and the portable ``generic`` one, each in its own worker process, each checked by liboqs's own
build record) and through the native C runner, with the counter every run counted with and what each build
is called in the tables."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from pqlab.backends.algorithms import get, names
from pqlab.benchmark import bench_in_worker
from pqlab.checks.conformance import liboqs_records
from pqlab.core import builds
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import CLASSICAL_PUBLIC_KEY, POST_QUANTUM, family_of
from pqlab.liboqs.loader import import_oqs
from pqlab.measure import cycles
from pqlab.runners.native import native_run as run_native_study
from pqlab.runners.rounds import ROUNDS
from pqlab.studies import round2_study

TOPIC = "04_signature_cycles"
REFERENCE_TABLE = round2_study.REFERENCE_TABLE
SIGNATURE_OPERATIONS = KIND_OPERATIONS["sig"]
#: Table families of this notebook, in the order of the tables.
FAMILY_ORDER = POST_QUANTUM + ("classical",)
#: What each (backend, liboqs build options) is called in the tables.
BUILDS = {("liboqs", "default"): "liboqs optimised", ("liboqs", "generic"): "liboqs portable",
          ("cryptography", ""): "OpenSSL", ("native", "default"): "native optimised",
          ("native", "generic"): "native portable"}


def table_family(family: str) -> str:
    """The family of this notebook's tables: RSA and elliptic curves are grouped as "classical"."""
    return "classical" if family in CLASSICAL_PUBLIC_KEY else family


def build_label(backend, build) -> str:
    """What a row of `backend` and `build` (its id) is called in the tables (:data:`BUILDS`)."""
    options = builds.options_of(build) if backend in ("liboqs", "native") else ""
    return BUILDS.get((backend, options), f"{backend} {options}".strip())


def liboqs_signatures() -> list[str]:
    """Every signature the loaded liboqs enables (by name, sorted)."""

    return names(kind="sig", backend="liboqs")


def resolve_signatures(algorithms) -> list[str]:
    """`algorithms` as a list of the loaded liboqs's names; the string "all" means every signature liboqs
    enables.  A name that release no longer lists becomes its name for what stands in for it
    (:func:`pqlab.backends.algorithms.get`, which says so)."""
    if isinstance(algorithms, str) and algorithms == "all":
        return liboqs_signatures()
    asked = [algorithms] if isinstance(algorithms, str) else algorithms
    return [get(name, "liboqs").name for name in asked]


def declare_sizes(algorithms: Sequence[str]) -> pd.DataFrame:
    """Public key, secret key and (maximum) signature bytes that liboqs declares per parameter set."""

    oqs = import_oqs()
    rows = []
    for name in algorithms:
        with oqs.Signature(name) as s:
            d = s.details
        rows.append({"algorithm": name, "family": family_of(name), "nist_level": d["claimed_nist_level"],
                     "public_key_bytes": d["length_public_key"], "secret_key_bytes": d["length_secret_key"],
                     "signature_max_bytes": d["length_signature"]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- measuring


@dataclass
class SignatureStudy:
    """The runs behind notebook 04: one pqlab run per liboqs build, one native run, their timings."""

    runs: dict  # build (as asked: an id, default or generic) -> pqlab.store.results.Run
    native: object | None  # pqlab.store.results.Run of the C runner (backend "native")
    params: dict = field(default_factory=dict)
    durations_s: dict = field(default_factory=dict)

    @property
    def run_ids(self) -> dict:
        out = {v: r.run_id for v, r in self.runs.items()}
        if self.native is not None:
            out["native"] = self.native.run_id
        return out


def study_counter(study: SignatureStudy) -> dict:
    """The counter every run of the study counted with, from the runs' metadata: its label and rate,
    ``unit`` ("TSC reference cycles at 2.45 GHz"), where the rate came from, the cost of a read, why
    it was chosen, ``availability`` (perf and TSC here) and ``basis``: the column ratios use, cycles,
    or time_ns where no counter ran.  Raises if the runs counted differently: cycles of two counters
    are never compared."""
    runs = [*study.runs.values(), *([study.native] if study.native is not None else [])]
    used = [r.meta.get("counter") or {} for r in runs]
    labels = sorted({str(u.get("label")) for u in used})
    if len(labels) != 1:
        raise RuntimeError(f"the runs of this study counted with different counters ({', '.join(labels)}): "
                           "measure them again with one PQLAB_COUNTER")
    out = dict(used[0], availability=runs[0].meta.get("counters") or {})
    out["unit"] = cycles.describe(out.get("label"), out.get("hz"))
    out["basis"] = "cycles" if out.get("label") in (cycles.CORE_CYCLES, cycles.TSC) else "time_ns"
    return out


def check_build(run, expected: str) -> dict:
    """Raise unless `run` loaded the `expected` liboqs build, by liboqs's own build record.

    The record is the ``oqsconfig.h`` installed with the library the worker had mapped:
    the default build is a distributable build (``OQS_DIST_BUILD``, CPU features chosen at
    run time), the generic one has ``OQS_OPT_TARGET=generic`` and no ``OQS_DIST_BUILD``.
    Every liboqs row of the run must name the same build.  `expected`: a build id, or
    ``default``/``generic`` (:func:`pqlab.core.builds.parse`).  Returns the run's liboqs metadata.
    """
    info = run.meta.get("liboqs") or {}
    config = info.get("build_config") or {}
    want = builds.parse(expected)
    got = info.get("build")
    ok = got == want.id
    if want.options == "default":
        ok = ok and config.get("OQS_DIST_BUILD") == "1"
    elif want.options == "generic":
        ok = ok and config.get("OQS_OPT_TARGET") == "generic" and "OQS_DIST_BUILD" not in config
    rows = run.measurements[run.measurements["backend"] == "liboqs"]
    row_builds = set(rows["build"].dropna().astype(str))
    if not ok or (row_builds and row_builds != {want.id}):
        raise RuntimeError(f"run {run.run_id} was to use the {expected} liboqs build but reports "
                           f"{got!r} ({info.get('liboqs_path', '?')}, build config {config}); "
                           f"its rows name {sorted(row_builds)}")
    return info


def measure_signatures(algorithms="all", classical: Sequence[str] = (), second: Sequence[str] = (), *,
                       liboqs_builds: Sequence[str] = ("default", "generic"), message_bytes: int = 100,
                       budget_s: float = 0.5, min_samples: int = 3, native_algorithms=None,
                       native_budget_s: float | None = None, target_rel_ci: float | None = 0.01,
                       rounds: int = ROUNDS, max_rounds: int | None = None, study: str = TOPIC, folder=None,
                       timeout_s: float | None = None) -> SignatureStudy:
    """Measure keygen, sign and verify of every signature in each liboqs build, and natively.

    `algorithms`: liboqs names (or "all"); they run once per build in `liboqs_builds` (ids, or
    ``default``/``generic``), each in its own worker process.  `classical` and `second` (e.g.
    "ML-DSA-44@cryptography") do not use liboqs and run in the default worker only.  `native_algorithms`
    (default: `algorithms`; empty: none) are measured by the C runner on the default build with a fresh
    random message for every signature, as pqlab signs.
    `budget_s` is the most sampling time per operation, `target_rel_ci` the precision that ends
    sampling earlier (pqlab.measure.timing.measure; the C runner uses its budget); at least `min_samples`
    are always taken.  Each measurement is made of at least `rounds` rounds, at most `max_rounds`
    (pqlab.runners.rounds; the C runner: exactly `rounds`, one runner process each).  The counter
    (PQLAB_COUNTER) is checked first, before any worker starts.
    """

    cycles.counter()
    names = resolve_signatures(algorithms)
    native_names = names if native_algorithms is None else resolve_signatures(native_algorithms)
    native_budget_s = budget_s if native_budget_s is None else native_budget_s
    params = {"algorithms": names, "classical": list(classical), "second": list(second),
              "builds": list(liboqs_builds), "message_bytes": message_bytes, "budget_s": budget_s,
              "min_samples": min_samples, "target_rel_ci": target_rel_ci, "native_algorithms": native_names,
              "native_budget_s": native_budget_s, "rounds": rounds, "max_rounds": max_rounds}
    runs, durations = {}, {}
    for build in liboqs_builds:
        todo = names + (list(classical) + list(second) if build == "default" else [])
        t0 = time.perf_counter()
        run = bench_in_worker(todo, build=build, message_bytes=message_bytes, budget_s=budget_s,
                              min_samples=min_samples, target_rel_ci=target_rel_ci, study=study,
                              folder=folder, timeout_s=timeout_s, rounds=rounds, max_rounds=max_rounds,
                              allow_nonconforming=True)

        durations[build] = time.perf_counter() - t0
        check_build(run, build)
        runs[build] = run
    native_run = None
    if native_names:
        t0 = time.perf_counter()
        native_run = run_native_study(native_names, message_bytes, native_budget_s, build="default",
                                      study=study, folder=folder, min_samples=min_samples, params=params,
                                      fixed_message=False, rounds=rounds,
                                      pool=1,  # one signature, as pqlab's verify
                                      conformance=liboqs_records(native_names, "default"))
        durations["native"] = time.perf_counter() - t0
    return SignatureStudy(runs, native_run, params, durations)
