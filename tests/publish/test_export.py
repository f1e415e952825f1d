"""Exports: figures at two widths (checked for small, clipped and overlapping text), tables a paper can use
unedited (formatted per column kind, no run ids, flags as marks), numbers as LaTeX macros, each with its
profile and runs recorded; unsafe names refused.

The `out` fixture is the quick profile's export tree in a temporary folder (tests/conftest.py).
"""
from __future__ import annotations

import json
import re
import subprocess

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import fake_run, require_tools  # noqa: E402

from pqlab.core import flags, paths  # noqa: E402
from pqlab.core.errors import UnknownName  # noqa: E402
from pqlab.publish import export, export_numbers, export_records, figure_layout, plotting


@pytest.fixture
def out(export_tree):
    return export_tree


@plotting.styled
def draw(width, height=2.0, labels=("a", "bb", "ccc")):
    f, ax = plt.subplots(figsize=(width, height))
    ax.bar(range(len(labels)), range(1, len(labels) + 1))
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("time (µs)")
    return f


def all_files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_the_house_style_does_not_change_the_session():
    before = dict(plt.rcParams)
    plt.close(draw(3))
    assert dict(plt.rcParams) == before


# ----- figures -----

def test_save_figure_writes_both_widths_with_provenance(out):
    run = fake_run()
    written = export.save_figure(draw, "01_aes_rsa_sphincs", "operation_times", runs=[run])
    folder = out / "figures" / "01_aes_rsa_sphincs"
    assert [p.name for p in written] == ["operation_times.pdf", "operation_times.svg", "operation_times.png",
                                         "operation_times.col.pdf", "operation_times.col.svg",
                                         "operation_times.col.png"]
    assert all_files(out) == sorted([f"figures/01_aes_rsa_sphincs/{p.name}" for p in written] + [
        "figures/01_aes_rsa_sphincs/operation_times.export.json"])  # no temp files left
    sidecar = json.loads((folder / "operation_times.export.json").read_text())
    assert sidecar["profile"] == "quick" and sidecar["runs"] == [run.run_id]
    assert sidecar["sizes"]["full"]["width_in"] == plotting.FULL_WIDTH
    assert sidecar["sizes"][".col"]["width_in"] == plotting.COLUMN_WIDTH
    assert min(s["smallest_text_pt"] for s in sidecar["sizes"].values()) >= plotting.MIN_TEXT_PT
    assert dict(sidecar["context"])["runs"] == run.run_id
    pdf = (folder / "operation_times.col.pdf").read_bytes()
    assert pdf[:5] == b"%PDF-" and b"profile quick" in pdf and run.run_id.encode() in pdf
    svg = (folder / "operation_times.svg").read_text()
    assert "profile quick" in svg and run.run_id in svg
    assert (folder / "operation_times.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"profile quick" in (folder / "operation_times.png").read_bytes()


def test_figures_are_drawn_at_the_width_of_their_file(out):
    export.save_figure(draw, "t", "f", runs=[], formats=("svg",))
    for name, width in (("f.svg", plotting.FULL_WIDTH), ("f.col.svg", plotting.COLUMN_WIDTH)):
        head = (out / "figures" / "t" / name).read_text()[:2000]
        assert re.search(rf'width="{width * 72:g}pt"', head), head


def test_footer_carries_the_context_line(out):
    run = fake_run()
    export.save_figure(draw, "t", "f", runs=[run], formats=("svg",))
    svg = (out / "figures" / "t" / "f.col.svg").read_text()
    assert "counter" in svg and run.run_id[:20] in svg  # wrapped to the column, still there
    export.save_figure(draw, "t", "g", runs=[run], formats=("svg",), footer=False)
    assert "counter" not in (out / "figures" / "t" / "g.col.svg").read_text()


def test_a_long_footer_wraps_to_the_column_with_run_ids_whole(out):
    runs = [fake_run("20261123T030355Z-05_energy-c21d0b"), fake_run("20261123T030402Z-05_energy-aead-36d044")]
    # check_layout refuses a clipped footer
    export.save_figure(draw, "t", "two_runs", runs=runs, formats=("svg",))
    svg = (out / "figures" / "t" / "two_runs.col.svg").read_text()
    assert all(r.run_id in svg for r in runs)  # no run id broken at a hyphen


def test_fonts_are_embedded_truetype_never_type3(out):
    require_tools("pdffonts")
    export.save_figure(draw, "t", "f", runs=[fake_run()], formats=("pdf",))
    for name in ("f.pdf", "f.col.pdf"):
        listing = subprocess.run(["pdffonts", str(out / "figures" / "t" / name)], capture_output=True,
                                 text=True, check=True).stdout.splitlines()[2:]
        assert listing and all("TrueType" in line and " yes " in line for line in listing), listing
        assert all(plotting.FONT in line for line in listing)
        assert not any("Type 3" in line for line in listing)


def test_pdf_and_svg_are_reproducible(out):
    first = [p.read_bytes() for p in export.save_figure(draw, "t", "f", runs=[fake_run()],
                                                        formats=("pdf", "svg"))]
    again = [p.read_bytes() for p in export.save_figure(draw, "t", "f", runs=[fake_run()],
                                                        formats=("pdf", "svg"))]
    assert first == again


def test_a_figure_drawn_in_a_forked_process_is_the_one_drawn_here(out, monkeypatch):
    """Forced both ways, whatever the machine: the files, their bytes and the sidecar's sizes are the same."""
    saved = {}
    for forked in (False, True):
        monkeypatch.setattr(export, "FORK_FIGURES", forked)
        files = export.save_figure(draw, "t", "f", runs=[fake_run()])
        sidecar = json.loads((out / "figures" / "t" / "f.export.json").read_text())
        saved[forked] = [(p.name, p.read_bytes()) for p in files], sidecar["sizes"]
    assert saved[True] == saved[False]
    assert ([name for name, _ in saved[True][0]]
            == ["f.pdf", "f.svg", "f.png", "f.col.pdf", "f.col.svg", "f.col.png"])


def test_a_forked_figure_s_error_and_warnings_reach_the_caller(out, monkeypatch):
    monkeypatch.setattr(export, "FORK_FIGURES", True)

    def narrow_only(width):
        if width == plotting.COLUMN_WIDTH:
            import warnings

            warnings.warn("drawn in the child", UserWarning, stacklevel=1)
            print("never on the parent's stdout")
            raise ValueError(f"refused at {width} in")
        return draw(width)

    with pytest.warns(UserWarning, match="drawn in the child"), \
            pytest.raises(ValueError, match=f"refused at {plotting.COLUMN_WIDTH} in"):
        export.save_figure(narrow_only, "t", "g", runs=[])
    assert not (out / "figures" / "t" / "g.export.json").exists()

    def dies(width):
        if width == plotting.COLUMN_WIDTH:
            import os

            os._exit(3)
        return draw(width)

    with pytest.raises(RuntimeError, match=r"ended without a result.*FORK_FIGURES = False"):
        export.save_figure(dies, "t", "h", runs=[])


def test_a_drawn_figure_is_refused_with_the_fix(out):
    fig = draw(3)
    with pytest.raises(TypeError, match="function of the width"):
        export.save_figure(fig, "t", "f", runs=[])
    plt.close(fig)


def test_a_figure_drawn_at_the_wrong_width_is_refused(out):
    with pytest.raises(ValueError, match=r"drawn 3.00 in wide.*width=w"):
        export.save_figure(lambda w: draw(3), "t", "f", runs=[])


def test_overlapping_tick_labels_are_refused(out):
    labels = [f"SPHINCS+-SHAKE-128f-{i}" for i in range(12)]
    fig = draw(plotting.COLUMN_WIDTH, labels=labels)
    with pytest.raises(ValueError, match="x tick labels .* overlap"):
        export.check_layout(fig, "figure t/crowded")
    plt.close(fig)
    # more than rotating can fit: refused when saved
    too_many = [f"SPHINCS+-SHAKE-128f-{i}" for i in range(80)]
    with pytest.raises(ValueError, match="x tick labels .* overlap"):
        export.save_figure(lambda w: draw(w, labels=too_many), "t", "crowded", runs=[])


def test_fit_tick_labels_rotates_until_nothing_overlaps():
    labels = [f"ML-DSA-{i}{i}" for i in range(8)]
    wide, narrow = (draw(w, 2.5, labels) for w in (plotting.FULL_WIDTH, plotting.COLUMN_WIDTH))
    assert plotting.fit_tick_labels(wide.axes[0]) == 0
    assert plotting.fit_tick_labels(narrow.axes[0]) > 0
    narrow.canvas.draw()
    assert figure_layout.overlapping_tick_labels(narrow.axes[0].xaxis) is None
    plt.close(wide)
    plt.close(narrow)


def test_small_and_clipped_text_are_refused(out):
    @plotting.styled
    def tiny(width):
        f = draw(width)
        f.axes[0].annotate("5 pt", (0, 1), fontsize=5)
        return f

    with pytest.raises(ValueError, match="5 pt.* below 6 pt"):
        export.save_figure(tiny, "t", "tiny", runs=[])

    @plotting.styled
    def clipped(width):
        f = draw(width)
        f.text(0.9, 0.5, "a label that runs off the right edge")
        return f

    with pytest.raises(ValueError, match="outside the figure"):
        export.save_figure(clipped, "t", "clipped", runs=[])
    assert all_files(out) == []


def test_grouped_bars_fit_both_widths(out):
    """The shape of notebook 01's figure: two-line labels, three operations, a legend."""
    cats = [f"{a}\n{b}" for a in ("AES-256", "RSA-2048", "ML-DSA-44") for b in ("OpenSSL", "liboqs")]
    df = pd.DataFrame([{"label": c, "op": op, "ms": v} for c in cats
                       for op, v in (("keygen", 1), ("sign", 2))])
    export.save_figure(lambda w: plotting.grouped_bars(df, category="label", group="op", value="ms", width=w,
                                                       height=3.2, ylabel="ms"), "t", "bars", runs=[])
    assert (out / "figures" / "t" / "bars.col.pdf").exists()


# ----- tables -----

TABLE = pd.DataFrame({
    "run_id": ["r1", "r1", "r1"],
    "algorithm": ["SPHINCS+-SHAKE-128f-simple", "ML-DSA-44", "RSA_2048 & co"],
    "signature_bytes": [17088.0, 2420.0, np.nan],  # float because it holds a missing value
    "time_ns_median": [51_010_000.0, 49_123.4, 1_200_000.0],
    "median_us": pd.Series([83319.47191670588, 2.5961399999999997, None], dtype=object),
    "difference": [2.22e-16, -3.331e-16, 1.5],
    "speedup": [1.234, 3.0, np.inf], "speedup_ci_low": [1.2, 2.9, np.nan],
    "speedup_ci_high": [1.3, 3.1, np.nan], "cycles_median": [1.2e8, 1.1e5, np.nan],
    "verified": [True, False, True],
    "flags": [flags.join([flags.make("unstable-cv"),
                          flags.make("no-cycles", "[Errno 2] perf_event_open: No such file")]),
              flags.make("no-cycles", "ENOENT"),
              flags.join([flags.make("no-cycles"), flags.make("few-samples")])],
})


def test_save_table_writes_csv_md_tex_and_sidecar(out):
    run = fake_run()
    written = export.save_table(TABLE, "02_message_scaling", "results", runs=[run],
                                caption="Times in µs (50% quantile)")
    base = out / "data" / "tables" / "02_message_scaling"
    assert [p.name for p in written] == ["results.csv", "results.md", "results.tex"]
    assert all_files(out) == ["data/tables/02_message_scaling/results.csv",
                              "data/tables/02_message_scaling/results.export.json",
                              "data/tables/02_message_scaling/results.md",
                              "data/tables/02_message_scaling/results.tex", "data/tables/pqlabtables.sty"]
    back = pd.read_csv(base / "results.csv")
    # the CSV is the data
    assert list(back.columns) == list(TABLE.columns) and back["time_ns_median"][1] == 49_123.4
    sidecar = json.loads((base / "results.export.json").read_text())
    assert (sidecar["profile"], sidecar["runs"], sidecar["paper"]) == ("quick", [run.run_id], True)


def test_paper_tables_are_formatted_per_column_kind(out):
    export.save_table(TABLE, "t", "x", runs=[fake_run()], caption="c")
    md = (out / "data" / "tables" / "t" / "x.md").read_text()
    tex = (out / "data" / "tables" / "t" / "x.tex").read_text()
    for text in (md, tex):
        assert "17,088" in text and "2,420" in text  # exact sizes with thousands separators
        assert "e+0" not in text and "e-1" not in text  # no exponents, no rounding residue
        assert "83319.47" not in text and "2.59613" not in text  # object columns of numbers formatted too
        assert "20260000" not in text and "r1" not in text  # no run ids
        assert "True" not in text and "False" not in text and "yes" in text and "no" in text
        assert "Errno" not in text and "unstable-cv" not in text  # flags become marks
    # labels with units; brackets, like every Markdown special, escaped (pqlab.core.formatting.markdown)
    assert r"Signature \[B\] |" in md and r"Time median \[ms\]" in md and r"Median \[ms\]" in md
    assert r"Median \[Mcycles\]" in md and r"RSA\_2048 &amp; co" in md
    assert "51.0" in md and "0.0491" in md  # the column's unit, three significant digits
    assert "83.3" in md and "0.00260" in md
    assert r"1.23× \[1.20, 1.30\]" in md and "∞" in md  # ratios: two decimals, ×, with their interval
    assert re.search(r"\|\s+–\s+\|", md)  # missing values
    assert "All rows: no cycle counter was available." in md
    assert "a: coefficient of variation" in md and "b: fewer than 10 samples" in md
    assert r"\pqlabtable{auto}{tab:t:x}" in tex and r"\textsuperscript{a}" in tex
    assert r"RSA\_2048 \& co" in tex and r"50\%" not in tex and r"\textmu{}" not in tex.split("{%")[0]
    assert r"1.23\ensuremath{\times} [1.20, 1.30]" in tex and r"\ensuremath{\infty}" in tex
    assert "--" in tex  # the missing value's en dash
    header = tex[tex.index("{%\n") + 3:]
    assert header.startswith("Algorithm & Signature & ") and "{[B]} & {[ms]}" in header


def test_numbers_are_right_aligned_text_left(out):
    export.save_table(TABLE, "t", "x", runs=[], caption="c",
                      columns=["algorithm", "signature_bytes", "verified"])
    tex = (out / "data" / "tables" / "t" / "x.tex").read_text()
    assert "{lrl}{%" in tex


def test_columns_choose_what_the_paper_shows_and_the_csv_keeps_everything(out):
    export.save_table(TABLE, "t", "x", runs=[], caption="c",
                      columns={"algorithm": "Scheme", "signature_bytes": "Signature",
                               "time_ns_median": "Sign"})
    md = (out / "data" / "tables" / "t" / "x.md").read_text()
    assert md.splitlines()[2].split("|")[1:4] == [" Scheme                     ", "   Signature \\[B\\] ",
                                                  "   Sign \\[ms\\] "]
    assert len(pd.read_csv(out / "data" / "tables" / "t" / "x.csv").columns) == len(TABLE.columns)


def test_run_ids_are_refused_in_a_paper_table(out):
    with pytest.raises(ValueError, match="'run_id' is internal"):
        export.save_table(TABLE, "t", "x", runs=[], caption="c", columns=["algorithm", "run_id"])


def test_data_only_tables_are_csv_only(out):
    export.save_table(TABLE, "t", "all", runs=[], paper=False)
    assert all_files(out) == ["data/tables/t/all.csv", "data/tables/t/all.export.json"]
    assert json.loads((out / "data" / "tables" / "t" / "all.export.json").read_text())["paper"] is False


def test_a_paper_table_needs_a_caption_and_a_known_layout(out):
    with pytest.raises(ValueError, match="needs a caption"):
        export.save_table(TABLE, "t", "x", runs=[])
    with pytest.raises(UnknownName, match="unknown layout 'wide'; close matches: .*layout is one of auto, "
                                          "page, landscape"):
        export.save_table(TABLE, "t", "x", runs=[], caption="c", layout="wide")
    assert all_files(out) == []


def test_long_tables_become_longtables_on_upright_or_rotated_pages(out):
    """Notebook 06's full CPU table (432 rows) was refused in landscape: now a longtable on rotated pages."""
    long = pd.concat([TABLE] * 20, ignore_index=True)
    export.save_table(long, "t", "long", runs=[], caption="c")
    tex = (out / "data" / "tables" / "t" / "long.tex").read_text()
    assert r"\pqlablongtable{tab:t:long}" in tex and len(long) > export.LONG_ROWS
    export.save_table(long, "t", "long", runs=[], caption="c", layout="landscape")
    tex = (out / "data" / "tables" / "t" / "long.tex").read_text()
    assert r"\pqlablongtable[landscape]{tab:t:long}" in tex


def test_unknown_column_lists_close_matches(out):
    with pytest.raises(KeyError, match="unknown column 'signature_byte'; close matches: signature_bytes"):
        export.save_table(TABLE, "t", "x", runs=[], caption="c", columns=["signature_byte"])


# ----- numbers -----

def test_a_quoted_number_whose_interval_spans_more_than_the_limit_is_exported_as_not_resolved(out):
    """Issue #41: "15.1× [0.1, 2,596]" reached the paper as three macros; now the value says not resolved and
    its ends carry the mark, in the macros, the .txt files and the sidecar."""
    export.save_numbers({"keygen_ratio": 15.1, "keygen_ratio_ci_low": 0.1, "keygen_ratio_ci_high": 2596.0,
                         "sign_ratio": 1.5, "sign_ratio_ci_low": 1.4, "sign_ratio_ci_high": 1.6}, "t",
                        runs=[fake_run()])
    folder = out / "data" / "tables" / "t"
    tex = (folder / "numbers.tex").read_text()
    assert "2,596" not in tex and "15.1" not in tex and r"\newcommand{\pqlabKeygenRatioCiLow}{n.r.}%" in tex
    assert (folder / "keygen_ratio.txt").read_text().startswith("not resolved (interval wider than 2×)")
    assert (folder / "sign_ratio.txt").read_text() == export_numbers.format_number(1.5) != "n.r."
    assert (folder / "sign_ratio_ci_high.txt").read_text() == export_numbers.format_number(1.6)
    assert json.loads((folder / "numbers.export.json").read_text())["not_resolved"] == [
        "keygen_ratio", "keygen_ratio_ci_high", "keygen_ratio_ci_low"]


def test_save_numbers_writes_macros_without_trailing_space(out):
    run = fake_run()
    export.save_numbers({"sphincs_sign_over_verify": 14.7123, "ml_dsa_44_sign": "49.1 µs", "signature": 17088,
                         "missing": float("nan")}, "01_aes_rsa_sphincs", runs=[run])
    folder = out / "data" / "tables" / "01_aes_rsa_sphincs"
    tex = (folder / "numbers.tex").read_text()
    assert r"\newcommand{\pqlabSphincsSignOverVerify}{14.7}%" in tex
    assert r"\newcommand{\pqlabMlDsaFourFourSign}{49.1~\textmu{}s}%" in tex
    assert r"\newcommand{\pqlabSignature}{17,088}%" in tex
    # a value the run did not give is written as not measured, never as a number: empty .txt,
    # listed in the sidecar
    assert (r"\newcommand{\pqlabMissing}{\textit{not measured}}%" in tex
            and f"% missing (runs {run.run_id}): not measured" in tex)
    assert (folder / "missing.txt").read_text() == ""
    assert json.loads((folder / "numbers.export.json").read_text())["not_measured"] == ["missing"]
    assert tex.startswith("% pqlab numbers of 01_aes_rsa_sphincs") and "profile quick" in tex.splitlines()[0]
    assert f"% sphincs_sign_over_verify (runs {run.run_id})" in tex
    assert (folder / "sphincs_sign_over_verify.txt").read_text() == "14.7"  # no newline: \input adds no space
    assert (folder / "signature.txt").read_text() == "17,088"
    assert (json.loads((folder / "numbers.export.json").read_text())["macros"]["ml_dsa_44_sign"]
            == "pqlabMlDsaFourFourSign")


def test_numbers_whose_macros_collide_are_refused(out):
    with pytest.raises(ValueError, match="both become"):
        export.save_numbers({"sign_us": 1, "sign-us": 2}, "t", runs=[])


@pytest.mark.parametrize("key,macro", [("a_b", "pqlabAB"), ("SLH-DSA 128f", "pqlabSLHDSAOneTwoEightF"),
                                       ("x2", "pqlabXTwo")])
def test_macro_names_hold_letters_only(key, macro):
    assert export_numbers.macro_name(key) == macro


# ----- names and paths -----

@pytest.mark.parametrize("topic,name", [("../escape", "x"), ("a/b", "x"), ("ok", "../../x"), ("ok", ""),
                                        (".hidden", "x"), ("ok", "with space"), ("ok", "/abs"), ("", "x")])
def test_unsafe_names_are_rejected(out, topic, name):
    with pytest.raises(ValueError, match="safe file name"):
        export.save_table(TABLE, topic, name, runs=[], caption="c")
    with pytest.raises(ValueError):
        export.save_figure(draw, topic, name, runs=[], formats=("svg",))
    if not export_records.SAFE_NAME.match(topic):
        with pytest.raises(ValueError, match="safe file name"):
            export.save_numbers({"x": 1}, topic, runs=[])
    assert all_files(out) == []


def test_exports_follow_paths_not_the_working_directory(out, monkeypatch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(elsewhere)
    export.save_numbers({"n": 1}, "t", runs=[])
    assert (out / "data" / "tables" / "t" / "n.txt").exists() and list(elsewhere.iterdir()) == []


def test_each_profile_has_its_own_export_tree(tmp_path):
    assert paths.export_root("full", tmp_path) == tmp_path
    assert paths.export_root("quick", tmp_path) == tmp_path / "build" / "quick"
    code = "from pqlab import paths; print(paths.PROFILE, paths.FIGURES, paths.TABLES)"
    env = {"PATH": "/usr/bin:/bin", "PQLAB_OUTPUT": str(tmp_path)}
    for profile, root in (("full", tmp_path), ("quick", tmp_path / "build" / "quick"),
                          ("", tmp_path / "build" / "interactive")):
        shown = subprocess.run([__import__("sys").executable, "-c", code],
                               env={**env, "PQLAB_PROFILE": profile},
                               capture_output=True, text=True, check=True).stdout.split()
        assert shown == [profile or "interactive", str(root / "figures"), str(root / "data" / "tables")]


def test_a_figure_without_data_is_not_written_and_a_stale_one_is_removed(out):
    assert export.save_figure_or_note(draw, "t", "ratios", "unused", runs=[fake_run()]) == ""
    assert len(list((out / "figures" / "t").glob("ratios.*"))) == 7  # pdf, svg, png at both widths; sidecar
    note = export.save_figure_or_note(lambda w: None, "t", "ratios", "the native runner was not run", runs=[])
    assert note == "*Figure `ratios` is not written: the native runner was not run.*"
    assert not list((out / "figures" / "t").glob("ratios.*"))  # an earlier run's copy is gone too


def test_greek_letters_in_cells_become_math():
    from pqlab.core.formatting import latex

    assert latex("η 6 → 2, γ1") == r"\ensuremath{\eta} 6 \ensuremath{\rightarrow} 2, \ensuremath{\gamma}1"


def test_a_wrapped_header_line_starting_with_a_bracket_is_braced():
    """\\\\ takes a following "[" for its optional length ("Missing number" in LaTeX): a header wrapped before
    its "[B]" braces that line."""
    from pqlab.publish.export import _header_cell

    cell = _header_cell("Published [B]", "r")
    assert r"\\{[B]}" in cell and r"\\[" not in cell
    assert r"PKCS\#8" in _header_cell("PKCS#8 rather long label [B]", "r")  # escaped once


def test_a_table_with_no_rows_is_never_exported_as_an_empty_paper_table(out):
    """On a machine that could not measure a table's rows (no JDK, no valgrind) the paper gets no empty table:
    the CSV keeps the header, the paper files an earlier run left go, and the appendix says why."""
    from pqlab.publish import paper

    df = pd.DataFrame({"algorithm": ["ML-DSA-44"], "ratio": [1.2]})
    export.save_table(df, "01_t", "x", runs=[], caption="X")
    folder = out / "data" / "tables" / "01_t"
    assert (folder / "x.tex").exists() and (folder / "x.md").exists()
    with pytest.warns(UserWarning, match=r"table 01_t/x has no rows here: only its header is written "
                                         r"\(x\.csv\), no paper table"):
        files = export.save_table(df.iloc[:0], "01_t", "x", runs=[], caption="X")
    assert [f.name for f in files] == ["x.csv"] and (folder / "x.csv").read_text() == "algorithm,ratio\n"
    assert not (folder / "x.tex").exists() and not (folder / "x.md").exists()
    sidecars = export_records.read_sidecars(folder.parent)
    assert sidecars[0]["paper"] is False and sidecars[0]["rows"] == 0
    assert (r"\url{01_t/x.csv} (no rows: nothing measured for it in these runs)"
            in paper.appendix_tex(sidecars, set()))
