"""`make report`: one profile's executed notebooks as static HTML pages a referee can read without Jupyter.

    python -m pqlab.publish.report build/quick                    # -> build/quick/report/index.html
    python -m pqlab.publish.report build/full --exports .         # full's exports: figures/, data/tables/
    python -m pqlab.publish.report build/quick --check            # then open every page in chromium
    python -m pqlab.publish.report build/quick --check --no-build # check the report already there
    python -m pqlab report build/quick                    # the same, from pqlab's CLI

``make reproduce`` writes it after the notebooks ran; ``make report`` writes it from what is already executed.
Nothing is executed, opened or served.  The folder ``build/<profile>/report/`` holds:

- ``NN_topic.html``: each executed notebook, rendered by nbconvert's lab template, its outputs as the run left
  them (images are embedded in the page), a line on top linking back to the index;
- ``index.html``: every notebook with its title, its parameters as executed (the stored ``parameters`` cell
  and what papermill injected), when it ran and for how long, its error outputs, one run-context block
  (machine, OS, Python, each liboqs build once, conformance, counter, profile, rounds and busy rounds: from
  the ``context`` of each ``NAME.export.json`` that pqlab.publish.export writes), and its exports: each
  figure, table and number with the command that re-runs it (``python -m pqlab rerun``, pqlab.publish.rerun);
- ``exports/figures/NN_topic/``, ``exports/tables/NN_topic/``: copies of the files each export lists.

Every link is relative and stays inside the folder, so the folder can be copied or archived alone.  The pages
run no script and load nothing from outside: each carries a Content-Security-Policy that allows inline styles
and ``data:`` images only (the lab template's MathJax, require.js, mermaid and widget loaders, all from a CDN,
are left out; a progress-bar widget is shown as the text of its final state).  Text from data (titles,
parameters, run context, file names) is HTML-escaped with :func:`pqlab.core.formatting.html`.  Outputs are
shown without local paths (the checkout relative, home as ``~``, temporary folders as ``<tmp>``) and warnings
without the source line Python echoes; tables fit their column (wide ones scroll); "busy", "no verdict" and
"non-conforming" are marked (``pqlab-flag``): :mod:`pqlab.publish.report_context`.

:func:`check_pages` opens every page in Debian's chromium through Playwright (``executable_path``; Playwright
never downloads a browser here; :mod:`pqlab.publish.report_browser`): each page loads, every ``<img>`` is
decoded (``naturalWidth > 0``), no table is wider than its column, no error output, no traceback, no script,
no request leaves the folder, every relative link resolves inside it.
``python -m pqlab.app.provision browser`` installs chromium where apt-get can; ``PQLAB_CHROMIUM`` names
another Chromium binary.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from pqlab.core import paths
from pqlab.core.escaping import html
from pqlab.core.quantities import fmt_duration
from pqlab.measure.machine import git_state
from pqlab.publish.context import git_text
from pqlab.publish.durations import read_durations
from pqlab.publish.report_browser import (  # noqa: F401  (re-exported: the report's command line, provision)
    CHROMIUM_NAMES,
    CHROMIUM_PACKAGE,
    ERROR_TEXT,
    BrowserCheck,
    browser_problem,
    browser_version,
    check_pages,
    find_chromium,
)
from pqlab.publish.report_context import (
    context_block,
    export_command,
    flag,
    noise_by_run,
    numbers_html,
    parameters_html,
)
from pqlab.publish.report_notebooks import (
    Notebook,
    ReportError,
    collect_exports,
    executed_notebooks,
    notebook_facts,
    prepare,
    read_notebook,
)
from pqlab.publish.rerun import with_keys

REPORT = "report"
INDEX = "index.html"
#: what a page may load: inline styles (nbconvert's and pandas' style attributes need them), data: images and
#: fonts; no script, frame, object or connection, nothing from a file or a server, no <base>, no form.  (A
#: CSP cannot stop a navigation: no data reaches a page as HTML, pqlab.core.escaping and markdown_output.)
CSP = ("default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; connect-src 'none'; "
       "img-src data:; style-src 'unsafe-inline'; font-src data:; base-uri 'none'; form-action 'none'")
#: run-context rows shown per notebook rather than in the report's summary (they name runs)
PER_NOTEBOOK = ("runs", "noise during the runs (rounds)")
#: files of one export linked in full on the index; the rest fold under <details>
SHOWN_FILES = 8

# nbconvert's lab template without anything that loads from outside or runs a script, with the report's line
# on top of each page, every error output marked (nbconvert gives errors and stderr the same markup) and the
# Markdown a cell's code displayed (text made from data) rendered with its raw HTML shown as text
# (markdown_output).
_TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head -%}
<meta http-equiv="Content-Security-Policy" content="{{ resources.pqlab_csp }}">
{{ super() }}
{%- endblock html_head -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}<style>{{ resources.pqlab_css }}</style>{%- endblock html_head_css -%}
{% block data_markdown scoped -%}
<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown jp-OutputArea-output {{ extra_class }}"
 data-mime-type="text/markdown">
{{ output.data['text/markdown'] | pqlab_markdown_output }}
</div>
{%- endblock data_markdown %}
{%- block body_header -%}
{{ super() }}
{{ resources.pqlab_header }}
{%- endblock body_header -%}
{% block error -%}
<div class="pqlab-error-output" data-pqlab-error="{{ output.ename | e }}">
{{ super() }}
</div>
{%- endblock error %}
"""

