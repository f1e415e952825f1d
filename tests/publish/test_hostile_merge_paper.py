"""End to end (issue #27): a bundle whose runs carry hostile strings in the free-text fields merge accepts
(CPU model, hostname, kernel in each run's metadata and the manifest; an algorithm and backend name in the
measurements, samples and sizes) is merged as another host; its merged runs go through the real export path (a
table, a figure, numbers and the paper's run context) and a LaTeX document of them compiles with pdflatex
-no-shell-escape, showing the strings as escaped text and running none of them."""
from __future__ import annotations

import csv
import json
import re
import subprocess

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import test_bundle  # noqa: E402
from conftest import require_browser, require_tools  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402
from test_bundle_hostile import forge, unpack  # noqa: E402
from test_hostile_strings import DOCUMENT, TYPEOUT, check_tex, compile_hostile_document  # noqa: E402
from test_results import make_run  # noqa: E402

from pqlab.core import escaping, formatting  # noqa: E402
from pqlab.publish import export, export_numbers, export_records, paper, plotting, report  # noqa: E402
from pqlab.store.bundle import create_bundle, merge_bundles  # noqa: E402
from pqlab.store.results import load_run  # noqa: E402
from pqlab.studies import atlas  # noqa: E402

lab = test_bundle.lab  # the fixture: runs recorded as machine lab-a, merged on another host (lab-z)

CPU = r"EPYC $\undefinedcs$ }" + TYPEOUT + r"\url{x %#&~^_"
HOSTNAME = "evil}" + TYPEOUT + r"%<b>x</b>"
KERNEL = rf"6.1 {TYPEOUT} $\undefinedcs$"
ALGORITHM = "<script>x</script>|" + TYPEOUT
BACKEND = r"lib}" + TYPEOUT + "{x"
TOPIC = "01_hostile"


def hostile_store(folder):
    """Two runs of machine lab-a whose metadata and rows carry the hostile strings (saved: checksums anew)."""
    for i, run_id in enumerate(("h1", "h2")):
        run = make_run(run_id, seed=20 + i, hostname=HOSTNAME)
        run.meta.update(hostname=HOSTNAME, kernel=KERNEL, cpu={**(run.meta.get("cpu") or {}), "model": CPU})
        for frame in (run.measurements, run.samples, run.sizes):
            frame["algorithm"] = frame["algorithm"].replace("ML-KEM-768", ALGORITHM)
            if "backend" in frame.columns:
                frame["backend"] = frame["backend"].replace("liboqs", BACKEND)
        run.save(folder)


