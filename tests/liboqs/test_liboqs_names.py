"""liboqs's names per release and what they mean (issue #30, "names that survive renames"): the two
transcribed tables agree with each other and with their provenance, the known renames hold, and every liboqs
name the notebooks' parameters ask for resolves on liboqs 0.14.0, 0.15.0 and 0.16.0, to itself, to the
release's new name for the same algorithm, or to a one-line refusal that names what the release has
instead."""
from __future__ import annotations

import ast
import doctest
import json
import re
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.paths import ROOT
from pqlab.core.references import load_reference, reference_source
from pqlab.liboqs import names as L

EXPECTED_RELEASES = ("0.9.0", "0.12.0", "0.13.0", "0.14.0", "0.15.0", "0.16.0")
#: OQS_KEM_algs_length / OQS_SIG_algs_length of each tag's kem.h / sig.h, read by hand (0.15.0 and 0.16.0:
#: "65 + OQS_SIG_SLH_DSA_algs_length" with OQS_SIG_SLH_DSA_algs_length 156)
HEADER_LENGTHS = {"0.9.0": (26, 17), "0.12.0": (29, 44), "0.13.0": (29, 56), "0.14.0": (29, 68),
                  "0.15.0": (35, 65 + 156), "0.16.0": (41, 65 + 156)}
HEADERS = {"kem": "src/kem/kem.h", "sig": "src/sig/sig.h"}
#: the releases the issue's test simulates
SIMULATED = ("0.14.0", "0.15.0", "0.16.0")


def _baseline() -> str:
    """The liboqs release pqlab builds (native/liboqs/0.13.0/Cargo.lock's oqs-sys ``0.11.0+liboqs-0.13.0``):
    the notebooks' names mean what they mean there."""
    lock = (ROOT / "native" / "liboqs" / "0.13.0" / "Cargo.lock").read_text(encoding="utf-8")
    version = re.search(r'name = "oqs-sys"\nversion = "([^"]+)"', lock)[1]
    return version.split("+liboqs-")[1]


BASELINE = _baseline()


# --- the tables ------------------------------------------------------------------------------------------


def test_releases_are_complete_and_ordered():
    assert L.RELEASES == EXPECTED_RELEASES
    assert BASELINE in L.RELEASES


@pytest.mark.parametrize("release", EXPECTED_RELEASES)
def test_counts_match_the_headers_lengths(release):
    kem, sig = HEADER_LENGTHS[release]
    assert (len(L.names(release, "kem")), len(L.names(release, "sig"))) == (kem, sig)
    tags = reference_source("liboqs_names")["tags"]
    assert (tags[release]["kem"], tags[release]["sig"]) == (kem, sig)
    assert L.names(release) == L.names(release, "kem") + L.names(release, "sig")
    assert len(set(L.names(release))) == kem + sig


def test_every_row_names_its_header_tag_and_commit():
    df = load_reference("liboqs_names")
    tags = reference_source("liboqs_names")["tags"]
    assert len(df) == reference_source("liboqs_names")["rows"] == sum(map(sum, HEADER_LENGTHS.values()))
    for row in df.astype(str).to_dict("records"):
        assert row["source"] == f"{HEADERS[row['kind']]}@{row['release']}", row
        assert (row["commit"] == tags[row["release"]]["commit"]
                and re.fullmatch(r"[0-9a-f]{40}", row["commit"]))
        assert row["macro"].startswith(f"OQS_{row['kind'].upper()}_alg_"), row


@pytest.mark.parametrize("stem", ["liboqs_names", "liboqs_meanings"])
def test_provenance_entries(stem):
    df = load_reference(stem)
    src = df.attrs["source"]
    for key in ("study", "notebook", "rows", "sources", "machine", "method", "units", "columns",
                "transcription_notes", "anomalies", "repository", "tags"):
        assert src.get(key), key
    assert len(df) == src["rows"]
    assert set(df.columns) <= set(src["columns"])
    assert all(url.startswith("https://github.com/open-quantum-safe/liboqs")
               for url in src["sources"].values())
    for release in EXPECTED_RELEASES:
        assert re.fullmatch(r"[0-9a-f]{40}", src["tags"][release]["commit"])


def test_every_name_of_every_release_has_exactly_one_meaning():
    for release in L.RELEASES:
        for name in L.names(release):
            rows = [m for m in L.history(name) if m.covers(release)]
            assert len(rows) == 1, (name, release, rows)
            assert L.meaning(name, release) == rows[0].algorithm


