"""What notebook 05 measures of energy here: a live power source's energy run over every timed operation,
its rows, our energies in long form by basis (measured or modelled: nothing invented) and the voltage and
current samples its traces hold.  The measurement API itself is :mod:`pqlab.runners.energy`."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from pqlab.core.paths import RAW
from pqlab.core.schema import convert_unit
from pqlab.runners.energy import ModelledPower, PowerSource, energy_run, read_trace
from pqlab.studies.energy_pi4.names import MEASURED_GROSS, MEASURED_NET, TOPIC, modelled_basis


def live_energy_runs(times: pd.DataFrame, source: PowerSource, *, repeats: int = 3, idle_s: float = 0.05,
                     trace_dir: str | Path | None = None, seed: int | None = 0, progress: bool = True,
                     study: str = TOPIC, save: bool = True) -> list:
    """Energy of every row of ``times`` from a live ``source``, measured and recorded as a run by
    :func:`pqlab.runners.energy.energy_run`: ``[run]``; ``[]`` when there is no live source (nothing is
    measured)."""
    if not source.available:
        return []
    return [energy_run(times, source, repeats=repeats, idle_s=idle_s, study=study, trace_dir=trace_dir,
                       seed=seed, progress=progress, save=save)]


def live_rows(runs) -> pd.DataFrame | None:
    """The energy runs' rows with the columns :func:`energy_long` reads (``run_id`` names the run); None
    without a run."""
    if not runs:
        return None
    m = pd.concat([r.measurements for r in runs], ignore_index=True)
    return pd.DataFrame({"algorithm": m["algorithm"], "backend": m["backend"], "operation": m["operation"],
                         "message_bytes": m["message_bytes"], "energy_uj": m["energy_uj"],
                         "gross_energy_uj": m["gross_energy_uj"], "power_w": m["power_w"],
                         "baseline_w": m["baseline_w"],
                         "window_time_ms": convert_unit(m["window_time_ns"], "ns", "ms"),
                         "loops": m["loops"], "power_samples": m["power_samples"], "windows": m["samples"],
                         "energy_source": m["energy_source"], "run_id": m["run_id"]})


def energy_long(times: pd.DataFrame, live: pd.DataFrame | None = None,
                model: ModelledPower | None = None) -> pd.DataFrame:
    """Our energies in long form (one row per operation and basis): measured net and gross when
    ``live`` rows exist, modelled when ``model`` is given; empty when neither (nothing invented)."""
    keys = ["algorithm", "backend", "operation", "message_bytes"]
    base = times[["kind", "family", "nist_level", *keys, "time_ms",
                  *[c for c in ("implementation",) if c in times]]]
    parts = []
    if live is not None and len(live):
        m = base.merge(live, on=keys, how="inner")
        for col, basis in (("energy_uj", MEASURED_NET), ("gross_energy_uj", MEASURED_GROSS)):
            parts.append(m.assign(energy_uj=m[col], basis=basis, source=m["energy_source"]))
    if model is not None:
        e = [model.energy(convert_unit(t, "ms", "ns")).energy_uj for t in base["time_ms"]]
        parts.append(base.assign(energy_uj=e, power_w=model.watts, basis=modelled_basis(model.watts),
                                 source=model.label))
    cols = ["kind", "family", "nist_level", *keys, "time_ms", "energy_uj", "basis", "source",
            *[c for c in ("implementation",) if c in times]]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat([p[cols] for p in parts], ignore_index=True)


def vi_samples(trace_dir: str | Path) -> pd.DataFrame | None:
    """Voltage and current samples of every trace in ``trace_dir`` (relative: under data/raw/)
    that has both (INA219 traces do), with the source label; None when there are none."""
    folder = Path(trace_dir)
    folder = folder if folder.is_absolute() else RAW / folder
    frames = []  # a folder that does not exist (no live source) has no traces
    for f in sorted(folder.glob("*.csv")):
        tr = read_trace(f)
        if tr.voltage_v is not None and tr.current_a is not None:
            frames.append(pd.DataFrame({"voltage_v": tr.voltage_v, "current_a": tr.current_a,
                                        "source": tr.source}))
    return pd.concat(frames, ignore_index=True) if frames else None
