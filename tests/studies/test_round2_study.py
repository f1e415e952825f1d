"""pqlab.studies.round2_study: study 003's own numbers, and which of today's sets and builds its
ancestors face, on what basis, from the reference code's constants and the study's numbers."""
from __future__ import annotations

import pandas as pd
import pytest

from pqlab.core.references import load_reference
from pqlab.studies import round2_study as R


@pytest.fixture(scope="module")
def recomputed():
    return R.recompute_reference(load_reference(R.REFERENCE_TABLE))


def test_reference_recomputation_reproduces_the_known_counts(recomputed):
    counts = R.count_reference_matches(recomputed)
    assert counts["rows"] == 105
    assert counts["sign_matches"] == 105
    assert counts["verify_matches"] == 11
    assert counts["verify_is_permutation"] is True
    assert counts["verify_from_other_rows"] == 94
    assert counts["clock_hz"] == 1.895e9
    assert counts["per_family"]["rows"].sum() == 105
    # GeMMS ref-256: 219134649 cycles at 1.895 GHz is 0.115638 s, published 0.000139 s
    row = recomputed[recomputed["row"] == 57].iloc[0]
    assert row["verify_time_recomputed_s"] == pytest.approx(0.115638)
    assert not row["verify_time_matches"]
    # Dilithium weak, ref and opt
    assert row["verify_time_s"] == 0.000139 and row["verify_time_belongs_to"] == "4,5"
    text = R.describe_reference(counts)
    assert "105 of 105" in text and "11 of 105" in text


def test_heirs_by_name(recomputed):
    assert R.sphincs_heir("sha256-128f") == "SPHINCS+-SHA2-128f-simple"
    assert R.sphincs_heir("shake256-256s") == "SPHINCS+-SHAKE-256s-simple"
    assert R.sphincs_heir("haraka-128f") is None
    pairs = R.ancestor_pairs(recomputed)
    assert set(pairs["algorithm"]) >= {"ML-DSA-44", "ML-DSA-65", "Falcon-512", "Falcon-1024",
                                       "SPHINCS+-SHA2-128f-simple"}
    assert "basis" not in pairs  # computed from the code, never typed


def test_constant_expressions_evaluate_as_c_does():
    assert R.evaluate("((Q - 1)/16)", {"Q": 8380417}) == 523776
    assert R.evaluate("(1 << 17)", {}) == 131072 and R.evaluate("((Q-1)/88)", {"Q": 8380417}) == 95232
    with pytest.raises(ValueError, match="unsupported"):
        R.evaluate("__import__('os')", {})


def test_round2_sphincs_lengths_follow_from_the_code():
    sets = R.sphincs_round2_sizes().set_index("parameter_set")
    # the round-2 lengths; 128f, 128s, 192s and 256f changed in round 3, 192f and 256s did not
    assert sets["signature_bytes"].to_dict() == {"128f": 16976, "128s": 8080, "192f": 35664, "192s": 17064,
                                                 "256f": 49216, "256s": 29792}
    assert sets.loc["256s", "public_key_bytes"] == 64 and sets.loc["128f", "secret_key_bytes"] == 64


def test_dilithium_lengths_follow_from_the_code_and_match_the_study_and_liboqs():
    d = R.dilithium_parameters().set_index(["revision", "mode"])
    # round 2: the study's public keys (weak, medium, recommended, very-high)
    assert [d.loc[("round2", m), "public_key_bytes"] for m in (1, 2, 3, 4)] == [896, 1184, 1472, 1760]
    assert [d.loc[("round2", m), "signature_bytes"] for m in (1, 2, 3, 4)] == [1387, 2044, 2701, 3366]
    # FIPS 204: liboqs's ML-DSA-44, -65 and -87
    assert [d.loc[("fips204", m), "public_key_bytes"] for m in (2, 3, 5)] == [1312, 1952, 2592]
    assert [d.loc[("fips204", m), "signature_bytes"] for m in (2, 3, 5)] == [2420, 3309, 4627]
    assert d.loc[("round2", 2), "TAU"] == 60 and d.loc[("fips204", 2), "GAMMA2"] == 95232


