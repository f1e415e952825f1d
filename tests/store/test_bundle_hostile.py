"""A bundle from a stranger is untrusted input (issue #27): hostile names, run ids that would hide other runs,
an impostor of this host, prefix collisions of run ids, rows that contradict their samples, size caps,
notebooks of other runs, malformed manifests, damaged files in the store, and concurrent merges."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import multiprocessing
import os
import socket
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
import test_bundle
from test_bundle import THIS_HOST, executed_notebook, members, refused, snapshot, write_tar
from test_results import make_run

from pqlab.app.cli import main
from pqlab.core.errors import BadInput, PqlabWarning
from pqlab.measure import machine
from pqlab.store import bundle
from pqlab.store.bundle import MANIFEST, RUN_PARTS, BundleError, create_bundle, merge_bundles, stored_runs
from pqlab.store.bundle_checks import estimate_problem
from pqlab.store.machines import run_hosts
from pqlab.store.results import load_run

MIB = 1 << 20
# the fixtures: a results folder of machine lab-a, and its bundle
lab, good = test_bundle.lab, test_bundle.good


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unpack(path) -> tuple[dict, dict[str, bytes]]:
    files = members(path)
    return json.loads(files.pop(MANIFEST)), files


def forge(path, manifest: dict, files: dict[str, bytes], *, listed: dict | None = None) -> Path:
    """A bundle of `files` whose manifest lists each with its true sha256 and size (or as `listed` says) and
    whose bundle_id matches: a hostile bundle that passes every checksum."""
    manifest = json.loads(json.dumps(manifest))
    manifest["files"] = {**{n: {"sha256": sha(d), "bytes": len(d)} for n, d in files.items()},
                         **(listed or {})}
    mid = manifest["machine"].get("machine_id") if isinstance(manifest.get("machine"), dict) else None
    manifest["bundle_id"] = bundle.bundle_id(mid, manifest["files"])
    write_tar(path, {MANIFEST: json.dumps(manifest).encode(), **files})
    return Path(path)


def renamed(manifest: dict, files: dict[str, bytes], old: str, new: str) -> tuple[dict, dict[str, bytes]]:
    """The bundle with run `old` renamed `new` everywhere (file names, its metadata, the manifest)."""
    manifest = json.loads(json.dumps(manifest))
    out = {}
    for name, data in files.items():
        for part in RUN_PARTS:
            if name == f"pqlab-bundle/runs/{old}{part}":
                name = f"pqlab-bundle/runs/{new}{part}"
                if part == ".meta.json":
                    data = json.dumps(dict(json.loads(data), run_id=new)).encode()
        out[name] = data
    for r in manifest["runs"]:
        if r["run_id"] == old:
            r["run_id"] = new
    return manifest, out


def refused_with(path, check, store, **kwargs) -> str:
    before = snapshot(store) if store.exists() else {}
    with pytest.raises(BundleError) as info:
        merge_bundles([path], folder=store, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{path}: {check} check failed: ") and "\n" not in message
    assert (snapshot(store) if store.exists() else {}) == before
    return message


# ----- 1. every identifier obeys the rule bench uses -----
HOSTILE = ["r\n1", "r}1", "r\\1", "<img>", "--help", "*", "a b", "..", ".hidden", "x/../y", "é"]


@pytest.mark.parametrize("run_id", HOSTILE, ids=repr)
def test_a_hostile_run_id_is_refused_before_anything_is_written(good, tmp_path, run_id):
    forged = forge(tmp_path / "bad.tar.gz", *renamed(*unpack(good), "r1", run_id))
    assert repr(run_id) in refused(forged, "name", tmp_path / "store")


def test_a_wildcard_run_id_cannot_import_files_of_no_run(good, tmp_path):
    manifest, files = renamed(*unpack(good), "r1", "*")
    files["pqlab-bundle/raw/05_energy/other-run/w0.csv"] = b"t_s,power_w\n"
    refused(forge(tmp_path / "star.tar.gz", manifest, files), "name", tmp_path / "store")
    assert not (tmp_path / "store" / "machines").exists()


def test_a_run_whose_metadata_names_another_run_is_refused(good, tmp_path):
    manifest, files = unpack(good)
    moved = {n.replace("/runs/r1.", "/runs/r9."): d for n, d in files.items()}  # files renamed, metadata not
    for r in manifest["runs"]:
        r["run_id"] = "r9" if r["run_id"] == "r1" else r["run_id"]
    assert "run r9's metadata names run 'r1'" in refused(forge(tmp_path / "m.tar.gz", manifest, moved),
                                                         "name", tmp_path / "store")


@pytest.mark.parametrize("field,value", [("machine_id", "evil\nid"), ("machine_id", "../x"),
                                         ("machine_id", "*"), ("machine_id", "--help"), ("host_id", "a\nb"),
                                         ("host_id", "<img>")])
def test_hostile_machine_and_host_ids_are_refused(good, tmp_path, field, value):
    manifest, files = unpack(good)
    manifest["machine"][field] = value
    assert repr(value) in refused(forge(tmp_path / "m.tar.gz", manifest, files), "name", tmp_path / "store")


def test_hostile_study_labels_are_refused_in_the_manifest_and_in_a_runs_metadata(good, tmp_path):
    manifest, files = unpack(good)
    manifest["runs"][0]["study"] = "x\n}"
    assert "study of run" in refused(forge(tmp_path / "s.tar.gz", manifest, files), "name",
                                     tmp_path / "store")
    manifest, files = unpack(good)
    name = "pqlab-bundle/runs/r1.meta.json"
    files[name] = json.dumps(dict(json.loads(files[name]), study="<img src=x>")).encode()
    assert "study of run r1" in refused(forge(tmp_path / "t.tar.gz", manifest, files), "name",
                                        tmp_path / "store")


@pytest.mark.parametrize("name", ["pqlab-bundle/raw/05 energy/r1/w0.csv", "pqlab-bundle/raw/*/r1/w0.csv",
                                  "pqlab-bundle/raw/05_energy/*/w0.csv",
                                  "pqlab-bundle/raw/05_energy/other/w0.csv",
                                  "pqlab-bundle/raw/05_energy/r1/a\nb.csv", "pqlab-bundle/raw/05_energy/r1",
                                  "pqlab-bundle/notebooks/quick/01 x.ipynb",
                                  "pqlab-bundle/notebooks/quick/<b>.ipynb",
                                  "pqlab-bundle/notebooks/evil/01_x.ipynb",
                                  "pqlab-bundle/notebooks/quick/01_x.html",
                                  "pqlab-bundle/runs/r1.extra.csv", "pqlab-bundle/other/r1.csv",
                                  "pqlab-bundle//runs/r1.csv"])
def test_hostile_raw_folders_and_notebook_names_are_refused(good, tmp_path, name):
    manifest, files = unpack(good)
    files[name] = b"x"
    refused(forge(tmp_path / "n.tar.gz", manifest, files), "name", tmp_path / "store")


# ----- 2. a run id names one run in the whole store -----
def test_a_run_id_already_held_by_another_machine_is_refused_so_no_run_is_hidden(lab, tmp_path, monkeypatch):
    store = tmp_path / "store"
    merge_bundles([create_bundle(tmp_path / "a.tar.gz", folder=lab)], folder=store)
    monkeypatch.setenv("PQLAB_MACHINE_ID", "0evil")
    evil = tmp_path / "evil"
    make_run("r1", scale=3.0, seed=5).save(evil)
    message = refused(create_bundle(tmp_path / "evil.tar.gz", folder=evil), "duplicate", store)
    assert f"run r1 is already in {store / 'machines' / 'lab-a'} with other content" in message
    assert [p.parent.name for p in stored_runs(store) if p.name == "r1.meta.json"] == ["lab-a"]


def test_a_run_id_of_this_machines_own_runs_is_refused(lab, tmp_path):
    store = tmp_path / "store"
    make_run("r1", scale=3.0, seed=5).save(store)  # one of the store's own runs
    assert f"run r1 is already in {store} with other content" in refused(
        create_bundle(tmp_path / "a.tar.gz", folder=lab), "duplicate", store)


def test_a_run_stored_twice_by_hand_is_named_when_the_store_is_listed(lab, tmp_path):
    store = tmp_path / "store"
    merge_bundles([create_bundle(tmp_path / "a.tar.gz", folder=lab)], folder=store)
    make_run("r1", scale=3.0, seed=5).save(store)
    with pytest.warns(PqlabWarning, match="run r1 is stored twice"):
        assert len(stored_runs(store)) == 2


# ----- 3. an impostor of this host -----
def test_a_bundle_with_this_hosts_machine_id_is_refused_unless_overridden(good, tmp_path, monkeypatch,
                                                                          capsys):
    # the real one: this host runs as lab-a (PQLAB_MACHINE_ID)
    monkeypatch.setattr(bundle, "this_host", THIS_HOST)
    manifest, files = unpack(good)
    manifest["machine"].update(hostname="evil-host", cpu={"model": "Evil CPU"})
    forged = forge(tmp_path / "impostor.tar.gz", manifest, files)
    store = tmp_path / "store"
    message = refused(forged, "machine", store)
    assert "it names this host (lab-a, host " in message and "by its machine_id 'lab-a'" in message
    assert f"{socket.gethostname()!r}, CPU {machine.cpu()['model']!r}" in message
    assert "no host proof that verifies here" in message and "override=True (CLI: --override)" in message
    assert main(["merge", str(forged), "--folder", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "machine check failed" in err
    assert main(["merge", str(forged), "--folder", str(store), "--override"]) == 0
    assert (sorted(p.name for p in (store / "machines" / "lab-a").glob("*.meta.json"))
            == ["r1.meta.json", "r2.meta.json"])
    # merged on the user's word, its runs stay the bundle's machine: its proof does not verify
    assert set(run_hosts(store).values()) == {"lab-a"}


# ----- 4. run ids that share a prefix -----
def test_an_identical_run_is_present_beside_a_run_whose_id_it_prefixes(lab, tmp_path):
    for i, run_id in enumerate(("a", "a.b")):
        make_run(run_id, seed=10 + i).save(lab)
    store = tmp_path / "store"
    merge_bundles([create_bundle(tmp_path / "1.tar.gz", folder=lab)], folder=store)
    only_a = tmp_path / "only-a"
    only_a.mkdir()
    for part in RUN_PARTS:
        (only_a / f"a{part}").write_bytes((lab / f"a{part}").read_bytes())
    [report] = merge_bundles([create_bundle(tmp_path / "2.tar.gz", folder=only_a)], folder=store)
    assert report["status"] == "nothing new" and report["present"] == ["a"]


# ----- 5. values that contradict their own samples -----
def test_a_row_whose_median_contradicts_its_samples_is_refused(lab, tmp_path):
    run = load_run(lab / "r1")
    run.measurements.loc[0, "time_ns_median"] *= 10
    run.save(lab)  # its checksums recorded anew: only the samples say otherwise
    message = refused(create_bundle(tmp_path / "edited.tar.gz", folder=lab), "values", tmp_path / "store")
    assert "run r1: the row 'AES-256-GCM cryptography encrypt 100' has time_ns_median" in message


def rounds_run(run_id: str):
    """A run whose row is made from rounds as bench makes it (benchmark.rounds_row), rounds centred apart."""
    from pqlab.backends.algorithms import get
    from pqlab.benchmark import rounds_row, sample_rows
    from pqlab.measure.timing import Samples
    from pqlab.store.recorder import RunRecorder

    rng = np.random.default_rng(1)
    rec = RunRecorder("test", save=False, run_id=run_id)
    algo = get("AES-256-GCM", "cryptography")
    results, samples = [], []
    # an even number of rounds, apart: pooled != over rounds
    for r, factor in enumerate((1.0, 1.05, 1.25, 1.3)):
        t = rng.normal(2000.0 * factor, 20.0, 41)
        results.append((r, {"time_ns": list(t), "cycles": list(t * 3), "loops": 4, "cycles_source": "tsc",
                            "flags": []}))
        samples += sample_rows(run_id, algo, "encrypt", 100,
                               Samples(time_ns=t, cycles=t * 3, loops=4, warmup_calls=1, cycles_source="tsc"),
                               round_index=r)
    rec.add([rounds_row(rec, algo, "encrypt", 100, results, 40.0, None)], [], samples)
    return rec.finish()


def test_rows_made_from_rounds_are_derived_over_rounds_and_an_edit_is_caught(tmp_path):
    run = rounds_run("rr")
    stored = run.measurements.loc[0, "time_ns_median"]
    pooled = float(np.median(run.samples["time_ns"]))
    assert abs(pooled - stored) / stored > 1e-4  # the pooled median would be the wrong estimator
    assert estimate_problem(load_run(run.save(tmp_path))) is None
    run.measurements.loc[0, "time_ns_median"] = stored * (1 + 1e-4)
    assert "time_ns_median" in estimate_problem(load_run(run.save(tmp_path)))


def test_rows_without_samples_are_skipped(tmp_path):
    run = make_run("bare")
    run.samples = run.samples.iloc[0:0]
    run.measurements.loc[0, "time_ns_median"] *= 10
    assert estimate_problem(load_run(run.save(tmp_path))) is None


# ----- 6. size caps -----
def test_a_member_larger_than_its_manifest_says_is_refused_before_it_is_extracted(good, tmp_path):
    manifest, files = unpack(good)
    name = "pqlab-bundle/runs/r1.sizes.csv"
    big = files[name][:10] + b"\0" * (8 * MIB)
    files = {name: big, **{n: d for n, d in files.items() if n != name}}
    forged = forge(tmp_path / "big.tar.gz", manifest, files,
                   listed={name: {"sha256": sha(big[:10]), "bytes": 10}})
    into = tmp_path / "into"
    with pytest.raises(BundleError, match=rf"size check failed: {name} is {len(big)} bytes in the archive, "
                                          "its manifest says 10"):
        bundle.read_bundle(forged, into)
    assert not (into / "runs" / "r1.sizes.csv").exists()
    refused(forged, "size", tmp_path / "store")


def test_the_caps_on_a_file_the_manifest_and_a_bundle_are_checked_before_extracting(good, tmp_path):
    manifest, files = unpack(good)
    store, sizes = tmp_path / "store", [len(d) for d in files.values()]
    message = refused_with(good, "size", store, max_manifest_bytes=1024)
    assert MANIFEST in message and "max_manifest_bytes=... (CLI: --max-manifest-mib N)" in message
    largest = max(files, key=lambda n: len(files[n]))
    assert largest in refused_with(good, "size", store, max_member_bytes=max(sizes) - 1)
    assert "the sum of its" in refused_with(good, "size", store, max_total_bytes=sum(sizes) - 1)
    into = tmp_path / "into"
    with pytest.raises(BundleError, match="size check failed"):
        bundle.read_bundle(good, into, limits=bundle.Limits(total=sum(sizes) - 1))
    assert not into.exists() or not [p for p in into.rglob("*") if p.is_file()]
    assert merge_bundles([good], folder=store, max_member_bytes=max(sizes), max_total_bytes=sum(sizes),
                         max_manifest_bytes=MIB)[0]["status"] == "imported"


def test_a_listed_notebook_over_the_cap_is_refused(lab, tmp_path):
    executed_notebook("quick", "01_x", runs=["r1", "r2"], size=300_000)
    out = create_bundle(tmp_path / "nb.tar.gz", folder=lab)
    _, files = unpack(out)
    cap = max(len(d) for n, d in files.items() if "/notebooks/" not in n)
    assert "notebooks/quick/01_x.ipynb" in refused_with(out, "size", tmp_path / "store", max_member_bytes=cap)


def test_an_archive_that_unpacks_beyond_what_its_manifest_declares_is_refused(good, tmp_path):
    manifest, files = unpack(good)
    path = tmp_path / "bomb.tar.gz"
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo(MANIFEST)
        # a header no listed file accounts for
        info.size, info.pax_headers = len(data), {"comment": "x" * (3 * MIB)}
        tar.addfile(info, io.BytesIO(data))
    assert "unpacks to more than" in refused_with(path, "size", tmp_path / "store", max_manifest_bytes=MIB)


def test_cli_caps_in_mib(good, tmp_path, capsys):
    store = tmp_path / "store"
    assert main(["merge", str(good), "--folder", str(store), "--max-member-mib", "0.001"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "size check failed" in err and "--max-member-mib" in err
    assert main(["merge", str(good), "--folder", str(store), "--max-member-mib", "1", "--max-total-mib", "4",
                 "--max-manifest-mib", "1"]) == 0


# ----- 7. notebooks of the bundled runs only -----
def test_bundle_packs_only_the_notebooks_of_its_runs(lab, tmp_path):
    def nb(stem):
        return f"pqlab-bundle/notebooks/quick/{stem}.ipynb"

    executed_notebook("quick", "01_mine", runs=["r1", "r2"])
    executed_notebook("quick", "02_other", runs=["r1", "someone-elses-run"])
    executed_notebook("quick", "03_running", runs=["r1"], finished=False)  # a reproduce still running
    executed_notebook("quick", "04_unlinked")  # no export and no run of its study
    run = make_run("s1", seed=7)
    run.meta["study"] = "05_study"
    run.save(lab)
    executed_notebook("quick", "05_study")  # no export: its study's runs, written after they started
    late = executed_notebook("quick", "06_study")
    os.utime(late, (1e9, 1e9))  # written before its runs started
    run = make_run("s2", seed=8)
    run.meta["study"] = "06_study-extra"
    run.save(lab)
    names = {n for n in members(create_bundle(tmp_path / "b.tar.gz", folder=lab)) if "/notebooks/" in n}
    assert names == {nb("01_mine"), nb("05_study")}


# ----- 8. malformed manifests -----
MALFORMED = {
    "override is a string": lambda m: m["machine"].update(override="yes"),
    "override lacks its host": lambda m: m["machine"].update(override={"variable": "PQLAB_MACHINE_ID",
                                                                       "value": "x"}),
    "host_id is a list": lambda m: m["machine"].update(host_id=["x"]),
    "machine_id is a number": lambda m: m["machine"].update(machine_id=5),
    "hostname is a number": lambda m: m["machine"].update(hostname=5),
    "cpu is a string": lambda m: m["machine"].update(cpu="fast"),
    "cpu model is a list": lambda m: m["machine"].update(cpu={"model": ["x"]}),
    "runs is an object": lambda m: m.update(runs={"r1": {}}),
    "a run's schema_version is a string": lambda m: m["runs"][0].update(schema_version="4"),
    "a run's status is a number": lambda m: m["runs"][0].update(status=5),
    "a run is listed twice": lambda m: m["runs"].append(dict(m["runs"][0])),
    "profile is unknown": lambda m: m.update(profile="fast"),
    "created_at is a number": lambda m: m.update(created_at=5),
    "libraries is a list": lambda m: m.update(libraries=[]),
    "commit is a string": lambda m: m.update(commit="abc"),
    "schema_versions are strings": lambda m: m.update(schema_versions=["4"]),
    "format_version is true": lambda m: m.update(format_version=True),
}


@pytest.mark.parametrize("edit", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_manifest_fields_are_refused_in_one_line(good, tmp_path, edit):
    manifest, files = unpack(good)
    edit(manifest)
    forged = forge(tmp_path / "m.tar.gz", manifest, files)
    with pytest.raises(BundleError) as info:
        merge_bundles([forged], folder=tmp_path / "store")
    assert str(info.value).startswith(f"{forged}: ") and "\n" not in str(info.value)
    assert not (tmp_path / "store" / "machines").exists()


@pytest.mark.parametrize("entry", [{"sha256": "zz", "bytes": 1}, {"sha256": "0" * 64, "bytes": "10"},
                                   {"sha256": "0" * 64, "bytes": -1}, {"sha256": "0" * 64, "bytes": True},
                                   "x"])
def test_malformed_file_entries_are_refused(good, tmp_path, entry):
    manifest, files = unpack(good)
    name = "pqlab-bundle/runs/r1.sizes.csv"
    refused(forge(tmp_path / "f.tar.gz", manifest, files, listed={name: entry}), "manifest",
            tmp_path / "store")


def test_cli_refuses_an_override_that_is_not_an_object_before_importing(good, tmp_path, capsys):
    manifest, files = unpack(good)
    manifest["machine"]["override"] = "yes"
    forged = forge(tmp_path / "o.tar.gz", manifest, files)
    assert main(["merge", str(forged), "--folder", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest check failed: its machine 'override' must be an object" in err
    assert not (tmp_path / "store" / "machines").exists()


# ----- 9. a damaged file in the store -----
def test_a_truncated_meta_file_is_left_out_with_a_warning_and_the_other_runs_bundle(lab, tmp_path, capsys):
    make_run("r3", seed=3).save(lab)
    meta = lab / "r3.meta.json"
    meta.write_text(meta.read_text()[:40])
    with pytest.warns(PqlabWarning, match=r"r3\.meta\.json is not readable JSON .*: left out; restore it"):
        out = create_bundle(tmp_path / "b.tar.gz", folder=lab)
    assert sorted(r["run_id"] for r in unpack(out)[0]["runs"]) == ["r1", "r2"]
    assert main(["bundle", "--folder", str(lab), "--out", str(tmp_path / "c.tar.gz")]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "r3.meta.json" in warnings[0]


def test_the_atlas_leaves_out_a_truncated_meta_file_with_a_warning(lab):
    from pqlab.studies import atlas

    (lab / "r2.meta.json").write_text('{"machine_id": "lab-a", "liboqs"')
    with pytest.warns(PqlabWarning, match=r"r2\.meta\.json is not readable JSON"):
        groups = atlas._measured_groups(lab)
    assert [p.name for runs in groups.values() for _, p, _ in runs] == ["r1.meta.json"]


def test_a_damaged_import_record_is_refused_naming_it(good, tmp_path):
    store = tmp_path / "store"
    [report] = merge_bundles([good], folder=store)
    record = store / "machines" / "lab-a" / "bundles" / f"{report['bundle_id']}.json"
    record.write_text(record.read_text()[:30])
    with pytest.raises(BadInput, match=rf"{record} is not a readable record of an imported bundle .*: "
                                       r"restore it"):
        merge_bundles([good], folder=store)


# ----- 10. concurrent merges -----
def _merge_in_child(path, store, barrier, queue) -> None:
    barrier.wait()
    try:
        [report] = merge_bundles([path], folder=store)
        queue.put((str(path), "imported", report["imported"]))
    except BundleError as exc:
        queue.put((str(path), "refused", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - reported to the test, not lost in a child
        queue.put((str(path), "error", repr(exc)))


def test_concurrent_merges_of_conflicting_bundles_lose_nothing(lab, tmp_path, monkeypatch):
    bundles = []
    # two runs r1 of the same machine, of one size
    for name, scale, seed in (("one", 1.0, 0), ("two", 2.0, 9)):
        make_run("r1", scale=scale, seed=seed).save(tmp_path / name)
        bundles.append(create_bundle(tmp_path / f"{name}.tar.gz", folder=tmp_path / name))
    listed = {str(p): unpack(p)[0]["files"] for p in bundles}
    real = bundle.atomic_write_text

    def slow(path, text, **kwargs):  # a wider window between planning and writing: two merges without a lock
        if str(path).endswith(".importing"):  # would both plan before either writes
            time.sleep(0.3)
        return real(path, text, **kwargs)

    monkeypatch.setattr(bundle, "atomic_write_text", slow)
    ctx = multiprocessing.get_context("fork")
    for trial in range(20):
        store = tmp_path / f"store{trial}"
        barrier, queue = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_merge_in_child, args=(p, store, barrier, queue)) for p in bundles]
        for p in procs:
            p.start()
        results = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=120)
        assert sorted(r[1] for r in results) == ["imported", "refused"], results
        [winner] = [r[0] for r in results if r[1] == "imported"]
        [refusal] = [r[2] for r in results if r[1] == "refused"]
        assert "duplicate check failed: run r1 is already in" in refusal
        for part in RUN_PARTS:
            stored = store / "machines" / "lab-a" / f"r1{part}"
            assert sha(stored.read_bytes()) == listed[winner][f"pqlab-bundle/runs/r1{part}"]["sha256"]
