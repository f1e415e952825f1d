"""The Pi 4 study's published table, checked (notebook 05, study 004): is its energy time x power
within the rounding of the printed values, how much of it an idle board would have drawn (over a range of
assumed idle powers: the study states none), which rows a sensor at its sample rate cannot resolve per
call, whether its prose envelope can produce its powers, and a replay of its published values (a time of an
unstated statistic, a power its prose calls mean power) through the same
integration a live trace goes through.  Everything here is computed from the transcription in
``data/reference/`` (:data:`REFERENCE_NAME` and its set-up table); nothing is measured.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get
from pqlab.core import formatting
from pqlab.core.formatting import Column, fmt_percent, fmt_span, fmt_time_ms, slug
from pqlab.core.paths import REFERENCE, ROOT
from pqlab.core.schema import convert_unit
from pqlab.runners.energy import MIN_SAMPLE_PERIODS, ReplaySource, trace_from_reference, write_trace

#: the study's table in data/reference/
REFERENCE_NAME = "05_energy_pi4"
#: energy bases of the study's numbers (the bases of ours are in :mod:`pqlab.studies.energy_pi4.names`)
PUBLISHED = "published (gross)"
REPLAY_GROSS = "replay (gross)"
#: What the replay is (the study names no statistic for its times: pqlab.runners.energy.RECONSTRUCTED_NOTE
#: says so too)
REPLAY_NOTE = "reconstructed from the published table, not a measurement"


def replay_net_basis(idle_w: float) -> str:
    return f"replay (net of assumed idle {idle_w:g} W)"


def reference_long(reference: pd.DataFrame) -> pd.DataFrame:
    """The study's rows in the long form of :func:`pqlab.studies.energy_pi4.measure.energy_long` (basis
    ``published (gross)``)."""
    meta = registry_meta(reference["algorithm"])
    return pd.DataFrame({
        "kind": reference["kind"], "family": reference["algorithm"].map(lambda a: meta[a][0]),
        "nist_level": reference["algorithm"].map(lambda a: meta[a][1]).astype("Int64"),
        "algorithm": reference["algorithm"], "backend": "Pi 4 study", "operation": reference["operation"],
        "message_bytes": pd.array([pd.NA] * len(reference), dtype="Int64"), "time_ms": reference["time_ms"],
        "power_w": reference["power_w"], "energy_uj": reference["energy_uj"], "basis": PUBLISHED,
        "source": f"reference:{REFERENCE_NAME}"})


def registry_meta(names) -> dict:
    """family and NIST level of each name from the registry (names the registry lacks: other, NA)."""
    out = {}
    for n in dict.fromkeys(names):
        try:
            a = get(n)
            out[n] = (a.family, a.nist_level)
        except KeyError:
            out[n] = ("other", pd.NA)
    return out


def printed_reference() -> pd.DataFrame:
    """The study's table as printed (text, trailing zeros kept): its decimals bound each value's rounding."""
    return pd.read_csv(REFERENCE / f"{REFERENCE_NAME}.csv", dtype=str, encoding="utf-8")


def _half_unit(printed: pd.Series) -> np.ndarray:
    """Half a unit of each value's last printed digit: the most rounding can have moved it."""
    decimals = printed.astype(str).str.partition(".")[2].str.len().to_numpy()
    return 0.5 * 10.0 ** (-decimals.astype(float))


def time_power_check(reference: pd.DataFrame, printed: pd.DataFrame | None = None) -> pd.DataFrame:
    """Is each published energy time x power? Per row: the energy's deviation from time x power (%), the
    range rounding of the three printed values allows if the energy were exactly time x power before
    rounding (``rounding_low_pct`` .. ``rounding_high_pct``), and whether the row is beyond it.

    ``printed``: the same rows as text (default :func:`printed_reference`)."""
    printed = printed_reference() if printed is None else printed
    keys = ["algorithm", "operation"]
    if printed[keys].astype(str).to_numpy().tolist() != reference[keys].astype(str).to_numpy().tolist():
        raise ValueError("the printed table's rows differ from the reference rows: pass the same table twice")
    t, p, e = (reference[c].to_numpy(float) for c in ("time_ms", "power_w", "energy_uj"))
    dt, dp, de = (_half_unit(printed[c]) for c in ("time_ms", "power_w", "energy_uj"))
    tp = convert_unit(t * p, "mJ", "µJ")  # ms x W = mJ
    dev = e / tp - 1
    low = (convert_unit(t - dt, "ms", "µs") * (p - dp) - de) / tp - 1  # µs x W = µJ
    high = (convert_unit(t + dt, "ms", "µs") * (p + dp) + de) / tp - 1
    return pd.DataFrame({
        "kind": reference["kind"].to_numpy(), "algorithm": reference["algorithm"].to_numpy(),
        "operation": reference["operation"].to_numpy(), "time_ms": t, "power_w": p, "energy_uj": e,
        "time_x_power_uj": tp, "deviation_pct": convert_unit(dev, "fraction", "%"),
        "rounding_low_pct": convert_unit(low, "fraction", "%"),
        "rounding_high_pct": convert_unit(high, "fraction", "%"),
        "beyond_rounding": (dev < low) | (dev > high)})


