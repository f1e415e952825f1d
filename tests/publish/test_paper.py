"""The paper that builds itself (pqlab.publish.paper): the log check, the profile check, exported tables and
figures typeset in one and two columns, and the real paper from the notebooks' quick exports.

pdflatex comes from Debian's texlive packages (pqlab.publish.paper.TEX_PACKAGES).  Without it the LaTeX tests
skip, unless PQLAB_REQUIRE_LATEX=1 (set by .ci/run, which installs it): then its absence fails them.  The real
paper is built from the exports that `make test` leaves in PQLAB_PAPER_FROM (build/test-output) after the
notebooks ran under nbval.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import fake_run, require_tools  # noqa: E402

from pqlab.core import flags, paths  # noqa: E402
from pqlab.publish import export, paper, plotting


def need_latex():
    require_tools("pdflatex", "pdffonts", "pdftotext")


def test_log_problems_are_found():
    log = "\n".join([
        "Overfull \\hbox (0.5pt too wide) in paragraph at lines 1--2",  # within the tolerance
        "Overfull \\hbox (12.3pt too wide) in alignment at lines 5--9",
        "/tmp/out/sections/04_signature_cycles.tex:13: Undefined control sequence.",
        "l.13 ML-DSA-44 \\pqlabPortableOverOptimisedMlDsaFourFourSign",
        "                                                {} (\\pqlabPortable...",
        "! LaTeX Error: File `01_aes_rsa_sphincs/sizes.tex' not found.",
        "LaTeX Warning: Float too large for page by 44.0pt on input line 80.",
        "LaTeX Warning: Reference `tab:x' on page 1 undefined on input line 3.",
        "LaTeX Warning: Citation `study009' on page 2 undefined on input line 9.",
        "Missing character: There is no ≥ in font ptmr8t!",
        "LaTeX Font Info:    Trying to load font information for TS1+ptm on input line 7.",
    ])
    assert paper.log_problems(log) == [
        "Overfull \\hbox (12.3 pt too wide) in alignment at lines 5--9",
        "LaTeX error: Undefined control sequence. (04_signature_cycles.tex:13, after "
        "\"ML-DSA-44 \\pqlabPortableOverOptimisedMlDsaFourFourSign\")",
        "LaTeX error: LaTeX Error: File `01_aes_rsa_sphincs/sizes.tex' not found.",
        "Float too large for page by 44.0pt on input line 80.",
        "Reference `tab:x' on page 1 undefined on input line 3.",
        "Citation `study009' on page 2 undefined on input line 9.",
        "Missing character: There is no ≥ in font ptmr8t!",
    ]
    assert paper.log_problems("Overfull \\hbox (1.0pt too wide) in paragraph") == []


@pytest.fixture
def exports(export_tree, tmp_path):
    """The folder that holds a quick profile's export tree (tmp_path/build/quick)."""
    return tmp_path


def test_an_empty_tree_and_mixed_profiles_are_refused(exports, monkeypatch):
    tables, figures = paper.tree("quick", exports)
    with pytest.raises(paper.PaperError, match="no exports in .*make paper PROFILE=quick"):
        paper.check_exports(tables, figures, "quick")
    export.save_numbers({"x": 1}, "01_t", runs=[])
    assert len(paper.check_exports(tables, figures, "quick")) == 1
    monkeypatch.setattr(paths, "PROFILE", "full")  # a full run writing into the quick tree
    export.save_numbers({"y": 2}, "02_t", runs=[])
    with pytest.raises(paper.PaperError, match=r"quick exports in .*build/quick are mixed with exports of "
                                               r"profile full \(data/tables/02_t/numbers.export.json\)"
                                               r".*never mixes"):
        paper.check_exports(tables, figures, "quick")


def test_pdflatex_missing_names_the_packages(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _: None)
    with pytest.raises(paper.PaperError,
                       match="pdflatex not found: install texlive-latex-base .*poppler-utils"):
        paper.pdflatex()


