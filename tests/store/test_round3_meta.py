"""Issue #46, D3 and D11: a run's metadata has a schema (pqlab.store.meta_schema), checked on merge, that
keeps every reader of the store (context, atlas, conformance) from raising; times, cycles, sizes and energy
have plausible ranges (pqlab.core.schema.plausible_range), refused on merge and made missing on load."""
from __future__ import annotations

import copy
import json
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import test_bundle
from test_bundle import refused
from test_bundle_hostile import forge, unpack
from test_results import make_run

from pqlab.checks import conformance
from pqlab.core.errors import PqlabWarning
from pqlab.core.schema import PLAUSIBLE, convert_meta, plausible_range, range_text
from pqlab.measure.stats import machine_spread
from pqlab.publish import context
from pqlab.store.bundle import create_bundle, merge_bundles
from pqlab.store.meta_schema import META, Either, Items, Mapping, Record, meta_problem
from pqlab.store.results import load_run
from pqlab.studies.atlas import platforms

# the fixtures: a results folder of machine lab-a (PQLAB_MACHINE_ID, not this host's id), and its bundle
lab, good = test_bundle.lab, test_bundle.good

#: the issue's variants: each merged with exit 0, then broke build_atlas on every call
BROKEN = [("counter.hz", "fast"), ("cpu", "a string"), ("liboqs", "str"), ("machine_id_override", "yes"),
          ("packages", [1, 2]), ("liboqs.build_config", "x"), ("frequency.scaling_max_freq", "x"),
          ("cpu.model", "x" * (1 << 20))]
#: variants a reader must show: a long CPU model that is still a CPU model's length
FINE = [("cpu.model", "Intel(R) Xeon(R) " + "x" * 283)]
LIBOQS = {"liboqs_version": "0.13.0", "build": "liboqs-0.13.0", "options": "default",
          "build_config": {"OQS_DIST_BUILD": "1", "OQS_OPT_TARGET": "generic"}, "cpu_extensions": ["AVX2"]}
ROUND = {"round": 0, "pid": 7, "steal": 0.0, "others_cores": 0.01, "busy": "", "reference_shift": "",
         "scalar_ns": 1.7e6, "scalar_start_ns": 1.7e6, "scalar_end_ns": 1.71e6, "vector_ns": 9.1e5,
         "vector_start_ns": 9.2e5, "vector_end_ns": 9.1e5,
         "protection": {"cpu": 0, "nice": -5, "refused": ""}}
RECORD = {"status": "non-conforming", "ran": 4, "passed": 3, "failed": 1, "failures": {"accepts invalid": 1},
          "implementation": "x 1", "why_not": ""}


def base_meta() -> dict:
    """A run's metadata as pqlab writes it (machine.collect on this host, the recorder's fields), with what
    runners add: liboqs, rounds' noise, a conformance record, an identity override."""
    meta = json.loads(json.dumps(make_run("r1").meta))
    meta.update(liboqs=LIBOQS, round_noise=[ROUND, dict(ROUND, round=1, busy="steal", scalar_ns=1.9e6)],
                conformance={"ML-KEM-768@liboqs": RECORD}, allowed_nonconforming=["ML-KEM-768@liboqs"],
                machine_id_override={"variable": "PQLAB_MACHINE_ID", "value": "lab-a", "host_id": "abc"},
                frequency={"available": True, "scaling_governor": "performance",
                           "scaling_max_freq": "3500000", "boost": "off"})
    return meta


def with_field(meta: dict, path: str, value) -> dict:
    out = copy.deepcopy(meta)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    node[last] = value
    return out


def read_everything(meta: dict, folder) -> None:
    """Every reader of a stored run's metadata the atlas, the context and the report use, on `meta`."""
    version = meta.get("schema_version")
    meta = convert_meta(meta, version if isinstance(version, int) else 0)
    run = SimpleNamespace(meta=meta, run_id="r1", measurements=pd.DataFrame({"rounds": [2, 2]}))
    for text in (context.counter_text, context.frequency_text, context.liboqs_text, context.git_text):
        assert isinstance(text(meta), str)
    context.context_line([run]), context.run_context([run]), context.caveats([run])
    context.noise_text([run]), context.context_markdown([run])
    platforms.cpu_features_text(meta.get("liboqs") or {})
    conformance.records_of([run]), conformance.caveat([run])
    conformance.with_conformance(pd.DataFrame({"algorithm": ["ML-KEM-768"], "backend": ["liboqs"],
                                               "flags": [""]}), [run])
    values = SimpleNamespace(attrs={"round_noise": {"r1": meta.get("round_noise") or []}})
    for ratio in (False, True):  # what widens an interval over rounds by the machine's drift
        machine_spread(values, [("r1", 0), ("r1", 1)], ratio)
    # the atlas's platform row, from the store as the atlas reads it
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "r1.meta.json").write_text(json.dumps(meta))
    groups = platforms._measured_groups(folder)
    for key, runs in groups.items():
        platforms._platform_row(key, [m for _, _, m in runs], "this-host")


