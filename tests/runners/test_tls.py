"""The TLS runner (pqlab.runners.tls) and notebook 06's budget model (pqlab.studies.tls_handshake).

Tests that run handshakes use the real runner (``make test`` builds it first; alone, the fixture
builds it on first use); the rest need nothing built.  The runner's protocol (list, build record, one round,
a malformed request) is also checked by tests/runners/test_protocol.py with every other program.
"""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import stat

import pandas as pd
import pytest

from pqlab.benchmark import bench
from pqlab.core import integrity
from pqlab.core.errors import UnknownName
from pqlab.runners import program as programs
from pqlab.runners import tls
from pqlab.store.results import load_run
from pqlab.studies import tls_handshake as th

STACK = {"openssl_version": "OpenSSL 3.6.3", "groups": ["x25519", "secp256r1", "MLKEM768", "X25519MLKEM768"],
         "signatures": ["ecdsa_secp256r1_sha256", "ed25519", "mldsa44"]}


@pytest.fixture(scope="module")
def runner():
    return tls.build_tls_runner()


@pytest.fixture(scope="module")
def ops():
    """Sizes of the primitives the model needs (keygen only: sizes, not timings, matter here)."""
    names = th.operation_names(["X25519", "X25519MLKEM768", "ML-KEM-768"], ["ECDSA-P256", "ML-DSA-44"])
    return bench(names, operations=["keygen"], budget_s=0.01, min_samples=1, save=False, progress=False)


# ----- names are checked before anything runs -----


def test_unknown_group_is_one_line_with_close_matches_and_the_stack_list():
    with pytest.raises(UnknownName) as err:
        tls.resolve_group("X25519MLKEM786", STACK["groups"])
    msg = str(err.value)
    assert "\n" not in msg and "X25519MLKEM768" in msg.split("The stack supports")[0]
    assert "The stack supports x25519, secp256r1, MLKEM768, X25519MLKEM768" in msg


def test_group_names_resolve_from_pqlab_and_openssl_spellings():
    assert tls.resolve_group("ML-KEM-768", STACK["groups"]) == "MLKEM768"
    assert tls.resolve_group("mlkem768", STACK["groups"]) == "MLKEM768"
    assert tls.resolve_group("X25519", STACK["groups"]) == "x25519"
    assert tls.display_group("MLKEM768") == "ML-KEM-768" and tls.display_group("x25519") == "X25519"


def test_unknown_signature_lists_the_chains_and_the_stack_schemes():
    with pytest.raises(UnknownName) as err:
        tls.check_signature("ML-DSA-45", STACK["signatures"])
    msg = str(err.value)
    assert "\n" not in msg and "ML-DSA-44" in msg.split("close matches:")[1].split(".")[0]
    assert "mldsa44" in msg and "SLH-DSA-SHA2-128f" in msg


def test_a_bad_name_stops_the_matrix_before_any_handshake(monkeypatch):
    monkeypatch.setattr(tls, "capabilities", lambda: STACK)

    def must_not_run(*args, **kwargs):
        raise AssertionError("a handshake ran although a name was unknown")

    monkeypatch.setattr(tls, "run_handshakes", must_not_run)
    configs = [tls.Config("X25519", "ECDSA-P256"), tls.Config("Kyber9000", "ECDSA-P256")]
    with pytest.raises(UnknownName, match="unknown TLS group 'Kyber9000'; close matches"):
        tls.measure_handshakes(configs, 2, save=False, progress=False)
    with pytest.raises(UnknownName, match="unknown signature 'ECDSA-P257'; close matches: ECDSA-P256"):
        th.plan_matrix(["X25519"], ["ECDSA-P257"])
    with pytest.raises(ValueError, match="unknown mode"):
        th.plan_matrix(["X25519"], ["ECDSA-P256"], modes=["0-rtt"])


# ----- the runner's build -----


#: What a stand-in runner answers for `list` (protocol 2).
FAKE_LIST = {"protocol": 2, "program": "tls-runner", "language": "Rust", "toolchain": "rustc test",
             "commands": ["handshake", "mkchain"], "openssl_version": "OpenSSL test", "groups": ["x25519"],
             "signatures": ["ed25519"]}


