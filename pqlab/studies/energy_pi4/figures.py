"""Figures of notebook 05 (energy per operation, study 004): every drawing function is
decorated with :func:`pqlab.publish.plotting.styled` and returns a Figure; the data they draw come from
:mod:`pqlab.studies.energy_pi4.tables` and :mod:`pqlab.studies.energy_pi4.published`."""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.formatting import unit_divisor
from pqlab.core.schema import convert_unit
from pqlab.publish import figure_layout, plotting
from pqlab.studies.energy_pi4.names import (
    KIND_LABEL,
    MEASURED_GROSS,
    MEASURED_NET,
    OPERATION_ORDER,
    USE,
    scheme_of,
    short_name,
    sorted_rows,
)
from pqlab.studies.energy_pi4.published import (
    PUBLISHED,
    REPLAY_GROSS,
    current_a,
    effective_power,
    reference_long,
    registry_meta,
    setup_value,
)
from pqlab.studies.energy_pi4.tables import use_totals

#: The operations' roles, so KEMs and signatures share colours in one chart.
PANEL = {"keygen": "keygen", "encaps": "encaps / sign", "sign": "encaps / sign", "decaps": "decaps / verify",
        "verify": "decaps / verify", "encrypt": "encrypt", "decrypt": "decrypt"}


def basis_colors(bases) -> dict:
    """A stable colour per energy basis (published, replayed, measured, modelled)."""
    fixed = {PUBLISHED: plotting.PALETTE[0], REPLAY_GROSS: plotting.PALETTE[5],
             MEASURED_NET: plotting.PALETTE[2], MEASURED_GROSS: plotting.PALETTE[3]}
    out = {}
    for b in dict.fromkeys(bases):
        out[b] = fixed.get(b) or (plotting.PALETTE[1] if str(b).startswith("replay") else plotting.PALETTE[4])
    return out


def _two_lines(name: str, width: int = 10) -> str:
    """Long labels broken at their last hyphen."""
    return name if len(name) <= width or "-" not in name else "-\n".join(name.rsplit("-", 1))


@plotting.styled
def plot_times(times: pd.DataFrame, kind: str, title: str = "", width: float = plotting.FULL_WIDTH):
    """Our median time per operation, quartile whiskers, one bar group per algorithm."""
    df = sorted_rows(times[times["kind"] == kind]).copy()
    df["label"] = (df["algorithm"].map(short_name)
                   + np.where(df["backend"] == "liboqs", "", "\n(" + df["backend"] + ")"))
    return plotting.grouped_bars(df, category="label", group="operation", value="time_ms", low="q1_ms",
                                 high="q3_ms", ylabel="time per operation (ms, log)", width=width,
                                 title=title or f"{KIND_LABEL[kind]}s here: median and quartiles")


