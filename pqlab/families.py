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
* :func:`check_clock` states whether each row's time follows from its cycles and the run's
  clock; :func:`tabulate_families` gives the study's tables (one per family, sorted by sign
  cycles); :func:`compute_speedups` the optimised/portable factor; :func:`compute_fidelity`
  pqlab / native per operation; :func:`compare_implementations` OpenSSL beside liboqs;
* :func:`recompute_reference` and :func:`count_reference_matches` recompute the study's time
  columns from its cycles and clock; :func:`compare_ancestors` places ML-DSA, Falcon and
  SPHINCS+ against their round-2 ancestors;
* ``describe_*`` functions write the sentences that state numbers (Markdown), and
  ``plot_*`` the figures (house style of :mod:`pqlab.plotting`).
"""
from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import plotting

STUDY = "04_signature_cycles"
REFERENCE = "04_round2_signatures"
OPERATIONS = ("keygen", "sign", "verify")
#: Table families of this notebook, in the order of the tables.
FAMILY_ORDER = ("lattice", "hash-based", "multivariate", "code-based", "classical")
#: Registry families shown together as "classical".
CLASSICAL = ("RSA", "elliptic-curve")
#: What each (backend, liboqs variant) is called in the tables.
BUILDS = {("liboqs", "default"): "liboqs optimised", ("liboqs", "generic"): "liboqs portable",
          ("cryptography", ""): "OpenSSL", ("native", "default"): "native optimised",
          ("native", "generic"): "native portable"}
#: Largest relative distance of a row's implied clock from its run's clock that still counts as consistent.
CLOCK_TOLERANCE = 0.15

#: Today's standard (or its liboqs name) for a round-2 parameter set of the study.  Dilithium's
#: parameter sets changed between rounds 2 and 3, so its pairs are by claimed NIST category
#: (round 2: "recommended" category 2, "very high" category 3); FALCON kept its sets; SPHINCS+
#: kept its SHA-256 and SHAKE256 sets (liboqs names SHA-256 "SHA2" and has the "simple" variant
#: only; the study does not say simple or robust).  Haraka, weak, medium and 768 have no heir.
ANCESTORS = (
    ("CRYSTALS-DILITHIUM", "recommended", "ML-DSA-44", "same NIST category (2)"),
    ("CRYSTALS-DILITHIUM", "very-high", "ML-DSA-65", "same NIST category (3)"),
    ("FALCON", "512", "Falcon-512", "same parameter set"),
    ("FALCON", "1024", "Falcon-1024", "same parameter set"),
)
#: The study's build labels and ours: its "opt" against our optimised build, its "ref" against the portable one.
ANCESTOR_BUILDS = {"opt": "liboqs optimised", "ref": "liboqs portable"}


def table_family(family: str) -> str:
    """The family of this notebook's tables: RSA and elliptic curves are grouped as "classical"."""
    return "classical" if family in CLASSICAL else family


def build_label(backend, variant) -> str:
    variant = "" if variant is None or (isinstance(variant, float) and np.isnan(variant)) else str(variant)
    if backend != "liboqs" and backend != "native":
        variant = ""
    return BUILDS.get((backend, variant), f"{backend} {variant}".strip())


def liboqs_signatures() -> list[str]:
    """Every signature the loaded liboqs enables (by name, sorted)."""
    from .algorithms import names

    return names(kind="sig", backend="liboqs")


def resolve_signatures(algorithms) -> list[str]:
    """`algorithms` as a list of names; the string "all" means every signature liboqs enables."""
    if isinstance(algorithms, str):
        return liboqs_signatures() if algorithms == "all" else [algorithms]
    return list(algorithms)


def declare_sizes(algorithms: Sequence[str]) -> pd.DataFrame:
    """Public key, secret key and (maximum) signature bytes that liboqs declares per parameter set."""
    from .backends.liboqs import family_of
    from .liboqs import import_oqs

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

    runs: dict  # variant -> pqlab.results.Run
    native: object | None  # pqlab.results.Run of the C runner (backend "native")
    params: dict = field(default_factory=dict)
    durations_s: dict = field(default_factory=dict)

    @property
    def run_ids(self) -> dict:
        out = {v: r.run_id for v, r in self.runs.items()}
        if self.native is not None:
            out["native"] = self.native.run_id
        return out


