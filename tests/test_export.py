"""Exports: figures (png/svg/pdf), tables (csv/md/tex with booktabs rules), numbers; unsafe names refused.

pqlab.paths reads PQLAB_OUTPUT once, at import, so the tests point paths.FIGURES/TABLES at a
temporary folder instead of setting the variable.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from pqlab import export, paths, plotting  # noqa: E402


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "FIGURES", tmp_path / "figures")
    monkeypatch.setattr(paths, "TABLES", tmp_path / "data" / "tables")
    return tmp_path


@plotting.styled
def draw():
    f, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 10, 100], [3, 1, 2])
    ax.set_xscale("log")
    return f


@pytest.fixture
def fig():
    f = draw()
    yield f
    plt.close(f)


def test_the_house_style_does_not_change_the_session():
    before = dict(plt.rcParams)
    plt.close(draw())
    assert dict(plt.rcParams) == before


TABLE = pd.DataFrame({"algorithm": ["ML-DSA-44", "RSA_2048 & co"], "time_us": [49.123456, 1234.5],
                      "samples": [100, 7], "verified": [True, False]})


def all_files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_save_figure_writes_png_svg_pdf(out, fig):
    written = export.save_figure(fig, "01_aes_rsa_sphincs", "operation_times")
    folder = out / "figures" / "01_aes_rsa_sphincs"
    assert written == [folder / "operation_times.png", folder / "operation_times.svg", folder / "operation_times.pdf"]
    assert (folder / "operation_times.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (folder / "operation_times.pdf").read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in (folder / "operation_times.svg").read_bytes()[:2000]
    assert all_files(out) == ["figures/01_aes_rsa_sphincs/operation_times.pdf",
                              "figures/01_aes_rsa_sphincs/operation_times.png",
                              "figures/01_aes_rsa_sphincs/operation_times.svg"]  # no temp files left


def test_pdf_is_reproducible(out, fig):
    """No timestamp in the PDF: the same figure gives the same bytes."""
    first = export.save_figure(fig, "t", "f", formats=("pdf",))[0].read_bytes()
    assert export.save_figure(fig, "t", "f", formats=("pdf",))[0].read_bytes() == first


def test_svg_is_reproducible(out, fig):
    first = export.save_figure(fig, "t", "f", formats=("svg",))[0].read_bytes()
    assert export.save_figure(fig, "t", "f", formats=("svg",))[0].read_bytes() == first


def test_save_table_writes_csv_md_tex(out):
    written = export.save_table(TABLE, "02_message_scaling", "results", caption="Times in µs (50% quantile)")
    base = out / "data" / "tables" / "02_message_scaling"
    assert written == [base / "results.csv", base / "results.md", base / "results.tex"]
    back = pd.read_csv(base / "results.csv")
    pd.testing.assert_frame_equal(back, TABLE)  # csv keeps full precision
    md = (base / "results.md").read_text()
    assert md.startswith("Times in µs") and "49.12" in md and "49.123456" not in md
    assert "| ML-DSA-44" in md
    tex = (base / "results.tex").read_text()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert tex.count(rule) == 1
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    assert r"RSA\_2048 \& co" in tex and r"50\% quantile" in tex  # LaTeX specials escaped
    assert r"\label{tab:02_message_scaling:results}" in tex
    body = tex[tex.index(r"\midrule"):tex.index(r"\bottomrule")]
    assert body.count(r"\\") == len(TABLE)
    assert all_files(out) == ["data/tables/02_message_scaling/results.csv",
                              "data/tables/02_message_scaling/results.md",
                              "data/tables/02_message_scaling/results.tex"]


def test_tex_aligns_numbers_right(out):
    tex = export.save_table(TABLE[["algorithm", "time_us", "samples"]], "t", "align")[2].read_text()
    assert r"\begin{tabular}{lrr}" in tex


def test_save_number(out):
    path = export.save_number(3.14159, "01_aes_rsa_sphincs", "rsa_keygen_over_decrypt", fmt="{:.1f}")
    assert path == out / "data" / "tables" / "01_aes_rsa_sphincs" / "rsa_keygen_over_decrypt.txt"
    assert path.read_text() == "3.1\n"
    export.save_number(42, "01_aes_rsa_sphincs", "rsa_keygen_over_decrypt")
    assert path.read_text() == "42\n"  # replaced whole


@pytest.mark.parametrize("topic,name", [("../escape", "x"), ("a/b", "x"), ("ok", "../../x"), ("ok", ""),
                                        (".hidden", "x"), ("ok", "with space"), ("ok", "/abs"), ("", "x")])
def test_unsafe_names_are_rejected(out, fig, topic, name):
    with pytest.raises(ValueError, match="safe file name"):
        export.save_number(1, topic, name)
    with pytest.raises(ValueError):
        export.save_table(TABLE, topic, name)
    with pytest.raises(ValueError):
        export.save_figure(fig, topic, name, formats=("svg",))
    assert all_files(out) == []


def test_exports_follow_paths_not_the_working_directory(out, monkeypatch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(elsewhere)
    export.save_number(1, "t", "n")
    assert (out / "data" / "tables" / "t" / "n.txt").exists() and list(elsewhere.iterdir()) == []


def test_a_figure_without_data_is_not_written_and_a_stale_one_is_removed(out, fig):
    export.save_figure(fig, "t", "ratios")
    assert export.save_figure_or_note(fig, "t", "ratios", "unused") == ""
    assert len(list((out / "figures" / "t").glob("ratios.*"))) == 3
    note = export.save_figure_or_note(None, "t", "ratios", "the native runner was not run")
    assert note == "*Figure `ratios` is not written: the native runner was not run.*"
    assert not list((out / "figures" / "t").glob("ratios.*"))  # an earlier run's copy is gone too