#: the run-context block and the flagged words, on every page
_SHARED_CSS = """
.pqlab-context { display: grid; grid-template-columns: max-content 1fr; gap: 0 12px; font-size: 90%;
  margin: 8px 0 16px; }
.pqlab-context dt { font-weight: bold; }
.pqlab-context dd { margin: 0; overflow-wrap: anywhere; }
.pqlab-flag { background: #ffe08a; color: #6b3d00; font-weight: bold; padding: 0 2px; }
td:has(.pqlab-flag) { background: #fff4d1; }
"""

_CSS = _SHARED_CSS + """
.pqlab-report-nav { font: 14px/1.5 system-ui, sans-serif; padding: 8px 16px; margin: 0 0 8px;
  border-bottom: 1px solid #ccc; background: #f6f6f6; }
.pqlab-error-output { border-left: 4px solid #c00; }
.pqlab-report-nav a { color: #0645ad; text-decoration: underline; }
.pqlab-report-nav .pqlab-context { margin: 4px 0 0; }
.jp-OutputArea-output table, .jp-RenderedHTMLCommon table { display: block; width: max-content;
  max-width: 100%; overflow-x: auto; }
"""

_INDEX_CSS = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 1100px; margin: 24px auto; padding: 0 16px; \
color: #222; }
table { border-collapse: collapse; margin: 8px 0 16px; width: 100%; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; \
overflow-wrap: break-word; }
td code { overflow-wrap: anywhere; }
details table { display: block; max-width: 100%; overflow-x: auto; }
.params { font-size: 0.85em; line-height: 1.35; }
.params code { display: inline-block; margin: 0 6px 2px 0; }
.params code.set { font-weight: bold; }
.pqlab-command { display: inline-block; min-width: 18em; }
th { background: #f3f3f3; }
code { font-size: 90%; }
.problem { color: #a00; font-weight: bold; }
.files { overflow-wrap: anywhere; }
.note { color: #555; }
""" + _SHARED_CSS


@dataclass
class Report:
    """What :func:`build_report` wrote."""

    index: Path
    pages: list[Path]
    notebooks: list[Notebook]
    files: int
    missing: list[str]
    failed: list[str]
    notes: list[str]

    def summary(self) -> str:
        errors = sum(n.errors for n in self.notebooks)
        images = sum(n.images for n in self.notebooks)
        exports = sum(len(n.exports) for n in self.notebooks)
        text = (f"report: {self.index} ({len(self.pages)} notebook pages, {images} embedded images, "
                f"{exports} exports with {self.files} files; {errors} error outputs)")
        return "\n".join([text, *(f"report: note: {n}" for n in self.notes)])


def _when(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError):
        return "not recorded"


# ----- pages ----------------------------------------------------------------------------------------------

def markdown_output(source: str) -> str:
    """A Markdown output of a cell (``display(Markdown(...))``: text a study made from data, a bundle's file
    name, a CPU model) as HTML: as nbconvert renders it, but any raw HTML in it shown as text (a ``<meta>``,
    ``<a style=...>`` or ``<script>`` never becomes one).  A defence in depth: pqlab's prose escapes its data
    (:mod:`pqlab.core.escaping`); links stay as written, for :func:`check_pages` to find a stray one (the
    page's CSP runs no ``javascript:``); the notebook's own Markdown cells, the checkout's, render as
    nbconvert does."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath  # nbconvert: lazy

    return MarkdownWithMath(renderer=IPythonRenderer(escape=True)).render(source)


def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"pqlab_report.html.j2": _TEMPLATE})],
                        template_file="pqlab_report.html.j2", embed_images=True, theme="light",
                        filters={"pqlab_markdown_output": markdown_output})


