"""What the report shows beside the pages nbconvert renders (:mod:`pqlab.publish.report`): a notebook's
parameters as executed, one compact run-context block per page, outputs without local paths, the words a
referee must not miss marked, and the exported numbers with the command that re-runs each.

- :func:`executed_parameters`: the values a notebook ran with: its ``parameters`` cell as stored, overridden
  by the cell papermill injected (``metadata.papermill.parameters`` names only the injected ones; the quick
  profile injects none).
- :func:`context_rows`: (what, value) for the block: machine, OS, Python, liboqs builds (release, build,
  options: each once), conformance, counter, profile, rounds and busy rounds, commit: read from the exports'
  ``context`` (pqlab.publish.context) and, for conformance, the metadata of the runs they name.
- :func:`local_paths`, :func:`clean_warnings`, :func:`output_text`: the checkout as a relative path, the home
  folder as ``~``, temporary folders as ``<tmp>``; Python's warnings without the source line they echo;
  control and format characters (an ESC, U+202E) as ``<U+XXXX>``.
- :func:`flag`: "busy" (not "0 busy"), "no verdict" and "non-conforming" wrapped in
  ``<span class="pqlab-flag">`` in the text of an HTML page (never in a tag, a style, or code).
"""
from __future__ import annotations

import ast
import re
import sys
import tempfile
from pathlib import Path

from pqlab.core import paths
from pqlab.core.escaping import html, invisible, visible
from pqlab.publish import rerun
from pqlab.store.machines import stored_meta

FLAG_CLASS = "pqlab-flag"
#: what a referee must not miss: busy rounds, screens without a verdict, implementations failing their checks
FLAGGED = re.compile(r"\b(?:(\d+)\s)?busy\b|\bno verdict\b|\bnon-conforming\b", re.IGNORECASE)
#: regions of a page whose text is not flagged: styles, scripts, titles, code (nbconvert's highlighted input),
#: and labels (a definition's term, a table's header)
_PROTECTED = re.compile(r"<(style|script|title|textarea|code|dt|th)\b.*?</\1>"
                        r"|<div class=\"highlight[^\"]*\">.*?</pre>", re.DOTALL | re.IGNORECASE)
#: a line Python's warnings module prints ("FILE:LINE: Category: message"), followed by the source line
_WARNING = re.compile(r"^\S.*:\d+: [A-Za-z_]\w*(?:Warning|Error)\b: ")
TMP_MARK = "<tmp>"
#: a parameter value longer than this (characters) is folded under <details> on the index
LONG_VALUE = 60
#: a conformance status listing more implementations than this folds them under <details>
LISTED = 8


# ----- parameters -----------------------------------------------------------------------------------------

