"""Bundles: this machine's runs packed, verified and merged elsewhere (round trip, refusals, idempotence,
schema conversion, identity overrides)."""
from __future__ import annotations

import gzip
import io
import json
import tarfile

import pandas as pd
import pytest
from test_results import make_run

from pqlab.app.cli import main
from pqlab.core import paths
from pqlab.core.schema import SCHEMA_VERSION
from pqlab.measure import machine
from pqlab.store import bundle
from pqlab.store.bundle import MANIFEST, BundleError, create_bundle, merge_bundles, stored_runs
from pqlab.store.results import load_run

#: the host that merges, in these tests: another machine than the one whose runs are bundled ("lab-a")
RECEIVER = {"machine_id": "lab-z", "hostname": "receiver", "cpu": "Receiver CPU"}
THIS_HOST = bundle.this_host


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A results folder with two runs recorded under the identity override "lab-a"; raw, build and export
    folders of its own (nothing of the checkout is packed); merges happen on another host (RECEIVER)."""
    monkeypatch.setenv("PQLAB_MACHINE_ID", "lab-a")
    monkeypatch.delenv("PQLAB_PROFILE", raising=False)
    monkeypatch.setattr(paths, "RAW", tmp_path / "raw")
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    monkeypatch.setattr(paths, "OUTPUT", tmp_path / "output")
    monkeypatch.setattr(bundle, "this_host", lambda: dict(RECEIVER))
    folder = tmp_path / "a"
    for i, run_id in enumerate(("r1", "r2")):
        make_run(run_id, seed=i).save(folder)
    return folder


def snapshot(folder):
    return {p.relative_to(folder): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))
            if p.is_file()}


def members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def write_tar(path, files: dict[str, bytes]) -> None:
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def executed_notebook(profile: str, stem: str, *, runs=None, finished: bool = True, size: int = 0):
    """build/<profile>/<stem>.ipynb as papermill leaves it (finished: an end time; else still running), and,
    with `runs`, an export of its topic that records those runs."""
    path = paths.BUILD / profile / f"{stem}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    papermill = {"start_time": "2026-01-01T00:00:00+00:00",
                 "end_time": "2026-01-01T00:01:00+00:00" if finished else None, "exception": None}
    path.write_text(json.dumps({"cells": [], "metadata": {"papermill": papermill}, "padding": "x" * size}))
    if runs is not None:
        sidecar = paths.export_root(profile, paths.OUTPUT) / "data" / "tables" / stem / "t.export.json"
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        sidecar.write_text(json.dumps({"profile": profile, "runs": list(runs)}))
    return path


def assert_same_frames(a, b):
    for part in ("measurements", "sizes", "samples"):
        pd.testing.assert_frame_equal(getattr(a, part), getattr(b, part))


# ----- round trip -----
def test_bundle_then_merge_into_a_fresh_folder_gives_identical_frames(lab, tmp_path):
    out = create_bundle(tmp_path / "lab-a.tar.gz", folder=lab)
    reports = merge_bundles([out], folder=tmp_path / "fresh")
    assert [r["status"] for r in reports] == ["imported"] and sorted(reports[0]["imported"]) == ["r1", "r2"]
    for run_id in ("r1", "r2"):
        original, merged = (load_run(lab / run_id),
                            load_run(tmp_path / "fresh" / "machines" / "lab-a" / run_id))
        assert_same_frames(original, merged)
        assert merged.meta == original.meta
    assert {p.name for p in stored_runs(tmp_path / "fresh")} == {"r1.meta.json", "r2.meta.json"}


def test_the_manifest_records_machine_override_libraries_commit_and_checksums(lab, tmp_path):
    out = create_bundle(tmp_path / "b.tar.gz", folder=lab)
    files = members(out)
    assert next(iter(files)) == MANIFEST  # the manifest comes first
    manifest = json.loads(files[MANIFEST])
    assert manifest["format"] == "pqlab-bundle" and manifest["format_version"] == bundle.FORMAT_VERSION
    m = manifest["machine"]
    assert m["machine_id"] == "lab-a" and m["host_id"] == machine.host_id()
    assert m["override"] == {"variable": "PQLAB_MACHINE_ID", "value": "lab-a", "host_id": machine.host_id()}
    assert m["cpu"]["model"] and m["counter"]["label"] and "frequency" in m and m["arch"]
    assert manifest["libraries"]["packages"]["pandas"] == pd.__version__
    assert manifest["libraries"]["liboqs"][0]["liboqs_version"]
    assert "commit" in manifest["commit"] and manifest["schema_versions"] == [SCHEMA_VERSION]
    assert {r["run_id"] for r in manifest["runs"]} == {"r1", "r2"}
    import hashlib
    for name, data in files.items():
        if name != MANIFEST:
            assert manifest["files"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    # every run recorded the override too
    assert load_run(lab / "r1").meta["machine_id_override"]["value"] == "lab-a"


def test_the_same_runs_bundled_twice_give_the_same_bundle_id(lab, tmp_path):
    a, b = (json.loads(members(create_bundle(tmp_path / f"{n}.tar.gz", folder=lab))[MANIFEST]) for n in "ab")
    assert a["bundle_id"] == b["bundle_id"]


def test_bundle_packs_raw_traces_and_executed_notebooks_and_merge_imports_them(lab, tmp_path):
    (paths.RAW / "05_energy" / "r1").mkdir(parents=True)
    (paths.RAW / "05_energy" / "r1" / "w0.csv").write_text("t_s,power_w\n0,1\n")
    (paths.RAW / "05_energy" / "other-run").mkdir(parents=True)  # another run's traces stay out
    (paths.RAW / "05_energy" / "other-run" / "w0.csv").write_text("t_s,power_w\n")
    executed_notebook("quick", "01_x", runs=["r1"])
    out = create_bundle(tmp_path / "b.tar.gz", folder=lab)
    names = set(members(out))
    assert ("pqlab-bundle/raw/05_energy/r1/w0.csv" in names
            and "pqlab-bundle/notebooks/quick/01_x.ipynb" in names)
    assert not any("other-run" in n for n in names)
    assert "pqlab-bundle/notebooks/quick/01_x.ipynb" not in members(
        create_bundle(tmp_path / "c.tar.gz", folder=lab, notebooks=False))
    [report] = merge_bundles([out], folder=tmp_path / "fresh")
    target = tmp_path / "fresh" / "machines" / "lab-a"
    assert (target / "raw" / "05_energy" / "r1" / "w0.csv").read_text() == "t_s,power_w\n0,1\n"
    assert (target / "notebooks" / report["bundle_id"] / "quick" / "01_x.ipynb").exists()


def test_profile_selects_the_runs_of_make_reproduce_profile(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("PQLAB_PROFILE", "quick")
    make_run("q1").save(lab)
    assert load_run(lab / "q1").meta["profile"] == "quick" and load_run(lab / "r1").meta["profile"] is None
    manifest = json.loads(members(create_bundle(tmp_path / "q.tar.gz", profile="quick",
                                                folder=lab))[MANIFEST])
    assert [r["run_id"] for r in manifest["runs"]] == ["q1"] and manifest["profile"] == "quick"
    with pytest.raises(ValueError, match="no runs of machine lab-a with profile full "
                                         ".*make reproduce PROFILE=full"):
        create_bundle(tmp_path / "f.tar.gz", profile="full", folder=lab)


def test_bundle_packs_only_this_machines_runs(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("PQLAB_MACHINE_ID", "lab-b")
    with pytest.raises(ValueError, match=r"no runs of machine lab-b .*runs there are from: lab-a"):
        create_bundle(tmp_path / "b.tar.gz", folder=lab)
    make_run("b1").save(lab)
    manifest = json.loads(members(create_bundle(tmp_path / "b.tar.gz", folder=lab))[MANIFEST])
    assert [r["run_id"] for r in manifest["runs"]] == ["b1"]


# ----- identities -----
def test_machine_id_override_is_checked_and_recorded(monkeypatch):
    monkeypatch.delenv("PQLAB_MACHINE_ID", raising=False)
    own = machine.machine_id()
    assert own == machine.host_id() and machine.collect(liboqs=False)["machine_id_override"] is None
    monkeypatch.setenv("PQLAB_MACHINE_ID", "pi4-lab")
    meta = machine.collect(liboqs=False)
    assert meta["machine_id"] == "pi4-lab"
    assert meta["machine_id_override"] == {"variable": "PQLAB_MACHINE_ID", "value": "pi4-lab", "host_id": own}
    for bad in ("", "../up", "a b", "x" * 81):
        monkeypatch.setenv("PQLAB_MACHINE_ID", bad)
        with pytest.raises(ValueError, match="PQLAB_MACHINE_ID=.* is not a usable machine id: use"):
            machine.machine_id()


def test_cli_refuses_a_bad_machine_id_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PQLAB_MACHINE_ID", "../../etc")
    assert main(["bundle", "--folder", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PQLAB_MACHINE_ID='../../etc' is not a usable machine id" in err


def test_a_machine_id_used_by_another_host_is_refused(lab, tmp_path, monkeypatch):
    first = create_bundle(tmp_path / "1.tar.gz", folder=lab)
    merge_bundles([first], folder=tmp_path / "store")
    monkeypatch.setattr(machine, "host_id", lambda: "another-host")
    other = tmp_path / "other"
    make_run("x1").save(other)
    second = create_bundle(tmp_path / "2.tar.gz", folder=other)
    with pytest.raises(BundleError, match=r"2\.tar\.gz: machine check failed: machine id 'lab-a' already "
                                          r"holds runs of another host"):
        merge_bundles([second], folder=tmp_path / "store")


# ----- refusals -----
@pytest.fixture
def good(lab, tmp_path):
    return create_bundle(tmp_path / "good.tar.gz", folder=lab)


def refused(path, check, store):
    before = snapshot(store) if store.exists() else {}
    with pytest.raises(BundleError) as info:
        merge_bundles([path], folder=store)
    message = str(info.value)
    assert message.startswith(f"{path}: {check} check failed: ") and "\n" not in message
    assert (snapshot(store) if store.exists() else {}) == before  # nothing written
    return message


def test_a_tampered_file_is_refused_by_its_checksum(good, tmp_path):
    files = members(good)
    name = next(n for n in files if n.endswith("r1.measurements.csv"))
    files[name] = files[name].replace(b"ML-KEM-768", b"ML-KEM-512")
    write_tar(tmp_path / "tampered.tar.gz", files)
    assert name in refused(tmp_path / "tampered.tar.gz", "checksum", tmp_path / "store")


def test_a_truncated_archive_is_refused(good, tmp_path):
    data = good.read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) // 2])
    assert "truncated" in refused(tmp_path / "cut.tar.gz", "archive", tmp_path / "store")


def test_corrupt_bytes_are_refused(good, tmp_path):
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "flip.tar.gz").write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"flip\.tar\.gz: (archive|checksum) check failed"):
        merge_bundles([tmp_path / "flip.tar.gz"], folder=tmp_path / "store")


def test_foreign_archives_are_refused(tmp_path):
    write_tar(tmp_path / "foreign.tar.gz", {"data/table.csv": b"a,b\n1,2\n"})
    assert "foreign archive" in refused(tmp_path / "foreign.tar.gz", "manifest", tmp_path / "store")
    write_tar(tmp_path / "other.tar.gz", {MANIFEST: json.dumps({"format": "something-else"}).encode()})
    assert "not a pqlab-bundle manifest" in refused(tmp_path / "other.tar.gz", "manifest", tmp_path / "store")
    (tmp_path / "notes.txt").write_text("not an archive at all\n")
    refused(tmp_path / "notes.txt", "archive", tmp_path / "store")
    refused(tmp_path / "missing.tar.gz", "archive", tmp_path / "store")


def test_missing_extra_and_escaping_members_are_refused(good, tmp_path):
    files = members(good)
    dropped = next(n for n in files if n.endswith("r2.sizes.csv"))
    write_tar(tmp_path / "short.tar.gz", {k: v for k, v in files.items() if k != dropped})
    assert dropped in refused(tmp_path / "short.tar.gz", "completeness", tmp_path / "store")
    write_tar(tmp_path / "extra.tar.gz", {**files, "pqlab-bundle/runs/evil.csv": b"x"})
    assert "not listed in the manifest" in refused(tmp_path / "extra.tar.gz", "member", tmp_path / "store")
    write_tar(tmp_path / "escape.tar.gz", {**files, "pqlab-bundle/../../escape.txt": b"x"})
    refused(tmp_path / "escape.tar.gz", "member", tmp_path / "store")
    assert not (tmp_path / "escape.txt").exists()


def test_an_edited_manifest_is_refused(good, tmp_path):
    files = members(good)
    manifest = json.loads(files[MANIFEST])
    manifest["machine"]["machine_id"] = "someone-else"
    write_tar(tmp_path / "edited.tar.gz", {**files, MANIFEST: json.dumps(manifest).encode()})
    assert "bundle_id does not match" in refused(tmp_path / "edited.tar.gz", "manifest", tmp_path / "store")
    manifest = json.loads(files[MANIFEST])
    manifest["format_version"] = bundle.FORMAT_VERSION + 1
    write_tar(tmp_path / "newer.tar.gz", {**files, MANIFEST: json.dumps(manifest).encode()})
    assert "update pqlab" in refused(tmp_path / "newer.tar.gz", "format", tmp_path / "store")


def test_a_run_of_a_newer_schema_is_refused(lab, tmp_path):
    meta = json.loads((lab / "r1.meta.json").read_text())
    (lab / "r1.meta.json").write_text(json.dumps(dict(meta, schema_version=SCHEMA_VERSION + 1)))
    out = create_bundle(tmp_path / "newer.tar.gz", folder=lab)
    assert "run r1 has schema version" in refused(out, "schema", tmp_path / "store")


def test_a_run_damaged_before_it_was_bundled_is_refused_by_its_own_checksums(lab, tmp_path):
    path = lab / "r2.samples.csv.gz"
    path.write_bytes(path.read_bytes()[:-20])  # cut in the results store, then bundled as it is
    out = create_bundle(tmp_path / "damaged.tar.gz", folder=lab)
    assert "run r2 cannot be read" in refused(out, "run", tmp_path / "store")


def test_cli_merge_names_the_file_and_check_in_one_line(tmp_path, capsys):
    (tmp_path / "x.tar.gz").write_bytes(b"\x1f\x8b garbage")
    assert main(["merge", str(tmp_path / "x.tar.gz"), "--folder", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'x.tar.gz'}: archive check failed") and err.count("\n") == 1


# ----- duplicates, idempotence, conversion -----
def test_importing_the_same_bundle_twice_changes_nothing(good, tmp_path, capsys):
    store = tmp_path / "store"
    assert main(["merge", str(good), "--folder", str(store)]) == 0
    before = snapshot(store)
    assert main(["merge", str(good), "--folder", str(store)]) == 0
    assert "already imported" in capsys.readouterr().out.splitlines()[-1]
    assert snapshot(store) == before


def test_runs_already_present_are_not_duplicated_and_conflicts_are_refused(lab, tmp_path):
    first = create_bundle(tmp_path / "1.tar.gz", folder=lab)
    make_run("r3", seed=3).save(lab)
    second = create_bundle(tmp_path / "2.tar.gz", folder=lab)  # r1, r2 again and r3
    store = tmp_path / "store"
    reports = merge_bundles([first, second], folder=store)
    assert reports[1]["imported"] == ["r3"] and sorted(reports[1]["present"]) == ["r1", "r2"]
    assert len(list((store / "machines" / "lab-a").glob("*.meta.json"))) == 3
    # the same run id with other content: refused, nothing written
    make_run("r1", scale=2.0, seed=9).save(lab)
    conflicting = create_bundle(tmp_path / "3.tar.gz", folder=lab)
    assert "run r1 is already in" in refused(conflicting, "duplicate", store)
    fresh = tmp_path / "fresh"
    with pytest.raises(BundleError, match="duplicate check failed: run r1"):
        merge_bundles([first, conflicting], folder=fresh)
    assert not fresh.exists() or not list(fresh.rglob("*.meta.json"))


def test_an_older_schema_is_converted_on_import(lab, tmp_path):
    old = tmp_path / "old"
    make_run("old1").save(old)
    meta = json.loads((old / "old1.meta.json").read_text())
    meta.pop("files", None)  # schema-1 runs recorded no checksums of their files
    (old / "old1.meta.json").write_text(json.dumps(dict(meta, schema_version=1)))
    m = pd.read_csv(old / "old1.measurements.csv").drop(columns=["kind", "cycles_mean", "time_ns_mean"])
    m["schema_version"] = 1
    m["cycles_source"] = ["estimate:time-x-2600MHz", "perf_event_open:cpu-cycles:user"]
    m["flags"] = ["cycles-estimated:no PMU", "few-samples"]
    m.to_csv(old / "old1.measurements.csv", index=False)
    older, newer = (create_bundle(tmp_path / "old.tar.gz", folder=old),
                    create_bundle(tmp_path / "new.tar.gz", folder=lab))
    assert json.loads(members(older)[MANIFEST])["schema_versions"] == [1]
    store = tmp_path / "store"
    reports = merge_bundles([older, newer], folder=store)  # the same machine, two schema versions
    assert reports[0]["converted"] == ["old1"] and reports[1]["converted"] == []
    target = store / "machines" / "lab-a"
    stored = pd.read_csv(target / "old1.measurements.csv")
    # converted in the file itself
    assert set(stored["schema_version"]) == {SCHEMA_VERSION} and "kind" in stored
    back = load_run(target / "old1")
    assert back.meta["schema_version"] == SCHEMA_VERSION and back.meta["converted_from_schema"] == 1
    assert back.measurements.iloc[1]["cycles_source"] == "core-cycles"
    assert_same_frames(back, load_run(old / "old1"))  # what loading the old run gives, now stored
    assert merge_bundles([older], folder=store)[0]["status"] == "already imported"


def test_an_interrupted_import_completes_when_merged_again(good, tmp_path, monkeypatch):
    store = tmp_path / "store"
    real = bundle.shutil.copyfile
    calls = []

    def crash(src, dst):
        calls.append(src)
        if len(calls) == 5:  # the second run's first file
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(bundle.shutil, "copyfile", crash)
    with pytest.raises(KeyboardInterrupt):
        merge_bundles([good], folder=store)
    monkeypatch.setattr(bundle.shutil, "copyfile", real)
    target = store / "machines" / "lab-a"
    # staged, nothing in place: the store shows no run of the bundle
    assert stored_runs(store) == [] and list((target / "bundles").glob("*.importing"))
    [report] = merge_bundles([good], folder=store)
    assert report["status"] == "imported" and report["present"] == [] and len(report["imported"]) == 2
    assert not (target / bundle.STAGING).exists()
    assert (not list((target / "bundles").glob("*.importing"))
            and len(list((target / "bundles").glob("*.json"))) == 1)
    assert merge_bundles([good], folder=store)[0]["status"] == "already imported"
