"""Our runs beside the published within-machine ratios of the seed studies (``data/reference/``).

``known_differences.yaml`` says what each side of a published within-machine ratio ran and what is
known to differ between implementations and versions (:func:`check_published_ratios`); every gap is
explained from data or called unexplained.
"""
from __future__ import annotations

import copy
import re
from fnmatch import fnmatchcase
from functools import cache

import numpy as np
import pandas as pd
import yaml

from pqlab.core.builds import matches, selected
from pqlab.core.formatting import fmt_bytes, fmt_factor, fmt_factor_ci, fmt_percent, fmt_time_ns
from pqlab.core.formatting import markdown as md
from pqlab.core.paths import REFERENCE
from pqlab.core.references import load_reference, reference_source
from pqlab.core.vocabulary import find
from pqlab.measure.stats import CONFIDENCE, ratio_ci, round_interval, round_records, with_rounds

__all__ = ["check_published_ratios", "describe_ratio_checks", "known_differences", "published_ratios"]


# ----- within-machine ratios: ours beside the published ones, each gap explained from data or called
# unexplained -----
RATIOS = "within_machine_ratios"
KNOWN_DIFFERENCES_FILE = REFERENCE / "known_differences.yaml"
#: the status of a ratio: the published value inside our interval (widened by the published side's stated
#: uncertainty), outside it with at least one explanation, outside it with none, or ours without an interval
AGREES, EXPLAINED, UNEXPLAINED, NO_INTERVAL = ("agrees", "differs: explained", "differs: unexplained",
                                               "no interval")
#: labels of the explanations computed from the runs (the others are ids of known_differences.yaml)
CALLER, CODE_PATH, LENGTH = "the call from Python", "another code path", "another message length"
#: the language each backend is called from (every other backend: Python)


@cache
def _known_file() -> dict:
    with open(KNOWN_DIFFERENCES_FILE, encoding="utf-8") as f:
        return yaml.safe_load(f)


def known_differences() -> dict:
    """``data/reference/known_differences.yaml`` (a copy): what each published side ran (``published_sides``),
    versions whose code is the same for some algorithms (``same_code``) and changes of an implementation
    between versions (``differences``), each with its source."""
    return copy.deepcopy(_known_file())


def published_ratios() -> pd.DataFrame:
    """The published within-machine ratios, ``ratio = numerator_value / denominator_value`` computed from the
    transcribed values (never transcribed itself)."""
    df = load_reference(RATIOS)
    df["ratio"] = df["numerator_value"] / df["denominator_value"]
    return df


class _Runs(list):
    """The runs of one check, each table concatenated once and split by algorithm and backend (a full run
    holds about a million samples)."""

    def __init__(self, runs):
        super().__init__(runs)
        self._tables, self._parts = {}, {}

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            frames = [t for r in self
                      if isinstance(t := getattr(r, name, None), pd.DataFrame) and not t.empty]
            s = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            if not s.empty:
                s["_build"] = s["build"].astype(object).fillna("").astype(str) if "build" in s else ""
            self._tables[name] = s
        return self._tables[name]

    def part(self, name: str, algorithm: str, backend: str) -> pd.DataFrame:
        if name not in self._parts:
            s = self.table(name)
            self._parts[name] = {} if s.empty else {k: g for k, g in s.groupby(["algorithm", "backend"],
                                                                               sort=False)}
        return self._parts[name].get((algorithm, backend), pd.DataFrame())


def _rows(runs, table: str, algorithm: str, backend: str, operations, build: str | None) -> pd.DataFrame:
    """Rows of `table` ("samples" or "measurements") of `runs` for one algorithm, backend, operations and
    build (None: any; "": rows without one)."""
    runs = runs if isinstance(runs, _Runs) else _Runs(runs)
    s = runs.part(table, algorithm, backend)
    if s.empty:
        return s
    sel = s["operation"].isin(list(operations))
    if build is not None:
        sel &= selected(s["_build"], build)
    return s[sel]


