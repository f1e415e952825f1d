"""Issue #46 (bundles, round 3): a bundle's strings reach the atlas's exports and the report as data, never
as markup, a formula or a name that replaces another's.

- D4, D5: keys made of data (the atlas's ``largest_loss_<platform>``) are bounded and never shared: CPU models
  "Foo!Bar" and "Foo?Bar" export two numbers, a 300 character one exports; file names an export writes are
  bounded and refused before anything is written.
- D6: no cell or header of an exported CSV starts a spreadsheet formula.
- D7: a bundle's file name with a backtick and a ``<meta http-equiv="refresh">`` stays text in the atlas's
  Markdown and on the report's page; a Markdown output's raw HTML is shown as text (defence in depth).
- D2: an export's name and a file a sidecar lists match whole (``fullmatch``): a trailing newline is refused.
- D8: control and format characters of a stream output show as ``<U+XXXX>`` on the page.
"""
from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

from pqlab.core import escaping  # noqa: E402
from pqlab.core.errors import BadInput  # noqa: E402
from pqlab.publish import export, export_records, report, report_context, report_notebooks  # noqa: E402
from pqlab.studies import atlas  # noqa: E402
from pqlab.studies.atlas.platforms import Atlas  # noqa: E402

BUNDLE = 'x`<meta http-equiv="refresh" content="0;url=http:example.invalid">`.tar.gz'
HYPERLINK = '=HYPERLINK("http://example.invalid/","x")'
LONG = "Long CPU " + "model " * 49  # 303 characters


def tiny_atlas(platforms: list[str]) -> tuple[Atlas, pd.DataFrame]:
    """An atlas of measured `platforms` and their cross-platform factors over the first (enough for
    :func:`atlas.numbers`)."""
    p = pd.DataFrame({"platform": platforms, "kind": "measured"})
    ratios = pd.DataFrame({"platform": platforms[0], "baseline_kind": "classical", "ratio": [2.0],
                           "comparison": ["ML-DSA-44 sign / Ed25519 sign"]})
    cross = pd.DataFrame({"platform": platforms[1:], "factor": np.arange(2.0, len(platforms) + 1)})
    return Atlas(platforms=p, ratios=ratios), cross


# ----- D4, D5: keys made of data -----

def test_cpu_models_whose_keys_collide_export_both_numbers_and_a_long_one_exports(export_tree):
    a, cross = tiny_atlas(["Ref · x86_64 · liboqs default", "Foo!Bar · x86_64 · liboqs default",
                           "Foo?Bar · x86_64 · liboqs default", f"{LONG} · x86_64 · liboqs default"])
    numbers = atlas.numbers(a, cross, "Ref · x86_64 · liboqs default")
    losses = {k: v for k, (v, _) in numbers.items() if k.startswith("largest_loss_")}
    assert sorted(losses.values()) == [2.0, 3.0, 4.0]  # one per platform: none replaced another
    assert "largest_loss_foo_bar_x86_64_liboqs_default" in losses  # the first keeps its plain key
    assert all(len(k) <= escaping.MAX_KEY for k in losses)
    export.save_numbers({k: f"{v:.2f}" for k, v in losses.items()}, "07_atlas", runs=[])
    folder = export_tree / "data" / "tables" / "07_atlas"
    assert sorted((folder / f"{k}.txt").read_text() for k in losses) == ["2.00", "3.00", "4.00"]
    assert atlas.numbers(a, cross, "Ref · x86_64 · liboqs default") == numbers  # the same keys each time


def test_data_key_is_bounded_distinct_and_stable():
    taken: dict = {}
    first = escaping.data_key("loss_", "Foo!Bar", taken)
    second = escaping.data_key("loss_", "Foo?Bar", taken)
    assert first == "loss_foo_bar" and second.startswith("loss_foo_bar_") and second != first
    assert escaping.data_key("loss_", "Foo!Bar", taken) == first  # the same text, the same key
    # keys LaTeX would name alike (digits are spelled in a macro), or a file system that ignores case
    assert escaping.data_key("loss_", "x 1", taken) != escaping.data_key("loss_", "X-one", taken)
    long = escaping.data_key("loss_", "A" * 300, taken)
    assert len(long) == escaping.MAX_KEY and long != escaping.data_key("loss_", "A" * 299, taken)
    assert escaping.data_key("loss_", "!!!", taken).startswith("loss_")  # no letter: its hash


