"""The transcribed reference tables: provenance, spot checks, and (when the seed studies are
available) a cell-by-cell comparison with the seed text."""
from __future__ import annotations

import hashlib
import math
import os
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from pqlab.checks.published import (
    check_published_ratios,
    describe_ratio_checks,
    known_differences,
    published_ratios,
)
from pqlab.core.builds import Build
from pqlab.core.paths import REFERENCE, ROOT
from pqlab.core.references import list_references, load_reference, reference_source

SEEDS = Path(os.environ.get("PQLAB_SEEDS", ROOT.parent / "shared" / "seeds"))
PLACEHOLDER = "<x86/x86_64 dependent runtime value>"

# Rows counted by hand in the seeds (and recounted from the text below when the seeds are present).
EXPECTED_ROWS = {
    "01_aes_rsa_sphincs": 9,  # 3 algorithms x 3 operations
    "01_aes_rsa_sphincs_sizes": 3,
    "09_compiler_leaks": 15,  # published compiler-dependent leaks (issues, advisories, the KyberSlash pages)
    "liboqs_names": 816,  # every KEM and signature name of six liboqs releases (their headers)
    "liboqs_meanings": 347,  # what each name means per range of releases (docs yml, KATs, RELEASE.md)
    "liboqs_release_notes": 41,  # what changed between releases for notebook 04's algorithms (RELEASE.md)
    "02_message_scaling": 60,  # 2 tables x 10 sizes x 3 algorithms
    "03_memory_gravity_sphincs": 32,  # 9 sphincs-bench lines + 23 sphincs_divan values
    "04_round2_signatures": 105,  # 17 lattice + 40 multivariate + 48 hash-based
    "05_energy_pi4": 51,  # 27 KEM + 24 signature rows
    "05_energy_pi4_setup": 30,
    "06_tls_published": 10,  # published handshake and certificate numbers (web sources, not a seed)
    "02_study_sphincs256": 11,  # params.h constants of the code study 001 cites (a repository, not a seed)
    "within_machine_ratios": 5,  # liboqs's own benchmark (a repository, not a seed)
    "07_pqm4": 99,  # pqm4's benchmarks.csv: 33 scheme x implementation pairs x 3 operations (a repository)
    "03_study_gravity_params": 6,  # src/config.rs of the code study 002 names (a repository, not a seed)
    "04_study_sphincs_round2_params": 36,  # 6 sets x 6 constants of the round-2 SPHINCS+ code
    "04_study_dilithium_params": 87,  # round-2 Dilithium (4 modes) and FIPS 204 (3 modes) params.h constants
    # published timing-leak effect sizes (GitHub issues and advisories, not a seed)
    "09_leakage_published": 6,
}
#: Tables transcribed from the seed studies (the others cite public sources, each with its own entry).
SEEDED = sorted(n for n in EXPECTED_ROWS if "seed" in reference_source(n))
#: the structured provenance of a table transcribed from one file of a public repository
REPOSITORY_KEYS = ("repository", "path", "commit", "commit_date", "file_commit", "file_date", "file_sha256")


def seed(name: str) -> str:
    path = SEEDS / reference_source(name)["seed"]
    if not path.exists():
        pytest.skip(f"seed studies not found in {SEEDS} (set PQLAB_SEEDS)")
    return path.read_text(encoding="utf-8")


def one(df: pd.DataFrame, **where) -> pd.Series:
    sel = df
    for k, v in where.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, (where, len(sel))
    return sel.iloc[0]


# --- provenance ---------------------------------------------------------------------------


def test_every_csv_has_provenance_and_vice_versa():
    sources = yaml.safe_load((REFERENCE / "sources.yaml").read_text(encoding="utf-8"))
    assert set(sources) == set(list_references()) == set(EXPECTED_ROWS)


COMMON_KEYS = ("study", "rows", "machine", "method", "units", "transcription_notes", "anomalies")


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_provenance_entry_and_row_count(name):
    """A seed transcription names its seed and section; a table from a repository names its sources and
    columns."""
    df = load_reference(name)
    src = df.attrs["source"]
    seeded = name in SEEDED
    for key in COMMON_KEYS + (("seed", "seed_sha256", "section") if seeded else ("notebook", "sources")):
        assert src.get(key), (name, key)
    if seeded:
        assert re.fullmatch(r"00[0-4]_[0-9a-f]{16}\.txt", src["seed"])
    else:
        assert all(url.startswith("https://") for url in src["sources"].values())
    assert len(df) == src["rows"] == EXPECTED_ROWS[name]
    assert src == reference_source(name)


def test_repository_sources_name_repository_path_commit_and_date():
    df = load_reference("07_pqm4")
    src = df.attrs["source"]
    for key in (*REPOSITORY_KEYS, "section", "columns"):
        assert src.get(key), key
    assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]) and re.fullmatch(r"[0-9a-f]{40}", src["file_commit"])
    assert (re.fullmatch(r"[0-9a-f]{64}", src["file_sha256"])
            and src["repository"].startswith("https://github.com/"))
    assert src["commit"] in src["sources"]["pqm4"] and src["file_commit"] in src["sources"]["pqm4"]
    assert set(df.columns) <= set(src["columns"]) | set(src["units"])