def render_notebook(nb, book: Notebook, profile: str, cwd: Path, exporter=None,
                    exports_root: Path | None = None, results: Path | None = None) -> str:
    """One executed notebook as a self-contained HTML page (markdown images relative to `cwd`, papermill's
    working folder, are embedded): on top its run-context block and the command that re-runs it; outputs
    without local paths; flagged words marked."""
    exporter = exporter or _exporter()
    ran = (f"ran {fmt_duration(book.seconds)}, ended {_when(book.ended)}" if book.seconds is not None
           else "no papermill run recorded")
    again = _notebook_command(book, profile, exports_root)
    header = (f'<nav class="pqlab-report-nav"><a href="{INDEX}">Report index</a> · '
              f'<a href="{INDEX}#{html(book.stem)}">this notebook\'s parameters, exports and the commands '
              'that re-run them</a> · '
              f"executed notebook <code>{html(book.stem)}</code>, profile {html(profile)}, {html(ran)}"
              + (f'<br>Re-run it: <code class="pqlab-command">{html(again)}</code>' if again else "")
              + context_block(book.exports, results) + "</nav>")
    resources = {"metadata": {"name": f"{book.stem} ({profile})", "path": str(cwd)}, "pqlab_csp": CSP,
                 "pqlab_css": _CSS, "pqlab_header": header}
    body, _ = exporter.from_notebook_node(prepare(nb), resources=resources)
    return flag(body)


def _notebook_command(book: Notebook, profile: str, exports_root: Path | None) -> str:
    """The command that re-runs the whole notebook (from its exports' records, else its profile)."""
    for e in book.exports:
        if e.get("command"):
            return export_command(e, book.stem, exports_root or Path("."))
    if exports_root is None:
        return ""
    return export_command({"profile": profile}, book.stem, exports_root)


def _table(rows, header=None) -> str:
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return "<table>" + head + body + "</table>"


def _noise(books: list[Notebook]) -> dict[str, list[str]]:
    """Per notebook, the "noise during the runs (rounds)" texts of its exports."""
    own: dict[str, list[str]] = {}
    for book in books:
        for export in book.exports:
            for pair in export.get("context") or []:
                if isinstance(pair, list | tuple) and len(pair) == 2 and pair[0] == PER_NOTEBOOK[1]:
                    where = own.setdefault(book.stem, [])
                    if str(pair[1]) not in where:
                        where.append(str(pair[1]))
    return own


def _export_runs(export: dict) -> list:
    """The runs an export's sidecar names ([] when it names none)."""
    return export.get("runs") if isinstance(export.get("runs"), list) else []


def _export_rows(book: Notebook, labels: dict[str, str], exports_root: Path) -> list[list[str]]:
    rows = []
    for e in book.exports:
        anchors = [f'<a href="{html(quote(link))}">{html(link.rsplit("/", 1)[-1])}</a>'
                   for link in e["links"]]
        files = ", ".join(anchors[:SHOWN_FILES])
        if len(anchors) > SHOWN_FILES:
            files += (f"<details><summary>{len(anchors) - SHOWN_FILES} more files</summary>"
                      f"{', '.join(anchors[SHOWN_FILES:])}</details>")
        if e["absent"]:
            files += f' <span class="problem">missing or refused: {html(", ".join(e["absent"]))}</span>'
        record = f' (<a href="{html(quote(e["sidecar"]))}">record</a>)' if e["sidecar"] else ""
        note = html(e.get("caption") or "")
        if e["stale"]:
            note += (' <span class="problem">written before this notebook\'s last run: not rewritten by it, '
                     'it may show older runs</span>')
        runs = (", ".join(html(labels.get(str(r), r)).replace(" ", "&nbsp;") for r in _export_runs(e))
                or "none (published data only)")
        command = export_command(e, book.stem, exports_root)
        if command and e.get("export") != "numbers":
            command = with_keys(command, [str(e.get("name", ""))])
        shown = f'<code class="pqlab-command">{html(command)}</code>' if command else "–"
        if e.get("export") == "numbers" and e.get("folder"):
            note += numbers_html(Path(e["folder"]), command)
        rows.append([f"{html(e.get('name', '?'))}{record}", html(e.get("export", e["kind"])),
                     f'<span class="files">{files or "–"}</span>', runs, shown, note])
    return rows


