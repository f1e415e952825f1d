"""The published platforms of the atlas: study 004's Raspberry Pi 4 and pqm4's Cortex-M4 (its clean C, and the
fastest implementation of each operation), with their ratios computed from the published values, each labelled
with the statistic its source states and without interval (one number each).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.schema import convert_unit
from pqlab.studies.atlas.compared import (
    CLASSICAL,
    NO_INTERVAL,
    PI4,
    PQM4_CLEAN,
    PQM4_FASTEST,
    PUBLISHED,
    UNSTATED,
    _comp_fields,
)


def published_statistic(column: str) -> str:
    """The statistic of a published column, as its transcription names it (``cycles_mean``: pqm4's mean of its
    executions); :data:`UNSTATED` where the name states none (study 004's ``time_ms``: the study never
    says)."""
    last = column.rsplit("_", 1)[-1]
    return last if last in ("mean", "median", "min", "max") else UNSTATED


def published_platforms(comps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The published platforms (study 004's Pi 4; pqm4's Cortex-M4 with its clean C and with the fastest
    implementation of each operation) and their ratios: sums of published values, each labelled with the
    statistic its source states (:func:`published_statistic`), no interval (one number each); classical
    comparisons stay empty (neither publishes a classical baseline)."""
    from pqlab.core.references import load_reference, reference_source

    pi = load_reference("05_energy_pi4")
    setup = load_reference("05_energy_pi4_setup").set_index("parameter")["value"]
    pq = load_reference("07_pqm4")
    pq_src = reference_source("07_pqm4")
    clock_mhz = convert_unit(pq_src["clock_hz"], "Hz", "MHz")
    fastest = pq.loc[pq.groupby(["algorithm", "operation"])["cycles_mean"].idxmin()]
    pi_stat, pq_stat = published_statistic("time_ms"), published_statistic("cycles_mean")
    pi_what = ("the study's time in ms, its statistic not stated" if pi_stat == UNSTATED
               else f"the study's {pi_stat} time (ms)")
    tables = {
        PI4: (pi.set_index(["algorithm", "operation"])["time_ms"], None, pi_what, pi_stat),
        PQM4_CLEAN: (pq[pq["implementation"] == "clean"].set_index(["algorithm", "operation"])["cycles_mean"],
                     None, f"pqm4's {pq_stat} cycles", pq_stat),
        PQM4_FASTEST: (fastest.set_index(["algorithm", "operation"])["cycles_mean"],
                       fastest.set_index(["algorithm", "operation"])["implementation"],
                       f"pqm4's {pq_stat} cycles", pq_stat),
    }
    m4 = {"kind": PUBLISHED, "machine_id": "", "identities": "", "identity": "published", "this_host": False,
          "cpu": f"ARM Cortex-M4 at {clock_mhz:g} MHz ({pq_src['repository']})", "arch": "armv7e-m",
          "cores": 1, "counter": "cycles (pqm4's benchmark)", "frequency": f"fixed {clock_mhz:g} MHz",
          "hypervisor": "none (bare metal)", "runs": 0}
    platforms = pd.DataFrame([
        {"platform": PI4, "kind": PUBLISHED, "machine_id": "", "identities": "", "identity": "published",
         "this_host": False, "cpu": f"Raspberry Pi 4, CPU model '{setup['cpu']}', {setup['cores']} cores",
         "arch": "aarch64", "cores": int(setup["cores"]), "counter": f"none (time: {setup['timer']})",
         "frequency": f"governor {setup['cpu_governor']}, boost unknown", "hypervisor": "none stated",
         "liboqs": f"version {setup['liboqs']}", "cpu_features": "not stated", "runs": 0},
        {**m4, "platform": PQM4_CLEAN, "liboqs": "none (pqm4, clean implementations from PQClean)",
         "cpu_features": "portable C"},
        {**m4, "platform": PQM4_FASTEST, "liboqs": "none (pqm4, fastest implementation per operation)",
         "cpu_features": "Cortex-M4F assembly where pqm4 has it (m4f, m4fspeed, m4fstack), else clean C"}])
    rows = []
    for platform, (values, impls, what, stat) in tables.items():
        for comp in comps.itertuples():
            row = {"platform": platform, **_comp_fields(comp), "statistic": stat, "interval": NO_INTERVAL,
                   "run_id": "", "samples": np.nan, "ci_low": np.nan, "ci_high": np.nan}
            keys = [(a, op) for a in (comp.algorithm, comp.baseline) for op in comp.operations]
            if comp.baseline_kind == CLASSICAL:
                rows.append({**row, "ratio": np.nan,
                             "reason": f"no classical baseline published ({what} only)"})
            elif not all(k in values.index for k in keys):
                rows.append({**row, "ratio": np.nan, "reason": "not in the published data"})
            else:
                k = len(comp.operations)
                v = [float(values[key]) for key in keys]
                used = "" if impls is None else ", ".join(dict.fromkeys(str(impls[key]) for key in keys))
                rows.append({**row, "ratio": sum(v[:k]) / sum(v[k:]), "reason": "",
                             "source": f"{what}{f'; implementations {used}' if used else ''}"})
    return platforms, pd.DataFrame(rows)
