"""environment.yml (conda) and pyproject.toml (pip) must name the same direct dependencies."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Only in environment.yml: the interpreter, the C library pip cannot provide, pip itself.
CONDA_ONLY = {"python", "liboqs", "pip"}


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[;]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def pyproject_dependencies() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {_name(d) for d in data["project"]["dependencies"]}


def environment_dependencies() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            names |= {_name(d) for d in dep.get("pip", []) if not d.startswith("-e")}
        else:
            names.add(_name(dep))
    return names - CONDA_ONLY


def test_environment_and_pyproject_name_the_same_dependencies():
    conda, pip = environment_dependencies(), pyproject_dependencies()
    assert conda == pip, f"only in environment.yml: {sorted(conda - pip)}; only in pyproject.toml: {sorted(pip - conda)}"


def test_environment_takes_liboqs_from_conda_forge_and_installs_pqlab():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    assert any(_name(d) == "liboqs" for d in env["dependencies"] if isinstance(d, str))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip
