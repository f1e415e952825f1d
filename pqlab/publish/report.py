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
- ``index.html``: every notebook with its title, parameters, when it ran and for how long, its error outputs,
  the run context recorded by its exports (machine, counter, versions, liboqs build, git commit, runs: the
  ``context`` of each ``NAME.export.json`` that pqlab.publish.export writes), and links to its exports;
- ``exports/figures/NN_topic/``, ``exports/tables/NN_topic/``: copies of the files each export lists.

Every link is relative and stays inside the folder, so the folder can be copied or archived alone.  The pages
run no script and load nothing from outside: each carries a Content-Security-Policy that allows inline styles
and ``data:`` images only (the lab template's MathJax, require.js, mermaid and widget loaders, all from a CDN,
are left out; a progress-bar widget is shown as the text of its final state).  Text from data (titles,
parameters, run context, file names) is HTML-escaped with :func:`pqlab.core.formatting.html`.

:func:`check_pages` opens every page in Debian's chromium through Playwright (``executable_path``; Playwright
never downloads a browser here): each page loads, every ``<img>`` is decoded (``naturalWidth > 0``), no error
output, no traceback, no script, no request leaves the folder, every relative link resolves inside it.
``python -m pqlab.app.provision browser`` installs chromium where apt-get can; ``PQLAB_CHROMIUM`` names
another Chromium binary.
"""
from __future__ import annotations

import argparse
import html as _html
import os
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from pqlab.core import paths
from pqlab.core.errors import shell_command
from pqlab.core.escaping import html
from pqlab.core.quantities import fmt_duration
from pqlab.core.schema import convert_unit
from pqlab.measure.machine import git_state
from pqlab.publish.context import git_text
from pqlab.publish.durations import read_durations
from pqlab.publish.report_notebooks import (
    Notebook,
    ReportError,
    collect_exports,
    executed_notebooks,
    notebook_facts,
    prepare,
    read_notebook,
)

REPORT = "report"
INDEX = "index.html"
#: the Debian package :func:`pqlab.app.provision.browser` installs, and the names its binary goes by
CHROMIUM_PACKAGE = "chromium"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
#: what a page may load: inline styles, data: images and fonts; no script, nothing from a file or a server
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; base-uri 'none'; "
       "form-action 'none'")
#: run-context rows shown per notebook rather than in the report's summary (they name runs)
PER_NOTEBOOK = ("runs", "noise during the runs (rounds)")
#: text that marks a failed cell on a page: a Python traceback, papermill's banner above a failed notebook
ERROR_TEXT = ("Traceback (most recent call last)", "An Exception was encountered at")
#: files of one export linked in full on the index; the rest fold under <details>
SHOWN_FILES = 8

# nbconvert's lab template without anything that loads from outside or runs a script, with the report's line
# on top of each page and every error output marked (nbconvert gives errors and stderr the same markup).
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

_CSS = """
.pqlab-report-nav { font: 14px/1.5 system-ui, sans-serif; padding: 8px 16px; margin: 0 0 8px;
  border-bottom: 1px solid #ccc; background: #f6f6f6; }
.pqlab-error-output { border-left: 4px solid #c00; }
.pqlab-report-nav a { color: #0645ad; text-decoration: underline; }
"""

_INDEX_CSS = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 1100px; margin: 24px auto; padding: 0 16px; \
color: #222; }
table { border-collapse: collapse; margin: 8px 0 16px; width: 100%; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; \
overflow-wrap: break-word; }
th { background: #f3f3f3; }
code { font-size: 90%; }
.problem { color: #a00; font-weight: bold; }
.files { overflow-wrap: anywhere; }
.note { color: #555; }
"""


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

def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"pqlab_report.html.j2": _TEMPLATE})],
                        template_file="pqlab_report.html.j2", embed_images=True, theme="light")


def render_notebook(nb, book: Notebook, profile: str, cwd: Path, exporter=None) -> str:
    """One executed notebook as a self-contained HTML page (markdown images relative to `cwd`, papermill's
    working folder, are embedded)."""
    exporter = exporter or _exporter()
    ran = (f"ran {fmt_duration(book.seconds)}, ended {_when(book.ended)}" if book.seconds is not None
           else "no papermill run recorded")
    header = (f'<nav class="pqlab-report-nav"><a href="{INDEX}">Report index</a> · '
              f'<a href="{INDEX}#{html(book.stem)}">this notebook\'s parameters, run context and exports'
              '</a> · '
              f"executed notebook <code>{html(book.stem)}</code>, profile {html(profile)}, {html(ran)}</nav>")
    resources = {"metadata": {"name": f"{book.stem} ({profile})", "path": str(cwd)}, "pqlab_csp": CSP,
                 "pqlab_css": _CSS, "pqlab_header": header}
    body, _ = exporter.from_notebook_node(prepare(nb), resources=resources)
    return body


