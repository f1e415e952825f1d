"""Print a PATH on which the named programs do not exist, to force the branches of a machine without them.

    PATH="$(python tests/path_without.py FOLDER java javac valgrind)" make test-notebooks ...

FOLDER is made anew with a link to every other executable on $PATH (the first of each name, as the shell
finds it), under its own name; the PATH printed is FOLDER alone.  pqlab finds its tools with shutil.which
(a JDK: java and javac; massif: valgrind), so on that PATH they are missing as on a machine without them.
`make test-bare` uses it (README: "Machines without a JDK, valgrind or a counter").
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def path_without(folder: Path, hidden: set[str]) -> str:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir():
            continue
        for program in Path(directory).iterdir():
            link = folder / program.name
            if (program.name in hidden or link.is_symlink()
                    or not (program.is_file() and os.access(program, os.X_OK))):
                continue
            link.symlink_to(program)
    return str(folder.resolve())


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python tests/path_without.py FOLDER PROGRAM [PROGRAM ...]")
    print(path_without(Path(sys.argv[1]), set(sys.argv[2:])))
