"""Notebook 06's generated text (Markdown), every number from the data: the model's constants, the KEMs
beyond ML-KEM and where else they are measured, why the CPU models differ from the measurement, the
runner's build time, how well the model predicts the bytes, the first flights, and the closing note with its
numbers."""
from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from pqlab.core import formatting, paths
from pqlab.core.formatting import fmt_bytes, fmt_count, fmt_factor, fmt_factor_ci, fmt_span, slug
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import CONFIDENCE
from pqlab.studies.tls_handshake.cpu import _config_of, cpu_steps
from pqlab.studies.tls_handshake.measure import BASELINE, TOPIC
from pqlab.studies.tls_handshake.model import (
    AEAD_OVERHEAD,
    FROM_HANDSHAKE,
    LIMITS,
    MAX_FRAGMENT,
    QUIC_AMPLIFICATION,
    QUIC_INITIAL,
    RECORD_HEADER,
    TCP_INITCWND,
    TCP_SEGMENT,
)
from pqlab.studies.tls_handshake.tables import kem_families


def describe_model() -> str:
    """The model's constants, as the code uses them."""
    return (f"Records carry at most {MAX_FRAGMENT:,} bytes; each adds a {RECORD_HEADER}-byte header, and "
            f"once encrypted {AEAD_OVERHEAD} more (inner content type and AEAD tag). TCP: the server's first "
            f"flight fits when it is at most {TCP_INITCWND} x {TCP_SEGMENT} = {TCP_INITCWND * TCP_SEGMENT:,} "
            f"bytes; beyond, slow start doubles the window each round trip. QUIC: before the client's "
            f"address is validated the server may send {QUIC_AMPLIFICATION}x what it received, the client's "
            f"Initials being padded to {QUIC_INITIAL:,} bytes, so {QUIC_AMPLIFICATION * QUIC_INITIAL:,} "
            f"bytes after one Initial; more waits one round trip. Limits checked: " + "; ".join(

                f"{m} <= {n:,} B ({src})" for m, n, src in LIMITS) + ".")