@pytest.mark.parametrize("name", ["03_study_gravity_params", "04_study_sphincs_round2_params",
                                  "04_study_dilithium_params"])
def test_parameters_come_from_the_repositories_the_studies_name(name):
    df = load_reference(name)
    src = df.attrs["source"]
    for key in ("study", "notebook", "rows", "sources", "machine", "method", "units", "columns",
                "transcription_notes", "anomalies"):
        assert src.get(key), key
    assert len(df) == src["rows"] == EXPECTED_ROWS[name]
    assert set(df.columns) <= set(src["columns"])
    assert all(url.startswith("https://github.com/") for url in src["sources"].values())
    written = df["value"] if "value" in df else df["expression"]
    assert all(str(v) in text for v, text in zip(written, df["published_text"]))


def test_transcribed_parameters_spot_checks():
    assert one(load_reference("03_study_gravity_params"), constant="HASH_SIZE")["value"] == 32
    sphincs = load_reference("04_study_sphincs_round2_params")
    assert one(sphincs, parameter_set="128f", constant="SPX_FORS_TREES")["value"] == 30
    dilithium = load_reference("04_study_dilithium_params")
    assert one(dilithium, revision="round2", mode=2, constant="L")["expression"] == "3"
    assert one(dilithium, revision="fips204", mode=2, constant="TAU")["expression"] == "39"


def test_web_sources_have_provenance_for_every_row():
    df = load_reference("06_tls_published")
    src = df.attrs["source"]
    for key in ("study", "rows", "sources", "examined_without_numbers", "method", "units",
                "transcription_notes", "anomalies"):
        assert src.get(key), key
    assert len(df) == src["rows"] == EXPECTED_ROWS["06_tls_published"]
    assert set(df["source"]) <= set(src["sources"])
    assert all(url.startswith("https://") for url in src["sources"].values())
    assert df["published_text"].notna().all()
    iroh = one(df, source="iroh-4534", quantity="signature size")
    assert (iroh.value, iroh.baseline_value) == (3309, 64)


def test_seeded_and_repository_tables_are_told_apart():
    assert "01_aes_rsa_sphincs" in SEEDED and "within_machine_ratios" not in SEEDED
    for name in ("02_study_sphincs256", "within_machine_ratios"):
        src = reference_source(name)
        assert set(load_reference(name).columns) <= set(src["columns"])
        assert all(url.startswith("https://github.com/") for url in src["sources"].values())
    assert reference_source("01_aes_rsa_sphincs")["platform"]["bouncycastle"] == "1.72"


@pytest.mark.parametrize("name", SEEDED)
def test_seed_hash_matches(name):
    text = seed(name)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert digest == reference_source(name)["seed_sha256"]


def test_unknown_name_lists_close_matches_and_all_names():
    with pytest.raises(KeyError) as err:
        load_reference("04_round2_signature")
    msg = str(err.value)
    assert "close matches: 04_round2_signatures" in msg
    for name in list_references():
        assert name in msg
    with pytest.raises(KeyError):
        reference_source("energy")


def test_source_is_a_copy():
    load_reference("05_energy_pi4").attrs["source"]["anomalies"].clear()
    assert reference_source("05_energy_pi4")["anomalies"]


# --- spot checks (literal values read from the seeds) ------------------------------------


def test_spot_checks_01():
    sizes = load_reference("01_aes_rsa_sphincs_sizes")
    sph = one(sizes, algorithm="SPHINCS+-SHAKE-128f-simple")
    assert sph.signature_bytes == 17088
    assert (sph.public_key_bytes, sph.private_key_bytes, sph.key_size_bits) == (58, 132, 128)
    rsa = one(sizes, study_label="RSA-2048")
    assert (rsa.public_key_bytes, rsa.private_key_bytes) == (294, 1218)
    assert "~294" in rsa.note and "~1218" in rsa.note
    aes = one(sizes, algorithm="AES-256-CBC")
    assert aes.symmetric_key_bytes == 32 and math.isnan(aes.public_key_bytes)

    times = load_reference("01_aes_rsa_sphincs")
    assert one(times, algorithm="RSA-2048", operation="keygen").time_ms == 129
    assert one(times, algorithm="SPHINCS+-SHAKE-128f-simple", operation="sign").time_ms == 211.5
    assert one(times, algorithm="AES-256-CBC", operation="keygen").time_ms == 2.0
    assert set(times.operation) == {"keygen", "encrypt", "decrypt", "sign", "verify"}
    assert (times.runs == 5).all() and (times.message_bytes == 100).all()


