"""Notebook 07's study module: comparisons, local identities, platforms that never mix builds or counters,
ratios with intervals from synthetic runs of known ratios, published platforms, cross-platform factors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pqlab import machine
from pqlab.algorithms import get
from pqlab.benchmark import measurement_row, sample_rows
from pqlab.errors import UnknownName
from pqlab.formatting import markdown
from pqlab.recorder import RunRecorder
from pqlab.reference import load_reference
from pqlab.studies import atlas
from pqlab.timing import Samples

SIG = ("ML-DSA-44", "sign")


def comps(signatures=("ML-DSA-44", "ML-DSA-65"), kems=("ML-KEM-768",)):
    return atlas.comparisons(list(signatures), list(kems), {"sig": "Ed25519", "kem": "X25519"},
                             {"sig": "ML-DSA-44", "kem": "ML-KEM-768"})


def synthetic_run(folder, run_id, centres: dict, *, machine_id="m-a", variant="default", counter="tsc",
                  started_at="2026-01-01T00:00:00+00:00", n=400, seed=0, host_id=None):
    """A saved run whose (algorithm, operation) samples are centred on `centres` (1 % spread), recorded under
    `machine_id` with the given liboqs build and counter label."""
    rng = np.random.default_rng(seed)
    meta = {"machine_id": machine_id, "counter": {"label": counter}, "liboqs": {"liboqs_version": "0.13.0", "variant": variant},
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
            row["variant"] = variant
            for r in srows:
                r["variant"] = variant
        rows.append(row)
        samples += srows
    rec.add(rows, [], samples)
    run = rec.finish()
    run.save(folder)
    return run


def value(a: atlas.Atlas, platform_part: str, comparison: str) -> pd.Series:
    r = a.ratios[a.ratios["platform"].str.contains(platform_part, regex=False) & (a.ratios["comparison"] == comparison)]
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
    with pytest.raises(ValueError, match=r"algorithm 'ML-KEM-768' is a KEM, not a signature: move it to the kems"):
        comps(signatures=["ML-KEM-768"])
    with pytest.raises(ValueError, match="nothing to compare"):
        atlas.comparisons([], [], {}, {})


def test_local_identities(monkeypatch):
    monkeypatch.delenv("PQLAB_MACHINE_ID", raising=False)
    own = machine.host_id()
    assert atlas.local_identity("default") == own and atlas.local_identity("generic") == f"{own}+generic-build"
    monkeypatch.setenv("PQLAB_MACHINE_ID", "pi4-lab")
    assert atlas.local_identity("generic") == "pi4-lab+generic-build"


def test_local_builds_are_checked_before_anything_is_measured(monkeypatch):
    import pqlab.benchmark
    import pqlab.liboqs_loader

    def never(*a, **k):
        raise AssertionError("measured although a build is refused")

    monkeypatch.setattr(pqlab.benchmark, "bench_in_worker", never)
    with pytest.raises(UnknownName, match="unknown liboqs build 'portable'; close matches"):
        atlas.measure_local(["default", "portable"], ["Ed25519"], message_bytes=100, budget_s=0.01, min_samples=1)

    real = pqlab.liboqs_loader.variant_environment

    def missing(variant, base=None):  # the machine has no portable build (setup without cargo)
        if variant == "generic":
            raise pqlab.liboqs_loader.LiboqsNotFound(f"the {variant} build of liboqs is not installed: run `make setup`")
        return real(variant, base)

    monkeypatch.setattr(pqlab.liboqs_loader, "variant_environment", missing)
    with pytest.raises(pqlab.liboqs_loader.LiboqsNotFound, match="generic build .* not installed"):
        atlas.measure_local(["default", "generic"], ["Ed25519"], message_bytes=100, budget_s=0.01, min_samples=1)


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
    assert sign["ci_high"] - sign["ci_low"] < 0.02 and sign["statistic"] == "median" and sign["run_id"] == "a1"
    kem = value(a, "liboqs default", "ML-KEM-768 encaps+decaps / X25519 encaps+decaps")
    assert kem["ratio"] == pytest.approx(1.0, rel=0.01)  # (30 + 30) / (40 + 20): sums, not a mean of ratios
    missing = value(a, "liboqs default", "ML-DSA-65 sign / Ed25519 sign")
    assert np.isnan(missing["ratio"]) and "not measured" in missing["reason"]


def test_builds_and_counters_are_separate_platforms_never_mixed(tmp_path):
    synthetic_run(tmp_path, "d", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0})
    synthetic_run(tmp_path, "g", {SIG: 1_000_000.0, ("Ed25519", "sign"): 50_000.0}, variant="generic")
    synthetic_run(tmp_path, "c", {SIG: 300_000.0, ("Ed25519", "sign"): 50_000.0}, counter="core-cycles")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    assert len(a.platforms) == 3
    comparison = "ML-DSA-44 sign / Ed25519 sign"
    by_run = a.ratios[a.ratios["comparison"] == comparison].set_index("run_id")["ratio"]
    assert by_run["d"] == pytest.approx(2, rel=0.01) and by_run["g"] == pytest.approx(20, rel=0.01)
    assert by_run["c"] == pytest.approx(6, rel=0.01)
    labels = list(a.platforms["platform"])
    assert any("liboqs generic" in p for p in labels)
    assert any(p.endswith("· tsc") for p in labels) and any(p.endswith("· core-cycles") for p in labels)
    text = atlas.describe_platforms(a)
    assert "The cycle counter differs: " in text and "The liboqs build differs: " in text and "never share a ratio" in text


def test_the_newest_run_of_a_platform_is_used(tmp_path):
    synthetic_run(tmp_path, "old", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0}, started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path, "new", {SIG: 200_000.0, ("Ed25519", "sign"): 50_000.0}, started_at="2026-02-01T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    row = value(a, "liboqs default", "ML-DSA-44 sign / Ed25519 sign")
    assert row["run_id"] == "new" and row["ratio"] == pytest.approx(4, rel=0.01)


def test_merged_machines_and_overrides_are_platforms_labelled_as_what_they_are(tmp_path, monkeypatch):
    host = machine.host_id()
    synthetic_run(tmp_path, "own", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host)
    synthetic_run(tmp_path / "machines" / f"{host}+generic-build", "over", {SIG: 500_000.0, ("Ed25519", "sign"): 50_000.0},
                  machine_id=f"{host}+generic-build", variant="generic", host_id=host)
    synthetic_run(tmp_path / "machines" / "arm-box", "arm", {SIG: 300_000.0, ("Ed25519", "sign"): 50_000.0},
                  machine_id="arm-box")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    p = a.platforms.set_index("machine_id")
    assert p.loc[host, "this_host"] and p.loc[host, "identity"] == "the host's own"
    assert p.loc[f"{host}+generic-build", "platform"].endswith("this host (identity override)")
    assert p.loc[f"{host}+generic-build", "identity"].startswith(f"override PQLAB_MACHINE_ID={host}+generic-build")
    assert not p.loc["arm-box", "this_host"] and "this host" not in p.loc["arm-box", "platform"]
    assert a.platforms["machine_id"].iloc[0] == host  # this host's own identity first: the default reference
    assert atlas.reference_platform(a) == p.loc[host, "platform"]
    with pytest.raises(UnknownName, match="unknown reference platform 'sparc'"):
        atlas.reference_platform(a, "sparc")
    assert atlas.reference_platform(a, "arm-box") == p.loc["arm-box", "platform"]


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
    assert r[(atlas.PQM4_FASTEST, c)] == pytest.approx(one(pq, algorithm="ML-DSA-65", operation="sign", implementation="m4f")
                                                       / one(pq, algorithm="ML-DSA-44", operation="sign", implementation="m4f"))
    classical = ratios[ratios["baseline_kind"] == atlas.CLASSICAL]
    assert classical["ratio"].isna().all() and classical["reason"].str.startswith("no classical baseline").all()
    assert "ML-DSA-65 sign / ML-DSA-44 sign" in atlas.published_ratio_text(ratios)


def test_cross_platform_factors_and_their_intervals(tmp_path):
    synthetic_run(tmp_path, "x", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0, ("ML-DSA-65", "sign"): 150_000.0},
                  machine_id="x86-box")
    synthetic_run(tmp_path, "y", {SIG: 300_000.0, ("Ed25519", "sign"): 50_000.0, ("ML-DSA-65", "sign"): 150_000.0},
                  machine_id="arm-box", seed=1)
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    reference = atlas.reference_platform(a, "x86-box")
    cross = atlas.cross_platform(a, reference).set_index(["platform", "comparison"])
    arm = a.platforms.set_index("machine_id").loc["arm-box", "platform"]
    f = cross.loc[(arm, "ML-DSA-44 sign / Ed25519 sign")]
    assert f["factor"] == pytest.approx(3, rel=0.01) and f["ci_low"] < 3 < f["ci_high"] and f["verdict"] == "loses"
    g = cross.loc[(arm, "ML-DSA-65 sign / ML-DSA-44 sign")]
    assert g["factor"] == pytest.approx(1 / 3, rel=0.01) and g["verdict"] == "gains"
    # a published platform: its one number over the reference's ratio, the interval from the reference's samples
    pub = cross.loc[(atlas.PQM4_CLEAN, "ML-DSA-65 sign / ML-DSA-44 sign")]
    assert pub["factor"] == pytest.approx((12359056 / 7925955) / 1.5, rel=0.01) and pub["ci_low"] < pub["factor"]
    assert (atlas.PI4, "ML-DSA-44 sign / Ed25519 sign") not in cross.index  # no classical baseline there
    text = atlas.describe_cross_platform(cross.reset_index(), reference)
    assert f"**{markdown(arm)}**: 2 of 3 ratios changed beyond their 95% interval over rounds" in text
    n = atlas.numbers(a, cross.reset_index(), reference)
    assert n["reference_ml-dsa-44_sign_over_ed25519_sign"][0] == pytest.approx(2, rel=0.01)
    assert n["platforms_measured"] == (2, "{}") and n["platforms_published"] == (3, "{}")


def test_figures_are_drawn_without_touching_the_session_style(tmp_path):
    import matplotlib

    synthetic_run(tmp_path, "x", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0, ("ML-DSA-65", "sign"): 150_000.0},
                  machine_id="x86-box")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path)
    before = dict(matplotlib.rcParams)
    figs = [atlas.plot_ratios(a, atlas.CLASSICAL), atlas.plot_ratios(a, atlas.ANCHOR),
            atlas.plot_cross_platform(atlas.cross_platform(a, atlas.reference_platform(a)), a)]
    assert all(f.axes for f in figs) and dict(matplotlib.rcParams) == before
    assert len(atlas.ratio_table(a, atlas.ANCHOR).columns) == 1 + 4  # comparison + the measured and 3 published


def test_cpu_features_text_covers_every_kind_of_build():
    dist = {"build_config": {"OQS_DIST_BUILD": "1"}, "cpu_extensions": ["AVX2", "AES"]}
    assert atlas.cpu_features_text(dist) == "runtime dispatch over AVX2, AES"
    assert "not recorded" in atlas.cpu_features_text({"build_config": {"OQS_DIST_BUILD": "1"}})  # an older run
    generic = {"build_config": {"OQS_OPT_TARGET": "generic", "OQS_USE_SSE2_INSTRUCTIONS": "1"}, "cpu_extensions": []}
    assert atlas.cpu_features_text(generic) == "compiled for generic: SSE2"
    assert atlas.cpu_features_text({"build_config": {"OQS_OPT_TARGET": "generic"}}).endswith("no CPU-specific instructions")
    assert atlas.cpu_features_text({}) == "liboqs not loaded"
    assert atlas.short_cpu("Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz") == "Intel Xeon Platinum 8370C"


def test_the_default_reference_is_this_hosts_newest_platform(tmp_path):
    """One host with runs of two counters (yesterday's, recorded before the counter was, and today's TSC) is
    two platforms; the default reference is the newer one, whatever the labels' order."""
    host = machine.host_id()
    synthetic_run(tmp_path, "old", {SIG: 100_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  counter="aaa-old", started_at="2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path, "new", {SIG: 120_000.0, ("Ed25519", "sign"): 50_000.0}, machine_id=host,
                  counter="tsc", started_at="2026-02-01T00:00:00+00:00")
    a = atlas.build_atlas(comps(), message_bytes=100, folder=tmp_path, published=False)
    assert len(a.platforms) == 2 and a.platforms["this_host"].all()
    assert atlas.reference_platform(a).endswith("tsc") and a.platforms["platform"].iloc[0].endswith("tsc")
