"""pqlab.runners.jvm's build and run decisions, each branch forced (no JDK, Maven refusing a release, the
older hash-based API, a release without some algorithms): no JDK or network needed."""
from __future__ import annotations

import pytest

from pqlab.runners import jvm

REFUSED = """[ERROR] Failed to execute goal on project bc-runner: \
Could not resolve dependencies for project pqlab:bc-runner:jar:0.1.0
[ERROR] dependency: org.bouncycastle:bcprov-jdk18on:jar:1.72 (compile)
[ERROR] \tCould not find artifact org.bouncycastle:bcprov-jdk18on:jar:1.72 in central \
(https://repo.maven.apache.org/maven2)"""
OLD_API = """[ERROR] COMPILATION ERROR :
[ERROR] /x/native/bc-runner/src/main/java/pqlab/HashSigs.java:[12,38] cannot find symbol
[ERROR] /x/native/bc-runner/src/main/java/pqlab/HashSigs.java:[17,45] \
package org.bouncycastle.pqc.legacy.sphincsplus does not exist"""
OTHER_ERROR = """[ERROR] /x/native/bc-runner/src/main/java/pqlab/BcRunner.java:[40,1] cannot find symbol"""


def test_maven_messages_are_read():
    assert jvm.unresolved(REFUSED) == ("Could not find artifact org.bouncycastle:bcprov-jdk18on:jar:1.72 in "
                                       "central (https://repo.maven.apache.org/maven2)")
    assert jvm.unresolved(REFUSED.splitlines()[0]).startswith("Could not resolve dependencies for project")
    assert jvm.unresolved(OLD_API) == "" and jvm.unresolved("") == ""
    assert jvm._only_hash_sigs_failed(OLD_API)
    assert (not jvm._only_hash_sigs_failed(OLD_API + "\n" + OTHER_ERROR)
            and not jvm._only_hash_sigs_failed(REFUSED))


def test_jar_paths_keep_releases_apart():
    assert jvm.jar_path() == jvm.jar_path(jvm.default_version()) == jvm.JAR
    assert jvm.jar_path("1.72").parent.name == "bc-1.72" and jvm.jar_path("1.72") != jvm.JAR


@pytest.fixture
def fake_maven(monkeypatch, tmp_path):
    """Maven replaced by a script of (exit code, output, writes the jar?) answers; records the options."""
    calls = []
    monkeypatch.setattr(jvm, "jdk_available", lambda: (True, "java; javac; mvn"))
    monkeypatch.setattr(jvm, "jar_path", lambda version=None: tmp_path / f"bc-{version}" / "bc-runner.jar")

    def install(*answers):
        def maven(options, timeout_s):
            code, output, writes = answers[len(calls)]
            calls.append(options)
            if writes:
                jar = tmp_path / f"bc-{options[0].split('=')[1]}" / "bc-runner.jar"
                jar.parent.mkdir(parents=True, exist_ok=True)
                jar.write_bytes(b"jar")
            return code, output
        monkeypatch.setattr(jvm, "_maven", maven)
        return calls
    return install


def test_a_refused_release_raises_with_mavens_message(fake_maven):
    fake_maven((1, REFUSED, False))
    with pytest.raises(jvm.BouncyCastleUnavailable, match=r"bcprov-jdk18on:9\.99: Could not find artifact"):
        jvm.build_bc_runner(version="9.99")


def test_the_older_api_is_compiled_when_only_hash_sigs_fails(fake_maven):
    calls = fake_maven((1, OLD_API, False), (0, "", True))
    jar = jvm.build_bc_runner(version="1.50")
    assert jar.exists() and len(calls) == 2
    assert jvm.OLDER_API not in calls[0] and calls[1][-1] == jvm.OLDER_API
    assert calls[0][0] == "-Dbouncycastle.version=1.50"


def test_another_compile_error_is_not_retried(fake_maven):
    calls = fake_maven((1, OTHER_ERROR, False))
    with pytest.raises(RuntimeError, match="Maven build of the Bouncy Castle runner failed") as e:
        jvm.build_bc_runner(version="1.51")
    assert not isinstance(e.value, jvm.BouncyCastleUnavailable) and len(calls) == 1


def test_bc_run_reports_why_nothing_or_not_everything_ran(monkeypatch):
    monkeypatch.setattr(jvm, "jdk_available", lambda: (False, jvm.NO_JDK))
    run = jvm.bc_run(["RSA-2048"])
    assert run.measurements.empty and run.meta["not_run"] == jvm.NO_JDK
    assert (jvm.bc_run(["RSA-2048"], enabled=False).meta["not_run"]
            .startswith("the Bouncy Castle runs were switched off"))

    monkeypatch.setattr(jvm, "jdk_available", lambda: (True, "ok"))

    def refused(version=None):
        raise jvm.BouncyCastleUnavailable("Maven could not provide "
                                          f"org.bouncycastle:bcprov-jdk18on:{version}: Could not ...")
    monkeypatch.setattr(jvm, "bc_algorithms", refused)
    run = jvm.bc_run(["RSA-2048"], version="1.72")
    assert run.measurements.empty and run.meta["not_run"].startswith(
        "Maven could not provide org.bouncycastle:bcprov-jdk18on:1.72")

    monkeypatch.setattr(jvm, "bc_algorithms", lambda version=None: ["AES-256-CBC", "RSA-2048"])
    run = jvm.bc_run(["SLH-DSA-SHAKE-128f"], version="1.72")
    assert run.measurements.empty and run.meta["not_run"] == "not in Bouncy Castle 1.72: SLH-DSA-SHAKE-128f"