def test_spot_checks_02():
    df = load_reference("02_message_scaling")
    assert one(df, algorithm="RSA", operation="sign", message_kb=10).time_ms == 0.178332
    assert one(df, algorithm="SPHINCS", operation="verify", message_kb=10).time_ms == 1.857
    assert one(df, algorithm="SPHINCS", operation="verify", message_kb=50).time_ms == 2.078
    assert one(df, algorithm="ECDSA", operation="sign", message_kb=90).time_ms == 2.458666
    assert (df.message_bytes == df.message_kb * 1000).all()
    assert sorted(df.message_kb.unique()) == list(range(10, 101, 10))
    assert df.groupby(["algorithm", "operation"]).size().eq(10).all()


def test_spot_checks_03():
    df = load_reference("03_memory_gravity_sphincs")
    assert (one(df, source_block="sphincs-bench (src/main.rs)", metric="time", operation="keygen").value
            == 7.98725)
    assert (one(df, source_block="sphincs-bench (src/main.rs)", metric="time", operation="sign").value
            == 185.4075)
    assert (one(df, source_block="sphincs-bench (src/main.rs)", metric="time", operation="verify").value
            == 10.353208)
    heap = df[(df.source_block == "sphincs-bench (src/main.rs)") & (df.metric == "peak_heap")]
    assert heap.value.tolist() == [34304, 34304]
    assert set(df[df.metric == "public_key_size"].value) == {32}
    assert set(df[df.metric == "secret_key_size"].value) == {64}
    missing = df[df.value.isna()]
    assert len(missing) == 23
    assert (missing.note == "not published (placeholder in the source)").all()
    assert df.value.notna().sum() == 9
    assert df.machine.str.contains("Apple M1 Pro").all()


def test_spot_checks_04():
    df = load_reference("04_round2_signatures")
    assert df.attrs["source"]["clock_hz"] == 1_895_000_000
    row = one(df, scheme="CRYSTALS-DILITHIUM", version="opt-recommended")
    assert ((row.sign_cycles, row.sign_time_s, row.verify_cycles, row.verify_time_s)
            == (1858412, 0.000981, 580565, 0.000835))
    assert ((row.build, row.parameter, row.secret_key_bytes, row.public_key_bytes)
            == ("opt", "recommended", 3504, 1472))
    assert one(df, scheme="GeMMS", version="ref-256").sign_cycles == 27781414012
    assert df.groupby("family").size().to_dict() == {"lattice": 17, "multivariate": 40, "hash-based": 48}
    dup = df[(df.scheme == "SPHINCS+") & (df.parameter == "sha256-128f")]
    assert len(dup) == 6 and dup.table_order.tolist() == [9, 10, 11, 12, 13, 14]
    assert dup.build.tolist() == ["opt", "ref"] * 3
    assert df.row.tolist() == list(range(1, 106))
    # each table is sorted by sign cycles, as the study says
    for _, t in df.groupby("family"):
        assert t.sort_values("table_order").sign_cycles.is_monotonic_increasing
        assert t.table_order.tolist() == list(range(1, len(t) + 1))


def test_anomalies_recorded_for_04_hold():
    """sign_time_s = sign_cycles / clock; verify_time_s is a row permutation of verify_cycles / clock."""
    df = load_reference("04_round2_signatures")
    hz = df.attrs["source"]["clock_hz"]
    assert ((df.sign_cycles / hz).round(6) == df.sign_time_s).all()
    derived = (df.verify_cycles / hz).round(6)
    assert (derived == df.verify_time_s).sum() == 11
    assert Counter(derived) == Counter(df.verify_time_s)


def test_spot_checks_05():
    df = load_reference("05_energy_pi4")
    row = one(df, algorithm="ML-KEM-512", operation="decaps")
    assert (row.time_ms, row.power_w, row.energy_uj, row.kind) == (0.241, 3.470, 833.14, "kem")
    assert row.study_operation == "decapsulate"
    assert one(df, algorithm="Classic-McEliece-8192128", operation="keygen").energy_uj == 39653198.15
    assert one(df, algorithm="SPHINCS+-SHA2-192s-simple", operation="sign").time_ms == 2609.818
    assert df.groupby("kind").size().to_dict() == {"kem": 27, "sig": 24}
    assert set(df.operation) == {"keygen", "encaps", "decaps", "sign", "verify"}
    assert not df.algorithm.str.contains("AES|ChaCha|Ascon").any()  # the AEAD section has no table
    # energy ~ time x power (recorded as an anomaly)
    ratio = df.energy_uj / (df.time_ms * df.power_w * 1000)
    assert ratio.between(0.98, 1.02).all()

    setup = load_reference("05_energy_pi4_setup").set_index("parameter")
    assert setup.loc["i2c_address", "value"] == "0x40"
    assert setup.loc["i2c_bus", "value"] == "1"
    assert setup.loc["shunt_resistor", ["value", "unit"]].tolist() == ["0.1", "ohm"]
    assert setup.loc["power_sample_rate", "value"] == "1000"
    assert setup.loc["warmup", "value"] == setup.loc["cooldown", "value"] == "50"
    assert setup.loc["cpu_governor", "value"] == "ondemand"
    assert setup.loc["python", "value"] == "3.11.2"
    assert setup.loc["platform", "value"] == "Raspberry Pi 4"
    prose = setup[setup.source_kind == "prose"]
    assert {"voltage_min", "voltage_max", "current_min", "current_max"} <= set(prose.index)
    assert prose.loc[["voltage_min", "voltage_max", "current_min", "current_max"], "value"].tolist() == [
        "5.06", "5.08", "650", "750"]


