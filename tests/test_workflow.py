"""The atlas CI matrix (.github/workflows/atlas.yml): what each job runs, and that .ci/run lints it."""
from __future__ import annotations

import re
import subprocess

import yaml

from pqlab.core.paths import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "atlas.yml"


def load():
    wf = yaml.safe_load(WORKFLOW.read_text())
    return wf, wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as true


def commands(job) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def uses(job) -> list[str]:
    return [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]


def test_runs_on_demand_and_weekly():
    _, on = load()
    assert "workflow_dispatch" in on
    [cron] = [s["cron"] for s in on["schedule"]]
    assert re.fullmatch(r"\d+ \d+ \* \* [0-6]", cron)  # once a week


def test_each_platform_measures_in_its_own_job_and_uploads_its_bundle():
    wf, _ = load()
    job = wf["jobs"]["measure"]
    assert set(job["strategy"]["matrix"]["runner"]) == {"ubuntu-24.04", "ubuntu-24.04-arm"}
    assert job["runs-on"] == "${{ matrix.runner }}" and job["strategy"]["fail-fast"] is False
    run = commands(job)
    order = [run.index(c) for c in ("make setup", "make reproduce PROFILE=quick",
                                    "-m pqlab bundle --profile quick")]
    assert order == sorted(order)
    assert "actions/upload-artifact" in uses(job)


def test_macos_is_left_out_with_the_reason_in_the_readme():
    wf, _ = load()
    assert not any("macos" in str(r) for r in wf["jobs"]["measure"]["strategy"]["matrix"]["runner"])
    readme = (ROOT / "README.md").read_text()
    assert "macOS is not in the matrix" in readme and "--version-script" in readme


def test_setup_stops_on_macos_with_the_reason(tmp_path):
    """The guard of the liboqs step, run with a `uname` that says Darwin (and, as a control, Linux)."""
    line = next(x for x in (ROOT / "Makefile").read_text().splitlines() if "Darwin" in x).strip().lstrip("@")
    for system, code in (("Darwin", 1), ("Linux", 0)):
        fake = tmp_path / system
        fake.mkdir()
        (fake / "uname").write_text(f"#!/bin/sh\necho {system}\n")
        (fake / "uname").chmod(0o755)
        proc = subprocess.run(["bash", "-c", line.replace("$$", "$")], capture_output=True, text=True,
                              env={"PATH": f"{fake}:/usr/bin:/bin"})
        assert proc.returncode == code
        if system == "Darwin":  # one line naming the problem and where the reason is written up
            assert (proc.stderr.startswith("error: native/ builds liboqs on Linux only")
                    and proc.stderr.count("\n") == 1)
        else:
            assert proc.stderr == ""


def test_the_last_job_merges_the_bundles_and_draws_the_atlas_without_measuring():
    wf, _ = load()
    job = wf["jobs"]["atlas"]
    assert job["needs"] == "measure" and "actions/download-artifact" in uses(job)
    run = commands(job)
    assert run.index("-m pqlab merge bundles/") < run.index("make build/quick/07_atlas.ipynb")
    make = next(line for line in run.splitlines() if "07_atlas.ipynb" in line)
    dry = subprocess.run(["bash", "-c", make.replace("make ", "make -n -B ", 1)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "-y '{local_builds: []}'" in dry and "notebooks/07_atlas.ipynb build/quick/07_atlas.ipynb" in dry
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert {"figures/07_atlas", "data/tables/07_atlas", "bundles"} <= set(upload["with"]["path"].split())


def test_ci_runs_a_pinned_actionlint_from_the_go_module_proxy():
    ci = (ROOT / ".ci" / "run").read_text()
    version = re.search(r"^ACTIONLINT_VERSION=(v\d+\.\d+\.\d+)$", ci, re.M)
    assert version and "go install \"github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION\"" in ci
    # before the long part
    assert ci.index("/actionlint\" .github/workflows/*.yml") < ci.index("\nmake test\n")