# ----- D3: the schema -----
@pytest.mark.parametrize(("path", "value"), BROKEN, ids=[p for p, _ in BROKEN])
def test_each_variant_of_the_issue_is_named_by_its_field(path, value):
    assert meta_problem(base_meta()) is None
    problem = meta_problem(with_field(base_meta(), path, value))
    assert problem is not None and problem.startswith(f"{path} ") and "\n" not in problem
    assert len(problem) < 200  # a 1 MB value is not repeated


def test_the_messages_say_what_the_field_must_be():
    assert meta_problem(with_field(base_meta(), "counter.hz", "fast")) == \
        "counter.hz must be a number, not str ('fast')"
    assert meta_problem(with_field(base_meta(), "packages", [1, 2])) == \
        "packages must be an object, not list ([1, 2])"
    assert meta_problem(with_field(base_meta(), "cpu.model", "x" * 513)) == \
        "cpu.model is 513 characters long, over the cap of 512"
    assert meta_problem(with_field(base_meta(), "counter.hz", 1e300)) == \
        "counter.hz must be a number in (0, 1e+11], not 1e+300"
    assert meta_problem(with_field(base_meta(), "machine_id_override", {"variable": "V"})) == \
        "machine_id_override.value is missing"
    assert meta_problem(with_field(base_meta(), "round_noise", [{"scalar_ns": 1}])) == \
        "round_noise[0].round is missing"
    assert meta_problem(with_field(base_meta(), "packages", {"a\nb": 1})) == \
        "packages['a\\nb'] must be a string, not int (1)"


def test_fields_it_does_not_declare_are_allowed_but_bounded():
    assert meta_problem(with_field(base_meta(), "a_study_record", {"x": [1, "y", None, {"z": 2.5}]})) is None
    assert meta_problem(with_field(base_meta(), "a_study_record", {"x": float("nan")})) == \
        "a_study_record.x must be a finite number, not nan"
    deep: list = []
    for _ in range(40):
        deep = [deep]
    assert "nested deeper than" in meta_problem(with_field(base_meta(), "a_study_record", deep))
    assert "over the cap" in meta_problem(with_field(base_meta(), "a_study_record", "x" * (1 << 20)))


@pytest.mark.parametrize(("path", "value"), FINE, ids=[p for p, _ in FINE])
def test_a_variant_that_passes_is_shown_by_every_reader(path, value, tmp_path):
    meta = with_field(base_meta(), path, value)
    assert meta_problem(meta) is None
    read_everything(meta, tmp_path / "store")


def _declared(spec, path=()):
    """Every declared field's path (a list's first entry, an object's first key)."""
    if isinstance(spec, Either):
        for option in spec.options:
            yield from _declared(option, path)
    elif isinstance(spec, Record):
        for key, field in spec.fields.items():
            yield (*path, key)
            yield from _declared(field, (*path, key))
    elif isinstance(spec, (Mapping, Items)):
        inner = spec.value if isinstance(spec, Mapping) else spec.item
        yield (*path, None)
        yield from _declared(inner, (*path, None))


def _put(meta: dict, path: tuple, value) -> dict | None:
    """`meta` with `value` at `path` (None: the first entry of a list or object, made where missing)."""
    node = meta
    for i, key in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, list):
            if not node:
                node.append({})
            key = 0
        elif isinstance(node, dict):
            key = next(iter(node), "k") if key is None else key
        else:
            return None
        if last:
            node[key] = value
        else:
            if not isinstance(node[key] if (isinstance(node, list) or key in node) else None, (dict, list)):
                node[key] = {}
            node = node[key]
    return meta


CANDIDATES = ["x", "", "3500000", "x" * 300, 0, -1, 1.5, 1e300, True, None, [], ["x"], [1, 2], {}, {"a": 1},
              {"a": "b"}, {"OQS_DIST_BUILD": "1"}, [{"round": 0, "scalar_ns": 5.0, "vector_ns": 5.0}],
              {"status": "conforms", "ran": 3, "failures": {}},
              {"variable": "V", "value": "v", "host_id": "h"},
              {"round": 1, "protection": {"cpu": 1, "nice": 0, "refused": "x"}}]


@pytest.mark.slow
def test_no_reader_raises_on_any_metadata_the_schema_passes(tmp_path):
    """Every declared field set to values of every JSON type: each variant the schema passes, every reader
    shows (a variant it refuses is left out of the store by machines.stored_meta)."""
    base, shown, refused_ = base_meta(), 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in _declared(META):
            for value in CANDIDATES:
                meta = _put(copy.deepcopy(base), path, value)
                if meta is None:
                    continue
                if meta_problem(meta) is not None:
                    refused_ += 1
                    continue
                shown += 1
                try:
                    read_everything(meta, tmp_path / f"v{shown}")
                except Exception as exc:  # noqa: BLE001 - named below
                    pytest.fail(f"{'.'.join(map(str, path))} = {value!r:.40}: {type(exc).__name__}: {exc}")
    assert shown > 500 and refused_ > 500