def _executable(path, text: str):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _isolated_runner(monkeypatch, tmp_path, cargo=None, stale: str = "1"):
    """The runner's program record moved to a folder of its own under tmp_path (its binary, build record and
    log there), built by `cargo` (a script) when given; `stale` is a placeholder value: another one changes
    the sources' hash, as an edited source would."""
    folder = tmp_path / "tls-runner"
    (folder / "src").mkdir(parents=True, exist_ok=True)
    (folder / "src" / "main.rs").write_text("fn main() {}\n")
    prog = dataclasses.replace(programs.program("tls-runner"), folder=folder,
                               variables={"test": str(tmp_path), "stale": stale})
    if cargo is not None:
        prog = dataclasses.replace(prog, tools=(str(cargo),), build=(str(cargo), "build", "--release"))
    monkeypatch.setattr(tls, "runner", lambda: prog)
    return folder / "target" / "release"


def _fake_cargo(tmp_path, extra: str = ""):
    """A cargo that "builds" a runner answering `list` with FAKE_LIST (in the folder it runs in)."""
    fake_runner = _executable(tmp_path / "fake-runner",
                              f"#!/bin/sh\necho '{json.dumps(FAKE_LIST)}'\n" + extra)
    return _executable(tmp_path / "cargo", f'#!/bin/sh\necho "$@" >> {tmp_path / "cargo.log"}\n'
                       f"mkdir -p target/release && cp {fake_runner} target/release/tls-runner\n")


def test_a_failing_build_says_the_command_its_exit_and_its_log_in_one_line(monkeypatch, tmp_path):
    output = _isolated_runner(monkeypatch, tmp_path)
    cargo = _executable(tmp_path / "cargo", "#!/bin/sh\necho 'error: failed to run custom build command for "
                        "openssl-sys' >&2\nexit 101\n")
    with pytest.raises(tls.TlsRunnerBuildError) as err:
        tls.build_tls_runner(cargo=str(cargo))
    msg = str(err.value)
    assert msg.startswith("building the tls-runner program failed") and "\n" not in msg
    assert "exit 101" in msg and str(output / "build.log") in msg
    assert "failed to run custom build command" in msg
    assert "failed to run custom build command" in (output / "build.log").read_text()
    assert not (output / programs.BUILD_RECORD).exists()


def test_builds_are_recorded_and_the_cold_one_kept(monkeypatch, tmp_path):
    cargo = _fake_cargo(tmp_path)
    output = _isolated_runner(monkeypatch, tmp_path, cargo)
    tls.build_tls_runner(cargo=str(cargo))
    _isolated_runner(monkeypatch, tmp_path, cargo, stale="2")  # its sources changed: built again
    tls.build_tls_runner(cargo=str(cargo))
    builds = tls.build_records()
    assert [b["cold"] for b in builds] == [True, False] and [b["why"] for b in builds] == ["missing", "stale"]
    assert builds[0]["openssl_version"] == "OpenSSL test"  # from the runner's list
    assert builds[0]["built_at"]
    assert tls.build_record(cold=True) == builds[0] and tls.build_record() == builds[1]
    record = programs.build_record(tls.runner())
    assert record["program"] == "tls-runner" and record["protocol"] == 2 and len(record["history"]) == 2
    text = th.describe_build(builds)
    assert "Built from nothing (cold)" in text and "last build was incremental" in text
    assert "unknown" in th.describe_build([]) and (output / "build.log").exists()


def test_builds_recorded_before_protocol_2_are_kept(monkeypatch, tmp_path):
    cargo = _fake_cargo(tmp_path)
    output = _isolated_runner(monkeypatch, tmp_path, cargo)
    output.mkdir(parents=True)
    shutil.copy(tmp_path / "fake-runner", output / "tls-runner")  # built before pqlab kept this record
    old = {"seconds": 179.2, "cold": True, "finished_at": "2026-01-01T00:00:00+00:00",
           "openssl_version": "OpenSSL 3.6.3", "cores": 2, "load_before": 1.0, "command": "cargo build"}
    (output.parent / tls.LEGACY_BUILD_RECORD).write_text(json.dumps({"builds": [old]}))
    tls.build_tls_runner()
    builds = tls.build_records()
    assert builds[0] == dict(old, built_at=old["finished_at"], why="before protocol 2")
    assert tls.build_record(cold=True)["seconds"] == 179.2 and builds[1]["why"] == "stale"