def _table(rows, header=None) -> str:
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return "<table>" + head + body + "</table>"


def _parameters(book: Notebook) -> str:
    if not book.parameters:
        return "the notebook's own (its <code>parameters</code> cell)"
    return "<br>".join(f"<code>{html(k)} = {html(repr(v))}</code>" for k, v in book.parameters.items())


def _context(books: list[Notebook]) -> tuple[list[tuple[str, list[tuple[str, list[str]]]]], dict]:
    """(what, [(value, notebooks)]) over every export's run context, and per notebook the rows of
    PER_NOTEBOOK."""
    summary: dict[str, dict[str, list[str]]] = {}
    own: dict[str, dict[str, list[str]]] = {}
    for book in books:
        for export in book.exports:
            for pair in export.get("context") or []:
                if not (isinstance(pair, list | tuple) and len(pair) == 2):
                    continue
                what, value = str(pair[0]), str(pair[1])
                if what in PER_NOTEBOOK:
                    own.setdefault(book.stem, {}).setdefault(what, [])
                    if value not in own[book.stem][what]:
                        own[book.stem][what].append(value)
                    continue
                where = summary.setdefault(what, {}).setdefault(value, [])
                if book.stem not in where:
                    where.append(book.stem)
    return [(w, list(v.items())) for w, v in summary.items()], own


def noise_by_run(texts: list[str], runs: list[str]) -> dict[str, str]:
    """Run id -> the noise its rounds saw, from the "noise during the runs (rounds)" texts of run contexts
    ("RUN: text; RUN: text; N run(s) without rounds"); a run without rounds is not in it."""
    found: dict[str, str] = {}
    for text in texts:
        marks = sorted((m.start(), r) for r in runs for m in re.finditer(re.escape(r) + ": ", text))
        for i, (start, run) in enumerate(marks):
            end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
            segment = re.split(r"; \d+ run\(s\) without rounds", text[start + len(run) + 2:end])[0]
            found.setdefault(run, segment.removesuffix("; "))
    return found


def _export_runs(export: dict) -> list:
    """The runs an export's sidecar names ([] when it names none)."""
    return export.get("runs") if isinstance(export.get("runs"), list) else []


def _export_rows(book: Notebook, labels: dict[str, str]) -> list[list[str]]:
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
        rows.append([f"{html(e.get('name', '?'))}{record}", html(e.get("export", e["kind"])),
                     f'<span class="files">{files or "–"}</span>', runs, note])
    return rows