def describe_extra_kems(extra_kems: Iterable[str]) -> str:
    """Which other notebooks' parameters (the notebook's parameters cell and its ``notebooks/params`` file)
    name a member of each family of `extra_kems` beyond ML-KEM, read from those files."""

    import yaml

    def strings(x):
        return [x] if isinstance(x, str) else (
            [s for v in (x.values() if isinstance(x, dict) else x) for s in strings(v)]
            if isinstance(x, (dict, list)) else [])


    families = [f for f in kem_families(extra_kems) if f != "ML-KEM"]
    seen: dict[str, list[str]] = {f: [] for f in families}
    for nb in sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        cells = [c for c in json.loads(nb.read_text())["cells"]
                 if "parameters" in c["metadata"].get("tags", [])]
        names = {n.value for c in cells for n in ast.walk(ast.parse("".join(c["source"])))
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        full = paths.NOTEBOOKS / "params" / f"{nb.stem}.yaml"
        names |= set(strings(yaml.safe_load(full.read_text()))) if full.exists() else set()
        for f in set(kem_families(names)) & set(seen) if nb.stem != TOPIC else ():
            seen[f].append(nb.stem)
    return ("KEMs beyond ML-KEM here: " + formatting.markdown("; ".join(
        f"{f} ({'also in ' + ', '.join(seen[f]) if seen[f] else 'in no other notebook'})" for f in families))
            + "." if families else "No KEM beyond ML-KEM is measured here (`extra_kems`).")


# --------------------------------------------------------------------------- CPU


def cpu_notes(cpu: pd.DataFrame, run) -> list[str]:
    """The lines under the model-vs-measured table: which values carry intervals and why the others do not."""
    samples = run.measurements.loc[run.measurements["verified"].astype(bool), "samples"]
    counts = fmt_span(samples.dropna().astype(int), fmt=fmt_count)
    has_ci = cpu["model_low_us"].notna().any() if len(cpu) else False
    return [f"measured: the median over {counts} handshakes per configuration, each side's thread clock; one "
            "process without rounds, so no interval.",
            "model: the public-key operations as pqlab timed them, "
            + (f"with the {CONFIDENCE:.0%} interval over the operations run's rounds (model_low, model_high)."
               if has_ci else "without interval (the operations run has no rounds)."),
            "same-run model: the same pair's resumed handshake from this run plus the operations in its "
            "basis; no interval, since its handshake term was measured in one process."]


def _busy_configs(run) -> tuple[list[str], int]:
    """Configurations the machine was busy while measuring (:func:`pqlab.runners.tls.window_noise`), of how
    many watched."""
    noise = run.meta.get("tls", {}).get("noise") or {}
    return [key for key, rec in noise.items() if rec.get("busy")], len(noise)


def describe_cpu_model(cpu: pd.DataFrame, run, ops) -> str:
    """Why the operations-only model predicts more handshakes per second than were measured, from the data:
    the factor per mode, the stack's own work it leaves out, when and how the operations were timed, whether
    the machine was busy, and how close the same-run model comes."""
    server = cpu[cpu["side"] == "server"] if len(cpu) else cpu
    if server.empty:
        return "No handshake was measured: there is no model to set beside a measurement."
    span = fmt_span(server["measured_over_model"], fmt=fmt_factor)
    per_mode = "; ".join(f"{mode}: {fmt_span(g['measured_over_model'], fmt=fmt_factor)}"
                         for mode, g in server.groupby("mode", sort=False))
    stack_ns = fmt_span(convert_unit(server["stack_us"], "µs", "ns"), fmt=formatting.fmt_time_ns)
    text = [f"Summing only the public-key operations, the model predicts {span} as many handshakes per "
            f"second as one server core sustained ({per_mode}; {NO_ROUNDS}). The model leaves out the TLS "
            "stack's own work (key schedule, transcript hashing, record protection, certificate encoding and "
            f"parsing, tickets): measured minus the operations is {stack_ns} per server handshake (that "
            "work, plus whatever separates pqlab's timing of the operations from the runner's)."]
    res = server[server["mode"] == "resumed"]
    if len(res):
        share = res["stack_us"] / res["measured_us"]
        text.append(f"In the resumed handshakes, whose only public-key operation is the key exchange, it is "
                    f"{fmt_span(convert_unit(res['stack_us'], 'µs', 'ns'), fmt=formatting.fmt_time_ns)}, "
                    f"{fmt_span(share, fmt=formatting.fmt_percent)} of the server's CPU"
                    + (": the work the model leaves out is larger than the work it counts."
                       if share.min() > 0.5 else "."))
    md = formatting.markdown
    used = {name for r in run.measurements.itertuples() if r.verified
            for steps in cpu_steps(_config_of(r)).values() for name, _ in steps}
    impls = sorted({str(v) for k, v in ((ops.meta.get("implementations") or {}) if hasattr(ops, "meta")
                                        else {}).items()
                    if k in used})
    text.append("The operations were timed by pqlab from Python (the do-nothing call removed) through "
                + (md("; ".join(impls)) if impls else "cryptography, liboqs or pqcrypto")
                + f" in run {md(ops.run_id)}{_run_gap(ops, run)}; the handshakes by the runner's "
                + md(run.meta.get("tls", {}).get("openssl_version", "OpenSSL"))
                + f" in run {md(run.run_id)}: another build, another process and another stretch of time.")
    busy, watched = _busy_configs(run)
    rounds = (ops.meta.get("round_noise") or []) if hasattr(ops, "meta") else []
    if watched or busy:
        text.append(f"The machine was busy while {len(busy)} of {watched or len(run.measurements)} "
                    f"configurations were measured" + (f" ({md('; '.join(busy))})" if busy else "") + ".")
    else:
        text.append("This run did not record whether the machine was busy while each configuration was "
                    "measured.")
    if rounds:
        text.append(f"Busy rounds of the operations run: {sum(bool(r.get('busy')) for r in rounds)} of "
                    f"{len(rounds)}.")
    same_work = [(key[0], d["measured_us"].max() / d["measured_us"].min()) for key, d in
                 res.assign(group=res["pair"].str.split(" + ", regex=False).str[0])
                 .groupby(["group", "depth"])
                 if len(d) > 1] if len(res) else []
    if same_work:
        group, worst = max(same_work, key=lambda x: x[1])
        text.append(f"A resumed handshake does the same work whatever the chain, yet those of one group "
                    f"differ by up to {fmt_factor(worst)} in server CPU here ({md(group)}): a spread that is "
                    f"not the handshakes' work ({NO_ROUNDS}).")

    same = cpu.dropna(subset=["measured_over_same_run"])
    if len(same):
        text.append("The same-run model takes the key exchange and the stack's work from the same pair's "
                    "resumed handshake in this run (the same runner, build and minutes) and adds only the "
                    "operations a full handshake adds: measured over it is "
                    + "; ".join(f"{side} {fmt_span(g['measured_over_same_run'], fmt=fmt_factor)}"
                                for side, g in same.groupby("side", sort=False))
                    + f" ({NO_ROUNDS}). What remains is work a resumed handshake does not do (certificates "
                    "and the CertificateVerify transcript) less what only resumption does (the ticket and "
                    "its binder), and the difference between pqlab's timing of the added operations and the "
                    "runner's.")
    else:
        text.append("No pair was measured resumed as well: there is no same-run model here.")
    text.append(f"Intervals: the operations carry {CONFIDENCE:.0%} intervals over pqlab's rounds; the "
                "handshakes were measured in one process without rounds, so the measured values, the factors "
                "and the same-run model have none.")
    return " ".join(text)


def _run_gap(ops, run) -> str:
    """", which ended N before the handshakes started", from the runs' times ("" where unknown)."""
    try:
        gap = (pd.Timestamp(run.meta["started_at"])
               - pd.Timestamp(ops.meta.get("finished_at") or ops.meta["started_at"])).total_seconds()
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""
    return (f", which ended {formatting.fmt_duration(abs(gap))} {'before' if gap >= 0 else 'after'} the "
            "handshakes started")


# --------------------------------------------------------------------------- prose and numbers


#: why the handshakes' factors have no interval (said in each sentence that quotes one)
NO_ROUNDS = "no interval: the handshakes ran in one process, without rounds"


def describe_build(builds: Sequence[dict]) -> str:
    """How long the runner's build took: the last build from nothing (cold) and the last build."""
    if not builds:
        return ("No build of the runner is recorded here (it was built before pqlab kept a record): its "
                "build time is unknown.")

    def one(b: dict) -> str:
        load = (f", load average {b['load_before']:.1f} before it started" if b.get("load_before") is not None
                else "")
        return f"**{b['seconds']:.0f} s** on {b['cores']} cores{load}, finished {b['built_at']}"

    cold = [b for b in builds if b["cold"]]
    text = (f"Built from nothing (cold), the TLS runner ({builds[-1]['openssl_version']}) took "
            f"{one(cold[-1])}." if cold
            else "No cold build of the runner is recorded here; its first build time is unknown.")
    if not builds[-1]["cold"]:
        text += f" Its last build was incremental: {one(builds[-1])}."
    return text + (f" Command: `{builds[-1]['command']}`. Other work on the machine slows a build: the load "
                   "says how busy it was.")


def describe_bytes_check(check: pd.DataFrame) -> str:
    """The model beside every measured flight (Markdown), and which of its inputs each handshake supplied
    itself (:data:`pqlab.studies.tls_handshake.model.FROM_HANDSHAKE`, counted from `check`), so that an exact
    match is read as what it is: the framing given those lengths, partly so by construction."""
    worst = int(check["error"].abs().max()) if len(check) else 0
    keys = ["pair", "mode", "depth", "handshake"]
    n = check[keys].drop_duplicates().shape[0]
    verdict = ("the model's prediction equals every measured flight" if worst == 0
               else f"the largest error is {worst} bytes")
    text = (f"Across {n} measured handshakes and {len(check)} flights, {verdict} "
            f"(largest absolute error: {worst} bytes).")
    per = check.drop_duplicates(keys)
    taken = [(what, int(per[col].sum())) for col, what in FROM_HANDSHAKE.items()
             if col in per and per[col].sum()]
    if not taken:
        return text + " Every input of the model came from measured sizes, none from the handshakes checked."
    differs = int(per["signature_differs"].sum()) if "signature_differs" in per else 0
    listed = "; ".join(f"{what} ({k} of {n} handshakes)" for what, k in taken)
    return text + (" Part of that match holds by construction: these inputs were read from each handshake "
                   f"itself, not predicted: {listed}. The server's signature read from the handshake differs "
                   f"from the size the model would use in {differs} of them. What the check tests is the TLS "
                   "framing of every message and record given those lengths, not a prediction of the lengths "
                   "themselves.")


def describe_first_flight(budget: pd.DataFrame) -> str:
    srv = budget[(budget["mode"] == "server-auth")]
    if srv.empty:
        return ""
    lines = []
    base = srv[srv["pair"] == f"{BASELINE[0]} + {BASELINE[1]}"]
    for r in srv.sort_values("S1").itertuples():
        add = ""
        if not base.empty:
            b = base[base["depth"] == r.depth]
            if not b.empty:
                add = f" ({int(r.S1 - b['S1'].iloc[0]):+,} B against the baseline at the same depth)"
        fit = "fits" if r.tcp_extra_rtt == 0 else f"needs {r.tcp_extra_rtt} extra TCP round trip(s)"
        quic = "" if r.quic_extra_rtt == 0 else "; QUIC waits one round trip for address validation"
        hard = f"; **fails**: {r.hard_failure}" if r.hard_failure else ""
        lines.append(f"- {r.pair}, depth {r.depth}: {fmt_bytes(r.S1)}{add}, {fit}{quic}{hard}")
    return "\n".join(lines)


def numbers(build: dict | None, run, check: pd.DataFrame, rates: pd.DataFrame,
            pairs: Sequence[tuple[str, str]]) -> dict:
    """The closing note's numbers: the last cold build's time, the server's first flight for `pairs`
    (server-auth, depth 1), the model's largest byte error, and handshakes/s per core relative to the
    baseline."""
    m = run.measurements
    out = {"runner_cold_build_s": build["seconds"] if build else None,
           "model_byte_error_max": int(check["error"].abs().max()) if len(check) else None}
    for group, sig in pairs:
        key = f"{group} + {sig}"
        row = m[(m["algorithm"] == key) & (m["operation"] == "handshake:server-auth")
                & (m["chain_depth"] == 1)]
        name = slug(f"{group}_{sig}", lower=True)
        out[f"s1_bytes_{name}"] = (int(row["bytes_s1"].iloc[0])
                                   if len(row) and pd.notna(row["bytes_s1"].iloc[0]) else None)
        r = rates[(rates["pair"] == key) & (rates["mode"] == "server-auth") & (rates["depth"] == 1)]
        out[f"rate_vs_baseline_{name}"] = float(r["vs_baseline"].iloc[0]) if len(r) else None
    return out


def write_closing_note(nums: dict, builds: Sequence[dict], pairs: Sequence[tuple[str, str]],
                       rates: pd.DataFrame, run_ids: Sequence[str]) -> str:
    lines = ["**Closing note.** " + describe_build(builds)]
    for group, sig in pairs:
        s1 = nums.get(f"s1_bytes_{slug(f'{group}_{sig}', lower=True)}")
        r = rates[(rates["pair"] == f"{group} + {sig}") & (rates["mode"] == "server-auth")
                  & (rates["depth"] == 1)]

        rate = (f"; {fmt_count(r['per_s'].iloc[0])} handshakes/s per core, "
                f"{fmt_factor_ci(*r[['vs_baseline', 'vs_baseline_low', 'vs_baseline_high']].iloc[0])} the "
                "baseline's "
                + (f"({CONFIDENCE:.0%} interval)" if np.isfinite(r["vs_baseline_low"].iloc[0])
                   else "(no interval: one process, without rounds)")) if len(r) else ""
        lines.append(f"- {group} + {sig}: server's first flight "
                     f"**{fmt_bytes(s1) if s1 is not None else 'not measured'}** (depth 1){rate}")
    err = nums.get("model_byte_error_max")
    lines.append(f"- The model's largest byte error over every measured flight: "
                 f"**{err if err is not None else 'n/a'}**.")
    lines.append(f"- Runs: {', '.join(run_ids)} (the machine is in the run context above).")
    return "\n".join(lines)