def check_variant(run, expected: str) -> dict:
    """Raise unless `run` loaded the `expected` liboqs build, by liboqs's own build record.

    The record is the ``oqsconfig.h`` installed with the library the worker had mapped:
    the default build is a distributable build (``OQS_DIST_BUILD``, CPU features chosen at
    run time), the generic one has ``OQS_OPT_TARGET=generic`` and no ``OQS_DIST_BUILD``.
    Every liboqs row of the run must name the same variant.  Returns the run's liboqs metadata.
    """
    info = run.meta.get("liboqs") or {}
    config = info.get("build_config") or {}
    got = info.get("variant")
    if expected == "default":
        ok = got == "default" and config.get("OQS_DIST_BUILD") == "1"
    elif expected == "generic":
        ok = got == "generic" and config.get("OQS_OPT_TARGET") == "generic" and "OQS_DIST_BUILD" not in config
    else:
        ok = got == expected
    rows = run.measurements[run.measurements["backend"] == "liboqs"]
    row_variants = set(rows["variant"].dropna().astype(str))
    if not ok or (row_variants and row_variants != {expected}):
        raise RuntimeError(f"run {run.run_id} was to use the {expected} liboqs build but reports "
                           f"{got!r} ({info.get('liboqs_path', '?')}, build config {config}); "
                           f"its rows name {sorted(row_variants)}")
    return info


def measure_signatures(algorithms="all", classical: Sequence[str] = (), second: Sequence[str] = (), *,
                       variants: Sequence[str] = ("default", "generic"), message_bytes: int = 100,
                       budget_s: float = 0.5, min_samples: int = 3, native_algorithms=None,
                       native_budget_s: float | None = None, study: str = STUDY, folder=None,
                       timeout_s: float | None = None) -> SignatureStudy:
    """Measure keygen, sign and verify of every signature in each liboqs build, and natively.

    `algorithms`: liboqs names (or "all"); they run once per build in `variants`, each in its own
    worker process.  `classical` and `second` (e.g. "ML-DSA-44@cryptography") do not use liboqs
    and run in the default worker only.  `native_algorithms` (default: `algorithms`; empty: none)
    are measured by the C runner on the default build with one fixed message, as pqlab signs one.
    `budget_s` is the sampling time per operation; at least `min_samples` are always taken.
    """
    from . import machine
    from .bench import bench_in_worker, new_run_id
    from .native import native_measurements
    from .results import Run
    from .schema import SCHEMA_VERSION

    names = resolve_signatures(algorithms)
    native_names = names if native_algorithms is None else resolve_signatures(native_algorithms)
    native_budget_s = budget_s if native_budget_s is None else native_budget_s
    params = {"algorithms": names, "classical": list(classical), "second": list(second),
              "variants": list(variants), "message_bytes": message_bytes, "budget_s": budget_s,
              "min_samples": min_samples, "native_algorithms": native_names, "native_budget_s": native_budget_s}
    runs, durations = {}, {}
    for variant in variants:
        todo = names + (list(classical) + list(second) if variant == "default" else [])
        t0 = time.perf_counter()
        run = bench_in_worker(todo, variant=variant, message_bytes=message_bytes, budget_s=budget_s,
                              min_samples=min_samples, study=study, folder=folder, timeout_s=timeout_s)
        durations[variant] = time.perf_counter() - t0
        check_variant(run, variant)
        runs[variant] = run
    native_run = None
    if native_names:
        t0 = time.perf_counter()
        run_id = new_run_id(f"{study}-native")
        started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        meta = machine.collect({**params, "method": "native C runner, fixed message, default build"}, liboqs=False)
        df = native_measurements(native_names, message_bytes=message_bytes, budget_s=native_budget_s,
                                 variant="default", fixed_message=True, min_samples=min_samples, warmup=1,
                                 run_id=run_id, started_at=started, machine_id=meta["machine_id"], study=study)
        meta.update(study=study, started_at=started, status="complete", schema_version=SCHEMA_VERSION,
                    native={"variant": "default", "fixed_message": True})
        native_run = Run.from_rows(run_id, df.to_dict("records"), [], [], meta)
        native_run.save(folder)
        durations["native"] = time.perf_counter() - t0
    return SignatureStudy(runs, native_run, params, durations)


# --------------------------------------------------------------------------- tidy rows


