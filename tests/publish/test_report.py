"""The report (pqlab.publish.report): a profile's executed notebooks as static HTML pages with an index,
checked in a browser.

A tiny notebook (a matplotlib figure, an SVG, an image from a file, an image its Markdown links, a table,
Markdown output, a progress bar, a warning naming local folders, a table wider than the page, words a referee
must not miss) is executed with papermill into tmp_path with a hostile parameter, beside exports whose run
context carries hostile text and a liboqs build in several forms; the report is rendered from it and every
page is opened in Debian's chromium through Playwright (``executable_path``: no browser is ever downloaded).
Without chromium or Playwright the browser tests skip, unless PQLAB_REQUIRE_BROWSER=1 (CI): then they fail
with one line naming ``python -m pqlab.app.provision browser``.
"""
from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from conftest import require_browser
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from pqlab.core import paths
from pqlab.publish import report, report_notebooks

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(2)>&amp;'
PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                         "hKmMIQAAAABJRU5ErkJggg==")
STEM = "01_tiny"
#: a liboqs build as run contexts name it
LIBOQS = "0.16.0 (default build; COMPILE_BUILD_TARGET=x86_64-Linux, DIST_BUILD=1, OPT_TARGET=generic)"


def tiny_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell("# 01 · Does the report show a tiny notebook?\n\n"
                          "An image its Markdown links: ![a pixel](pixel.png)"),
        new_code_cell('label = "plain"\nsteps = 3  # stored, not injected',
                      metadata={"tags": ["parameters"]}),
        new_code_cell("%matplotlib inline\nimport matplotlib.pyplot as plt\n\n"
                      "fig, ax = plt.subplots(figsize=(2, 1.5))\nax.plot([1, 2, 3], [1, 4, 9])\nplt.show()"),
        new_code_cell("from IPython.display import SVG, Image, Markdown, display\n\n"
                      "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"20\">"
                      "<rect width=\"40\" height=\"20\" fill=\"teal\"/></svg>'))\n"
                      "display(Image(filename='pixel.png'))"),
        new_code_cell("import pandas as pd\nfrom pqlab import formatting\n\n"
                      "display(formatting.table(pd.DataFrame({'algorithm': ['ML-KEM-768', label], "
                      "'public_key_bytes': [1184, 32]})))"),
        new_code_cell("print(label)\ndisplay(Markdown(formatting.markdown(label)))"),
        new_code_cell("from tqdm.auto import tqdm\n\nfor _ in tqdm(range(steps), desc='steps'):\n    pass"),
        new_code_cell("import tempfile, warnings\nfrom pathlib import Path\nfrom pqlab.core import paths\n"
                      "from pqlab.core.errors import PqlabWarning\n\n"
                      "warnings.warn(f'cached in {Path.home()}/.cache/x, '\n"
                      "              f'built in {tempfile.gettempdir()}/pqlab-b, '\n"
                      "              f'from {paths.ROOT}/pqlab/x.py', PqlabWarning)"),
        new_code_cell("display(pd.DataFrame({f'a_rather_long_column_name_{i}': [i] for i in range(40)}))"),
        new_code_cell("busy = 1  # a name in code is not flagged\n"
                      "display(Markdown('3 rounds, 1 busy; 3 rounds, 0 busy; leakage screen: no verdict'))\n"
                      "display(formatting.table(pd.DataFrame({'algorithm': ['ML-DSA-44'], "
                      "'status': ['non-conforming']})))"),
    ]
    return new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                              "language": "python"}})


def kernel_name() -> str:
    """The pqlab kernel where make setup registered it, else the kernel of this interpreter."""
    from jupyter_client.kernelspec import KernelSpecManager

    return "pqlab" if "pqlab" in KernelSpecManager().find_kernel_specs() else "python3"