def test_an_export_refuses_a_file_name_too_long_or_shared_before_writing_anything(export_tree):
    folder = export_tree / "data" / "tables" / "t"
    with pytest.raises(BadInput, match="too long for a file name") as e:
        export.save_numbers({"a": 1, "b" * 300: 2}, "t", runs=[])
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"both become aplusb\.txt"):  # one file, two numbers
        export.save_numbers({"a+b": 1, "aplusb": 2}, "t", runs=[])
    with pytest.raises(ValueError, match=r"both become aB\.txt"):  # one file where case is ignored
        export.save_numbers({"ab": 1, "aB": 2}, "t", runs=[])
    with pytest.raises(BadInput, match="too long for a file name"):
        export.save_table(pd.DataFrame({"x": [1]}), "t", "n" * 300, runs=[], caption="c")
    with pytest.raises(BadInput, match="too long for a file name"):
        export.save_figure(lambda w: None, "t", "n" * 300, runs=[])
    assert not folder.exists() and not (export_tree / "figures" / "t").exists()


def test_names_match_whole_a_trailing_newline_is_refused(export_tree, tmp_path):
    for topic, name in (("t\n", "x"), ("t", "x\n")):
        with pytest.raises(BadInput, match="not a safe file name"):
            export_records.check_name(topic, name)
    assert export_records.SAFE_NAME.fullmatch("01_t") and not export_records.SAFE_NAME.match("t\n")
    # a sidecar that lists "x.csv\n", a file there: the report copies no file of that name
    folder = tmp_path / "exports" / "data" / "tables" / "01_t"
    folder.mkdir(parents=True)
    (folder / "x.csv").write_text("a\n1\n")
    (folder / "x.csv\n").write_text("a\n1\n")
    (folder / "x.export.json").write_text(json.dumps({"files": ["x.csv\n", "x.csv"]}))
    book = report_notebooks.Notebook("01_t", "", "", "", None, 0, {}, 0, 0)
    found, copied, _ = report_notebooks.collect_exports(tmp_path / "exports", book, tmp_path / "out")
    assert found[0]["absent"] == ["x.csv\n"] and copied == 2


# ----- D6: CSV cells -----

