"""Notebook 06's CPU per handshake: each side's public-key operations as pqlab timed them (the
operations-only model, with its interval over the operations run's rounds), the same-run model (the same
pair's resumed handshake plus what a full handshake adds), both beside what the TLS runner measured, and the
handshakes per second one server core sustains."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.core.schema import convert_unit
from pqlab.measure.stats import combined_ci, ratio_ci
from pqlab.runners import tls
from pqlab.studies.tls_handshake.measure import BASELINE, GROUP_PARTS, KEM_BACKENDS, SIGNATURE_OPS


def _op_row(ops, name: str, operation: str):
    """The measurement row of one verified operation (``name@backend``), or None."""
    algorithm, backend = name.split("@")
    m = ops.measurements
    row = m[(m["algorithm"] == algorithm) & (m["backend"] == backend) & (m["operation"] == operation)]
    return None if row.empty or not bool(row["verified"].iloc[0]) else row.iloc[0]


def _op(ops, name: str, operation: str) -> tuple[float, float, float]:
    """(median, ci_low, ci_high) in ns of one measured operation, the harness's do-nothing call removed."""
    r = _op_row(ops, name, operation)
    if r is None:
        return (float("nan"),) * 3
    overhead = 0.0 if pd.isna(r["overhead_ns"]) else float(r["overhead_ns"])
    return tuple(max(0.0, float(r[c]) - overhead)
                 for c in ("time_ns_median", "time_ns_ci_low", "time_ns_ci_high"))


def cpu_steps(config: tls.Config) -> dict[str, list[tuple[str, str]]]:
    """The public-key operations each side does in one handshake of `config`, as (``name@backend``,
    operation): the group's parts (client keygen and decaps, server encaps), and unless it resumes one
    CertificateVerify signature and the chain's verifications (one per certificate sent, plus the
    CertificateVerify's)."""
    parts = [f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[tls.display_group(config.group)]]
    cv_op, chain_op = SIGNATURE_OPS[config.signature]
    client = [(n, "keygen") for n in parts] + [(n, "decaps") for n in parts]
    server = [(n, "encaps") for n in parts]
    if not config.resume:
        verify = [(chain_op, "verify")] * config.depth + [(cv_op, "verify")]
        client += verify
        server.append((cv_op, "sign"))
        if config.mutual:
            server += verify
            client.append((cv_op, "sign"))
    return {"client": client, "server": server}


def operations_ns(ops, steps: Sequence[tuple[str, str]]) -> tuple[float, float, float]:
    """The sum of `steps` (ns, each operation's do-nothing call removed) with its interval over the
    operations run's rounds (:func:`pqlab.measure.stats.combined_ci`, paired by round); (0, 0, 0) for no
    steps; no interval where the samples carry no rounds (then the sum of the medians)."""

    if not steps:
        return 0.0, 0.0, 0.0
    rows = [_op_row(ops, name, operation) for name, operation in steps]
    if any(r is None for r in rows):
        return (float("nan"),) * 3
    overheads = [0.0 if pd.isna(r["overhead_ns"]) else float(r["overhead_ns"]) for r in rows]
    values = [ops.sample_values(r["algorithm"], r["operation"], backend=r["backend"]) for r in rows]
    if any(len(v) == 0 for v in values):
        return float(sum(_op(ops, n, o)[0] for n, o in steps)), float("nan"), float("nan")

    def total(estimates):
        return sum(np.maximum(np.asarray(e, float) - o, 0.0) for e, o in zip(estimates, overheads))

    value, low, high = combined_ci(values, total)
    return float(value), float(low), float(high)


def _config_of(m) -> tls.Config:
    return tls.Config(m.tls_group, m.tls_signature, int(m.chain_depth), bool(m.mutual), bool(m.resumed))


def _step_label(steps: Sequence[tuple[str, str]]) -> str:
    counts: dict[tuple[str, str], int] = {}
    for step in steps:
        counts[step] = counts.get(step, 0) + 1
    return " + ".join(f"{n}× " * (n > 1) + f"{name.split('@')[0]} {op}" for (name, op), n in counts.items())


