"""Notebook 07's study module: comparisons, local identities, platforms that never mix builds or counters,
ratios with intervals from synthetic runs of known ratios, published platforms, cross-platform factors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqlab.backends.algorithms import get
from pqlab.benchmark import measurement_row, sample_rows
from pqlab.core.builds import Build
from pqlab.core.errors import UnknownName
from pqlab.core.formatting import markdown
from pqlab.core.references import load_reference
from pqlab.measure import machine
from pqlab.measure.stats import ratio_ci
from pqlab.measure.timing import Samples
from pqlab.store.recorder import RunRecorder
from pqlab.studies import atlas

SIG = ("ML-DSA-44", "sign")


def comps(signatures=("ML-DSA-44", "ML-DSA-65"), kems=("ML-KEM-768",)):
    return atlas.comparisons(list(signatures), list(kems), {"sig": "Ed25519", "kem": "X25519"},
                             {"sig": "ML-DSA-44", "kem": "ML-KEM-768"})


def synthetic_run(folder, run_id, centres: dict, *, machine_id="m-a", options="default", counter="tsc",
                  started_at="2026-01-01T00:00:00+00:00", n=400, seed=0, host_id=None, verified=True):
    """A saved run whose (algorithm, operation) samples are centred on `centres` (1 % spread), recorded under
    `machine_id` with the given liboqs build and counter label.  A run of an identity override (`host_id`)
    saved in a machine's folder of the store is recorded as a merge whose host proof verified, as notebook
    07's own bundles are, unless `verified` is False."""
    rng = np.random.default_rng(seed)
    meta = {"machine_id": machine_id, "counter": {"label": counter},
            "liboqs": {"liboqs_version": "0.13.0", "options": options, "build": Build("0.13.0", options).id},
            "machine_id_override": {"variable": "PQLAB_MACHINE_ID", "value": machine_id, "host_id": host_id}
            if host_id else None}
    rec = RunRecorder("07_atlas", save=False, run_id=run_id, meta=meta)
    rec.meta["started_at"] = started_at
    rows, samples = [], []
    for (name, op), centre in centres.items():
        algo = get(name)
        s = Samples(time_ns=rng.normal(centre, centre * 0.01, n), cycles=None, loops=1, warmup_calls=0,
                    cycles_source="tsc")
        size = 100 if op in ("sign", "verify") else None
        row, srows = measurement_row(rec, algo, op, size, s), sample_rows(run_id, algo, op, size, s)
        for i, r in enumerate(srows):  # in 6 rounds, as bench measures
            r["round"] = i % 6
        if algo.backend == "liboqs":
            row["build"] = Build("0.13.0", options).id
            for r in srows:
                r["build"] = row["build"]
        rows.append(row)
        samples += srows
    rec.add(rows, [], samples)
    run = rec.finish()
    run.save(folder)
    if host_id and Path(folder).parent.name == "machines":
        record = {"bundle_id": run_id, "runs": [{"run_id": run_id}], "machine": {}, "files": {},
                  "merge": {"host_verified": verified}}
        (Path(folder) / "bundles").mkdir(exist_ok=True)
        (Path(folder) / "bundles" / f"{run_id}.json").write_text(json.dumps(record))
    return run


def value(a: atlas.Atlas, platform_part: str, comparison: str) -> pd.Series:
    r = a.ratios[a.ratios["platform"].str.contains(platform_part, regex=False)
                 & (a.ratios["comparison"] == comparison)]
    assert len(r) == 1, (platform_part, comparison, len(r))
    return r.iloc[0]


# ----- comparisons and inputs -----
def test_comparisons_pair_every_algorithm_with_both_baselines():
    c = comps()
    assert "ML-DSA-65 sign / Ed25519 sign" in set(c["comparison"])
    assert "ML-KEM-768 encaps+decaps / X25519 encaps+decaps" in set(c["comparison"])
    assert "ML-DSA-65 sign / ML-DSA-44 sign" in set(c["comparison"])
    assert not (c["algorithm"] == c["baseline"]).any()  # the anchor is not compared with itself
    assert set(c["use"]) == {"keygen", "sign", "verify", "encaps+decaps"}
    assert atlas.algorithms_to_measure(c) == ["ML-DSA-44", "ML-DSA-65", "ML-KEM-768", "Ed25519", "X25519"]


