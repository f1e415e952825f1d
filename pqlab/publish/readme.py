"""README.md's generated regions, and the data behind the liboqs upgrade table.

A region sits between two marker lines, ``<!-- NAME: begin (...) -->`` and ``<!-- NAME: end -->``, and is
rewritten whole from data (:func:`replace_region`); the text around it is the README's own.

The ``liboqs upgrade`` region says what reading pqlab's numbers of its setup liboqs (the newest on a registry
here) costs against a newer liboqs, from the last comparison notebook 04 measured.  :func:`keep_upgrade` takes
it from an executed profile's export (``data/tables/04_signature_cycles/liboqs_releases.csv`` and its
``.export.json``) into the repository, as ``data/measured/liboqs_upgrade.csv`` with its provenance beside it
(``liboqs_upgrade.json``: the runs, the builds and where they came from, the machine, the date); the region is
written from that file (:func:`upgrade_table`).

    python -m pqlab.publish.readme liboqs build/quick   # keep notebook 04's comparison, rewrite the region
    python -m pqlab.publish.readme liboqs               # rewrite the region from data/measured/ only
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pqlab.core import builds, paths
from pqlab.core.files import atomic_write_text
from pqlab.core.paths import ROOT
from pqlab.core.quantities import fmt_factor_ci, fmt_time_ns

#: where the kept comparison lives, and its provenance
UPGRADE = ROOT / "data" / "measured" / "liboqs_upgrade.csv"
#: the export of notebook 04 it is taken from, under a profile's exports
EXPORT = Path("data") / "tables" / "04_signature_cycles" / "liboqs_releases.csv"
UPGRADE_REGION = "liboqs upgrade"
#: the columns kept
COLUMNS = ("algorithm", "operation", "from", "to", "older_name", "newer_name", "same_algorithm", "older_ns",
           "newer_ns", "factor", "factor_ci_low", "factor_ci_high")


class ReadmeError(ValueError):
    """A region or its data that cannot be read or written; says why and what to run."""


def markers(name: str, writer: str) -> tuple[str, str]:
    """The begin and end marker lines of region `name`, the begin line naming the command that writes it."""
    return f"<!-- {name}: begin ({writer} writes this region) -->", f"<!-- {name}: end -->"


def replace_region(text: str, begin: str, end: str, body: str) -> str:
    """`text` with what lies between the lines `begin` and `end` replaced by `body`; each marker must be there
    once."""
    old = region(text, begin, end)  # refuses markers that are not there once each
    return text.replace(f"{begin}{old}{end}", f"{begin}\n{body.strip()}\n{end}")


def region(text: str, begin: str, end: str) -> str:
    """What lies between the marker lines `begin` and `end` of `text`."""
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ReadmeError(f"README.md must hold the marker lines {begin!r} and {end!r} once each")
    return text.split(begin)[1].split(end)[0]


def keep_upgrade(exports: Path | str, dest: Path = UPGRADE) -> Path:
    """Keep the comparison of setup's liboqs with the newest other build notebook 04 measured in the profile
    exports `exports` (a folder holding ``data/tables/``): its rows into `dest`, its provenance beside it."""
    import pandas as pd  # durations (make reproduce) imports this module: pandas only where a table is read

    from pqlab.liboqs.loader import built_from

    table = Path(exports) / EXPORT
    if not table.is_file():
        raise ReadmeError(f"{table} is missing: run notebook 04 (make reproduce PROFILE=quick) with a liboqs "
                          "newer than pqlab's own, e.g. after make setup LIBOQS_SOURCE=DIR")
    df = pd.read_csv(table)
    newer = [b for b in dict.fromkeys(df["to"]) if builds.origin_of(b) != "crate"]
    if builds.SETUP.id not in set(df["from"]) or not newer:
        raise ReadmeError(f"{table} compares no build newer than {builds.SETUP.id} (only pqlab's own crate "
                          "builds): add one (make setup LIBOQS_SOURCE=DIR, or python -m pqlab builds "
                          "--add-source DIR) and run notebook 04 again")
    rows = df[(df["from"] == builds.SETUP.id) & (df["to"] == newer[-1])][list(COLUMNS)]
    sidecar = table.with_suffix(".export.json")
    export = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
    provenance = {"from": str(table.relative_to(Path(exports))), "export": export,
                  "older": builds.SETUP.id, "newer": newer[-1],
                  "built_from": {b: built_from(paths.LIBOQS_PREFIX / b / "lib" / "liboqs.so")
                                 for b in (builds.SETUP.id, newer[-1])}}
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest, rows.to_csv(index=False))
    atomic_write_text(dest.with_suffix(".json"), json.dumps(provenance, indent=1, default=str) + "\n")
    return dest


def upgrade_table(source: Path = UPGRADE) -> str:
    """The README's upgrade region from the kept comparison: per algorithm and operation, the two medians and
    newer over older with its interval; a row that compared two different algorithms says so."""
    if not source.is_file():
        return ("No comparison with a newer liboqs has been measured here yet: `make setup "
                "LIBOQS_SOURCE=DIR`, then `make reproduce PROFILE=quick` and `make readme-liboqs`.")
    import pandas as pd

    from pqlab.measure.stats import CONFIDENCE

    df = pd.read_csv(source)
    record = source.with_suffix(".json")
    meta = json.loads(record.read_text()) if record.is_file() else {}
    older, newer = meta.get("older", "older"), meta.get("newer", "newer")
    lines = [f"| algorithm | operation | {older} | {newer} | {newer} / {older} |", "|---|---|---:|---:|---|"]
    for r in df.itertuples():
        name = r.algorithm if r.same_algorithm else f"{r.older_name} → {r.newer_name} (⚠ another algorithm)"
        lines.append(f"| {name} | {r.operation} | {fmt_time_ns(r.older_ns)} | {fmt_time_ns(r.newer_ns)} | "
                     f"{fmt_factor_ci(r.factor, r.factor_ci_low, r.factor_ci_high)} |")
    export = meta.get("export") or {}
    runs = ", ".join(str(r) for r in export.get("runs", [])) if isinstance(export.get("runs"), list) else ""
    profile = export.get("profile", "")
    return "\n".join(lines) + (
        f"\n\nMedians over rounds and the ratio's {CONFIDENCE:.0%} interval over rounds, from notebook 04's "
        f"comparison across liboqs builds ({profile} profile{'; runs ' + runs if runs else ''}), kept in "
        f"`{_shown(source)}` with its provenance (`{_shown(record)}`). A ratio below 1: the newer liboqs is "
        "faster.")


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def update_upgrade(readme: Path = ROOT / "README.md", source: Path = UPGRADE) -> Path:
    """Rewrite README.md's upgrade region from `source`."""
    begin, end = markers(UPGRADE_REGION, "make readme-liboqs")
    return atomic_write_text(readme, replace_region(readme.read_text(), begin, end, upgrade_table(source)))


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "liboqs" or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if len(argv) == 2:
            print(f"kept notebook 04's liboqs comparison in {keep_upgrade(argv[1])}")
        print(f"rewrote the liboqs upgrade table in {update_upgrade()}")
    except ReadmeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
