"""Notebook 04's tables: the study's wide table and one table per family (sorted by signing cycles, as the
study's were), and the ratios between builds and harnesses (optimised / portable, pqlab / native, OpenSSL /
liboqs, today / round 2) with their intervals over rounds and how each side's rounds ran."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.core.formatting import Column
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import ratio_ci, ratio_to_published, round_interval
from pqlab.runners.fidelity import fastest_rounds
from pqlab.studies.signature_cycles.measure import BUILDS, FAMILY_ORDER, SIGNATURE_OPERATIONS, SignatureStudy


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
    ids = ["table_family", "algorithm", "build", "counter", "nist_level", "public_key_bytes",
           "secret_key_bytes", "signature_max_bytes"]
    base = rows.drop_duplicates(["algorithm", "build"])[ids].set_index(["algorithm", "build"])
    parts = [base]
    for op in SIGNATURE_OPERATIONS:
        sub = (rows[rows["operation"] == op].drop_duplicates(["algorithm", "build"])
               .set_index(["algorithm", "build"]))
        parts.append(pd.DataFrame({f"{op}_cycles": _cycles_int(sub["cycles_median"]),
                                   f"{op}_cycles_q1": _cycles_int(sub["cycles_q1"]),
                                   f"{op}_cycles_q3": _cycles_int(sub["cycles_q3"]),
                                   f"{op}_us": convert_unit(sub["time_ns_median"].astype(float), "ns",
                                                            "µs")}))
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
    """The paper columns of :func:`tabulate_families`' tables: sizes, the median cycles of each operation
    where a counter ran (else keygen's time too), and the sign and verify times."""

    cycles_cols = ([f"{op}_cycles" for op in SIGNATURE_OPERATIONS] if counter["basis"] == "cycles"
                   else [Column("keygen_us", "Keygen")])
    return ["algorithm", "build", "nist_level", Column("pk_bytes", "Public key"),
            Column("sig_bytes", "Signature"), *cycles_cols, Column("sign_us", "Sign"),
            Column("verify_us", "Verify")]


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
            out[fam] = (sub.sort_values([_sort_key(sub), "algorithm"], na_position="last")
                        .reset_index(drop=True))
    return out


def _sort_key(wide: pd.DataFrame) -> str:
    return "sign_cycles" if "sign_cycles" in wide else "sign_us"


def _ratio_table(rows: pd.DataFrame, num: str, den: str, name: str, sides: tuple[str, str],
                 basis: str = "cycles") -> pd.DataFrame:
    """`num` build / `den` build per algorithm and operation: `name` from the mean `basis` (cycles,
    or time_ns where no counter ran) per call, `name`_median from the medians (see
    :func:`sample_stats` for why the mean leads); columns ``<side>_<basis>_mean`` and ``_median``
    with `sides` = (den, num) names, each side's mean time and, where `rows` has them, each side's
    ``<side>_implementation`` and ``<side>_backend`` (what ran it)."""
    values = list(dict.fromkeys([f"{basis}_mean", f"{basis}_median", "time_ns_mean"]))
    values += [c for c in ("implementation", "backend") if c in rows]  # what ran each side, for the prose
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
    return _order(m)[["table_family", "algorithm", "operation", f"optimised_{basis}_mean",
                      f"portable_{basis}_mean", "speedup", f"optimised_{basis}_median",
                      f"portable_{basis}_median", "speedup_median", *_sides(m, ("optimised", "portable"))]]


def _sides(m: pd.DataFrame, sides) -> list[str]:
    """The columns that say what ran each of `sides` (implementation and backend), where `m` has them."""
    return [f"{side}_{c}" for side in sides for c in ("implementation", "backend") if f"{side}_{c}" in m]


def compute_python_over_native(rows: pd.DataFrame, basis: str = "cycles",
                               build: str = "liboqs optimised") -> pd.DataFrame:
    """What pqlab's path adds: pqlab / native mean `basis` per call (`ratio`) for the same
    operation, liboqs build, message length and counter; what it adds per call; the ratio of medians."""
    m = _ratio_table(rows, build, "native " + build.split()[-1], "ratio", ("native", "pqlab"), basis)
    m[f"added_{basis}"] = m[f"pqlab_{basis}_mean"] - m[f"native_{basis}_mean"]
    cols = ["table_family", "algorithm", "operation", f"native_{basis}_mean", f"pqlab_{basis}_mean", "ratio",
            f"added_{basis}", f"native_{basis}_median", f"pqlab_{basis}_median", "ratio_median",
            "native_time_ns_mean", *_sides(m, ("native", "pqlab"))]
    return _order(m)[list(dict.fromkeys(cols))]


def compare_implementations(rows: pd.DataFrame, other: str = "OpenSSL", base: str = "liboqs optimised",
                            basis: str = "cycles") -> pd.DataFrame:
    """Algorithms measured through a second implementation: its mean `basis` per call / liboqs's."""
    m = _ratio_table(rows, other, base, "ratio", ("liboqs", other), basis)
    return _order(m)[["algorithm", "operation", f"liboqs_{basis}_mean", f"{other}_{basis}_mean", "ratio",
                      f"liboqs_{basis}_median", f"{other}_{basis}_median", "ratio_median",
                      *_sides(m, ("liboqs", other))]]


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
    interval over rounds of `num` build's `stat` over `den` build's, from both builds' raw samples; `name`
    becomes the estimate it is about (each round's `stat` per call: :func:`pqlab.measure.stats.ratio_ci`), so
    a ratio lies inside its interval; the ratio of the means pooled over all samples, which a slow round
    drags, stays in ``<name>_pooled``.  Where `table` has ``added_<column>`` (what `num` adds per call), it
    is recomputed from the same estimate, ``den`` estimate x (ratio - 1), with ``_ci_low`` and ``_ci_high``
    from the ratio's interval (so it is negative exactly where the ratio is below 1); the difference of the
    pooled means stays in ``added_<column>_pooled``."""


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
    added = f"added_{column}"
    if added in out:  # what num adds per call, from the same estimate as the ratio and its interval
        pairs = zip(table["algorithm"], table["operation"], strict=True)
        den_est = np.array([round_interval(build_samples(study, den, a, o, column), stat)[0]
                            for a, o in pairs], dtype=float)
        out[f"{added}_pooled"] = out[added]
        out[added] = np.where(has_ci, den_est * (value - 1), out[added].to_numpy(float))
        at = out.columns.get_loc(added) + 1
        for end, col in (("low", 1), ("high", 2)):
            bound = out[f"{name}_ci_{end}"].to_numpy(float)
            out.insert(at + col - 1, f"{added}_ci_{end}", np.where(has_ci, den_est * (bound - 1), np.nan))
    return out


def with_round_checks(table: pd.DataFrame, study: SignatureStudy, num: str, den: str, name: str,
                      sides: tuple[str, str], column: str = "cycles") -> pd.DataFrame:
    """`table` with how each side's rounds ran (:func:`pqlab.runners.fidelity.fastest_rounds`):
    ``<name>_fastest_rounds`` (`num`'s fastest round over `den`'s) and per side (`sides` = names of num and
    den) its rounds, its slow rounds and how far its slowest round lay above its fastest (``<side>_rounds``,
    ``_slow_rounds``, ``_worst_round``)."""

    found = pd.DataFrame([fastest_rounds(build_samples(study, num, a, o, column),
                                         build_samples(study, den, a, o, column))
                          for a, o in zip(table["algorithm"], table["operation"], strict=True)],
                         index=table.index,
                         columns=["fastest_ratio", *(f"{k}_{x}" for k in ("num", "den")
                                                     for x in ("rounds", "slow", "worst"))])
    out = table.copy()
    out[f"{name}_fastest_rounds"] = found["fastest_ratio"]
    for side, key in zip(sides, ("num", "den"), strict=True):
        out[f"{side}_rounds"] = found[f"{key}_rounds"]
        out[f"{side}_slow_rounds"] = found[f"{key}_slow"]
        out[f"{side}_worst_round"] = found[f"{key}_worst"]
    return out


def ancestor_intervals(ancestors: pd.DataFrame, study: SignatureStudy,
                       column: str = "cycles") -> pd.DataFrame:
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
            _, lo, hi = ratio_to_published(float(published), build_samples(study, build, alg, op, column),
                                           "mean")

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