def _builds(runs, algorithm: str, backend: str, operation: str) -> list[str]:
    """The liboqs builds (their ids) `runs` measured `operation` with ("" for rows without one)."""
    s = _rows(runs, "samples", algorithm, backend, [operation], None)
    return [] if s.empty else sorted(s["_build"].unique())


def _samples(runs, algorithm: str, backend: str, operation: str, message_bytes, build: str | None = None):
    """Raw per-call times of one operation across `runs` (labelled with their rounds where they have them), at
    the measured message length closest to `message_bytes` (any length when it is missing); returns (values,
    length used)."""

    s = _rows(runs, "samples", algorithm, backend, [operation], build)
    if s.empty:
        return np.array([]), None
    sizes = s["message_bytes"].dropna().unique()
    used = None
    if len(sizes):
        target = 0 if pd.isna(message_bytes) else float(message_bytes)
        used = int(min(sizes, key=lambda n: (abs(float(n) - target), float(n))))
        s = s[s["message_bytes"] == used]
    return with_rounds(s.dropna(subset=["time_ns"]), "time_ns", round_records(*runs)), used


def _by_length(runs, algorithm: str, backend: str, operation: str, build: str, stat: str) -> dict[int, float]:
    """Our estimate (`stat` per round, over rounds) of one operation at every message length `runs`
    measured."""

    s = _rows(runs, "samples", algorithm, backend, [operation], build)
    if s.empty:
        return {}
    s = s.dropna(subset=["time_ns", "message_bytes"])
    rounds = round_records(*runs)
    return {int(n): round_interval(with_rounds(g, "time_ns", rounds), stat)[0]
            for n, g in s.groupby("message_bytes")}


def _at_length(estimates: dict[int, float], target: float):
    """The estimate at `target` bytes, linear through the two measured lengths nearest to it: (value, (a, b)),
    or None with fewer than two lengths."""
    near = sorted(sorted(estimates, key=lambda n: (abs(n - target), n))[:2])
    if len(near) < 2:
        return None
    a, b = near
    return estimates[a] + (estimates[b] - estimates[a]) * (target - a) / (b - a), (a, b)


def _metas(runs) -> list[dict]:
    return [getattr(r, "meta", None) or {} for r in runs]


def _liboqs_record(runs, build: str) -> dict:
    """The liboqs build record (``meta["liboqs"]``) of the runs that loaded `build` (an id or its options; any
    for "")."""
    for m in _metas(runs):
        rec = m.get("liboqs") or {}
        if rec and (not build or matches(rec.get("build"), build)):
            return rec
    return {}


def _cpu_specific(runs, algorithm: str):
    """The CPU extensions liboqs's optimised code for `algorithm` needs, from the record of a build that
    chooses code at run time: a list (empty: liboqs has no CPU-specific code for it), None where no run
    recorded it."""
    key = algorithm.lower().replace("sphincs+-", "sphincs_").replace("-", "_")
    for m in _metas(runs):
        specific = (m.get("liboqs") or {}).get("cpu_specific")
        if specific:
            return list(specific.get(key, []))
    return None


