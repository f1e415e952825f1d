"""pqlab.runners.jvm's build and run decisions, each branch forced (no JDK, Maven refusing a release, the
optional API groups, a release without some algorithms): no JDK or network needed."""
from __future__ import annotations

import dataclasses

import pytest

from pqlab.runners import jvm
from pqlab.runners import program as programs

REFUSED = """[ERROR] Failed to execute goal on project pqlab-impls-java: \
Could not resolve dependencies for project pqlab:pqlab-impls-java:jar:0.2.0
[ERROR] dependency: org.bouncycastle:bcprov-jdk18on:jar:1.72 (compile)
[ERROR] \tCould not find artifact org.bouncycastle:bcprov-jdk18on:jar:1.72 in central \
(https://repo.maven.apache.org/maven2)"""
OTHER_ERROR = """[ERROR] /x/native/impls/java/src/main/java/pqlab/impls/Main.java:[40,1] cannot find symbol"""


def test_maven_messages_are_read():
    assert jvm.unresolved(REFUSED) == ("Could not find artifact org.bouncycastle:bcprov-jdk18on:jar:1.72 in "
                                       "central (https://repo.maven.apache.org/maven2)")
    assert jvm.unresolved(REFUSED.splitlines()[0]).startswith("Could not resolve dependencies for project")
    assert jvm.unresolved(OTHER_ERROR) == "" and jvm.unresolved("") == ""


def test_jar_paths_keep_releases_apart():
    assert jvm.jar_path() == jvm.jar_path(jvm.default_version()) == jvm.JAR
    assert jvm.JAR.parent.name == f"bc-{jvm.default_version()}"
    assert jvm.jar_path("1.72").parent.name == "bc-1.72" and jvm.jar_path("1.72") != jvm.JAR


def test_the_program_toml_default_release_is_the_poms():
    """program.toml's {bc} default and pom.xml's bouncycastle.version (the lock) name the same release."""
    prog = programs.program("java")
    assert prog.variables["bc"] == jvm.default_version() == programs.locked_versions(prog)["bcprov-jdk18on"]


def test_each_optional_api_group_compiles_in_a_step_that_may_fail():
    """A release without an API (1.72: no FIPS 203/204/205 classes, round-3 SPHINCS+ in pqc.crypto) still
    builds the rest: pom.xml leaves each group out of the main compilation and compiles it with failOnError
    false."""
    pom = jvm.POM.read_text()
    main = pom[pom.index("<id>default-compile</id>"):pom.index("</execution>", pom.index("default-compile"))]
    for group in ("Fips", "Round3Legacy", "Round3PqcCrypto"):
        assert f"<exclude>pqlab/impls/{group}.java</exclude>" in main
        step = pom[pom.index(f"<include>pqlab/impls/{group}.java</include>"):]
        assert step.index("<failOnError>false</failOnError>") < step.index("</execution>")
        assert (jvm.RUNNER_DIR / "src/main/java/pqlab/impls" / f"{group}.java").exists()


@pytest.fixture
def failing_build(monkeypatch, tmp_path):
    """The program's build replaced by one that fails with `output` in its build log."""
    monkeypatch.setattr(jvm, "jdk_available", lambda: (True, "java; javac; mvn"))
    calls = []

    def install(output):
        def ensure_built(prog):
            calls.append(prog)
            prog.output.mkdir(parents=True, exist_ok=True)
            (prog.output / "build.log").write_text(output)
            raise programs.ProgramError(f"building the java program failed (exit 1; log {prog.output})")
        monkeypatch.setattr(programs, "ensure_built", ensure_built)
        monkeypatch.setattr(jvm, "bc_program", lambda version=None: dataclasses.replace(
            programs.program("java", bc=version or jvm.default_version()), folder=tmp_path))
        return calls
    return install


def test_a_refused_release_raises_with_mavens_message(failing_build):
    calls = failing_build(REFUSED)
    with pytest.raises(jvm.BouncyCastleUnavailable, match=r"bcprov-jdk18on:9\.99: Could not find artifact"):
        jvm.build_bc_runner(version="9.99")
    assert calls[0].variables["bc"] == "9.99" and calls[0].artifact_path.parent.name == "bc-9.99"


def test_another_build_error_is_one_line_and_not_unavailable(failing_build):
    calls = failing_build(OTHER_ERROR)
    with pytest.raises(RuntimeError, match="Maven build of the Bouncy Castle runner failed") as e:
        jvm.build_bc_runner(version="1.51")
    assert not isinstance(e.value, jvm.BouncyCastleUnavailable) and len(calls) == 1
    assert "\n" not in str(e.value)


def test_bc_run_raises_why_nothing_ran(monkeypatch):
    monkeypatch.setattr(jvm, "jdk_available", lambda: (False, jvm.NO_JDK))
    with pytest.raises(jvm.BouncyCastleUnavailable, match="no JDK"):
        jvm.bc_run(["RSA-2048"])

    monkeypatch.setattr(jvm, "jdk_available", lambda: (True, "ok"))

    def refused(version=None):
        raise jvm.BouncyCastleUnavailable("Maven could not provide "
                                          f"org.bouncycastle:bcprov-jdk18on:{version}: Could not ...")
    monkeypatch.setattr(jvm, "bc_algorithms", refused)
    with pytest.raises(jvm.BouncyCastleUnavailable,
                       match="^Maven could not provide org.bouncycastle:bcprov-jdk18on:1.72"):
        jvm.bc_run(["RSA-2048"], version="1.72")

    monkeypatch.setattr(jvm, "bc_algorithms", lambda version=None: ["AES-256-CBC", "RSA-2048"])
    with pytest.raises(jvm.BouncyCastleUnavailable, match="^not in Bouncy Castle 1.72: SLH-DSA-SHAKE-128f$"):
        jvm.bc_run(["SLH-DSA-SHAKE-128f"], version="1.72")