def _assignments(source: str) -> dict[str, str]:
    """name -> the text of its value, for each ``name = value`` of a parameters cell (repr of a literal,
    else the code as written)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = repr(ast.literal_eval(node.value))
            except (ValueError, SyntaxError, TypeError):
                out[node.targets[0].id] = ast.get_source_segment(source, node.value) or "?"
    return out


def executed_parameters(nb) -> tuple[dict[str, str], set[str]]:
    """(name -> value as executed, the names papermill injected)."""
    stored, injected = {}, {}
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "code" and "injected-parameters" in tags:
            injected.update(_assignments(source))
        elif cell.cell_type == "code" and "parameters" in tags:
            stored.update(_assignments(source))
    recorded = (nb.metadata.get("papermill") or {}).get("parameters") or {}
    injected.update({k: repr(v) for k, v in recorded.items() if k not in injected})
    return {**stored, **injected}, set(injected)


def parameters_html(values: dict[str, str], injected: set[str]) -> str:
    """The parameters, compactly: ``name=value`` items, those papermill set in bold, long values folded."""
    if not values:
        return '<span class="note">none (no <code>parameters</code> cell)</span>'

    def item(k: str, v: str) -> str:
        return f'<code class="param{" set" if k in injected else ""}">{html(k)}={html(v)}</code>'

    short = [item(k, v) for k, v in values.items() if len(v) <= LONG_VALUE]
    long = {k: v for k, v in values.items() if len(v) > LONG_VALUE}
    folded = (f"<details><summary>{html(', '.join(long))}</summary>"
              f"{' '.join(item(k, v) for k, v in long.items())}</details>") if long else ""
    note = (f'<span class="note">{len(injected)} set by papermill (bold), the rest as stored</span>'
            if injected else '<span class="note">as stored in the notebook</span>')
    return f'<div class="params">{" ".join(short)}{folded}</div>{note}'


# ----- the run-context block ------------------------------------------------------------------------------

_LIBOQS = re.compile(r"(\d+(?:\.\d+)+\S*) \(([^;()]+?) build(?:; ([^()]*))?\)")
_ROUNDS = re.compile(r"(\d+) rounds, (\d+) busy")


def _values(exports: list[dict], what: str) -> list[str]:
    return list(dict.fromkeys(str(p[1]) for e in exports for p in e.get("context") or []
                              if isinstance(p, list | tuple) and len(p) == 2 and p[0] == what))


def _strip_runs(text: str) -> list[str]:
    """The values of a run-context text without the runs each belongs to ("A (run X); B (runs Y, Z)")."""
    parts = re.split(r" \(runs? [^()]*\)(?:; |$)", text)
    return [p.strip() for p in parts if p.strip()]


def liboqs_builds(texts: list[str]) -> list[str]:
    """Each liboqs build the runs loaded, once: "0.16.0, default build (OPT_TARGET=generic, ...)"."""
    out = []
    for text in texts:
        for release, build, options in _LIBOQS.findall(text):
            out.append(f"{release}, {build} build" + (f" ({options})" if options else ""))
    return list(dict.fromkeys(out))


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


def rounds_of(texts: list[str], runs: list[str]) -> tuple[int, int, int]:
    """(runs measured in rounds, rounds, busy rounds) over `runs`, from the exports' noise texts."""
    noise = noise_by_run(texts, runs)
    counted = [tuple(map(int, m.groups())) for t in noise.values() if (m := _ROUNDS.search(t))]
    return len(counted), sum(r for r, _ in counted), sum(b for _, b in counted)


def conformance_of(runs: list[str], results: Path) -> dict[str, list[str]]:
    """status -> implementations, from the conformance records of the runs' metadata in `results` ({} when
    none is there)."""
    by_status: dict[str, list[str]] = {}
    for run in runs:
        path = results / f"{run}.meta.json"
        meta = stored_meta(path) if path.exists() else None  # schema-checked: a damaged one is left out
        for impl, record in ((meta or {}).get("conformance") or {}).items():
            if isinstance(record, dict) and record.get("status"):
                where = by_status.setdefault(str(record["status"]), [])
                if impl not in where:
                    where.append(impl)
    return by_status