def test_bad_names_are_refused_in_one_line_with_close_matches():
    with pytest.raises(UnknownName, match="close matches: .*ML-DSA-44"):
        comps(signatures=["ML-DSA-4"])
    with pytest.raises(ValueError,
                       match=r"algorithm 'ML-KEM-768' is a KEM, not a signature: move it to the kems"):
        comps(signatures=["ML-KEM-768"])
    with pytest.raises(ValueError, match="nothing to compare"):
        atlas.comparisons([], [], {}, {})


def test_local_identities(monkeypatch):
    monkeypatch.delenv("PQLAB_MACHINE_ID", raising=False)
    own = machine.host_id()
    assert (atlas.local_identity("default") == own
            and atlas.local_identity("generic") == f"{own}+generic-build")
    monkeypatch.setenv("PQLAB_MACHINE_ID", "pi4-lab")
    assert atlas.local_identity("generic") == "pi4-lab+generic-build"


def test_local_builds_are_checked_before_anything_is_measured(monkeypatch):
    import pqlab.benchmark
    import pqlab.liboqs.loader

    def never(*a, **k):
        raise AssertionError("measured although a build is refused")

    monkeypatch.setattr(pqlab.benchmark, "bench_in_worker", never)
    with pytest.raises(UnknownName, match="unknown liboqs build 'portable'; close matches"):
        atlas.measure_local(["default", "portable"], ["Ed25519"], message_bytes=100, budget_s=0.01,
                            min_samples=1)

    real = pqlab.liboqs.loader.build_environment

    def missing(build, base=None):  # the machine has no portable build (setup without cargo)
        if build == "generic":
            raise pqlab.liboqs.loader.LiboqsNotFound(f"the {build} build of liboqs is not installed: "
                                                     "run `make setup`")
        return real(build, base)

    monkeypatch.setattr(pqlab.liboqs.loader, "build_environment", missing)
    with pytest.raises(pqlab.liboqs.loader.LiboqsNotFound, match="generic build .* not installed"):
        atlas.measure_local(["default", "generic"], ["Ed25519"], message_bytes=100, budget_s=0.01,
                            min_samples=1)


def test_bundle_patterns_that_match_nothing_are_refused(tmp_path):
    (tmp_path / "a.tar.gz").write_bytes(b"")
    assert atlas.find_bundles([str(tmp_path / "*.tar.gz")]) == [tmp_path / "a.tar.gz"]
    with pytest.raises(FileNotFoundError, match="no file matches 'nowhere/\\*.tar.gz'"):
        atlas.find_bundles(["nowhere/*.tar.gz"])


# ----- measured platforms -----
def test_ratios_have_the_known_value_and_an_interval(tmp_path):
    synthetic_run(tmp_path, "a1", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0,
                                   ("ML-KEM-768", "encaps"): 30_000.0, ("ML-KEM-768", "decaps"): 30_000.0,
                                   ("X25519", "encaps"): 40_000.0, ("X25519", "decaps"): 20_000.0})
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    sign = value(a, "liboqs default", "ML-DSA-44 sign / Ed25519 sign")
    assert sign["ratio"] == pytest.approx(2.0, rel=0.01) and sign["ci_low"] < 2.0 < sign["ci_high"]
    assert (sign["ci_high"] - sign["ci_low"] < 0.02 and sign["statistic"] == "median"
            and sign["run_id"] == "a1")
    kem = value(a, "liboqs default", "ML-KEM-768 encaps+decaps / X25519 encaps+decaps")
    assert kem["ratio"] == pytest.approx(1.0, rel=0.01)  # (30 + 30) / (40 + 20): sums, not a mean of ratios
    missing = value(a, "liboqs default", "ML-DSA-65 sign / Ed25519 sign")
    assert np.isnan(missing["ratio"]) and "not measured" in missing["reason"]


