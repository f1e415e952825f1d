"""The paper that builds itself: paper/pqlab.tex typeset from one profile's exports.

    python -m pqlab paper --profile quick      # what `make paper PROFILE=quick` runs after the notebooks
    build("quick") -> Build(pdf=build/paper/pqlab.pdf, log=build/paper/pqlab.log, problems=[...])

1. The profile's export tree (:func:`pqlab.core.paths.export_root`) must hold exports, all of this profile
   (their sidecars say so): a paper never mixes profiles.
2. Generated inputs go to OUT/generated/: where the exports are, the run context (from the runs' metadata
   the sidecars carry), the studies' citations (data/reference/sources.yaml) and an appendix with every
   exported table and figure that the sections do not show.
3. pdflatex runs twice (a third time when references changed), never with shell escape
   (:data:`PDFLATEX_OPTIONS`); every string from data in the generated inputs is escaped
   (:func:`pqlab.core.formatting.latex`).  The log is checked: any LaTeX error, any Overfull \\hbox of more
   than :data:`MAX_OVERFULL_PT`, a float too large for its page, a missing figure, macro, character, reference
   or citation is a problem.  The PDF and its log stay in OUT.
4. Every number the text quotes (``\\pqlabName{}``) must be an exported one: an undefined name is a problem
   naming its file and line.  A number its notebook wrote as not measured on this machine (an interval needs
   two samples per side, a stack depth needs valgrind) is typeset as
   :data:`pqlab.publish.export_numbers.NOT_MEASURED`, the run context lists it by notebook and key, and
   :attr:`Build.unmeasured` names the line that quotes it.

`twocolumn=True` typesets the same paper in two columns (every table placed by pqlabtables.sty, the
column-width figures): the test builds both.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pqlab.core import paths
from pqlab.core.escaping import latex
from pqlab.measure.machine import git_state
from pqlab.publish.export import STYLE_FILE
from pqlab.publish.export_numbers import NOT_MEASURED
from pqlab.publish.export_records import SAFE_NAME, read_sidecars

#: Debian packages that give pdflatex, the packages and fonts paper/pqlab.tex uses, and pdffonts/pdftoppm
TEX_PACKAGES = ("texlive-latex-base", "texlive-latex-recommended", "texlive-fonts-recommended",
                "poppler-utils")
MAX_OVERFULL_PT = 1.0
#: how pdflatex runs: never a shell command (whatever the texmf.cnf allows: \write18 from a source is
#: refused), never stopping for input, errors as FILE:LINE
PDFLATEX_OPTIONS = ("-no-shell-escape", "-interaction=nonstopmode", "-file-line-error")
#: floats between two \clearpage in the appendix (LaTeX holds a limited number of unplaced floats)
FLOATS_PER_PAGE_BREAK = 6


class PaperError(RuntimeError):
    """The paper cannot be built: one line naming the problem and the fix."""


@dataclass
class Build:
    pdf: Path
    log: Path
    problems: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)  # quoted numbers typeset as NOT_MEASURED


def tree(profile: str, output: Path | None = None) -> tuple[Path, Path]:
    """(tables folder, figures folder) of a profile's exports."""
    root = paths.export_root(profile, output or paths.OUTPUT)
    return root / "data" / "tables", root / "figures"