@plotting.styled
def plot_reference_power(reference: pd.DataFrame, setup: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """The study's mean power per operation (linear axis), KEMs then signatures, with the
    3.3-3.7 W range its prose states."""
    df = sorted_rows(reference.assign(family=reference["algorithm"].map(lambda a: registry_meta([a])[a][0])))
    df = df.assign(label=df["algorithm"].map(short_name), role=df["operation"].map(PANEL))
    fig = plotting.grouped_bars(df, category="label", group="role", value="power_w", log=False, width=width,
                                horizontal=False, legend=False, ylabel="mean power (W, whole board)",
                                title="Pi 4 study, published: mean power during each operation")
    ax = fig.axes[0]
    lo, hi = setup_value(setup, "power_min"), setup_value(setup, "power_max")
    ax.axhspan(lo, hi, color="0.88", zorder=0, label=f"range stated in the prose, {lo:g}-{hi:g} W")
    n_kem = df[df["kind"] == "kem"]["label"].nunique()
    top = df["power_w"].max() * 1.06
    ax.axvline(n_kem - 0.5, color="0.3", lw=0.8)
    ax.text(n_kem / 2 - 0.5, top, "KEMs", ha="center", va="top", fontsize=7)
    ax.text(n_kem + (df["label"].nunique() - n_kem) / 2 - 0.5, top, "signatures", ha="center", va="top",
            fontsize=7)
    ax.set_ylim(3.0, top * 1.01)
    plotting.figure_legend(fig, ax.get_legend_handles_labels(), max_cols=2)
    return fig


@plotting.styled
def plot_energy_bases(long: pd.DataFrame, kind: str, title: str = "", width: float = plotting.FULL_WIDTH):
    """Energy per operation of one kind: one panel per operation, one bar per basis (published,
    replayed, measured, modelled) for each algorithm."""
    import matplotlib.pyplot as plt

    df = sorted_rows(long[long["kind"] == kind])
    df = df.assign(label=lambda d: d["algorithm"].map(short_name).map(_two_lines))
    ops = [o for o in OPERATION_ORDER if o in set(df["operation"])]
    colors = basis_colors(df["basis"])
    narrow = width < 4.5  # a column: the operations side by side, the algorithms down the side
    labels = df["label"].drop_duplicates()
    if narrow:
        height = 1.4 + plotting.category_rows(labels, df["basis"].nunique())
        fig, axes = plt.subplots(1, len(ops), figsize=(width, height), sharey=True, squeeze=False)
    else:
        fig, axes = plt.subplots(len(ops), 1, figsize=(width, 1.55 * len(ops) + 0.5), sharex=True,
                                 squeeze=False)
    axes = axes.ravel()
    for ax, op in zip(axes, ops, strict=True):
        sub = df[df["operation"] == op]
        plotting.grouped_bars(labels.to_frame().merge(sub, how="left"), category="label", group="basis",
                              value="energy_uj", ylabel=f"{op}\n(µJ, log)" if narrow else f"{op} (µJ, log)",
                              colors=colors, ax=ax, legend=False, horizontal=narrow)
    plotting.figure_legend(fig, axes[0].get_legend_handles_labels(), max_cols=2)
    fig.suptitle(title or f"{KIND_LABEL[kind]}s: energy per operation by basis")
    figure_layout.fit_panel_labels(axes, narrow)
    return fig


@plotting.styled
def plot_aead_scaling(times: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """AEAD time per message and throughput against payload size (encrypt solid, decrypt dashed)."""
    import matplotlib.pyplot as plt

    df = times[times["kind"] == "cipher"].dropna(subset=["message_bytes"]).copy()
    df["message_bytes"] = df["message_bytes"].astype(float)
    df["series"] = df["algorithm"] + " " + df["operation"]
    df["mib_s"] = convert_unit(df["message_bytes"], "bytes", "MiB") / convert_unit(df["time_ms"], "ms", "s")
    base = plotting.color_map(sorted(df["algorithm"].unique()))
    colors = {s: base[s.rsplit(" ", 1)[0]] for s in df["series"]}
    narrow = width < 4.5
    fig, axes = plt.subplots(2 if narrow else 1, 1 if narrow else 2, figsize=(width, 4.6 if narrow else 2.9))
    for ax, (y, label) in zip(axes, (("time_ms", "time per message (ms, log)"),
                                     ("mib_s", "throughput (MiB/s, log)")), strict=True):
        plotting.lines(df.sort_values(["algorithm", "operation"], ascending=[True, False]), x="message_bytes",
                       y=y, hue="series", xlabel="payload (bytes, log)", ylabel=label, logx=True, logy=True,
                       colors=colors, ax=ax)
        for line in ax.get_lines():
            if line.get_label().endswith("decrypt"):
                line.set_linestyle("--")
        ax.get_legend().remove()
    plotting.figure_legend(fig, axes[0].get_legend_handles_labels(), 3)
    fig.suptitle("AEAD payload scaling here (encrypt solid, decrypt dashed)")
    return fig


@plotting.styled
def plot_ranking(ranking: pd.DataFrame, title: str, n: int | None = None, width: float = plotting.FULL_WIDTH):
    """Operations per joule, best at the top, coloured by family."""
    df = ranking.head(n) if n else ranking
    return plotting.hbars(df, label="label", value="ops_per_joule", xlabel="operations per joule (log)",
                          title=title, width=width)


@plotting.styled
def plot_time_energy(long: pd.DataFrame, title: str, labels_per_scheme: int = 1,
                     width: float = plotting.FULL_WIDTH):
    """Energy against time, log-log, one point per operation, coloured by family; lines of constant
    power through the lowest and highest mean power; the costliest operation(s) of each scheme named."""
    # a log axis: net values lost in noise drop out
    long = long[pd.to_numeric(long["energy_uj"], errors="coerce") > 0]
    df = long.assign(point=long["algorithm"].map(short_name) + " " + long["operation"])
    fig = plotting.scatter(df, x="time_ms", y="energy_uj", label=None, xlabel="time per operation (ms, log)",
                           ylabel="energy per operation (µJ, log)", title=title, width=width,
                           height=3.2, annotate=False)
    ax = fig.axes[0]
    named = df.assign(scheme=df["algorithm"].map(scheme_of)).sort_values("energy_uj", ascending=False)
    placed: list[tuple[float, float]] = []
    for r in named.groupby("scheme", sort=False).head(labels_per_scheme).itertuples():
        x, y = np.log10(r.time_ms), np.log10(r.energy_uj)
        if any(abs(x - a) < 0.6 and abs(y - b) < 0.3 for a, b in placed):
            continue  # too close to a label already placed
        placed.append((x, y))
        ax.annotate(r.point, (r.time_ms, r.energy_uj), fontsize=plotting.SMALL_PT, xytext=(-3, 3),
                    textcoords="offset points", ha="right")
    watts = effective_power(df)
    t = np.geomspace(df["time_ms"].min() / 1.5, df["time_ms"].max() * 1.5, 50)
    lines = ([(watts.min(), ":"), (watts.max(), "--")] if watts.max() > watts.min() * 1.001
             else [(watts.min(), "--")])
    for w, style in lines:
        ax.plot(t, convert_unit(w * t, "mJ", "µJ"), style, color="0.4", lw=0.8, label=f"constant {w:.2f} W")
    ax.legend(loc="upper left")
    return fig


@plotting.styled
def plot_nist_levels(times: pd.DataFrame, reference: pd.DataFrame | None = None,
                     width: float = plotting.FULL_WIDTH):
    """Time of one use here (top) and the study's energy of one use (bottom) against NIST level,
    one line per scheme; classical baselines as dotted horizontal lines (they have no level)."""
    import matplotlib.pyplot as plt

    t = use_totals(times)
    panels = [("time_ms", t, "time per use here (ms, log)")]
    if reference is not None:
        panels.append(("energy_uj", use_totals(reference_long(reference), "energy_uj"),
                       "energy per use, Pi 4 (µJ, log)"))
    schemes = pd.concat([d for _, d, _ in panels])[["algorithm", "family", "nist_level"]]
    schemes = schemes[schemes["nist_level"].notna()].assign(scheme=lambda d: d["algorithm"].map(scheme_of))
    colors = plotting.shaded_family_colors(schemes.sort_values(["family", "scheme"]), key="scheme")
    narrow = width < 4.5
    shape = (2 * len(panels), 1) if narrow else (len(panels), 2)
    fig, grid = plt.subplots(*shape, figsize=(width, (2.3 if narrow else 2.4) * shape[0]), squeeze=False)
    for row, (value, data, ylabel) in enumerate(panels):
        for col, kind in enumerate(("kem", "sig")):
            ax = grid[2 * row + col][0] if narrow else grid[row][col]
            d = data[data["kind"] == kind].assign(scheme=lambda x: x["algorithm"].map(scheme_of))
            pq = d[d["nist_level"].notna()].astype({"nist_level": float}).sort_values(["family", "scheme"])
            plotting.lines(pq, x="nist_level", y=value, hue="scheme", colors=colors, ax=ax,
                           xlabel="NIST level", logy=True)
            ax.set_ylabel(ylabel if col == 0 or narrow else "")
            for c in d[d["nist_level"].isna()].itertuples():
                ax.axhline(getattr(c, value), color="0.25", ls=":", lw=0.9,
                           label=f"{c.algorithm} (classical, no level)")
            ax.set_xticks([1, 2, 3, 4, 5])
            ax.set_xlim(0.7, 5.3)
            ax.legend(fontsize=plotting.SMALL_PT)
            ax.set_title(f"{KIND_LABEL[kind]}s ({' + '.join(USE[kind])}): "
                         + ("here" if row == 0 else "Pi 4, published"))
    return fig


@plotting.styled
def plot_voltage_current(setup: pd.DataFrame, reference: pd.DataFrame, samples: pd.DataFrame | None = None,
                         width: float = plotting.FULL_WIDTH):
    """Voltage against current: recorded samples (:func:`~.measure.vi_samples`) when there are any, and the
    operating envelope the study states in prose as a labelled box (no sample is drawn where none
    exists), with lines of constant power at the study's lowest and highest tabulated power."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    v0, v1 = setup_value(setup, "voltage_min"), setup_value(setup, "voltage_max")
    i0, i1 = current_a(setup, "current_min"), current_a(setup, "current_max")
    i0_ma, i1_ma = setup_value(setup, "current_min"), setup_value(setup, "current_max")
    fig, ax = plt.subplots(figsize=(width, 2.8 if width >= 4.5 else 3.2))
    has_vi = samples is not None and len(samples) > 0
    lo_i, hi_i, lo_v, hi_v = 0.55, 0.95, 4.6, 5.25
    if has_vi:
        ax.scatter(samples["current_a"], samples["voltage_v"], s=1.5, alpha=0.25, color=plotting.PALETTE[0],
                   edgecolors="none", rasterized=True,
                   label=f"{samples['source'].iloc[0]} samples here ({len(samples):,})")
        lo_i = min(lo_i, samples["current_a"].quantile(0.001))
        hi_i = max(hi_i, samples["current_a"].quantile(0.999))
        lo_v = min(lo_v, samples["voltage_v"].quantile(0.001))
        hi_v = max(hi_v, samples["voltage_v"].quantile(0.999))
    ax.add_patch(Rectangle((i0, v0), i1 - i0, v1 - v0, facecolor="0.8", edgecolor="0.2", lw=0.8, alpha=0.8,
                           zorder=3,
                           label=f"Pi 4 study, stated in prose: {v0:g}-{v1:g} V, {i0_ma:.0f}-{i1_ma:.0f} mA"))
    currents = np.linspace(lo_i, hi_i, 100)
    for watts, style, which in ((reference["power_w"].min(), "--", "lowest"),
                                (reference["power_w"].max(), "-.", "highest")):
        ax.plot(currents, watts / currents, style, color=plotting.PALETTE[1], lw=0.9,
                label=f"V x I = {watts:g} W (the study's {which} tabulated power)")
    ax.set_xlim(lo_i, hi_i)
    ax.set_ylim(lo_v, hi_v)
    ax.set_xlabel("current (A)")
    ax.set_ylabel("bus voltage (V)")
    ax.set_title("Voltage against current"
                 + ("" if has_vi else ": no samples exist, only the study's stated envelope"))
    ax.legend(fontsize=plotting.SMALL_PT, loc="lower left", markerscale=4, frameon=True, framealpha=0.95,
              edgecolor="none")
    return fig


@plotting.styled
def plot_heatmap(matrix: pd.DataFrame,
                 title: str = "All metrics (colour: position within each column, log scale)",
                 width: float = plotting.FULL_WIDTH):
    """Each column coloured by its own log range (units differ), cells annotated with the values."""
    logs = np.log10(matrix.where(matrix > 0).astype(float))
    span = (logs.max() - logs.min()).replace(0, 1)
    scaled = (logs - logs.min()) / span
    return plotting.heatmap(scaled, log=False, annotations=matrix, title=title, width=width,
                            cbar_label="within column: 0 = lowest, 1 = highest (log)")


@plotting.styled
def plot_cross_platform(ratios: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Pi 4 published time over our median per operation, largest at the top, with the interval from
    our samples as whiskers (the published side has none: the x label says so)."""
    fig = plotting.hbars(ratios, label="label", value="pi_over_here", low="pi_over_here_ci_low",
                         high="pi_over_here_ci_high",
                         xlabel="Pi 4 time (published, no interval) / our median (log)",
                         title="How much longer each operation took on the study's Pi 4", reference=1.0,
                         width=width)
    # the operations' names push the axes right: its value label ends where the axes end
    fig.axes[0].xaxis.label.set(horizontalalignment="right", x=1.0)
    return fig


@plotting.styled
def plot_idle_sensitivity(sensitivity, width: float = plotting.FULL_WIDTH):
    """The share of the published energies an idle board would have drawn, against the assumed idle
    power: median over the published rows, band from the smallest to the largest share (its legend entry
    says so); the line where idle draw becomes the majority."""
    series = "published rows: median share (band: smallest to largest)"
    df = sensitivity.assign(series=series).rename(
        columns=lambda c: c.replace("idle_share", "idle_fraction"))  # a fraction: unit="%" converts it
    fig = plotting.lines(df, x="assumed_idle_w", y="idle_fraction_median", hue="series", unit="%", logy=False,
                         xlabel="assumed idle power of the board (W)",
                         ylabel="idle draw / published energy (%)",
                         title="Pi 4 study: how much of each published energy is idle draw", width=width)
    ax = fig.axes[0]
    band = df.sort_values("assumed_idle_w")
    scale = unit_divisor("idle_fraction_median", "%")
    ax.fill_between(band["assumed_idle_w"], band["idle_fraction_min"] / scale,
                    band["idle_fraction_max"] / scale, color=ax.get_lines()[0].get_color(), alpha=0.2, lw=0)
    ax.axhline(50, color="0.3", lw=0.8, ls=":", label="half the energy")
    ax.set_ylim(0, 100)
    ax.legend(loc="lower right")
    return fig