def render_index(books: list[Notebook], profile: str, durations: list[dict], missing: list[str],
                 failed: list[str], notes: list[str], exports_root: Path | None = None,
                 results: Path | None = None) -> str:
    """The index page: every value from data HTML-escaped."""

    exports_root = exports_root if exports_root is not None else paths.export_root(profile, paths.ROOT) \
        if profile in ("quick", "full") else Path(".")
    own = _noise(books)
    machines = sorted({f"{r.get('machine')}, {r.get('cores')} cores" for r in durations})
    commit = git_text({"git": git_state()})
    parts = [f"<h1>pqlab: the executed notebooks of the {html(profile)} profile</h1>",
             f"<p>Each page is an executed notebook as <code>make reproduce PROFILE={html(profile)}</code> "
             f"left it in <code>build/{html(profile)}/</code>: its narrative, parameters, code and outputs, "
             "with the text it generated from the data. The pages are static: images are embedded, no script "
             "runs, every link is relative, so this folder can be copied or archived alone. The exports "
             "(figures and tables) are copied under <code>exports/</code>. Each figure, table and number "
             "below names the command that re-runs its notebook as <code>make reproduce</code> does, into "
             "<code>build/rerun/</code>, and compares the number with the one shown here (<code>python -m "
             "pqlab rerun TOPIC KEY</code>).</p>"]
    stale = {b.stem: sum(e["stale"] for e in b.exports) for b in books}
    running = [b.stem for b in books if not b.ended]
    if any(b.errors for b in books) or any(stale.values()) or running or failed or missing or notes:
        items = [f"<li>{html(b.stem)}: {b.errors} error output(s)</li>" for b in books if b.errors]
        items += [f"<li>{html(s)}: papermill recorded no end: it was still running, or was stopped, when "
                  "this report was written; its page shows the cells run so far</li>" for s in running]
        items += [f'<li>{html(s)}: {n} export(s) written before its last run (<a href="#{html(s)}">marked '
                  'below</a>): that run did not rewrite them, they may show older runs</li>'
                  for s, n in stale.items() if n]
        items += [f"<li>{html(s)}: its last run failed; the executed copy with the error is "
                  f"<code>build/{html(profile)}/failed/{html(s)}.ipynb</code> (not in this report)</li>"
                  for s in failed]
        items += [f"<li>{html(s)}: not executed in this profile (no "
                  f"<code>build/{html(profile)}/{html(s)}.ipynb</code>)</li>" for s in missing]
        items += [f"<li>{html(n)}</li>" for n in notes]
        parts.append(f'<h2 class="problem">Read this first</h2><ul>{"".join(items)}</ul>')
    rows = [[f'<a href="{html(quote(b.stem))}.html">{html(b.stem)}</a>', html(b.title),
             parameters_html(b.parameters, b.injected),
             html(_when(b.ended)), html(fmt_duration(b.seconds)) if b.seconds is not None else "–",
             str(b.cells), str(b.images), f'<span class="problem">{b.errors}</span>' if b.errors else "0",
             f'<a href="#{html(b.stem)}">{len(b.exports)}</a>'] for b in books]
    parts.append("<h2>Notebooks</h2>" + _table(rows, ["page", "question", "parameters as executed",
                                                       "papermill run ended", "run time", "cells run",
                                                       "image outputs", "error outputs", "exports"]))
    ran_on = "; ".join(html(m) for m in machines) or "not recorded (no durations.csv)"
    parts.append(f"<p>Executed on: {ran_on} (<code>durations.csv</code>). This index was written from commit "
                 f"<code>{html(commit)}</code>.</p>")
    parts.append("<h2>Run context</h2><p>As the exports of every notebook recorded it (each export's "
                 "<code>context</code>, from the metadata of the runs it shows); each notebook's page shows "
                 "its own.</p>" + context_block([e for b in books for e in b.exports], results))
    for b in books:
        parts.append(f'<h2 id="{html(b.stem)}">{html(b.stem)}</h2><p><a href="{html(quote(b.stem))}.html">'
                     f"the executed notebook</a>; {html(b.title)}</p>")
        runs = list(dict.fromkeys(str(r) for e in b.exports for r in _export_runs(e)))
        noise = noise_by_run(own.get(b.stem, []), runs)
        labels = {r: f"run {i}" for i, r in enumerate(runs, 1)}
        parts.append(_table([[labels[r].replace(" ", "&nbsp;"), html(r),
                              html(noise.get(r, "no rounds recorded"))] for r in runs],
                            ["", "run its exports show", "noise during its rounds"])
                     if runs else "<p>Its exports name no run.</p>")
        parts.append(_table(_export_rows(b, labels, exports_root),
                            ["export", "kind", "files", "runs", "re-run it", "caption, note"])
                     if b.exports else "<p>No exports.</p>")
    return flag("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
                f"<title>pqlab report: {html(profile)}</title>\n<style>{_INDEX_CSS}</style>\n</head>\n"
                "<body>\n" + "\n".join(parts) + "\n</body>\n</html>\n")