def check_exports(tables: Path, figures: Path, profile: str) -> list[dict]:
    """The sidecars of every export in the tree; refuses an empty tree, one that mixes profiles and a sidecar
    whose topic or name is not a safe file name."""
    sidecars = read_sidecars(tables) + read_sidecars(figures)
    if not sidecars:
        raise PaperError(f"no exports in {tables.parent.parent}: run make paper PROFILE={profile}, which "
                         "runs the notebooks first (if they ran but their exports were deleted, delete their "
                         f"executed copies build/{profile}/*.ipynb too)")
    other = [s for s in sidecars if s.get("profile") != profile]
    if other:
        found = sorted({s.get("profile", "?") for s in other})
        root = tables.parent.parent
        where = ", ".join(str(Path(s["path"]).relative_to(root)) for s in other[:3])
        raise PaperError(f"the {profile} exports in {root} are mixed with exports of profile "
                         f"{', '.join(found)} ({where}{' ...' if len(other) > 3 else ''}): re-run make "
                         f"reproduce PROFILE={profile}; a paper never mixes profiles")
    unsafe = [s["path"] for s in sidecars
              if not all(SAFE_NAME.fullmatch(str(s.get(k, ""))) for k in ("topic", "name"))]
    if unsafe:  # the appendix \input's them: a name is a file name, never LaTeX
        raise PaperError(f"{unsafe[0]} names an export by no safe file name (letters, digits, '_', '-', "
                         "'.'): delete it and re-run its notebook")
    return sidecars


def _sources(paper: Path) -> dict[str, str]:
    """The hand-written .tex files under `paper`: path relative to it -> text, in path order."""
    return {p.relative_to(paper).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(Path(paper).rglob("*.tex"))}


def _used(sources: dict[str, str]) -> set[str]:
    """The exports the hand-written sections show: \\input{TOPIC/NAME} and \\pqlabfigure{TOPIC/NAME}."""
    text = "\n".join(sources.values())
    return set(re.findall(r"\\(?:input|pqlabfigure)\{([0-9]{2}_[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)\}", text))


#: a number's macro (pqlab.publish.export_numbers.macro_name: "pqlab" and a capital), and where a section
#: loads its topic's numbers
_NUMBER = re.compile(r"\\(pqlab[A-Z][A-Za-z]*)")
_NUMBERS_INPUT = re.compile(r"\\input\{([0-9]{2}_[A-Za-z0-9_.-]+)/numbers\}")
_COMMENT = re.compile(r"(?<!\\)%.*")


@dataclass(frozen=True)
class Quoted:
    """A number the text quotes: its macro, where it is first used (file:line under the paper's folder) and
    the topic whose numbers that file loads ("" when it loads none)."""
    macro: str
    where: str
    topic: str


def quoted_numbers(sources: dict[str, str]) -> list[Quoted]:
    """Every number macro the .tex `sources` (:func:`_sources`) use, once each, in file and line order."""
    out: dict[str, Quoted] = {}
    for path, text in sources.items():
        topic = next(iter(_NUMBERS_INPUT.findall(text)), "")
        for number, line in enumerate(text.splitlines(), 1):
            for macro in _NUMBER.findall(_COMMENT.sub("", line)):
                out.setdefault(macro, Quoted(macro, f"{path}:{number}", topic))
    return list(out.values())


def number_problems(quoted: list[Quoted],
                    sidecars: list[dict]) -> tuple[list[Quoted], list[tuple[Quoted, str, str]]]:
    """The quoted numbers no export defines (a misspelt name, or a number its notebook never writes:
    problems), and the quoted numbers their notebook wrote as not measured on this machine, each with its
    topic and key."""
    defined = {m for s in sidecars if s["export"] == "numbers" for m in s.get("macros", {}).values()}
    unmeasured = {s["macros"][k]: (s["topic"], k) for s in sidecars if s["export"] == "numbers"
                  for k in s.get("not_measured", [])}
    return ([q for q in quoted if q.macro not in defined],
            [(q, *unmeasured[q.macro]) for q in quoted if q.macro in unmeasured])


def undefined_problem(q: Quoted) -> str:
    return f"{q.where}: \\{q.macro} is defined by no export" + (
        f" (not a number of {q.topic}/numbers.tex: check the name against it)" if q.topic
        else " (this file loads no \\input{NN_topic/numbers})")


def undefined_tex(undefined: list[Quoted]) -> str:
    """A placeholder for each quoted number no export defines, so that LaTeX goes on to report the rest (the
    build lists them as problems)."""
    return "".join(rf"\newcommand\{q.macro}{{??}}% undefined: {latex(q.where, 'comment')}" + "\n"
                   for q in undefined)