def _our_side(runs, algorithm: str, backend: str, operations, build: str) -> dict:
    """What ran on our side, from the rows (implementation, library_version) and the runs' liboqs build
    record."""
    rows = _rows(runs, "measurements", algorithm, backend, operations, build)

    def values(col):
        return sorted({str(v) for v in rows[col].dropna()} - {""}) if col in rows else []

    rec = _liboqs_record(runs, build or ("default" if backend == "native" else ""))
    config = rec.get("build_config") or {}
    versions = (values("library_version")
                or ([str(rec["liboqs_version"])] if rec.get("liboqs_version") else []))
    record = find(backend)
    library = ("liboqs" if backend == "native" or (record and "liboqs" in (record.name, record.through))
               else backend)
    caller = record.caller if record else "Python"  # the language of the timed loop
    binding = (f"liboqs-python {rec['liboqs_python_version']}"
               if record and record.binding == "liboqs-python" and rec.get("liboqs_python_version") else "")
    cpu = next((m["cpu"].get("model") if isinstance(m.get("cpu"), dict) else m.get("cpu")
                for m in _metas(runs) if m.get("cpu")), None)
    return {"library": library, "version": ", ".join(versions) or None,
            "implementation": (", ".join(values("implementation"))
                               or (f"{library} {', '.join(versions)}".strip())),
            "caller": caller + (f" ({binding})" if binding else ""), "language": caller,
            "build_known": bool(config),
            "dist_build": str(config.get("OQS_DIST_BUILD", "")).upper() in ("1", "ON", "TRUE"),
            "opt_target": config.get("OQS_OPT_TARGET"), "cpu_extensions": rec.get("cpu_extensions") or [],
            "arch": next((m.get("arch") for m in _metas(runs) if m.get("arch")), None), "machine": cpu}


def _their_side(known: dict, source: str) -> dict:
    side = dict((known.get("published_sides") or {}).get(source) or {})
    commit = f" (commit {str(side['commit'])[:7]})" if side.get("commit") else ""
    side.update(build_known=bool(side), language=side.get("caller"),
                implementation=f"{side.get('library', source)} {side.get('version') or ''}".strip() + commit)
    return side


def _code_path(side: dict, needed) -> str | None:
    """"portable C" or "optimised (<extensions>)": the code liboqs runs for an algorithm whose optimised code
    needs `needed` (from :func:`_cpu_specific`), on a side's build and CPU; None where either is unknown."""
    if not side.get("build_known"):
        return None
    if not side.get("dist_build") and side.get("opt_target") in (None, "", "generic"):
        return "portable C"
    if needed is None:
        return None
    if not needed:
        return "portable C"
    have = {str(e).upper() for e in side.get("cpu_extensions") or []}
    if all(str(n).upper() in have or n == side.get("arch") for n in needed):
        return f"optimised ({', '.join(map(str, needed))})"
    return "portable C"


def _version_tuple(version) -> tuple[int, ...] | None:
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    return tuple(int(x or 0) for x in m.groups()) if m else None


def _includes(side: dict, change: dict) -> bool | None:
    """Whether a side includes a change: by commit date for a side built from a development commit, else by
    its released version; None where neither is known."""
    if side.get("commit_date") and change.get("date"):
        return str(side["commit_date"]) >= str(change["date"])
    have, first = _version_tuple(side.get("version")), _version_tuple(change.get("release"))
    return None if have is None or first is None else have >= first


def _matches(algorithm: str, patterns) -> bool:
    return any(fnmatchcase(algorithm, str(p)) for p in patterns or [])


def _same_code(known: dict, algorithm: str, mine: dict, theirs: dict) -> dict | None:
    """The ``same_code`` entry saying both sides' versions have the same code for `algorithm`, if any."""
    for entry in known.get("same_code") or []:
        ids = {str(v) for v in entry.get("versions") or []}
        if entry.get("library") == mine["library"] and _matches(algorithm, entry.get("algorithms")) \
                and ids & {str(mine.get("version")), str(mine.get("commit"))} \
                and ids & {str(theirs.get("version")), str(theirs.get("commit"))}:
            return entry
    return None