def test_spot_checks_07_pqm4():
    df = load_reference("07_pqm4")
    assert (one(df, pqm4_scheme="ml-kem-768", implementation="clean", operation="encaps").cycles_mean
            == 1138225)
    dsa = one(df, pqm4_scheme="ml-dsa-44", implementation="m4f", operation="sign")
    assert ((dsa.cycles_mean, dsa.cycles_min, dsa.cycles_max, dsa.executions)
            == (3943121, 1812557, 17009165, 1000))
    assert one(df, pqm4_scheme="ml-dsa-44", implementation="m4fstack", operation="sign").stack_bytes == 5080
    sph = one(df, algorithm="SPHINCS+-SHA2-128f-simple", operation="sign")
    assert (sph.cycles_mean, sph.code_total_bytes, sph.executions) == (368575228, 4956, 10)
    assert one(df, algorithm="HQC-128", operation="decaps").stack_bytes == 55892
    # every scheme x implementation has its three operations, in the order of its kind
    ops = df.groupby(["pqm4_scheme", "implementation"])["operation"].agg(tuple)
    assert set(ops) == {("keygen", "encaps", "decaps"), ("keygen", "sign", "verify")}
    assert (df.cycles_min <= df.cycles_mean).all() and (df.cycles_mean <= df.cycles_max).all()
    assert (df.code_total_bytes == df.code_text_bytes + df.code_data_bytes + df.code_bss_bytes).all()
    assert df.attrs["source"]["clock_hz"] == 24_000_000


# --- cell-by-cell against the seed text (skipped without the seeds) ----------------------


def test_01_against_seed():
    text = seed("01_aes_rsa_sphincs")
    rows = [line for line in text.splitlines() if line.startswith("| **")]
    assert len(rows) == 3
    cells = {}
    for line in rows:
        c = [x.strip() for x in line.strip("|").split("|")]
        cells[c[0].strip("*").replace("\u2011", "-")] = c[1:]
    times = load_reference("01_aes_rsa_sphincs")
    assert len(times) == 3 * len(rows)
    col = {"Key generation time (ms)": 0, "Encrypt/Sign time (ms)": 1, "Decrypt/Verify time (ms)": 2}
    for r in times.itertuples():
        published = cells[r.study_label][col[r.study_column]]
        assert published == r.published_text
        assert float(published.lstrip("\u2248")) == r.time_ms
    for r in load_reference("01_aes_rsa_sphincs_sizes").itertuples():
        c = cells[r.study_label][3:]
        assert " | ".join(c) == r.published_text
        for text_cell, value in zip(c, [r.key_size_bits, r.public_key_bytes, r.private_key_bytes,
                                        r.symmetric_key_bytes, r.signature_bytes], strict=True):
            if text_cell == "\u2013":
                assert math.isnan(value)
            else:
                assert int(text_cell.lstrip("~").replace("\u00a0", "")) == value


def test_02_against_seed():
    text = seed("02_message_scaling")
    df = load_reference("02_message_scaling")
    lines = [line.split("\t") for line in text.splitlines() if re.match(r"\d+ Kb\t", line)]
    assert len(lines) * 3 == len(df) == 60
    published = []
    for i, c in enumerate(lines):
        op = "sign" if i < 10 else "verify"
        for alg, cell in zip(["SPHINCS", "RSA", "ECDSA"], c[1:], strict=True):
            published.append((alg, op, int(c[0].split()[0]), cell))
    ours = [(r.algorithm, r.operation, r.message_kb, r.published_text) for r in df.itertuples()]
    assert sorted(ours) == sorted(published)
    for r in df.itertuples():
        assert float(re.search(r"[\d.]+", r.published_text)[0]) == r.time_ms


def test_03_against_seed():
    text = seed("03_memory_gravity_sphincs")
    df = load_reference("03_memory_gravity_sphincs")
    assert text.count(PLACEHOLDER) == df.value.isna().sum()
    for r in df.itertuples():
        # "Message N bytes: sign=..., verify=..." holds two values
        if r.published_text.startswith("Message "):
            head, _ = r.published_text.split(": ")
            assert f"{head}: sign={PLACEHOLDER}, verify={PLACEHOLDER}" in text
        else:
            assert r.published_text in text
        if not math.isnan(r.value):
            assert float(re.search(r": ([\d.]+)", r.published_text)[1]) == r.value


