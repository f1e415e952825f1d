"""Signature families in cycles: the analysis of notebook 04 (``04_signature_cycles``).

The fourth study measured sign and verify clock cycles of the NIST round-2 signature
candidates (reference and optimised builds) in one table per family sorted by signing
cycles.  This module redoes that for today's schemes and adds what the study lacked:

* :func:`measure_signatures` runs every signature twice through pqlab, once in a worker
  process that loads the optimised (``default``) liboqs build and once in one that loads the
  portable (``generic``) build, checks with liboqs's own build record which build each worker
  got, and measures the same operations with the native C runner (no interpreter);
* :func:`collect_rows` turns the runs into one tidy frame (a row per algorithm, build and
  operation) with sizes, the table family ("classical" groups RSA and elliptic curves) and
  the clock each row implies (cycles / time);
* :func:`study_counter` names the counter every run counted with (core cycles, TSC reference
  cycles or none; one per study, never mixed); :func:`check_clock` states, for core cycles only,
  whether each row's time follows from its cycles and the run's clock; :func:`tabulate_families` gives the study's tables (one per family, sorted by sign
  cycles); :func:`compute_speedups` the optimised/portable factor; :func:`compute_python_over_native`
  pqlab / native per operation; :func:`compare_implementations` OpenSSL beside liboqs;
* :func:`ancestor_intervals` gives intervals to :func:`round2_study.compare_ancestors` (ML-DSA, Falcon and
  SPHINCS+ against their round-2 ancestors; the study's own numbers and the pairing are in
  :mod:`pqlab.studies.round2_study`);
* ``describe_*`` functions write the sentences that state numbers (Markdown), and
  ``plot_*`` the figures (house style of :mod:`pqlab.publish.plotting`).
"""
from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import names
from pqlab.benchmark import bench_in_worker
from pqlab.checks.conformance import liboqs_records
from pqlab.core import builds
from pqlab.core.formatting import Column, fmt_cycles, fmt_factor, fmt_factor_ci, fmt_percent, fmt_time_ns
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import CLASSICAL_PUBLIC_KEY, FAMILIES, POST_QUANTUM, family_of
from pqlab.liboqs.loader import import_oqs
from pqlab.measure import cycles
from pqlab.measure.cycles import per_call
from pqlab.measure.stats import CONFIDENCE, ratio_ci, ratio_to_published
from pqlab.publish import plotting
from pqlab.publish.context import precision_markdown, read_costs_text
from pqlab.runners.fidelity import SLOW_ROUND, fastest_rounds
from pqlab.runners.native import native_run as run_native_study
from pqlab.runners.rounds import ROUNDS
from pqlab.store.results import verified_rows
from pqlab.studies import conforming, round2_study

TOPIC = "04_signature_cycles"
REFERENCE_TABLE = round2_study.REFERENCE_TABLE
SIGNATURE_OPERATIONS = KIND_OPERATIONS["sig"]
#: Table families of this notebook, in the order of the tables.
FAMILY_ORDER = POST_QUANTUM + ("classical",)
#: What each (backend, liboqs build options) is called in the tables.
BUILDS = {("liboqs", "default"): "liboqs optimised", ("liboqs", "generic"): "liboqs portable",
          ("cryptography", ""): "OpenSSL", ("native", "default"): "native optimised",
          ("native", "generic"): "native portable"}
#: Largest relative distance of a row's implied clock from its run's clock that still counts as consistent.
CLOCK_TOLERANCE = 0.15
#: Native operations shorter than SHORT_NS and longer than LONG_NS (ns), whose pqlab / native ratios are told apart
SHORT_NS, LONG_NS = 5e5, 5e6

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
    """`algorithms` as a list of names; the string "all" means every signature liboqs enables."""
    if isinstance(algorithms, str):
        return liboqs_signatures() if algorithms == "all" else [algorithms]
    return list(algorithms)


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
    Every liboqs row of the run must name the same build.  `expected`: a build id, or ``default``/``generic``
    (:func:`pqlab.core.builds.parse`).  Returns the run's liboqs metadata.
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

    `algorithms`: liboqs names (or "all"); they run once per build in `liboqs_builds` (ids, or ``default``/``generic``), each in its own
    worker process.  `classical` and `second` (e.g. "ML-DSA-44@cryptography") do not use liboqs
    and run in the default worker only.  `native_algorithms` (default: `algorithms`; empty: none)
    are measured by the C runner on the default build with a fresh random message for every
    signature, as pqlab signs.
    `budget_s` is the most sampling time per operation, `target_rel_ci` the precision that ends
    sampling earlier (pqlab.measure.timing.measure; the C runner uses its budget); at least `min_samples`
    are always taken.  Each measurement is made of at least `rounds` rounds, at most `max_rounds` (pqlab.runners.rounds;
    the C runner: exactly `rounds`, one runner process each).  The counter (PQLAB_COUNTER) is checked first, before any worker starts.
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
                              min_samples=min_samples, target_rel_ci=target_rel_ci, study=study, folder=folder,
                              timeout_s=timeout_s, rounds=rounds, max_rounds=max_rounds, allow_nonconforming=True)
        durations[build] = time.perf_counter() - t0
        check_build(run, build)
        runs[build] = run
    native_run = None
    if native_names:
        t0 = time.perf_counter()
        native_run = run_native_study(native_names, message_bytes, native_budget_s, build="default", study=study,
                                      folder=folder, min_samples=min_samples, params=params, fixed_message=False,
                                      rounds=rounds, pool=1,  # one signature, as pqlab's verify
                                      conformance=liboqs_records(native_names, "default"))
        durations["native"] = time.perf_counter() - t0
    return SignatureStudy(runs, native_run, params, durations)