def test_a_paper_of_a_merged_hostile_bundle_compiles_and_shows_the_strings_as_text(lab, export_tree,
                                                                                   tmp_path):
    require_tools("pdflatex", "pdftotext")
    source = tmp_path / "hostile-lab"
    hostile_store(source)
    manifest, files = unpack(create_bundle(tmp_path / "made.tar.gz", folder=source))
    manifest["machine"].update(hostname=HOSTNAME, kernel=KERNEL,
                               cpu={**(manifest["machine"].get("cpu") or {}), "model": CPU})
    forged = forge(tmp_path / "hostile.tar.gz", manifest, files)

    store = tmp_path / "store"
    [report] = merge_bundles([forged], folder=store)  # as lab-z: the strings are data, merge accepts them
    assert report["status"] == "imported" and sorted(report["imported"]) == ["h1", "h2"]
    runs = [load_run(store / "machines" / "lab-a" / run_id) for run_id in ("h1", "h2")]
    assert all(r.meta["cpu"]["model"] == CPU and r.meta["hostname"] == HOSTNAME for r in runs)
    assert ALGORITHM in set(runs[0].measurements["algorithm"]) and BACKEND in set(runs[0].samples["backend"])

    # the real export path: a table, a figure with the runs' context as its footer, numbers, the run context
    rows = pd.concat([r.measurements for r in runs], ignore_index=True)
    table = rows[["algorithm", "backend", "operation", "time_ns_median"]]
    export.save_table(table, TOPIC, "hostile", runs=runs, caption=f"Merged {ALGORITHM}")
    figure = runs[0].measurements.assign(ms=runs[0].measurements["time_ns_median"] / 1e6)  # one bar each
    files_written = export.save_figure(
        lambda w: plotting.grouped_bars(figure, category="algorithm", group="operation", value="ms", width=w,
                                        height=2.4, ylabel="ms"), TOPIC, "hostile", runs=runs)
    plt.close("all")
    assert files_written and all(p.exists() and p.stat().st_size > 0 for p in files_written)
    svg = (export_tree / "figures" / TOPIC / "hostile.svg").read_text()
    assert "<script" not in svg and "<b>" not in svg
    key = "keygen"  # a key the notebook names; the values come from the merged runs
    export.save_numbers({key: f"{rows['time_ns_median'].iloc[1]:.0f} ns", "plain": 2}, TOPIC, runs=runs)

    tables = export_tree / "data" / "tables"
    sidecar = json.loads((tables / TOPIC / "hostile.export.json").read_text())
    assert sidecar["runs"] == ["h1", "h2"]
    folder = tmp_path / "doc"
    folder.mkdir()
    context_tex = paper.context_tex(export_records.read_sidecars(tables))
    (folder / "context.tex").write_text(context_tex, encoding="utf-8")
    macro = export_numbers.macro_name(key)
    (folder / "hostile.tex").write_text(DOCUMENT.replace("MACRO", macro), encoding="utf-8")
    written = [folder / "context.tex", *sorted((tables / TOPIC).glob("*.tex"))]
    assert {p.name for p in written} == {"context.tex", "hostile.tex", "numbers.tex"}
    for path in written:
        check_tex(path.read_text(encoding="utf-8"))
    # the merged CPU model reached the run context, escaped
    assert r"\textbackslash{}undefinedcs" in context_tex

    text = compile_hostile_document(folder, tables)
    assert TYPEOUT in text and "<script>x</script>|" in text  # shown as written

    # the paper itself, from the same exports: pqlab.publish.paper.build runs pdflatex with -no-shell-escape
    assert "-no-shell-escape" in paper.PDFLATEX_OPTIONS
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / "pqlab.tex").write_text("\n".join([
        r"\input{preamble}", r"\begin{document}", rf"\input{{{TOPIC}/numbers}}",
        r"Keygen costs \pqlabKeygen{}.",
        rf"\input{{{TOPIC}/hostile}}", rf"\pqlabfigure{{{TOPIC}/hostile}}{{Merged runs.}}",
        r"\section{Context}\input{context}", r"\input{studies}", r"\end{document}", ""]))
    result = paper.build("quick", output=tmp_path, out=tmp_path / "out", paper=source_dir)
    log = result.log.read_text(encoding="latin-1")
    assert result.problems == [] and result.pdf.exists(), result.problems
    assert "PQLABpqlab" not in log
    for path in (tmp_path / "out" / "generated").glob("*.tex"):
        check_tex(path.read_text(encoding="utf-8"))
    text = subprocess.run(["pdftotext", str(result.pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "<script>x</script>|" in text and "EPYC" in text



# ----- issue #46: hostile bundles through the atlas, its exports, the paper and the report -----

#: bundles' file names (no "/": a file name) that close a Markdown code span and then refresh the page to
#: another site, or cover it with a link
BUNDLE_NAMES = ['x`<meta http-equiv="refresh" content="0;url=http:example.invalid">`.tar.gz',
                'y`<a href="http:example.invalid" style="position:fixed;top:0;left:0;width:100%;height:100%;'
                'z-index:9">`.tar.gz']
HYPERLINK = '=HYPERLINK("http://example.invalid/","x")'
ESC_CPU = "Evil \x1b]0;pwned\x07\x1b[2J\x1b[31m CPU"
LONG_CPU = "Long CPU " + "model " * 49  # 303 characters
#: machine id -> (CPU model, hypervisor): each hostile machine a bundle of its own
MACHINES = {"hostile-formula": (HYPERLINK, HYPERLINK), "hostile-bidi": ("Intel\u202eUSA\u200b CPU", "kvm"),
            "hostile-emoji": ("Emoji \U0001F600 \u4e2d CPU", "none"), "hostile-esc": (ESC_CPU, "kvm"),
            "hostile-long": (LONG_CPU, "kvm"), "hostile-foo1": ("Foo!Bar", "kvm"),
            "hostile-foo2": ("Foo?Bar", "kvm"), "hostile-tex": (CPU, HOSTNAME)}
#: how the hostile strings show, escaped and visible, in the paper's text and on the page (control and format
#: characters as <U+XXXX>)
SHOWN = ["=HYPERLINK(", "Intel<U+202E>USA<U+200B> CPU",
         "Evil <U+001B>]0;pwned<U+0007><U+001B>[2J<U+001B>[31m CPU", "Foo!Bar", "Foo?Bar", "Long model model"]
#: the characters no reader ever gets raw: control and format characters
RAW = ["\u202e", "\u200b", "\x1b", "\x07"]
#: what pdflatex cannot typeset shows as <U+XXXX> in the paper; a browser shows it as it is
EMOJI = {"paper": "Emoji <U+1F600> <U+4E2D> CPU", "page": "Emoji \U0001F600 \u4e2d CPU"}


def hostile_bundles(tmp_path, monkeypatch) -> list:
    """One bundle per hostile machine (:data:`MACHINES`), each of one atlas run (ML-DSA-44 and ML-DSA-65
    sign, Ed25519 sign) under a machine id of its own; the first ones named as :data:`BUNDLE_NAMES`."""
    from test_atlas import synthetic_run

    out = []
    for i, (mid, (cpu, hypervisor)) in enumerate(MACHINES.items()):
        monkeypatch.setenv("PQLAB_MACHINE_ID", mid)
        run = synthetic_run(tmp_path / "scratch" / mid, f"hostile{i}",
                            {("ML-DSA-44", "sign"): 100_000.0 * (1 + i / 4), ("Ed25519", "sign"): 50_000.0,
                             ("ML-DSA-65", "sign"): 150_000.0}, machine_id=mid, seed=i)
        run.meta.update(hypervisor=hypervisor, cpu={**(run.meta.get("cpu") or {}), "model": cpu})
        run.save(tmp_path / "sources" / mid)
        made = create_bundle(tmp_path / "bundles" / f"{mid}.tar.gz", folder=tmp_path / "sources" / mid)
        out.append(made.rename(made.with_name(BUNDLE_NAMES[i])) if i < len(BUNDLE_NAMES) else made)
    return out


def executed_atlas(path, markdown_texts: list[str], html_table: str, printed: str) -> None:
    """`path` (NN_topic.ipynb) as papermill leaves an executed notebook: a Markdown output per text, a table,
    a printed line."""
    outputs = [new_output("display_data", data={"text/markdown": t, "text/plain": "<Markdown>"})
               for t in markdown_texts]
    outputs += [new_output("display_data", data={"text/html": html_table, "text/plain": "<Table>"}),
                new_output("stream", name="stdout", text=printed + "\n")]
    nb = new_notebook(cells=[new_markdown_cell("# 07 · The atlas of hostile bundles"),
                             new_code_cell("atlas", outputs=outputs)])
    nb.metadata["papermill"] = {"exception": None, "duration": 1.0, "start_time": "2026-11-25T00:00:00+00:00",
                                "end_time": "2026-11-25T00:00:01+00:00", "parameters": {}}
    nbformat.write(nb, path)


#: what a page holds that data must never make: elements that load, run or navigate, and any element
#: outside the page's own layout (fixed or sticky, or beyond the document's edges)
PAGE_FACTS = """() => {
  const W = document.documentElement.scrollWidth, H = document.documentElement.scrollHeight;
  const clipped = e => {  // inside a box that scrolls or clips it (a wide table)
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (s.overflowX !== 'visible' || s.overflowY !== 'visible') return true;
    }
    return false;
  };
  const outside = [];
  for (const e of document.body.querySelectorAll('*')) {
    const s = getComputedStyle(e), r = e.getBoundingClientRect();
    const x0 = r.left + scrollX, y0 = r.top + scrollY, x1 = r.right + scrollX, y1 = r.bottom + scrollY;
    if (s.position === 'fixed' || s.position === 'sticky' || (r.width > 0 && r.height > 0 && !clipped(e)
        && (x0 < -1 || y0 < -1 || x1 > W + 1 || y1 > H + 1)))
      outside.push(e.outerHTML.slice(0, 120));
  }
  const live = 'meta[http-equiv]:not([http-equiv="Content-Security-Policy"]), body meta, script, iframe, '
    + 'frame, form, base, object, embed, link, a[style]';
  return {outside, live: Array.from(document.querySelectorAll(live)).map(e => e.outerHTML.slice(0, 120)),
          text: document.body.innerText};
}"""


@pytest.mark.slow
def test_hostile_bundles_reach_the_atlas_paper_and_report_only_as_escaped_visible_text(lab, export_tree,
                                                                                      tmp_path, monkeypatch):
    """Issue #46, done when: bundles with every hostile string of issues #27 and #46 merged; the atlas's
    exports as notebook 07 writes them, the paper and the report built from them: the paper compiles and shows
    each string escaped and visible, the CSVs run no formula, two CPU models whose keys collide and a 300
    character one each export their number, and the report page opens in chromium with no navigation, no
    element that loads, runs or navigates and none outside its own layout."""
    require_tools("pdflatex", "pdftotext")
    bundles = hostile_bundles(tmp_path, monkeypatch)
    store = tmp_path / "store"
    reports = atlas.merge(bundles, store)
    assert [r["status"] for r in reports] == ["imported"] * len(MACHINES)

    # notebook 07's exports, from the merged runs
    comps = atlas.comparisons(["ML-DSA-44", "ML-DSA-65"], ["ML-KEM-768"], {"sig": "Ed25519", "kem": "X25519"},
                              {"sig": "ML-DSA-44", "kem": "ML-KEM-768"})
    result = atlas.build_atlas(comps, message_bytes=100, folder=store, published=False)
    assert len(result.platforms) == len(MACHINES)
    reference = atlas.reference_platform(result, "hostile-tex")
    cross = atlas.cross_platform(result, reference)
    topic = atlas.TOPIC
    export.save_figure(lambda w: atlas.plot_ratios(result, atlas.CLASSICAL, width=w), topic,
                       "ratios_classical", runs=result.runs)
    export.save_figure(lambda w: atlas.plot_cross_platform(cross, result, width=w), topic, "cross_platform",
                       runs=result.runs)
    plt.close("all")
    export.save_table(atlas.platform_table(result), topic, "platforms", runs=result.runs,
                      columns=["platform", "kind", "statistic"], caption="Platforms of the atlas")
    export.save_table(result.ratios, topic, "ratios", runs=result.runs, paper=False)
    numbers = atlas.numbers(result, cross, reference)
    export.save_numbers({k: fmt.format(v) for k, (v, fmt) in numbers.items()}, topic, runs=result.runs)

    tables = export_tree / "data" / "tables" / topic
    # D4, D5: a key per platform, bounded, none shared: every platform but the reference has its number
    losses = {k for k in numbers if k.startswith("largest_loss_")}
    assert len(losses) == len(MACHINES) - 1 and all(len(k) <= escaping.MAX_KEY for k in losses)
    assert len({k for k in losses if k.startswith("largest_loss_foo_bar")}) == 2
    assert all((tables / f"{k}.txt").read_text() for k in losses)
    # D6: no cell of the CSVs is a formula
    for name in ("platforms", "ratios"):
        with open(tables / f"{name}.csv", newline="", encoding="utf-8") as fh:
            cells = [c for row in csv.reader(fh) for c in row]
        assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not c[1:2].isdigit())]
        assert any(c.startswith("'=HYPERLINK(") for c in cells)
        assert not [c for c in cells for r in RAW if r in c]

    # the paper
    macros = json.loads((tables / "numbers.export.json").read_text())["macros"]
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / "pqlab.tex").write_text("\n".join([
        r"\input{preamble}", r"\begin{document}", rf"\input{{{topic}/numbers}}",
        r"Platforms: \pqlabPlatformsMeasured{}. Losses: " + "; ".join(
            rf"\{m}{{}}" for k, m in macros.items() if k.startswith("largest_loss_")) + ".",
        rf"\input{{{topic}/platforms}}", rf"\pqlabfigure{{{topic}/ratios_classical}}{{Merged runs.}}",
        r"\section{Context}\input{context}", r"\input{studies}", r"\end{document}", ""]))
    built = paper.build("quick", output=tmp_path, out=tmp_path / "out", paper=source_dir)
    assert built.problems == [] and built.pdf.exists(), built.problems
    text = subprocess.run(["pdftotext", str(built.pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = "".join(text.split())  # a cell or a line breaks where LaTeX likes
    missing = [s for s in [*SHOWN, EMOJI["paper"]] if "".join(s.split()) not in flat]
    assert missing == [] and not [r for r in [*RAW, "\U0001F600", "\u4e2d"] if r in text], missing

    # the report: notebook 07's Markdown outputs and table, and a printed line, from these bundles
    folder = export_tree
    local = [{"build": "default", "run_id": "hostile0", "machine_id": "hostile-formula", "override": None,
              "bundle": str(bundles[0])}]
    texts = [atlas.describe_local(local, reports), atlas.describe_platforms(result),
             atlas.describe_ratios(result), atlas.describe_cross_platform(cross, reference)]
    assert all(f"{escaping.code(b.name)}" in texts[0] for b in bundles[:2])
    executed_atlas(folder / f"{topic}.ipynb", texts,
                   formatting.table(atlas.platform_table(result))._repr_html_(), ESC_CPU)
    built_report = report.build_report(folder, exports=folder, cwd=tmp_path, sources=tmp_path)
    page = (built_report.index.parent / f"{topic}.html").read_text(encoding="utf-8")
    assert not re.search(r"<meta[^>]*refresh|<a\b[^>]*style=", page, re.IGNORECASE)  # only as text
    assert not [r for r in RAW if r in page]
    require_browser()
    check_in_chromium(built_report.index.parent / f"{topic}.html")
    assert report.check_pages(built_report.index.parent).problems == []


def check_in_chromium(page_path) -> None:
    """Open `page_path` in chromium: it navigates nowhere and requests nothing but itself, no element loads,
    runs or navigates, none lies outside the page's layout, and the hostile strings show as escaped text."""
    from playwright.sync_api import sync_playwright

    url = page_path.as_uri()
    navigated, requested = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=report.find_chromium(), args=["--disable-dev-shm-usage"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.route(lambda u: not u.startswith("file:"), lambda route: route.abort())
            page = context.new_page()
            page.on("framenavigated", lambda frame: navigated.append(frame.url))
            page.on("request", lambda request: requested.append(request.url))
            page.goto(url, wait_until="load")
            page.wait_for_timeout(1500)  # a refresh of 0 s would have left by now
            facts = page.evaluate(PAGE_FACTS)
            for _ in range(3):
                page.mouse.click(640, 400)  # a link covering the page would navigate
            page.wait_for_timeout(500)
        finally:
            browser.close()
    assert set(navigated) == {url} and set(requested) <= {url}, (navigated, requested)
    assert facts["live"] == [] and facts["outside"] == [], facts
    missing = [s for s in [*SHOWN, EMOJI["page"], HOSTNAME] if s not in facts["text"]]
    assert missing == [], missing
    assert all(b in facts["text"] for b in BUNDLE_NAMES) and not [r for r in RAW if r in facts["text"]]