def test_builds_are_separate_platforms_and_counters_of_one_build_are_not(tmp_path):
    synthetic_run(tmp_path, "d", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0},
                  started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path, "g", {SIG: 1_000_000.0, ("Ed25519", "sign"): 50_000.0}, options="generic")
    synthetic_run(tmp_path, "c", {SIG: 300_000.0, ("Ed25519", "sign"): 50_000.0}, counter="core-cycles",
                  started_at="2026-02-01T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    assert len(a.platforms) == 2  # default (two runs, two counters) and generic
    comparison = "ML-DSA-44 sign / Ed25519 sign"
    by_run = a.ratios[a.ratios["comparison"] == comparison].set_index("run_id")["ratio"]
    # the default build's newest run gives its ratio: never a mix of runs
    assert set(by_run.index) == {"c", "g"}
    assert by_run["g"] == pytest.approx(20, rel=0.01) and by_run["c"] == pytest.approx(6, rel=0.01)
    labels = list(a.platforms["platform"])
    assert any("liboqs generic" in p for p in labels) and any("liboqs default" in p for p in labels)
    text = atlas.describe_platforms(a)
    assert "The liboqs build differs: " in text and "never combines runs, hosts or builds" in text


def test_the_newest_run_of_a_platform_is_used(tmp_path):
    synthetic_run(tmp_path, "old", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0},
                  started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path, "new", {SIG: 200_000.0, ("Ed25519", "sign"): 50_000.0},
                  started_at="2026-02-01T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    row = value(a, "liboqs default", "ML-DSA-44 sign / Ed25519 sign")
    assert row["run_id"] == "new" and row["ratio"] == pytest.approx(4, rel=0.01)


def test_merged_machines_and_overrides_are_platforms_labelled_as_what_they_are(tmp_path, monkeypatch):
    host = machine.host_id()
    synthetic_run(tmp_path, "own", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host)
    synthetic_run(tmp_path / "machines" / f"{host}+generic-build", "over",
                  {SIG: 500_000.0, ("Ed25519", "sign"): 50_000.0},
                  machine_id=f"{host}+generic-build", options="generic", host_id=host)
    synthetic_run(tmp_path / "machines" / "arm-box", "arm", {SIG: 300_000.0, ("Ed25519", "sign"): 50_000.0},
                  machine_id="arm-box")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    p = a.platforms.set_index("machine_id")
    # the override is this host, another build
    assert len(a.platforms) == 3 and list(p.index).count(host) == 2
    own = a.platforms[a.platforms["platform"].str.contains("liboqs default")].iloc[0]
    over = a.platforms[a.platforms["platform"].str.contains("liboqs generic")].iloc[0]
    assert own["this_host"] and own["identity"] == "the host's own" and own["machine_id"] == host
    assert over["this_host"] and over["platform"].endswith("this host") and over["machine_id"] == host
    assert over["identity"].startswith(f"override PQLAB_MACHINE_ID={host}+generic-build")
    assert not p.loc["arm-box", "this_host"] and "this host" not in p.loc["arm-box", "platform"]
    # this host's default build first: the default reference
    assert a.platforms["platform"].iloc[0] == own["platform"]
    assert atlas.reference_platform(a) == own["platform"]
    # an identity names its platform
    assert atlas.reference_platform(a, f"{host}+generic-build") == over["platform"]
    with pytest.raises(UnknownName, match="unknown reference platform 'sparc'"):
        atlas.reference_platform(a, "sparc")
    assert atlas.reference_platform(a, "arm-box") == p.loc["arm-box", "platform"]


def test_a_merged_run_claiming_this_host_without_proof_is_its_machine_and_hides_nothing(tmp_path):
    # issue #46 D1: this host's run, and a later one in a merged folder that claims this host (its identity
    # override names it) with one algorithm's times x100, its bundle's proof not verified
    host = machine.host_id()
    synthetic_run(tmp_path, "own", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host)
    synthetic_run(tmp_path / "machines" / "pi4-lab", "forged",
                  {SIG: 10_000_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id="pi4-lab",
                  host_id=host, verified=False, started_at="2099-01-01T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    here = a.platforms[a.platforms["this_host"]]
    assert list(here["machine_id"]) == [host]
    assert value(a, "this host", "ML-DSA-44 sign / Ed25519 sign")["ratio"] == pytest.approx(2, rel=0.02)
    forged = a.platforms[a.platforms["machine_id"] == "pi4-lab"].iloc[0]
    assert not forged["this_host"] and "this host" not in forged["platform"]
    assert "its claims not verified" in forged["identity"]


# ----- published platforms and cross-platform factors -----
def test_published_ratios_come_from_the_reference_tables():
    platforms, ratios = atlas.published_platforms(comps())
    assert list(platforms["platform"]) == [atlas.PI4, atlas.PQM4_CLEAN, atlas.PQM4_FASTEST]
    pi, pq = load_reference("05_energy_pi4"), load_reference("07_pqm4")

    def one(df, **kw):
        return float(df.loc[np.logical_and.reduce([df[k] == v for k, v in kw.items()])].iloc[0, :].to_dict()[
            "time_ms" if "time_ms" in df else "cycles_mean"])

    r = ratios.set_index(["platform", "comparison"])["ratio"]
    c = "ML-DSA-65 sign / ML-DSA-44 sign"
    assert r[(atlas.PI4, c)] == pytest.approx(one(pi, algorithm="ML-DSA-65", operation="sign")
                                              / one(pi, algorithm="ML-DSA-44", operation="sign"))
    assert r[(atlas.PQM4_CLEAN, c)] == pytest.approx(12359056 / 7925955)
    assert r[(atlas.PQM4_FASTEST, c)] == pytest.approx(one(pq, algorithm="ML-DSA-65", operation="sign",
                                                           implementation="m4f")
                                                       / one(pq, algorithm="ML-DSA-44", operation="sign",
                                                             implementation="m4f"))
    classical = ratios[ratios["baseline_kind"] == atlas.CLASSICAL]
    assert (classical["ratio"].isna().all()
            and classical["reason"].str.startswith("no classical baseline").all())
    assert "ML-DSA-65 sign / ML-DSA-44 sign" in atlas.published_ratio_table(ratios).to_string()


def test_cross_platform_factors_and_their_intervals(tmp_path):
    synthetic_run(tmp_path, "x", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0,
                                  ("ML-DSA-65", "sign"): 150_000.0},
                  machine_id="x86-box")
    synthetic_run(tmp_path, "y", {SIG: 300_000.0, ("Ed25519", "sign"): 50_000.0,
                                  ("ML-DSA-65", "sign"): 150_000.0},
                  machine_id="arm-box", seed=1)
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    reference = atlas.reference_platform(a, "x86-box")
    cross = atlas.cross_platform(a, reference).set_index(["platform", "comparison"])
    arm = a.platforms.set_index("machine_id").loc["arm-box", "platform"]
    f = cross.loc[(arm, "ML-DSA-44 sign / Ed25519 sign")]
    assert (f["factor"] == pytest.approx(3, rel=0.01) and f["ci_low"] < 3 < f["ci_high"]
            and f["verdict"] == "loses")
    g = cross.loc[(arm, "ML-DSA-65 sign / ML-DSA-44 sign")]
    assert g["factor"] == pytest.approx(1 / 3, rel=0.01) and g["verdict"] == "gains"
    # a published platform: its one number over the reference's ratio, the
    # interval from the reference's samples
    pub = cross.loc[(atlas.PQM4_CLEAN, "ML-DSA-65 sign / ML-DSA-44 sign")]
    assert (pub["factor"] == pytest.approx((12359056 / 7925955) / 1.5, rel=0.01)
            and pub["ci_low"] < pub["factor"])
    assert (atlas.PI4, "ML-DSA-44 sign / Ed25519 sign") not in cross.index  # no classical baseline there
    text = atlas.describe_cross_platform(cross.reset_index(), reference)
    assert (f"**{markdown(arm)}** (" in text
            and "2 of 3 ratios changed beyond their interval (95% interval over rounds)" in text)
    n = atlas.numbers(a, cross.reset_index(), reference)
    assert n["reference_ml-dsa-44_sign_over_ed25519_sign"][0] == pytest.approx(2, rel=0.01)
    assert n["platforms_measured"] == (2, "{}") and n["platforms_published"] == (3, "{}")


def test_figures_are_drawn_without_touching_the_session_style(tmp_path):
    import matplotlib

    synthetic_run(tmp_path, "x", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0,
                                  ("ML-DSA-65", "sign"): 150_000.0},
                  machine_id="x86-box")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    before = dict(matplotlib.rcParams)
    figs = [atlas.plot_ratios(a, atlas.CLASSICAL), atlas.plot_ratios(a, atlas.ANCHOR),
            atlas.plot_cross_platform(atlas.cross_platform(a, atlas.reference_platform(a)), a)]
    assert all(f.axes for f in figs) and dict(matplotlib.rcParams) == before
    # comparison + the measured and 3 published
    assert len(atlas.ratio_table(a, atlas.ANCHOR).columns) == 1 + 4


def test_cpu_features_text_covers_every_kind_of_build():
    dist = {"build_config": {"OQS_DIST_BUILD": "1"}, "cpu_extensions": ["AVX2", "AES"]}
    assert atlas.cpu_features_text(dist) == "runtime dispatch over AVX2, AES"
    # an older run
    assert "not recorded" in atlas.cpu_features_text({"build_config": {"OQS_DIST_BUILD": "1"}})
    generic = {"build_config": {"OQS_OPT_TARGET": "generic", "OQS_USE_SSE2_INSTRUCTIONS": "1"},
               "cpu_extensions": []}
    assert atlas.cpu_features_text(generic) == "compiled for generic: SSE2"
    assert atlas.cpu_features_text({"build_config": {"OQS_OPT_TARGET": "generic"}}).endswith(
        "no CPU-specific instructions")
    assert atlas.cpu_features_text({}) == "liboqs not loaded"
    assert atlas.short_cpu("Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz") == "Intel Xeon Platinum 8370C"


def test_the_default_reference_is_this_hosts_default_build_and_its_newest_run(tmp_path):
    """One host with runs of two counters (yesterday's, recorded before the counter was, and today's TSC) is
    one platform (one host, one build): its ratio comes from the newer run, and it is the default
    reference."""
    host = machine.host_id()
    synthetic_run(tmp_path, "old", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  counter="aaa-old", started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path, "new", {SIG: 120_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  counter="tsc", started_at="2026-02-01T00:00:00+00:00")
    synthetic_run(tmp_path, "gen", {SIG: 900_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  options="generic", started_at="2026-03-01T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    assert len(a.platforms) == 2 and a.platforms["this_host"].all()
    default = a.platforms["platform"].iloc[0]
    # default build, though older
    assert "liboqs default" in default and atlas.reference_platform(a) == default
    assert value(a, "liboqs default", "ML-DSA-44 sign / Ed25519 sign")["run_id"] == "new"
    # the counter of the run it uses
    assert a.platforms.set_index("platform").loc[default, "counter"] == "tsc"


# ----- one host and build is one platform; the reader chooses what is drawn -----
def duplicated_store(tmp_path):
    """This host's default build, and its generic build measured three times: by notebook 04 under its own
    identity (twice) and by notebook 07 under the identity override; plus another machine.  Two hosts, three
    (host, build)."""
    host = machine.host_id()
    centres = {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0, ("ML-DSA-65", "sign"): 150_000.0}
    synthetic_run(tmp_path, "own-default", centres, machine_id=host, started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path, "nb04-generic-old", {SIG: 400_000.0, ("Ed25519", "sign"): 50_000.0},
                  machine_id=host, options="generic", started_at="2026-01-01T00:01:00+00:00")
    synthetic_run(tmp_path, "nb04-generic", {SIG: 500_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  options="generic", started_at="2026-01-01T00:02:00+00:00", counter="core-cycles")
    synthetic_run(tmp_path / "machines" / f"{host}+generic-build", "nb07-generic",
                  {**centres, SIG: 600_000.0}, machine_id=f"{host}+generic-build", options="generic",
                  host_id=host, started_at="2026-01-01T00:03:00+00:00")
    synthetic_run(tmp_path / "machines" / "arm-box", "arm", centres, machine_id="arm-box")
    return host, {(host, "default"), (host, "generic"), ("arm-box", "default")}


def drawn_count(text: str) -> int:
    import re

    return int(re.search(r"\*\*(\d+) measured platform", text).group(1))


def test_each_host_and_build_is_one_platform_whatever_identity_counter_or_repeat(tmp_path):
    host, expected = duplicated_store(tmp_path)
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    measured = a.platforms[a.platforms["kind"] == atlas.MEASURED]
    pairs = list(zip(measured["machine_id"], measured["liboqs"].str.split().str[1]))
    assert sorted(pairs) == sorted(expected)  # each (machine, build) once
    assert not a.platforms["platform"].duplicated().any()
    generic = measured[measured["liboqs"].str.contains("generic")].iloc[0]
    assert generic["this_host"] and generic["platform"].endswith("this host")
    # every ratio from one run: the newest that measured both sides (notebook 07's here), never a mix
    sign = value(a, "liboqs generic", "ML-DSA-44 sign / Ed25519 sign")
    assert sign["run_id"] == "nb07-generic" and sign["ratio"] == pytest.approx(12, rel=0.01)
    text = atlas.describe_platforms(a)
    assert drawn_count(text) == len(expected)  # the text counts (machine, build), not identities or runs
    assert "2 of the measured platforms are this host" in text
    n = atlas.numbers(a, atlas.cross_platform(a, atlas.reference_platform(a)), atlas.reference_platform(a))
    assert n["platforms_measured"] == (len(expected), "{}")
    # one largest loss per platform
    assert sum(k.startswith("largest_loss_") and "generic" in k for k in n) == 1


def test_a_platform_that_merges_identities_says_so(tmp_path):
    host = machine.host_id()
    synthetic_run(tmp_path, "nb04", {SIG: 500_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  options="generic", started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path / "machines" / f"{host}+generic-build", "nb07",
                  {("ML-DSA-65", "sign"): 150_000.0, ("Ed25519", "sign"): 50_000.0},
                  machine_id=f"{host}+generic-build", options="generic", host_id=host,
                  started_at="2026-01-02T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    assert len(a.platforms) == 1 and a.platforms["runs"].iloc[0] == 2
    # each comparison from the one run that has it
    assert set(a.ratios["run_id"].dropna()) == {"nb04", "nb07"}
    text = atlas.describe_platforms(a)
    assert drawn_count(text) == 1 and "holds runs recorded under 2 identities" in text


def test_platforms_selects_what_is_drawn(tmp_path):
    host, expected = duplicated_store(tmp_path)
    full = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    generic = full.platforms[full.platforms["liboqs"].str.contains("generic", na=False)]["platform"].iloc[0]
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, platforms=["liboqs generic"])
    assert list(a.platforms["platform"]) == [generic]
    assert set(a.ratios["platform"]) == {generic} and {k[0] for k in a.parts} == {generic}
    assert {r.run_id for r in a.runs} == {"nb07-generic"}
    assert (drawn_count(atlas.describe_platforms(a)) == 1
            and "Left out by `platforms`" in atlas.describe_platforms(a))
    by_identity = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path,
                                    platforms=[f"{host}+generic-build"])
    assert list(by_identity.platforms["platform"]) == [generic]  # an identity selects its host and build
    pub = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, platforms=["published"])
    assert list(pub.platforms["platform"]) == [atlas.PI4, atlas.PQM4_CLEAN, atlas.PQM4_FASTEST]
    assert (atlas.reference_platform(pub) == ""
            and "**No measured platform** is drawn" in atlas.describe_platforms(pub))
    both = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, platforms=["arm-box", "pqm4 clean"])
    assert len(both.platforms) == 2 and atlas.PQM4_CLEAN in set(both.platforms["platform"])
    with pytest.raises(UnknownName, match="unknown platform 'sparc'"):
        atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, platforms=["sparc"])


# ----- every cell names its statistic; intervals only where rounds give them -----
def test_every_ratio_names_its_statistic_like_with_like_and_intervals_only_from_rounds(tmp_path):
    duplicated_store(tmp_path)
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    r = a.ratios[a.ratios["ratio"].notna()]
    measured = r[r["kind"] == atlas.MEASURED]
    assert set(measured.loc[measured["baseline_kind"] == atlas.CLASSICAL, "statistic"]) == {"median"}
    assert set(measured.loc[measured["baseline_kind"] == atlas.ANCHOR, "statistic"]) == {"mean"}  # as pqm4's
    by_platform = r[r["kind"] == atlas.PUBLISHED].groupby("platform")["statistic"].agg(set)
    assert by_platform[atlas.PQM4_CLEAN] == {"mean"} and by_platform[atlas.PI4] == {atlas.UNSTATED}
    published = r[r["kind"] == atlas.PUBLISHED]
    assert published["ci_low"].isna().all() and (published["interval"] == atlas.NO_INTERVAL).all()
    assert measured["ci_low"].notna().all() and (measured["interval"] == atlas.INTERVAL).all()
    # the anchor's mean: the ratio of per-round means of the samples, not of their medians
    run = next(x for x in a.runs if x.run_id == "nb07-generic")
    num, den = (run.sample_values(n, "sign", backend="liboqs", build="generic", message_bytes=100)
                for n in ("ML-DSA-65", "ML-DSA-44"))
    assert value(a, "liboqs generic", "ML-DSA-65 sign / ML-DSA-44 sign")["ratio"] == pytest.approx(
        ratio_ci(num, den, "mean")[0])
    # the tables and the figures' legends name each platform's statistic
    for kind in (atlas.CLASSICAL, atlas.ANCHOR):
        wide = atlas.ratio_table(a, kind)
        for header in wide.columns[1:]:
            platform, words = header.rsplit(": ", 1)
            stats = set(r.loc[(r["platform"] == platform) & (r["baseline_kind"] == kind), "statistic"])
            assert words == atlas.statistic_words(stats.pop()) and not stats
    assert f"{atlas.PI4}: statistic unstated" in atlas.ratio_table(a, atlas.ANCHOR).columns
    fig = atlas.plot_ratios(a, atlas.ANCHOR)
    legend = [" ".join(t.get_text().split()) for t in fig.legends[0].get_texts()]
    assert any(t.startswith("Raspberry Pi 4") and t.endswith("statistic unstated") for t in legend)
    assert all("ratio of means" in t for t in legend if "Raspberry Pi 4" not in t)
    platforms, pub_ratios = atlas.published_platforms(comps())
    assert "unstated" in atlas.published_ratio_table(pub_ratios).to_string()
    assert a.platforms.set_index("platform").loc[atlas.PI4, "statistic"] == "statistic unstated"


def test_the_published_statistics_are_what_the_sources_state():
    """Study 004's table gives one time per operation and its method names no statistic; pqm4 averages its
    executions: the atlas labels them "unstated" and "mean"."""
    from pqlab.core.references import reference_source

    pi = reference_source("05_energy_pi4")["method"].lower()
    assert (not any(w in pi for w in ("mean", "median", "average"))
            and atlas.published_statistic("time_ms") == atlas.UNSTATED)
    assert ("average" in reference_source("07_pqm4")["method"]
            and atlas.published_statistic("cycles_mean") == "mean")


def statistics_of(df: pd.DataFrame) -> dict:
    return df.groupby("platform")["statistic"].agg(lambda s: set(" / ".join(s).split(" / "))).to_dict()


def test_no_sentence_claims_medians_or_bootstrap_for_a_mean_or_unstated_cell(tmp_path):
    duplicated_store(tmp_path)
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    reference = atlas.reference_platform(a)
    cross = atlas.cross_platform(a, reference)
    classical = a.ratios[(a.ratios["baseline_kind"] == atlas.CLASSICAL) & a.ratios["ratio"].notna()]
    for text, stats in ((atlas.describe_ratios(a), lambda: statistics_of(classical)),
                        (atlas.describe_cross_platform(cross, reference), lambda: statistics_of(cross))):
        stats = stats()
        lines = [line for line in text.splitlines() if line.startswith("- **")]
        assert len(lines) == len(stats)  # one line per platform
        for line in lines:
            platform = next(p for p in stats if line.startswith(f"- **{markdown(p)}**"))
            assert "bootstrap" not in line
            for stat in ("median", "mean"):
                assert (f"of {stat}s" in line) == (stat in stats[platform]), (stat, line)
            assert ("unstated" in line) == (atlas.UNSTATED in stats[platform]), line
    # the statistics paragraph: per kind of baseline, each platform under its own statistic
    text = atlas.describe_statistics(a)
    anchor = next(line for line in text.splitlines() if "post-quantum anchor" in line)
    assert "median" not in anchor and "bootstrap" not in text
    unstated = anchor[anchor.index("statistic unstated"):].split(";")[0]
    assert markdown(atlas.PI4) in unstated and "no interval" in unstated
    classical = next(line for line in text.splitlines() if "**classical**" in line)
    assert "ratio of medians, with a 95% interval over rounds" in classical and "mean" not in classical


def test_the_notebook_claims_no_statistic_for_study_004_and_no_medians_for_every_ratio():
    import json
    import re

    from pqlab.core import paths

    nb = json.loads((paths.ROOT / "notebooks" / "07_atlas.ipynb").read_text())
    prose = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    sentences = re.split(r"(?<=[.;:])\s+", " ".join(prose.split()))
    for s in sentences:
        low = s.lower()
        assert "bootstrap" not in low, s
        assert not re.search(r"every ratio[^.]* of medians", low), s
        if "study 004" in low and re.search(r"\b(mean|median)s?\b", low):
            assert re.search(r"not name|without naming|unstated", low), s
        assert not re.search(r"\bas two \"?platforms", low), s  # a count typed, not one per host and build


def test_describe_local_says_which_identity_and_that_a_host_and_build_is_one_platform():
    local = [{"build": "default", "machine_id": "pi4-lab", "override": True, "run_id": "r1",
              "bundle": "pi4-lab.tar.gz"},
             {"build": "generic", "machine_id": "pi4-lab+generic-build", "override": True, "run_id": "r2",
              "bundle": "pi4-lab+generic-build.tar.gz"}]
    lines = atlas.describe_local(local, []).splitlines()
    # a user's identity, same build
    assert "another liboqs build" not in lines[0] and "the default build" in lines[0]
    assert "the same host with the generic build" in lines[1] and "as one platform" in lines[1]


def test_platform_labels_are_told_apart_by_what_differs_only():
    import pandas as pd

    p = pd.DataFrame({"platform": ["EPYC · liboqs default · this host"] * 2 + ["Xeon · liboqs default"] * 2,
                      "machine_id": ["h1", "h1", "h2", "h3"],
                      "liboqs_version": ["0.13.0", "0.12.0", "0.13.0", "0.13.0"]})
    labels = list(atlas._unique_labels(p)["platform"])
    assert labels == ["EPYC · liboqs default · this host · 0.13.0",
                      "EPYC · liboqs default · this host · 0.12.0",
                      "Xeon · liboqs default · h2", "Xeon · liboqs default · h3"]
