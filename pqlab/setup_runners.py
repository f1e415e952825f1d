"""`python -m pqlab.setup_runners`: build the measuring helpers outside Python (make setup).

- the native cycle runner (native/bench) against each installed liboqs build;
- the Bouncy Castle runner (native/bc-runner) when a JDK and Maven are there;
- valgrind (notebook 03) from Debian's packages when it is missing and apt-get can install it.

Each prints what it did or why it skipped; only a failure of something that should have
worked stops setup.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .liboqs import VARIANTS, variant_prefix


def native_runners() -> None:
    from .native import build_native_runner

    for variant in VARIANTS:
        if not (variant_prefix(variant) / "lib" / "liboqs.so").exists():
            print(f"native runner ({variant}): skipped, that liboqs build is not installed "
                  "(a system or conda liboqs is in use)")
            continue
        print(f"native runner ({variant}): {build_native_runner(variant)}")


def bc_runner() -> None:
    from .jvm import build_bc_runner, jdk_available

    ok, why = jdk_available()
    if not ok:
        print(f"Bouncy Castle runner: skipped ({why}); notebook 01 will say so and show the rest")
        return
    print(f"Bouncy Castle runner: {build_bc_runner()}")


def valgrind() -> None:
    if shutil.which("valgrind"):
        print(f"valgrind: {shutil.which('valgrind')}")
        return
    apt = shutil.which("apt-get")
    if apt and os.geteuid() == 0:
        print("valgrind: missing; installing it with apt-get (notebook 03 measures memory with it)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run([apt, "update", "-qq"], env=env, check=False)
        done = subprocess.run([apt, "install", "-y", "-qq", "valgrind"], env=env, check=False).returncode == 0
        if done:
            return
    print("valgrind: not installed and could not be installed here (needs root and apt-get); notebook 03 "
          "will measure Python-level memory and max RSS only. Install it with your package manager "
          "(e.g. sudo apt-get install valgrind) and re-run notebook 03.")


def main() -> int:
    native_runners()
    bc_runner()
    valgrind()
    return 0


if __name__ == "__main__":
    sys.exit(main())
