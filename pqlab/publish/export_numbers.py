"""The numbers a text quotes, as LaTeX macros:

    save_numbers({"sphincs_sign_over_verify": 14.7}, "01_aes_rsa_sphincs", runs=[run])
        -> data/tables/01_aes_rsa_sphincs/numbers.tex (\\newcommand{\\pqlabSphincsSignOverVerify}{14.7})
           and one .txt per number for other tools

with the profile and runs they come from (:mod:`pqlab.publish.export_records`).

A number quoted with its interval, statistic and caveats (a :class:`pqlab.core.quoted.Quoted`, or anything
that says itself as one: ``run.ratio(...)``) keeps them in every format: the macro typesets the value with its
interval, ``\\pqlabKeyNote`` the statistic and caveats, KEY.txt holds both, and numbers.export.json lists
each field under ``numbers``:

    save_numbers({"mldsa_over_ecdsa_sign": run.ratio("ML-DSA-65@liboqs", "ECDSA-P384@cryptography",
                                                      operation="sign")}, "my_question", runs=run)
        -> \\pqlabMldsaOverEcdsaSign{} "0.96× [0.73, 1.26]",
           \\pqlabMldsaOverEcdsaSignNote{} "ratio of medians of 6 rounds, ...; different implementations: ..."
"""
from __future__ import annotations

import re
from pathlib import Path

from pqlab.core import paths
from pqlab.core.escaping import latex, slug
from pqlab.core.files import atomic_write_text
from pqlab.core.quantities import NOT_RESOLVED_MARK, is_missing, not_resolved_text, resolved, significant
from pqlab.core.quoted import quoted
from pqlab.core.tables import TABLE_MISSING
from pqlab.publish.export_records import Written, check_name, export_stamp, provenance, write_sidecar

_DIGITS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


def macro_name(key: str) -> str:
    """The LaTeX macro of a number's key: "sphincs_sign_over_verify" -> "pqlabSphincsSignOverVerify"
    (words capitalised; digits spelled, as macro names hold letters only: "ml_dsa_44" ->
    "pqlabMlDsaFourFour")."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", str(key)) if w]
    if not words:
        raise ValueError(f"number key {key!r} has no letters or digits: name it like "
                         "'sphincs_sign_over_verify'")
    parts = re.findall(r"[A-Za-z]+|[0-9]", "".join(w[0].upper() + w[1:] for w in words))
    return "pqlab" + "".join(_DIGITS[int(p)] if p.isdigit() else p[0].upper() + p[1:] for p in parts)


def format_number(value) -> str:
    """A quoted number as text: strings as given (a study formats with units: "1.23×", "51 µs"), integers with
    thousands separators, other numbers with three significant digits, missing values as "–"."""
    if isinstance(value, str):
        return value
    if is_missing(value):
        return TABLE_MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    x = float(value)
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return significant(x)


#: a quoted text longer than this is a sentence, which LaTeX may break between words (save_numbers); a shorter
#: one (a number with its unit and interval) stays on one line
SENTENCE_CHARS = 60
#: what a text shows for a number its run did not give (save_numbers)
NOT_MEASURED = "not measured"


def save_numbers(numbers: dict, topic: str, *, runs) -> list[Path]:
    """Write the numbers a text quotes: TABLES/TOPIC/numbers.tex (as :func:`save_table`) with one macro per
    key (``\\newcommand{\\pqlabKey}{value}``, no trailing space: write ``\\pqlabKey{}`` in running text),
    comments naming the profile and runs, one KEY.txt per number (the same text, no newline) for other tools,
    and numbers.export.json.

    A missing value (None or NaN: the runs did not give it on this machine) is still written, never
    invented: its macro typesets :data:`NOT_MEASURED` in italics, its KEY.txt is empty and the sidecar lists
    its key under ``not_measured``, so a text quoting it says so instead of failing on an undefined macro."""
    check_name(topic, "numbers")
    prov = provenance(runs)
    folder = paths.TABLES / topic
    quotes = {key: q for key, q in ((k, quoted(v)) for k, v in numbers.items()) if q is not None}
    numbers = {key: quotes[key].value if key in quotes else v for key, v in numbers.items()}
    macros: dict[str, str] = {}
    notes = {key: f"{key}_note" for key, q in quotes.items() if q.note}
    for key in [*numbers, *notes.values()]:
        m = macro_name(key)
        if m in macros.values():
            other = next(k for k, v in macros.items() if v == m)
            raise ValueError(f"numbers {other!r} and {key!r} of {topic} both become \\{m}: rename one")
        macros[key] = m
    files: dict[str, str] = {}  # every KEY.txt checked before any is written: bounded, none shared
    for key in numbers:
        check_name(topic, slug(key))
        other = files.setdefault(slug(key).lower(), key)
        if other != key:
            raise ValueError(f"numbers {other!r} and {key!r} of {topic} both become {slug(key)}.txt (on a "
                             "case-insensitive file system too): rename one (pqlab.core.escaping.data_key "
                             "makes distinct keys of data)")
    lines = [f"% pqlab numbers of {topic}: {latex(export_stamp(prov), 'comment')}",
             "% written by pqlab.publish.export.save_numbers; use \\pqlabName{} in running text"]
    out, unmeasured = [], []
    unresolved = unresolved_keys(numbers)
    for key, value in numbers.items():
        missing = not isinstance(value, str) and is_missing(value)
        q = quotes.get(key)
        text = "" if missing else q.text if q else unresolved.get(key) or format_number(value)
        out.append(atomic_write_text(folder / f"{slug(key)}.txt", q.sentence if q and not missing else text))
        lines.append("% " + latex(f"{key} (runs {', '.join(prov['runs']) or 'none'})", "comment")
                     + (": not measured" if missing else ""))
        # a number with its unit stays on one line; a sentence (a caveat) breaks where LaTeX likes
        shown = rf"\textit{{{NOT_MEASURED}}}" if missing else latex(text) if len(text) > SENTENCE_CHARS \
            else latex(text).replace(" ", "~")
        lines.append(f"\\newcommand{{\\{macros[key]}}}{{{shown}}}%")
        if key in notes:
            lines.append(f"\\newcommand{{\\{macros[notes[key]]}}}{{{latex(q.note)}}}%")
        if missing:
            unmeasured.append(key)
    out.insert(0, atomic_write_text(folder / "numbers.tex", "\n".join(lines) + "\n"))
    write_sidecar(folder / "numbers", "numbers", topic, "numbers", prov, out, macros=macros,
                  not_measured=unmeasured,
                  not_resolved=sorted({*unresolved, *(k for k, q in quotes.items() if not q.is_resolved)}),
                  numbers={key: q.record() for key, q in quotes.items()})
    return Written(out)


def unresolved_keys(numbers: dict) -> dict[str, str]:
    """The quoted numbers whose interval does not resolve them (:func:`pqlab.core.formatting.resolved`): for a
    key K with K_ci_low and K_ci_high beside it, K becomes "not resolved (...)" and its ends
    :data:`pqlab.core.formatting.NOT_RESOLVED_MARK`, so a sentence quoting the three never prints a number an
    interval spanning orders of magnitude cannot support (issue #41)."""
    out = {}
    for key, value in numbers.items():
        low, high = numbers.get(f"{key}_ci_low"), numbers.get(f"{key}_ci_high")
        if isinstance(value, str) or low is None or high is None or resolved(low, high):
            continue
        out.update({key: not_resolved_text(), f"{key}_ci_low": NOT_RESOLVED_MARK,
                    f"{key}_ci_high": NOT_RESOLVED_MARK})
    return out