def test_04_against_seed():
    text = seed("04_round2_signatures")
    rows = []
    for line in text.splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 8 and c[0] and not c[0].startswith("**") and c[0] != "---":
            rows.append(c)
    df = load_reference("04_round2_signatures")
    assert len(rows) == len(df) == 105
    for c, r in zip(rows, df.itertuples(), strict=True):
        assert [c[0], c[1]] == [r.scheme, r.version]
        assert c[2] == f"sk-{r.secret_key_bytes}-bytes" and c[3] == f"pk-{r.public_key_bytes}-bytes"
        assert (int(c[4]), float(c[5]), int(c[6]), float(c[7])) == (
            r.sign_cycles, r.sign_time_s, r.verify_cycles, r.verify_time_s)
        assert f"{r.build}-{r.parameter}" == r.version


def test_05_against_seed():
    text = seed("05_energy_pi4")
    df = load_reference("05_energy_pi4")
    pat = re.compile(r"^\| (\S+) \| (\w+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$")
    rows = [m.groups() for m in map(pat.match, text.splitlines()) if m]
    assert len(rows) == len(df) == 51
    for (alg, op, t, p, e), r in zip(rows, df.itertuples(), strict=True):
        assert (alg, op) == (r.algorithm, r.study_operation)
        assert (float(t), float(p), float(e)) == (r.time_ms, r.power_w, r.energy_uj)
    # numbers kept as printed, trailing zeros included
    csv_text = (REFERENCE / "05_energy_pi4.csv").read_text(encoding="utf-8")
    for alg, op, t, p, e in rows:
        assert (f"{alg},{op.replace('decapsulate', 'decaps').replace('encapsulate', 'encaps')},"
                f"{op},{t},{p},{e}" in csv_text)

    setup = load_reference("05_energy_pi4_setup")
    for r in setup.itertuples():
        assert str(r.value).replace("7500", "7,500") in text, r.parameter


# --- within-machine ratios: ours beside the published ones, each gap explained from data ----------
LIBOQS_ALGOS = {"ML-DSA-44": "ml_dsa_44", "ML-KEM-768": "ml_kem_768",
                "SPHINCS+-SHAKE-128f-simple": "sphincs_shake_128f_simple"}
EXTENSIONS = ["ADX", "AES", "AVX", "AVX2", "BMI1", "BMI2", "PCLMULQDQ", "POPCNT", "SSE", "SSE2", "SSE3"]


def liboqs_meta(options="default", version="0.13.0"):
    """The liboqs build record a run carries (pqlab.measure.machine): a run-time dispatch build, or the
    portable one."""
    dist = options == "default"
    return {"arch": "x86_64", "cpu": {"model": "Test CPU"}, "liboqs": {
        "liboqs_version": version, "liboqs_python_version": "0.16.0.1", "options": options,
        "build": Build(version, options).id,
        "build_config": {"OQS_DIST_BUILD": "1", "OQS_OPT_TARGET": "generic"} if dist
        else {"OQS_OPT_TARGET": "generic"},
        "cpu_extensions": EXTENSIONS if dist else [],
        "cpu_specific": {"ml_dsa_44": ["avx2"], "ml_kem_768": ["x86_64"],
                         "sphincs_shake_128f_simple": ["avx2"]}
        if dist else {}}}


def fake_run(rows, options=None, version="0.13.0", meta=None, run_id="r", rounds=True):
    """A run-like object with raw samples: rows of (algorithm, backend, operation, message_bytes, values);
    with `options` (default | generic), the measurement rows and liboqs build record a liboqs run has."""
    frames = [pd.DataFrame({"run_id": run_id, "algorithm": a, "backend": b, "operation": op,
                            "message_bytes": size,
                            # in 6 rounds, as bench measures
                            "round": np.arange(len(values)) % 6 if rounds else np.nan,
                            "time_ns": values})
              for a, b, op, size, values in rows]
    samples = pd.concat(frames, ignore_index=True)
    measurements = pd.DataFrame()
    if options is not None:
        samples["build"] = Build(version, options).id
        measurements = pd.DataFrame([{"algorithm": a, "backend": b, "operation": op, "message_bytes": size,
                                      "build": Build(version, options).id, "library_version": version,
                                      "implementation": f"liboqs {version} ({options} build)"
                                      + (" via C runner" if b == "native" else "")}
                                     for a, b, op, size, _ in rows])
        meta = ({**liboqs_meta(options, version), **(meta or {})} if meta is None or "liboqs" not in meta
                else meta)
        if rows[0][1] == "native":
            # the C runner's runs carry no build record
            meta = {k: v for k, v in meta.items() if k != "liboqs"}
    return SimpleNamespace(run_id=run_id, meta=meta or {}, samples=samples, measurements=measurements)


def spread(center, n=40, seed=0, rel=0.02):
    return center * (1 + rel * np.random.default_rng(seed).standard_normal(n))


