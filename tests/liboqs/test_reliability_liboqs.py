"""Issue #13, liboqs degrades: with a `liboqs.so` that does not load, or a wrong library named
liboqs.so, `list` shows every other backend and one line on liboqs, classical algorithms still
benchmark, a liboqs algorithm gets the same "liboqs not found" error every time, and liboqs-python's
download (git clone) is never reached.  `pytest -k reliability` runs these."""
from __future__ import annotations

import _ctypes
import json
import os
import shutil
import subprocess
import sys

import pytest

#: In a process whose loader path has no liboqs (find_library forced to say so, on any machine).
SESSION = r"""
import ctypes.util, json, pathlib, sys, warnings
ctypes.util.find_library = lambda name: None
from pqlab.backends.algorithms import get
from pqlab.app.cli import main
from pqlab.liboqs.loader import LiboqsNotFound
folder, log = sys.argv[1:]
out = {"list": main(["list"]), "bench": main(["bench", "Ed25519", "--operations", "sign", "--budget", "0.02",
                                              "--min-samples", "3", "--folder", folder, "--no-progress"])}
errors = []
for name, backend in (("ML-DSA-44", "liboqs"), ("Falcon-512", None), ("ML-DSA-44", "liboqs")):
    try:
        get(name, backend)
    except LiboqsNotFound as exc:
        errors.append(str(exc))
out["errors"] = errors
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out["ML-DSA-44"] = get("ML-DSA-44").backend
out["warnings"] = [str(w.message) for w in caught]
out["oqs imported"] = "oqs" in sys.modules
out["git before"] = pathlib.Path(log).read_text() if pathlib.Path(log).exists() else ""
print("RESULT " + json.dumps(out), flush=True)
print("CONTROL", file=sys.stderr, flush=True)
# The control: liboqs-python imported directly here downloads (its countdown skipped), or fails.
import time
time.sleep = lambda s: None
try:
    import oqs
except BaseException as exc:
    print("CONTROL liboqs-python:", type(exc).__name__, exc)
"""


@pytest.mark.parametrize("library", ["unloadable", "wrong"])
def test_reliability_without_a_usable_liboqs_the_rest_works_and_nothing_is_downloaded(tmp_path, library):
    install = tmp_path / "oqs" / "lib"
    install.mkdir(parents=True)
    if library == "unloadable":
        (install / "liboqs.so").write_text("not an ELF file\n")
    else:  # a real shared library, without liboqs's symbols
        shutil.copy(_ctypes.__file__, install / "liboqs.so")
    fakebin, log = tmp_path / "bin", tmp_path / "calls.log"
    fakebin.mkdir()
    for tool in ("git", "cmake"):  # record every call, and fail it
        (fakebin / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\nexit 1\n')
        (fakebin / tool).chmod(0o755)
    env = dict(os.environ, OQS_INSTALL_PATH=str(tmp_path / "oqs"), HOME=str(tmp_path / "home"),
               PATH=f"{fakebin}:{os.environ['PATH']}", XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", SESSION, str(tmp_path / "results"), str(log)], env=env,
                          capture_output=True, text=True, timeout=120)
    result = json.loads(next(line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")))
    downloads = [c for c in result["git before"].splitlines() if "clone" in c or c.startswith("cmake")]
    assert downloads == [] and not result["oqs imported"]  # (pqlab's own `git rev-parse` may be there)
    assert result["list"] == 0 and result["bench"] == 0
    table = proc.stdout.split("RESULT")[0]
    # OpenSSL's ML-KEM is listed
    assert "Ed25519" in table and "ML-KEM-768" in table and " liboqs " not in table
    ours = proc.stderr.split("CONTROL")[0]
    why = [line for line in ours.splitlines() if "liboqs" in line]
    assert len(why) == 1 and why[0].startswith("not available: liboqs: liboqs not found: ")
    # checked before dlopen: never loaded
    assert (f"{install / 'liboqs.so'} lacks OQS_init, OQS_version" if library == "wrong"
            else f"{install / 'liboqs.so'} is not an ELF file; reinstall that liboqs") in why[0]
    assert why[0].endswith("run `make setup` (it builds liboqs from native/), "
                           "or use the conda route in README.md")
    assert "Traceback" not in ours
    assert len(result["errors"]) == 3 and result["errors"][0] == result["errors"][2]
    assert result["errors"][0].startswith("ML-DSA-44: liboqs not found: ")
    assert result["errors"][1].startswith("Falcon-512: liboqs not found: ")
    assert result["ML-DSA-44"] == "cryptography"
    assert result["warnings"] == ["liboqs is not usable here, so ML-DSA-44 runs on cryptography"]
    assert list((tmp_path / "results").glob("*.meta.json"))  # the classical run was saved
    # the control: liboqs-python itself, in this environment, downloads or breaks
    if library == "unloadable":
        assert "CONTROL liboqs-python: SystemExit 1" in proc.stdout
        assert "git clone --depth 1" in log.read_text()[len(result["git before"]):]
    else:
        assert ("CONTROL liboqs-python: AttributeError" in proc.stdout
                and "undefined symbol: OQS_init" in proc.stdout)
