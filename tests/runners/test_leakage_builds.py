"""The liboqs screen program on any of pqlab's builds (issue #47): ``KEM-decaps@BUILD`` screened in a worker
process that loads the build, Kyber-768's crafted classes (a known message whatever the key), and the one-line
refusals of a target no build or release has."""
from __future__ import annotations

import pytest

from pqlab.checks import leakage
from pqlab.core.errors import BadInput, UnknownName
from pqlab.runners import leakage as programs


def test_a_build_target_names_its_build_and_kyber768_gets_the_crafted_classes():
    entry = programs.target(programs.LIBOQS, "Kyber768-decaps@liboqs-0.9.0")
    assert entry["build"] == "liboqs-0.9.0" and entry["version"] == "0.9.0"
    assert entry["classes"] == ["valid", "invalid-first", "invalid-last", "zero-message", "ones-message"]
    hqc = programs.target(programs.LIBOQS, "HQC-128-decaps@liboqs-0.13.0+clang19+Os")
    assert hqc["build"] == "liboqs-0.13.0+clang19+Os" and "zero-message" not in hqc["classes"]
    for ct in programs.CRAFTED.values():  # Kyber-768's ciphertext: 3 x 320 bytes of u, 128 of v
        assert len(ct) == 1088 and ct[:960] == bytes(960)


@pytest.mark.parametrize("name, error, words", [
    ("ML-KEM-768-decaps@liboqs-0.9.0", UnknownName, "close matches: Kyber768"),
    ("Kyber76-decaps@liboqs-0.9.0", UnknownName, "close matches: Kyber768"),
    ("Kyber768-decaps@liboqs-0.9.1", BadInput, "liboqs 0.9.1 is not a build here"),
    ("Kyber768-sign@liboqs-0.9.0", UnknownName, "Kyber768-decaps@liboqs-0.9.0"),
])
def test_a_target_no_build_or_release_has_is_refused_before_anything_runs(name, error, words):
    with pytest.raises(error) as refused:
        leakage.screen(programs.LIBOQS, name, blocks=40)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_another_builds_screen_runs_in_a_worker_that_loads_it_and_checks_every_class():
    s = leakage.screen(programs.LIBOQS, "Kyber768-decaps@liboqs-0.9.0",
                       classes=["zero-message", "ones-message", "valid"], blocks=40, warmup_blocks=2,
                       processes=1)
    assert s.verdict in (leakage.LEAK, leakage.NO_LEAK, leakage.UNRESOLVED, leakage.NO_VERDICT), s.reason
    assert s.times.shape == (40, 3) and (s.times > 0).all() and s.version == "0.9.0"
    request = {"target": "Kyber768-decaps@liboqs-0.9.0", "classes": ["zero-message", "valid"],
               "order": [[0, 1], [1, 0]]}
    document = programs.run(programs.LIBOQS, request)
    assert document["build"] == "liboqs-0.9.0" and document["checked"] == 4  # each call's secret checked