def published_row(**change):
    """The published ratios with one row's fields changed (a published ratio of another side, say)."""
    p = published_ratios()
    if change:
        p = p[p["algorithm"] == change.pop("algorithm_of", change.get("algorithm", "ML-KEM-768"))].copy()
        for k, v in change.items():
            p[k] = v
        p["ratio"] = p["numerator_value"] / p["denominator_value"]
    return p


def side(**change):
    """known_differences.yaml with the liboqs-bench side changed."""
    known = known_differences()
    known["published_sides"]["liboqs-bench"].update(change)
    return known


def test_published_ratio_is_computed_from_the_values_and_no_band_is_applied():
    kem = published_ratios().set_index("algorithm").loc["ML-KEM-768"]
    assert kem.ratio == pytest.approx(39063 / 46358)
    assert "band_low" not in published_ratios()
    checks = check_published_ratios(fake_run([
        ("ML-KEM-768", "liboqs", "encaps", None, spread(8_400)),
        ("ML-KEM-768", "liboqs", "decaps", None, spread(10_000, seed=1))]))
    assert not any("band" in c for c in checks.columns) and not checks["status"].str.contains("band").any()


def test_known_differences_carry_their_provenance():
    known = known_differences()
    text = yaml.safe_dump(reference_source("within_machine_ratios"), width=1_000_000)
    assert set(known["published_sides"]) == set(reference_source("within_machine_ratios")["sources"])
    for s in known["published_sides"].values():  # structured from sources.yaml, never beyond it
        assert s["version"] in text and s["commit"] in text and s["library"] in text
        assert all(re.search(rf"\b{e}\b", text) for e in s["cpu_extensions"]) and s["source"] in text
        assert s["uncertainty"] is None and s["uncertainty_note"]  # sources.yaml: no spread published
    ids = [d["id"] for d in known["differences"]]
    assert len(ids) == len(set(ids)) and "hqc-2025-08-22" in ids and "hqc-cve-2025-52473" in ids
    for d in known["differences"] + known["same_code"]:
        assert d["algorithms"] and d["source"].startswith("https://"), d
    for d in known["differences"]:
        assert d["difference"] and d["before"] and d["after"] and d["library"] == "liboqs"
        assert (re.fullmatch(r"\d+\.\d+\.\d+", str(d["change"]["release"]))
                and re.fullmatch(r"\d{4}-\d\d-\d\d", str(d["change"]["date"]))
                and re.fullmatch(r"[0-9a-f]{40}", d["change"]["commit"]))
    cve = next(d for d in known["differences"] if d["id"] == "hqc-cve-2025-52473")
    assert "CVE-2025-52473" in cve["difference"] and str(cve["change"]["release"]) == "0.14.0"


def test_the_closest_message_length_and_only_the_published_backend():
    ours = fake_run([
        ("ML-KEM-768", "liboqs", "encaps", None, spread(8_400)),
        ("ML-KEM-768", "liboqs", "decaps", None, spread(10_000, seed=1)),
        # ML-DSA-44 at two lengths: the one nearest to the published 50 bytes (64) is used; it is 10x off
        ("ML-DSA-44", "liboqs", "sign", 64, spread(260_000)),
        ("ML-DSA-44", "liboqs", "verify", 64, spread(26_000, seed=2)),
        ("ML-DSA-44", "liboqs", "sign", 100_000, spread(60_000)),
        ("ML-DSA-44", "liboqs", "verify", 100_000, spread(26_000)),
        # another backend's SPHINCS+ is not the published implementation: not compared
        ("SPHINCS+-SHAKE-128f-simple", "bouncycastle", "sign", 100, spread(1e6)),
        ("SPHINCS+-SHAKE-128f-simple", "bouncycastle", "verify", 100, spread(1e5)),
    ])
    checks = check_published_ratios([ours, None]).set_index("algorithm")
    assert set(checks.index) == {"ML-KEM-768", "ML-DSA-44"}
    kem, dsa = checks.loc["ML-KEM-768"], checks.loc["ML-DSA-44"]
    assert kem.status == "agrees" and kem.ours_ci_low < kem.published < kem.ours_ci_high
    assert kem.ours == pytest.approx(0.84, rel=0.03) and kem.statistic == kem.published_statistic == "mean"
    assert (dsa.ours_message_bytes == 64 and dsa.ours == pytest.approx(10, rel=0.05)
            and dsa.status.startswith("differs"))
    # what ran on each side, from the rows and sources.yaml/known_differences.yaml
    assert dsa.published_implementation.startswith("liboqs 0.13.1-dev") and dsa.published_caller == "C"
    assert "none stated" in dsa.published_uncertainty