def test_meaning_rows_cover_only_releases_that_list_the_name():
    for rows in map(L.history, {m.name for m in L._meanings()}):
        covered = [r for m in rows for r in L.RELEASES if m.covers(r)]
        assert len(covered) == len(set(covered)), rows[0].name  # no overlap
        assert all(rows[0].name in L.names(r, rows[0].kind) for r in covered), rows[0].name
        assert covered == list(L.RELEASES[L.RELEASES.index(covered[0]):L.RELEASES.index(covered[-1]) + 1])


def test_same_as_previous_release_says_what_the_ids_say():
    for name in {m.name for m in L._meanings()}:
        rows = L.history(name)
        assert rows[0].same_as_previous_release == "new", name
        for before, row in zip(rows, rows[1:]):
            assert row.same_as_previous_release == ("yes" if row.algorithm == before.algorithm else "no"), row
            assert row.note and "@" in row.source, row  # a change is explained, with its source


def test_one_algorithm_id_means_one_algorithm():
    """An id has one KAT digest (where liboqs has a KAT) and one lineage; a release names each id once; two
    ids under one name have different KATs."""
    df = load_reference("liboqs_meanings").fillna("")
    for algorithm, rows in df.groupby("algorithm"):
        assert len(set(rows["kat_sha256"])) == 1 and len(set(rows["lineage"])) == 1, algorithm
    for release in L.RELEASES:
        ids = Counter(L.meaning(n, release) for n in L.names(release))
        assert max(ids.values()) == 1, [a for a, n in ids.items() if n > 1]
    for name, rows in df[df["kat_sha256"] != ""].groupby("name"):
        assert rows.groupby("algorithm")["kat_sha256"].first().is_unique, name


# --- the known facts ------------------------------------------------------------------------------------


def test_sphincs_round3_is_gone_in_0_16_and_slh_dsa_is_offered_as_another_algorithm():
    assert "SPHINCS+-SHA2-128f-simple" in L.names("0.15.0", "sig")
    assert "SPHINCS+-SHA2-128f-simple" not in L.names("0.16.0")
    alg = L.meaning("SPHINCS+-SHA2-128f-simple", BASELINE)
    assert alg == "SPHINCS+-round3-SHA2-128f-simple"
    with pytest.raises(BadInput) as err:
        L.name_for(alg, "0.16.0")
    text = str(err.value)
    assert "\n" not in text and "not in liboqs 0.16.0" in text
    assert ("SLH-DSA-SHA2-128f (FIPS 205) as SLH_DSA_PURE_SHA2_128F" in text
            and "not the same algorithm" in text)
    with pytest.raises(UnknownName) as err:
        L.meaning("SPHINCS+-SHA2-128f-simple", "0.16.0")
    assert "0.16.0" in str(err.value) and "0.9.0 to 0.15.0" in str(err.value)


def test_hqc_128_of_0_13_is_the_2023_hqc_and_hqc_1_of_0_16_the_2025_one():
    assert L.meaning("HQC-128", "0.13.0") == "HQC-2023-128"
    assert L.meaning("HQC-1", "0.16.0") == "HQC-2025-1"
    assert "HQC-128" not in L.names("0.16.0") and "HQC-1" not in L.names("0.15.0")
    assert L.changed_between("HQC-128", "0.9.0", "0.13.0")  # round 3, then the 2023 version
    assert not L.changed_between("HQC-128", "0.13.0", "0.15.0")  # the CVE fix of 0.14.0 keeps the algorithm
    with pytest.raises(BadInput, match=r"there: HQC-2025-1 as HQC-1 \(related, not the same algorithm"):
        L.name_for("HQC-2023-128", "0.16.0")


def test_frodokem_changes_meaning_at_0_16_and_the_old_one_is_efrodokem():
    assert L.changed_between("FrodoKEM-640-AES", "0.15.0", "0.16.0")
    assert not L.changed_between("FrodoKEM-640-AES", "0.9.0", "0.15.0")
    assert L.meaning("FrodoKEM-640-AES", "0.16.0") == "FrodoKEM-640-AES (salted)"
    unsalted = L.meaning("FrodoKEM-640-AES", BASELINE)
    assert unsalted == "FrodoKEM-640-AES (unsalted)"
    assert L.name_for(unsalted, "0.16.0") == "eFrodoKEM-640-AES"
    assert L.name_for(unsalted, "0.15.0") == "FrodoKEM-640-AES"


def test_dilithium_is_gone_in_0_15_and_ml_dsa_is_offered():
    assert "Dilithium2" in L.names("0.14.0") and "Dilithium2" not in L.names("0.15.0")
    with pytest.raises(BadInput, match=r"there: ML-DSA-44 \(FIPS 204\) as ML-DSA-44 \(related, not the same"):
        L.name_for(L.meaning("Dilithium2", "0.14.0"), "0.15.0")