def write_exports(exports: Path) -> None:
    """A table exported by pqlab.publish.export from a run whose CPU model is hostile, and a figure's record
    by hand, older than the notebook's run."""
    from pqlab.publish import export

    run = SimpleNamespace(run_id="20261125T000000Z-01_tiny-abc123",
                          meta={"cpu": {"model": HOSTILE, "usable_cores": 2}})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paths, "TABLES", exports / "data" / "tables")
        mp.setattr(paths, "PROFILE", "quick")
        import pandas as pd

        export.save_table(pd.DataFrame({"algorithm": ["ML-KEM-768"], "public_key_bytes": [1184]}), STEM,
                          "sizes", runs=[run], caption=f"Sizes {HOSTILE}")
    figures = exports / "figures" / STEM
    figures.mkdir(parents=True)
    (figures / "pixel.png").write_bytes(PIXEL)
    record = {"export": "figure", "topic": STEM, "name": "pixel", "profile": "quick", "runs": [run.run_id],
              "context": [["CPU", HOSTILE], ["liboqs", f"{LIBOQS} (run {run.run_id}); not loaded (run r-b)"],
                          ["runs", run.run_id]],
              "files": ["pixel.png", "../../../etc/passwd"]}
    (figures / "pixel.export.json").write_text(json.dumps(record))
    os.utime(figures / "pixel.export.json", (946684800, 946684800))  # before the notebook ran: stale
    other = {**record, "name": "other", "files": [], "context": [["liboqs", LIBOQS], ["runs", run.run_id]]}
    (figures / "other.export.json").write_text(json.dumps(other))
    # the run's metadata where the report looks for it (data/results of the PQLAB_OUTPUT above the exports)
    results = exports.parent.parent / "data" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{run.run_id}.meta.json").write_text(json.dumps(
        {"conformance": {
            "ML-DSA-44@liboqs": {"status": "non-conforming", "ran": 3, "failures": {"forged": 1}},
            "Ed25519@cryptography": {"status": "conforms", "ran": 3, "failures": {}}}}))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """tmp/notebooks/01_tiny.ipynb executed by papermill into tmp/build/quick, its exports, and the report."""
    import papermill

    root = tmp_path_factory.mktemp("report")
    notebooks, folder = root / "notebooks", root / "build" / "quick"
    notebooks.mkdir()
    folder.mkdir(parents=True)
    (notebooks / "pixel.png").write_bytes(PIXEL)
    nbformat.write(tiny_notebook(), notebooks / f"{STEM}.ipynb")
    nbformat.write(new_notebook(cells=[new_markdown_cell("# never executed")]),
                   notebooks / "02_not_run.ipynb")
    write_exports(folder)
    papermill.execute_notebook(str(notebooks / f"{STEM}.ipynb"), str(folder / f"{STEM}.ipynb"),
                               parameters={"label": HOSTILE}, kernel_name=kernel_name(), cwd=str(notebooks),
                               progress_bar=False, log_output=False)
    built = report.build_report(folder, exports=folder, cwd=notebooks, sources=notebooks)
    return SimpleNamespace(root=root, folder=folder, report=built, out=folder / report.REPORT)


def test_the_report_has_a_page_per_notebook_an_index_and_copies_of_the_exports(built):
    out = built.out
    assert sorted(p.name for p in out.glob("*.html")) == ["01_tiny.html", "index.html"]
    assert (out / "exports" / "tables" / STEM / "sizes.csv").is_file()
    assert (out / "exports" / "figures" / STEM / "pixel.png").read_bytes() == PIXEL
    assert not list(out.rglob("passwd")), "a file name from an export record must never leave its folder"
    index = (out / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]*)"', index)
    assert hrefs and all(not re.match(r"^[a-z]+:|/|\.\.", h) for h in hrefs), hrefs
    assert "02_not_run: not executed" in index
    assert "written before this notebook" in index  # the figure record is older than the run
    assert built.report.notebooks[0].images >= 3 and built.report.notebooks[0].errors == 0


def test_text_from_data_is_escaped_on_the_index_and_the_pages(built):
    index = (built.out / "index.html").read_text()
    page = (built.out / f"{STEM}.html").read_text()
    assert HOSTILE not in index and "<script" not in index
    escaped = html.escape(HOSTILE)
    assert index.count(escaped) >= 3  # the parameter, the run context (CPU), the caption
    assert HOSTILE not in page and "<script" not in page.lower()