def compare_cpu(run, ops) -> pd.DataFrame:
    """Each side's measured CPU per handshake beside two models, one row per configuration and side.

    * ``model_us`` [``model_low_us``, ``model_high_us``]: the public-key operations alone (:func:`cpu_steps`),
      timed by pqlab in the operations run, with the interval over its rounds; ``stack_us`` is what the
      measurement adds to them (the TLS stack's own work), ``measured_over_model`` the factor between them.
    * ``same_run_model_us``: the same pair's resumed handshake at the same depth, measured by the runner in
      the same run (its key exchange and the stack's work), plus the operations a full handshake adds
      (``same_run_basis`` names them); empty for the resumed rows themselves and where the pair was not
      measured resumed.

    The handshakes are measured in one process without rounds: the measured values, and the same-run model
    that adds one, have no interval."""
    m = run.measurements[run.measurements["verified"].astype(bool)]
    resumed = {(r.algorithm, int(r.chain_depth)): r for r in m.itertuples() if bool(r.resumed)}
    rows = []
    for r in m.itertuples():
        config = _config_of(r)
        anchor = None if config.resume else resumed.get((r.algorithm, config.depth))
        kem = {f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[tls.display_group(config.group)]}
        for side, steps in cpu_steps(config).items():
            measured = float(getattr(r, f"{side}_cpu_ns_median"))
            value, low, high = operations_ns(ops, steps)
            # what a full handshake adds to a resumed one
            auth = [step for step in steps if step[0] not in kem]

            same, basis = float("nan"), ""
            if anchor is not None:
                same = float(getattr(anchor, f"{side}_cpu_ns_median")) + operations_ns(ops, auth)[0]
                basis = " + ".join(x for x in ("resumed handshake", _step_label(auth)) if x)
            rows.append({"pair": config.pair, "mode": config.mode, "depth": config.depth, "side": side,
                         "measured_us": convert_unit(measured, "ns", "µs"),
                         "model_us": convert_unit(value, "ns", "µs"),
                         "model_low_us": convert_unit(low, "ns", "µs"),
                         "model_high_us": convert_unit(high, "ns", "µs"),
                         "stack_us": convert_unit(measured - value, "ns", "µs"),
                         "measured_over_model": measured / value if value > 0 else float("nan"),
                         "same_run_model_us": convert_unit(same, "ns", "µs"), "same_run_basis": basis,
                         "measured_over_same_run": measured / same if same > 0 else float("nan")})
    return pd.DataFrame(rows)


def _samples_of(samples: pd.DataFrame, pair: str, operation: str, depth) -> pd.DataFrame:
    return samples[(samples["algorithm"] == pair) & (samples["operation"] == operation)
                   & (samples["chain_depth"] == depth)]


def handshake_rates(run, ops, baseline: tuple[str, str] = BASELINE,
                    cpu: pd.DataFrame | None = None) -> pd.DataFrame:
    """Handshakes per second one core sustains (server side: 1 s / server CPU per handshake): measured (no
    interval: one process), the operations-only model with its interval over the operations' rounds, the
    same-run model (:func:`compare_cpu`), each model over the measurement, and the measurement relative to the
    baseline pair in the same mode and depth (intervals where both sides have rounds; the TLS runner's
    handshakes have none)."""
    samples = run.samples
    base_pair = f"{baseline[0]} + {baseline[1]}"
    cpu = compare_cpu(run, ops) if cpu is None else cpu
    server = cpu[cpu["side"] == "server"].set_index(["pair", "mode", "depth"]) if len(cpu) else None
    second_ns, second_us = convert_unit(1.0, "s", "ns"), convert_unit(1.0, "s", "µs")
    rows = []
    for m in run.measurements.itertuples():
        if not m.verified:
            continue
        mine = _samples_of(samples, m.algorithm, m.operation, m.chain_depth)["server_cpu_ns"].to_numpy(float)
        base = _samples_of(samples, base_pair, m.operation, m.chain_depth)["server_cpu_ns"].to_numpy(float)
        config = _config_of(m)
        ratio, lo, hi = ratio_ci(base, mine)  # rate ratio = baseline CPU / this CPU
        s = server.loc[(config.pair, config.mode, config.depth)]
        rate = second_ns / m.server_cpu_ns_median

        def per_s(us):
            return second_us / us if us > 0 else np.nan

        rows.append({"pair": config.pair, "mode": config.mode, "depth": config.depth,
                     "per_s": rate, "per_s_low": second_ns / m.server_cpu_ns_ci_high,
                     "per_s_high": second_ns / m.server_cpu_ns_ci_low,
                     "model_per_s": per_s(s["model_us"]), "model_per_s_low": per_s(s["model_high_us"]),
                     "model_per_s_high": per_s(s["model_low_us"]),
                     "model_over_measured": per_s(s["model_us"]) / rate,
                     "same_run_model_per_s": per_s(s["same_run_model_us"]),
                     "same_run_over_measured": per_s(s["same_run_model_us"]) / rate,
                     "vs_baseline": ratio, "vs_baseline_low": lo, "vs_baseline_high": hi})
    return pd.DataFrame(rows)