def test_pdflatex_never_runs_with_shell_escape(exports, tmp_path, monkeypatch):
    """Every pdflatex run of the paper says -no-shell-escape: whatever texmf.cnf allows, no \\write18 from an
    export (or anything else) runs a command."""
    export.save_numbers({"x": 1}, "01_t", runs=[])
    export.save_table(pd.DataFrame({"algorithm": ["ML-DSA-44"], "signature_bytes": [2420]}), "01_t", "sizes",
                      runs=[], caption="Sizes")
    calls = []
    monkeypatch.setattr(paper, "pdflatex", lambda: "/usr/bin/pdflatex")
    monkeypatch.setattr(paper, "subprocess", SimpleNamespace(run=lambda command, **kw: calls.append(command)))
    source = tmp_path / "src"
    source.mkdir()
    (source / "pqlab.tex").write_text(r"\input{preamble}\begin{document}x\end{document}")
    result = paper.build("quick", output=exports, out=tmp_path / "out", paper=source)
    assert calls and result.problems == [f"pdflatex wrote no PDF; see {result.log}"]
    for command in calls:
        assert command[0] == "/usr/bin/pdflatex" and command[1] == "-no-shell-escape", command
        assert not any(re.match(r"-(shell-escape|shell-restricted|enable-write18)", c)
                       for c in command), command
    assert paper.PDFLATEX_OPTIONS[0] == "-no-shell-escape"


def synthetic_exports():
    """Exports of every shape: a narrow and a wide-ish table with flags, a long table, numbers, a figure."""
    run = fake_run()
    rng = np.random.default_rng(1)
    names = ([f"SPHINCS+-SHAKE-{n}" for n in ("128f-simple", "192s-robust", "256f-simple")]
             + ["ML-DSA-44", "Falcon-512"])
    df = pd.DataFrame({"algorithm": names, "signature_bytes": [17088, 35664, 49856, 2420, 752],
                       "time_ns_median": rng.uniform(1e4, 1e8, 5), "cycles_median": rng.uniform(1e5, 1e9, 5),
                       "speedup": rng.uniform(1, 3, 5), "verified": True,
                       "flags": [flags.make("unstable-cv"), "", flags.make("few-samples"), "", ""]})
    export.save_table(df[["algorithm", "signature_bytes", "verified", "flags"]], "01_t", "narrow", runs=[run],
                      caption="A table that fits a column")
    wider = df.assign(public_key_bytes=[32, 48, 64, 1312, 897], secret_key_bytes=[64, 96, 128, 2560, 1281],
                      time_ns_q1=df["time_ns_median"] * 0.9, time_ns_q3=df["time_ns_median"] * 1.1)
    export.save_table(wider, "01_t", "wide", runs=[run], caption="A table that needs the full width",
                      columns=["algorithm", "public_key_bytes", "secret_key_bytes", "signature_bytes",
                               "time_ns_q1", "time_ns_median", "time_ns_q3", "speedup"])
    long = pd.concat([df] * 12, ignore_index=True)
    export.save_table(long, "02_t", "long", runs=[run], caption="A long table")
    export.save_table(pd.concat([wider] * 12, ignore_index=True), "02_t", "long_rotated", runs=[run],
                      caption="A long table on rotated pages", layout="landscape")
    export.save_table(df, "02_t", "data", runs=[run], paper=False)
    export.save_numbers({"sphincs_sign_over_verify": 14.7, "signature": 17088, "sign_time": "49.1 µs"},
                        "01_t", runs=[run])

    @plotting.styled
    def draw(width):
        return plotting.grouped_bars(df.assign(op="sign"), category="algorithm", group="op",
                                     value="time_ns_median", width=width, height=2.4, ylabel="time (ns, log)")
    export.save_figure(draw, "01_t", "times", runs=[run])
    plt.close("all")


MINIMAL = r"""\input{preamble}
\begin{document}
\input{01_t/numbers}
SPHINCS+ signs \pqlabSphincsSignOverVerify{} times slower than it verifies; a signature is \pqlabSignature{}
bytes (\pqlabSignTime).
\input{01_t/narrow}
\pqlabfigure{01_t/times}{Times}
\section{Context}\input{context}
\appendix\section{Every other export}\input{appendix}
\input{studies}
\end{document}
"""