def context_tex(sidecars: list[dict], unmeasured: list[tuple[Quoted, str, str]] = ()) -> str:
    """The run context of every run the exports show, as a description list (values that differ between
    runs are all listed), and the numbers the text quotes that the exports lack."""
    merged: dict[str, list[str]] = {}
    for s in sidecars:
        for what, value in s.get("context", []):
            for v in ([value] if what != "runs" else value.split(", ")):
                if v and v not in merged.setdefault(what, []):
                    merged[what].append(v)
    by_topic: dict[str, list[str]] = {}
    for _, topic, key in unmeasured:
        by_topic.setdefault(topic, []).append(latex(key.replace("_", " ")))
    many = len(unmeasured) > 1
    lacking = ("" if not unmeasured else
               rf"{{\raggedright {len(unmeasured)} number{'s' if many else ''} the text quotes "
               rf"{'were' if many else 'was'} not measured in these runs and {'are' if many else 'is'} "
               rf"typeset \textit{{{NOT_MEASURED}}}: "
               + "; ".join(f"notebook {latex(topic.split('_', 1)[0])}: " + ", ".join(keys)
                           for topic, keys in by_topic.items())
               + ". The notebooks' closing notes say what their runs gave." + r"\par}" + "\n")
    if not merged:
        return "No export shows a run: every number comes from published data.\n\n" + lacking
    lines = [r"{\raggedright\begin{description}"]
    for what, values in merged.items():
        if what == "runs":
            shown, label = ", ".join(rf"\url{{{latex(v, 'url')}}}" for v in values), f"runs ({len(values)})"
        else:  # values may hold paths: they may break after a slash
            shown, label = "; ".join(latex(v).replace("/", r"/\allowbreak{}") for v in values), what
        # the label in the item's text, not its optional argument: a long label then wraps like the value
        lines.append(rf"\item \textbf{{{latex(label[0].upper() + label[1:])}:}} {shown}")
    return "\n".join(lines + [r"\end{description}\par}", "", lacking])


def studies_tex() -> str:
    """The bibliography, from data/reference/sources.yaml: each seed study once, with what was transcribed
    from it (cite as study000 ... study004), and each published source an entry lists (cite by its key)."""
    import yaml

    sources = yaml.safe_load((paths.REFERENCE / "sources.yaml").read_text(encoding="utf-8"))
    seeds: dict[str, dict] = {}
    cited = []
    for stem, entry in sources.items():
        if "seed" in entry:
            seed = seeds.setdefault(entry["seed"], {"study": entry.get("study", ""),
                                                    "sha": entry.get("seed_sha256", ""), "stems": [],
                                                    "machine": entry.get("machine", "")})
            seed["stems"].append(stem)
        for key, text in (entry.get("sources") or {}).items():
            url, _, rest = str(text).partition(" ")
            cited.append(rf"\bibitem{{{key}}} \url{{{latex(url, 'url')}}} {latex(rest)}. Transcribed in "
                         rf"\url{{{latex(f'data/reference/{stem}.csv', 'url')}}}.")
    studies = [rf"\bibitem{{study{seed[:3]}}} {latex(s['study'])}. Write-up \url{{{latex(seed, 'url')}}} "
               rf"(SHA-256 \url{{{latex(s['sha'][:16], 'url')}}}\dots). Machine: {latex(s['machine'])}. "
               "Transcribed in "
               + ", ".join(rf"\url{{{latex(f'data/reference/{stem}.csv', 'url')}}}" for stem in s["stems"])
               + "." for seed, s in seeds.items()]
    return "\n".join([r"\begin{thebibliography}{9}", r"\raggedright", *studies, *cited,
                      r"\end{thebibliography}", ""])


def appendix_tex(sidecars: list[dict], used: set[str]) -> str:
    """Every exported paper table and figure the sections do not show, per notebook."""
    by_topic: dict[str, list[dict]] = {}
    for s in sidecars:
        if s["export"] in ("table", "figure") and f"{s['topic']}/{s['name']}" not in used \
                and (s["export"] == "figure" or s.get("paper")):
            by_topic.setdefault(s["topic"], []).append(s)
    lines = []
    for topic in sorted(by_topic):
        lines.append(rf"\subsection{{{latex(topic.replace('_', ' '))}}}")
        for i, s in enumerate(sorted(by_topic[topic], key=lambda s: (s["export"], s["name"]))):
            if s["export"] == "table":
                lines.append(rf"\input{{{topic}/{s['name']}}}")
            else:
                caption = latex(f"{topic.split('_', 1)[0]}: {s['name'].replace('_', ' ')}")
                lines.append(rf"\pqlabfigure{{{topic}/{s['name']}}}{{{caption}}}")
            if (i + 1) % FLOATS_PER_PAGE_BREAK == 0:
                lines.append(r"\clearpage")
        lines.append(r"\clearpage")
    data_only = sorted((f"{s['topic']}/{s['name']}.csv", s.get("rows") == 0) for s in sidecars
                       if s["export"] == "table" and not s.get("paper"))
    if data_only:
        listed = ", ".join(rf"\url{{{latex(d, 'url')}}}"
                           + (" (no rows: nothing measured for it in these runs)" if empty else "")
                           for d, empty in data_only)
        lines.append(r"\subsection{Data-only tables}" + "\n{\\raggedright These tables are exported as CSV "
                     "files only, beside the tables: " + listed + ".\\par}")
    return "\n".join(lines + [""]) if lines else "Every export is shown in the sections above.\n"


def citation() -> str:
    """CITATION.cff with the commit of this checkout added (and a note when it has uncommitted changes)."""

    text = (paths.ROOT / "CITATION.cff").read_text(encoding="utf-8")
    git = git_state()
    if git.get("commit"):
        text += (f"commit: {git['commit']}" + ("  # plus uncommitted changes" if git.get("dirty") else "")
                 + "\n")
    return text


def setup_tex(profile: str, figures: Path, cff: str) -> str:
    """Where the figures are, the profile, and the software's version and commit (from the citation)."""
    version = re.search(r"^version: (.+)$", cff, re.M)
    found = re.search(r"^commit: ([0-9a-f]+)(.*)$", cff, re.M)
    commit = (found.group(1)[:12] + (" with uncommitted changes" if found.group(2) else "") if found
              else "unknown (not a git checkout)")
    return "\n".join([f"% generated by pqlab.publish.paper for profile {latex(profile, 'comment')}",
                      rf"\graphicspath{{{{{figures.as_posix()}/}}}}",
                      rf"\newcommand\pqlabprofile{{{latex(profile)}}}",
                      rf"\newcommand\pqlabversion{{{latex(version.group(1) if version else 'unknown')}}}",
                      rf"\newcommand\pqlabcommit{{{latex(commit)}}}", ""])


_ERROR = re.compile(r"^(?:! |(.*?):(\d+): )(.*)$")  # -file-line-error: "FILE:LINE: message"
_CONTEXT = re.compile(r"^l\.\d+ (.*)$")  # where TeX stopped: the line read so far ends with the culprit
_PROBLEMS = [
    (re.compile(r"^LaTeX Warning: (Float too large for page.*)$"), "{}"),
    (re.compile(r"^LaTeX Warning: ((?:Reference|Citation) .* undefined.*)$"), "{}"),
    (re.compile(r"^(?:LaTeX|Package \w+) Warning: (File .* not found.*)$"), "{}"),
    (re.compile(r"^(Missing character: .*)$"), "{}"),
]
_OVERFULL = re.compile(r"^Overfull \\hbox \(([0-9.]+)pt too wide\) (.*)$")


def _error(lines: list[str], i: int, m: re.Match) -> str:
    """An error line with its file, line and the text TeX had read when it stopped (the next ``l.N`` line)."""
    where = f"{Path(m.group(1)).name}:{m.group(2)}" if m.group(1) else ""
    read = next((c.group(1).strip() for line in lines[i + 1:i + 12] if (c := _CONTEXT.match(line))), "")
    detail = ", ".join(x for x in (where, f"after \"{read[-60:]}\"" if read else "") if x)
    return f"LaTeX error: {m.group(3).strip()}" + (f" ({detail})" if detail else "")