def _versions(algorithm: str, mine: dict, theirs: dict, known: dict, found: list, other: list) -> None:
    """The recorded changes of the implementation that one side includes and the other does not
    (explanations), or why a version difference explains nothing."""
    if mine["library"] != theirs.get("library"):
        other.append(f"library: ours {mine['library']}, theirs {theirs.get('library', 'unknown')}")
        return
    before = len(found)
    for d in known.get("differences") or []:
        if d.get("library") != mine["library"] or not _matches(algorithm, d.get("algorithms")):
            continue
        a, b = _includes(mine, d.get("change") or {}), _includes(theirs, d.get("change") or {})
        if a is None or b is None:
            other.append(f"not known whether both sides include this change: {d['difference']} "
                         f"({d['source']})")
            continue
        if a == b:
            continue
        who, side = ("ours", mine) if a else ("theirs", theirs)
        if d.get("cpu") and str(d["cpu"]).upper() not in {str(e).upper()
                                                          for e in side.get("cpu_extensions") or []}:
            other.append(f"{d['difference']}: in {who} only, whose CPU lacks {d['cpu']}, so it runs the same "
                         "code")
            continue
        found.append((d["id"], f"{d['id']}: {d['difference']}, in {who} only (before: {d['before']}; after: "
                               f"{d['after']})", d["source"]))
    ours_v, theirs_v = mine.get("version"), theirs.get("version")
    if str(ours_v) == str(theirs_v) or len(found) > before:
        return
    same = _same_code(known, algorithm, mine, theirs)
    label = f"versions: ours {mine['library']} {ours_v or 'unknown'}, theirs {theirs.get('implementation')}"
    other.append(f"{label}, the same code for this algorithm ({same['source']})" if same else
                 f"{label}, with no change to this algorithm between them on record")


def _caller(runs, p, build: str, est: tuple, mine: dict, theirs: dict, u: float, found: list,
            other: list) -> None:
    """The call from Python: a fixed cost per call added to both operations moves a ratio towards 1.  Tested
    against pqlab's C runner where `runs` hold its rows, else by direction (and the cost it would take)."""

    if mine["language"] == theirs.get("language"):
        return
    what = f"called from {mine['caller']} here, from {theirs.get('caller', 'unknown')} in theirs"
    if p.backend != "native":
        nat = [_samples(runs, p.algorithm, "native", op, p.message_bytes, build or "default")[0]
               for op in (p.numerator, p.denominator)]
        if all(x.size for x in nat):
            value, low, high = ratio_ci(nat[0], nat[1], p.statistic)
            if np.isfinite(low):
                c = fmt_factor_ci(value, low, high)
                if low <= p.ratio * (1 + u) and high >= p.ratio * (1 - u):
                    found.append((CALLER, f"{what}: pqlab's C runner on this machine gives {c}, which agrees "
                                          "with theirs", ""))
                else:
                    other.append(f"{what}: not the cause, pqlab's C runner on this machine gives {c}")
                return
    ours, tn, td = est
    r = float(p.ratio)
    if r != 1 and min(r, 1.0) < ours < max(r, 1.0):
        cost = (tn - r * td) / (1 - r)
        fastest = _fastest_call(runs, p.backend, build)
        noop = [m["harness_overhead_ns"] for m in _metas(runs) if m.get("harness_overhead_ns")]
        harness = (" (a do-nothing call through pqlab's harness alone costs "
                   f"{fmt_time_ns(float(np.median(noop)))})" if noop else "")
        text = (f"{what}: a fixed cost per call added to both operations pulls a ratio towards 1, and "
                f"{fmt_time_ns(cost)} per call would move theirs to ours")
        if fastest is not None and cost > fastest:
            other.append(f"{text}, more than the fastest call through the same backend here takes "
                         f"({fmt_time_ns(fastest)}), so it is not the cause")
        else:
            bound = "" if fastest is None else (f", within the {fmt_time_ns(fastest)} that the fastest call "
                                                "through the same backend takes here")
            found.append((CALLER, f"{text}{bound}{harness}", ""))
    elif r != 1:
        other.append(f"{what}: a cost per call pulls a ratio towards 1, and ours lies on the other side of "
                     "theirs, so it is not the cause")


