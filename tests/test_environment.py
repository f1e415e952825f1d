"""pyproject.toml (pip), environment.yml (conda) and requirements.lock (make setup) agree:
the same direct dependencies with the same lower bounds, every one of them locked with hashes,
and every locked version within those bounds."""
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
# Only in environment.yml: the interpreter, the C library pip cannot provide, pip itself.
CONDA_ONLY = {"python", "liboqs", "pip"}
LOCKED_LINE = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirements(specs) -> dict[str, Requirement]:
    reqs = [Requirement(spec) for spec in specs]
    return {canonicalize_name(r.name): r for r in reqs}


def pyproject_dependencies() -> dict[str, Requirement]:
    return requirements(pyproject()["project"]["dependencies"])


def declared() -> list[str]:
    """The dependencies and every extra: what the lock is made from (make lock)."""
    project = pyproject()["project"]
    return project["dependencies"] + [spec for extra in project["optional-dependencies"].values()
                                      for spec in extra]


def locked_direct_dependencies() -> dict[str, Requirement]:
    """What make setup installs from the lock: the dependencies, every extra and the build backend."""
    return requirements(declared() + pyproject()["build-system"]["requires"])


def conda_name(spec: str) -> str:
    return re.split(r"[<>=!~ \[;]", spec.strip(), maxsplit=1)[0].lower()


def environment_dependencies() -> dict[str, Requirement]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    specs = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            specs += [d for d in dep.get("pip", []) if not d.startswith("-e")]
        elif conda_name(dep) not in CONDA_ONLY:  # conda's own spelling (python=3.11) is not PEP 508
            specs.append(dep)
    return requirements(specs)


def parse_lock(text: str) -> dict[str, dict]:
    """name -> {"versions": {...}, "hashes": n, "via_pqlab": bool} from a `uv pip compile` output."""
    locked: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if m := LOCKED_LINE.match(line):
            current = locked.setdefault(canonicalize_name(m.group(1)),
                                        {"versions": set(), "hashes": 0, "via_pqlab": False})
            current["versions"].add(Version(m.group(2)))
        elif current is not None and "--hash=sha256:" in line:
            current["hashes"] += 1
        elif current is not None and "pqlab (pyproject.toml)" in line:
            current["via_pqlab"] = True
    return locked


LOCK = parse_lock((ROOT / "requirements.lock").read_text())


def test_environment_names_only_pyprojects_dependencies_with_the_same_bounds():
    """environment.yml lists what conda-forge should provide (pyproject.toml's bound each); anything it leaves
    out comes from PyPI through its ``-e .`` line, so a new dependency (a new backend's library) is one line
    in pyproject.toml and the lock, and environment.yml changes only to take it from conda-forge."""
    conda, pip = environment_dependencies(), pyproject_dependencies()
    assert set(conda) <= set(pip), f"only in environment.yml: {sorted(set(conda) - set(pip))}"
    differ = {name: (str(conda[name].specifier), str(pip[name].specifier))
              for name in conda if conda[name].specifier != pip[name].specifier}
    assert not differ, f"lower bounds differ (environment.yml, pyproject.toml): {differ}"


def test_every_direct_dependency_is_locked_with_hashes_within_its_bounds():
    direct = locked_direct_dependencies()
    missing = sorted(set(direct) - set(LOCK))
    assert not missing, f"not in requirements.lock (run make lock): {missing}"
    outside = {name: sorted(map(str, LOCK[name]["versions"])) for name, req in direct.items()
               if not all(req.specifier.contains(v, prereleases=True) for v in LOCK[name]["versions"])}
    assert not outside, f"locked versions outside pyproject.toml's bounds (run make lock): {outside}"
    unhashed = sorted(name for name, entry in LOCK.items() if entry["hashes"] == 0)
    assert not unhashed, f"locked without hashes: {unhashed}"


def test_the_lock_was_made_from_this_pyproject():
    """A dependency dropped from pyproject.toml but still in the lock means the lock is stale."""
    names = set(requirements(declared()))
    from_pyproject = {name for name, entry in LOCK.items() if entry["via_pqlab"]}
    assert from_pyproject == names, (f"requirements.lock is stale (run make lock): only in the lock "
                                     f"{sorted(from_pyproject - names)}, only in pyproject.toml "
                                     f"{sorted(names - from_pyproject)}")


def test_parse_lock_reads_versions_markers_hashes_and_origin():
    text = ("numpy==2.4.6 ; python_full_version < '3.12' \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n"
            "    # via\n    #   pandas\n    #   pqlab (pyproject.toml)\n"
            "numpy==2.5.5 ; python_full_version >= '3.12' \\\n    --hash=sha256:cc\n    # via pandas\n"
            "six==1.17.0\n    # via rfc3339-validator\n")
    lock = parse_lock(text)
    assert lock["numpy"] == {"versions": {Version("2.4.6"), Version("2.5.5")}, "hashes": 3, "via_pqlab": True}
    assert lock["six"] == {"versions": {Version("1.17.0")}, "hashes": 0, "via_pqlab": False}


def test_environment_takes_liboqs_from_conda_forge_and_installs_pqlab():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    assert any(conda_name(d) == "liboqs" for d in env["dependencies"] if isinstance(d, str))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip
