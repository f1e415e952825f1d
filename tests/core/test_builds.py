"""liboqs builds as records (pqlab.core.builds): several releases side by side, each from its crates.io crate,
named in measurements, and refused up front when unknown or lacking a name."""
from __future__ import annotations

import tomllib

import pytest

from pqlab import benchmark
from pqlab.core import builds, paths
from pqlab.core.errors import BadInput, UnknownName
from pqlab.liboqs import build as liboqs_build
from pqlab.liboqs import loader as liboqs_loader
from pqlab.store.results import Run, _changed_meaning

FAST = {"budget_s": 0.02, "min_samples": 3, "progress": False, "rounds": 3, "max_rounds": 3}


def test_every_release_folder_pins_the_oqs_sys_crate_that_carries_that_release():
    assert builds.own_releases() == ("0.9.0", "0.12.0", "0.13.0")
    for release in builds.own_releases():
        build = builds.Build(release)
        lock = tomllib.loads(build.manifest.with_name("Cargo.lock").read_text())
        crate = [p for p in lock["package"] if p["name"] == "oqs-sys"]
        assert (len(crate) == 1 and crate[0]["version"].endswith(f"+liboqs-{release}")
                and len(crate[0]["checksum"]) == 64)
        assert liboqs_build.crate_checksum(build) == (crate[0]["version"], crate[0]["checksum"])


def test_build_ids_parse_and_unknown_ones_are_refused_in_one_line_naming_those_there_are():
    assert builds.parse("default") == builds.Build(builds.SETUP_RELEASE) == builds.SETUP
    assert builds.parse("generic").id == f"liboqs-{builds.SETUP_RELEASE}+generic"
    assert builds.parse("liboqs-0.12.0") == builds.Build("0.12.0", "default")
    assert builds.parse("liboqs-0.9.0+generic").options == "generic"
    assert builds.parse(" liboqs-0.12.0 ").prefix == paths.LIBOQS_PREFIX / "liboqs-0.12.0"
    with pytest.raises(BadInput) as refused:
        builds.parse("liboqs-0.16.0")
    message = str(refused.value)
    assert "\n" not in message and "0.9.0, 0.12.0, 0.13.0" in message and "liboqs-0.12.0+generic" in message
    with pytest.raises(UnknownName, match="close matches: liboqs-0.12.0"):
        builds.parse("libOQS-0.12.0")
    with pytest.raises(UnknownName, match="option"):
        builds.parse("liboqs-0.12.0+fast")
    # a liboqs pqlab was given (found on the system) is a build too, named by its own OQS_version()
    given = builds.Build("0.16.0", builds.GIVEN, "/opt/oqs/lib/liboqs.so")
    assert builds.parse("liboqs-0.16.0", (given,)) is given and given.id == "liboqs-0.16.0+given"
    assert given.prefix.as_posix() == "/opt/oqs" and not given.own


def test_names_split_off_their_build_and_own_builds_are_found_by_their_folder():
    assert builds.split("ML-KEM-768@liboqs-0.12.0") == ("ML-KEM-768@liboqs", "liboqs-0.12.0")
    assert builds.split("ML-KEM-768@liboqs") == ("ML-KEM-768@liboqs", "")
    assert builds.split("Ed25519") == ("Ed25519", "")
    assert (builds.own_build_at(paths.LIBOQS_PREFIX / "liboqs-0.9.0+generic")
            == builds.Build("0.9.0", "generic"))
    assert builds.own_build_at(paths.LIBOQS_PREFIX.parent / "elsewhere") is None


def test_each_release_and_option_has_its_own_cache_key_and_record():
    keys = {}
    for release in builds.own_releases():
        for options in builds.OPTIONS:
            key, inputs = liboqs_build.build_key(builds.Build(release, options))
            assert key.startswith(builds.Build(release, options).id + "-")
            assert inputs["release"] == release and inputs["options"] == options
            assert inputs["crate"].endswith(f"+liboqs-{release}")
            keys[key] = release
    assert len(keys) == 2 * len(builds.own_releases())


def test_bench_refuses_two_builds_an_unknown_one_and_a_name_the_release_lacks_before_measuring(tmp_path):
    with pytest.raises(BadInput, match="2 liboqs builds"):
        benchmark.bench(["ML-DSA-44@liboqs-0.12.0", "ML-DSA-44@liboqs-0.13.0"], folder=tmp_path, **FAST)
    with pytest.raises(BadInput, match="not a build here"):
        benchmark.bench(["ML-DSA-44@liboqs-0.15.0"], folder=tmp_path, **FAST)
    with pytest.raises(UnknownName, match="algorithm in liboqs 0.9.0 'ML-KEM-768'"):
        benchmark.bench(["ML-KEM-768@liboqs-0.9.0"], folder=tmp_path, **FAST)
    with pytest.raises(BadInput, match="Kyber768@liboqs \\(kem: keygen, encaps, decaps\\) "
                                       "has no operation 'sign'"):
        benchmark.bench(["Kyber768@liboqs-0.9.0"], operations=["sign"], folder=tmp_path, **FAST)
    assert not list(tmp_path.iterdir())  # nothing was measured or written


@pytest.mark.parametrize("name, release, ciphertext", [("Kyber768", "0.9.0", 1088),
                                                       ("ML-KEM-768", "0.12.0", 1088)])
def test_a_name_at_another_release_is_measured_there_in_a_worker_and_the_run_names_its_build(name, release,
                                                                                                ciphertext):
    # liboqs 0.12.0's ML-KEM accepts invalid encapsulation keys (Wycheproof,
    # pqlab.checks.conformance): timed as asked
    run = benchmark.bench([f"{name}@liboqs-{release}"], operations=["encaps"], save=False,
                          allow_nonconforming=True, **FAST)
    info = run.meta["liboqs"]
    record = run.meta["conformance"][f"{name}@liboqs"]
    assert record["liboqs"]["build"] == f"liboqs-{release}"  # checked in the build that ran
    assert record["status"] == ("non-conforming" if name == "ML-KEM-768" else "not checked")
    assert info["liboqs_version"] == release and info["build"] == f"liboqs-{release}"
    assert info["liboqs_path"].startswith(str(builds.parse(f"liboqs-{release}").prefix.resolve()))
    row = run.verified().iloc[0]
    assert (row["algorithm"], row["backend"], row["library_version"]) == (name, "liboqs", release)
    assert row["rounds"] == 3 and row["time_ns_ci_low"] < row["time_ns_median"] < row["time_ns_ci_high"]
    # liboqs-python's struct read right on this release
    assert run.sizes["ciphertext_bytes"].iloc[0] == ciphertext
    with pytest.raises(BadInput, match=f"loaded liboqs-{release}, not liboqs-0.13.0"):
        run.ratio(f"{name}@liboqs-0.13.0", name, "encaps")


def test_the_loaded_build_is_measured_here_and_the_worker_environment_names_the_build(monkeypatch):
    loaded = liboqs_loader.liboqs_info()["build"]
    names, build = benchmark._asked_build([f"ML-DSA-44@{loaded}", "Ed25519"])
    assert names == ["ML-DSA-44@liboqs", "Ed25519"] and build is None
    env = liboqs_loader.build_environment("liboqs-0.12.0", base={})
    assert env == {"OQS_INSTALL_PATH": str(builds.Build("0.12.0").prefix),
                   "PQLAB_LIBOQS_BUILD": "liboqs-0.12.0"}


class _Run(Run):
    def __init__(self, release):  # only what _changed_meaning reads
        self.meta = {"liboqs": {"liboqs_version": release}}


def test_compare_across_releases_finds_names_whose_meaning_changed():
    import pandas as pd

    merged = pd.DataFrame({"algorithm": ["HQC-128", "ML-KEM-768", "FrodoKEM-640-AES", "Ed25519"],
                           "backend": ["liboqs", "liboqs", "liboqs", "cryptography"]})
    changed = _changed_meaning(_Run("0.15.0"), _Run("0.16.0"), merged)
    assert set(changed) == {"FrodoKEM-640-AES"} and "0.15.0" in changed["FrodoKEM-640-AES"]
    assert _changed_meaning(_Run("0.13.0"), _Run("0.13.0"), merged) == {}
    assert _changed_meaning(_Run("0.12.0"), _Run("0.13.0"), merged) == {}