def _fastest_call(runs, backend: str, build: str) -> float | None:
    """The shortest median time of any operation `runs` measured through `backend` (and `build`): no cost that
    every call through it pays can be larger."""
    s = (runs if isinstance(runs, _Runs) else _Runs(runs)).table("samples")
    if s.empty:
        return None
    s = s[(s["backend"] == backend) & (s["_build"] == build)].dropna(subset=["time_ns"])
    if s.empty:
        return None
    keys = [c for c in ("run_id", "algorithm", "operation", "message_bytes") if c in s]
    return float(s.groupby(keys, dropna=False)["time_ns"].median().min())


def _length(runs, p, build: str, interval: tuple, length, u: float, found: list, other: list) -> None:
    """Another message length: its effect from our own lengths (linear between the two nearest to theirs)."""

    if pd.isna(p.message_bytes) or length is None or int(length) == int(p.message_bytes):
        return
    what = f"message length: ours {fmt_bytes(length)}, theirs {fmt_bytes(p.message_bytes)}"
    est = [_by_length(runs, p.algorithm, p.backend, op, build, p.statistic)
           for op in (p.numerator, p.denominator)]
    at = [_at_length(e, float(p.message_bytes)) for e in est]
    if any(a is None for a in at) or any(int(length) not in e for e in est):
        other.append(f"{what} (its effect is not measured here: one length)")
        return
    moved = (at[0][0] / at[1][0]) / (est[0][int(length)] / est[1][int(length)])
    ours, low, high = (x * moved for x in interval)
    used = sorted(set(at[0][1]) | set(at[1][1]))
    text = (f"{what}: our lengths {', '.join(fmt_bytes(n) for n in used)} put ours at "
            f"{fmt_factor_ci(ours, low, high)} at theirs (our interval moved by the same factor)")
    if np.isfinite(low) and low <= p.ratio * (1 + u) and high >= p.ratio * (1 - u):
        found.append((LENGTH, text + ", which agrees", ""))
    else:
        other.append(text + ", still apart")


def _machines(mine: dict, theirs: dict, other: list) -> None:
    a = {str(e).upper() for e in mine.get("cpu_extensions") or []}
    b = {str(e).upper() for e in theirs.get("cpu_extensions") or []}
    if a and b and a != b:
        other.append(f"CPU extensions only ours has: {', '.join(sorted(a - b)) or 'none'}; only theirs has: "
                     f"{', '.join(sorted(b - a)) or 'none'}")
    if mine.get("machine") and theirs.get("machine"):
        other.append(f"machine: ours {mine['machine']}, theirs {theirs['machine']}")


def _check_row(runs, p, build: str, num, den, length, known: dict) -> dict:

    ours, low, high = ratio_ci(num, den, p.statistic)
    mine = _our_side(runs, p.algorithm, p.backend, [p.numerator, p.denominator], build)
    theirs = _their_side(known, p.source)
    needed = _cpu_specific(runs, p.algorithm)
    mine["code_path"], theirs["code_path"] = _code_path(mine, needed), _code_path(theirs, needed)
    u = float(theirs.get("uncertainty") or 0.0)
    found, other = [], []
    _versions(p.algorithm, mine, theirs, known, found, other)
    if mine["code_path"] is None or theirs["code_path"] is None:
        other.append(f"code path: ours {mine['code_path'] or 'unknown'}, theirs "
                     f"{theirs['code_path'] or 'unknown'} (no build record says which)")
    elif mine["code_path"] != theirs["code_path"]:
        found.append((CODE_PATH, f"code path: ours {mine['code_path']}, theirs {theirs['code_path']}", ""))
    est = (ours, round_interval(num, p.statistic)[0], round_interval(den, p.statistic)[0])
    _caller(runs, p, build, est, mine, theirs, u, found, other)
    _length(runs, p, build, (ours, low, high), length, u, found, other)
    _machines(mine, theirs, other)
    if not (np.isfinite(low) and np.isfinite(high)):
        status = NO_INTERVAL
    elif low <= p.ratio * (1 + u) and high >= p.ratio * (1 - u):
        status = AGREES
    else:
        status = EXPLAINED if found else UNEXPLAINED
    return {"algorithm": p.algorithm, "backend": p.backend, "build": build or None,
            "ratio": f"{p.numerator} / {p.denominator}", "statistic": p.statistic, "ours": ours,
            "ours_ci_low": low, "ours_ci_high": high, "ours_samples": f"{num.size} / {den.size}",
            "ours_message_bytes": length, "ours_implementation": mine["implementation"],
            "ours_version": mine["version"], "ours_caller": mine["caller"],
            "ours_code_path": mine["code_path"], "published": p.ratio, "published_statistic": p.statistic,
            "published_uncertainty": theirs.get("uncertainty_note") or "none stated",
            "published_message_bytes": p.message_bytes, "published_implementation": theirs["implementation"],
            "published_version": theirs.get("version"), "published_caller": theirs.get("caller"),
            "published_code_path": theirs["code_path"], "source": p.source, "status": status,
            "explained_by": ", ".join(label for label, _, _ in found),
            "explanations": ("; ".join(text for _, text, _ in found)
                             or ("unexplained" if status == UNEXPLAINED else "")),
            "explanation_sources": " ".join(s for _, _, s in found if s), "differences": "; ".join(other)}


