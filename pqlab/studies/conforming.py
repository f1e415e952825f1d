"""Notebooks 01-05 and 07: what the conformance records of their runs say, and what the missing check costs.

liboqs's default (optimised) ML-DSA verifier of some releases accepts forged signatures that its portable
build refuses (issue #42; :mod:`pqlab.checks.conformance` keeps the record of every implementation pqlab
times).  A notebook that times such a verifier says so wherever it quotes its times, from the records its runs
carry, and, where the portable build of the same release conforms, shows both verify times side by side:

    caveat(runs)                      -> the sentences for the non-conforming implementations (Markdown),
                                         "" if none
    paper_caveat(runs, "ML-DSA")      -> the same for a paper macro (plain text; says so where all conform)
    price_of_check(["ML-DSA-44"], budget_s=0.05, ...) -> Price(table, sentence, runs): verify on both builds
    price_table({"default": run, "generic": run}) -> the same from runs that measured both builds already
    unlike_work(default_run, generic_run, algorithm) -> why two builds' ratio compares unlike work
                                                        ("" if alike)

Every sentence is built from the records and the measurements; nothing here knows a count or a release.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from pqlab.benchmark import bench_in_worker
from pqlab.checks import conformance
from pqlab.core.formatting import fmt_factor, fmt_factor_ci, fmt_time_ns, markdown
from pqlab.core.formatting import markdown as md
from pqlab.measure.stats import ratio_ci

#: the liboqs builds :func:`price_of_check` compares: the one every notebook times, and the portable C one
DEFAULT, PORTABLE = "default", "generic"
#: the glyph :func:`pqlab.checks.conformance.caveat` starts each sentence with (a notebook shows it; a paper
#: cannot)
_GLYPH = "⚠ "


def _runs(runs) -> list:
    if runs is None:
        return []
    if isinstance(runs, dict):
        return list(runs.values())
    return list(runs) if isinstance(runs, (list, tuple)) else [runs]


def caveat(runs, *, markdown: bool = True) -> str:
    """:func:`pqlab.checks.conformance.caveat` of each run on its own, each sentence once: runs of two builds
    of one implementation carry two records under one ``NAME@backend`` key, and each run's own is the one
    about its times.  Then what the run's record says of its liboqs names (``liboqs_names``: a name measured
    in place of another the loaded release lacks, or one that means another algorithm than in pqlab's setup
    release: :func:`pqlab.backends.algorithms.liboqs_name_notes`)."""
    sentences = []
    for run in _runs(runs):
        text = conformance.caveat(run, markdown=markdown)
        sentences += [_GLYPH + s.strip() for s in text.split(_GLYPH) if s.strip()]
        notes = (getattr(run, "meta", None) or {}).get("liboqs_names") or {}
        sentences += [_GLYPH + (md(note) if markdown else note) + "." for note in notes.values()]
    return " ".join(dict.fromkeys(sentences))


def paragraph(runs) -> str:
    """:func:`caveat` of `runs` as a paragraph to append to a generated text ("\\n\\n" first), "" where
    none."""
    text = caveat(runs)
    return f"\n\n{text}" if text else ""


def nonconforming(runs, family: str = "") -> list[str]:
    """The algorithm names (``ML-DSA-44``) whose liboqs record in any of `runs` is non-conforming, optionally
    only those whose name starts with `family`, in the order the runs hold them."""
    out = []
    for run in _runs(runs):
        for key, r in ((getattr(run, "meta", None) or {}).get("conformance") or {}).items():
            name, _, backend = key.rpartition("@")
            if (r.get("status") == conformance.NONCONFORMING and backend == "liboqs"
                    and name.startswith(family)):
                out.append(name)
    return list(dict.fromkeys(out))


def paper_caveat(runs, family: str = "ML-DSA") -> str:
    """The sentence a paper section puts beside every `family` time or ratio it quotes (a ``numbers()``
    entry): the caveat of each non-conforming implementation of `family` in `runs`; where every one conforms,
    how many vectors each passed; otherwise (one not checked) each one's verdict; where no run carries a
    record of `family`, that none was checked."""
    records = []
    for run in _runs(runs):
        records += [(k, r) for k, r in ((getattr(run, "meta", None) or {}).get("conformance") or {}).items()
                    if k.startswith(family)]
    bad = caveat([run for run in _runs(runs)
                  if any(k.startswith(family) and r.get("status") == conformance.NONCONFORMING
                         for k, r in ((getattr(run, "meta", None) or {}).get("conformance") or {}).items())],
                 markdown=False)
    if bad:
        kept = [s for s in bad.split(_GLYPH) if s.strip().startswith(family)]
        return " ".join(s.strip() for s in kept)
    if not records:
        return (f"No conformance record exists for the {family} implementations timed here (runs made before "
                "pqlab checked them).")
    seen = ", ".join(dict.fromkeys(f"{k} ({conformance.verdict(r)})" for k, r in records))
    if all(r.get("status") == conformance.CONFORMS for _, r in records):
        return f"Every {family} implementation timed here conforms to its known-answer checks: {seen}."
    return f"The {family} implementations timed here, by their known-answer checks: {seen}."


class Price(NamedTuple):
    """What :func:`price_of_check` and :func:`price_table` give: the table, its sentence, the runs behind
    them."""

    table: pd.DataFrame
    sentence: str
    runs: list


def _record(run, algorithm: str) -> dict | None:
    return ((getattr(run, "meta", None) or {}).get("conformance") or {}).get(f"{algorithm}@liboqs")


def _build_id(run) -> str:
    rows = run.measurements
    ids = (rows.loc[rows["backend"] == "liboqs", "build"].dropna().astype(str) if "build" in rows
           else pd.Series())
    return next(iter(ids), "") or str((run.meta.get("liboqs") or {}).get("build", ""))


def _verify_median(run, algorithm: str, message_bytes) -> float:
    m = run.verified()
    sel = (m["algorithm"] == algorithm) & (m["backend"] == "liboqs") & (m["operation"] == "verify")
    if message_bytes is not None:
        sel &= m["message_bytes"] == message_bytes
    return float(m.loc[sel, "time_ns_median"].iloc[0]) if sel.any() else float("nan")


def unlike_work(default_run, portable_run, algorithm: str) -> str:
    """Why a ratio of `algorithm` between the two builds compares unlike work, from their records ("" where
    both builds' records agree or one is missing): which build conforms and what the other fails."""
    a, b = _record(default_run, algorithm), _record(portable_run, algorithm)
    if not a or not b or a.get("status") == b.get("status"):
        return ""
    return (f"unlike work: the portable build {conformance.verdict(b)}, the optimised build "
            f"{conformance.verdict(a)}, so the optimised verifier skips a check the portable one makes")


def price_table(runs: dict, algorithms=None, *, message_bytes=None) -> Price:
    """Verify of each liboqs `algorithms` (default: the non-conforming ones of the default build's run) on the
    default build and on the portable one, side by side, from `runs` ({"default": run, "generic": run}, runs
    that measured both): each build's median, its conformance verdict, and portable over default with its
    interval over rounds (:func:`pqlab.measure.stats.ratio_ci`); and one sentence per algorithm."""

    default, portable = runs.get(DEFAULT), runs.get(PORTABLE)
    if default is None or portable is None:
        missing = " and ".join(b for b in (DEFAULT, PORTABLE) if runs.get(b) is None)
        return Price(pd.DataFrame(),
                     f"The {missing} liboqs build did not run here: no side-by-side verify times.",
                     [r for r in (default, portable) if r is not None])
    names = list(algorithms) if algorithms is not None else nonconforming(default)
    if not names:
        return Price(pd.DataFrame(), "Every liboqs implementation timed on the default build conforms: there "
                     "is no missing check to price.", [default, portable])
    rows, sentences = [], []
    for name in names:
        d_med = _verify_median(default, name, message_bytes)
        p_med = _verify_median(portable, name, message_bytes)
        ratio, low, high = ratio_ci(
            portable.sample_values(name, "verify", backend="liboqs", message_bytes=message_bytes),
            default.sample_values(name, "verify", backend="liboqs", message_bytes=message_bytes))
        d_rec, p_rec = _record(default, name), _record(portable, name)
        rows.append({"algorithm": name, "operation": "verify", "default_build": _build_id(default),
                     "default_conformance": conformance.verdict(d_rec), "default_verify_ns": d_med,
                     "portable_build": _build_id(portable),
                     "portable_conformance": conformance.verdict(p_rec),
                     "portable_verify_ns": p_med, "portable_over_default": ratio,
                     "portable_over_default_ci_low": low, "portable_over_default_ci_high": high})
        unlike = unlike_work(default, portable, name)
        sentences.append(
            f"{markdown(name)} verify takes {fmt_time_ns(d_med)} on liboqs's default build "
            f"({markdown(conformance.verdict(d_rec))}) and {fmt_time_ns(p_med)} on its portable build "
            f"({markdown(conformance.verdict(p_rec))}): portable over default "
            f"{fmt_factor_ci(ratio, low, high) if np.isfinite(ratio) else 'not measured'}"
            + (f"; {markdown(unlike)}, so this factor is the price of that check and of the optimised code "
               "together, not the optimisation alone." if unlike
               else "; both builds' records agree, like for like."))
    return Price(pd.DataFrame(rows), " ".join(sentences), [default, portable])


def price_of_check(algorithms, *, budget_s: float, rounds: int, max_rounds: int | None = None,
                   min_samples: int = 5, target_rel_ci: float | None = 0.05, message_bytes: int = 100,
                   study: str = "", timeout_s: float | None = None, default_run=None) -> Price:
    """Time verify of each liboqs `algorithms` (names, e.g. :func:`nonconforming` of a notebook's runs) on the
    default build (timed as the notebooks time it, ``allow_nonconforming=True``) and on the portable build
    (``allow_nonconforming=False``: the comparison needs a conforming side), each in its own worker, and set
    them side by side (:func:`price_table`).  `default_run`: a run of the default build that already timed
    their verify at `message_bytes` (the notebook's own), used instead of timing it again.  No algorithm:
    nothing is measured, the sentence says why."""

    names = list(dict.fromkeys(algorithms))
    if not names:
        return Price(pd.DataFrame(), "Every liboqs implementation these runs timed conforms: there is no "
                     "missing check to price.", [])
    specs = [f"{n}@liboqs" for n in names]
    options = dict(operations=["verify"], message_bytes=message_bytes, budget_s=budget_s, rounds=rounds,
                   max_rounds=max_rounds, min_samples=min_samples, target_rel_ci=target_rel_ci,
                   study=f"{study}-price-of-check" if study else "price-of-check", timeout_s=timeout_s)
    runs = {DEFAULT: default_run if default_run is not None else
            bench_in_worker(specs, build=DEFAULT, allow_nonconforming=True, **options),
            PORTABLE: bench_in_worker(specs, build=PORTABLE, allow_nonconforming=False, **options)}
    return price_table(runs, names, message_bytes=message_bytes)


#: the columns a notebook shows of a :func:`price_table`, with their headers
COLUMNS = {"algorithm": "algorithm", "default_verify_ns": "default build verify", "default_conformance":
           "default build passed", "portable_verify_ns": "portable build verify", "portable_conformance":
           "portable build passed", "portable_over_default": "portable / default"}


def label_unlike_work(ratios: pd.DataFrame, runs: dict) -> pd.DataFrame:
    """`ratios` (rows with ``algorithm`` and ``operation``: portable over optimised build) with
    ``unlike_work``: for each verify row whose algorithm's records differ between the builds' runs (`runs`:
    {"default": run, "generic": run}; :func:`unlike_work`), what each build passed or failed; "" where they
    agree or a build's run is missing."""
    default, portable = runs.get(DEFAULT), runs.get(PORTABLE)
    both = default is not None and portable is not None
    out = ratios.copy()
    out["unlike_work"] = [unlike_work(default, portable, a) if both and op == "verify" else ""
                          for a, op in zip(out["algorithm"], out["operation"], strict=True)]
    return out


def describe_unlike_work(ratios: pd.DataFrame, value: str = "speedup") -> str:
    """One sentence per row :func:`label_unlike_work` labelled: its ratio (`value`, with
    ``<value>_ci_low/high`` where there) and why it compares unlike work (Markdown); "" where no row is."""
    if "unlike_work" not in ratios:
        return ""
    rows = ratios[ratios["unlike_work"].fillna("").astype(bool)]
    ci = f"{value}_ci_low" in rows

    def factor(r) -> str:
        return (fmt_factor_ci(r[value], r[f"{value}_ci_low"], r[f"{value}_ci_high"]) if ci
                else fmt_factor(r[value]))

    return " ".join(
        f"{markdown(r['algorithm'])} {r['operation']}'s portable over optimised ratio ({factor(r)})"
        f" is {markdown(r['unlike_work'])}: not the optimisation's gain alone." for _, r in rows.iterrows())
