"""Notebook 06's figures (house style of :mod:`pqlab.publish.plotting`): the server's first flight against
TCP's initial window and the QUIC allowance, and handshakes per second relative to the baseline."""
from __future__ import annotations

import pandas as pd

from pqlab.publish import plotting
from pqlab.studies.tls_handshake.measure import BASELINE
from pqlab.studies.tls_handshake.model import QUIC_AMPLIFICATION, QUIC_INITIAL, TCP_INITCWND, TCP_SEGMENT


@plotting.styled
def plot_first_flight(budget: pd.DataFrame, mode: str = "server-auth", width: float = plotting.FULL_WIDTH):
    """The server's first flight per pair and chain depth, against TCP's initial window and the QUIC
    allowance."""
    df = budget[budget["mode"] == mode].assign(chain=lambda d: "depth " + d["depth"].astype(str))
    fig = plotting.grouped_bars(df, category="pair", group="chain", value="S1", log=False, width=width,
                                ylabel="server's first flight (bytes on the wire)")
    ax = fig.axes[0]
    for limit, text, colour, style in ((TCP_SEGMENT * TCP_INITCWND,
                                        f"TCP initcwnd {TCP_INITCWND} x {TCP_SEGMENT} B", "0.2", "--"),
                                       (QUIC_AMPLIFICATION * QUIC_INITIAL,
                                        f"QUIC {QUIC_AMPLIFICATION} x {QUIC_INITIAL} B", "0.5", ":")):
        if plotting.categories_on_y(ax):  # bars along x (a narrow figure)
            ax.axvline(limit, color=colour, lw=0.8, ls=style)
            ax.annotate(text, (limit, 1.0), xycoords=("data", "axes fraction"), fontsize=plotting.SMALL_PT,
                        rotation=90, xytext=(2, -2), textcoords="offset points", va="top")
        else:
            ax.axhline(limit, color=colour, lw=0.8, ls=style)
            ax.annotate(text, (0, limit), fontsize=plotting.SMALL_PT, xytext=(0, 2),
                        textcoords="offset points")
    return fig


@plotting.styled
def plot_rates(rates: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Handshakes per second per core relative to the baseline, with intervals where the rows have them."""
    df = rates.assign(config=lambda d: d["mode"] + ", depth " + d["depth"].astype(str))
    fig = plotting.grouped_bars(df, category="pair", group="config", value="vs_baseline",
                                low="vs_baseline_low", high="vs_baseline_high", log=False, width=width,
                                ylabel="handshakes/s per core / baseline's",
                                title=f"Baseline: {BASELINE[0]} + {BASELINE[1]}")
    ax = fig.axes[0]
    (ax.axvline if plotting.categories_on_y(ax) else ax.axhline)(1.0, color="0.3", lw=0.8, ls=":")
    return fig
