"""End to end (issue #27): a bundle whose runs carry hostile strings in the free-text fields merge accepts
(CPU model, hostname, kernel in each run's metadata and the manifest; an algorithm and backend name in the
measurements, samples and sizes) is merged as another host; its merged runs go through the real export path (a
table, a figure, numbers and the paper's run context) and a LaTeX document of them compiles with pdflatex
-no-shell-escape, showing the strings as escaped text and running none of them."""
from __future__ import annotations

import json
import subprocess

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import test_bundle  # noqa: E402
from conftest import require_tools  # noqa: E402
from test_bundle_hostile import forge, unpack  # noqa: E402
from test_hostile_strings import DOCUMENT, TYPEOUT, check_tex, compile_hostile_document  # noqa: E402
from test_results import make_run  # noqa: E402

from pqlab.publish import export, export_numbers, export_records, paper, plotting  # noqa: E402
from pqlab.store.bundle import create_bundle, merge_bundles  # noqa: E402
from pqlab.store.results import load_run  # noqa: E402

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