def time_power_table(check: pd.DataFrame):
    """:func:`time_power_check` as a reader sees it (:func:`pqlab.core.formatting.table`): the deviations and
    the range rounding allows in percent with three significant digits (the percent kind's one decimal would
    show the rounding range as 0.0)."""
    pct = [Column(c, label, "number") for c, label in (("deviation_pct", "Deviation (%)"),
                                                       ("rounding_low_pct", "Rounding allows from (%)"),
                                                       ("rounding_high_pct", "Rounding allows to (%)"))]
    return formatting.table(check, ["algorithm", "operation", "time_ms", "power_w",
                                    Column("energy_uj", "Energy"), Column("time_x_power_uj", "Time × power"),
                                    *pct, "beyond_rounding"])


def describe_time_power(check: pd.DataFrame, close: float = 0.05) -> str:
    """Whether the published energy is time x power, within rounding or not, and what that makes it
    (Markdown from :func:`time_power_check`); ``close``: the largest |deviation| still read as time x
    power."""
    n, dev = len(check), convert_unit(check["deviation_pct"], "%", "fraction")
    beyond = check[check["beyond_rounding"]]
    span = f"{fmt_percent(dev.min(), 2, signed=True)} to {fmt_percent(dev.max(), 2, signed=True)}"
    if beyond.empty:
        text = (f"In all {n} rows the published energy equals time × power within the rounding of the "
                f"printed time, power and energy (deviations {span})")
    else:
        w = beyond.loc[beyond["deviation_pct"].abs().idxmax()]
        bound = convert_unit(max(abs(w["rounding_low_pct"]), abs(w["rounding_high_pct"])), "%", "fraction")
        deviation = convert_unit(w["deviation_pct"], "%", "fraction")
        text = (f"The published energy is **not** time × power within rounding: in {len(beyond)} of {n} rows "
                f"the gap exceeds what rounding of the printed time, power and energy allows (largest: "
                f"{w['algorithm']} {w['operation']}, {fmt_percent(deviation, 2, signed=True)} against a "
                f"rounding bound of ±{fmt_percent(bound, 3)} for that row; all rows: {span})")
    if dev.abs().max() <= close:
        text += (f". Within {fmt_percent(dev.abs().max(), 1)} it is still time × mean whole-board power: "
                 "**gross** energy, the board's idle draw included")
        if not beyond.empty:
            text += (". *Hypothesis* (the study does not say how it computed the column): time, power and "
                     "energy were averaged separately over repetitions, and a mean of products differs from "
                     "the product of means when time and power vary together")
    else:
        text += (f". With deviations up to {fmt_percent(dev.abs().max(), 1)} the column is not time × mean "
                 "power, and the study does not say how it was computed")
    return text + "."


def effective_power(reference: pd.DataFrame) -> pd.Series:
    """Published energy / published time (W): the mean power each energy implies."""
    return reference["energy_uj"] / convert_unit(reference["time_ms"], "ms", "µs")  # µJ / µs = W


def idle_sensitivity(reference: pd.DataFrame, assumed_idle_w) -> pd.DataFrame:
    """How much of each published (gross) energy an idle board would have drawn in the same time, for
    each assumed idle power (the study states none): per assumption, the rows where that idle share is
    the majority, the smallest, median and largest share, and the rows whose net energy would be <= 0."""
    power = effective_power(reference).to_numpy(float)
    rows = []
    for w in sorted({float(x) for x in assumed_idle_w}):
        share = w / power
        rows.append({"assumed_idle_w": w, "rows": len(power), "idle_majority_rows": int((share > 0.5).sum()),
                     "idle_share_min": share.min(), "idle_share_median": float(np.median(share)),
                     "idle_share_max": share.max(), "net_not_positive_rows": int((share >= 1).sum())})
    return pd.DataFrame(rows)