def check_published_ratios(runs, published: pd.DataFrame | None = None, *,
                           known: dict | None = None) -> pd.DataFrame:
    """Our within-machine ratios beside the published ones: one row per published ratio (and liboqs build)
    whose two operations the `runs` measured through the same backend.

    Ours is the same statistic as the published one (the mean where a mean was published) with its interval
    over rounds (:func:`pqlab.measure.stats.ratio_ci`).  Each row says what ran on each side (implementation
    and version, the language it was called from, the code path of the build) and which differences explain a
    gap (``explained_by``, ``explanations`` with ``explanation_sources``): a change between the two versions
    recorded in ``data/reference/known_differences.yaml`` (`known` overrides it), another code path, the call
    from Python (tested against pqlab's C runner where `runs` hold it, else by its direction), another message
    length (from our own lengths).  ``differences`` lists what differs without explaining the gap.
    ``status``: "agrees" (the published value inside our interval, widened by the published side's stated
    uncertainty), "differs: explained", "differs: unexplained", or "no interval" (ours has none).  No band: a
    gap is explained by data or reported.  An empty frame when nothing matches."""
    runs = _Runs([runs] if hasattr(runs, "samples") else [r for r in runs if r is not None])
    published = published_ratios() if published is None else published
    known = known_differences() if known is None else known
    rows = []
    for p in published.itertuples():
        for build in _builds(runs, p.algorithm, p.backend, p.numerator):
            num, n_len = _samples(runs, p.algorithm, p.backend, p.numerator, p.message_bytes, build)
            den, d_len = _samples(runs, p.algorithm, p.backend, p.denominator, p.message_bytes, build)
            if num.size == 0 or den.size == 0:
                continue
            rows.append(_check_row(runs, p, build, num, den, n_len if n_len == d_len else None, known))
    return pd.DataFrame(rows)