def test_pair_basis_every_case():
    same = R.pair_basis("SPHINCS+", "sha256-192f", {"public_key_bytes": 48, "secret_key_bytes": 96},
                        {"public_key_bytes": 48, "secret_key_bytes": 96, "signature_max_bytes": 35664})
    assert same == "same parameter set (public key, secret key, signature lengths equal)"
    changed = R.pair_basis("SPHINCS+", "sha256-128f", {"public_key_bytes": 32, "secret_key_bytes": 64},
                           {"public_key_bytes": 32, "secret_key_bytes": 64, "signature_max_bytes": 17088})
    assert changed == "lengths differ: signature 16,976 B → 17,088 B"
    falcon = R.pair_basis("FALCON", "512", {"public_key_bytes": 897, "secret_key_bytes": 4097},
                          {"public_key_bytes": 897, "secret_key_bytes": 1281, "signature_max_bytes": 752})
    assert falcon == "lengths differ: secret key 4,097 B → 1,281 B"
    dil = R.pair_basis("CRYSTALS-DILITHIUM", "medium", {"public_key_bytes": 1184, "secret_key_bytes": 2800},
                       {"public_key_bytes": 1312, "secret_key_bytes": 2560, "signature_max_bytes": 2420})
    assert dil.startswith("other parameter set: (k, l) 4×3 → 4×4, η 6 → 2, τ 60 → 39, d 14 → 13, "
                          "γ1 523,776 → 131,072, γ2 261,888 → 95,232, β 325 → 78")
    assert "ω" not in dil  # unchanged constants are not listed
    assert "signature 2,044 B → 2,420 B" in dil
    assert R.pair_basis("CRYSTALS-DILITHIUM", "x", {"public_key_bytes": 1, "secret_key_bytes": 1},
                        {"public_key_bytes": 1312, "secret_key_bytes": 2560, "signature_max_bytes": 2420}
                        ) == "parameters not found for these key lengths"


def _study(opt_factor: float) -> pd.DataFrame:
    rows = []
    for build, f in (("ref", 1.0), ("opt", opt_factor)):
        rows.append({"scheme": "FALCON", "parameter": "512", "build": build, "sign_cycles": 1e7 * f,
                     "verify_cycles": 1e6 * f, "row": len(rows), "public_key_bytes": 897,
                     "secret_key_bytes": 4097})
    return pd.DataFrame(rows)


def test_our_builds_follow_the_studys_opt_over_ref_both_ways(recomputed):
    assert R.our_builds(recomputed, ["FALCON"]) == {("FALCON", "ref"): R.BUILD_PORTABLE,
                                                    ("FALCON", "opt"): R.BUILD_PORTABLE}
    fast = R.our_builds(_study(0.5), ["FALCON"])  # an opt build that is twice as fast is optimised code
    assert fast[("FALCON", "opt")] == R.BUILD_OPTIMISED and fast[("FALCON", "ref")] == R.BUILD_PORTABLE
    ratios = R.study_opt_vs_ref(recomputed)
    assert (ratios.loc["CRYSTALS-DILITHIUM"] - 1).abs().to_numpy().max() < R.SAME_COST


def test_describe_pairing_says_why_each_build_faces_ours(recomputed):
    anc = pd.DataFrame([{"r2_scheme": "FALCON", "r2_parameter": "512", "r2_build": b,
                         "algorithm": "Falcon-512", "our_build": R.BUILD_PORTABLE,
                         "basis": "lengths differ: secret key 4,097 B → 1,281 B"}
                        for b in ("opt", "ref")])
    text = R.describe_pairing(recomputed, anc)
    assert "**FALCON**: the study's opt and ref cycles differ by at most 0.1 %" in text
    assert "both face our portable build" in text and "512 → Falcon-512 (lengths differ" in text
    fast = anc.assign(our_build=R.BUILD_OPTIMISED)
    assert "its opt rows face our optimised build" in R.describe_pairing(_study(0.5), fast)
    assert R.describe_pairing(recomputed, anc.iloc[:0]).startswith("No heir")


def test_caveats_apply_where_they_should(recomputed):
    from types import SimpleNamespace

    vm = SimpleNamespace(meta={"hypervisor": "kvm",
                               "frequency": {"available": False, "reason": "no cpufreq"}})
    text = R.describe_caveats(recomputed, [vm, None])
    assert ("does not say which counter" in text
            and "Turbo Boost disabled; here the frequency state is: unknown: no cpufreq" in text
            and "hypervisor (kvm)" in text)
    bare = SimpleNamespace(meta={"frequency": {"available": True, "scaling_governor": "performance",
                                               "boost": "off"}})
    stated = recomputed.copy()
    stated.attrs = {"source": {"method": "rdtsc around each call", "machine": "a desktop"}}
    assert R.describe_caveats(stated, [bare]) == ""