def describe_idle_share(sensitivity: pd.DataFrame, reference: pd.DataFrame) -> str:
    """Whether most of what the study tabulated is the board's idle draw, over the assumed idle powers
    (Markdown from :func:`idle_sensitivity`): said only where every assumption supports it."""
    n = int(sensitivity["rows"].iloc[0])
    lo, hi = (sensitivity.iloc[i].to_dict() for i in (0, -1))
    lo_rows, hi_rows = int(lo["idle_majority_rows"]), int(hi["idle_majority_rows"])
    power = effective_power(reference)
    top, bottom = power.idxmax(), power.idxmin()
    every, none = power[top] / 2, power[bottom] / 2
    assumed = fmt_span(sensitivity["assumed_idle_w"], lambda w: f"{w:g} W")
    shares = fmt_span([sensitivity["idle_share_min"].min(), sensitivity["idle_share_max"].max()],
                      lambda x: fmt_percent(x, 0))
    where = (f" Idle draw would be most of every row from an idle power of {every:.2f} W (half the highest "
             f"power the table implies, {reference.at[top, 'algorithm']} {reference.at[top, 'operation']}), "
             f"and of no row below {none:.2f} W.")
    if lo_rows == n:
        text = (f"For every assumed idle power from {assumed}, an idle board would have drawn most of each "
                f"published energy (shares {shares}): **most of what the study tabulated is the board's idle "
                "draw**, not the cryptography.")
    elif hi_rows == 0:
        text = (f"For no assumed idle power from {assumed} would an idle board have drawn most of any "
                f"published energy (shares {shares}): the tabulated energy is mostly the operations' own "
                "draw.")
    else:
        text = (f"Whether most of what the study tabulated is the board's idle draw depends on its idle "
                f"power, which the study does not state: assuming {lo['assumed_idle_w']:g} W, idle draw is "
                f"most of the energy in {lo_rows} of {n} rows; assuming {hi['assumed_idle_w']:g} W, in "
                f"{hi_rows}.")
    text += where
    bad = sensitivity[sensitivity["net_not_positive_rows"] > 0]
    if len(bad):
        b = bad.iloc[0]
        text += (f" From {b['assumed_idle_w']:g} W, {int(b['net_not_positive_rows'])} rows would have no "
                 "energy above idle: an idle power that high contradicts them.")
    return text


def describe_sensor_resolution(reference: pd.DataFrame, setup: pd.DataFrame,
                               min_periods: int = MIN_SAMPLE_PERIODS) -> str:
    """Which published rows a sensor at the study's sample rate cannot resolve per call (Markdown)."""
    period_ms = sample_period_ms(setup)
    periods = reference["time_ms"] / period_ms
    short, few = reference[periods < 1], reference[(periods >= 1) & (periods < min_periods)]
    rate = (f"At the study's {setup_value(setup, 'power_sample_rate'):g} Hz its sensor gives one sample "
            f"every {fmt_time_ms(period_ms)}")
    if short.empty:
        text = f"{rate}; every published operation lasts at least that long."
    else:
        text = (f"{rate}; {len(short)} of {len(reference)} published rows last less than that "
                f"({_rows_by_algorithm(short, reference)}; {fmt_span(short['time_ms'], fmt_time_ms)}), so a "
                "window around one call holds at most one power sample: **their power cannot have been "
                "measured per call**, and the study does not say that it averaged back-to-back calls.")
    if len(few):
        text += (f" {len(few)} more rows last fewer than {min_periods} sample periods, the least that "
                 "pqlab's own energy windows span (it repeats a call until they do).")
    return text


def _rows_by_algorithm(rows: pd.DataFrame, reference: pd.DataFrame) -> str:
    """'every operation of A and B; C encaps; D keygen and verify' for a subset of published rows."""
    def joined(items) -> str:
        items = list(items)
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    every, some = [], []
    for algorithm, g in rows.groupby("algorithm", sort=False):
        if len(g) == (reference["algorithm"] == algorithm).sum():
            every.append(algorithm)
        else:
            some.append(f"{algorithm} {joined(g['operation'])}")
    return "; ".join(([f"every operation of {joined(every)}"] if every else []) + some)