def test_without_cargo_the_build_says_so(monkeypatch, tmp_path):
    _isolated_runner(monkeypatch, tmp_path)
    monkeypatch.setattr(tls.shutil, "which", lambda name: None)
    with pytest.raises(tls.TlsRunnerBuildError,
                       match=r"^no cargo here for the tls-runner program: install Rust \(rustup or apt-get"):
        tls.build_tls_runner()


def test_a_current_build_is_not_redone(runner, monkeypatch):
    monkeypatch.setattr(programs.subprocess, "run",
                        lambda *a, **k: pytest.fail("cargo ran for a current build"))
    assert tls.build_tls_runner() == runner


def test_the_runner_lists_itself_in_protocol_2(runner):
    caps = tls.capabilities()
    assert caps["protocol"] == 2 and caps["program"] == "tls-runner" and caps["language"] == "Rust"
    assert caps["commands"] == list(tls.runner().commands) == ["handshake", "mkchain"]
    assert caps["toolchain"].startswith(("rustc ", "OpenSSL "))
    assert caps["openssl_version"].startswith("OpenSSL")
    assert "X25519MLKEM768" in caps["groups"] and "mldsa44" in caps["signatures"]
    assert "sigalgs" not in caps and caps["signatures"]  # notebook 06 reads signatures
    assert caps["build"]["program"] == "tls-runner"


# ----- handshakes -----


def test_a_refused_configuration_is_a_failed_row_with_openssls_reason(runner, tmp_path):
    configs = [tls.Config("X25519", "SLH-DSA-SHA2-128f"), tls.Config("X25519", "ECDSA-P256")]
    run = tls.measure_handshakes(configs, 2, warmup=0, progress=False, folder=tmp_path)
    m = run.measurements.set_index("algorithm")
    assert not m.loc["X25519 + SLH-DSA-SHA2-128f", "verified"]
    assert "unknown certificate type" in m.loc["X25519 + SLH-DSA-SHA2-128f", "flags"]
    assert m.loc["X25519 + ECDSA-P256", "verified"]  # the matrix went on
    assert m.loc["X25519 + ECDSA-P256", "samples"] == 2
    refused = tls.run_handshakes(configs[0], 1, warmup=0)  # exit 1: the document says why
    assert refused["protocol"] == 2 and not refused["verified"] and refused["error"] == refused["setup_error"]
    again = load_run(tmp_path / run.run_id)
    assert again.meta["tls"]["openssl_version"].startswith("OpenSSL 3.6")
    assert {"client_cpu_ns", "server_cpu_ns", "bytes_s1"} <= set(again.samples.columns)


def test_a_failing_handshake_reports_both_sides(runner, tmp_path):
    """The client trusts another root: the handshake itself fails, with OpenSSL's reasons."""
    chains = tmp_path / "chains"
    shutil.copytree(tls.build_chain("ECDSA-P256"), chains / "ECDSA-P256")
    shutil.copy(tls.build_chain("Ed25519") / "root.der", chains / "ECDSA-P256" / "root.der")
    result = tls.run_handshakes(tls.Config("X25519", "ECDSA-P256"), 3, warmup=0, chains=chains)
    # stopped at the first failure
    assert len(result["handshakes"]) == 1 and not result["handshakes"][0]["ok"]
    reason = tls.failure_reason(result)
    assert "certificate verify failed" in reason and "server handshake failed" in reason
    assert not result["verified"] and "certificate verify failed" in result["error"]


def test_every_handshake_is_checked(runner):
    result = tls.run_handshakes(tls.Config("X25519MLKEM768", "ML-DSA-44", mutual=True), 2, warmup=0)
    assert result["verified"] and result["error"] == "" and result["program"] == "tls-runner"
    for h in result["handshakes"]:
        assert h["ok"] and h["group_negotiated"] == "X25519MLKEM768"
        assert h["server_sigalg"] == "mldsa44" and h["client_sigalg"] == "mldsa44"
        assert sum(m[3] for m in h["client_messages"]) == h["client_bytes"]  # records == socket
    resumed = tls.run_handshakes(tls.Config("X25519", "ECDSA-P256", resume=True), 2, warmup=0)
    assert [h["resumed"] for h in resumed["handshakes"]] == [False, True, True]


# ----- the model -----


