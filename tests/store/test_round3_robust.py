"""Issue #46, round 3 of the bundles: a run id is unique across the whole results store, for a new run as for
a merge (D10); the memory cache takes any unusable entry for a miss and replaces it (D13); every count has an
upper bound (D14, the Python API)."""
from __future__ import annotations

import json
import os
import warnings

import pytest

from pqlab.core import inputs
from pqlab.core.errors import BadInput, PqlabWarning
from pqlab.runners.memory import cache
from pqlab.store.recorder import LOCK_SUFFIX, RunRecorder, reserve_run_id


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """A fallback save goes under tmp_path, never into the user's real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- D10: run ids across the store


def held_by_a_merged_machine(store, run_id="seq1"):
    (store / "machines" / "m1").mkdir(parents=True)
    (store / "machines" / "m1" / f"{run_id}.meta.json").write_text(json.dumps({"run_id": run_id}))
    return store / "machines" / "m1"


def test_a_run_id_a_merged_machine_holds_is_refused_before_anything_runs(tmp_path):
    where = held_by_a_merged_machine(tmp_path)
    with pytest.raises(BadInput) as refused:
        RunRecorder("t", {}, folder=tmp_path, run_id="seq1", liboqs=False)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"run id 'seq1' exists already in {where}: ")
    assert "--run-id" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["machines"]  # nothing saved, no reservation left
    assert not list(tmp_path.glob(f"*{LOCK_SUFFIX}"))
    fd = reserve_run_id(tmp_path, "seq2")  # another id is free
    assert fd is not None
    os.close(fd)


def test_a_run_id_of_an_interrupted_import_is_refused(tmp_path):
    record = tmp_path / "machines" / "m1" / "bundles" / "b1.importing"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"runs": [{"run_id": "seq1"}]}))
    with pytest.raises(BadInput, match=r"run id 'seq1' exists already in an import not yet complete"):
        reserve_run_id(tmp_path, "seq1")


def test_a_run_of_the_folder_itself_is_still_refused(tmp_path):
    with RunRecorder("t", {}, folder=tmp_path, run_id="mine", liboqs=False):
        pass
    with pytest.raises(BadInput, match=f"run id 'mine' exists already in {tmp_path}: choose a new one"):
        RunRecorder("t", {}, folder=tmp_path, run_id="mine", liboqs=False)


# --------------------------------------------------------------------------- D13: the memory cache

PARTS = {"algorithm": "ML-DSA-44", "operation": "sign"}


def warnings_of(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, PqlabWarning)]


@pytest.mark.parametrize("damage", ["deep JSON", "a folder", "not UTF-8", "a symbolic link"])
def test_any_unusable_memory_cache_entry_is_a_miss_said_once_and_replaced(tmp_path, damage):
    store = cache.MemoryCache(tmp_path / "memory", fresh=False)
    key = cache.cache_key({**PARTS, "damage": damage})
    path = store._path(key)
    path.parent.mkdir(parents=True)
    if damage == "deep JSON":
        path.write_text("[" * 100_000)
    elif damage == "a folder":
        (path / "inside").mkdir(parents=True)
        (path / "inside" / "x").write_text("x")
    elif damage == "not UTF-8":
        path.write_bytes(b"\xff\xfe{")
    else:
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text("{}")
        path.symlink_to(elsewhere)
    entry, said = warnings_of(lambda: store.get(key))
    assert entry is None and len(said) == 1, said
    assert "\n" not in said[0] and said[0].startswith(f"memory cache entry {path} ")
    assert said[0].endswith(": measuring it again")
    assert warnings_of(lambda: store.get(key)) == (None, [])  # once per entry and process
    store.put(key, PARTS, {"peak_heap_bytes": 1234}, "r2")
    assert path.is_file() and not path.is_symlink()
    if damage == "a symbolic link":
        assert (tmp_path / "elsewhere.json").read_text() == "{}"  # never written through
    entry, said = warnings_of(lambda: store.get(key))
    assert said == [] and entry["run_id"] == "r2" and entry["value"] == {"peak_heap_bytes": 1234}


def test_a_cache_key_that_is_no_sha256_never_names_a_path_outside_the_root(tmp_path):
    with pytest.raises(ValueError, match="is not a sha256 in hex"):
        cache.MemoryCache(tmp_path / "memory", fresh=False).put("../../x", PARTS, {}, "r")


# --------------------------------------------------------------------------- D14: counts have an upper bound


@pytest.mark.parametrize("call, line", [
    (lambda: inputs.round_counts(99999999999999999999, None),
     f"rounds must be a whole number from {inputs.MIN_ROUNDS} to {inputs.MAX_ROUND_COUNT}, "
     "got 99999999999999999999"),
    (lambda: inputs.round_counts(6, inputs.MAX_ROUND_COUNT + 1),
     f"max_rounds must be a whole number from 1 to {inputs.MAX_ROUND_COUNT}, "
     f"got {inputs.MAX_ROUND_COUNT + 1}"),
    (lambda: inputs.sample_bounds(10**20, 10**20),
     f"min_samples must be a whole number from 1 to {inputs.MAX_SAMPLES}, got {10**20}"),
    (lambda: inputs.sample_bounds(5, inputs.MAX_SAMPLES + 1),
     f"max_samples must be a whole number from 1 to {inputs.MAX_SAMPLES}, got {inputs.MAX_SAMPLES + 1}"),
])
def test_counts_above_their_bound_are_refused_in_one_line(call, line):
    with pytest.raises(BadInput) as refused:
        call()
    assert str(refused.value) == line


def test_the_default_max_rounds_stays_within_the_bound():
    assert inputs.round_counts(inputs.MAX_ROUND_COUNT, None) == (inputs.MAX_ROUND_COUNT,) * 2
    assert inputs.round_counts(6, None) == (6, 18)


def test_bench_refuses_endless_rounds_before_anything_runs(tmp_path):
    from pqlab.benchmark import bench  # pandas and the backends: only this test needs them

    with pytest.raises(BadInput, match=f"from {inputs.MIN_ROUNDS} to {inputs.MAX_ROUND_COUNT}"):
        bench(["AES-256-GCM@pycryptodome"], rounds=10**20, folder=tmp_path, progress=False)
    assert not list(tmp_path.glob("*.meta.json"))
