"""The figures lay themselves out for both widths, with as many categories as the full profile measures:
pqlab.publish.export.save_figure refuses text under 6 pt, text outside the figure, overlapping tick labels and
a footer under anything, so each case here passing means the figure is legible at both widths.

The quick profile's notebooks (make test) draw few algorithms; these draw as many as the full profile
(every liboqs signature in notebook 04, thirty algorithms in notebook 03, sixty ranked operations in 05).
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import fake_run  # noqa: E402
from matplotlib.layout_engine import PlaceHolderLayoutEngine  # noqa: E402

from pqlab.liboqs.loader import import_oqs  # noqa: E402
from pqlab.publish import export, figure_layout, plotting  # noqa: E402
from pqlab.studies import memory_footprint, signature_cycles  # noqa: E402
from pqlab.studies.energy_pi4 import figures as energy_pi4_figures  # noqa: E402

RNG = np.random.default_rng(7)
# every signature liboqs enables: the full run's set
SIGNATURES = list(import_oqs().get_enabled_sig_mechanisms())


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def saved(out, draw, name: str) -> dict:
    export.save_figure(draw, "t", name, runs=[fake_run()], formats=("pdf",))
    return {p.name for p in (out / "figures" / "t").iterdir()}


def test_many_categories_become_rows_of_dots_at_both_widths(export_tree):
    assert len(SIGNATURES) > 50
    df = pd.DataFrame([{"algorithm": a, "operation": op, "value": RNG.uniform(1, 5)} for a in SIGNATURES
                       for op in ("keygen", "sign", "verify")])
    files = saved(export_tree, lambda w: plotting.grouped_bars(df, category="algorithm", group="operation",
                                                               value="value", width=w), "dots")
    assert {"dots.pdf", "dots.col.pdf"} <= files
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value="value", width=3.3)
    assert plotting.categories_on_y(fig.axes[0]) and fig.get_figheight() < 9  # fits a page's column


def test_signature_speedups_of_every_liboqs_signature(export_tree):
    df = pd.DataFrame([{"table_family": "lattice", "algorithm": a, "operation": op,
                        "speedup": RNG.uniform(0.8, 6)}
                       for a in SIGNATURES for op in signature_cycles.SIGNATURE_OPERATIONS])
    counter = {"basis": "cycles", "unit": "core cycles"}
    saved(export_tree, lambda w: signature_cycles.plot_speedups(df, counter, width=w), "speedups")


def test_memory_peaks_of_thirty_algorithms(export_tree):
    names = SIGNATURES[:30]
    memory = pd.DataFrame([{"algorithm": a, "backend": "liboqs", "family": "lattice", "operation": op,
                            "message_bytes": None if op == "keygen" else 32,
                            "heap_bytes": RNG.integers(0, 90000), "stack_bytes": RNG.integers(1000, 60000)}
                           for a in names for op in ("keygen", "sign", "verify")])
    saved(export_tree, lambda w: memory_footprint.plot_peaks(memory, width=w), "peaks")


def test_energy_ranking_of_sixty_operations(export_tree):
    labels = [f"{a} {op}" for a in SIGNATURES for op in ("keygen", "sign")][:60]
    ranking = pd.DataFrame({"label": labels, "ops_per_joule": np.sort(RNG.uniform(10, 1e6, 60))[::-1],
                            "family": "lattice"})
    saved(export_tree,
          lambda w: energy_pi4_figures.plot_ranking(ranking, "Operations per joule, Pi 4 study", width=w),
          "ranking")


def test_a_heatmap_of_every_metric(export_tree):
    matrix = pd.DataFrame(RNG.uniform(0.01, 2e6, (30, 6)), index=[f"{a} sign" for a in SIGNATURES[:30]],
                          columns=["time here (ms)", "time Pi 4 (ms)", "power Pi 4 (W)",
                                   "energy Pi 4, gross (µJ)", "Pi 4 / here", "energy here, measured (µJ)"])
    saved(export_tree, lambda w: energy_pi4_figures.plot_heatmap(matrix, width=w), "heatmap")


def test_long_titles_wrap_to_the_width(export_tree):
    title = "Gravity-SPHINCS (Small) as published, beside the SPHINCS+ and SLH-DSA small sets measured here"
    df = pd.DataFrame({"label": ["a", "b"], "g": ["x", "x"], "v": [1.0, 2.0]})
    fig = plotting.grouped_bars(df, category="label", group="g", value="v", title=title,
                                width=plotting.COLUMN_WIDTH)
    figure_layout.fit_titles(fig)
    assert "\n" in fig.axes[0].get_title() and " ".join(fig.axes[0].get_title().split()) == title
    saved(export_tree, lambda w: plotting.grouped_bars(df, category="label", group="g", value="v",
                                                       title=title, width=w), "title")


def test_the_footer_goes_under_a_legend_below_the_axes(export_tree):
    """Legends placed outside the axes at the bottom and the footer line do not meet."""
    df = pd.DataFrame([{"label": f"alg-{i}", "op": op, "v": 1.0 + i} for i in range(4)
                       for op in ("sign", "verify")])
    saved(export_tree, lambda w: plotting.grouped_bars(df, category="label", group="op", value="v", width=w),
          "legend")
    fig = plotting.grouped_bars(df, category="label", group="op", value="v", width=plotting.COLUMN_WIDTH)
    footer = export._add_footer(fig, "a long footer line " * 8)
    fig.canvas.draw()
    assert not footer.get_window_extent().overlaps(fig.legends[0].get_window_extent())


@pytest.mark.parametrize("height_in, repeats", [(2.0, 8), (25.0, 60)])
def test_a_footer_of_many_lines_keeps_off_the_legend_of_a_tall_figure(height_in, repeats):
    """The footer's band is as tall as its text as drawn, and the text sits a fixed distance above the bottom
    edge: the atlas's cross-platform figure (25 in tall, a context line of a dozen run ids wrapped into ten
    lines at column width) had its legend 0.15 px into the footer, and the run stopped on it."""
    @plotting.styled
    def draw(width):
        fig, ax = plt.subplots(figsize=(width, height_in))
        ax.plot([1, 2], [1, 2], label="one")
        ax.plot([1, 2], [2, 1], label="two")
        plotting.figure_legend(fig, ax.get_legend_handles_labels(), 2)
        return fig

    fig = draw(plotting.COLUMN_WIDTH)
    footer = export._add_footer(fig, "run 20261123T212200Z-07_atlas-default-4bea2b " * repeats)
    fig.canvas.draw()
    lines = footer.get_text().count("\n") + 1
    assert lines >= (8 if repeats > 10 else 1)
    box = footer.get_window_extent()
    assert box.y0 >= 1 and not box.overlaps(fig.legends[0].get_window_extent())
    export.check_layout(fig, "tall", footer)
    plt.close(fig)


def test_a_legend_label_wider_than_a_column_wraps_and_each_label_shows_once(export_tree):
    """A platform label of the atlas (CPU, build, host, machine id, counter) is wider than a column: it wraps
    at spaces instead of running off the figure, and a label drawn by several artists is listed once."""
    label = "AMD EPYC · x86_64 · liboqs default · this host · 52f4557ba4a6 · tsc at 2.445 GHz"

    @plotting.styled
    def draw(width):
        fig, ax = plt.subplots(figsize=(width, 2.0))
        for y in (1, 2):
            ax.plot([1, 2], [y, y], label=label)
        ax.plot([1, 2], [3, 3], label="Raspberry Pi 4 (study 004)")
        plotting.figure_legend(fig, ax.get_legend_handles_labels(), 2)
        return fig

    fig = draw(plotting.COLUMN_WIDTH)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(texts) == 2 and "\n" in texts[0] and " ".join(texts[0].split()) == " ".join(label.split())
    export.check_layout(fig, "legend")  # nothing outside the figure, nothing overlapping
    saved(export_tree, draw, "long_legend")


def test_a_figure_whose_wrapped_titles_leave_its_axes_no_room_grows(export_tree):
    """Wrapped titles take height; where the layout would leave the axes none (constrained layout gives up and
    texts overlap), fit_titles makes the figure taller instead."""

    @plotting.styled
    def draw(width):
        fig, ax = plt.subplots(figsize=(width, 1.0))
        ax.plot([1, 2], [1, 2])
        fig.suptitle("which algorithms lose or gain from one platform to another, against a reference " * 2)
        ax.set_xlabel("ratio on the platform over the ratio on the reference platform, with its "
                      "interval " * 2)
        return fig

    fig = draw(plotting.COLUMN_WIDTH)
    figure_layout.fit_titles(fig)
    assert fig.get_figheight() > 1.0
    export.check_layout(fig, "grown")


def test_draw_lays_out_again_only_what_changed():
    """plotting.draw: a new figure is drawn, an unchanged one is not drawn again, a changed one is; measuring
    tick labels (turning them to measure, and back) leaves nothing to draw again."""
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks(range(8), [f"label {i}" for i in range(8)])
    draws = []
    fig.canvas.mpl_connect("draw_event", lambda event: draws.append(1))
    plotting.draw(fig)
    assert len(draws) == 1
    assert figure_layout.overlapping_tick_labels(ax.xaxis, rotation=90) is None  # labels measured upright
    assert figure_layout.overlapping_tick_labels(ax.xaxis) is not None  # flat, they overlap
    plotting.draw(fig)
    assert len(draws) == 1, "measuring labels made the figure draw again"
    ax.set_title("changed")
    plotting.draw(fig)
    assert len(draws) == 2
    figure_layout.fit_titles(fig)  # draws at least once, catching the layout's warnings
    assert len(draws) == 3


def test_the_layout_saved_is_the_one_checked(export_tree, monkeypatch):
    """save_figure fixes the layout it checked before writing the formats: saving does not lay the figure out
    again (at 300 dpi a fresh layout moves texts by fractions of a pixel the check never saw).  Both widths
    are drawn in this process, so that the test sees them."""
    monkeypatch.setattr(export, "FORK_FIGURES", False)
    fig_seen = []

    @plotting.styled
    def draw(width):
        fig, ax = plt.subplots(figsize=(width, 2))
        ax.plot([1, 2], [1, 2])
        fig_seen.append(fig)
        return fig

    export.save_figure(draw, "t", "frozen", runs=[], formats=("png",))
    assert len(fig_seen) == 2  # both widths
    assert all(isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine) for fig in fig_seen)


def test_two_line_category_labels_too_many_to_stand_upright_run_down_the_side(export_tree):
    """Notebook 05's full run: ten KEMs, one labelled on two lines ("X25519\\n(cryptography)"), at the column
    width.  Upright two-line labels need twice a line's width per category; where that is more than a category
    has, the categories run down the side (the check refused the upright ones, which overlapped)."""
    cats = [f"HQC-{n}" for n in (128, 192, 256)] + [f"McEliece-{n}" for n in (348864, 460896, 8192128)] + \
        ["X25519\n(cryptography)"] + [f"ML-KEM-{n}" for n in (512, 768, 1024)]
    df = pd.DataFrame([{"algorithm": c, "operation": op, "value": RNG.uniform(1, 5)} for c in cats
                       for op in ("keygen", "encaps", "decaps")])
    files = saved(export_tree, lambda w: plotting.grouped_bars(df, category="algorithm", group="operation",
                                                               value="value", width=w), "two_lines")
    assert {"two_lines.pdf", "two_lines.col.pdf"} <= files
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value="value",
                                width=plotting.COLUMN_WIDTH)
    assert plotting.categories_on_y(fig.axes[0])


def test_whiskers_and_bands_say_what_they_are():
    """Issue #45: figures with whiskers did not say that the whiskers are quartiles."""
    df = pd.DataFrame({"algorithm": ["A", "B"], "operation": ["sign", "sign"], "time_ns_median": [1e3, 2e3],
                       "time_ns_q1": [9e2, 1.8e3], "time_ns_q3": [1.1e3, 2.2e3],
                       "time_ns_ci_low": [9.5e2, 1.9e3], "time_ns_ci_high": [1.05e3, 2.1e3], "x": [1, 2]})
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value="time_ns_median",
                                low="time_ns_q1", high="time_ns_q3", unit="µs", horizontal=False)
    assert fig.axes[0].get_ylabel().endswith("(whiskers: quartiles)")
    fig = plotting.hbars(df, label="algorithm", value="time_ns_median", hue="operation",
                         low="time_ns_ci_low", high="time_ns_ci_high")
    assert fig.axes[0].get_xlabel().endswith("(whiskers: 95 % interval)")
    fig = plotting.lines(df, x="x", y="time_ns_median", hue="operation", low="time_ns_ci_low",
                         high="time_ns_ci_high")
    assert fig.axes[0].get_ylabel().endswith("(band: 95 % interval)")
    assert plotting.interval_note(None, None) == ""
    plt.close("all")


def test_a_ranking_on_a_log_axis_draws_points_not_bars():
    """Issue #45: bars on a log axis (a bar's length there depends on where the axis starts)."""
    from matplotlib.patches import Rectangle

    df = pd.DataFrame({"label": ["a", "b"], "v": [2.0, 30.0], "family": ["lattice", "hash-based"]})
    log = plotting.hbars(df, label="label", value="v", log=True)
    assert not [p for p in log.axes[0].patches if isinstance(p, Rectangle)] and log.axes[0].collections
    linear = plotting.hbars(df, label="label", value="v", log=False)
    assert len([p for p in linear.axes[0].patches if isinstance(p, Rectangle)]) == 2
    plt.close("all")