def test_a_liboqs_pqlab_was_given_is_one_more_build_named_by_its_own_version(tmp_path, monkeypatch):
    import shutil

    given = tmp_path / "conda-env"  # a liboqs pqlab did not install (here: a copy of its 0.12.0, elsewhere)
    shutil.copytree(builds.Build("0.12.0").prefix, given)
    monkeypatch.setenv("CONDA_PREFIX", str(given))
    found = [b for b in liboqs_loader.given_builds() if b.library == str(given / "lib" / "liboqs.so")]
    assert [b.id for b in found] == ["liboqs-0.12.0+given"] and found[0].prefix == given
    listed = {r["build"]: r for r in liboqs_loader.catalogue()}
    assert listed["liboqs-0.12.0+given"]["source"] == str(given / "lib" / "liboqs.so")
    assert listed["liboqs-0.9.0"]["source"].startswith("crates.io oqs-sys 0.9.1+liboqs-0.9.0 (sha256 ")
    run = benchmark.bench(["ML-KEM-768@liboqs-0.12.0+given"], operations=["keygen"], save=False,
                          allow_nonconforming=True, **FAST)
    info = run.meta["liboqs"]
    assert (info["build"] == "liboqs-0.12.0+given"
            and info["liboqs_path"] == str((given / "lib" / "liboqs.so").resolve()))
    # looking for given builds loads none of them here: a fresh process still
    # imports its own liboqs afterwards
    import ctypes
    import subprocess
    import sys

    # another liboqs mapped in this process: not taken for the one used
    ctypes.CDLL(str(given / "lib" / "liboqs.so"))
    assert str(given) not in liboqs_loader.liboqs_info()["liboqs_path"]

    code = ("from pqlab import liboqs_loader as L; assert L.given_builds(); i = L.liboqs_info(); "
            "print(i['build'], i['liboqs_path'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == liboqs_loader.liboqs_info()["build"] and str(given) not in proc.stdout


def test_compare_runs_of_two_releases_refuses_a_name_whose_meaning_changed_unless_told(tmp_path):
    from pqlab.store.results import compare_runs

    runs = [benchmark.bench(["FrodoKEM-640-AES"], operations=["keygen"], save=False, **FAST)
            for _ in range(2)]
    runs[0].meta["liboqs"]["liboqs_version"], runs[1].meta["liboqs"]["liboqs_version"] = "0.15.0", "0.16.0"
    with pytest.raises(ValueError, match="FrodoKEM-640-AES is FrodoKEM-640-AES \\(unsalted\\) in liboqs "
                                         "0.15.0 and FrodoKEM-640-AES \\(salted\\) in 0.16.0.*"
                                         "allow_changed_meaning=True"):
        compare_runs(runs[0], runs[1], allow_different=True)
    told = compare_runs(runs[0], runs[1], allow_different=True, allow_changed_meaning=True)
    assert "⚠ different algorithms: FrodoKEM-640-AES is" in told.iloc[0]["verdict"]
    assert list(told.attrs["changed_meaning"]) == ["FrodoKEM-640-AES"]


def test_compare_joins_two_releases_by_their_options_and_names_each_sides_build():
    """Rows of liboqs-0.12.0 and liboqs-0.13.0 are the same measurement of two builds: compared, each row says
    which build each side ran; a generic row is not compared with a default one."""
    from pqlab.store.results import compare_runs

    def run(run_id, release, scale):
        rows, samples = [], []
        for options in ("default", "generic"):
            build = builds.Build(release, options).id
            rows.append({"run_id": run_id, "algorithm": "ML-KEM-768", "backend": "liboqs", "build": build,
                         "operation": "encaps", "loops": 1, "time_ns_median": 1e4, "samples": 6,
                         "verified": True})
            samples += [{"run_id": run_id, "algorithm": "ML-KEM-768", "backend": "liboqs", "build": build,
                         "operation": "encaps", "round": r, "sample": 0, "loops": 1,
                         "time_ns": 1e4 * scale * (2 if options == "generic" else 1) * (1 + 0.001 * r)}
                        for r in range(6)]
        return Run.from_rows(run_id, rows, [], samples, {"status": "complete", "round_noise": [],
                                                        "liboqs": {"liboqs_version": release,
                                                                   "build": builds.Build(release).id}})

    out = compare_runs(run("a", "0.12.0", 1.0), run("b", "0.13.0", 1.3), allow_different=True)
    assert sorted(zip(out["build_a"], out["build_b"])) == [("liboqs-0.12.0", "liboqs-0.13.0"),
                                                           ("liboqs-0.12.0+generic", "liboqs-0.13.0+generic")]
    assert out["factor_b_over_a"].tolist() == pytest.approx([1.3, 1.3], rel=0.01)
    assert "build" not in out.columns and "build_options" not in out.columns


def test_the_builds_command_lists_every_release_and_option(capsys):
    from pqlab.app.cli import main

    assert main(["builds"]) == 0
    out = capsys.readouterr().out
    for release in builds.own_releases():
        assert f"liboqs-{release} " in out and f"liboqs-{release}+generic" in out
    assert out.count(" yes ") == 1  # the build this process loaded


def test_provision_refuses_an_unknown_build_in_one_line_and_knows_every_other_release(capsys):
    from pqlab.app import provision

    assert provision.main(["liboqs", "turbo"]) == 1
    err = capsys.readouterr().err
    assert (err.startswith("error: unknown liboqs build 'turbo'") and err.count("\n") == 1
            and "liboqs-0.9.0" in err)
    # installed already (make's prerequisite): found, not built
    assert provision.main(["liboqs", "releases"]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()] == ["liboqs-0.9.0", "liboqs-0.12.0"]


def test_the_loaded_liboqs_is_the_one_liboqs_python_opened_not_the_first_one_mapped(monkeypatch, tmp_path):
    import builtins

    real = liboqs_loader.liboqs_info()["liboqs_path"]
    maps = tmp_path / "maps"  # another liboqs mapped first (a look at a given one, say)
    maps.write_text("7f0000000000-7f0000001000 r-xp 00000000 00:00 0 /elsewhere/lib/liboqs.so\n")
    opened = builtins.open
    monkeypatch.setattr(builtins, "open",
                        lambda f, *a, **k: opened(maps if f == "/proc/self/maps" else f, *a, **k))
    assert liboqs_loader.loaded_library_path() == real


# ----- the old default/generic word is gone as a concept (issue 30) -----------------------------------------

#: Files pqlab keeps under version control whose text is its own: code, notebooks, their parameters, build
#: files and documentation (the transcribed reference data and the tests, which write old runs, are not
#: scanned).
_OWN = ("pqlab/", "notebooks/", "native/bench/", "native/impls/java/src/", "native/tls-runner/src/",
        "README.md", "CONTRIBUTING.md", "Makefile", "environment.yml", ".ci/")


def test_the_word_variant_survives_only_where_a_schema_4_run_is_read():
    """A build is a record with an id (liboqs-0.13.0+generic); the word that named default/generic without a
    release is gone.  It survives in one line: the name of the column a schema < 5 run stored, which
    pqlab.core.schema converts."""
    import re
    import subprocess

    listed = subprocess.run(["git", "ls-files", *_OWN], cwd=paths.ROOT, capture_output=True, text=True,
                            check=True)
    found = []
    for name in listed.stdout.split():
        path = paths.ROOT / name
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        found += [f"{name}: {line.strip()}" for line in text.splitlines() if re.search("variant", line, re.I)]
    assert len(listed.stdout.split()) > 50  # the scan saw the project
    assert found == ['pqlab/core/schema.py: _OLD_OPTIONS = "variant"']


def test_a_schema_4_run_converts_its_options_to_the_build_it_names(tmp_path):
    """A run saved before builds were records stored default/generic without the release: on load its rows,
    samples and liboqs record name the build (liboqs-<release>[+generic]) from the release it recorded, and
    its liboqs rows the path they were measured through."""
    import json

    import pandas as pd

    from pqlab.core.schema import SCHEMA_VERSION
    from pqlab.store.results import load_run

    rows = [("ML-DSA-44", "liboqs", "generic", "0.12.0"), ("ML-DSA-44", "native", "default", ""),
            ("Ed25519", "cryptography", "", "50.0.2")]
    run = Run.from_rows("old", [{"run_id": "old", "algorithm": a, "backend": b, "operation": "sign",
                                 "loops": 1, "message_bytes": 100, "library_version": v or None,
                                 "time_ns_median": 1000.0, "samples": 3, "verified": True}
                                for a, b, _, v in rows], [],
                        [{"run_id": "old", "algorithm": a, "backend": b, "operation": "sign",
                          "message_bytes": 100, "round": r, "sample": 0, "loops": 1, "time_ns": 1000.0 + r}
                         for a, b, _, _ in rows for r in range(3)],
                        {"status": "complete", "liboqs": {"liboqs_version": "0.12.0", "variant": "generic"}})
    run.save(tmp_path)
    old = "variant"  # the column and record key of schema 4
    for part in ("measurements.csv", "samples.csv.gz"):
        path = tmp_path / f"old.{part}"
        frame = pd.read_csv(path).drop(columns=["build"])
        frame[old] = [o for _, _, o, _ in rows for _ in range(1 if part == "measurements.csv" else 3)]
        frame.to_csv(path, index=False)
    meta = json.loads((tmp_path / "old.meta.json").read_text())
    meta.update(schema_version=4)
    meta.pop("files")
    (tmp_path / "old.meta.json").write_text(json.dumps(meta))
    back = load_run(tmp_path / "old")
    assert (back.meta["converted_from_schema"] == 4
            and (back.measurements["schema_version"] == SCHEMA_VERSION).all())
    assert back.measurements["build"].fillna("").tolist() == ["liboqs-0.12.0+generic", "liboqs-0.12.0", ""]
    assert back.samples["build"].fillna("").tolist() == (["liboqs-0.12.0+generic"] * 3 + ["liboqs-0.12.0"] * 3
                                                         + [""] * 3)
    assert old not in back.measurements.columns and old not in back.samples.columns
    assert back.meta["liboqs"] == {"liboqs_version": "0.12.0", "options": "generic",
                                   "build": "liboqs-0.12.0+generic"}
    assert back.sample_values("ML-DSA-44", "sign", backend="liboqs-python", build="generic").size == 3
    # schema 4's liboqs rows were measured through liboqs-python: the backend says
    # so now (liboqs is the lean path)
    assert list(back.measurements["backend"]) == ["liboqs-python", "native", "cryptography"]