def log_problems(log: str) -> list[str]:
    """What is wrong in a pdflatex log: errors (with their file, line and context), Overfull \\hbox over
    MAX_OVERFULL_PT, floats too large, missing files, characters, references and citations."""
    out = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _OVERFULL.match(line)
        if m and float(m.group(1)) > MAX_OVERFULL_PT:
            out.append(f"Overfull \\hbox ({m.group(1)} pt too wide) {m.group(2)}")
            continue
        m = _ERROR.match(line)
        if m:
            out.append(_error(lines, i, m))
            continue
        for pattern, text in _PROBLEMS:
            m = pattern.match(line)
            if m:
                out.append(text.format(m.group(1).strip()))
                break
    return list(dict.fromkeys(out))


def pdflatex() -> str:
    """The pdflatex command, or a PaperError naming the Debian packages to install."""
    found = shutil.which("pdflatex")
    if not found:
        raise PaperError("pdflatex not found: install " + " ".join(TEX_PACKAGES)
                         + " (Debian: sudo apt-get install ...; make paper does it where it runs as root)")
    return found


def build(profile: str, *, output: Path | None = None, out: Path | None = None, paper: Path | None = None,
          twocolumn: bool = False) -> Build:
    """Typeset `paper` (default paper/) from `profile`'s exports under `output` (default
    pqlab.core.paths.OUTPUT) into `out` (default build/paper); returns the PDF, the log and the problems found
    in the log."""
    paper = Path(paper or paths.PAPER).resolve()  # pdflatex runs in `out`: every path absolute
    out = Path(out or paths.BUILD / "paper").resolve()
    tables, figures = tree(profile, Path(output).resolve() if output else None)
    sidecars = check_exports(tables, figures, profile)
    if not (tables / STYLE_FILE).exists():
        raise PaperError(f"{tables / STYLE_FILE} is missing: no paper table was exported; re-run the "
                         "notebooks")
    command = pdflatex()
    generated = out / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    cff = citation()
    (out / "CITATION.cff").write_text(cff, encoding="utf-8")
    sources = _sources(paper)
    undefined, unmeasured = number_problems(quoted_numbers(sources), sidecars)
    files = {"setup.tex": setup_tex(profile, figures, cff) + undefined_tex(undefined),
             "context.tex": context_tex(sidecars, unmeasured),
             "studies.tex": studies_tex(), "appendix.tex": appendix_tex(sidecars, _used(sources))}
    for name, text in files.items():
        (generated / name).write_text(text, encoding="utf-8")
    job = "pqlab-twocolumn" if twocolumn else "pqlab"
    # paper/ has the preamble
    inputs = dict.fromkeys([str(paper), str(paths.PAPER), str(generated), str(tables)])
    env = dict(os.environ, TEXINPUTS=os.pathsep.join([*inputs, ""]), max_print_line="100000")  # unwrapped log
    source = (r"\def\pqlabtwocolumn{}" if twocolumn else "") + r"\input{pqlab.tex}"
    log = out / f"{job}.log"
    for _ in range(3):
        subprocess.run([command, *PDFLATEX_OPTIONS, f"-jobname={job}", f"-output-directory={out}", source],
                       cwd=out, env=env, capture_output=True, timeout=600)
        text = log.read_text(encoding="latin-1") if log.exists() else ""
        if "Rerun to get" not in text and "undefined references" not in text:
            break
    pdf = out / f"{job}.pdf"
    problems = log_problems(text)
    if not pdf.exists() and not problems:
        problems = [f"pdflatex wrote no PDF; see {log}"]
    notes = [f"{q.where}: \\{q.macro} ({topic} {key}) was not measured in these runs"
             for q, topic, key in unmeasured]
    return Build(pdf, log, [undefined_problem(q) for q in undefined] + problems, notes)
