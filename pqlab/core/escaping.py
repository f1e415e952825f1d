"""Text from data or metadata in each output language: one escaping rule each, so it is always shown, never
read as markup.

    latex("r9}\\typeout{X}")        -> "r9\\}\\textbackslash{}typeout\\{X\\}"  (also where="comment", "url")
    markdown("<b>|x")               -> "&lt;b&gt;\\|x"
    html("<b>")                     -> "&lt;b&gt;"
    mpl_text("$\\x$")               -> "\\$\\x\\$"   (a matplotlib text that is never mathtext)
    slug("SPHINCS+-SHA2 128f")      -> "SPHINCSplus-SHA2_128f"  (a file name)

Run ids, machine facts (CPU model, hostname, versions), algorithm and backend names, flags and labels may
come from another machine's bundle: whatever they hold, they reach a reader as text, never as markup.  Every
export writes such a string through the one function of its language: LaTeX (:func:`latex`), Markdown
(:func:`markdown`), HTML (:func:`html`), matplotlib (:func:`mpl_text`).
"""
from __future__ import annotations

import re
from html import escape
from urllib.parse import quote


def slug(text: str, lower: bool = False) -> str:
    """A file-safe name: "+" spelled "plus", runs of anything outside [A-Za-z0-9_.-] as one "_"."""
    out = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text).replace("+", "plus")).strip("_")
    return out.lower() if lower else out


#: characters that end a line (of a TeX comment, a Markdown table row) or that no text shows
_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
_LATEX_CHARS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}", "µ": r"\textmu{}", "×": r"\ensuremath{\times}",
    "–": "--", "—": "---", "−": r"\ensuremath{-}", "∞": r"\ensuremath{\infty}", "≥": r"\ensuremath{\geq}",
    "≤": r"\ensuremath{\leq}", "±": r"\ensuremath{\pm}", "≈": r"\ensuremath{\approx}",
    "→": r"\ensuremath{\rightarrow}", "·": r"\textperiodcentered{}", "‑": "-", "…": r"\dots{}",
    "°": r"\textdegree{}", "\u00a0": "~", "’": "'", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
    **{g: rf"\ensuremath{{\{n}}}" for g, n in zip("αβγδεηλμστω", (
        "alpha", "beta", "gamma", "delta", "epsilon", "eta", "lambda", "mu", "sigma", "tau", "omega"))}}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX_CHARS))
#: what a \url{} shows as itself; anything else is percent-encoded (braces, backslash, %, #,
#: spaces, line breaks)
_URL_SAFE = "/:@?=&+,;!*'()$"
LATEX_PLACES = ("text", "comment", "url")


def latex(text, where: str = "text") -> str:
    """`text` (from data or metadata) as LaTeX that typesets it and does nothing else, for `where` it goes:

    "text": running text, table cells, captions, a macro's body: every special character escaped
    (``\\ { } $ & # ^ _ ~ %`` ...), the Unicode pqlab writes (µ × – ∞ ≥ ...) as commands, line breaks and
    control characters as spaces.  "comment": after a ``%``: one line (line breaks and control characters as
    spaces; nothing else in a comment is read).  "url": the argument of ``\\url{}`` outside any other macro's
    argument: characters other than letters, digits and ``-._~/:@?=&+,;!*'()$`` percent-encoded, so no brace
    ends it early."""
    if where == "url":

        return quote(str(text), safe=_URL_SAFE)
    text = _BREAKS.sub(" ", str(text))
    if where == "comment":
        return text
    if where != "text":
        raise ValueError(f"latex(): where={where!r} is not one of {', '.join(LATEX_PLACES)}")
    return _LATEX_RE.sub(lambda m: _LATEX_CHARS[m.group(0)], text)


_MARKDOWN_CHARS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", **{c: "\\" + c for c in "\\`*_[]|$~"}}
_MARKDOWN_RE = re.compile("|".join(re.escape(c) for c in _MARKDOWN_CHARS))
#: a list item, heading or rule marker where a text starts (a line of its own: a caption)
_MARKDOWN_START = re.compile(r"^(\s*)([-+=#]+|\d+[.)])(?=\s|$)")


def markdown(text) -> str:
    """`text` (from data or metadata) as Markdown that shows it, in a sentence or a table cell: one line (line
    breaks as spaces), ``| \\ ` * _ [ ] $ ~`` backslash-escaped (a ``|`` never adds a table column, a ``$``
    never starts a formula), ``< > &`` as entities (never HTML), and a list, heading or rule marker at its
    start escaped."""
    text = _MARKDOWN_RE.sub(lambda m: _MARKDOWN_CHARS[m.group(0)], _BREAKS.sub(" ", str(text)))
    return _MARKDOWN_START.sub(lambda m: m.group(1) + (f"{m.group(2)[:-1]}\\{m.group(2)[-1]}"
                                                      if m.group(2)[0].isdigit() else "\\" + m.group(2)),
                               text)


def html(text) -> str:
    """`text` (from data or metadata) as HTML text: ``& < > " '`` as entities."""

    return escape(str(text), quote=True)


def mpl_text(text) -> str:
    """`text` (from data or metadata) for a matplotlib text that may parse math (tick labels, legend entries,
    titles, annotations): every ``$`` escaped, so it is never mathtext and shows as written, backslashes
    included.  (A text created with ``parse_math=False``, as the figure footer, takes the text unchanged.)"""
    return str(text).replace("$", r"\$")
