"""Which implementation?  One algorithm, every implementation that ships: the analysis of notebook 08
(``08_implementations``).  "What does ML-KEM cost?" depends on whose ML-KEM: the notebook compares, with one
method, the implementations real software ships: Rust (aws-lc-rs, libcrux, RustCrypto), C (OpenSSL's EVP API),
Go (the standard library), Java (Bouncy Castle) and JavaScript (noble), each timed in a loop of its own
language by the programs of ``native/impls/``, beside the Python-reachable ones timed by pqlab's own harness
(liboqs through pqlab's lean C loop and through liboqs-python, OpenSSL inside ``cryptography``, the Rust
crates inside ``pqcrypto``, pure Python).  Every implementation is cross-checked and run through Wycheproof's
vectors before it is timed (:mod:`.measuring`); the tables (:mod:`.tables`), sentences (:mod:`.prose`) and
figure (:mod:`.figures`) show each one's conformance, and no "fastest" claim names a non-conforming
implementation without saying what it fails; :mod:`.pairing` reads what a comparison puts side by side (each
side's build and release, the work a timed call does differently, ties among the fastest).
"""
from __future__ import annotations

from pqlab.studies.implementations.figures import describe_figure, figure_contents, plot_dots
from pqlab.studies.implementations.measuring import (
    PYTHON_BACKENDS,
    TOPIC,
    Checks,
    check,
    known_names,
    measure,
    program_records,
    python_items,
)
from pqlab.studies.implementations.pairing import RATIO_STATISTIC, TIME_INTERVAL
from pqlab.studies.implementations.prose import (
    closing_note,
    describe_checks,
    describe_conformance,
    describe_counts,
    describe_overhead,
    describe_ratios,
    describe_spread,
    fastest_text,
    numbers,
)
from pqlab.studies.implementations.tables import (
    BASELINES,
    api_table,
    binding_overhead,
    code_bases,
    comparison,
    conformance_table,
    fastest_claims,
    implementations_table,
    language_of,
    not_measured,
    pq_over_classical,
    sizes,
    spread,
    standard_sizes,
)

__all__ = [
    "BASELINES", "PYTHON_BACKENDS", "RATIO_STATISTIC", "TIME_INTERVAL", "TOPIC", "Checks", "api_table",
    "binding_overhead", "check",
    "closing_note", "code_bases", "comparison", "conformance_table", "describe_checks",
    "describe_conformance", "describe_counts", "describe_figure", "describe_overhead", "describe_ratios",
    "describe_spread", "figure_contents",
    "fastest_claims", "fastest_text", "implementations_table", "known_names", "language_of", "measure",
    "not_measured", "numbers", "plot_dots", "pq_over_classical", "program_records", "python_items", "sizes",
    "spread", "standard_sizes",
]