def context_rows(exports: list[dict], results: Path | None = None) -> list[tuple[str, str]]:
    """(what, HTML) rows of the run-context block of `exports` (one notebook's, or every notebook's)."""
    runs = list(dict.fromkeys(str(r) for e in exports for r in (e.get("runs") or [])
                              if isinstance(e.get("runs"), list)))

    def joined(*whats: str) -> str:
        values = [v for w in whats for t in _values(exports, w) for v in _strip_runs(t)]
        return html("; ".join(dict.fromkeys(values))) or "not recorded"

    rows = [("machine", joined("CPU") + f' <span class="note">({joined("hypervisor")})</span>'),
            ("OS", "kernel " + joined("kernel") if _values(exports, "kernel") else "not recorded"),
            ("Python", joined("Python") + f' <span class="note">({joined("libraries")})</span>')]
    builds = liboqs_builds(_values(exports, "liboqs"))
    rows.append(("liboqs", "<br>".join(html(b) for b in builds) or "not loaded by these runs"))
    status = conformance_of(runs, results) if results is not None else {}
    if status:
        parts = []
        for name, impls in sorted(status.items(), key=lambda s: (s[0] == "conforms", s[0])):
            names = html(", ".join(impls))
            parts.append(f"{html(name)}: {names}" if len(impls) <= LISTED else
                         f"<details><summary>{html(name)}: {len(impls)} implementations</summary>{names}"
                         "</details>")
        rows.append(("conformance", "<br>".join(parts)))
    else:
        rows.append(("conformance", "not recorded (the runs' metadata is not in this checkout)"))
    rows += [("counter", joined("cycle counter")),
             ("profile", html(", ".join(dict.fromkeys(str(e.get("profile")) for e in exports
                                                      if e.get("profile"))) or "not recorded"))]
    measured, rounds, busy = rounds_of(_values(exports, "noise during the runs (rounds)"), runs)
    rows.append(("rounds", f"{rounds} rounds in {measured} of {len(runs)} runs" if measured
                 else f"none recorded ({len(runs)} runs)"))
    rows.append(("busy rounds", str(busy) + (" busy" if busy else "")))
    rows.append(("git commit", joined("git commit")))
    return rows


def context_block(exports: list[dict], results: Path | None = None) -> str:
    """The block: a small definition list."""
    if not exports:
        return '<p class="note">No export recorded a run context.</p>'
    items = "".join(f"<dt>{html(w)}</dt><dd>{v}</dd>" for w, v in context_rows(exports, results))
    return f'<dl class="pqlab-context">{items}</dl>'


# ----- outputs --------------------------------------------------------------------------------------------

def _local_roots() -> list[tuple[str, str]]:
    """(folder, shown as) pairs, the most specific first: the checkout, the venv, temporary folders, home."""
    pairs = [(str(paths.ROOT.resolve()), "."), (str(paths.ROOT), ".")]
    if not Path(sys.prefix).resolve().is_relative_to(paths.ROOT.resolve()):
        pairs.append((sys.prefix, "<venv>"))
    pairs += [(t, TMP_MARK) for t in dict.fromkeys([tempfile.gettempdir(), "/var/tmp", "/tmp"])]
    pairs.append((str(Path.home()), "~"))
    return [(a, b) for a, b in pairs if a not in ("", "/")]


def local_paths(text: str) -> str:
    """`text` with the checkout's path made relative, temporary folders as ``<tmp>``, home as ``~``."""
    for folder, shown in _local_roots():
        pattern = r"(?<![\w./+-])" + re.escape(folder.rstrip("/")) + r"(?![\w.+-])"
        if shown == ".":
            text = re.sub(pattern + "/", "", text)
        text = re.sub(pattern, shown, text)
    return text


def clean_warnings(text: str) -> str:
    """`text` (a stderr stream) without the source line Python's warnings module echoes under each warning."""
    lines, out, skip = text.splitlines(keepends=True), [], False
    for line in lines:
        if skip and line.startswith("  "):
            skip = False
            continue
        skip = bool(_WARNING.match(line))
        out.append(line)
    return "".join(out)


#: an ESC that starts no colour sequence ("ESC[...m", which nbconvert's ansi2html renders as a colour)
_NOT_COLOUR = re.compile(r"\x1b(?!\[[0-9;]*m)")


def output_text(text: str, colours: bool = False, markup: bool = False) -> str:
    """`text` of an output with every control and format character as ``<U+XXXX>``
    (:func:`pqlab.core.escaping.visible`: a right-to-left override, a zero width space, an ESC from data are
    seen), tab and line breaks kept; with `markup` (an HTML output) as ``&lt;U+XXXX&gt;``, which HTML shows
    as that; with `colours` (a traceback, which IPython colours) the ESC of a colour sequence kept, which
    nbconvert renders as a colour."""
    if markup:
        return "".join(f"&lt;U+{ord(c):04X}&gt;" if invisible(c) and c not in "\t\n\r" else c for c in text)
    if not colours:
        return visible(text, keep="\t\n\r")
    return _NOT_COLOUR.sub(visible("\x1b"), visible(text, keep="\t\n\r\x1b"))