@pytest.mark.parametrize("config", [
    tls.Config("X25519", "ECDSA-P256"),
    tls.Config("X25519MLKEM768", "ML-DSA-44", depth=2, mutual=True),
    tls.Config("ML-KEM-768", "ML-DSA-44", resume=True),
], ids=lambda c: f"{c.pair}-{c.mode}-d{c.depth}")
def test_the_model_predicts_the_measured_bytes_exactly(runner, ops, config):
    result = tls.run_handshakes(config, 3, warmup=0)
    certs = tls.certificate_sizes([config.signature])
    shares = th.share_sizes(ops, [config.group])
    for h in result["handshakes"]:
        if config.resume and not h["resumed"]:
            continue
        inputs = th._inputs(config, shares, certs, ops)
        inputs["signature_bytes"] = tls.cv_signature_bytes(h) or inputs["signature_bytes"]
        msgs = th.predict_messages(config, **inputs,
                                   client_signature_bytes=tls.cv_signature_bytes(h, "client"),
                                   cipher=h["cipher"], ticket_bytes=h.get("offered_ticket_bytes"))
        predicted = msgs.groupby("flight")["wire_bytes"].sum().to_dict()
        measured = {f: b for f, b in tls.flight_bytes(h).items() if f != "S2"}
        assert predicted == measured
        got = pd.DataFrame(tls.message_rows(result, h)).query("flight in ['C1', 'S1', 'C2']")
        assert list(got["message"]) == list(msgs.sort_values("from", kind="stable")["message"])


def test_wire_bytes_count_record_headers_and_fragments():
    assert th.wire_bytes(100, encrypted=False) == 105
    assert th.wire_bytes(100, encrypted=True) == 122
    assert th.wire_bytes(17088 + 8, encrypted=True) == 17096 + 2 * 22  # two records


def test_slow_start_round_trips():
    assert th.tcp_extra_round_trips(14600) == 0
    assert th.tcp_extra_round_trips(14601) == 1
    assert th.tcp_extra_round_trips(30 * 1460) == 1 and th.tcp_extra_round_trips(30 * 1460 + 1) == 2


def test_budget_flags_limits_and_profiles():
    config = tls.Config("X25519", "ML-DSA-65", depth=2)
    msgs = th.predict_messages(config, 32, 32, [5570, 5540], [5547, 5540], 3309)
    row = th.budget_row(config, msgs)
    assert row["S1"] > 14600 and row["tcp_extra_rtt"] == 1 and row["quic_extra_rtt"] == 1
    assert row["quic_allowance"] == 3600 and not row["hard_failure"]
    big = th.predict_messages(tls.Config("X25519", "ECDSA-P256"), 32, 32, [60000, 50000], [1], 72)
    assert "certificate body" in th.budget_row(tls.Config("X25519", "ECDSA-P256"), big)["hard_failure"]
    cv = th.predict_messages(tls.Config("X25519", "ECDSA-P256"), 32, 32, [400], [1], 17088)
    assert th.budget_row(tls.Config("X25519", "ECDSA-P256"), cv)["older_openssl_cv_limit"] == "exceeded"


def test_flights_follow_the_message_order():
    server = [[22, 2, 90, 95], [20, 0, 1, 6], [22, 8, 6, 28], [22, 20, 52, 74], [22, 4, 233, 255],
              [21, 0, 2, 24]]
    client = [[22, 1, 191, 196], [20, 0, 1, 6], [22, 20, 52, 74], [23, 0, 0, 86]]
    assert tls.flight_of("server", server) == ["S1", "S1", "S1", "S1", "S2", "after"]
    assert tls.flight_of("client", client) == ["C1", "C2", "C2", "after"]


def test_pinning_follows_the_cpus_the_process_may_use(monkeypatch, runner):
    monkeypatch.setattr(tls.os, "sched_getaffinity", lambda pid: {3})
    assert tls.default_pin() is None  # one CPU: client and server threads are left unpinned
    result = tls.run_handshakes(tls.Config("X25519", "Ed25519"), 1, warmup=0)
    assert result["pinned_cpus"] is None and result["handshakes"][0]["ok"]
    monkeypatch.setattr(tls.os, "sched_getaffinity", lambda pid: {5, 2, 7})
    assert tls.default_pin() == "2,5"


# ----- bounds, pinning and the runner's sha256 (issue #27) -----


