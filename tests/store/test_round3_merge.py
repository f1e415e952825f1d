"""Bundles, round 3 (issue #46): a bundle cannot pose as this host (D1), an id with a trailing newline is no
id (D2), and a merge is atomic per bundle: interrupted anywhere, it shows nothing, and merged again it leaves
the store as one clean merge does (D9)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import test_bundle
from test_bundle import RECEIVER, snapshot
from test_bundle_hostile import forge, unpack
from test_results import make_run

from pqlab.core import paths
from pqlab.core.errors import BadInput
from pqlab.measure import machine
from pqlab.store import bundle, identity
from pqlab.store.bundle import BundleError, create_bundle, merge_bundles, stored_runs
from pqlab.store.machines import held_run_ids, run_hosts

lab, good = test_bundle.lab, test_bundle.good
ROOT = paths.ROOT


@pytest.fixture
def own(tmp_path, monkeypatch):
    """A run recorded here under this host's own id, and its bundle (with this host's proof); merges see
    this host as it is."""
    monkeypatch.delenv("PQLAB_MACHINE_ID", raising=False)
    monkeypatch.setenv("PQLAB_HOST_KEY", str(tmp_path / "host.key"))
    monkeypatch.setattr(paths, "RAW", tmp_path / "raw")
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    folder = tmp_path / "here"
    make_run("mine").save(folder)
    return create_bundle(tmp_path / "own.tar.gz", folder=folder)


def posing(tmp_path, own, **machine_fields):
    """This host's bundle made to pose as another machine: its machine id `pi4-lab`, an identity override of
    this host, a later start and every time x100 (the samples with their medians, so they agree), checksums
    and bundle id made again (D1)."""
    manifest, files = unpack(own)
    host = machine.host_id()
    override = {"variable": "PQLAB_MACHINE_ID", "value": "pi4-lab", "host_id": host}
    manifest["machine"].update(machine_id="pi4-lab", host_id=host, override=override, **machine_fields)
    run = "pqlab-bundle/runs/mine"
    meta = json.loads(files[f"{run}.meta.json"])
    meta.update(machine_id="pi4-lab", machine_id_override=override, started_at="2099-01-01T00:00:00+00:00")
    forged = make_run("mine", scale=100.0)
    forged.meta = meta
    folder = tmp_path / "forged"
    forged.save(folder)
    for part in bundle.RUN_PARTS:
        files[f"{run}{part}"] = (folder / f"mine{part}").read_bytes()
    meta = json.loads(files[f"{run}.meta.json"])
    meta["machine_id"] = "pi4-lab"
    files[f"{run}.meta.json"] = json.dumps(meta).encode()
    return forge(tmp_path / "posing.tar.gz", manifest, files)


def test_a_bundle_posing_as_this_host_is_refused_with_the_evidence(own, tmp_path):
    store = tmp_path / "store"
    forged = posing(tmp_path, own)
    with pytest.raises(BundleError) as info:
        merge_bundles([forged], folder=store)
    message = str(info.value)
    assert "\n" not in message and "machine check failed: it names this host" in message
    assert f"its identity override's host '{machine.host_id()}'" in message
    assert "no host proof that verifies here" in message and not list(store.rglob("*"))


def test_a_bundle_posing_as_this_host_merged_on_the_users_word_stays_its_machine(own, tmp_path):
    store = tmp_path / "store"
    make_run("real").save(store)
    [report] = merge_bundles([posing(tmp_path, own)], folder=store, override=True)
    assert report["host"] == "machine pi4-lab"
    hosts = {p.name: v for p, v in run_hosts(store).items()}
    assert hosts == {"real.meta.json": None, "mine.meta.json": "pi4-lab"}


def _wide(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@pytest.mark.parametrize("spelling", [
    lambda h: {"machine_id": h["host_id"].upper()},                      # case
    lambda h: {"machine_id": f"{h['host_id']}+generic-build"},           # a local identity of this host
    lambda h: {"override": {"value": "x", "host_id": f" {h['host_id']} "}},  # whitespace
    lambda h: {"hostname": f" {h['hostname'].upper()} ", "cpu": {"model": h["cpu"]}},  # what host_id hashes
    lambda h: {"hostname": _wide(h["hostname"]), "cpu": {"model": h["cpu"]}},  # NFKC: full-width letters
])
def test_every_spelling_of_this_host_is_a_claim(spelling):
    here = bundle.this_host()
    manifest = {"machine": {"machine_id": "elsewhere", "host_id": "elsewhere", **spelling(here)}}
    assert identity.claims(manifest, {}, here)
    assert identity.claims({"machine": {"machine_id": "elsewhere"}}, {"r1": spelling(here)}, here)
    assert not identity.claims({"machine": {"machine_id": "elsewhere", "hostname": here["hostname"]}}, {},
                               here)


def test_a_bundle_made_here_verifies_and_an_edit_of_any_signed_field_breaks_its_proof(own):
    manifest, _ = unpack(own)
    assert identity.verifies(manifest)
    for edit in ({"machine": {**manifest["machine"], "cpu": {"model": "x"}}},
                 {"runs": manifest["runs"][:0]}, {"files": {}}, {"host_proof": "0" * 64}):
        assert not identity.verifies({**manifest, **edit}), edit


def test_a_bundle_made_here_merged_with_override_counts_as_this_host(own, tmp_path):
    store = tmp_path / "store"
    with pytest.raises(BundleError, match="its host proof verifies: it was packed on this host"):
        merge_bundles([own], folder=store)
    [report] = merge_bundles([own], folder=store, override=True)
    assert report["host"] == "this host (its host proof verifies)"
    assert list(run_hosts(store).values()) == [None]


def test_an_id_with_a_trailing_newline_is_no_id(monkeypatch):
    for bad in ("mymachine\n", "mymachine\r\n", " mymachine", "my\u00e9machine", "m\u202e1"):
        with pytest.raises(BadInput, match="is not a usable machine id"):
            machine.check_machine_id(bad)
    monkeypatch.setenv("PQLAB_MACHINE_ID", "mymachine\n")
    with pytest.raises(BadInput, match=r"PQLAB_MACHINE_ID='mymachine\\n' is not a usable machine id"):
        machine.machine_id()


def test_a_bundle_whose_machine_id_ends_in_a_newline_is_refused(good, tmp_path):
    manifest, files = unpack(good)
    manifest["machine"]["machine_id"] = f"{RECEIVER['machine_id']}\n"
    with pytest.raises(BundleError, match=r"name check failed: machine_id='lab-z\\n' is not a usable"):
        merge_bundles([forge(tmp_path / "nl.tar.gz", manifest, files)], folder=tmp_path / "store")
    assert not list((tmp_path / "store").rglob("*"))


# ----- D9: one bundle, all or nothing -----
@pytest.fixture
def heavy(tmp_path, monkeypatch):
    """A bundle of two runs with raw traces (4 x 8 MiB) made here under the identity lab-h, and the store one
    clean merge of it gives."""
    monkeypatch.setenv("PQLAB_MACHINE_ID", "lab-h")
    monkeypatch.setenv("PQLAB_HOST_KEY", str(tmp_path / "host.key"))
    monkeypatch.setattr(paths, "RAW", tmp_path / "raw")
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    folder = tmp_path / "lab"
    for i, run_id in enumerate(("h1", "h2")):
        make_run(run_id, seed=i).save(folder)
        for k in range(2):
            trace = tmp_path / "raw" / "05_energy" / run_id / f"trace{k}.bin"
            trace.parent.mkdir(parents=True, exist_ok=True)
            trace.write_bytes(os.urandom(8 << 20))
    path = create_bundle(tmp_path / "heavy.tar.gz", folder=folder)
    clean = tmp_path / "clean"
    merge_bundles([path], folder=clean, override=True)
    return path, {k: v for k, (v, _) in snapshot(clean).items()}


def _merge_cli(path, store, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pqlab", "merge", str(path), "--folder", str(store),
                             "--override"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _importing(store) -> bool:
    return any(store.glob("machines/*/bundles/*.importing"))


def _import_begins(proc, store, timeout: float = 60.0) -> float:
    """Seconds from now until the merge process starts importing (its record ``.importing`` appears)."""
    started = time.monotonic()
    while not _importing(store) and proc.poll() is None and time.monotonic() - started < timeout:
        time.sleep(0.002)
    return time.monotonic() - started


@pytest.mark.slow
def test_twenty_interrupted_merges_then_merged_again_equal_one_clean_merge(heavy, tmp_path):
    path, clean = heavy
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    timed = tmp_path / "timed"
    proc = _merge_cli(path, timed, env)
    _import_begins(proc, timed)
    began = time.monotonic()
    while _importing(timed):
        time.sleep(0.002)
    importing = time.monotonic() - began  # how long the import itself takes here, now
    assert proc.wait(120) == 0
    rng = random.Random(46)
    outcomes = []
    for trial in range(20):
        store = tmp_path / f"trial{trial}"
        proc = _merge_cli(path, store, env)
        # a signal at a random point of the import (the verifying before it writes nothing)
        _import_begins(proc, store)
        time.sleep(rng.uniform(0, importing))
        proc.send_signal(rng.choice([signal.SIGTERM, signal.SIGINT, signal.SIGKILL]))
        proc.wait(60)
        # whatever the moment: the bundle's runs are all shown, or none
        shown = {p.name for p in stored_runs(store)} if store.exists() else set()
        assert shown in (set(), {"h1.meta.json", "h2.meta.json"}), (trial, shown)
        outcomes.append(len(shown))
        merge_bundles([path], folder=store, override=True)
        assert {k: v for k, (v, _) in snapshot(store).items()} == clean, trial
        assert held_run_ids(store) == {"h1", "h2"}
    assert outcomes.count(0) >= 5, outcomes  # most signals landed inside the import