def test_a_changed_implementation_keeps_the_meaning():
    assert not L.changed_between("ML-KEM-768", "0.12.0", "0.16.0")
    assert not L.changed_between("ML-DSA-44", "0.12.0", "0.16.0")
    assert not L.changed_between("Falcon-512", "0.9.0", "0.16.0")
    steps = {m.first_release: m for m in L.history("ML-KEM-768")}
    assert steps["0.13.0"].same_as_previous_release == "yes" and "mlkem-native" in steps["0.13.0"].note
    assert "RELEASE.md@0.13.0" in steps["0.13.0"].source
    assert "mldsa-native" in {m.first_release: m for m in L.history("ML-DSA-44")}["0.16.0"].note


def test_round_two_updates_of_mayo_and_cross_change_the_meaning():
    assert L.changed_between("MAYO-1", "0.12.0", "0.13.0")
    assert L.changed_between("cross-rsdp-128-fast", "0.12.0", "0.13.0")
    assert not L.changed_between("cross-rsdp-128-fast", "0.13.0", "0.16.0")  # CROSS 2.0 and 2.2: one KAT


@pytest.mark.parametrize("name, first", [("SLH_DSA_PURE_SHA2_128F", "0.15.0"),
                                         ("SLH_DSA_SHA2_256_PREHASH_SHAKE_256S", "0.15.0"),
                                         ("SNOVA_24_5_4", "0.14.0"), ("mqom2_cat1_gf16_fast_r3", "0.16.0"),
                                         ("NTRU-HPS-2048-509", "0.15.0"), ("ML-KEM-768", "0.12.0")])
def test_additions(name, first):
    assert L.history(name)[0].first_release == first
    assert [r for r in L.RELEASES if name in L.names(r)][0] == first


def test_bad_input_is_refused_in_one_line_with_what_exists():
    with pytest.raises(UnknownName, match="0.16.0"):
        L.names("0.17.0")
    with pytest.raises(UnknownName, match="close matches: Dilithium2"):
        L.meaning("Dilitium2", "0.13.0")
    with pytest.raises(UnknownName, match=r"SLH-DSA-SHA2-128f \(FIPS 205\)"):
        L.name_for("SLH-DSA-SHA2-128f", "0.16.0")
    with pytest.raises(UnknownName, match="kem, sig"):
        L.names("0.16.0", "kems")