def built_runner_or_skip():
    """The runner as built by `make` (make test builds it first); a skip, with the reason, where it is not."""
    if not tls.BINARY.exists():
        pytest.skip(f"the TLS runner is not built ({tls.BINARY} is missing): "
                    f"`make {tls.BINARY.relative_to(tls.paths.ROOT)}` "
                    "or `python -m pqlab.runners.tls build` builds it")
    return tls.BINARY


BAD_RUNS = [
    (["--payload", "100000000000"],
     "--payload takes a whole number from 1 to 16777216, got \"100000000000\""),
    (["--payload", "0"], "--payload takes a whole number from 1 to 16777216, got \"0\""),
    (["--warmup", "18446744073709551615"],
     "--warmup takes a whole number from 0 to 10000, got \"18446744073709551615\""),
    (["--handshakes", str(10**12)], f"--handshakes takes a whole number from 1 to 100000, got \"{10**12}\""),
    (["--depth", "3"], "--depth takes a whole number from 1 to 2, got \"3\""),
    (["--pin", "0,99"], "--pin 0,99: CPU 99 is not one this process may run on"),
    (["--pin", "0,100000"], "--pin 0,100000: CPU 100000 is not one this process may run on"),
    (["--pin", "0,x"], "--pin takes two CPU numbers, CLIENT,SERVER, got \"0,x\""),
    (["--sigalg", "mldsa45"],
     "unknown signature scheme \"mldsa45\": this stack's TLS 1.3 signature schemes are "),
    (["--no-such-option"], "unknown option --no-such-option"),
    ([], "--chain "),  # a folder without a root
]


@pytest.mark.parametrize("extra, message", BAD_RUNS, ids=[" ".join(a) for a, _ in BAD_RUNS])
def test_the_runner_refuses_out_of_bounds_arguments_in_one_line(tmp_path, extra, message):
    """Before: --payload 1e11 aborted (allocation failure, backtrace), --warmup 2**64-1 wrapped to no
    handshake with exit 0, --handshakes 1e12 ran on and grew without bound, --pin 0,99 claimed CPU 99."""
    import subprocess

    binary = built_runner_or_skip()
    args = ["handshake", "--group", "x25519", "--chain", str(tmp_path / "no-chain"), "--handshakes", "1",
            *extra]
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-500:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tls-runner: error: ") and message in lines[0], proc.stderr
    assert "panicked" not in proc.stderr and "backtrace" not in proc.stderr.lower()
    assert message in json.loads(proc.stdout)["error"]


def test_the_runner_reports_the_pinning_the_kernel_granted(runner):
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip(f"this process may use one CPU only ({cpus}): nothing to pin two threads to")
    result = tls.run_handshakes(tls.Config("X25519", "Ed25519"), 1, warmup=0, pin=f"{cpus[1]},{cpus[0]}")
    assert result["pinned_cpus"] == [cpus[1], cpus[0]] and result["handshakes"][0]["ok"]
    assert result["affinity"] == {"client": [cpus[1]], "server": [cpus[0]]}  # read back from the kernel
    unpinned = tls.run_handshakes(tls.Config("X25519", "Ed25519"), 1, warmup=0, pin=None)
    assert unpinned["pinned_cpus"] is None and unpinned["affinity"]["client"] == cpus