@pytest.mark.parametrize("twocolumn", [False, True], ids=["one-column", "two-column"])
def test_exported_tables_and_figures_fit_one_and_two_columns(exports, tmp_path, twocolumn):
    need_latex()
    synthetic_exports()
    source = tmp_path / "src"
    source.mkdir()
    (source / "pqlab.tex").write_text(MINIMAL)
    result = paper.build("quick", output=exports, out=tmp_path / "out", paper=source, twocolumn=twocolumn)
    assert result.problems == [] and result.pdf.exists(), result.problems
    text = subprocess.run(["pdftotext", str(result.pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "(14.7)" not in text and "slower than it verifies; a signature is 17,088" in " ".join(text.split())
    assert "(49.1 µs)" in text  # the macro holds no trailing space
    for caption in ("A table that fits a column", "A table that needs the full width", "A long table",
                    "A long table on rotated pages"):
        assert caption in text
    assert "02_t/data.csv" in "".join(text.split())  # the data-only table is named, not typeset
    appendix = (tmp_path / "out" / "generated" / "appendix.tex").read_text()
    assert r"\input{01_t/wide}" in appendix and r"\input{01_t/narrow}" not in appendix  # shown once
    fonts = subprocess.run(["pdffonts", str(result.pdf)], capture_output=True, text=True, check=True).stdout
    assert "Type 3" not in fonts and plotting.FONT in fonts


def test_a_number_not_measured_says_so_and_an_undefined_one_is_a_problem_naming_its_line(exports, tmp_path):
    """A machine whose runs cannot give a quoted number (no valgrind, one sample) still gets a paper that says
    so; a name no export defines (a typo) fails the build at its line, not as a bare 'Undefined control
    sequence'."""
    need_latex()
    export.save_numbers({"sign": 1.5, "sign_ci_low": float("nan"), "sign_ci_high": None}, "01_t",
                        runs=[fake_run()])
    export.save_table(pd.DataFrame({"algorithm": ["ML-DSA-44"], "signature_bytes": [2420]}), "01_t", "sizes",
                      runs=[], caption="Sizes")
    source = tmp_path / "src"
    source.mkdir()
    (source / "pqlab.tex").write_text("\n".join([
        r"\input{preamble}", r"\begin{document}", r"\input{01_t/numbers}",
        r"Signing costs \pqlabSign{} (\pqlabSignCiLow{} to \pqlabSignCiHigh{}). "
        r"% \pqlabInAComment{} is not quoted",
        r"Typo: \pqlabSignCiHihg{}.", r"\section{Context}\input{context}", r"\input{studies}",
        r"\end{document}", ""]))
    result = paper.build("quick", output=exports, out=tmp_path / "out", paper=source)
    assert result.problems == [r"pqlab.tex:5: \pqlabSignCiHihg is defined by no export (not a number of "
                               r"01_t/numbers.tex: check the name against it)"], result.problems
    assert result.unmeasured == [
        r"pqlab.tex:4: \pqlabSignCiLow (01_t sign_ci_low) was not measured in these runs",
        r"pqlab.tex:4: \pqlabSignCiHigh (01_t sign_ci_high) was not measured in these runs"]
    text = " ".join(subprocess.run(["pdftotext", str(result.pdf), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())
    assert "Signing costs 1.50 (not measured to not measured)." in text
    assert "2 numbers the text quotes were not measured in these runs and are typeset not measured: " \
           "notebook 01: sign ci low, sign ci high." in text


def test_a_table_wider_than_the_page_fails_the_build(exports, tmp_path):
    need_latex()
    wide = pd.DataFrame({f"public_key_bytes_published_{i}": [123456789] for i in range(12)})
    export.save_table(wide, "01_t", "too_wide", runs=[], caption="Too wide")
    source = tmp_path / "src"
    source.mkdir()
    (source / "pqlab.tex").write_text(MINIMAL.replace(r"\input{01_t/numbers}", "").split("SPHINCS")[0]
                                      + r"\input{01_t/too_wide}\end{document}")
    result = paper.build("quick", output=exports, out=tmp_path / "out", paper=source)
    assert any("Package pqlabtables Error: Table tab:01_t:too_wide is" in p
               for p in result.problems), result.problems


def test_the_paper_builds_from_the_quick_exports(tmp_path):
    """make test sets PQLAB_PAPER_FROM to the folder where the notebooks under nbval wrote their exports."""
    source = os.environ.get("PQLAB_PAPER_FROM")
    if not source:
        pytest.skip("builds the real paper from the notebooks' quick exports: make test runs it after nbval "
                    "(PQLAB_PAPER_FROM names their folder)")
    need_latex()
    tables, figures = paper.tree("quick", Path(source))
    sidecars = paper.check_exports(tables, figures, "quick")
    for twocolumn in (False, True):
        result = paper.build("quick", output=Path(source), out=tmp_path / ("two" if twocolumn else "one"),
                             twocolumn=twocolumn)
        assert result.problems == [], result.problems
        for number in result.unmeasured:  # this machine's runs could not give it: the paper says so
            warnings.warn(f"the quick paper quotes a number not measured here: {number}", stacklevel=1)
        fonts = subprocess.run(["pdffonts", str(result.pdf)], capture_output=True, text=True,
                               check=True).stdout
        assert "Type 3" not in fonts
        text = subprocess.run(["pdftotext", str(result.pdf), "-"], capture_output=True, text=True,
                              check=True).stdout
        assert not re.search(r"\d[eE][+-]\d", text), "a number printed with an exponent"
        assert "17,088" in text  # the SPHINCS+-128f signature, exact
    shown = set(re.findall(r"\\(?:input|pqlabfigure)\{([^}]+)\}", "\n".join(
        p.read_text() for p in [*paths.PAPER.rglob("*.tex"),
                                tmp_path / "one" / "generated" / "appendix.tex"])))
    exported = {f"{s['topic']}/{s['name']}" for s in sidecars if s["export"] == "figure"
                or (s["export"] == "table" and s.get("paper"))}
    assert exported - shown == set(), "exports the paper does not show"
    assert json.loads(Path(sidecars[0]["path"]).read_text())["profile"] == "quick"


def test_citation_names_the_version_and_the_commit():
    import tomllib

    import pqlab

    version = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]["version"]
    cff = paper.citation()
    assert f"version: {version}\n" in cff and version == pqlab.__version__
    assert re.search(r"^commit: [0-9a-f]{40}", cff, re.M)  # this checkout's commit
    assert "cff-version: 1.2.0" in cff and "export.json" in cff  # how to find a figure's commit and runs
    setup = paper.setup_tex("quick", Path("/x/figures"), cff)
    assert rf"\newcommand\pqlabversion{{{version}}}" in setup and r"\graphicspath{{/x/figures/}}" in setup


def test_cli_paper_says_what_is_missing_in_one_line(tmp_path, capsys):
    from pqlab.app.cli import main

    assert main(["paper", "--profile", "quick", "--output", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert (err.count("\n") == 1 and err.startswith("error: no exports in ")
            and "make paper PROFILE=quick" in err)


def test_readme_states_the_widths_and_sizes_pqlab_uses():
    readme = (paths.ROOT / "README.md").read_text()
    for text in (f"({plotting.FULL_WIDTH:g} in)", f"({plotting.COLUMN_WIDTH:g} in)",
                 f"smaller than {plotting.MIN_TEXT_PT:g} pt", " ".join(paper.TEX_PACKAGES[:3])):
        assert text in readme, text


def test_a_missing_tool_skips_here_and_fails_in_ci(monkeypatch):
    import conftest

    monkeypatch.setattr(conftest, "REQUIRE_LATEX", False)
    with pytest.raises(pytest.skip.Exception, match="no-such-latex not installed"):
        conftest.require_tools("no-such-latex")
    monkeypatch.setattr(conftest, "REQUIRE_LATEX", True)
    with pytest.raises(pytest.fail.Exception, match="although PQLAB_REQUIRE_LATEX=1"):
        conftest.require_tools("no-such-latex")