def test_a_progress_bar_is_shown_as_its_final_state_without_a_widget_manager(built):
    page = (built.out / f"{STEM}.html").read_text()
    assert report_notebooks.WIDGET_VIEW not in page and report_notebooks.WIDGET_STATE not in page
    assert re.search(r"steps: 100%\|█+\| 3/3", html.unescape(page))


def test_widget_text_reads_tqdm_state_and_says_when_it_is_missing():
    state = {"box": {"state": {"children": ["IPY_MODEL_a", "IPY_MODEL_b", "IPY_MODEL_c"]}},
             "a": {"state": {"value": "run:\u2007100%"}}, "b": {"state": {"value": 4.0, "max": 4.0}},
             "c": {"state": {"value": "\u20074/4\u2007[00:01&lt;00:00]"}}}
    assert report_notebooks.widget_text("box", state) == "run: 100%|██████████| 4/4 [00:01<00:00]"
    assert report_notebooks.widget_text("gone", state) is None
    view = {report_notebooks.WIDGET_VIEW: {"model_id": "gone"}, "text/plain": "0%"}
    nb = nbformat.from_dict({"cells": [{"cell_type": "code", "source": "", "metadata": {},
                                        "execution_count": 1,
                                        "outputs": [{"output_type": "display_data", "metadata": {},
                                                     "data": view}]}],
                             "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    data = report.prepare(nb).cells[0].outputs[0].data
    assert list(data) == ["text/plain"] and "not saved" in data["text/plain"]


def test_every_page_loads_in_chromium_with_every_image_shown_and_no_error(built):
    require_browser()
    checked = report.check_pages(built.out)
    assert not checked.problems, checked.summary()
    assert [p["page"] for p in checked.pages] == ["index.html", "01_tiny.html"]
    tiny = checked.pages[1]
    # the figure, the SVG, the file image and the image the Markdown links, each decoded
    assert tiny["images"] >= 4 and tiny["loaded"] == tiny["images"], checked.summary()
    assert checked.pages[0]["links"] > 0 and tiny["links"] > 0


def test_hostile_text_shows_as_text_in_chromium(built):
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=report.find_chromium())
        try:
            page = browser.new_page()
            dialogs = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            for name in ("index.html", f"{STEM}.html"):
                page.goto((built.out / name).as_uri(), wait_until="load")
                assert HOSTILE in page.inner_text("body"), name
            assert dialogs == []
        finally:
            browser.close()


def test_the_report_works_copied_elsewhere(built, tmp_path):
    require_browser()
    copy = tmp_path / "sent to a referee"
    shutil.copytree(built.out, copy)
    checked = report.check_pages(copy)
    assert not checked.problems, checked.summary()
    assert checked.images == checked.loaded > 0


def broken_notebook() -> nbformat.NotebookNode:
    """A notebook as papermill leaves a failed one: an error output, an image that is not there, one from a
    server."""
    error = new_output("error", ename="ValueError", evalue="boom",
                       traceback=["Traceback (most recent call last):", "ValueError: boom"])
    shown = new_output("display_data", data={"text/html": '<img src="missing.png">'
                                                          '<img src="http://127.0.0.1:9/x.png">'})
    # a function name from data, not escaped for Markdown: read as a link
    text = new_output("display_data",
                      data={"text/markdown": "allocated in (<pyo3::buffer::PyUntypedBuffer>::get)"})
    nb = new_notebook(cells=[new_markdown_cell("# broken"),
                             new_code_cell("raise ValueError('boom')", outputs=[error]),
                             new_code_cell("", outputs=[shown, text])])
    nb.metadata["papermill"] = {"exception": True, "duration": 1.0, "start_time": "2026-11-25T00:00:00+00:00",
                                "end_time": "2026-11-25T00:00:01+00:00", "parameters": {}}
    return nb


def test_the_check_finds_error_outputs_missing_images_outside_requests_and_stray_links(tmp_path):
    folder = tmp_path / "build" / "quick"
    folder.mkdir(parents=True)
    nbformat.write(broken_notebook(), folder / "01_broken.ipynb")
    built = report.build_report(folder, exports=folder, cwd=tmp_path, sources=tmp_path)
    assert built.notebooks[0].errors == 1
    assert "1 error output(s)" in (folder / "report" / "index.html").read_text()
    require_browser()
    problems = "\n".join(report.check_pages(folder / "report").problems)
    assert "01_broken.html: 1 error output(s)" in problems
    assert "Traceback (most recent call last)" in problems
    assert "image not shown: 'missing.png'" in problems
    assert "image not shown: 'http://127.0.0.1:9/x.png'" in problems
    assert "link 'pyo3::buffer::PyUntypedBuffer' is not relative" in problems


def test_a_missing_browser_skips_here_and_fails_in_ci(monkeypatch):
    from pqlab.publish import report_browser

    monkeypatch.setattr(report_browser, "find_chromium", lambda: None)
    monkeypatch.delenv("PQLAB_CHROMIUM", raising=False)
    for required, outcome in ((False, pytest.skip.Exception), (True, pytest.fail.Exception)):
        monkeypatch.setenv("PQLAB_REQUIRE_BROWSER", "1" if required else "0")
        with pytest.raises(outcome) as caught:
            require_browser()
        message = str(caught.value)
        assert "python -m pqlab.app.provision browser" in message and "\n" not in message


def test_the_command_line_builds_the_report_and_refuses_an_empty_folder(built, tmp_path, capsys):
    from pqlab.app import cli

    assert report.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no executed notebooks" in err and "make reproduce" in err
    folder = tmp_path / "quick"
    shutil.copytree(built.folder, folder, ignore=shutil.ignore_patterns("report"))
    assert cli.main(["report", str(folder), "--exports", str(folder)]) == 0
    assert "report: " in capsys.readouterr().out and (folder / "report" / "index.html").is_file()


def test_the_noise_of_each_run_is_read_from_the_run_contexts_of_the_exports():
    text = ("r-a: 3 rounds, 0 busy; steal 0.0%; r-b: 3 rounds, 1 busy; no reference shift; "
            "2 run(s) without rounds (a runner that cannot do them, or made before rounds)")
    assert report.noise_by_run([text, "r-a: another export's text"], ["r-a", "r-b", "r-c"]) == {
        "r-a": "3 rounds, 0 busy; steal 0.0%", "r-b": "3 rounds, 1 busy; no reference shift"}


def test_a_notebook_still_running_is_named_on_the_index():
    book = report.Notebook(stem="05_energy", title="t", ended="", started="2026-11-25T00:00:00+00:00",
                           seconds=None, cells=3, parameters={}, errors=0, images=0)
    index = report.render_index([book], "quick", [], [], [], [])
    assert "05_energy: papermill recorded no end: it was still running" in index


# ----- the referee's findings -------------------------------------------------------------------------------

def _text(page: str) -> str:
    """A page's text as a reader sees it (tags dropped, entities decoded; styles left out)."""
    page = re.sub(r"<style\b.*?</style>", "", page, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_the_index_shows_each_notebooks_parameters_as_executed(built):
    index = (built.out / "index.html").read_text()
    assert "steps=3" in index  # stored in the parameters cell: papermill's metadata does not name it
    assert f"label={html.escape(repr(HOSTILE))}" in index  # injected by papermill
    assert built.report.notebooks[0].parameters == {"label": repr(HOSTILE), "steps": "3"}
    assert built.report.notebooks[0].injected == {"label"}


def test_the_run_context_is_one_block_per_page_with_each_liboqs_build_once(built):
    for name in ("index.html", f"{STEM}.html"):
        page = (built.out / name).read_text()
        assert page.count('<dl class="pqlab-context">') == 1, name
        text = _text(page)
        assert text.count("DIST_BUILD=1") == 1, name  # three forms of one build: shown once
        for what in ("machine", "OS", "Python", "liboqs", "conformance", "counter", "profile", "rounds",
                     "busy rounds"):
            assert re.search(rf"<dt>{what}</dt>", page), (name, what)
    index = (built.out / "index.html").read_text()
    assert '<span class="pqlab-flag">non-conforming</span>: ML-DSA-44@liboqs' in index


def test_outputs_show_no_local_paths_and_no_source_line_under_a_warning(built):
    import tempfile

    text = _text((built.out / f"{STEM}.html").read_text())
    assert "PqlabWarning: cached in ~/.cache/x, built in <tmp>/pqlab-b, from pqlab/x.py" in text
    for local in (str(paths.ROOT) + "/", tempfile.gettempdir() + "/", str(Path.home()) + "/"):
        assert local not in text, local
    assert "warnings.warn(f'cached" not in text.split("PqlabWarning:")[1]  # no echo of the source line


def test_local_paths_and_warnings_are_cleaned_in_any_output():
    from pqlab.publish import report_context

    stderr = (f"{paths.ROOT}/pqlab/benchmark.py:226: PqlabWarning: runs on liboqs\n"
              "  announce_defaults(algorithms)  # the echo\nan ordinary line\n  indented, kept\n")
    assert report_context.local_paths(report_context.clean_warnings(stderr)) == (
        "pqlab/benchmark.py:226: PqlabWarning: runs on liboqs\nan ordinary line\n  indented, kept\n")
    assert report_context.local_paths("/var/tmp/x /tmpfoo /a/tmp/b") == "<tmp>/x /tmpfoo /a/tmp/b"


def test_busy_no_verdict_and_non_conforming_are_flagged_but_not_in_code(built):
    page = (built.out / f"{STEM}.html").read_text()
    flagged = re.findall(r'<span class="pqlab-flag">([^<]*)</span>', page)
    assert {"1 busy", "no verdict", "non-conforming"} <= set(flagged), flagged
    assert "0 busy" not in flagged and "busy" not in flagged  # "0 busy" is fine; `busy = 1` is code
    from pqlab.publish.report_context import flag

    assert flag('<style>.busy{}</style><code>busy</code><td title="busy">BUSY</td>') == (
        '<style>.busy{}</style><code>busy</code><td title="busy"><span class="pqlab-flag">BUSY</span></td>')


#: each table's width and its column's (the nearest notebook cell, else the page body; content box)
WIDTHS = """() => Array.from(document.querySelectorAll('table')).map(t => {
  const col = (t.parentElement && t.parentElement.closest('.jp-Cell')) || document.body;
  const c = col.getBoundingClientRect(), s = getComputedStyle(col);
  return [t.getBoundingClientRect().width,
          c.width - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];
})"""


def test_no_table_is_wider_than_its_column_in_chromium(built):
    require_browser()
    from playwright.sync_api import sync_playwright

    page_html = (built.out / f"{STEM}.html").read_text()
    assert "a_rather_long_column_name_39" in page_html  # the wide table is there
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=report.find_chromium())
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            for name in ("index.html", f"{STEM}.html"):
                page.goto((built.out / name).as_uri(), wait_until="load")
                widths = page.evaluate(WIDTHS)
                assert widths and all(t <= col + 1 for t, col in widths), (name, widths)
        finally:
            browser.close()
    checked = report.check_pages(built.out)  # the report's own check says the same
    assert not [p for p in checked.problems if "wider than their column" in p], checked.summary()


def test_the_flag_class_is_applied_in_chromium(built):
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=report.find_chromium())
        try:
            page = browser.new_page()
            page.goto((built.out / f"{STEM}.html").as_uri(), wait_until="load")
            flagged = page.eval_on_selector_all(".pqlab-flag", "els => els.map(e => e.textContent)")
            background = page.eval_on_selector(".pqlab-flag", "e => getComputedStyle(e).backgroundColor")
        finally:
            browser.close()
    assert {"1 busy", "no verdict", "non-conforming"} <= set(flagged)
    assert background not in ("", "rgba(0, 0, 0, 0)")
