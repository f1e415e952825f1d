"""Text from data or metadata in each output language: one escaping rule each, so it is always shown, never
read as markup.

    latex("r9}\\typeout{X}")        -> "r9\\}\\textbackslash{}typeout\\{X\\}"  (also where="comment", "url")
    markdown("<b>|x")               -> "&lt;b&gt;\\|x"
    code("a`b")                     -> "`` a`b ``"  (a Markdown code span that holds any text)
    html("<b>")                     -> "&lt;b&gt;"
    mpl_text("$\\x$")               -> "\\$\\x\\$"   (a matplotlib text that is never mathtext)
    csv_cell("=HYPERLINK(...)")     -> "'=HYPERLINK(...)"  (a spreadsheet never reads a formula)
    slug("SPHINCS+-SHA2 128f")      -> "SPHINCSplus-SHA2_128f"  (a file name)
    data_key("loss_", "Foo!Bar", taken) -> "loss_foo_bar"; then "Foo?Bar" -> "loss_foo_bar_<sha256>"

Run ids, machine facts (CPU model, hostname, versions), algorithm and backend names, flags and labels may
come from another machine's bundle: whatever they hold, they reach a reader as text, never as markup.  Every
export writes such a string through the one function of its language: LaTeX (:func:`latex`), Markdown
(:func:`markdown`, :func:`code`), HTML (:func:`html`), matplotlib (:func:`mpl_text`), a CSV cell
(:func:`csv_cell`).  Each shows Unicode control and format characters (U+202E right-to-left override, U+200B
zero width space, ESC ...) as ``<U+XXXX>`` (:func:`visible`), tab and line breaks as spaces where a line
ends the construct; :func:`latex` shows so, too, any character the paper's fonts cannot typeset (an emoji,
CJK).  A key or file name made of data (:func:`data_key`) is bounded in length and never shared by two
texts.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from html import escape
from urllib.parse import quote

#: Unicode categories no reader sees as what they are: controls, format characters (U+202E right-to-left
#: override, U+200B zero width space), line and paragraph separators, private use, surrogates, unassigned
INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})


def invisible(ch: str) -> bool:
    """True for a character no reader sees as itself (:data:`INVISIBLE`)."""
    return unicodedata.category(ch) in INVISIBLE


def visible(text, keep: str = "") -> str:
    """`text` with every invisible character (:func:`invisible`) except those in `keep` shown as ``<U+XXXX>``:
    the policy for text from data in every output language (identifiers refuse them instead,
    :func:`pqlab.core.inputs.file_label`)."""
    return "".join(f"<U+{ord(c):04X}>" if c not in keep and invisible(c) else c for c in str(text))


def terminal(text) -> str:
    """`text` (a path, a name or a message that may carry a bundle's strings) for a terminal: every control
    and format character shown as ``<U+XXXX>`` (an ESC never sets a title or clears the screen), one line."""
    return visible(text)


def slug(text: str, lower: bool = False) -> str:
    """A file-safe name: "+" spelled "plus", runs of anything outside [A-Za-z0-9_.-] as one "_"."""
    out = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text).replace("+", "plus")).strip("_")
    return out.lower() if lower else out


#: the longest key :func:`data_key` makes (a file name KEY.txt, a LaTeX macro): a slug cut to fit, with the
#: hash of the whole text
MAX_KEY = 80
_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _folded(key: str) -> str:
    """What two keys must not share: `key` in lower case, digits spelled, only letters and digits, as
    :func:`pqlab.publish.export_numbers.macro_name` reads it (and a case-insensitive file system)."""
    return "".join(_DIGITS[int(c)] if c.isdigit() else c for c in re.sub(r"[^a-z0-9]", "", key.lower()))


def data_key(prefix: str, text, taken: dict) -> str:
    """A key (of an exported number, a file) made of `text` from data: `prefix` and
    ``slug(text, lower=True)``, at most :data:`MAX_KEY` characters (a longer one is cut and ends with a short
    sha256 of the whole text), never one `taken` already holds for another text: a key that folds like
    another's (:func:`_folded`: "Foo!Bar" and "Foo?Bar" both give "foo_bar") gets a suffix from its text's
    sha256, so no value ever replaces another.  `taken`: folded key -> text, filled in as keys are made (one
    dict per set of keys); the same text always gets the same key."""
    text = str(text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    name = slug(text, lower=True)
    base = prefix + name
    tried = [base] if name and len(base) <= MAX_KEY else []
    tried += [f"{base[:MAX_KEY - n - 1].rstrip('_.-')}_{digest[:n]}" for n in (8, 16, 64)]
    for key in tried:
        if taken.setdefault(_folded(key), text) == text:
            return key
    raise ValueError(f"{prefix}…: no key left for {visible(text)[:60]!r} (its sha256 is taken)")


#: what a reader sees as whitespace: shown as a space where a line ends the construct
_SPACES = re.compile(r"[\t\n\r]")


def _line(text) -> str:
    """`text` on one line: tab and line breaks as spaces, every other invisible character as ``<U+XXXX>``."""
    return _SPACES.sub(" ", visible(text, keep="\t\n\r"))


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
#: the letters and signs beyond ASCII that pdflatex typesets as they are with the paper's preamble (UTF-8
#: input, T1 fonts, mathptmx; paper/preamble.tex) in Type 1 fonts: Latin-1 and Latin Extended-A, less those
#: T1 has no glyph for (Ħ ħ ĸ Ŀ ŀ ŉ Ŧ ŧ ſ) and the lone accents it sets from a Type 3 font (¨ ¯ ´); tested
#: by tests/core/test_hostile_strings.py with pdflatex and pdffonts
LATEX_LETTERS = frozenset(map(chr, range(0xA0, 0x180))) - set("¨¯´ĦħĸĿŀŉŦŧſ")


def _typeset(c: str) -> str:
    """`c` if pdflatex typesets it with the paper's preamble, else ``<U+XXXX>``."""
    return c if " " <= c < "\x7f" or c in _LATEX_CHARS or c in LATEX_LETTERS else f"<U+{ord(c):04X}>"


#: what a \url{} shows as itself; anything else is percent-encoded (braces, backslash, %, #,
#: spaces, line breaks)
_URL_SAFE = "/:@?=&+,;!*'()$"
LATEX_PLACES = ("text", "comment", "url")


def latex(text, where: str = "text") -> str:
    """`text` (from data or metadata) as LaTeX that typesets it and does nothing else, for `where` it goes:

    "text": running text, table cells, captions, a macro's body: every special character escaped
    (``\\ { } $ & # ^ _ ~ %`` ...), the Unicode pqlab writes (µ × – ∞ ≥ ...) as commands, tab and line breaks
    as spaces, control and format characters and any character pdflatex cannot typeset with the paper's
    preamble (an emoji, CJK: anything beyond ASCII, the commands above and :data:`LATEX_LETTERS`) as
    ``<U+XXXX>``.  "comment": after a ``%``: one line (tab and line breaks as spaces, control and format
    characters as ``<U+XXXX>``; nothing else in a comment is read).  "url": the argument of ``\\url{}``
    outside any other macro's argument: control and format characters as ``<U+XXXX>`` (tab and line breaks
    kept), then characters other than letters, digits and ``-._~/:@?=&+,;!*'()$`` percent-encoded, so no
    brace ends it early."""
    if where == "url":
        return quote(visible(text, keep="\t\n\r"), safe=_URL_SAFE)
    text = _line(text)
    if where == "comment":
        return text
    if where != "text":
        raise ValueError(f"latex(): where={where!r} is not one of {', '.join(LATEX_PLACES)}")
    text = "".join(map(_typeset, text))
    return _LATEX_RE.sub(lambda m: _LATEX_CHARS[m.group(0)], text)


_MARKDOWN_CHARS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", **{c: "\\" + c for c in "\\`*_[]|$~"}}
_MARKDOWN_RE = re.compile("|".join(re.escape(c) for c in _MARKDOWN_CHARS))
#: a list item, heading or rule marker where a text starts (a line of its own: a caption)
_MARKDOWN_START = re.compile(r"^(\s*)([-+=#]+|\d+[.)])(?=\s|$)")


def markdown(text) -> str:
    """`text` (from data or metadata) as Markdown that shows it, in a sentence, a table cell or a link's text:
    one line (tab and line breaks as spaces, other control and format characters as ``<U+XXXX>``),
    ``| \\ ` * _ [ ] $ ~`` backslash-escaped (a ``|`` never adds a table column, a ``$`` never starts a
    formula, a ``]`` never ends a link's text), ``< > &`` as entities (never HTML), and a list, heading or
    rule marker at its start escaped."""
    text = _MARKDOWN_RE.sub(lambda m: _MARKDOWN_CHARS[m.group(0)], _line(text))
    return _MARKDOWN_START.sub(lambda m: m.group(1) + (f"{m.group(2)[:-1]}\\{m.group(2)[-1]}"
                                                      if m.group(2)[0].isdigit() else "\\" + m.group(2)),
                               text)


def code(text) -> str:
    """`text` (from data or metadata: a file name, a run id) as a Markdown code span that shows all of it, as
    written: one line (as :func:`markdown`), inside a fence of backticks longer than any run of backticks it
    holds, padded with a space each side (CommonMark strips one), so no backtick of the text ends the span and
    nothing in it is read as Markdown or HTML.  In a sentence, not a table cell (a ``|`` there still ends the
    cell: use :func:`markdown`)."""
    text = _line(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def html(text) -> str:
    """`text` (from data or metadata) as HTML text: ``& < > " '`` as entities, control and format characters
    (but tab and line breaks) as ``<U+XXXX>``."""
    return escape(visible(text, keep="\t\n\r"), quote=True)


def _charmap(fonts: tuple) -> frozenset:
    """The code points the font files `fonts` have glyphs for (read once per set of fonts)."""
    if fonts not in _CHARMAPS:
        from matplotlib.ft2font import FT2Font  # matplotlib: lazy, only a figure's text needs its fonts

        _CHARMAPS[fonts] = frozenset().union(*(FT2Font(f).get_charmap() for f in fonts))
    return _CHARMAPS[fonts]


_CHARMAPS: dict[tuple, frozenset] = {}


def figure_text(text) -> str:
    """`text` (from data or metadata) for a matplotlib text as the current style draws it: control and format
    characters (but a line break) as ``<U+XXXX>``, and so any character none of the style's fonts has a glyph
    for (an emoji, CJK in STIXGeneral), which a figure would draw as an empty box.  For a text created with
    ``parse_math=False`` (the figure footer); :func:`mpl_text` for any other."""
    from matplotlib import font_manager  # matplotlib: lazy, only a figure's text needs its fonts

    # the fonts matplotlib draws the style's default text with, its fallbacks included
    found = font_manager.fontManager._find_fonts_by_props(font_manager.FontProperties())
    glyphs = _charmap(tuple(map(str, found)))
    return "".join(c if c == "\n" or ord(c) in glyphs else f"<U+{ord(c):04X}>"
                   for c in visible(text, keep="\n"))


def mpl_text(text) -> str:
    """`text` (from data or metadata) for a matplotlib text that may parse math (tick labels, legend entries,
    titles, annotations): every ``$`` escaped, so it is never mathtext and shows as written, backslashes
    included; control and format characters (but a line break) and characters the style's fonts lack as
    ``<U+XXXX>`` (:func:`figure_text`)."""
    return figure_text(text).replace("$", r"\$")


#: what a spreadsheet reads as the start of a formula (OWASP, CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value):
    """`value` (a cell or header of an exported CSV) as a spreadsheet shows it and never runs it: a string
    that starts with ``= + - @``, a tab or a carriage return gets a leading ``'`` unless it is a plain number
    ("-3.2", "+1e-3"); control and format characters (but tab and line breaks) as ``<U+XXXX>``.  Anything
    not a string is returned as it is (numbers stay numbers)."""
    if not isinstance(value, str):
        return value
    text = visible(value, keep="\t\n\r")
    return "'" + text if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text) else text