# --------------------------------------------------------------------------- tidy rows


def _key(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["build"] = df["build"].fillna("").astype(str)
    return df


def sample_stats(samples: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm, backend, build and operation, from the raw samples: the median of the
    per-sample clocks (`sample_ghz`, cycles / time) and the mean cycles and time per call.

    A pqlab sample is the mean of `loops` back-to-back calls (loops calibrated per operation) and
    a native sample is one call, so their medians are different statistics wherever the cost
    varies from call to call (ML-DSA's rejection loop, Falcon and RSA key generation); the mean
    per call is the same statistic whatever the loop count, so ratios between builds or harnesses
    use it.
    """
    keys = ["algorithm", "backend", "build", "operation"]
    if samples is None or samples.empty:
        return pd.DataFrame({**{k: pd.Series(dtype=object) for k in keys},
                             **{c: pd.Series(dtype=float) for c in ("sample_ghz", "cycles_mean", "time_ns_mean")}})
    s = _key(samples)  # cycles may be missing (no counter, or a failed read): their statistics are NaN
    s["cycles"] = s["cycles"].astype(float)
    s["time_ns"] = s["time_ns"].astype(float)
    s["ghz"] = s["cycles"] / s["time_ns"]
    return s.groupby(keys, as_index=False).agg(sample_ghz=("ghz", "median"), cycles_mean=("cycles", "mean"),
                                               time_ns_mean=("time_ns", "mean"))


def _with_sample_stats(run) -> pd.DataFrame:
    """A run's measurements with the per-sample clock, and means from the samples where the row has none
    (runs of schema 1 stored no means)."""
    m = _key(run.measurements).merge(sample_stats(run.samples), on=["algorithm", "backend", "build", "operation"],
                                     how="left", suffixes=("", "_from_samples"))
    for col in ("cycles_mean", "time_ns_mean"):
        m[col] = m[col].fillna(m.pop(f"{col}_from_samples"))
    return m


def collect_rows(study: SignatureStudy | None = None, *, runs: Sequence = (), native=None) -> pd.DataFrame:
    """One row per measured algorithm, build and operation (pqlab runs and the native run).

    Adds `build` ("liboqs optimised", "liboqs portable", "OpenSSL", "native optimised"),
    `counter` (what its cycles are, from its run's metadata), `table_family`, sizes (from the default run's size table, else the run's own), the
    implied clock of the medians (`implied_ghz` = cycles_median / time_ns_median) and, where
    raw samples exist, the median of the per-sample clocks (`sample_ghz`).  The do-nothing
    call (`noop`) and failed operations are left out (see :func:`failed_rows`).
    """
    if study is not None:
        runs = list(study.runs.values())
        native = study.native
    frames, sizes = [], []
    for run in runs:
        m = _with_sample_stats(run)
        m["harness_noop_ns"] = run.meta.get("harness_overhead_ns")
        frames.append(m)
        sizes.append(run.sizes)
    if native is not None:
        frames.append(_with_sample_stats(native))
    for frame, run in zip(frames, [*runs, *([native] if native is not None else [])], strict=True):
        used = run.meta.get("counter") or {}
        frame["counter"] = cycles.describe(used.get("label"), used.get("hz"))
    rows = pd.concat(frames, ignore_index=True)
    rows = verified_rows(rows).copy()
    if sizes:
        sz = pd.concat(sizes, ignore_index=True)
        sz = sz[sz["backend"] != "native"].drop_duplicates(["algorithm", "backend"])
        cols = ["public_key_bytes", "secret_key_bytes", "signature_bytes", "signature_max_bytes"]
        sz = sz[["algorithm", "backend", *cols]]
        by_backend = rows.merge(sz, on=["algorithm", "backend"], how="left")
        # native rows take the sizes liboqs declares through pqlab's liboqs adapter
        liboqs_sz = sz[sz["backend"] == "liboqs"].drop(columns="backend")
        native_rows = rows["backend"] == "native"
        filled = rows[native_rows].merge(liboqs_sz, on="algorithm", how="left")
        by_backend.loc[native_rows.to_numpy(), cols] = filled[cols].to_numpy()
        rows = by_backend
    if "family" in rows:

        missing = rows["family"].isna()
        rows.loc[missing, "family"] = rows.loc[missing, "algorithm"].map(family_of)
    rows["table_family"] = rows["family"].map(table_family)
    rows["build_id"] = rows["build"]
    rows["build"] = [build_label(b, v) for b, v in zip(rows["backend"], rows["build_id"], strict=True)]
    rows["implied_ghz"] = rows["cycles_median"].astype(float) / rows["time_ns_median"].astype(float)
    for col in ("sample_ghz", "cycles_mean", "time_ns_mean"):
        if col not in rows:
            rows[col] = np.nan
    return rows.reset_index(drop=True)


def failed_rows(study: SignatureStudy) -> pd.DataFrame:
    """Operations that failed (an exception or a wrong output), with the reason in `flags`."""
    frames = [r.measurements for r in study.runs.values()]
    if study.native is not None:
        frames.append(study.native.measurements)
    m = pd.concat(frames, ignore_index=True)
    bad = m[(m["operation"] != "noop") & ~m["verified"].fillna(False).astype(bool)]
    return bad[["algorithm", "backend", "build", "operation", "flags"]].reset_index(drop=True)


# --------------------------------------------------------------------------- cycles and time


def check_clock(rows: pd.DataFrame, counter: dict, tolerance: float = CLOCK_TOLERANCE) -> pd.DataFrame | None:
    """Does each row's time follow from its cycles?  One row per measurement, with the verdict; None
    unless the cycles are core cycles (TSC reference cycles are time at a fixed rate: cycles / time
    is that rate by construction, and the check would be circular).

    A row's implied clock is cycles_median / time_ns_median (GHz).  The run's clock is the
    median of its rows' implied clocks (the counter counts user-space core cycles of the
    thread; on a virtual machine this is the effective clock of the vCPU).  A row is
    consistent when its implied clock lies within `tolerance` of its run's clock.  Below the
    band, time ran on without cycles: the process was descheduled or in the kernel (page
    faults, system calls), which wall time includes and user cycles do not.  Above it, the core
    ran faster than it did for most of the run: its boost clock follows the load on the other
    cores (and, on a virtual machine, on the host).
    """
    if counter.get("label") != cycles.CORE_CYCLES:
        return None
    cols = ["table_family", "algorithm", "build", "operation", "run_id", "samples", "cycles_median",
            "time_ns_median", "implied_ghz", "sample_ghz", "cycles_source", "flags"]
    out = rows[[c for c in cols if c in rows]].copy()
    out["implied_ghz"] = out["cycles_median"].astype(float) / out["time_ns_median"].astype(float)
    out["run_clock_ghz"] = out.groupby("run_id")["implied_ghz"].transform("median")
    out["deviation"] = out["implied_ghz"] / out["run_clock_ghz"] - 1
    out["consistent"] = out["deviation"].abs() <= tolerance
    out["verdict"] = np.where(out["consistent"], "consistent",
                              np.where(out["deviation"] < 0, "below: time without cycles (descheduled or in the kernel)",
                                       "above: a higher boost clock than for most of the run"))
    out.loc[out["implied_ghz"].isna(), ["consistent", "verdict"]] = [False, "no cycles"]
    return out.reset_index(drop=True)


def summarize_clock(consistency: pd.DataFrame | None, nominal_mhz: float | None = None) -> dict | None:
    """Numbers for the text: the clock, its spread, rows outside the band, the nominal clock (None
    where the check did not run)."""
    if consistency is None:
        return None
    ghz = consistency["implied_ghz"].dropna()
    return {"rows": int(len(consistency)), "consistent": int(consistency["consistent"].sum()),
            "clock_ghz": float(ghz.median()), "clock_q1": float(ghz.quantile(0.25)),
            "clock_q3": float(ghz.quantile(0.75)), "nominal_ghz": nominal_mhz / 1e3 if nominal_mhz else None,
            "outside": consistency.loc[~consistency["consistent"], ["algorithm", "build", "operation",
                                                                     "implied_ghz", "verdict"]]}


# --------------------------------------------------------------------------- tables


def _cycles_int(s: pd.Series) -> pd.Series:
    return s.astype(float).round().astype("Int64")


def tabulate_signatures(rows: pd.DataFrame, builds: Sequence[str] | None = None) -> pd.DataFrame:
    """The wide table of the study: one row per algorithm and build, cycles (median, quartiles; the
    `counter` column says which) and measured time (median, µs) per operation, and the sizes in
    bytes; sorted by family, then sign cycles.  Without cycles (no counter) the cycle columns are
    left out and rows sort by sign time.  Rows of two counters are refused: never one column."""
    rows = rows if builds is None else rows[rows["build"].isin(builds)]
    if rows["counter"].nunique() > 1:
        raise ValueError(f"rows of different counters ({', '.join(rows['counter'].unique())}) in one table")
    ids = ["table_family", "algorithm", "build", "counter", "nist_level", "public_key_bytes", "secret_key_bytes",
           "signature_max_bytes"]
    base = rows.drop_duplicates(["algorithm", "build"])[ids].set_index(["algorithm", "build"])
    parts = [base]
    for op in SIGNATURE_OPERATIONS:
        sub = rows[rows["operation"] == op].drop_duplicates(["algorithm", "build"]).set_index(["algorithm", "build"])
        parts.append(pd.DataFrame({f"{op}_cycles": _cycles_int(sub["cycles_median"]),
                                   f"{op}_cycles_q1": _cycles_int(sub["cycles_q1"]),
                                   f"{op}_cycles_q3": _cycles_int(sub["cycles_q3"]),
                                   f"{op}_us": sub["time_ns_median"].astype(float) / 1e3}))
    wide = pd.concat(parts, axis=1).reset_index()
    wide = wide.rename(columns={"table_family": "family", "public_key_bytes": "pk_bytes",
                                "secret_key_bytes": "sk_bytes", "signature_max_bytes": "sig_bytes"})
    for col in ("pk_bytes", "sk_bytes", "sig_bytes", "nist_level"):
        wide[col] = pd.to_numeric(wide[col], errors="coerce").astype("Int64")
    if rows["cycles_median"].isna().all():
        wide = wide.drop(columns=[c for c in wide.columns if "_cycles" in c])
    order = {f: i for i, f in enumerate(FAMILY_ORDER)}
    wide["_f"] = wide["family"].map(order).fillna(len(order))
    wide = wide.sort_values(["_f", _sort_key(wide), "algorithm"], na_position="last").drop(columns="_f")
    first = ["family", "algorithm", "build", "counter", "nist_level", "pk_bytes", "sk_bytes", "sig_bytes"]
    return wide[first + [c for c in wide.columns if c not in first]].reset_index(drop=True)


def family_columns(counter: dict) -> list:
    """The paper columns of :func:`tabulate_families`' tables: sizes, the median cycles of each operation where
    a counter ran (else keygen's time too), and the sign and verify times."""

    cycles_cols = ([f"{op}_cycles" for op in SIGNATURE_OPERATIONS] if counter["basis"] == "cycles"
                   else [Column("keygen_us", "Keygen")])
    return ["algorithm", "build", "nist_level", Column("pk_bytes", "Public key"), Column("sig_bytes", "Signature"),
            *cycles_cols, Column("sign_us", "Sign"), Column("verify_us", "Verify")]


def tabulate_families(rows: pd.DataFrame, builds: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
    """One table per family (lattice, hash-based, multivariate, code-based, classical), each sorted
    by signing cycles as the study's were; families without rows are left out."""
    if builds is None:
        builds = [b for b in rows["build"].unique() if not str(b).startswith("native")]
    wide = tabulate_signatures(rows, builds)
    out = {}
    for fam in FAMILY_ORDER + tuple(sorted(set(wide["family"]) - set(FAMILY_ORDER))):
        sub = wide[wide["family"] == fam]
        if len(sub):
            out[fam] = sub.sort_values([_sort_key(sub), "algorithm"], na_position="last").reset_index(drop=True)
    return out


def _sort_key(wide: pd.DataFrame) -> str:
    return "sign_cycles" if "sign_cycles" in wide else "sign_us"


def _ratio_table(rows: pd.DataFrame, num: str, den: str, name: str, sides: tuple[str, str],
                 basis: str = "cycles") -> pd.DataFrame:
    """`num` build / `den` build per algorithm and operation: `name` from the mean `basis` (cycles,
    or time_ns where no counter ran) per call, `name`_median from the medians (see
    :func:`sample_stats` for why the mean leads); columns ``<side>_<basis>_mean`` and ``_median``
    with `sides` = (den, num) names, and each side's mean time."""
    values = list(dict.fromkeys([f"{basis}_mean", f"{basis}_median", "time_ns_mean"]))
    keep = ["algorithm", "table_family", "operation", *values]
    a = rows[rows["build"] == num][keep].drop_duplicates(["algorithm", "operation"])
    b = rows[rows["build"] == den][keep].drop_duplicates(["algorithm", "operation"])
    m = b.merge(a.drop(columns=["table_family"]), on=["algorithm", "operation"], suffixes=("_den", "_num"))
    m[name] = m[f"{basis}_mean_num"] / m[f"{basis}_mean_den"]
    m[f"{name}_median"] = m[f"{basis}_median_num"] / m[f"{basis}_median_den"]
    m = m.rename(columns={f"{v}_{end}": f"{side}_{v}" for v in values
                          for end, side in (("den", sides[0]), ("num", sides[1]))})
    m.attrs["basis"] = basis
    return m


def compute_speedups(rows: pd.DataFrame, basis: str = "cycles") -> pd.DataFrame:
    """Speed-up of the optimised liboqs build per algorithm and operation: portable / optimised
    mean `basis` per call (`speedup`), and the ratio of the medians (`speedup_median`)."""
    m = _ratio_table(rows, "liboqs portable", "liboqs optimised", "speedup", ("optimised", "portable"), basis)
    return _order(m)[["table_family", "algorithm", "operation", f"optimised_{basis}_mean", f"portable_{basis}_mean",
                      "speedup", f"optimised_{basis}_median", f"portable_{basis}_median", "speedup_median"]]


def compute_python_over_native(rows: pd.DataFrame, basis: str = "cycles",
                               build: str = "liboqs optimised") -> pd.DataFrame:
    """What pqlab's path adds: pqlab / native mean `basis` per call (`ratio`) for the same
    operation, liboqs build, message length and counter; what it adds per call; the ratio of medians."""
    m = _ratio_table(rows, build, "native " + build.split()[-1], "ratio", ("native", "pqlab"), basis)
    m[f"added_{basis}"] = m[f"pqlab_{basis}_mean"] - m[f"native_{basis}_mean"]
    cols = ["table_family", "algorithm", "operation", f"native_{basis}_mean", f"pqlab_{basis}_mean", "ratio",
            f"added_{basis}", f"native_{basis}_median", f"pqlab_{basis}_median", "ratio_median", "native_time_ns_mean"]
    return _order(m)[list(dict.fromkeys(cols))]


def compare_implementations(rows: pd.DataFrame, other: str = "OpenSSL", base: str = "liboqs optimised",
                            basis: str = "cycles") -> pd.DataFrame:
    """Algorithms measured through a second implementation: its mean `basis` per call / liboqs's."""
    m = _ratio_table(rows, other, base, "ratio", ("liboqs", other), basis)
    return _order(m)[["algorithm", "operation", f"liboqs_{basis}_mean", f"{other}_{basis}_mean", "ratio",
                      f"liboqs_{basis}_median", f"{other}_{basis}_median", "ratio_median"]]


def build_samples(study: SignatureStudy, build: str, algorithm: str, operation: str,
                  column: str = "cycles") -> np.ndarray:
    """The raw per-call values (`column`) of one build's operation in `study` (empty when not measured)."""
    backend, options = next(k for k, v in BUILDS.items() if v == build)
    run = study.native if backend == "native" else study.runs.get(options or "default")
    if run is None:
        return np.array([])
    return run.sample_values(algorithm, operation, backend=backend, build=options or None, column=column)


def with_intervals(table: pd.DataFrame, study: SignatureStudy, num: str, den: str, name: str,
                   column: str = "cycles", stat: str = "mean") -> pd.DataFrame:
    """`table` (:func:`compute_speedups` and the like) with ``<name>_ci_low`` and ``<name>_ci_high``: the
    interval over rounds of `num` build's `stat` over `den` build's, from both builds' raw samples; `name` becomes the
    estimate it is about (each round's `stat` per call: :func:`pqlab.measure.stats.ratio_ci`), so a ratio lies inside its
    interval; the ratio of the means pooled over all samples, which a slow round drags, stays in ``<name>_pooled``."""

    found = [ratio_ci(build_samples(study, num, a, o, column), build_samples(study, den, a, o, column), stat)
             for a, o in zip(table["algorithm"], table["operation"], strict=True)]
    out = table.copy()
    at = out.columns.get_loc(name) + 1
    out.insert(at, f"{name}_ci_low", [lo for _, lo, _ in found])
    out.insert(at + 1, f"{name}_ci_high", [hi for _, _, hi in found])
    pooled = out[name].to_numpy(float)
    value = np.array([v for v, _, _ in found], dtype=float)
    has_ci = np.isfinite(out[f"{name}_ci_low"].to_numpy(float)) & np.isfinite(value)
    out[name] = np.where(has_ci, value, pooled)
    out[f"{name}_pooled"] = pooled
    return out


def with_round_checks(table: pd.DataFrame, study: SignatureStudy, num: str, den: str, name: str,
                      sides: tuple[str, str], column: str = "cycles") -> pd.DataFrame:
    """`table` with how each side's rounds ran (:func:`pqlab.runners.fidelity.fastest_rounds`): ``<name>_fastest_rounds``
    (`num`'s fastest round over `den`'s) and per side (`sides` = names of num and den) its rounds, its slow rounds
    and how far its slowest round lay above its fastest (``<side>_rounds``, ``_slow_rounds``, ``_worst_round``)."""

    found = pd.DataFrame([fastest_rounds(build_samples(study, num, a, o, column), build_samples(study, den, a, o, column))
                          for a, o in zip(table["algorithm"], table["operation"], strict=True)], index=table.index,
                         columns=["fastest_ratio", *(f"{k}_{x}" for k in ("num", "den") for x in ("rounds", "slow", "worst"))])
    out = table.copy()
    out[f"{name}_fastest_rounds"] = found["fastest_ratio"]
    for side, key in zip(sides, ("num", "den"), strict=True):
        out[f"{side}_rounds"] = found[f"{key}_rounds"]
        out[f"{side}_slow_rounds"] = found[f"{key}_slow"]
        out[f"{side}_worst_round"] = found[f"{key}_worst"]
    return out


def ancestor_intervals(ancestors: pd.DataFrame, study: SignatureStudy, column: str = "cycles") -> pd.DataFrame:
    """`ancestors` with intervals of today / round 2 from our samples only: the study published one mean per
    set and build, with no spread, so its side has no interval (``ratio_to_published``, inverted)."""

    out = ancestors.copy()
    for op in ("sign", "verify"):
        bounds = []
        for alg, build, published, ratio in zip(out["algorithm"], out["our_build"], out[f"r2_{op}_cycles"],
                                                out[f"{op}_ratio"], strict=True):
            if np.isnan(ratio):  # not compared (another counter): no interval either
                bounds.append((np.nan, np.nan))
                continue
            _, lo, hi = ratio_to_published(float(published), build_samples(study, build, alg, op, column), "mean")
            bounds.append((1 / hi if hi else np.nan, 1 / lo if lo else np.nan))
        at = out.columns.get_loc(f"{op}_ratio") + 1
        out.insert(at, f"{op}_ratio_ci_low", [lo for lo, _ in bounds])
        out.insert(at + 1, f"{op}_ratio_ci_high", [hi for _, hi in bounds])
    return out


def _order(df: pd.DataFrame) -> pd.DataFrame:
    fam = {f: i for i, f in enumerate(FAMILY_ORDER)}
    op = {o: i for i, o in enumerate(SIGNATURE_OPERATIONS)}
    key = df.assign(_f=df.get("table_family", pd.Series("", index=df.index)).map(fam).fillna(99),
                    _o=df["operation"].map(op))
    return key.sort_values(["_f", "algorithm", "_o"]).drop(columns=["_f", "_o"]).reset_index(drop=True)


def lookup(table: pd.DataFrame, algorithm: str, operation: str, column: str):
    """One value of a ratio table, or None when that algorithm/operation was not measured."""
    hit = table[(table["algorithm"] == algorithm) & (table["operation"] == operation)]
    return None if hit.empty or pd.isna(hit[column].iloc[0]) else float(hit[column].iloc[0])


# --------------------------------------------------------------------------- the study's numbers


def describe_clock(summary: dict | None, counter: dict, tolerance: float = CLOCK_TOLERANCE,
                   rows: pd.DataFrame | None = None) -> str:
    """Cycles against time in our runs, or why that check is skipped here (Markdown)."""
    if summary is None:
        if counter["basis"] == "time_ns":
            return "No cycle counter ran, so there is no clock to check: times are shown as measured."
        ghz = rows["implied_ghz"].dropna() if rows is not None else pd.Series(dtype=float)
        seen = (f" Here ticks / ns has a median of {ghz.median():.4f} over {len(ghz)} rows against the stated "
                f"{counter['hz'] / 1e9:.4f} GHz." if len(ghz) and counter.get("hz") else "")
        return (f"**The clock-consistency check is skipped**: it applies to core cycles only. These are "
                f"{counter['unit']}, elapsed time counted at a fixed rate, so cycles / time is that rate by "
                f"construction and would confirm nothing.{seen} Times are shown as measured.")
    nominal = (f"; /proc/cpuinfo reports {summary['nominal_ghz']:.2f} GHz, the clock the hypervisor "
               f"announces, not the one the core runs at" if summary.get("nominal_ghz") else "")
    n_out = summary["rows"] - summary["consistent"]
    text = (f"Over {summary['rows']} measured rows the implied clock (median cycles / median time) has a median of "
            f"**{summary['clock_ghz']:.2f} GHz** (quartiles {summary['clock_q1']:.2f}–{summary['clock_q3']:.2f} GHz)"
            f"{nominal}. {summary['consistent']} rows lie within ±{tolerance:.0%} of their run's clock")
    if n_out:
        outside = summary["outside"]
        below = outside[outside["verdict"].str.startswith("below")].sort_values("implied_ghz")
        above = outside[outside["verdict"].str.startswith("above")].sort_values("implied_ghz", ascending=False)
        text += f"; {n_out} {'does' if n_out == 1 else 'do'} not"
        if len(below):
            listed = ", ".join(f"{r.algorithm} {r.operation} ({r.build}, {r.implied_ghz:.2f} GHz)"
                               for r in below.head(4).itertuples())
            text += (f". {len(below)} {'lies' if len(below) == 1 else 'lie'} below, e.g. {listed}{' …' if len(below) > 4 else ''}: their wall time "
                     f"includes time without user cycles (descheduling by other load, or kernel work such as page "
                     f"faults), so their cycles are the better measure")
        if len(above):
            text += (f". {len(above)} {'lies' if len(above) == 1 else 'lie'} above (up to {above['implied_ghz'].iloc[0]:.2f} GHz): the core's boost "
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
        listed = ", ".join(f"{r.algorithm} {r.operation} ({r.speedup:.2f}×)" for r in same.head(6).itertuples())
        text += f"; no gain for {listed}{' …' if len(same) > 6 else ''}"
    if len(sign):
        hi, lo = sign.iloc[-1], sign.iloc[0]
        text += (f". Signing gains most in {hi['algorithm']} ({hi['speedup']:.1f}×) and least in "
                 f"{lo['algorithm']} ({lo['speedup']:.2f}×).")
    unlike = conforming.describe_unlike_work(s, "speedup")
    return text + (f" {unlike}" if unlike else "")


def _fmt_basis(value, basis: str) -> str:
    return fmt_time_ns(value) if basis == "time_ns" else fmt_cycles(value)


def describe_python_over_native(fidelity: pd.DataFrame, counter: dict, noop: float | None = None, runs=()) -> str:
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
        text += (f" Operations under {fmt_time_ns(SHORT_NS)} natively: median ratio {fast['ratio'].median():.2f} "
                 f"({len(fast)} operations); over {fmt_time_ns(LONG_NS)}: {slow['ratio'].median():.2f} ({len(slow)}).")
    if noop:
        text += f" A do-nothing call through the harness costs {_fmt_basis(noop, basis)}."
    return text + describe_below_one(f) + conforming.paragraph(runs)


def describe_below_one(f: pd.DataFrame) -> str:
    """The pqlab / native ratios below 1 with their intervals, and why (from the rounds: :func:`with_round_checks`)."""
    below = f[f["ratio"] < 1].sort_values("ratio")
    if below.empty:
        return " No ratio lies below 1."
    ci = "ratio_ci_low" in below

    def shown(r) -> str:
        return (f"{r['algorithm']} {r['operation']} "
                + (fmt_factor_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]) if ci else fmt_factor(r["ratio"])))

    clear = below[below["ratio_ci_high"] < 1] if ci else below.iloc[:0]
    text = (f" **Below 1** ({len(below)} of {len(f)} operations, {len(clear)} of them with the whole interval below 1): "
            + "; ".join(shown(r) for _, r in below.iterrows()) + ". pqlab's path runs the same C code and more, so a "
            "ratio below 1 says that the two sides ran under different conditions, not that pqlab's path is faster.")
    if "ratio_fastest_rounds" not in below:
        return text + " This run did not record its rounds, so which conditions is not known."
    n_rounds, p_rounds = int(f["native_rounds"].sum()), int(f["pqlab_rounds"].sum())
    n_slow, p_slow = int(f["native_slow_rounds"].sum()), int(f["pqlab_slow_rounds"].sum())
    text += (f" They are separate runs, measured one after the other, each round a fresh process: over the {len(f)} "
             f"operations, {n_slow} of the native runner's {n_rounds} rounds ran {fmt_percent(SLOW_ROUND, 0)} or more "
             f"above that operation's fastest native round, against {p_slow} of pqlab's {p_rounds}.")
    explained = below[below["ratio_fastest_rounds"] >= 1]
    if len(explained):
        text += (" On the fastest round of each side, pqlab / native is at or above 1 for "
                 + "; ".join(f"{r['algorithm']} {r['operation']} ({r['ratio_fastest_rounds']:.2f}; native: "
                             f"{int(r['native_slow_rounds'])} slow of {int(r['native_rounds'])} rounds, the slowest "
                             f"{fmt_percent(r['native_worst_round'], 0)} above its fastest)"
                             for _, r in explained.iterrows())
                 + ": slow rounds of the machine, not the harness, put the ratio below 1.")
    rest = below[~(below["ratio_fastest_rounds"] >= 1)]
    if len(rest):
        text += (" On their fastest rounds too, pqlab / native stays below 1 for "
                 + "; ".join(f"{r['algorithm']} {r['operation']} ({r['ratio_fastest_rounds']:.2f})"
                             for _, r in rest.iterrows())
                 + f": slow rounds do not explain {'it' if len(rest) == 1 else 'them'}, and this run records nothing "
                 "else that would (both harnesses verify one signature again and again).")
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
        return v, *((lookup(table, alg, op, f"{col}_ci_{end}") if f"{col}_ci_{end}" in table else None) or np.nan
                    for end in ("low", "high"))

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
    portable_over_optimised_<algorithm>_<op>; ``cycles_mldsa_caveat``: :func:`conforming.paper_caveat` of `runs`."""
    out = {}
    for name, value in closing.items():
        kind, alg, op = name.split(" ")
        key = re.sub(r"[^a-z0-9]+", "_", "_".join(("python_over_native" if kind == "ratio" else
                                                   "portable_over_optimised", alg.replace("+", "plus"), op)).lower())
        out[key], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = value if value is not None else (None,) * 3
    out = {k: None if v is None or np.isnan(v) else v for k, v in out.items()}  # None: not measured
    return {**out, "cycles_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}


def write_closing_note(numbers: dict, clock: dict | None, reference: dict, run_ids: dict, durations: dict,
                       counter: dict, measurements: pd.DataFrame, tolerance: float = CLOCK_TOLERANCE) -> str:
    """The notebook's closing note (Markdown), every number from the data; `measurements`: pqlab's rows, whose
    precision it states (:func:`pqlab.publish.context.precision_markdown`)."""
    def factor(v, digits: int = 2) -> str:
        return fmt_factor(None) if v is None else fmt_factor_ci(*v, digits=digits)

    ratios = "; ".join(f"{k.split(' ', 1)[1]}: **{factor(v)}**" for k, v in numbers.items() if k.startswith("ratio"))
    sp = []
    for alg in NOTE_SPEEDUPS:
        vals = [numbers.get(f"speedup {alg} {op}") for op in SIGNATURE_OPERATIONS]
        sp.append(f"{alg}: " + ", ".join(f"{op} **{factor(v, 1)}**" for op, v in zip(SIGNATURE_OPERATIONS, vals, strict=True)))
    total = sum(durations.values())
    if clock is not None:
        timing = (f"core cycles; the counter ran at {clock['clock_ghz']:.2f} GHz (median over rows); "
                  f"{clock['consistent']} of {clock['rows']} rows lie within ±{tolerance:.0%} of their run's clock")
    elif counter["basis"] == "cycles":
        timing = (f"{counter['unit']} (rate from {counter['hz_source']}); the clock-consistency check applies to "
                  "core cycles only and was skipped")
    else:
        timing = f"no cycle counter ({counter.get('reason')}): times only"
    return (
        "### Closing note\n\n"
        f"- **Harness fidelity** (pqlab / native C runner, {per_call(counter)}, same counter, same liboqs build, "
        f"a fresh message per signature on both sides; {fmt_percent(CONFIDENCE, 0)} intervals over rounds in "
        f"brackets): {ratios}.\n"
        f"- **Optimised / portable** (portable liboqs / optimised, {per_call(counter)}): {'; '.join(sp)}.\n"
        f"- **Cycles**: {timing}. {read_costs_text(counter.get('availability') or {})}\n"
        f"- {precision_markdown(measurements)}\n"
        f"- **The study's times**: sign time = cycles / {reference['clock_hz'] / 1e9:.3f} GHz in "
        f"{reference['sign_matches']} of {reference['rows']} rows, verify time in {reference['verify_matches']} of "
        f"{reference['rows']}.\n"
        f"- Measuring took {total:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in durations.items()) + "); runs: "
        + ", ".join(f"`{v}`" for v in run_ids.values()) + "."
    )


# --------------------------------------------------------------------------- figures


def missing_figure(counter: dict, needs_cycles: bool) -> str:
    """Why a figure of this notebook has no data here (the note shown instead of it)."""
    if needs_cycles and counter["basis"] == "time_ns":
        return f"it shows cycles, and no cycle counter ran here ({counter.get('reason')})"
    return "no row of this run has a value for it (see the table above)"


#: Groups of points labelled once in crowded figures: (name prefix, label); the longest prefix wins.
SCHEMES = (("ML-DSA", "ML-DSA, Dilithium"), ("Dilithium", "ML-DSA, Dilithium"), ("Falcon", "Falcon"),
           ("SPHINCS+-SHA2", "SPHINCS+ SHA2"), ("SPHINCS+-SHAKE", "SPHINCS+ SHAKE"), ("MAYO", "MAYO"),
           ("OV-", "UOV"), ("cross", "CROSS"), ("RSA", "RSA"), ("ECDSA", "elliptic curves"),
           ("Ed", "elliptic curves"))


def scheme_of(name: str) -> str:
    """The label of the group of `name` in crowded figures (the name itself when in no group)."""
    hits = [(p, label) for p, label in SCHEMES if name.startswith(p)]
    return max(hits, key=lambda h: len(h[0]))[1] if hits else name


def _labels(df: pd.DataFrame, label_all: bool) -> pd.Series:
    """Point labels: every point's name, or (crowded) one label per group of schemes, on the point
    nearest the group's centre (in log-log coordinates); a second implementation is its own group."""
    if label_all:
        return df["name"]
    second = df["name"].str.endswith("(OpenSSL)")
    group = df["algorithm"].map(scheme_of).where(~second, df["algorithm"].map(scheme_of).str.split(",").str[0]
                                                 + " (OpenSSL)")
    x = np.log10(df["_x"].astype(float))
    y = np.log10(df["cycles_median"].astype(float))
    labels = pd.Series("", index=df.index)
    for g, idx in df.groupby(group).groups.items():
        d = (x[idx] - x[idx].mean()) ** 2 + (y[idx] - y[idx].mean()) ** 2
        labels[d.idxmin()] = g
    return labels


def _scatter_frame(rows: pd.DataFrame, operation: str, size_col: str) -> pd.DataFrame:
    keep = rows[(rows["operation"] == operation) & rows["build"].isin(["liboqs optimised", "OpenSSL"])].copy()
    keep = keep.dropna(subset=["cycles_median", size_col])
    second = (keep["build"] == "OpenSSL") & ~keep["family"].isin(CLASSICAL_PUBLIC_KEY)
    keep["name"] = keep["algorithm"].where(~second, keep["algorithm"] + " (OpenSSL)")
    keep = keep.sort_values(["table_family", size_col]).reset_index(drop=True)
    keep["point_label"] = _labels(keep.assign(_x=keep[size_col]), len(keep) <= 20)
    return keep


#: Registry families in the order of the figures' legends.
FIGURE_FAMILIES = tuple(f for f in FAMILIES if f in POST_QUANTUM + CLASSICAL_PUBLIC_KEY)


@plotting.styled
def plot_cycles_vs_bytes(rows: pd.DataFrame, operation: str, size_col: str, xlabel: str, unit: str,
                         width: float = plotting.FULL_WIDTH):
    """Median cycles (`unit`: which counter) of `operation` against a size in bytes (log-log), one colour per
    family, quartile whiskers; None without cycles."""
    df = _scatter_frame(rows, operation, size_col)
    if df.empty:
        return None
    rank = {f: i for i, f in enumerate(FIGURE_FAMILIES)}
    df = df.assign(_r=df["family"].map(rank).fillna(len(rank))).sort_values(["_r", size_col], kind="stable")
    fig = plotting.scatter(df, x=size_col, y="cycles_median", label=None, hue="family", annotate=False,
                           xlabel=xlabel, ylabel=f"{operation}: median {unit}", width=width,
                           height=3.2 if width >= 4.5 else 3.4)
    ax = fig.axes[0]
    q = df.dropna(subset=["cycles_q1", "cycles_q3"])
    ax.vlines(q[size_col], q["cycles_q1"], q["cycles_q3"], color="0.4", lw=0.6, zorder=0)
    if width >= 4.5:
        ax.legend(markerscale=1.2, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.get_legend().remove()
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, markerscale=1.2)
    named = df[df["point_label"] != ""]
    plotting.place_labels(ax, named[size_col].to_numpy(float), named["cycles_median"].to_numpy(float),
                  named["point_label"].tolist())
    return fig


def _category_order(df: pd.DataFrame, by: str, families: bool) -> pd.DataFrame:
    """Rows ordered by the sign operation's `by` (within the table families when `families`)."""
    rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    sign = df[df["operation"] == "sign"].assign(_f=lambda d: d["table_family"].map(rank) if families else 0)
    order = sign.sort_values(["_f", by])["algorithm"].tolist()
    order += sorted(set(df["algorithm"]) - set(order))
    op = {o: i for i, o in enumerate(SIGNATURE_OPERATIONS)}
    return (df.assign(_a=df["algorithm"].map({a: i for i, a in enumerate(order)}), _o=df["operation"].map(op))
            .sort_values(["_a", "_o"]).drop(columns=["_a", "_o"]))


@plotting.styled
def plot_speedups(speedups: pd.DataFrame, counter: dict, width: float = plotting.FULL_WIDTH):
    """Portable / optimised mean per call (log, 1 = no gain), by family and signing speed-up; None without one."""
    return _operation_bars(_category_order(speedups, "speedup", families=True), "speedup", True,
                           "portable / optimised", f"Portable / optimised build: {per_call(counter)}", width)


@plotting.styled
def plot_python_over_native(fidelity: pd.DataFrame, counter: dict, width: float = plotting.FULL_WIDTH):
    """pqlab / native mean per call (1 = the harness adds nothing), by native signing time; None without one."""
    return _operation_bars(_category_order(fidelity, "native_time_ns_mean", families=False), "ratio", False,
                           "pqlab / native", f"pqlab / native runner: {per_call(counter)}", width)


def _operation_bars(df: pd.DataFrame, value: str, log: bool, ylabel: str, title: str, width: float):
    """One bar (or dot) per algorithm and operation, laid out for the width; None when no bar has a value."""
    if df[value].isna().all():
        return None
    low, high = (f"{value}_ci_low", f"{value}_ci_high") if f"{value}_ci_low" in df else (None, None)
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value=value, low=low, high=high,
                                log=log, ylabel=ylabel, colors=plotting.color_map(SIGNATURE_OPERATIONS), width=width,
                                height=2.8, title=title)
    plotting.finish_ratio_bars(fig, log=log)
    return fig