def clean_output(output) -> None:
    """One output of an executed notebook as the report shows it: local paths replaced, warnings without
    their source line, control and format characters shown (:func:`output_text`) (in place)."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else text
        text = clean_warnings(text) if output.get("name") == "stderr" else text
        output["text"] = output_text(local_paths(text))
    for mime, value in (output.get("data") or {}).items():
        if mime.startswith("text/"):
            text = "".join(value) if isinstance(value, list) else value
            output["data"][mime] = output_text(local_paths(text), markup=mime == "text/html")
    if output.get("output_type") == "error":
        output["evalue"] = output_text(local_paths(str(output.get("evalue", ""))))
        output["traceback"] = [output_text(local_paths(str(t)), colours=True)
                               for t in output.get("traceback", [])]


def flag(page: str) -> str:
    """`page` (HTML) with each flagged word in its text wrapped in ``<span class="pqlab-flag">``."""

    def words(text: str) -> str:
        def one(m: re.Match) -> str:
            return m.group(0) if m.group(1) == "0" else f'<span class="{FLAG_CLASS}">{m.group(0)}</span>'

        return FLAGGED.sub(one, text)

    def free(segment: str) -> str:  # text between tags only
        return "".join(part if part.startswith("<") else words(part)
                       for part in re.split(r"(<[^>]*>)", segment))

    out, last = [], 0
    for m in _PROTECTED.finditer(page):
        out += [free(page[last:m.start()]), m.group(0)]
        last = m.end()
    return "".join(out) + free(page[last:])


# ----- numbers and their commands -------------------------------------------------------------------------

def export_command(export: dict, stem: str, exports_root: Path) -> str:
    """The command recorded by `export` (its sidecar's "command"), else the one its profile and export tree
    give, with the export's name as its key (a figure or table; the numbers' own keys are added per
    number); "" when there is none (an interactive run, a topic that is no notebook of the checkout)."""
    recorded = export.get("command")
    if not isinstance(recorded, str) or not recorded.startswith("python -m pqlab rerun "):
        profile = str(export.get("profile") or "")
        if profile not in rerun.PROFILES or not (paths.NOTEBOOKS / f"{stem}.ipynb").is_file():
            return ""
        output = exports_root if profile == "full" else exports_root.parent.parent
        recorded = rerun.command(stem, profile, output=output)
    return recorded


def numbers_html(folder: Path, command: str) -> str:
    """Every number of `folder`/numbers.export.json with its interval and the command that re-runs it (a
    table under <details>); "" when there are none."""
    numbers = rerun.read_numbers(folder)
    ends = rerun.interval_ends(numbers)
    shown = [n for k, n in numbers.items() if k not in ends]
    if not shown:
        return ""
    rows = []
    for n in shown:
        run = html(rerun.with_keys(command, [n.key])) if command else "–"
        attrs = (f' data-low="{html(repr(n.low))}" data-high="{html(repr(n.high))}"'
                 if n.low is not None and n.high is not None else "")
        rows.append(f'<tr data-pqlab-number="{html(n.key)}"{attrs}><td><code>{html(n.key)}</code></td>'
                    f"<td>{html(n.text) or '–'}</td><td>{html(n.interval)}</td>"
                    f'<td><code class="pqlab-command">{run}</code></td></tr>')
    with_ci = sum(n.low is not None for n in shown)
    return (f'<details class="numbers"><summary>{len(shown)} exported numbers ({with_ci} with an interval), '
            "each with the command that re-runs it</summary><table><tr><th>key</th><th>number</th>"
            "<th>interval</th><th>re-run it</th></tr>" + "".join(rows) + "</table></details>")
