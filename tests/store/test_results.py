"""The results store: save/load round trip, atomic writes under a simulated crash, merging and
comparing runs, schema versions; and bench() writing a complete run."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pqlab.backends.algorithms import get
from pqlab.benchmark import bench, measurement_row, sample_rows
from pqlab.core import paths
from pqlab.core.files import atomic_write
from pqlab.core.schema import MEASUREMENT_COLUMNS, SAMPLE_COLUMNS, SCHEMA_VERSION, SIZE_COLUMNS
from pqlab.measure.timing import Samples
from pqlab.store.recorder import RunRecorder
from pqlab.store.results import Run, compare_runs, load_run, load_runs


def make_run(run_id: str, scale: float = 1.0, seed: int = 0, hostname: str = "host-a", n: int = 200,
             classical_only: bool = False) -> Run:
    """A run of two measurements (AES-256-GCM encrypt at 100 B, ML-KEM-768 keygen) from synthetic samples."""
    rng = np.random.default_rng(seed)
    rec = RunRecorder("test", save=False, run_id=run_id, meta={"hostname": hostname})
    measurements, samples = [], []
    for (name, backend), op, size, centre in ((("AES-256-GCM", "cryptography"), "encrypt", 100, 2_000.0),
                                              (("ML-KEM-768", "liboqs"), "keygen", None, 30_000.0)):
        if classical_only and backend == "liboqs":
            continue
        algo = get(name, backend)
        t = rng.normal(centre * scale, centre * 0.02, n)
        s = Samples(time_ns=t, cycles=t * 3.0, loops=4, warmup_calls=10, cycles_source="tsc")
        measurements.append(measurement_row(rec, algo, op, size, s, overhead_ns=40.0))
        for r in range(8):  # the samples in 8 rounds, as bench stores them
            part = Samples(time_ns=t[r::8], cycles=t[r::8] * 3.0, loops=4, warmup_calls=10,
                           cycles_source="tsc")
            samples.extend(sample_rows(run_id, algo, op, size, part, round_index=r))
    rec.add(measurements, [get("ML-KEM-768").sizes()], samples)
    return rec.finish()


def leftovers(folder) -> list:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".")]


def test_frames_have_the_schema_columns_first():
    run = make_run("r1")
    assert list(run.measurements.columns[: len(MEASUREMENT_COLUMNS)]) == MEASUREMENT_COLUMNS
    assert list(run.sizes.columns[: len(SIZE_COLUMNS)]) == SIZE_COLUMNS
    assert list(run.samples.columns) == SAMPLE_COLUMNS


def test_save_load_round_trip(tmp_path):
    run = make_run("r1")
    meta_path = run.save(tmp_path)
    assert meta_path == tmp_path / "r1.meta.json"
    for part in ("measurements.csv", "sizes.csv", "samples.csv.gz", "meta.json"):
        assert (tmp_path / f"r1.{part}").exists()
    back = load_run(tmp_path / "r1")
    assert (back.run_id == "r1" and back.meta["schema_version"] == SCHEMA_VERSION
            and back.meta["run_id"] == "r1")
    assert back.meta["hostname"] == "host-a"
    m0, m1 = run.measurements, back.measurements
    assert list(m1.columns) == list(m0.columns) and len(m1) == len(m0) == 2
    for col in ("time_ns_median", "time_ns_q1", "time_ns_q3", "time_ns_ci_low", "cycles_median", "samples"):
        np.testing.assert_allclose(m1[col].astype(float), m0[col].astype(float))
    assert list(m1["algorithm"]) == ["AES-256-GCM", "ML-KEM-768"]
    assert m1["verified"].astype(bool).all()
    np.testing.assert_allclose(back.samples["time_ns"], run.samples["time_ns"])
    assert back.sizes.iloc[0]["public_key_bytes"] == 1184
    # any of the run's files, or the id inside the results folder, finds the same run
    assert load_run(tmp_path / "r1.measurements.csv").run_id == "r1"
    assert leftovers(tmp_path) == []


def test_load_run_by_id_uses_the_results_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    make_run("r7").save()
    assert (tmp_path / "r7.meta.json").exists()
    assert load_run("r7").run_id == "r7"
    with pytest.raises(FileNotFoundError, match="r7"):  # the message lists the runs that exist
        load_run("nope")


def test_atomic_write_keeps_the_old_file_when_the_writer_crashes(tmp_path):
    target = tmp_path / "table.csv"
    atomic_write(target, lambda tmp: open(tmp, "w").write("old,complete\n"))

    def crash(tmp):
        with open(tmp, "w") as fh:
            fh.write("new,half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, crash)
    assert target.read_text() == "old,complete\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]  # no temp file left


def test_run_save_interrupted_midway_leaves_the_previous_run_intact(tmp_path, monkeypatch):
    from pqlab.core import files

    first = make_run("r1")
    first.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    second = make_run("r1", scale=2.0, seed=5)

    def crashing_open(path, mode="r", *args, **kwargs):
        if str(path).endswith(".tmp") and "measurements" in str(path):
            with open(path, "w") as fh:
                fh.write("schema_version,run_id\n1,r1")  # half a file, then the process dies
            raise KeyboardInterrupt
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(files, "open", crashing_open, raising=False)
    with pytest.raises(KeyboardInterrupt):
        second.save(tmp_path)
    monkeypatch.undo()
    # no file replaced: temporaries first
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert leftovers(tmp_path) == []
    back = load_run(tmp_path / "r1")
    np.testing.assert_allclose(back.measurements["time_ns_median"], first.measurements["time_ns_median"])


def test_schema_version_mismatch_is_an_error(tmp_path):
    make_run("r1").save(tmp_path)
    meta_path = tmp_path / "r1.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["schema_version"] = SCHEMA_VERSION + 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="schema version"):
        load_run(tmp_path / "r1")


def test_load_runs_merges_runs_with_their_hostnames(tmp_path):
    make_run("r1", hostname="host-a").save(tmp_path)
    make_run("r2", scale=1.5, hostname="host-b").save(tmp_path)
    merged = load_runs(folder=tmp_path)
    assert len(merged) == 4
    assert sorted(merged["run_id"].unique()) == ["r1", "r2"]
    assert set(zip(merged["run_id"], merged["hostname"])) == {("r1", "host-a"), ("r2", "host-b")}
    assert len(load_runs([tmp_path / "r2"])) == 2
    assert load_runs(folder=tmp_path / "empty").empty


def test_compare_runs_flags_a_real_2x_difference(tmp_path):
    make_run("a", seed=1).save(tmp_path)
    make_run("b", scale=2.0, seed=2).save(tmp_path)
    df = compare_runs(tmp_path / "a", tmp_path / "b")
    assert len(df) == 2
    assert df["significant"].all()
    np.testing.assert_allclose(df["factor_b_over_a"], 2.0, rtol=0.02)
    assert (df["p_value"] < 1e-10).all()
    assert df["verdict"].str.startswith("slower by 2.0").all()
    back = compare_runs(tmp_path / "b", tmp_path / "a")
    assert back["verdict"].str.startswith("faster by 2.0").all()


def test_compare_runs_does_not_flag_identical_distributions(tmp_path):
    make_run("a", seed=1).save(tmp_path)
    make_run("b", seed=2).save(tmp_path)  # same distribution, other draws
    make_run("c", seed=1).save(tmp_path)  # the very same samples
    for other in ("b", "c"):
        df = compare_runs(tmp_path / "a", tmp_path / other)
        assert len(df) == 2 and not df["significant"].any()
        assert df["verdict"].eq("no significant difference").all()
        np.testing.assert_allclose(df["factor_b_over_a"], 1.0, rtol=0.01)
    assert compare_runs(tmp_path / "a", tmp_path / "c")["p_value"].eq(1.0).all()


@pytest.mark.filterwarnings("error")
def test_compare_runs_of_loaded_classical_runs_is_warning_free(tmp_path):
    make_run("a", seed=1, classical_only=True).save(tmp_path)
    make_run("b", seed=2, classical_only=True).save(tmp_path)
    assert len(compare_runs(tmp_path / "a", tmp_path / "b")) == 1


def test_compare_runs_in_memory_matches_loaded():
    a, b = make_run("a", seed=1), make_run("b", scale=2.0, seed=2)
    df = compare_runs(a, b)
    assert len(df) == 2 and df["significant"].all()
    keygen = df[df["operation"] == "keygen"].iloc[0]
    assert pd.isna(keygen["message_bytes"])  # no message size for keygen: empty, not -1


def test_bench_saves_a_complete_run(tmp_path):
    run = bench(["AES-256-GCM@pycryptodome"], operations=["encrypt", "decrypt"], message_bytes=[16, 64],
                budget_s=0.02, folder=tmp_path, progress=False, study="unit")
    back = load_run(tmp_path / run.run_id)
    m = back.measurements
    assert back.meta["status"] == "complete" and back.meta["params"]["budget_s"] == 0.02
    assert back.meta["harness_overhead_ns"] > 0
    assert list(m["operation"]) == ["noop", "encrypt", "encrypt", "decrypt", "decrypt"]
    timed = m[m["operation"] != "noop"]
    assert list(timed["message_bytes"]) == [16, 64, 16, 64]
    assert timed["verified"].astype(bool).all() and (timed["samples"] >= 5).all()
    fed = timed["operation"] == "encrypt"  # a fresh message every call: the no-op fed the same way
    assert (timed.loc[fed, "overhead_ns"] == back.meta["harness_fed_ns"]).all()
    assert (timed.loc[~fed, "overhead_ns"] == back.meta["harness_overhead_ns"]).all()
    assert (timed["time_ns_q1"] <= timed["time_ns_q3"]).all()
    # the estimate is the median of the rounds' medians, inside its interval over rounds
    assert ((timed["time_ns_ci_low"] <= timed["time_ns_median"]).all()
            and (timed["time_ns_median"] <= timed["time_ns_ci_high"]).all())
    s = back.samples[back.samples["operation"] != "noop"]
    per_round = (s.groupby(["operation", "message_bytes", "round"])["time_ns"].median()
                 .groupby(["operation", "message_bytes"]))
    low, high = per_round.min(), per_round.max()
    for r in timed.itertuples():
        assert low[(r.operation, r.message_bytes)] <= r.time_ns_median <= high[(r.operation, r.message_bytes)]
    assert (timed["rounds"] >= 6).all() and set(s["round"]) >= set(range(6))
    counts = s.groupby(["operation", "message_bytes"]).size()
    assert dict(counts) == {(op, size): n for op, size, n in
                            zip(timed["operation"], timed["message_bytes"], timed["samples"])}
    assert set(back.meta) >= {"machine_id", "cpu", "packages", "git", "params_hash", "liboqs"}
    assert leftovers(tmp_path) == []


# ----- the recorder, typed frames, schema 1, compare -----
def test_recorder_checkpoints_and_marks_interruptions(tmp_path):
    rec = RunRecorder("t", {"x": 1}, folder=tmp_path)
    with pytest.raises(KeyboardInterrupt), rec:
        assert json.loads((tmp_path / f"{rec.run_id}.meta.json").read_text())["status"] == "running"
        rec.add(measurements=[rec.row(get("Ed25519"), operation="sign", samples=3, verified=True)])
        rec.checkpoint()
        raise KeyboardInterrupt
    back = load_run(tmp_path / rec.run_id)
    assert back.meta["status"] == "interrupted" and len(back.measurements) == 1
    row = back.measurements.iloc[0]
    assert row["started_at"] == back.meta["started_at"] and row["machine_id"] == back.meta["machine_id"]
    assert row["kind"] == "sig" and row["study"] == "t"
    assert back.meta["implementations"] == {"Ed25519@cryptography": get("Ed25519").implementation}
    assert rec.run.meta["run_id"] == rec.run_id  # in memory too (the run context names its runs)
    with pytest.raises(ValueError), RunRecorder("t", folder=tmp_path) as failing:
        raise ValueError("boom")
    assert load_run(tmp_path / failing.run_id).meta["status"] == "failed"
    assert "boom" in load_run(tmp_path / failing.run_id).meta["error"]


def test_loaded_frames_are_typed(tmp_path):
    make_run("r1").save(tmp_path)
    back = load_run(tmp_path / "r1")
    m = back.measurements
    assert m["verified"].dtype == bool and str(m["message_bytes"].dtype) == "Int64"
    assert str(back.sizes["public_key_bytes"].dtype) == "Int64"
    assert back.sizes["public_key_bytes"].iloc[0] == 1184  # an exact integer, never 1.184e+03
    assert list(back.verified()["operation"]) == ["encrypt", "keygen"]


def test_schema_1_runs_are_converted_on_load(tmp_path):
    run = make_run("old")
    run.save(tmp_path)
    meta = json.loads((tmp_path / "old.meta.json").read_text())
    meta["schema_version"] = 1
    del meta["files"]  # schema-1 runs recorded no checksums
    (tmp_path / "old.meta.json").write_text(json.dumps(meta))
    m = pd.read_csv(tmp_path / "old.measurements.csv").drop(columns=["kind", "cycles_mean", "time_ns_mean"])
    m["schema_version"] = 1
    m["cycles_source"] = ["estimate:time-x-2600MHz", "perf_event_open:cpu-cycles:user"]
    m["flags"] = ["cycles-estimated:no PMU", "few-samples"]
    m.to_csv(tmp_path / "old.measurements.csv", index=False)
    back = load_run(tmp_path / "old")
    assert (back.meta["converted_from_schema"] == 1
            and (back.measurements["schema_version"] == SCHEMA_VERSION).all())
    enc, keygen = back.measurements.iloc[0], back.measurements.iloc[1]
    # an estimate is not kept as cycles
    assert pd.isna(enc["cycles_median"]) and enc["cycles_source"] == "none"
    assert (enc["flags"] == "no-cycles:no PMU;no-rounds:measured before rounds (schema < 4)"
            and enc["kind"] == "cipher")
    assert keygen["cycles_source"] == "core-cycles" and keygen["kind"] == "kem"


def test_a_schema_5_run_keeps_its_round_noise_under_todays_name(tmp_path):
    """Schema 6: "rounds" means a number of rounds; the noise of each round is meta["round_noise"]."""
    run = make_run("five")
    run.save(tmp_path)
    meta = json.loads((tmp_path / "five.meta.json").read_text())
    noise = [{"round": 0, "busy": "", "scalar_ns": 1e6, "vector_ns": 1e6}]
    meta = {**{k: v for k, v in meta.items() if k != "round_noise"}, "schema_version": 5, "rounds": noise}
    (tmp_path / "five.meta.json").write_text(json.dumps(meta))
    m = pd.read_csv(tmp_path / "five.measurements.csv")
    m["schema_version"] = 5
    m.to_csv(tmp_path / "five.measurements.csv", index=False)
    back = load_run(tmp_path / "five", verify=False)
    assert back.meta["round_noise"] == noise and "rounds" not in back.meta
    assert back.meta["converted_from_schema"] == 5


def test_compare_refuses_runs_of_different_machines_and_names_the_difference():
    a, b = make_run("a"), make_run("b")
    b.meta = dict(b.meta, machine_id="elsewhere")
    with pytest.raises(ValueError, match=r"differ in machine \(.* vs elsewhere\).*allow_different"):
        compare_runs(a, b)
    out = compare_runs(a, b, allow_different=True)
    assert out.attrs["differences"][0].startswith("machine") and not out.empty


def test_a_one_percent_difference_is_not_called_slower():
    out = compare_runs(make_run("a", n=5000), make_run("b", scale=1.01, seed=1, n=5000))
    assert (out["p_value"] < 0.01).all()  # significant with this many samples ...
    assert not out["significant"].any() and set(out["verdict"]) == {"differs by less than 1.05x"}


def test_compare_uses_the_rows_medians_when_loop_counts_differ_and_says_so():
    a, b = make_run("a"), make_run("b", scale=2.0, seed=3)
    b.measurements["loops"] = 1
    out = compare_runs(a, b)
    assert set(out["statistic"]) == {"median"} and not out["equal_loops"].any() and out["significant"].all()
    assert out["factor_ci_low"].min() > 1.9


def test_a_schema_2_run_without_any_counted_row_converts(tmp_path):
    """A schema-2 JVM run has no cycles at all: its empty cycles_source column is read as float, and the
    conversion to schema 3 still labels its timed rows 'none' (it used to fail with a dtype error)."""
    import pandas as pd

    from pqlab.core.schema import SCHEMA_VERSION, convert

    m = pd.DataFrame({"time_ns_median": [3457.0, None], "cycles_source": [float("nan"), float("nan")],
                      "schema_version": [2, 2]})
    out, sizes, _ = convert(m, pd.DataFrame({"schema_version": [2]}), None, 2)
    assert out["cycles_source"].tolist()[0] == "none" and pd.isna(out["cycles_source"].tolist()[1])
    assert set(out["schema_version"]) == set(sizes["schema_version"]) == {SCHEMA_VERSION}


def test_the_recorder_types_only_new_rows_and_its_table_is_that_of_all_rows():
    """Each checkpoint types the rows added since the last one and appends them.  The table equals typing all
    rows at once, also where new rows bring a column or a dtype the table did not have (an extra column
    appearing, then ints, then floats in it, then missing)."""
    from pandas.testing import assert_frame_equal

    from pqlab.core.schema import typed

    rec = RunRecorder("t", save=False)
    batches = [[{"algorithm": "A", "operation": "sign", "time_ns_median": 5.0, "samples": 3}],
               [{"algorithm": "B", "operation": "verify", "time_ns_median": 7.5, "samples": 4,
                 "verified": True}],
               [{"algorithm": "C", "operation": "keygen", "note": 1}],            # a column not in the schema
               [{"algorithm": "D", "operation": "keygen", "note": 2}],
               [{"algorithm": "E", "operation": "keygen", "note": 2.5}],          # int then float
               [{"algorithm": "F", "operation": "sign", "time_ns_median": None}]]  # the extra column missing
    for rows in batches:
        rec.add(measurements=rows)
        rec.checkpoint()
        assert_frame_equal(rec.run.measurements, typed(pd.DataFrame(rec.measurements), "measurements"))
    assert list(rec.run.measurements["algorithm"]) == list("ABCDEF")