def render_index(books: list[Notebook], profile: str, durations: list[dict], missing: list[str],
                 failed: list[str], notes: list[str]) -> str:
    """The index page: every value from data HTML-escaped."""

    summary, own = _context(books)
    machines = sorted({f"{r.get('machine')}, {r.get('cores')} cores" for r in durations})
    commit = git_text({"git": git_state()})
    parts = [f"<h1>pqlab: the executed notebooks of the {html(profile)} profile</h1>",
             f"<p>Each page is an executed notebook as <code>make reproduce PROFILE={html(profile)}</code> "
             f"left it in <code>build/{html(profile)}/</code>: its narrative, parameters, code and outputs, "
             "with the text it generated from the data. The pages are static: images are embedded, no script "
             "runs, every link is relative, so this folder can be copied or archived alone. The exports "
             "(figures and tables) are copied under <code>exports/</code>.</p>"]
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
    rows = [[f'<a href="{html(quote(b.stem))}.html">{html(b.stem)}</a>', html(b.title), _parameters(b),
             html(_when(b.ended)), html(fmt_duration(b.seconds)) if b.seconds is not None else "–",
             str(b.cells), str(b.images), f'<span class="problem">{b.errors}</span>' if b.errors else "0",
             f'<a href="#{html(b.stem)}">{len(b.exports)}</a>'] for b in books]
    parts.append("<h2>Notebooks</h2>" + _table(rows, ["page", "question", "parameters", "papermill run ended",
                                                       "run time", "cells run", "image outputs",
                                                       "error outputs", "exports"]))
    ran_on = "; ".join(html(m) for m in machines) or "not recorded (no durations.csv)"
    parts.append(f"<p>Executed on: {ran_on} (<code>durations.csv</code>). This index was written from commit "
                 f"<code>{html(commit)}</code>.</p>")
    parts.append("<h2>Run context</h2><p>As the exports recorded it (each export's <code>context</code>, "
                 "from the metadata of the runs it shows); a value not shared by every notebook names the "
                 "notebooks.</p>")
    rows = []
    for what, values in summary:
        shown = [html(v) + ("" if len(values) == 1 and len(stems) == len([b for b in books if b.exports])
                            else f' <span class="note">({html(", ".join(stems))})</span>')
                 for v, stems in values]
        rows.append([html(what), "<br>".join(shown)])
    parts.append(_table(rows) if rows else "<p>No export recorded a run context.</p>")
    for b in books:
        parts.append(f'<h2 id="{html(b.stem)}">{html(b.stem)}</h2><p><a href="{html(quote(b.stem))}.html">'
                     f"the executed notebook</a>; {html(b.title)}</p>")
        runs = list(dict.fromkeys(str(r) for e in b.exports for r in _export_runs(e)))
        noise = noise_by_run(own.get(b.stem, {}).get(PER_NOTEBOOK[1], []), runs)
        labels = {r: f"run {i}" for i, r in enumerate(runs, 1)}
        parts.append(_table([[labels[r].replace(" ", "&nbsp;"), html(r),
                              html(noise.get(r, "no rounds recorded"))] for r in runs],
                            ["", "run its exports show", "noise during its rounds"])
                     if runs else "<p>Its exports name no run.</p>")
        parts.append(_table(_export_rows(b, labels), ["export", "kind", "files", "runs", "caption, note"])
                     if b.exports else "<p>No exports.</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f"<title>pqlab report: {html(profile)}</title>\n<style>{_INDEX_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(parts) + "\n</body>\n</html>\n")


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
            page.write_text(render_notebook(nb, book, profile, cwd, exporter), encoding="utf-8")
            books.append(book)
            pages.append(out / page.name)
        (tmp / INDEX).write_text(render_index(books, profile, read_durations(folder), missing, failed, notes),
                                 encoding="utf-8")
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Report(index=out / INDEX, pages=pages, notebooks=books, files=files, missing=missing,
                  failed=failed, notes=notes)


# ----- the browser check ----------------------------------------------------------------------------------

def find_chromium() -> str | None:
    """The chromium binary to drive: PQLAB_CHROMIUM when set (None when it is not executable), else
    Debian's."""
    named = os.environ.get("PQLAB_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def browser_problem() -> str:
    """Why the report cannot be checked in a browser here ("" when it can)."""
    if find_chromium() is None:
        named = os.environ.get("PQLAB_CHROMIUM")
        return (f"PQLAB_CHROMIUM={named} is not an executable file" if named
                else f"chromium is not installed (Debian's package {CHROMIUM_PACKAGE})")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("Playwright is not installed in this environment (make setup installs it from "
                "requirements.lock)")
    return ""


_FACTS = """() => {
  const images = Array.from(document.images);
  const ok = i => i.complete && i.naturalWidth > 0;
  return {
    images: images.length,
    loaded: images.filter(ok).length,
    broken: images.filter(i => !ok(i)).map(i => (i.getAttribute('src') || '').slice(0, 80)),
    errors: document.querySelectorAll('[data-pqlab-error]').length,
    scripts: document.querySelectorAll('script').length,
    text: document.body ? document.body.innerText : '',
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
    anchors: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
  };
}"""


@dataclass
class BrowserCheck:
    """What :func:`check_pages` saw: one dict per page, and one line per problem."""

    pages: list[dict]
    problems: list[str]
    chromium: str = ""

    @property
    def images(self) -> int:
        return sum(p["images"] for p in self.pages)

    @property
    def loaded(self) -> int:
        return sum(p["loaded"] for p in self.pages)

    def summary(self) -> str:
        links = sum(p["links"] for p in self.pages)
        errors = sum(p["errors"] for p in self.pages)
        text = (f"browser check ({self.chromium}): {len(self.pages)} pages loaded, {self.loaded} of "
                f"{self.images} images shown, {links} relative links resolve, {errors} error outputs")
        return "\n".join([text, *(f"problem: {p}" for p in self.problems)])


def _link_problem(page: Path, href: str, root: Path, anchors: dict[Path, set[str]]) -> str:
    """Why a link of `page` does not resolve inside `root` ("" when it does; an http(s) or mailto link is
    fine)."""
    parts = urlsplit(href)
    if parts.scheme in ("http", "https", "mailto"):
        return ""
    if parts.scheme or href.startswith("/"):
        why = f" (it has the scheme {parts.scheme}: text from data read as a link?)" if parts.scheme else ""
        return f"{page.name}: link {href!r} is not relative{why}"
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if root != target and root not in target.parents:
        return f"{page.name}: link {href!r} leaves the report folder"
    if not target.is_file():
        return f"{page.name}: link {href!r} names no file"
    if parts.fragment and target.suffix == ".html":
        if target not in anchors:  # a page not opened yet: its ids from its source
            anchors[target] = {_html.unescape(i)
                               for i in re.findall(r'\sid="([^"]+)"', target.read_text(encoding="utf-8"))}
        # browsers try the raw id, then decoded
        if not {parts.fragment, unquote(parts.fragment)} & anchors[target]:
            return f"{page.name}: link {href!r} names no anchor of {target.name}"
    return ""


def check_pages(report: Path | str, chromium: str | None = None, timeout_s: float = 60) -> BrowserCheck:
    """Open the index and every page of `report` in chromium (Playwright, ``executable_path``; nothing is
    downloaded): each page loads, every ``<img>`` is shown (naturalWidth > 0), no error output, no traceback,
    no script and no dialog, no request outside the folder, every relative link resolves inside it."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    problem = browser_problem() if chromium is None else ""
    if problem:
        raise ReportError(f"{problem}: run {shell_command('pqlab.app.provision browser')}")
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    root = Path(report).resolve()
    if not (root / INDEX).is_file():
        raise ReportError(f"{root} has no {INDEX}: build the report first (make report)")
    files = [root / INDEX, *sorted(p for p in root.glob("*.html") if p.name != INDEX)]
    chromium = chromium or find_chromium()
    result = BrowserCheck(pages=[], problems=[], chromium=str(chromium))
    outside: list[str] = []
    events: list[str] = []
    anchors: dict[Path, set[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--disable-dev-shm-usage"])
        try:
            context = browser.new_context()
            context.route(lambda url: not url.startswith(("file:", "data:")),
                          lambda route: (outside.append(route.request.url), route.abort()))
            page = context.new_page()
            page.on("dialog", lambda d: (events.append(f"a dialog ({d.message[:60]!r})"), d.dismiss()))
            page.on("pageerror", lambda exc: events.append(f"a script error ({str(exc)[:80]})"))
            page.on("console",
                    lambda m: m.type == "error" and events.append(f"a console error ({m.text[:120]})"))
            for path in files:
                outside.clear()
                events.clear()
                try:
                    page.goto(path.as_uri(), wait_until="load", timeout=convert_unit(timeout_s, "s", "ms"))
                    facts = page.evaluate(_FACTS)
                except PlaywrightError as exc:
                    result.problems.append(f"{path.name} did not load: {str(exc).splitlines()[0]}")
                    continue
                anchors[path] = set(facts["anchors"])
                relative = [h for h in facts["links"]
                            if urlsplit(h).scheme not in ("http", "https", "mailto")]
                found = [f"{path.name}: image not shown: {src!r}" for src in facts["broken"]]
                found += [f"{path.name}: {facts['errors']} error output(s)"] if facts["errors"] else []
                found += [f"{path.name}: shows {t!r}" for t in ERROR_TEXT if t in facts["text"]]
                found += [f"{path.name}: {facts['scripts']} script element(s)"] if facts["scripts"] else []
                found += [f"{path.name}: requested {u[:100]!r} outside the folder" for u in outside]
                found += [f"{path.name}: {e}" for e in events]
                found += [p for h in relative if (p := _link_problem(path, h, root, anchors))]
                result.problems += found
                result.pages.append({"page": path.name, "images": facts["images"], "loaded": facts["loaded"],
                                     "errors": facts["errors"], "links": len(relative)})
        finally:
            browser.close()
    return result


def browser_version(chromium: str | None = None) -> str:
    """The version chromium reports when Playwright launches it (a smoke test of the pair)."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium or find_chromium(),
                                     args=["--disable-dev-shm-usage"])
        try:
            return browser.version
        finally:
            browser.close()


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