def test_no_liboqs_is_loaded_and_the_examples_hold():
    code = ("import sys, pqlab.liboqs.names as m; m.meaning('HQC-1', '0.16.0'); "
            "print(sorted(k for k in sys.modules if 'oqs' in k and k not in ('pqlab.liboqs', m.__name__)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    assert doctest.testmod(L).failed == 0


# --- the issue's test: the notebooks' liboqs names on 0.14.0, 0.15.0 and 0.16.0 -----------------------------

#: parameters whose names go to another library than liboqs (the intersection would count them otherwise)
NOT_LIBOQS = {
    ("01_aes_rsa_sphincs", "bc_algorithms"): "Bouncy Castle's names (the Java runner)",
    ("06_tls_handshake", "groups"): "TLS groups of the OpenSSL runner",
    ("06_tls_handshake", "signatures"): "certificate chains of the OpenSSL runner",
    ("06_tls_handshake", "handshake_pairs"): "TLS pairs of the OpenSSL runner",
    ("06_tls_handshake", "report_pairs"): "TLS pairs of the OpenSSL runner",
}
#: parameters whose values are parts of liboqs names (interop.check_round3_internal: SPHINCS+-<set>-simple)
DERIVED = {"round3_sets": lambda value: f"SPHINCS+-{value}-simple"}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def notebook_parameters() -> dict[tuple[str, str], dict]:
    """(notebook stem, "quick" | "full") -> its parameters: the literal
    ``parameters`` cell, the params yaml."""
    found = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
        tree = ast.parse("".join(cell["source"]))
        found[(path.stem, "quick")] = {t.id: ast.literal_eval(node.value) for node in tree.body
                                       if isinstance(node, ast.Assign) for t in node.targets}
        params = ROOT / "notebooks" / "params" / f"{path.stem}.yaml"
        if params.exists():
            found[(path.stem, "full")] = yaml.safe_load(params.read_text(encoding="utf-8"))
    return found


def asked_names() -> list[tuple[str, str, str, str]]:
    """(notebook, profile, parameter, liboqs name) for every value of a notebook's parameters that is a liboqs
    name of any listed release."""
    every = {n for r in L.RELEASES for n in L.names(r)}
    asked = []
    for (stem, profile), params in notebook_parameters().items():
        for key, value in params.items():
            if (stem, key) in NOT_LIBOQS:
                continue
            for s in _strings(value):
                name = DERIVED[key](s) if key in DERIVED else s
                if name in every:
                    asked.append((stem, profile, key, name))
    return asked


def outcome(name: str, release: str) -> str:
    """What asking for `name` (meaning what it means on the baseline) gives on `release`: ``same``,
    ``renamed: NEW`` or ``refused: MESSAGE``."""
    try:
        got = L.name_for(L.meaning(name, BASELINE), release)
    except BadInput as err:
        return f"refused: {err}"
    return "same" if got == name else f"renamed: {got}"


def test_the_notebooks_ask_for_liboqs_names_and_all_exist_on_the_baseline():
    asked = asked_names()
    stems = {stem for stem, *_ in asked}
    assert {"01_aes_rsa_sphincs", "02_message_scaling", "03_memory_footprint", "04_signature_cycles",
            "05_energy", "06_tls_handshake", "07_atlas", "08_implementations", "09_timing_leakage"} == stems
    for *_, name in asked:
        assert name in L.names(BASELINE), name


@pytest.mark.parametrize("release", SIMULATED)
def test_every_notebook_name_resolves_or_is_refused_clearly(release):
    for stem, profile, key, name in asked_names():
        result = outcome(name, release)
        if result.startswith("refused: "):
            text = result.removeprefix("refused: ")
            assert ("\n" not in text
                    and f"not in liboqs {release}; there: " in text), (stem, profile, key, text)
            offered = re.findall(r" as (\S+) \(related, not the same algorithm", text)
            assert offered and all(n in L.names(release) for n in offered), (stem, profile, key, text)
        elif result.startswith("renamed: "):
            assert result.removeprefix("renamed: ") in L.names(release)
        else:
            assert name in L.names(release) and not L.changed_between(name, BASELINE, release)


def test_what_breaks_where():
    """The per-release outcome of the notebooks' names: nothing breaks on 0.14.0 and 0.15.0; on 0.16.0 the
    round-3 SPHINCS+ sets and HQC-128/192/256 are refused (SLH-DSA and the 2025 HQC offered) and the unsalted
    FrodoKEM is eFrodoKEM."""
    asked = sorted({name for *_, name in asked_names()})
    table = {r: {n: outcome(n, r).split(" ")[0].rstrip(":") for n in asked} for r in SIMULATED}
    assert set(table["0.14.0"].values()) == set(table["0.15.0"].values()) == {"same"}
    changed = {n: o for n, o in table["0.16.0"].items() if o != "same"}
    assert {n for n, o in changed.items() if o == "renamed"} == {"FrodoKEM-640-AES", "FrodoKEM-976-AES",
                                                                  "FrodoKEM-1344-AES"}
    assert {n for n, o in changed.items() if o == "refused"} == \
        {n for n in asked if n.startswith("SPHINCS+-") or n in ("HQC-128", "HQC-192", "HQC-256")}


def test_the_conda_route_admits_exactly_the_releases_the_notebooks_run_on():
    """environment.yml takes liboqs from conda-forge: its bounds admit the simulated releases on which every
    notebook name means what it means on the baseline, and no other."""
    from packaging.specifiers import SpecifierSet

    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    spec = next(d for d in env["dependencies"] if isinstance(d, str) and re.match(r"liboqs\b", d))
    admitted = SpecifierSet(spec.removeprefix("liboqs").strip())
    asked = sorted({name for *_, name in asked_names()})
    runs = {r: all(outcome(n, r) == "same" for n in asked) for r in SIMULATED}
    assert {r: r in admitted for r in SIMULATED} == runs


def test_on_a_newer_release_every_notebook_name_is_measured_or_stood_in_for_and_says_so():
    """Issue #44: the notebooks run on liboqs 0.16.0 (a source tree's build): a name the release no longer
    lists is measured as the release's name for the same algorithm, or for the one related algorithm of its
    lineage, with a sentence that says which; a release from before a name stands in nothing."""
    for *_, name in asked_names():
        for release in SIMULATED:
            there, why = L.stand_in(name, release)
            assert name in L.names(release) or (there in L.names(release) and why), (name, release)
    there, why = L.stand_in("SPHINCS+-SHA2-128f-simple", "0.16.0")
    assert there == "SLH_DSA_PURE_SHA2_128F" and "a related algorithm, not the same one" in why
    assert L.stand_in("HQC-128", "0.16.0")[0] == "HQC-1"
    assert L.stand_in("ML-KEM-768", "0.9.0") == ("", "") and L.stand_in("ML-KEM-768", "0.16.0") == ("", "")
    assert "salted" not in L.meaning_changed("ML-KEM-768", "0.16.0", "0.13.0")
    assert L.meaning_changed("ML-KEM-768", "0.16.0", "0.13.0") == ""
    assert "FrodoKEM-640-AES in liboqs 0.16.0 is" in L.meaning_changed("FrodoKEM-640-AES", "0.16.0", "0.13.0")