def test_a_ratio_a_fifth_off_on_different_code_is_explained_not_agreeing():
    """Today's band (x1.25) calls this "within band"; its two sides ran different code."""
    p = published_ratios().set_index("algorithm").loc["ML-DSA-44"]
    rows = [("ML-DSA-44", "liboqs", "sign", 50, spread(p.ratio * 1.2 * 26_000)),
            ("ML-DSA-44", "liboqs", "verify", 50, spread(26_000, seed=2))]
    default = fake_run([("ML-KEM-768", "liboqs", "encaps", None, spread(8_400))], options="default",
                       run_id="d")
    row = check_published_ratios([fake_run(rows, options="generic", run_id="g"), default]).iloc[0]
    assert row.ours == pytest.approx(p.ratio * 1.2, rel=0.03) and row.ours_ci_high < p.ratio * 1.25
    assert row.status == "differs: explained" and row.status != "agrees"
    assert (row.ours_code_path, row.published_code_path) == ("portable C", "optimised (avx2)")
    assert "another code path" in row.explained_by and row.build == "liboqs-0.13.0+generic"
    assert row.ours_implementation == "liboqs 0.13.0 (generic build)" and row.ours_version == "0.13.0"


def test_the_same_implementation_and_version_apart_beyond_uncertainty_is_unexplained():
    """Both sides ran liboqs 0.13.0's optimised code from Python at the same length: nothing explains a
    gap."""
    p = published_ratios().set_index("algorithm").loc["ML-DSA-44"]
    rows = [("ML-DSA-44", "liboqs", "sign", 50, spread(p.ratio * 1.2 * 26_000)),
            ("ML-DSA-44", "liboqs", "verify", 50, spread(26_000, seed=2))]
    same = side(version="0.13.0", commit=None, commit_date=None, caller="Python", cpu_extensions=EXTENSIONS)
    row = check_published_ratios(fake_run(rows, options="default"), known=same).iloc[0]
    assert (row.ours_code_path, row.ours_version) == (row.published_code_path, row.published_version)
    assert row.status == "differs: unexplained" and row.explanations == "unexplained" and not row.explained_by
    # the same gap between different versions with no change on record is unexplained too
    later = side(version="0.13.1-dev", caller="Python", cpu_extensions=EXTENSIONS)
    later["same_code"] = []
    row = check_published_ratios(fake_run(rows, options="default"), known=later).iloc[0]
    assert (row.status == "differs: unexplained"
            and "no change to this algorithm between them on record" in row.differences)


def test_a_change_between_versions_explains_only_where_one_side_has_it():
    """HQC in liboqs 0.13 predates the CVE-2025-52473 fix and the 2025 specification; a published HQC-128
    ratio from liboqs 0.16 has both.  Its SHA3 for AVX-512 does not count on a CPU without AVX-512."""
    p = published_row(algorithm="HQC-128", algorithm_of="ML-KEM-768", numerator_value=30_000,
                      denominator_value=60_000)
    # below theirs: no cost per call explains it
    rows = [("HQC-128", "liboqs", "encaps", None, spread(20_000)),
            ("HQC-128", "liboqs", "decaps", None, spread(60_000, seed=3))]
    new = side(version="0.16.0", commit=None, commit_date=None)
    row = check_published_ratios(fake_run(rows, options="default"), p, known=new).iloc[0]
    assert row.status == "differs: explained"
    assert set(row.explained_by.split(", ")) == {"hqc-cve-2025-52473", "hqc-2025-08-22"}
    assert "pull/2407" in row.explanation_sources and "releases/tag/0.14.0" in row.explanation_sources
    assert "in theirs only" in row.explanations and "AVX512" in row.differences
    # both sides on liboqs 0.16: the changes explain nothing
    row = check_published_ratios(fake_run(rows, options="default", version="0.16.0"), p, known=new).iloc[0]
    assert row.status == "differs: unexplained"
    # ML-KEM: the published commit (2025-06-11) has mlkem-native v1.0.0 (2025-06-05), liboqs 0.13.0 does not
    kem = [("ML-KEM-768", "liboqs", "encaps", None, spread(10_000)),
           ("ML-KEM-768", "liboqs", "decaps", None, spread(10_000, seed=1))]
    row = check_published_ratios(fake_run(kem, options="default")).iloc[0]
    assert "mlkem-native-v1.0.0" in row.explained_by and "pull/2146" in row.explanation_sources
    row = check_published_ratios(fake_run(kem, options="default", version="0.14.0")).iloc[0]
    assert "mlkem-native" not in row.explained_by