def _key(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["variant"] = df["variant"].fillna("").astype(str)
    return df


def sample_clock(samples: pd.DataFrame) -> pd.DataFrame:
    """Median over samples of cycles / time (GHz) per algorithm, backend, variant and operation."""
    if samples is None or samples.empty or samples["cycles"].isna().all():
        return pd.DataFrame(columns=["algorithm", "backend", "variant", "operation", "sample_ghz"])
    s = _key(samples.dropna(subset=["cycles"]))
    s["ghz"] = s["cycles"].astype(float) / s["time_ns"].astype(float)
    return (s.groupby(["algorithm", "backend", "variant", "operation"], as_index=False)["ghz"].median()
            .rename(columns={"ghz": "sample_ghz"}))


def collect_rows(study: SignatureStudy | None = None, *, runs: Sequence = (), native=None) -> pd.DataFrame:
    """One row per measured algorithm, build and operation (pqlab runs and the native run).

    Adds `build` ("liboqs optimised", "liboqs portable", "OpenSSL", "native optimised"),
    `table_family`, sizes (from the default run's size table, else the run's own), the
    implied clock of the medians (`implied_ghz` = cycles_median / time_ns_median) and, where
    raw samples exist, the median of the per-sample clocks (`sample_ghz`).  The do-nothing
    call (`noop`) and failed operations are left out (see :func:`failed_rows`).
    """
    if study is not None:
        runs = list(study.runs.values())
        native = study.native
    frames, sizes = [], []
    for run in runs:
        m = _key(run.measurements)
        m = m.merge(sample_clock(run.samples), on=["algorithm", "backend", "variant", "operation"], how="left")
        m["harness_noop_ns"] = run.meta.get("harness_overhead_ns")
        frames.append(m)
        sizes.append(run.sizes)
    if native is not None:
        frames.append(_key(native.measurements))
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[(rows["operation"] != "noop") & rows["verified"].fillna(False).astype(bool)].copy()
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
        from .backends.liboqs import family_of

        missing = rows["family"].isna()
        rows.loc[missing, "family"] = rows.loc[missing, "algorithm"].map(family_of)
    rows["table_family"] = rows["family"].map(table_family)
    rows["build"] = [build_label(b, v) for b, v in zip(rows["backend"], rows["variant"], strict=True)]
    rows["implied_ghz"] = rows["cycles_median"].astype(float) / rows["time_ns_median"].astype(float)
    if "sample_ghz" not in rows:
        rows["sample_ghz"] = np.nan
    return rows.reset_index(drop=True)


def failed_rows(study: SignatureStudy) -> pd.DataFrame:
    """Operations that failed (an exception or a wrong output), with the reason in `flags`."""
    frames = [r.measurements for r in study.runs.values()]
    if study.native is not None:
        frames.append(study.native.measurements)
    m = pd.concat(frames, ignore_index=True)
    bad = m[(m["operation"] != "noop") & ~m["verified"].fillna(False).astype(bool)]
    return bad[["algorithm", "backend", "variant", "operation", "flags"]].reset_index(drop=True)


# --------------------------------------------------------------------------- cycles and time


def check_clock(rows: pd.DataFrame, tolerance: float = CLOCK_TOLERANCE) -> pd.DataFrame:
    """Does each row's time follow from its cycles?  One row per measurement, with the verdict.

    A row's implied clock is cycles_median / time_ns_median (GHz).  The run's clock is the
    median of its rows' implied clocks (the counter counts user-space core cycles of the
    thread; on a virtual machine this is the effective clock of the vCPU).  A row is
    consistent when its implied clock lies within `tolerance` of its run's clock.  Below the
    band, time ran on without cycles: the process was descheduled or in the kernel (page
    faults, system calls), which wall time includes and user cycles do not.  Above it, cycles
    ran faster than the clock: never expected.
    """
    cols = ["table_family", "algorithm", "build", "operation", "run_id", "samples", "cycles_median",
            "time_ns_median", "implied_ghz", "sample_ghz", "cycles_source", "flags"]
    out = rows[[c for c in cols if c in rows]].copy()
    out["run_clock_ghz"] = out.groupby("run_id")["implied_ghz"].transform("median")
    out["deviation"] = out["implied_ghz"] / out["run_clock_ghz"] - 1
    out["consistent"] = out["deviation"].abs() <= tolerance
    out["verdict"] = np.where(out["consistent"], "consistent",
                              np.where(out["deviation"] < 0, "time without cycles: descheduled or in the kernel",
                                       "cycles faster than the clock"))
    out.loc[out["implied_ghz"].isna(), ["consistent", "verdict"]] = [False, "no cycles"]
    return out.reset_index(drop=True)


def summarize_clock(consistency: pd.DataFrame, nominal_mhz: float | None = None) -> dict:
    """Numbers for the text: the clock, its spread, rows outside the band, the nominal clock."""
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
    """The wide table of the study: one row per algorithm and build, cycles (median, quartiles)
    and measured time (median, µs) per operation, and the sizes in bytes; sorted by family, then
    sign cycles."""
    rows = rows if builds is None else rows[rows["build"].isin(builds)]
    ids = ["table_family", "algorithm", "build", "nist_level", "public_key_bytes", "secret_key_bytes",
           "signature_max_bytes"]
    base = rows.drop_duplicates(["algorithm", "build"])[ids].set_index(["algorithm", "build"])
    parts = [base]
    for op in OPERATIONS:
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
    order = {f: i for i, f in enumerate(FAMILY_ORDER)}
    wide["_f"] = wide["family"].map(order).fillna(len(order))
    wide = wide.sort_values(["_f", "sign_cycles", "algorithm"], na_position="last").drop(columns="_f")
    first = ["family", "algorithm", "build", "nist_level", "pk_bytes", "sk_bytes", "sig_bytes"]
    return wide[first + [c for c in wide.columns if c not in first]].reset_index(drop=True)


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
            out[fam] = sub.sort_values(["sign_cycles", "algorithm"], na_position="last").reset_index(drop=True)
    return out


def _ratio_table(rows: pd.DataFrame, num: str, den: str, name: str) -> pd.DataFrame:
    keep = ["algorithm", "table_family", "operation", "cycles_median", "time_ns_median"]
    a = rows[rows["build"] == num][keep + ["build"]].drop_duplicates(["algorithm", "operation"])
    b = rows[rows["build"] == den][keep].drop_duplicates(["algorithm", "operation"])
    m = b.merge(a.drop(columns=["table_family", "build"]), on=["algorithm", "operation"], suffixes=("_den", "_num"))
    m[name] = m["cycles_median_num"] / m["cycles_median_den"]
    m[f"{name}_time"] = m["time_ns_median_num"] / m["time_ns_median_den"]
    return m


def compute_speedups(rows: pd.DataFrame) -> pd.DataFrame:
    """Speed-up of the optimised liboqs build per algorithm and operation: portable median cycles
    / optimised median cycles (and the same from median times)."""
    m = _ratio_table(rows, "liboqs portable", "liboqs optimised", "speedup")
    m = m.rename(columns={"cycles_median_den": "optimised_cycles", "cycles_median_num": "portable_cycles",
                          "time_ns_median_den": "optimised_ns", "time_ns_median_num": "portable_ns"})
    return _order(m)[["table_family", "algorithm", "operation", "optimised_cycles", "portable_cycles", "speedup",
                      "optimised_ns", "portable_ns", "speedup_time"]]


def compute_fidelity(rows: pd.DataFrame, build: str = "liboqs optimised") -> pd.DataFrame:
    """What the Python harness adds: pqlab median cycles / native median cycles per algorithm and
    operation (same liboqs build, same fixed message), and the difference in cycles."""
    native = "native " + build.split()[-1]
    m = _ratio_table(rows, build, native, "ratio")
    m = m.rename(columns={"cycles_median_den": "native_cycles", "cycles_median_num": "pqlab_cycles",
                          "time_ns_median_den": "native_ns", "time_ns_median_num": "pqlab_ns"})
    m["added_cycles"] = m["pqlab_cycles"] - m["native_cycles"]
    return _order(m)[["table_family", "algorithm", "operation", "native_cycles", "pqlab_cycles", "ratio",
                      "added_cycles", "native_ns", "pqlab_ns", "ratio_time"]]


def compare_implementations(rows: pd.DataFrame, other: str = "OpenSSL",
                            base: str = "liboqs optimised") -> pd.DataFrame:
    """Algorithms measured through a second implementation: its median cycles / liboqs's."""
    m = _ratio_table(rows, other, base, "ratio")
    m = m.rename(columns={"cycles_median_den": "liboqs_cycles", "cycles_median_num": f"{other}_cycles",
                          "time_ns_median_den": "liboqs_ns", "time_ns_median_num": f"{other}_ns"})
    return _order(m)[["algorithm", "operation", "liboqs_cycles", f"{other}_cycles", "ratio", "liboqs_ns",
                      f"{other}_ns"]]


def _order(df: pd.DataFrame) -> pd.DataFrame:
    fam = {f: i for i, f in enumerate(FAMILY_ORDER)}
    op = {o: i for i, o in enumerate(OPERATIONS)}
    key = df.assign(_f=df.get("table_family", pd.Series("", index=df.index)).map(fam).fillna(99),
                    _o=df["operation"].map(op))
    return key.sort_values(["_f", "algorithm", "_o"]).drop(columns=["_f", "_o"]).reset_index(drop=True)


def lookup(table: pd.DataFrame, algorithm: str, operation: str, column: str):
    """One value of a ratio table, or None when that algorithm/operation was not measured."""
    hit = table[(table["algorithm"] == algorithm) & (table["operation"] == operation)]
    return None if hit.empty or pd.isna(hit[column].iloc[0]) else float(hit[column].iloc[0])


# --------------------------------------------------------------------------- the study's numbers


def recompute_reference(ref: pd.DataFrame, clock_hz: float | None = None) -> pd.DataFrame:
    """The study's rows with their time columns recomputed from cycles and the stated clock.

    ``*_time_recomputed_s`` = cycles / clock, rounded to the study's 6 decimals; ``*_matches``
    says whether the published time equals it; ``verify_time_belongs_to`` names the rows whose
    recomputed verify time equals the published one (where the value came from).
    """
    clock = float(clock_hz or ref.attrs["source"]["clock_hz"])
    out = ref.copy()
    for op in ("sign", "verify"):
        out[f"{op}_time_recomputed_s"] = (out[f"{op}_cycles"] / clock).round(6)
        out[f"{op}_time_matches"] = np.isclose(out[f"{op}_time_s"], out[f"{op}_time_recomputed_s"], rtol=0, atol=1e-9)
    recomputed = out["verify_time_recomputed_s"].to_numpy()
    out["verify_time_belongs_to"] = [
        ",".join(str(r) for r in out["row"][np.isclose(recomputed, v, rtol=0, atol=1e-9)]) or "none"
        for v in out["verify_time_s"]]
    out.attrs = ref.attrs
    return out


def count_reference_matches(recomputed: pd.DataFrame) -> dict:
    """How many published times follow from the cycles; whether the verify column is a permutation."""
    pub = np.sort(recomputed["verify_time_s"].to_numpy())
    rec = np.sort(recomputed["verify_time_recomputed_s"].to_numpy())
    per_family = (recomputed.groupby("family", sort=False)[["sign_time_matches", "verify_time_matches"]]
                  .sum().astype(int))
    per_family.insert(0, "rows", recomputed.groupby("family", sort=False).size())
    return {"rows": int(len(recomputed)), "sign_matches": int(recomputed["sign_time_matches"].sum()),
            "verify_matches": int(recomputed["verify_time_matches"].sum()),
            "verify_is_permutation": bool(len(pub) == len(rec) and np.allclose(pub, rec, rtol=0, atol=1e-9)),
            "verify_from_other_rows": int((~recomputed["verify_time_matches"]
                                           & (recomputed["verify_time_belongs_to"] != "none")).sum()),
            "clock_hz": float(recomputed.attrs["source"]["clock_hz"]), "per_family": per_family}


def sphincs_heir(parameter: str) -> str | None:
    """liboqs's name for a round-2 SPHINCS+ parameter ("sha256-128f" -> SPHINCS+-SHA2-128f-simple)."""
    m = re.fullmatch(r"(sha256|shake256)-(\d{3}[fs])", parameter)
    if not m:
        return None
    return f"SPHINCS+-{'SHA2' if m.group(1) == 'sha256' else 'SHAKE'}-{m.group(2)}-simple"


def ancestor_pairs(ref: pd.DataFrame) -> pd.DataFrame:
    """(scheme, parameter) of the study -> today's algorithm, with the basis of the pairing."""
    pairs = [dict(scheme=s, parameter=p, algorithm=a, basis=b) for s, p, a, b in ANCESTORS]
    for p in sorted(ref.loc[ref["scheme"] == "SPHINCS+", "parameter"].unique()):
        heir = sphincs_heir(p)
        if heir:
            pairs.append(dict(scheme="SPHINCS+", parameter=p, algorithm=heir,
                              basis="same parameter set (round 2: simple or robust not stated)"))
    return pd.DataFrame(pairs)


def compare_ancestors(ref: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Today's ML-DSA, Falcon and SPHINCS+ beside their round-2 ancestors, in cycles.

    The study's "opt" rows face our optimised build and its "ref" rows our portable one; where
    the study has several rows for one set and build (SPHINCS+ sha256-128f) their median is used.
    ``*_ratio`` = today / round 2 (below 1: today needs fewer cycles).
    """
    pairs = ancestor_pairs(ref)
    r2 = (ref.groupby(["scheme", "parameter", "build"], as_index=False)
          .agg(r2_pk_bytes=("public_key_bytes", "first"), r2_sign_cycles=("sign_cycles", "median"),
               r2_verify_cycles=("verify_cycles", "median"), r2_rows=("row", "size")))
    r2 = r2.merge(pairs, on=["scheme", "parameter"])
    r2["our_build"] = r2["build"].map(ANCESTOR_BUILDS)
    today = tabulate_signatures(rows)[["algorithm", "build", "pk_bytes", "sign_cycles", "verify_cycles"]]
    today = today.rename(columns={"build": "our_build", "pk_bytes": "pk_bytes_today",
                                  "sign_cycles": "sign_cycles_today", "verify_cycles": "verify_cycles_today"})
    m = r2.merge(today, on=["algorithm", "our_build"], how="inner")
    m["sign_ratio"] = m["sign_cycles_today"].astype(float) / m["r2_sign_cycles"]
    m["verify_ratio"] = m["verify_cycles_today"].astype(float) / m["r2_verify_cycles"]
    m = m.rename(columns={"build": "r2_build", "parameter": "r2_parameter", "scheme": "r2_scheme"})
    cols = ["r2_scheme", "r2_parameter", "r2_build", "algorithm", "our_build", "basis", "r2_pk_bytes",
            "pk_bytes_today", "r2_sign_cycles", "sign_cycles_today", "sign_ratio", "r2_verify_cycles",
            "verify_cycles_today", "verify_ratio"]
    order = {s: i for i, s in enumerate(["CRYSTALS-DILITHIUM", "FALCON", "SPHINCS+"])}
    m = m.assign(_s=m["r2_scheme"].map(order)).sort_values(["_s", "algorithm", "r2_build"]).drop(columns="_s")
    return m[cols].reset_index(drop=True)


# --------------------------------------------------------------------------- text


def _fmt_cycles(c) -> str:
    if c is None or pd.isna(c):
        return "n/a"
    c = float(c)
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if c >= scale:
            return f"{c / scale:.3g} {unit}cycles"
    return f"{c:.0f} cycles"


def _fmt_x(v, digits: int = 2) -> str:
    return "not measured in this run" if v is None or pd.isna(v) else f"{v:.{digits}f}×"


def describe_reference(counts: dict) -> str:
    """The study's time columns against its cycles and clock (Markdown)."""
    ghz = counts["clock_hz"] / 1e9
    perm = ("a permutation of the values recomputed from the verify cycles: the right numbers, attached "
            "to the wrong rows" if counts["verify_is_permutation"] else "not a permutation of the recomputed values")
    return (f"Recomputing the study's times as cycles / {ghz:.3f} GHz (its stated clock), rounded to its "
            f"six decimals: the **sign** time matches in **{counts['sign_matches']} of {counts['rows']}** rows, "
            f"the **verify** time in only **{counts['verify_matches']} of {counts['rows']}**. The published verify "
            f"column is {perm}; {counts['verify_from_other_rows']} of the "
            f"{counts['rows'] - counts['verify_matches']} mismatching rows carry exactly the recomputed verify time "
            f"of another row. Below, times are only ever measured, never derived from cycles with an assumed clock.")


def describe_clock(summary: dict, tolerance: float = CLOCK_TOLERANCE) -> str:
    """Cycles against time in our runs (Markdown)."""
    nominal = (f"; /proc/cpuinfo reports {summary['nominal_ghz']:.2f} GHz, the clock the hypervisor "
               f"announces, not the one the core runs at" if summary.get("nominal_ghz") else "")
    n_out = summary["rows"] - summary["consistent"]
    text = (f"Over {summary['rows']} measured rows the implied clock (median cycles / median time) has a median of "
            f"**{summary['clock_ghz']:.2f} GHz** (quartiles {summary['clock_q1']:.2f}–{summary['clock_q3']:.2f} GHz)"
            f"{nominal}. {summary['consistent']} rows lie within ±{tolerance:.0%} of their run's clock")
    if n_out:
        worst = summary["outside"].sort_values("implied_ghz").head(5)
        listed = ", ".join(f"{r.algorithm} {r.operation} ({r.build}, {r.implied_ghz:.2f} GHz)" for r in worst.itertuples())
        text += (f"; {n_out} do not: {listed}{' …' if n_out > 5 else ''}. Their wall time includes time without "
                 f"user cycles (descheduling by other load, or kernel work such as page faults); their cycles "
                 f"are the better measure.")
    else:
        text += ", i.e. all of them: every time shown follows from its cycles at the measured clock."
    return text


def describe_speedups(speedups: pd.DataFrame, faster: float = 1.1) -> str:
    """The optimised build's speed-up (Markdown)."""
    s = speedups.dropna(subset=["speedup"])
    if s.empty:
        return "The portable build was not measured in this run."
    sign = s[s["operation"] == "sign"].sort_values("speedup")
    by_op = s.groupby("operation")["speedup"].median()
    ops = ", ".join(f"{op} {by_op[op]:.2f}×" for op in OPERATIONS if op in by_op)
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
    return text


def describe_fidelity(fidelity: pd.DataFrame, noop_cycles: float | None = None) -> str:
    """What the Python harness adds over the native runner (Markdown)."""
    f = fidelity.dropna(subset=["ratio"])
    if f.empty:
        return "The native runner was not run."
    by_op = f.groupby("operation")["ratio"].median()
    ops = ", ".join(f"{op} {by_op[op]:.2f}" for op in OPERATIONS if op in by_op)
    worst = f.sort_values("ratio").iloc[-1]
    text = (f"pqlab / native median cycles (median over {f['algorithm'].nunique()} algorithms): {ops}. "
            f"The largest ratio is {worst['algorithm']} {worst['operation']}'s ({worst['ratio']:.2f}, "
            f"{_fmt_cycles(worst['added_cycles'])} added).")
    fast, slow = f[f["native_cycles"] < 1e6], f[f["native_cycles"] >= 1e7]
    if len(fast) and len(slow):
        text += (f" Operations under 1 Mcycles: median ratio {fast['ratio'].median():.2f} ({len(fast)} operations); "
                 f"over 10 Mcycles: {slow['ratio'].median():.2f} ({len(slow)}).")
    if noop_cycles:
        text += f" A do-nothing call through the harness costs {noop_cycles:.0f} cycles."
    return text


def describe_ancestors(ancestors: pd.DataFrame) -> str:
    """Today's standards against their round-2 ancestors (Markdown)."""
    if ancestors.empty:
        return "No heir of the study's round-2 schemes was measured in this run."
    parts = []
    for build, label in (("opt", "optimised"), ("ref", "portable")):
        sub = ancestors[ancestors["r2_build"] == build].drop_duplicates("algorithm")
        if len(sub):
            parts.append(f"against its {label} rows (study's \"{build}\"): " + "; ".join(
                f"{r.algorithm} signs in {r.sign_ratio:.2g}× the cycles of {r.r2_scheme} {r.r2_parameter} and "
                f"verifies in {r.verify_ratio:.2g}×" for r in sub.itertuples()))
    return ("Today / round 2, in cycles (the study on a Haswell Core i5-4300U, ours on this machine), "
            + "; ".join(parts) + ". Cycles on two micro-architectures a decade apart compare only roughly.")


NOTE_RATIOS = (("ML-DSA-44", "sign"), ("Falcon-512", "verify"), ("SPHINCS+-SHA2-128f-simple", "sign"))
NOTE_SPEEDUPS = ("ML-DSA-44", "Falcon-512", "SPHINCS+-SHAKE-128f-simple")


def closing_numbers(fidelity: pd.DataFrame, speedups: pd.DataFrame) -> dict:
    """The closing note's numbers: pqlab/native ratios and optimised/portable speed-ups."""
    out = {}
    for alg, op in NOTE_RATIOS:
        out[f"ratio {alg} {op}"] = lookup(fidelity, alg, op, "ratio")
    for alg in NOTE_SPEEDUPS:
        for op in OPERATIONS:
            out[f"speedup {alg} {op}"] = lookup(speedups, alg, op, "speedup")
    return out


def write_closing_note(numbers: dict, clock: dict, reference: dict, run_ids: dict, durations: dict) -> str:
    """The notebook's closing note (Markdown), every number from the data."""
    ratios = "; ".join(f"{k.split(' ', 1)[1]}: **{_fmt_x(v)}**" for k, v in numbers.items() if k.startswith("ratio"))
    sp = []
    for alg in NOTE_SPEEDUPS:
        vals = [numbers.get(f"speedup {alg} {op}") for op in OPERATIONS]
        sp.append(f"{alg}: " + ", ".join(f"{op} **{_fmt_x(v, 1)}**" for op, v in zip(OPERATIONS, vals, strict=True)))
    total = sum(durations.values())
    return (
        "### Closing note\n\n"
        f"- **Harness fidelity** (pqlab median cycles / native C runner's, same liboqs build, same fixed message): "
        f"{ratios}.\n"
        f"- **Optimised / portable** (portable liboqs median cycles / optimised): {'; '.join(sp)}.\n"
        f"- **Cycles and time**: the counter ran at {clock['clock_ghz']:.2f} GHz (median over rows); "
        f"{clock['consistent']} of {clock['rows']} rows lie within ±{CLOCK_TOLERANCE:.0%} of it.\n"
        f"- **The study's times**: sign time = cycles / {reference['clock_hz'] / 1e9:.3f} GHz in "
        f"{reference['sign_matches']} of {reference['rows']} rows, verify time in {reference['verify_matches']} of "
        f"{reference['rows']}.\n"
        f"- Measuring took {total:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in durations.items()) + "); runs: "
        + ", ".join(f"`{v}`" for v in run_ids.values()) + "."
    )


def number_name(text: str) -> str:
    """A file-safe name for :func:`pqlab.export.save_number` ("SPHINCS+-SHA2" -> "SPHINCSplus-SHA2")."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text.replace("+", "plus")).strip("_")


# --------------------------------------------------------------------------- figures


#: Scheme of an algorithm name, by longest prefix (labels one point per scheme in crowded figures).
SCHEMES = ("ML-DSA", "Dilithium", "Falcon-padded", "Falcon", "SPHINCS+-SHA2", "SPHINCS+-SHAKE", "MAYO", "OV-",
           "cross-rsdpg", "cross-rsdp", "RSA", "ECDSA", "Ed25519", "Ed448")


def scheme_of(name: str) -> str:
    hits = [p for p in SCHEMES if name.startswith(p)]
    return max(hits, key=len).rstrip("-") if hits else name


def _labels(df: pd.DataFrame, label_all: bool) -> pd.Series:
    """Point labels: every point's name, or (crowded) one per scheme and build: its lowest NIST level."""
    if label_all:
        return df["name"]
    ranked = df.assign(_scheme=df["algorithm"].map(scheme_of) + df["build"],
                       _level=pd.to_numeric(df["nist_level"], errors="coerce").fillna(0))
    ranked = ranked.sort_values(["_scheme", "_level", "cycles_median"])
    first = ranked.index[~ranked["_scheme"].duplicated()]
    return df["name"].where(df.index.isin(first), "")


def _scatter_frame(rows: pd.DataFrame, operation: str, size_col: str) -> pd.DataFrame:
    keep = rows[(rows["operation"] == operation) & rows["build"].isin(["liboqs optimised", "OpenSSL"])].copy()
    keep = keep.dropna(subset=["cycles_median", size_col])
    second = (keep["build"] == "OpenSSL") & ~keep["family"].isin(CLASSICAL)
    keep["name"] = keep["algorithm"].where(~second, keep["algorithm"] + " (OpenSSL)")
    keep = keep.sort_values(["table_family", size_col]).reset_index(drop=True)
    keep["point_label"] = _labels(keep, len(keep) <= 20)
    return keep


def plot_cycles_vs_bytes(rows: pd.DataFrame, operation: str, size_col: str, xlabel: str):
    """Median cycles of `operation` against a size in bytes (log-log), one colour per family."""
    df = _scatter_frame(rows, operation, size_col)
    fig = plotting.scatter(df, x=size_col, y="cycles_median", label="point_label", hue="family",
                           xlabel=xlabel, ylabel=f"{operation} cycles (median)", width=plotting.FULL_WIDTH * 0.62,
                           height=3.2)
    ax = fig.axes[0]
    q = df.dropna(subset=["cycles_q1", "cycles_q3"])
    ax.vlines(q[size_col], q["cycles_q1"], q["cycles_q3"], color="0.4", lw=0.6, zorder=0)
    ax.legend(fontsize=6, markerscale=1.2, loc="best")
    return fig


def plot_speedups(speedups: pd.DataFrame):
    """Portable / optimised median cycles per algorithm and operation (log scale, 1 = no gain)."""
    df = speedups.copy()
    order = (df[df["operation"] == "sign"].sort_values(["table_family", "speedup"])["algorithm"].tolist())
    df["algorithm"] = pd.Categorical(df["algorithm"], categories=order + sorted(set(df["algorithm"]) - set(order)),
                                     ordered=True)
    df = df.sort_values(["algorithm", "operation"])
    df["algorithm"] = df["algorithm"].astype(str)
    n = df["algorithm"].nunique()
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value="speedup", log=True,
                                ylabel="speed-up of the optimised build\n(portable / optimised cycles)",
                                colors=plotting.color_map(OPERATIONS), height=2.6 if n <= 12 else 3.4)
    _finish_bars(fig, n)
    return fig


