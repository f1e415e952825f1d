"""Notebook 05's recommendations per use case (latency-critical, energy-constrained, maximum security),
generated from our times, the study's published energies and ours, each item saying what code ran the
algorithms it compares (:func:`what_ran`)."""
from __future__ import annotations

import pandas as pd

from pqlab.core.formatting import fmt_bytes_binary, fmt_energy_uj, fmt_factor, fmt_time_ms, markdown
from pqlab.core.vocabulary import BACKENDS, c_loop
from pqlab.studies import conforming
from pqlab.studies.energy_pi4.names import KIND_LABEL, MEASURED_GROSS, _is_pq, _ops, is_modelled
from pqlab.studies.energy_pi4.published import reference_long, setup_text
from pqlab.studies.energy_pi4.tables import use_totals

#: The language of the code that does the work behind each backend (what runs under the call: :func:`calls_of`
#: says how the calls were made), and the Python binding where the implementation's name does not say it.
LANGUAGE = {b.name: b.language for b in BACKENDS if b.module}
BINDING = {b.name: b.binding for b in BACKENDS if b.binding}
PURE_PYTHON = "pure Python"


def implementation_label(backend, implementation=None) -> str:
    """What ran for a row, for prose (Markdown): the language of the code doing the work (:data:`LANGUAGE`)
    and the implementation the run recorded, e.g. "C (liboqs 0.13.0 (default build), through
    liboqs-python)"."""
    recorded = isinstance(implementation, str) and implementation
    impl = markdown(implementation) if recorded else markdown(backend)
    if str(backend) in BINDING:
        impl += f", through {BINDING[str(backend)]}"
    return f"{LANGUAGE.get(str(backend), 'language not recorded')} ({impl})"


def calls_of(backend) -> str:
    """How a backend's calls were made, from its record (:func:`pqlab.core.vocabulary.c_loop`): in pqlab's C
    loop with one call from Python per sample, or one call from Python per operation."""
    return ("a sample's calls in pqlab's C loop, one call from Python per sample" if c_loop(str(backend))
            else "one call from Python per operation")


