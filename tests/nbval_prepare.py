"""Prepare the notebooks for nbval, whose lax mode checks marked cells against stored outputs.

Committed notebooks carry no outputs.  The expected outputs of the cells tagged
``nbval-check-output`` (deterministic ones: sizes in bytes, algorithm lists) live in
``tests/nbval_expected/<notebook>.json``, keyed by cell id.  This script copies every
notebook to OUT_DIR with those outputs put back, so that ``pytest --nbval-lax OUT_DIR``
checks them; every other cell is only run.

    python tests/nbval_prepare.py build/nbval            # prepare (make test does this)
    python tests/nbval_prepare.py --update EXECUTED.ipynb  # store the outputs of an executed run
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXPECTED = Path(__file__).resolve().parent / "nbval_expected"
TAG = "nbval-check-output"


def checked_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"
            and TAG in c.get("metadata", {}).get("tags", [])]


#: the numbered study notebooks; the README's recipe (own_comparison.ipynb) is prepared on its own
#: (make test-notebooks)
STUDIES = "[0-9][0-9]_*.ipynb"


def prepare(out_dir: Path, pattern: str = STUDIES) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(NOTEBOOKS.glob(pattern)):
        nb = json.loads(path.read_text())
        expected_file = EXPECTED / f"{path.stem}.json"
        expected = json.loads(expected_file.read_text()) if expected_file.exists() else {}
        for cell in checked_cells(nb):
            if cell["id"] not in expected:
                sys.exit(f"error: {path.name} cell {cell['id']} is tagged {TAG} but {expected_file} has no "
                         f"output for it: run the notebook (make reproduce PROFILE=quick) and then "
                         f"python tests/nbval_prepare.py --update build/quick/{path.name}")
            cell["outputs"] = expected[cell["id"]]
            cell["execution_count"] = 1  # nbval skips the comparison for cells it thinks never ran
        target = out_dir / path.name
        target.write_text(json.dumps(nb, indent=1) + "\n")
        written.append(target)
    return written


def update(executed: Path) -> Path:
    nb = json.loads(executed.read_text())
    outputs = {}
    for cell in checked_cells(nb):
        outs = []
        for o in cell.get("outputs", []):
            o = {k: v for k, v in o.items() if k != "execution_count"}
            if o.get("output_type") == "execute_result":
                o["execution_count"] = None
            outs.append(o)
        outputs[cell["id"]] = outs
    EXPECTED.mkdir(exist_ok=True)
    target = EXPECTED / f"{executed.stem}.json"
    target.write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n")
    return target


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?", type=Path)
    ap.add_argument("--update", type=Path, nargs="+", metavar="EXECUTED")
    ap.add_argument("--pattern", default=STUDIES,
                    help="the notebooks/ files to prepare (default: %(default)s)")
    args = ap.parse_args()
    if args.update:
        for p in args.update:
            print(f"stored expected outputs: {update(p)}")
    elif args.out_dir:
        for p in prepare(args.out_dir, args.pattern):
            print(f"prepared {p.relative_to(ROOT) if ROOT in p.parents else p}")
    else:
        ap.error("give OUT_DIR or --update EXECUTED.ipynb")