def plot_fidelity(fidelity: pd.DataFrame):
    """pqlab / native median cycles per algorithm and operation (1 = the harness adds nothing)."""
    df = fidelity.copy()
    order = (df[df["operation"] == "sign"].sort_values(["table_family", "native_cycles"])["algorithm"].tolist())
    df["algorithm"] = pd.Categorical(df["algorithm"], categories=order + sorted(set(df["algorithm"]) - set(order)),
                                     ordered=True)
    df = df.sort_values(["algorithm", "operation"])
    df["algorithm"] = df["algorithm"].astype(str)
    n = df["algorithm"].nunique()
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value="ratio", log=False,
                                ylabel="pqlab / native cycles (median)", colors=plotting.color_map(OPERATIONS),
                                height=2.6 if n <= 12 else 3.4)
    _finish_bars(fig, n)
    return fig


def _finish_bars(fig, n: int) -> None:
    ax = fig.axes[0]
    ax.axhline(1.0, color="0.2", lw=0.8, ls="--", zorder=0)
    if n > 12:
        ax.tick_params(axis="x", labelrotation=90, labelsize=5.5)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("center")
    ax.set_xlim(-0.6, n - 0.4)
    ax.grid(axis="x", visible=False)
    ax.legend(ncols=3, loc="upper left", fontsize=6)