@pytest.mark.parametrize("value, shown", [
    (HYPERLINK, "'" + HYPERLINK), ("+1 RTT", "'+1 RTT"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("-3.2", "-3.2"), ("+1e-3", "+1e-3"), ("x=1", "x=1"),
    ("a\u202eb", "a<U+202E>b"), (3, 3), (-2.5, -2.5), (None, None)])
def test_csv_cell_never_starts_a_formula(value, shown):
    assert escaping.csv_cell(value) == shown


def test_an_exported_csv_holds_no_formula_in_any_cell_or_header(export_tree):
    df = pd.DataFrame({"platform": [HYPERLINK, "-1+1|cmd", "ok"], "ratio": [-1.5, 2.0, 3.0],
                       HYPERLINK: ["=1", "-3.2", "\u202e"], "n": [1, 2, 3]})
    export.save_table(df, "t", "hostile", runs=[], paper=False)
    back = pd.read_csv(export_tree / "data" / "tables" / "t" / "hostile.csv", dtype=str,
                       keep_default_na=False)
    assert list(back.columns) == ["platform", "ratio", "'" + HYPERLINK, "n"]
    assert list(back["platform"]) == ["'" + HYPERLINK, "'-1+1|cmd", "ok"]
    assert list(back["'" + HYPERLINK]) == ["'=1", "-3.2", "<U+202E>"]
    assert list(back["ratio"]) == ["-1.5", "2.0", "3.0"] and list(back["n"]) == ["1", "2", "3"]


# ----- D7: a bundle's file name in the atlas's Markdown and on the report's page -----

def shown(text: str) -> str:
    """`text` as the report's Markdown shows it in a code span (mistune's escape)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def executed(folder, outputs) -> None:
    nb = new_notebook(cells=[new_markdown_cell("# 07 · atlas"), new_code_cell("atlas", outputs=outputs)])
    nb.metadata["papermill"] = {"exception": None, "duration": 1.0, "start_time": "2026-11-25T00:00:00+00:00",
                                "end_time": "2026-11-25T00:00:01+00:00", "parameters": {}}
    nbformat.write(nb, folder / "07_atlas.ipynb")


def test_a_bundle_name_that_closes_a_code_span_stays_text_in_the_atlas_and_the_report(tmp_path):
    reports = [{"bundle": f"/somewhere/{BUNDLE}", "machine_id": "lab-b", "status": "imported",
                "imported": ["r1"], "converted": [], "present": []}]
    text = atlas.describe_local([], reports)
    assert text == (f"- merged `` {BUNDLE} `` (machine ` lab-b `): 1 run(s) imported (0 converted from an "
                    "older schema), 0 already present.")
    rendered = report.markdown_output(text)
    assert "<meta" not in rendered and f"<code>{shown(BUNDLE)}</code>" in rendered
    # the page: a raw tag in any Markdown output (not from pqlab's escaping) is shown as text too
    raw = '<meta http-equiv="refresh" content="0;url=http:example.invalid"><a style="position:fixed">x</a>'
    folder = tmp_path / "build" / "quick"
    folder.mkdir(parents=True)
    executed(folder, [new_output("display_data", data={"text/markdown": text}),
                      new_output("display_data", data={"text/markdown": raw})])
    built = report.build_report(folder, exports=folder, cwd=tmp_path, sources=tmp_path)
    page = (built.index.parent / "07_atlas.html").read_text()
    assert "<meta http-equiv=\"refresh\"" not in page and "<a style" not in page
    assert "&lt;meta http-equiv=\"refresh\"" in page and "&lt;a style=" in page
    assert "script-src 'none'" in report.CSP and "frame-src 'none'" in report.CSP


@pytest.mark.parametrize("text", ["a`b", "``", "`", " x ", "a ``` b `c`", "x|y", "<b>&amp;", "\\`"])
def test_a_code_span_holds_any_text(text):
    rendered = report.markdown_output(f"see {escaping.code(text)} here")
    assert f"<code>{shown(text)}</code>" in rendered, rendered


# ----- D8: control and format characters on the page -----

def test_control_and_format_characters_of_outputs_show_on_the_page(tmp_path):
    folder = tmp_path / "build" / "quick"
    folder.mkdir(parents=True)
    hostile = "CPU \u202eASU\u200b \x1b]0;title\x07\x1b[2J"
    executed(folder, [new_output("stream", name="stdout", text=hostile + "\n"),
                      new_output("display_data", data={"text/plain": hostile,
                                                       "text/html": f"<p>{hostile}</p>"}),
                      new_output("error", ename="ValueError", evalue=hostile,
                                 traceback=["\x1b[0;31mValueError\x1b[0m: " + hostile])])
    built = report.build_report(folder, exports=folder, cwd=tmp_path, sources=tmp_path)
    page = (built.index.parent / "07_atlas.html").read_text()
    assert not [c for c in ("\u202e", "\u200b", "\x1b", "\x07") if c in page]
    # the stream, the HTML and the traceback
    assert page.count("CPU &lt;U+202E&gt;ASU&lt;U+200B&gt; &lt;U+001B&gt;]0;title&lt;U+0007&gt;") == 3
    assert report_context.output_text("\x1b[0;31mx\x1b[2J", colours=True) == "\x1b[0;31mx<U+001B>[2J"