def build_report(folder: Path | str, exports: Path | str | None = None, out: Path | str | None = None,
                 cwd: Path | str | None = None, sources: Path | str | None = None) -> Report:
    """Render the executed notebooks of `folder` (build/<profile>) into `out` (default `folder`/report).

    `exports`: the profile's export tree (default :func:`pqlab.core.paths.export_root` of the profile named by
    the folder); `cwd`: where papermill ran them (markdown images; default notebooks/); `sources`: the
    notebooks a complete report has (default notebooks/), to name those not executed.  The report is written
    beside and then moved into place, so a reader never sees half of one."""

    folder = Path(folder)
    notebooks = executed_notebooks(folder)
    if not notebooks:
        raise ReportError(f"{folder} holds no executed notebooks (NN_topic.ipynb): run make reproduce first")
    profile = folder.resolve().name
    exports = Path(exports) if exports is not None else paths.export_root(profile)
    out = Path(out) if out is not None else folder / REPORT
    cwd = Path(cwd) if cwd is not None else paths.NOTEBOOKS
    sources = Path(sources) if sources is not None else paths.NOTEBOOKS
    failed = sorted(p.stem for p in (folder / "failed").glob("[0-9][0-9]_*.ipynb"))
    missing = sorted({p.stem for p in sources.glob("[0-9][0-9]_*.ipynb")} - {p.stem for p in notebooks}
                     - set(failed))
    # the runs' metadata (their conformance records): data/results of the PQLAB_OUTPUT that wrote the exports
    output = exports.parent.parent if exports.name == profile and exports.parent.name == "build" else exports
    results = output / "data" / "results"
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        exporter, books, pages, files, notes = _exporter(), [], [], 0, []
        for path in notebooks:
            nb = read_notebook(path)
            book = notebook_facts(path, nb)
            book.exports, copied, why = collect_exports(exports, book, tmp)
            files, notes = files + copied, notes + why
            page = tmp / f"{path.stem}.html"
            page.write_text(render_notebook(nb, book, profile, cwd, exporter, exports, results),
                            encoding="utf-8")
            books.append(book)
            pages.append(out / page.name)
        (tmp / INDEX).write_text(render_index(books, profile, read_durations(folder), missing, failed, notes,
                                              exports, results), encoding="utf-8")
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Report(index=out / INDEX, pages=pages, notebooks=books, files=files, missing=missing,
                  failed=failed, notes=notes)


# ----- command line ---------------------------------------------------------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("folder", help="the executed notebooks: build/quick or build/full")
    p.add_argument("--exports", help="the profile's export tree (default: build/quick for quick, the "
                                     "repository for full: figures/ and data/tables/)")
    p.add_argument("--check", action="store_true", help="then open every page in chromium (python -m "
                                                        "pqlab.app.provision browser installs it)")
    p.add_argument("--no-build", action="store_true",
                   help="with --check: check the report already in FOLDER/report")
    return p


def run(args) -> int:
    """The command: build (unless --no-build), print what was written, check in chromium with --check."""
    folder = Path(args.folder)
    if not args.no_build:
        print(build_report(folder, exports=args.exports).summary())
    elif not args.check:
        raise ReportError("--no-build needs --check: there is nothing else to do")
    if args.check:
        checked = check_pages(folder / REPORT)
        print(checked.summary())
        return 1 if checked.problems else 0
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pqlab.publish.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    args = add_arguments(parser).parse_args(argv)
    try:
        return run(args)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
