"""Exports with stable, documented paths: figures, tables and single numbers for the write-up.

    save_figure(fig, "01_aes_rsa_sphincs", "operation_times")  -> figures/01_aes_rsa_sphincs/operation_times.{png,svg,pdf}
    save_table(df, "01_aes_rsa_sphincs", "results")            -> data/tables/01_aes_rsa_sphincs/results.{csv,md,tex}
    save_number(3.2, "01_aes_rsa_sphincs", "rsa_keygen_over_decrypt", fmt="{:.1f}")  -> .../rsa_keygen_over_decrypt.txt

Every file is written atomically.  The .tex table uses booktabs rules (\\toprule, \\midrule, \\bottomrule).
"""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from . import paths
from .files import atomic_write, atomic_write_text
from .plotting import STYLE

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _check(topic: str, name: str) -> None:
    for label, value in (("topic", topic), ("name", name)):
        if not _NAME.match(value):
            raise ValueError(f"{label} {value!r} is not a safe file name: use letters, digits, '_', '-' or '.' "
                             "(for example '01_aes_rsa_sphincs')")


def save_figure(fig, topic: str, name: str, formats=("png", "svg", "pdf"), dpi: int = 300) -> list[Path]:
    """Write `fig` as figures/TOPIC/NAME.{png,svg,pdf}; returns the paths."""
    _check(topic, name)
    out = []
    for ext in formats:
        path = paths.FIGURES / topic / f"{name}.{ext}"
        meta = {"Creator": "pqlab"} if ext in ("png", "pdf", "svg") else None
        if ext == "svg":
            meta = {"Creator": "pqlab", "Date": None}  # no timestamp: identical inputs, identical file
        elif ext == "pdf":
            meta = {"Creator": "pqlab", "CreationDate": None}
        with plt.rc_context(STYLE):  # font embedding and the SVG hash salt are read when saving
            out.append(atomic_write(path, lambda tmp, e=ext, m=meta: fig.savefig(tmp, format=e, dpi=dpi,
                                                                                  bbox_inches="tight", metadata=m)))
    return out


def save_figure_or_note(fig, topic: str, name: str, missing: str) -> str:
    """Write `fig` (as :func:`save_figure`) and return ""; or, where `fig` is None because nothing
    was measured to plot, write nothing, remove the figure an earlier run left there, and return a
    Markdown note naming the figure and `missing` (why).  No empty figure is ever exported."""
    if fig is not None:
        save_figure(fig, topic, name)
        return ""
    _check(topic, name)
    for ext in ("png", "svg", "pdf"):
        (paths.FIGURES / topic / f"{name}.{ext}").unlink(missing_ok=True)
    return f"*Figure `{name}` is not written: {missing}.*"


def _latex(df: pd.DataFrame, caption: str | None, label: str | None, numeric: list[bool]) -> str:
    """A booktabs table; column names and cells escaped for LaTeX."""
    def esc(v) -> str:
        s = "" if pd.isna(v) else str(v)
        for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                     ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
            s = s.replace(a, b)
        return s

    spec = "".join("r" if n else "l" for n in numeric)
    lines = [r"\begin{table}[htbp]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{esc(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(esc(c) for c in df.columns) + r" \\",
              r"\midrule"]
    lines += [" & ".join(esc(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def save_table(df: pd.DataFrame, topic: str, name: str, caption: str | None = None,
               float_format: str = "{:.4g}") -> list[Path]:
    """Write `df` as data/tables/TOPIC/NAME.{csv,md,tex}; csv keeps full precision."""
    _check(topic, name)
    base = paths.TABLES / topic / name
    shown = df.copy()
    for col in shown.columns:
        if pd.api.types.is_float_dtype(shown[col]):
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else float_format.format(v))
    md = (f"{caption}\n\n" if caption else "") + shown.to_markdown(index=False) + "\n"
    return [atomic_write(f"{base}.csv", lambda tmp: df.to_csv(tmp, index=False)),
            atomic_write_text(f"{base}.md", md),
            atomic_write_text(f"{base}.tex", _latex(shown, caption, f"tab:{topic}:{name}",
                                                    [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]))]


def save_number(value, topic: str, name: str, fmt: str = "{}") -> Path:
    """Write one number (formatted with `fmt`) as data/tables/TOPIC/NAME.txt, for quoting in a paper."""
    _check(topic, name)
    return atomic_write_text(paths.TABLES / topic / f"{name}.txt", fmt.format(value) + "\n")