def test_every_stored_run_of_this_checkout_passes():
    from pqlab.core import paths
    from pqlab.store.machines import stored_runs

    metas = stored_runs(paths.RESULTS) if paths.RESULTS.exists() else []
    problems = {p.name: meta_problem(json.loads(p.read_text())) for p in metas}
    assert {k: v for k, v in problems.items() if v} == {}


@pytest.mark.parametrize(("path", "value"), BROKEN, ids=[p for p, _ in BROKEN])
def test_a_bundle_with_each_variant_is_refused_by_merge_naming_the_field(good, tmp_path, path, value):
    manifest, files = unpack(good)
    name = "pqlab-bundle/runs/r1.meta.json"
    files[name] = json.dumps(with_field(json.loads(files[name]), path, value)).encode()
    message = refused(forge(tmp_path / "bad.tar.gz", manifest, files), "metadata", tmp_path / "store")
    assert f"metadata check failed: run r1: {path} " in message and len(message) < 400


def test_a_long_cpu_model_that_passes_is_merged(good, tmp_path):
    manifest, files = unpack(good)
    name = "pqlab-bundle/runs/r1.meta.json"
    files[name] = json.dumps(with_field(json.loads(files[name]), *FINE[0])).encode()
    [report] = merge_bundles([forge(tmp_path / "long.tar.gz", manifest, files)], folder=tmp_path / "store")
    assert sorted(report["imported"]) == ["r1", "r2"]


# ----- D11: plausible ranges -----
def test_the_ranges_are_stated_once_in_the_schema_by_unit():
    assert plausible_range("time_ns_median") == (1e-3, PLAUSIBLE["ns"].high)
    assert plausible_range("time_ns") == (0.0, PLAUSIBLE["ns"].high)  # one reading may be 0
    assert plausible_range("client_cpu_ns_median")[0] > 0 and plausible_range("cycles_median")[1] == 1e15
    assert plausible_range("public_key_bytes") == (0.0, 2.0 ** 40) == plausible_range("bytes_c1")
    assert plausible_range("energy_uj") == (-1e12, 1e12)  # a megajoule, net of the idle baseline
    assert plausible_range("algorithm") is None and plausible_range("time_ns_rel_ci") is None
    assert range_text("time_ns_median") == "[0.001, 8.64e+13] ns"


def edited(run, value: float):
    """`run` with its first row's samples and median all `value`: they agree with each other."""
    row = run.measurements.iloc[0]
    mine = ((run.samples["algorithm"] == row["algorithm"]) & (run.samples["operation"] == row["operation"]))
    run.samples.loc[mine, "time_ns"] = value
    run.measurements.loc[0, "time_ns_median"] = value
    return run


@pytest.mark.parametrize("value", [-1e300, 0.0, math.inf, 1e300], ids=repr)
def test_samples_and_medians_out_of_range_that_agree_are_refused_by_merge(lab, tmp_path, value):
    edited(load_run(lab / "r1"), value).save(lab)  # its checksums recorded anew
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PqlabWarning)
        message = refused(create_bundle(tmp_path / "e.tar.gz", folder=lab), "values", tmp_path / "store")
    assert (f"values check failed: run r1: its measurements, row 1: time_ns_median is {value:g}, outside its "
            f"plausible range {range_text('time_ns_median')}") in message


@pytest.mark.parametrize("value", [-1e300, 0.0, math.inf, 1e300], ids=repr)
def test_a_local_run_out_of_range_loads_with_one_warning_and_missing_values(tmp_path, value):
    edited(make_run("r1"), value).save(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = load_run(tmp_path / "r1")
    said = [str(w.message) for w in caught if issubclass(w.category, PqlabWarning)]
    assert len(said) == 1 and said[0].startswith("run r1: values out of their plausible range made missing: ")
    assert f"in time_ns_median of its measurements (row 1: {value:g}, outside " in said[0]
    assert math.isnan(run.measurements.loc[0, "time_ns_median"])
    assert np.isfinite(run.measurements.loc[1, "time_ns_median"])
    times = run.samples["time_ns"]
    assert (times.isna().sum() == 0 if value == 0 else times.isna().sum() > 0)  # one reading may be 0
    assert np.nanmax(times) < PLAUSIBLE["ns"].high and np.nanmin(times) >= 0
    assert run.implausible[("measurements", "time_ns_median")][0] == 1


def test_sizes_and_counts_beyond_their_range_load_as_missing_instead_of_raising(tmp_path):
    run = make_run("r1")
    run.sizes.loc[0, "public_key_bytes"] = 2 ** 41
    run.samples["loops"] = run.samples["loops"].astype(float)
    run.samples.loc[0, "loops"] = 1e300  # no whole number a table holds: typed() raised TypeError
    run.save(tmp_path)
    with pytest.warns(PqlabWarning, match=r"1 in public_key_bytes of its sizes .*; 1 in loops of its "):
        back = load_run(tmp_path / "r1")
    assert pd.isna(back.sizes.loc[0, "public_key_bytes"]) and pd.isna(back.samples.loc[0, "loops"])

