"""liboqs is found with nothing exported, imports silently, and a worker can load the generic build."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pqlab.core import builds
from pqlab.core.errors import UnknownName
from pqlab.core.paths import ROOT
from pqlab.liboqs import loader as liboqs_loader

PYTHON = ROOT / ".venv" / "bin" / "python"


def clean_env(home: Path) -> dict:
    """A bare environment: no OQS_INSTALL_PATH, no PQLAB_* variables, no PYTHON* settings."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


def run(code: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    return subprocess.run([str(python), "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_import_is_silent_in_a_clean_environment(tmp_path):
    env = clean_env(tmp_path)
    assert "OQS_INSTALL_PATH" not in env
    code = ("import sys, pqlab; assert 'oqs' not in sys.modules; algo = pqlab.get('ML-DSA-44'); "
            "pk, sk = algo.generate(); assert algo.verifier(pk)(b'm', algo.signer(sk)(b'm'))")
    proc = run(code, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == ""


def test_the_bare_oqs_import_is_found_without_pqlab(tmp_path):
    """The venv alone (its .pth) makes liboqs-python find pqlab's build: no download attempt."""
    proc = run("import oqs, sys; s = oqs.Signature('ML-DSA-44'); pk = s.generate_keypair(); "
               "print(s.verify(b'm', s.sign(b'm'), pk), file=sys.stderr)", clean_env(tmp_path), tmp_path)
    assert proc.returncode == 0 and proc.stderr.strip().endswith("True")
    assert "Cloning" not in proc.stdout + proc.stderr


def test_liboqs_info_reports_versions_path_and_build():
    info = liboqs_loader.liboqs_info()
    assert info["liboqs_version"] == "0.13.0"
    assert info["liboqs_python_version"].startswith("0.16.")
    assert info["liboqs_path"].endswith(".so") and os.path.exists(info["liboqs_path"])
    assert info["options"] in ("default", "generic") or info["options"].startswith("native-")
    assert info["build_config"].get("OQS_VERSION_TEXT") == "0.13.0"


def test_build_environment_worker_loads_the_generic_build(tmp_path, generic_liboqs):
    env = liboqs_loader.build_environment("generic", base=clean_env(tmp_path))
    assert env["OQS_INSTALL_PATH"].endswith("liboqs-0.13.0+generic")
    assert env["PQLAB_LIBOQS_BUILD"] == "liboqs-0.13.0+generic"
    code = ("import json, pqlab.liboqs.loader as l; i = l.liboqs_info(); "
            "print(json.dumps({k: i[k] for k in ('options', 'liboqs_path', 'liboqs_version')}))")
    proc = run(code, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["options"] == "generic"
    assert "/liboqs-0.13.0+generic/" in info["liboqs_path"] and info["liboqs_version"] == "0.13.0"
    default = json.loads(run(code, liboqs_loader.build_environment("default", base=clean_env(tmp_path)),
                             tmp_path).stdout)
    assert default["options"] == "default" and default["liboqs_path"] != info["liboqs_path"]


def test_build_environment_refuses_unknown_builds():
    with pytest.raises(UnknownName, match="unknown liboqs build 'turbo'.*generic"):
        liboqs_loader.build_environment("turbo")


def test_check_library_names_missing_symbols(tmp_path):
    info = liboqs_loader.liboqs_info()
    assert liboqs_loader.check_library(info["liboqs_path"]) == ""
    assert "cannot load" in liboqs_loader.check_library(tmp_path / "liboqs.so")
    libc = "libc.so.6"
    assert "lacks OQS_init, OQS_version, OQS_SIG_new" in liboqs_loader.check_library(libc)


def test_options_of_reads_the_build_config():
    assert liboqs_loader.options_of({}) == "unknown"
    assert liboqs_loader.options_of({"OQS_DIST_BUILD": "1", "OQS_OPT_TARGET": "generic"}) == "default"
    assert liboqs_loader.options_of({"OQS_OPT_TARGET": "generic"}) == "generic"
    assert liboqs_loader.options_of({"OQS_OPT_TARGET": "skylake"}) == "native-skylake"


def test_cpu_extensions_are_those_liboqs_detects_named_from_its_own_header(tmp_path):
    info = liboqs_loader.liboqs_info()
    ext = info["cpu_extensions"]
    assert isinstance(ext, list) and "INIT" not in ext and "COUNT" not in ext
    header = Path(info["liboqs_path"]).parent.parent / "include" / "oqs" / "common.h"
    declared = set(liboqs_loader.re.findall(r"OQS_CPU_EXT_(\w+),", header.read_text()))
    assert set(ext) <= declared
    if info["options"] == "generic":
        assert ext == []  # a build without CPU-specific code detects nothing
    # the portable build never reports extensions; where the header or the symbol is missing: None
    generic = builds.prefix("generic") / "lib" / "liboqs.so"
    if generic.exists():
        assert liboqs_loader.cpu_extensions(generic) == []
    (tmp_path / "lib").mkdir()
    assert liboqs_loader.cpu_extensions(tmp_path / "lib" / "liboqs.so") is None  # no header, no library
    (tmp_path / "include" / "oqs").mkdir(parents=True)
    (tmp_path / "include" / "oqs" / "common.h").write_text(header.read_text())
    assert liboqs_loader.cpu_extensions(tmp_path / "lib" / "liboqs.so") is None  # a header, no library
    assert liboqs_loader.cpu_extensions(info["liboqs_path"]) == ext


def test_cpu_specific_code_reads_the_build_config():
    config = {"OQS_ENABLE_KEM_ml_kem_768": "1", "OQS_ENABLE_KEM_ml_kem_768_x86_64": "1",
              "OQS_ENABLE_SIG_falcon_padded_512_avx2": "1", "OQS_ENABLE_SIG_falcon_padded_512_aarch64": "1",
              "OQS_ENABLE_KEM_hqc_128": "1", "OQS_ENABLE_SHA3_xkcp_low_avx2": "1",
              "OQS_ENABLE_SIG_uov_ov_Is_pkc": "1", "OQS_ENABLE_KEM_classic_mceliece_348864f_avx2": "1",
              "OQS_DIST_BUILD": "1"}
    # HQC, the UOV "pkc" sets and the build flags are not code paths
    assert liboqs_loader.cpu_specific_code(config) == {
        "ml_kem_768": ["x86_64"], "falcon_padded_512": ["avx2", "aarch64"], "xkcp_low": ["avx2"],
        "classic_mceliece_348864f": ["avx2"]}
    assert liboqs_loader.cpu_specific_code({}) == {}


def test_generic_build_records_no_cpu_specific_code(tmp_path):
    """What each installed build compiled in, as recorded in a run's metadata (liboqs_info)."""
    code = "import json, pqlab.liboqs.loader as l; print(json.dumps(l.liboqs_info()['cpu_specific']))"
    generic = json.loads(run(code, liboqs_loader.build_environment("generic", base=clean_env(tmp_path)),
                             tmp_path).stdout)
    default = json.loads(run(code, liboqs_loader.build_environment("default", base=clean_env(tmp_path)),
                             tmp_path).stdout)
    assert generic == {}
    assert default, "the default (dist) build compiled in no CPU-specific code"
