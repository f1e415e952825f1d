"""Strings from data or metadata (run ids, machine facts, algorithm names, flags, captions) may come from a
stranger's bundle: every export shows them as text and never runs them (issue #27).

Hostile values go through every export path: a table's .tex and .md, numbers.tex, a figure with the runs'
context as its footer, the paper's run context (context_tex, context_markdown) and a table's HTML.  A LaTeX
document that inputs the exported table, numbers and context compiles with pdflatex -no-shell-escape, and its
log shows that no ``\\typeout`` of the data ran: each one types ``PQLAB\\jobname``, which only a \\typeout
that ran expands to ``PQLAB`` and the job's name.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import require_tools  # noqa: E402

from pqlab.core import escaping, formatting
from pqlab.measure import machine  # noqa: E402
from pqlab.publish import context, export, export_numbers, export_records, paper, plotting

TYPEOUT = r"\typeout{PQLAB\jobname}"
RUN_NEWLINE = f"r8\n{TYPEOUT}%"  # a comment ended by the data, a live line after it
RUN_BRACE = rf"r9}}{TYPEOUT}\url{{x"  # out of \url{} and back in
CPU = r"Intel $\undefinedcs$ Xeon % # & ~ ^ _ {} \\ " + TYPEOUT  # mathtext in the figure footer
ALGORITHM = "<script>alert(1)</script>|x"  # HTML in Markdown, a column more in a Markdown table
HYPERVISOR = f"kvm\n{TYPEOUT}\r<b>x</b> | y"
TOPIC = "01_hostile"
#: hostile strings as cells of a table: every character LaTeX, Markdown or mathtext reads
CELLS = [ALGORITHM, r"back\slash \\ % # & ~ ^ _ { } $\undefinedcs$", f"line\nbreak {TYPEOUT}",
         "[link](javascript:x) *a* `b`"]


def hostile_run(run_id: str):
    meta = machine.collect({}, liboqs=False)
    meta = {**meta, "run_id": run_id, "cpu": {**(meta.get("cpu") or {}), "model": CPU},
            "hypervisor": HYPERVISOR, "kernel": rf"6.1 {TYPEOUT} $\undefinedcs$",
            "python": "3.11 <script>x</script>"}
    return SimpleNamespace(run_id=run_id, meta=meta)


@pytest.fixture
def runs():
    return [hostile_run(RUN_NEWLINE), hostile_run(RUN_BRACE)]


def hostile_table() -> pd.DataFrame:
    return pd.DataFrame({"algorithm": CELLS, "backend": [f"liboqs {TYPEOUT}", "a|b", "<i>", "~^"],
                         r"<b>|label</b> $\undefinedcs$": ["1", "2", "3", "4"],
                         "signature_bytes": [17088, 2420, 666, 1],
                         "flags": [r"evil<b>|$\undefinedcs$" + TYPEOUT, "", "", ""]})


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def live_tex_lines(text: str) -> list[str]:
    """The lines of a .tex file where TeX reads a \\typeout, \\url or \\undefinedcs of the data: outside a
    comment, not as escaped text (\\textbackslash{}typeout)."""
    out = []
    for line in text.splitlines():
        if line.startswith("%"):
            continue
        # verbatim, brace-free (percent-encoded): never read as TeX
        line = re.sub(r"\\url\{[^}]*\}", "", line)
        if re.search(r"(?<!\\textbackslash\{\})(typeout|undefinedcs|jobname)\b", line):
            out.append(line)
    return out


def check_tex(text: str) -> None:
    lines = text.splitlines()
    assert not [line for line in lines if line.lstrip().startswith(r"\typeout")], text
    assert live_tex_lines(text) == [], live_tex_lines(text)
    assert "<script>" not in text


# ----- the escaping rules, one per language -----

def test_each_language_has_one_rule_that_shows_the_text():
    assert formatting.latex(RUN_BRACE) == r"r9\}\textbackslash{}typeout\{PQLAB\textbackslash{}jobname\}" \
        r"\textbackslash{}url\{x"
    assert formatting.latex("a\nb\r\tc") == "a b  c"
    assert formatting.latex(RUN_NEWLINE, "comment") == r"r8 \typeout{PQLAB\jobname}%"
    assert ("\n" not in formatting.latex(HYPERVISOR, "comment")
            and "\r" not in formatting.latex(HYPERVISOR, "comment"))
    url = formatting.latex(RUN_BRACE, "url")
    assert url == "r9%7D%5Ctypeout%7BPQLAB%5Cjobname%7D%5Curl%7Bx" and not set(url) & set("{}\\#\n ")
    assert formatting.latex("https://x.org/a-b_c.csv?x=1", "url") == "https://x.org/a-b_c.csv?x=1"
    with pytest.raises(ValueError, match="where='math' is not one of text, comment, url"):
        formatting.latex("x", "math")
    assert formatting.markdown(ALGORITHM) == r"&lt;script&gt;alert(1)&lt;/script&gt;\|x"
    assert formatting.markdown("a\nb & `c` *d* _e_ [f] $g$ ~h~ \\") == \
        r"a b &amp; \`c\` \*d\* \_e\_ \[f\] \$g\$ \~h\~ \\"
    assert [formatting.markdown(t) for t in ("# h", "- x", "1. y", "-0.5", "1.23")] == [
        r"\# h", r"\- x", r"1\. y", "-0.5", "1.23"]
    assert formatting.html('<a href="x">&</a>') == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
    assert formatting.mpl_text(r"$\undefinedcs$") == r"\$\undefinedcs\$"


def test_mpl_text_is_never_mathtext_and_shows_as_written():
    from matplotlib.text import Text

    for raw in (r"$\undefinedcs$", r"a\$b$c$", "$$", r"\$x$", "plain"):
        t = Text(0, 0, formatting.mpl_text(raw))
        shown, math = t._preprocess_math(t.get_text())
        assert (shown, math) == (raw, False)


# ----- every export path -----

def test_a_table_s_tex_md_and_html_show_hostile_cells_as_text(export_tree, runs):
    export.save_table(hostile_table(), TOPIC, "hostile", runs=runs,
                      caption=f"Caption {ALGORITHM} {TYPEOUT} $x$ % #")
    folder = export_tree / "data" / "tables" / TOPIC
    tex = (folder / "hostile.tex").read_text()
    check_tex(tex)
    header = tex.splitlines()[0]
    assert (header.startswith("% pqlab table 01_hostile/hostile: ")
            and r"r8 \typeout{PQLAB\jobname}%" in header)
    assert r"\&lt;" not in tex and r"\textless{}script\textgreater{}alert(1)" \
        r"\textless{}/script\textgreater{}\textbar{}x" in tex
    md = (folder / "hostile.md").read_text()
    assert "<" not in md and ">" not in md.replace("&gt;", "")
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + len(CELLS)  # header, rule, one line per row: no line break from the data
    assert {unescaped_pipes(line) for line in rows} == {6}  # 4 columns and the notes' marks
    assert r"&lt;script&gt;alert(1)&lt;/script&gt;\|x" in md and r"\[link\](javascript:x) \*a\* \`b\`" in md
    assert md.splitlines()[0].startswith("Caption &lt;script&gt;") and r"\$x\$" in md.splitlines()[0]
    html = formatting.table(hostile_table())._repr_html_()
    assert "<script>" not in html and "<b>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;|x" in html
    sidecar = json.loads((folder / "hostile.export.json").read_text())
    assert sidecar["runs"] == [RUN_NEWLINE, RUN_BRACE]  # the record keeps them as they are


def test_numbers_tex_keeps_keys_and_run_ids_in_their_comments(export_tree, runs):
    key = f"sign\n{TYPEOUT}"
    export.save_numbers({key: r"1.5 µs $\undefinedcs$ % # & ~ ^ _ {} \\", "plain": 2}, TOPIC, runs=runs)
    tex = (export_tree / "data" / "tables" / TOPIC / "numbers.tex").read_text()
    check_tex(tex)
    lines = tex.splitlines()
    assert all(line.startswith(("%", r"\newcommand{\pqlab")) for line in lines), lines
    # the stamp and each number's line
    assert sum(RUN_NEWLINE.replace("\n", " ") in line for line in lines) == 3
    macro = export_numbers.macro_name(key)
    assert rf"\newcommand{{\{macro}}}{{1.5~\textmu{{}}s~\$\textbackslash{{}}undefinedcs\$" in tex


def test_a_figure_with_a_hostile_footer_and_labels_is_written(export_tree, runs):
    df = pd.DataFrame({"algorithm": [r"$\undefinedcs$", ALGORITHM] * 2,
                       "op": ["<b>sign</b>"] * 2 + [r"verify $\alpha$"] * 2, "ms": [1.0, 2.0, 3.0, 4.0]})
    files = export.save_figure(lambda w: plotting.grouped_bars(df, category="algorithm", group="op",
                                                               value="ms", width=w, height=2.4, ylabel="ms"),
                               TOPIC, "hostile", runs=runs)
    assert [p.name for p in files] == [f"hostile{s}.{e}" for s in ("", ".col") for e in ("pdf", "svg", "png")]
    assert all(p.stat().st_size > 0 for p in files)
    svg = (export_tree / "figures" / TOPIC / "hostile.svg").read_text()
    assert "<script" not in svg and "<b>" not in svg
    assert r"$\undefinedcs$" in svg  # the footer's CPU model and the tick label, as written
    # a tick label, a legend entry
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|x" in svg and r"verify $\alpha$" in svg
    plt.close("all")


def test_the_run_context_in_markdown_and_latex(export_tree, runs):
    md = context.context_markdown(runs)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(context.run_context(runs))  # no line break from the data
    assert {unescaped_pipes(line) for line in table} == {3}
    assert "<" not in md and r"\$\\undefinedcs\$" in md
    export.save_numbers({"n": 1}, TOPIC, runs=runs)
    tex = paper.context_tex(export_records.read_sidecars(export_tree / "data" / "tables"))
    check_tex(tex)
    assert r"\url{r9%7D%5Ctypeout%7BPQLAB%5Cjobname%7D%5Curl%7Bx}" in tex
    assert r"\url{r8%0A%5Ctypeout%7BPQLAB%5Cjobname%7D%25}" in tex
    assert all(url.count("{") == url.count("}") == 0 for url in re.findall(r"\\url\{([^}]*)\}", tex))


# ----- pdflatex: the exports compile and no \typeout of the data runs -----

DOCUMENT = r"""\documentclass{article}
\usepackage[margin=2cm]{geometry}
\usepackage[T1]{fontenc}
\usepackage{mathptmx}
\usepackage{graphicx}
\usepackage[hyphens]{url}
\usepackage{pqlabtables}
\begin{document}
\typeout{PQLABMARKER: the document ran}
\input{01_hostile/numbers}
Quoted: \MACRO{} and \pqlabPlain{}.
\input{01_hostile/hostile}
\input{context}
\end{document}
"""


def compile_hostile_document(folder, tables) -> str:
    """pdflatex -no-shell-escape on `folder`/hostile.tex (inputs from `folder` and `tables`); asserts it
    compiled, that its own marker ran and none of the data's did; returns the PDF's text."""
    env = dict(os.environ, TEXINPUTS=os.pathsep.join([str(folder), str(tables), ""]))
    done = subprocess.run([shutil.which("pdflatex"), "-no-shell-escape", "-interaction=nonstopmode",
                           "-halt-on-error", "hostile.tex"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    log = (folder / "hostile.log").read_text(encoding="latin-1")
    assert done.returncode == 0 and (folder / "hostile.pdf").exists(), log[-3000:]
    assert "PQLABMARKER: the document ran" in log  # \typeout reaches this log
    assert "PQLABhostile" not in log  # ... and none of the data's ran
    assert "Undefined control sequence" not in log
    return subprocess.run(["pdftotext", str(folder / "hostile.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_a_document_with_the_hostile_exports_compiles_and_runs_none_of_them(export_tree, runs, tmp_path):
    require_tools("pdflatex", "pdftotext")
    key = f"sign\n{TYPEOUT}"
    export.save_numbers({key: r"1.5 µs $\undefinedcs$ % # & ~ ^ _ {} \\", "plain": 2}, TOPIC, runs=runs)
    export.save_table(hostile_table(), TOPIC, "hostile", runs=runs, caption=f"Caption {ALGORITHM} {TYPEOUT}")
    tables = export_tree / "data" / "tables"
    folder = tmp_path / "doc"
    folder.mkdir()
    context_tex = paper.context_tex(export_records.read_sidecars(tables))
    (folder / "context.tex").write_text(context_tex, encoding="utf-8")
    macro = export_numbers.macro_name(key)
    (folder / "hostile.tex").write_text(DOCUMENT.replace("MACRO", macro), encoding="utf-8")
    text = compile_hostile_document(folder, tables)
    assert r"\typeout{PQLAB\jobname}" in text and "<script>alert(1)</script>|x" in text  # shown as written


def test_the_paper_with_hostile_exports_builds_without_running_them(export_tree, runs, tmp_path):
    require_tools("pdflatex", "pdffonts", "pdftotext")
    export.save_numbers({"sign": "1.5 µs", "n": 2}, TOPIC, runs=runs)
    export.save_table(hostile_table(), TOPIC, "hostile", runs=runs, caption=f"Caption {ALGORITHM} {TYPEOUT}")
    source = tmp_path / "src"
    source.mkdir()
    (source / "pqlab.tex").write_text("\n".join([
        r"\input{preamble}", r"\begin{document}", rf"\input{{{TOPIC}/numbers}}",
        r"Signing costs \pqlabSign{}.", rf"\input{{{TOPIC}/hostile}}", r"\section{Context}\input{context}",
        r"\input{studies}", r"\end{document}", ""]))
    result = paper.build("quick", output=tmp_path, out=tmp_path / "out", paper=source)
    log = result.log.read_text(encoding="latin-1")
    assert result.problems == [] and result.pdf.exists(), result.problems
    assert "PQLABpqlab" not in log
    text = subprocess.run(["pdftotext", str(result.pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "<script>alert(1)</script>|x" in text


# ----- issue #46: control and format characters, what pdflatex cannot typeset, code spans -----

#: a right-to-left override, a zero width space, ESC sequences (a terminal title, clear screen), a bell
UNICODE = "Intel\u202eUSA\u200b \x1b]0;t\x07\x1b[2J"
UNICODE_SHOWN = "Intel<U+202E>USA<U+200B> <U+001B>]0;t<U+0007><U+001B>[2J"


def test_every_escaper_shows_control_and_format_characters():
    assert formatting.markdown(UNICODE) == \
        r"Intel&lt;U+202E&gt;USA&lt;U+200B&gt; &lt;U+001B&gt;\]0;t&lt;U+0007&gt;&lt;U+001B&gt;\[2J"
    assert formatting.html(UNICODE) == UNICODE_SHOWN.replace("<", "&lt;").replace(">", "&gt;")
    assert formatting.latex(UNICODE) == UNICODE_SHOWN.replace("<", r"\textless{}").replace(">",
                                                                                          r"\textgreater{}")
    assert formatting.latex(UNICODE, "comment") == UNICODE_SHOWN
    assert formatting.mpl_text(UNICODE) == UNICODE_SHOWN
    assert escaping.csv_cell(UNICODE) == UNICODE_SHOWN and escaping.code(UNICODE) == f"` {UNICODE_SHOWN} `"
    assert escaping.csv_cell("\u202e=1") == "<U+202E>=1"  # seen, and no formula
    # tab and line breaks stay whitespace where a line ends the construct
    assert formatting.markdown("a\tb\nc") == "a b c" and formatting.mpl_text("a\nb") == "a\nb"
    assert formatting.latex("\ud800", "url") == "%3CU+D800%3E"  # a lone surrogate: no UnicodeEncodeError


def test_latex_shows_what_pdflatex_cannot_typeset_and_keeps_latin_letters():
    assert formatting.latex("Emoji \U0001F600 中 Ħ ¨") == (
        r"Emoji \textless{}U+1F600\textgreater{} \textless{}U+4E2D\textgreater{} \textless{}U+0126"
        r"\textgreater{} \textless{}U+00A8\textgreater{}")
    assert formatting.latex("Café Łódź Ærø ß µ×") == r"Café Łódź Ærø ß \textmu{}\ensuremath{\times}"


def test_a_code_span_is_longer_than_any_run_of_backticks_inside():
    assert escaping.code("a`b") == "`` a`b ``" and escaping.code("x```y`") == "```` x```y` ````"
    assert escaping.code("plain") == "` plain `" and escaping.code("a\nb") == "` a b `"


def test_figure_text_shows_what_the_figure_fonts_cannot_draw(recwarn):
    from pqlab.publish import plotting

    with plt.rc_context(plotting.STYLE):
        assert escaping.figure_text("Emoji \U0001F600 é α ×\n\u202e") == "Emoji <U+1F600> é α ×\n<U+202E>"
        assert formatting.mpl_text("$\U0001F600$") == r"\$<U+1F600>\$"
        fig, ax = plt.subplots()
        ax.set_title(formatting.mpl_text("\U0001F600 中"))
        fig.canvas.draw()
        plt.close(fig)
    assert not [w for w in recwarn if "Glyph" in str(w.message)]


def test_every_character_latex_keeps_typesets_with_the_paper_preamble(tmp_path):
    """Each character of escaping.LATEX_LETTERS and of the escaped table, and a text of every hostile kind,
    compile with paper/preamble.tex in Type 1 fonts, with no missing character."""
    require_tools("pdflatex", "pdffonts", "pdftotext")
    from pqlab.core import paths

    kept = sorted(escaping.LATEX_LETTERS | set(escaping._LATEX_CHARS))
    hostile = UNICODE + " Emoji \U0001F600 中 \u0000 \ud800 \U0010ffff" + RUN_BRACE
    shutil.copy(paths.PAPER / "preamble.tex", tmp_path)
    shutil.copy(paths.ROOT / "pqlab" / "publish" / "pqlabtables.sty", tmp_path)
    (tmp_path / "setup.tex").write_text("")
    (tmp_path / "t.tex").write_text("\\input{preamble}\n\\begin{document}\n" + formatting.latex("".join(kept))
                                    + "\n\n" + formatting.latex(hostile) + "\n\\end{document}\n",
                                    encoding="utf-8")
    done = subprocess.run([shutil.which("pdflatex"), "-no-shell-escape", "-interaction=nonstopmode",
                           "-halt-on-error", "t.tex"], cwd=tmp_path, capture_output=True, timeout=300)
    log = (tmp_path / "t.log").read_text(encoding="latin-1")
    assert done.returncode == 0 and "Missing character" not in log, log[-2000:]
    fonts = subprocess.run(["pdffonts", str(tmp_path / "t.pdf")], capture_output=True, text=True).stdout
    assert "Type 3" not in fonts, fonts
    text = subprocess.run(["pdftotext", str(tmp_path / "t.pdf"), "-"], capture_output=True, text=True).stdout
    flat = "".join(text.split())
    assert "Intel<U+202E>USA<U+200B>" in flat and "<U+1F600><U+4E2D><U+0000><U+D800><U+10FFFF>" in flat
    assert not {"\u202e", "\U0001F600", "中"} & set(text) and "ÀÁÂ" in text