@pytest.mark.parametrize("kwargs, message", [
    (dict(payload=100_000_000_000), "payload must be a whole number from 1 to 16777216, got 100000000000"),
    (dict(warmup=2**64 - 1), "warmup must be a whole number from 0 to 10000, got 18446744073709551615"),
    (dict(handshakes=10**12), "handshakes must be a whole number from 1 to 100000, got 1000000000000"),
    (dict(handshakes=0), "handshakes must be a whole number >= 1, got 0"),
    (dict(pin="0,99"), "pin 0,99: CPU 99 is not one this process may run on (it may use "),
    (dict(pin="0"), "pin takes two CPU numbers, CLIENT,SERVER (e.g. 0,1), got '0'"),
])
def test_bad_run_options_are_refused_before_anything_runs(monkeypatch, kwargs, message):
    from pqlab.core.errors import BadInput

    monkeypatch.setattr(tls.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(tls, "capabilities",
                        lambda: pytest.fail("the runner was asked although the input was bad"))
    monkeypatch.setattr(tls, "_call",
                        lambda *a, **k: pytest.fail("the runner ran although the input was bad"))
    options = {"handshakes": 1, "warmup": 0, **kwargs}
    handshakes, warmup = options.pop("handshakes"), options.pop("warmup")
    with pytest.raises(BadInput) as err:
        tls.run_handshakes(tls.Config("X25519", "Ed25519"), handshakes, warmup=warmup, **options)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    if "payload" not in kwargs:
        with pytest.raises(BadInput, match="^" + re.escape(message)):
            tls.measure_handshakes([tls.Config("X25519", "Ed25519")], handshakes, warmup=warmup,
                                   pin=kwargs.get("pin", "auto"), save=False, progress=False)


def test_the_bounds_are_the_runners_own():
    source = (tls.RUNNER_DIR / "src" / "main.rs").read_text()
    for name in ("MAX_HANDSHAKES", "MAX_WARMUP", "MAX_PAYLOAD"):
        value = re.search(rf"const {name}: usize = ([0-9_<\s]+);", source).group(1)
        # a literal from our source
        assert eval(value.replace("_", "")) == getattr(tls, name), name  # noqa: S307


def test_a_damaged_runner_binary_is_built_again_with_one_line(monkeypatch, tmp_path):
    import os
    import warnings

    from pqlab.core.errors import PqlabWarning

    cargo = _fake_cargo(tmp_path, extra="# padding\n" * 100)
    output = _isolated_runner(monkeypatch, tmp_path, cargo)
    binary = tls.build_tls_runner()
    assert binary == output / "tls-runner"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tls.build_tls_runner() == binary and len(tls.build_records()) == 1  # a hit, nothing said
    data = binary.read_bytes()
    source = binary.parents[2] / "src" / "main.rs"
    os.utime(source, (0, 0))
    binary.write_bytes(data[: len(data) // 2])  # truncated in place: cargo's fingerprint stays fresh
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tls.build_tls_runner()
    said = [str(w.message) for w in caught if issubclass(w.category, PqlabWarning)]
    assert len(said) == 1 and said[0].startswith(
        f"the tls-runner program's {binary} does not match the sha256 recorded")
    assert said[0].endswith(": building it again") and binary.read_bytes() == data
    assert source.stat().st_mtime > 0  # touched: cargo relinks the runner, OpenSSL's build stays
    builds = tls.build_records()
    assert [b["why"] for b in builds] == ["missing", "damaged"] and not builds[1]["cold"]
    assert programs.build_record(tls.runner())["sha256"] == integrity.sha256_file(binary)


BAD_COMMANDS = [
    (["run", "--group", "x25519"], "unknown command \"run\": tls-runner answers list, handshake, mkchain"),
    (["version"], "unknown command \"version\""),
    ([], "no command: tls-runner answers list, handshake, mkchain"),
    (["list", "--all"], "list takes no options"),
    (["handshake", "--group", "NO-SUCH-GROUP", "--chain", "x"],
     "unknown group \"NO-SUCH-GROUP\": this stack's"),
    (["mkchain", "--alg", "NO-SUCH-KEY", "--out", "{tmp}/chain"],
     "OpenSSL knows no key type \"NO-SUCH-KEY\""),
    (["mkchain", "--alg", "ML-DSA-44"], "mkchain needs --alg NAME and --out DIR"),
]


@pytest.mark.parametrize("args, message", BAD_COMMANDS,
                         ids=[" ".join(a) or "nothing" for a, _ in BAD_COMMANDS])
def test_a_bad_request_is_exit_2_and_one_line(tmp_path, args, message):
    import subprocess

    binary = built_runner_or_skip()
    proc = subprocess.run([str(binary), *[a.format(tmp=tmp_path) for a in args]], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:])
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and message in json.loads(lines[0])["error"], proc.stdout
    assert not (tmp_path / "chain").exists()  # nothing written for a refused request


def test_pqlab_reports_a_refused_request_in_one_line(runner):
    with pytest.raises(tls.TlsError) as err:
        tls._call("handshake", ["--group", "NO-SUCH-GROUP", "--chain", "x"])
    assert str(err.value).startswith(
        "the tls-runner program refused `handshake`: unknown group \"NO-SUCH-GROUP\"")
    assert "\n" not in str(err.value)