def replay_reference(reference: pd.DataFrame, assumed_idle_w, folder: str | Path | None = None,
                     gap_s: float = 0.1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reconstruct step traces from the published times and powers (NOT measurements; the study names no
    statistic for its times, its prose calls its powers mean power) at the lowest and highest
    assumed idle power, replay them through :class:`pqlab.runners.energy.ReplaySource` and compare:
    ``(table, traces)``.

    ``table``: per assumed idle power and published row, time and power as published, the replayed window
    time, gross and net energy, and their relative differences from time x power and time x (power - idle).
    ``traces``: per trace, its idle power, points, windows and file (under ``folder``, if given)."""
    frames, traces = [], []
    for idle_w in sorted({min(assumed_idle_w), max(assumed_idle_w)}):
        trace = trace_from_reference(reference, idle_w=idle_w, gap_s=gap_s)
        replayed = ReplaySource(trace).trace.results(idle_s=gap_s)
        path = None
        if folder is not None:
            name = f"pi4_reconstructed_idle_{slug(f'{idle_w:g}')}W.csv"
            path = write_trace(trace, (Path(folder) / name).resolve())
        traces.append({"idle_w": idle_w, "points": len(trace.t_s), "windows": len(trace.windows),
                       "path": path, "source": trace.source})
        t, p = reference["time_ms"].to_numpy(float), reference["power_w"].to_numpy(float)
        table = pd.DataFrame({
            "idle_w": idle_w, "kind": reference["kind"].to_numpy(),
            "algorithm": reference["algorithm"].to_numpy(),
            "operation": reference["operation"].to_numpy(), "time_ms": t, "power_w": p,
            "published_energy_uj": reference["energy_uj"].to_numpy(),
            "replay_time_ms": convert_unit(replayed["time_ns"].to_numpy(), "ns", "ms"),
            "replay_gross_uj": replayed["gross_energy_uj"].to_numpy(),
            "replay_net_uj": replayed["energy_uj"].to_numpy(),
            "replay_baseline_w": replayed["baseline_w"].to_numpy(), "source": replayed["source"].to_numpy()})
        # ms x W = mJ
        table["gross_vs_time_x_power"] = table["replay_gross_uj"] / convert_unit(t * p, "mJ", "µJ") - 1
        excess_uj = convert_unit(t * (p - idle_w), "mJ", "µJ")
        table["net_vs_time_x_excess_power"] = table["replay_net_uj"] / excess_uj - 1
        frames.append(table)
    return pd.concat(frames, ignore_index=True), pd.DataFrame(traces)


def replay_check(table: pd.DataFrame, exact: float = 1e-9) -> pd.DataFrame:
    """The replay's checks as plain rows (deterministic): what is reproduced, and how closely."""
    assumed = ", ".join(f"{w:g} W" for w in table["idle_w"].unique())
    rows = int((table["idle_w"] == table["idle_w"].iloc[0]).sum())
    checks = {"replayed window time = published time":
              (table["replay_time_ms"] / table["time_ms"] - 1).abs().max(),
              "replayed gross energy = published time x power": table["gross_vs_time_x_power"].abs().max(),
              "replayed net energy = time x (power - assumed idle)":
              table["net_vs_time_x_excess_power"].abs().max()}
    return pd.DataFrame([{"check": k, "rows": rows, "assumed idle": assumed, "holds": bool(v < exact),
                          "detail": f"max |relative difference| < {exact:g}"} for k, v in checks.items()])


def replay_long(table: pd.DataFrame) -> pd.DataFrame:
    """The replay in the long form: basis ``replay (gross)`` once, and ``replay (net of assumed idle W)``
    for each assumed idle power."""
    meta = registry_meta(table["algorithm"])

    def long(t: pd.DataFrame, energy: str, basis: str) -> pd.DataFrame:
        return pd.DataFrame({
            "kind": t["kind"], "family": t["algorithm"].map(lambda a: meta[a][0]),
            "nist_level": t["algorithm"].map(lambda a: meta[a][1]).astype("Int64"),
            "algorithm": t["algorithm"], "backend": "Pi 4 study", "operation": t["operation"],
            "message_bytes": pd.array([pd.NA] * len(t), dtype="Int64"), "time_ms": t["replay_time_ms"],
            "source": t["source"], "energy_uj": t[energy], "basis": basis})

    groups = list(table.groupby("idle_w", sort=True))
    return pd.concat([long(groups[0][1], "replay_gross_uj", REPLAY_GROSS)]
                     + [long(g, "replay_net_uj", replay_net_basis(w)) for w, g in groups], ignore_index=True)


def replay_markdown(table: pd.DataFrame, traces: pd.DataFrame) -> str:
    """What the replay is, what it shows and what it is not (generated)."""
    def where(path) -> str:
        path = Path(path)
        return f", `{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}`"

    files = "; ".join(f"idle {r.idle_w:g} W: {r.points} points, {r.windows} windows"
                      + (where(r.path) if r.path is not None else "") for r in traces.itertuples())
    rows = int((table["idle_w"] == table["idle_w"].iloc[0]).sum())
    return (f"The replay is **{REPLAY_NOTE}** (source label `{traces['source'].iloc[0]}`): one rectangle of "
            "published power per row, for the published time, between idle stretches at the lowest and the "
            f"highest **assumed** idle power ({files}). Integrating it reproduces time × power for all "
            f"{rows} rows, so the integration a live sensor's trace goes through is right; it cannot add "
            "information the published values did not have (the study names no statistic for its times; its "
            "prose calls its powers mean power).")


def describe_study(reference: pd.DataFrame, setup: pd.DataFrame) -> str:
    """What the study measured and on what, from the transcription (Markdown)."""
    def fact(name: str) -> str:
        unit = setup.set_index("parameter").at[name, "unit"]
        return setup_text(setup, name) + ("" if pd.isna(unit) else f" {'Ω' if unit == 'ohm' else unit}")

    counts = reference.drop_duplicates("algorithm")["kind"].value_counts()
    aeads = int(setup_value(setup, "algorithms_tested")) - int(counts.sum())
    seed = reference.attrs["source"]["seed"].removesuffix(".txt")
    return (f"**Reproduces** study `{seed}`: time, mean power and energy per operation on a "
            f"{fact('platform')} ({fact('cores')} cores, CPU '{fact('cpu')}', governor "
            f"{fact('cpu_governor')}, liboqs '{fact('liboqs')}', Python {fact('python')}) with an "
            f"{fact('power_sensor')} sampled at {fact('power_sample_rate')} ({fact('i2c_address')} on I2C "
            f"bus {fact('i2c_bus')}, {fact('shunt_resistor')} shunt, {fact('warmup')} warm-up and "
            f"{fact('cooldown')} cool-down), for {counts.get('kem', 0)} KEMs and {counts.get('sig', 0)} "
            f"signatures (tables of {len(reference)} rows, transcribed) and {aeads} AEADs (a chart and prose "
            "only: no AEAD number was published).")


def setup_text(setup: pd.DataFrame, name: str) -> str:
    """One set-up fact of the study, as published."""
    return str(setup.set_index("parameter").at[name, "value"])


def setup_value(setup: pd.DataFrame, name: str) -> float:
    return float(setup_text(setup, name))


def current_a(setup: pd.DataFrame, name: str) -> float:
    """A current the study states (its set-up gives mA) in amperes."""
    return convert_unit(setup_value(setup, name), "mA", "A")


def sample_period_ms(setup: pd.DataFrame) -> float:
    """The time between two samples of the study's sensor (ms): one second over its sample rate (Hz)."""
    return convert_unit(1.0, "s", "ms") / setup_value(setup, "power_sample_rate")


def envelope_w(setup: pd.DataFrame) -> float:
    """The most power the study's prose voltage and current ranges allow (W)."""
    # V x mA = mW
    return convert_unit(setup_value(setup, "voltage_max") * setup_value(setup, "current_max"), "mW", "W")


def envelope_markdown(setup: pd.DataFrame, reference: pd.DataFrame) -> str:
    """Whether the study's prose voltage and current ranges can produce its tabulated powers."""
    v1, i1, limit = setup_value(setup, "voltage_max"), current_a(setup, "current_max"), envelope_w(setup)
    above = reference[reference["power_w"] > limit]
    return (f"The stated envelope allows at most {v1:g} V x {i1:g} A = {limit:.2f} W, but {len(above)} of "
            f"{len(reference)} published rows exceed it (up to {reference['power_w'].max():g} W"
            + (f", e.g. {above.sort_values('power_w').iloc[-1]['algorithm']} "
               f"{above.sort_values('power_w').iloc[-1]['operation']}" if len(above) else "")
            + "): the prose ranges and the table cannot both describe the same measurements."
            if len(above) else f"Every published power lies within the stated envelope's {limit:.2f} W.")