def describe_ratio_checks(checks: pd.DataFrame) -> str:
    """Markdown: each of our ratios beside the published one, what ran on each side, and which ratios are
    explained by what and which are not (generated from the table, sources.yaml and
    known_differences.yaml)."""

    if checks.empty:
        return "No operation measured here has a published within-machine ratio to check against."
    src, sides = reference_source(RATIOS), known_differences().get("published_sides") or {}
    count = checks["status"].value_counts()
    n = {s: int(count.get(s, 0)) for s in (AGREES, EXPLAINED, UNEXPLAINED, NO_INTERVAL)}
    notes = sorted({str(sides.get(s, {}).get("uncertainty_note") or "none stated")
                    for s in checks["source"].unique()})
    def verb(k, one, many):
        return f"{k} {one if k == 1 else many}"

    head = (f"**Published within-machine ratios beside ours**: of {len(checks)}, "
            f"{verb(n[AGREES], 'agrees', 'agree')} within our interval, "
            f"{verb(n[EXPLAINED], 'differs', 'differ')} with an explanation, "
            f"{verb(n[UNEXPLAINED], 'differs', 'differ')} with none on record, and "
            f"{verb(n[NO_INTERVAL], 'has', 'have')} no interval on our side. Published: "
            f"{md(', '.join(src['sources'][s].split(' (')[0] for s in checks['source'].unique()))}; "
            f"{md(src['machine'].split(':')[0])}; {md(src['method'].split(':')[0])}. Their uncertainty: "
            f"{md('; '.join(notes))}; ours is a {fmt_percent(CONFIDENCE, 0)} interval over rounds (none "
            "where a side was measured without rounds). A ratio differs where the published value lies "
            "outside that interval. An explanation is a difference between the two sides known to move the "
            "ratio: a change of the implementation between their versions (on record in "
            "`data/reference/known_differences.yaml`, with its source), another code path, the call from "
            "Python (where pqlab's C runner agrees with theirs, or ours lies between theirs and one), or "
            "another message length whose effect our own lengths show. It names a cause, not how much of the "
            "gap it accounts for; a gap that nothing on record explains is reported as unexplained, never "
            "failed.")
    lines = []
    for r in checks.itertuples():
        build = "" if not r.build else f", build {md(r.build)}"
        at = "" if pd.isna(r.published_message_bytes) else f", at {fmt_bytes(r.published_message_bytes)}"
        mine = "" if pd.isna(r.ours_message_bytes) else f", at {fmt_bytes(r.ours_message_bytes)}"
        line = (f"- **{md(r.algorithm)} {md(r.ratio)}** ({md(r.backend)}{build}, ratio of "
                f"{md(r.statistic)}s): ours {fmt_factor_ci(r.ours, r.ours_ci_low, r.ours_ci_high)} "
                f"({md(r.ours_implementation)}, called from {md(r.ours_caller)}, "
                f"{md(r.ours_code_path or 'code path unknown')}{mine}); "
                f"published {fmt_factor(r.published)} ({md(r.published_implementation)}, called from "
                f"{md(r.published_caller)}, {md(r.published_code_path or 'code path unknown')}{at}): "
                f"**{md(r.status)}**.")
        if r.explained_by:
            sources = f" (sources: {md(r.explanation_sources)})" if r.explanation_sources else ""
            lead = "Explained by" if r.status == EXPLAINED else "Known differences that move such a ratio"
            line += f" {lead}: {md(r.explanations)}{sources}."
        if r.differences:
            line += f" Also different, explaining nothing here: {md(r.differences)}."
        lines.append(line)
    summary = []
    for status, label in ((EXPLAINED, "Explained"), (UNEXPLAINED, "Unexplained"), (AGREES, "Agree"),
                          (NO_INTERVAL, "No interval")):
        part = checks[checks["status"] == status]
        if part.empty:
            continue
        items = []
        for r in part.itertuples():
            notes = ([f"build {md(r.build)}"] if r.build else []) + (
                [f"ours {fmt_factor_ci(r.ours, r.ours_ci_low, r.ours_ci_high)}, theirs (published) "
                 f"{fmt_factor(r.published)}"] if status == UNEXPLAINED
                else [])
            items.append(f"{md(r.algorithm)} {md(r.ratio)}" + (f" ({'; '.join(notes)})" if notes else "")
                         + (f" by {md(r.explained_by)}" if status == EXPLAINED else ""))
        summary.append(f"**{label}**: {'; '.join(items)}.")
    return head + "\n\n" + "\n".join(lines) + "\n\n" + " ".join(summary)