def test_the_call_from_python_explains_only_towards_one_within_the_fastest_call_or_where_c_agrees():
    # liboqs-python's rows are the ones called from Python (backend liboqs loops in C): theirs, published for
    # liboqs, set beside them
    pub = published_ratios().replace({"backend": {"liboqs": "liboqs-python"}})
    p = pub.set_index("algorithm").loc["ML-KEM-768"]
    none_on_record = side()
    none_on_record["differences"] = []

    def kem(cost, run_id="r", backend="liboqs-python"):
        return [("ML-KEM-768", backend, "encaps", None, spread(39_063 / 4 + cost, rel=0.005)),
                ("ML-KEM-768", backend, "decaps", None, spread(46_358 / 4 + cost, seed=1, rel=0.005))]

    toward = check_published_ratios(fake_run(kem(3_000), options="default"), pub,
                                    known=none_on_record).iloc[0]
    assert p.ratio < toward.ours < 1 and toward.status == "differs: explained"
    assert (toward.explained_by == "the call from Python"
            and "per call would move theirs to ours" in toward.explanations)
    away = check_published_ratios(fake_run(kem(-3_000), options="default"), pub, known=none_on_record).iloc[0]
    assert away.ours < p.ratio and away.status == "differs: unexplained" and "other side" in away.differences
    # pqlab's C runner on the same machine: agreeing with theirs, it confirms the call; apart, it rules it out
    python = fake_run(kem(3_000), options="default")
    agrees = fake_run(kem(0, backend="native"), options="default", run_id="c")
    row = check_published_ratios([python, agrees], pub,
                                 known=none_on_record).set_index("backend").loc["liboqs-python"]
    assert row.explained_by == "the call from Python" and "C runner on this machine gives" in row.explanations
    apart = fake_run(kem(3_000, backend="native"), options="default", run_id="c")
    row = check_published_ratios([python, apart], pub,
                                 known=none_on_record).set_index("backend").loc["liboqs-python"]
    assert row.status == "differs: unexplained" and "not the cause" in row.differences


def test_another_message_length_is_measured_from_our_own_lengths():
    # called from Python, as theirs
    pub = published_ratios().replace({"backend": {"liboqs": "liboqs-python"}})
    p = pub.set_index("algorithm").loc["ML-DSA-44"]  # published at 50 bytes
    k, v0 = 100.0, 100_000.0  # ns per byte hashed by both operations, verify's fixed part
    s0 = p.ratio * (v0 + k * 50) - k * 50  # sign's fixed part: the published ratio holds at 50 bytes

    def at(*lengths):
        return [row for n in lengths for row in (
            ("ML-DSA-44", "liboqs-python", "sign", n, spread(s0 + k * n, rel=0.005)),
            ("ML-DSA-44", "liboqs-python", "verify", n, spread(v0 + k * n, seed=4, rel=0.005)))]

    python = side(caller="Python")  # a length adds the same cost to both calls, as a call from Python would
    two = check_published_ratios(fake_run(at(1_000, 2_000), options="default"), pub, known=python).iloc[0]
    assert two.ours_message_bytes == 1_000 and two.status == "differs: explained"
    assert two.explained_by == "another message length" and "which agrees" in two.explanations
    one = check_published_ratios(fake_run(at(1_000), options="default"), pub, known=python).iloc[0]
    assert one.status == "differs: unexplained" and "one length" in one.differences


def test_a_side_without_rounds_has_no_interval_and_no_verdict():
    rows = [("ML-KEM-768", "liboqs", "encaps", None, spread(20_000)),
            ("ML-KEM-768", "liboqs", "decaps", None, spread(10_000))]
    row = check_published_ratios(fake_run(rows, rounds=False)).iloc[0]
    assert row.status == "no interval" and np.isnan(row.ours_ci_low)


def test_description_says_what_is_explained_by_what_and_what_is_not():
    p = published_ratios().set_index("algorithm")
    explained = fake_run([
        ("ML-DSA-44", "liboqs", "sign", 50, spread(p.loc["ML-DSA-44"].ratio * 1.2 * 26_000)),
        ("ML-DSA-44", "liboqs", "verify", 50, spread(26_000, seed=2))], options="generic", run_id="g")
    unexplained = fake_run([("SPHINCS+-SHAKE-128f-simple", "liboqs", "sign", 50, spread(1.65e7)),
                            ("SPHINCS+-SHAKE-128f-simple", "liboqs", "verify", 50, spread(1e6, seed=5)),
                            ("ML-KEM-768", "liboqs", "encaps", None, spread(8_400)),
                            ("ML-KEM-768", "liboqs", "decaps", None, spread(10_000, seed=1))],
                           options="default", run_id="d")
    checks = check_published_ratios([explained, unexplained])
    assert set(checks["status"]) == {"differs: explained", "differs: unexplained", "agrees"}
    text = describe_ratio_checks(checks)
    assert "band" not in text and "no interval" in text and "95 %" in text
    assert "github.com/open-quantum-safe/liboqs" in text and "known_differences.yaml" in text
    summary = text.split("\n\n")[-1]
    assert ("**Explained**: ML-DSA-44 sign / verify (build liboqs-0.13.0+generic) by another code path"
            in summary)
    assert ("**Unexplained**: SPHINCS+-SHAKE-128f-simple sign / verify" in summary
            and "**Agree**: ML-KEM-768" in summary)
    assert "1 differs with an explanation, 1 differs with none on record" in text
    for r in checks.itertuples():  # every number in the text comes from the table
        assert f"{r.ours:.2f}×" in text and f"{r.published:.2f}×" in text
    assert describe_ratio_checks(check_published_ratios(
        fake_run([("X", "liboqs", "sign", 1, [1.0])]))).startswith("No ")