def what_ran(rows) -> str:
    """" What ran: A and B in C (liboqs ..., a sample's calls in pqlab's C loop ...); X in C and assembly
    (cryptography ..., one call from Python per operation)." for the rows a sentence compares (each with
    ``algorithm``, ``backend`` and, where recorded, ``implementation``); where the sides' calls were not made
    alike, that the comparison is not like for like in that respect; and a warning where pure Python stands
    beside compiled code."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        label = (f"{implementation_label(r.backend, getattr(r, 'implementation', None))[:-1]}; "
                 f"{calls_of(r.backend)})")
        groups.setdefault(label, [])
        if r.algorithm not in groups[label]:
            groups[label].append(r.algorithm)
    text = " What ran: " + "; ".join(f"{' and '.join(names)} in {label}"
                                     for label, names in groups.items()) + "."
    if len({calls_of(r.backend) for r in rows}) > 1:
        text += (" The sides' calls were not made alike (a Python call per operation on one side, pqlab's C "
                 "loop on the other), so the comparison is not like for like in that respect.")
    python = [r.algorithm for r in rows if LANGUAGE.get(str(r.backend)) == PURE_PYTHON]
    if python and len(python) < len(rows):
        text += (f" {' and '.join(dict.fromkeys(python))} {'runs' if len(set(python)) == 1 else 'run'} in "
                 f"{PURE_PYTHON} beside compiled code: the gap measures the interpreter as much as the "
                 "algorithm.")
    return text


def _latency(t: pd.DataFrame) -> list[str]:
    out = []
    for kind in ("kem", "sig"):
        k = t[t["kind"] == kind].sort_values("time_ms")
        pq = k[k["family"].map(_is_pq)]
        if pq.empty:
            continue
        best = pq.iloc[0]
        named = [best]
        text = f"- **{KIND_LABEL[kind]}:** {best.algorithm} ({_ops(kind)} {fmt_time_ms(best.time_ms)} here"
        if len(pq) > 1:
            text += f"; next {pq.iloc[1].algorithm} {fmt_time_ms(pq.iloc[1].time_ms)}"
            named.append(pq.iloc[1])
        classical = k[~k["family"].map(_is_pq)]
        if not classical.empty:
            c = classical.iloc[0]
            text += (f"; the fastest classical one, {c.algorithm}, not quantum-resistant, takes "
                     f"{fmt_time_ms(c.time_ms)}")
            named.append(c)
        out.append(text + ")." + what_ran(named))
    a = t[t["kind"] == "cipher"]
    if not a.empty:
        sizes = sorted(a["message_bytes"].dropna().unique())
        fastest = [a[a["message_bytes"] == size].sort_values("time_ms").iloc[0] for size in sizes]
        picks = [fastest[0]] if len(fastest) == 1 else [fastest[0], fastest[-1]]
        text = (f"- **AEAD** ({_ops('cipher')}, {fmt_bytes_binary(sizes[0])} to "
                f"{fmt_bytes_binary(sizes[-1])}): fastest "
                + " and ".join(f"{r.algorithm} at {fmt_bytes_binary(r.message_bytes)} "
                               f"({fmt_time_ms(r.time_ms)})" for r in picks))
        named = list(picks)
        big = a[a["message_bytes"] == sizes[-1]].sort_values("time_ms")
        if len(big) > 1:
            slow = big.iloc[-1]
            text += (f"; the slowest at {fmt_bytes_binary(sizes[-1])}, {slow.algorithm}, takes "
                     f"{fmt_time_ms(slow.time_ms)}")
            named.append(slow)
        out.append(text + "." + what_ran(named))
    return out


def _energy_lines(e: pd.DataFrame, where: str, published: bool = False) -> list[str]:
    """Lowest and highest energy per use; the factor between them only for published energies (two
    printed numbers: no interval exists to give), ours are given as values."""
    e = e[e["energy_uj"] > 0]  # a ranking by energy needs energies; non-positive net values say nothing
    out = []
    for kind in ("kem", "sig"):
        k = e[e["kind"] == kind].sort_values("energy_uj")
        if k.empty:
            continue
        best, worst = k.iloc[0], k.iloc[-1]
        text = (f"- **{KIND_LABEL[kind]}**, {where}: {best.algorithm}, {fmt_energy_uj(best.energy_uj)} per "
                f"{_ops(kind)}")
        if len(k) > 1:
            text += f"; avoid {worst.algorithm} for frequent use: {fmt_energy_uj(worst.energy_uj)}"
            if published:
                text += (f", {fmt_factor(worst.energy_uj / best.energy_uj)} as much (published numbers, no "
                         "interval)")
        out.append(text + "." + ("" if published else what_ran([best, worst] if len(k) > 1 else [best])))
    a = e[e["kind"] == "cipher"]
    if not a.empty:
        sizes = sorted(a["message_bytes"].dropna().unique())
        picks, named = [], []
        for size in ([sizes[0], sizes[-1]] if len(sizes) > 1 else sizes):
            s = a[a["message_bytes"] == size].sort_values("energy_uj")
            picks.append(f"{s.iloc[0].algorithm} at {fmt_bytes_binary(size)} "
                         f"({fmt_energy_uj(s.iloc[0].energy_uj)})")
            named.append(s.iloc[0])
        out.append(f"- **AEAD**, {where}: lowest energy " + " and ".join(picks) + "." + what_ran(named))
    return out


def _max_security(t: pd.DataFrame, pub: pd.DataFrame | None) -> list[str]:
    out = []
    for kind in ("kem", "sig", "cipher"):
        k = t[(t["kind"] == kind) & t["nist_level"].notna()]
        if k.empty:
            continue
        if kind == "cipher":
            k = k[k["message_bytes"] == k["message_bytes"].max()]
        top = int(k["nist_level"].max())
        at = k[k["nist_level"] == top].sort_values("time_ms")

        def cost(r) -> str:
            text = fmt_time_ms(r.time_ms) + " here"
            if pub is not None:
                p = pub[pub["algorithm"] == r.algorithm]
                if len(p):
                    text += f", {fmt_energy_uj(p['energy_uj'].iloc[0])} on the Pi"
            return text

        listed = "; ".join(f"{r.algorithm} ({cost(r)})" for r in at.itertuples())
        size = f" at {fmt_bytes_binary(at['message_bytes'].iloc[0])}" if kind == "cipher" else ""
        text = (f"- **{KIND_LABEL[kind]}** (NIST level {top}, the highest measured; {_ops(kind)}{size}): "
                f"{listed}. Fastest here: **{at.iloc[0].algorithm}**")
        if pub is not None:
            p = pub[pub["algorithm"].isin(at["algorithm"])].sort_values("energy_uj")
            if len(p) > 1 and p.iloc[0].algorithm != at.iloc[0].algorithm:
                text += f"; least energy on the Pi: **{p.iloc[0].algorithm}**"
        other = at[at["family"] != at.iloc[0].family]
        if kind != "cipher" and not other.empty:
            text += (f"; the fastest resting on a different assumption than {at.iloc[0].family} is "
                     f"**{other.iloc[0].algorithm}** ({other.iloc[0].family}, "
                     f"{fmt_time_ms(other.iloc[0].time_ms)})")
        shown = list(at.itertuples()) + ([other.iloc[0]] if kind != "cipher" and not other.empty else [])
        out.append(text + "." + what_ran(shown))
    return out


def recommendations_markdown(times: pd.DataFrame, reference: pd.DataFrame | None = None,
                             ours: pd.DataFrame | None = None, setup: pd.DataFrame | None = None,
                             runs=()) -> str:
    """Recommendations per use case, generated from the data; under them, the caveat of every implementation
    `runs` timed that fails its known-answer checks (:func:`pqlab.studies.conforming.caveat`).

    ``times``: :func:`~pqlab.studies.energy_pi4.tables.timing_table` (ours); ``reference``: the study's table
    (published, gross energy); ``ours``: :func:`~pqlab.studies.energy_pi4.measure.energy_long` rows (measured
    or modelled energies), optional.
    Latency-critical: the fastest post-quantum algorithm per kind here (sum over one use).
    Energy-constrained: the lowest published energy, and ours when there is any (labelled).
    Maximum security: the highest NIST level measured, its algorithms with their cost.
    Every item comparing algorithms of ours says what ran them (:func:`what_ran`: language and
    implementation, from the rows), and where pure Python stands beside compiled code; ``setup``: the study's
    set-up table, for what ran its rows.
    """
    t = use_totals(times)
    lines = ["### Latency-critical", "", "By the time of one use here (median, summed over its operations; "
             "each item says what code did the work and how its calls were made, from each backend's "
             "record):", ""]
    lines += _latency(t)
    lines += ["", "### Energy-constrained", ""]
    pub = None
    if reference is not None and len(reference):
        pub = use_totals(reference_long(reference).assign(backend="Pi 4 study"), "energy_uj")
        ran = (f"liboqs '{markdown(setup_text(setup, 'liboqs'))}' from Python "
               f"{markdown(setup_text(setup, 'python'))}" if setup is not None else "liboqs from Python")
        lines += [f"From the study's published energies (Raspberry Pi 4, gross: whole-board energy, the "
                  f"board's idle draw included; one implementation for every row, the study's {ran}):", ""]
        lines += _energy_lines(pub, "Pi 4, published", published=True)
    if ours is not None and len(ours):
        groups = dict(list(ours.groupby("basis", sort=False)))
        for basis, g in groups.items():
            if basis == MEASURED_GROSS:
                continue
            e = use_totals(g, "energy_uj")
            if is_modelled(basis):
                lines += ["", f"Modelled here, {basis}: a constant power, so this ranks exactly as time "
                          "does:", ""]
            else:
                lines += ["", f"Measured here (source {g['source'].iloc[0]}), energy net of the idle "
                          "baseline:", ""]
                lost = sorted(e.loc[~(e["energy_uj"] > 0), "algorithm"].unique())
                if lost and MEASURED_GROSS in groups:
                    lines += [f"The net energy of one use is at or below zero for {len(lost)} algorithm(s) "
                              f"({', '.join(lost)}): their power stayed within the baseline's noise. Ranked "
                              "by gross energy (baseline included) instead:", ""]
                    basis, e = MEASURED_GROSS, use_totals(groups[MEASURED_GROSS], "energy_uj")
            lines += _energy_lines(e, basis)
    has_aead_energy = ours is not None and (ours["kind"] == "cipher").any()
    if (t["kind"] == "cipher").any() and not has_aead_energy:
        lines += ["", "- **AEAD:** no energy: the study published none for its AEADs and no power source "
                  "measured any here. Time is the only guide (it predicts energy only where power is "
                  "constant): see the latency-critical pick above."]
    lines += ["", "### Maximum security", ""]
    lines += _max_security(t, pub)
    classical = sorted(t.loc[~t["family"].map(_is_pq) & t["kind"].isin(["kem", "sig"]), "algorithm"].unique())
    if classical:
        lines += ["", f"The classical baselines ({', '.join(classical)}) have no NIST post-quantum level: a "
                  "quantum computer running Shor's algorithm would break them."]
    warning = conforming.caveat(runs)
    if warning:
        lines += ["", "### Conformance", "", warning]
    return "\n".join(lines)
