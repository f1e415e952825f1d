"""Notebook 04: signature families in cycles.  The fourth study measured sign and verify clock cycles of the
NIST round-2 signature candidates (reference and optimised builds) in one table per family sorted by signing
cycles; this package redoes that for today's schemes, each measured in the optimised and the portable liboqs
build and by the native C runner (:mod:`.measure`), gathered in one tidy frame with the counter and the clock
each row implies (:mod:`.rows`), and compares them in tables (:mod:`.tables`): per family, optimised against
portable, pqlab's path against the native runner, OpenSSL against liboqs, and today's standards against their
round-2 ancestors (the study's own numbers and the pairing are in :mod:`pqlab.studies.round2_study`), with
figures (:mod:`.figures`) and generated text (:mod:`.prose`).
"""
from pqlab.measure.cycles import per_call
from pqlab.studies.signature_cycles.figures import (
    missing_figure,
    plot_cycles_vs_bytes,
    plot_python_over_native,
    plot_speedups,
    scheme_of,
)
from pqlab.studies.signature_cycles.measure import (
    BUILDS,
    FAMILY_ORDER,
    REFERENCE_TABLE,
    SIGNATURE_OPERATIONS,
    TOPIC,
    SignatureStudy,
    build_label,
    check_build,
    declare_sizes,
    liboqs_signatures,
    measure_signatures,
    resolve_signatures,
    study_counter,
    table_family,
)
from pqlab.studies.signature_cycles.prose import (
    NOTE_RATIOS,
    NOTE_SPEEDUPS,
    closing_numbers,
    describe_below_one,
    describe_clock,
    describe_implementations,
    describe_python_over_native,
    describe_speedups,
    numbers,
    write_closing_note,
)
from pqlab.studies.signature_cycles.rows import (
    CLOCK_TOLERANCE,
    check_clock,
    collect_rows,
    failed_rows,
    sample_stats,
    summarize_clock,
)
from pqlab.studies.signature_cycles.tables import (
    ancestor_intervals,
    build_samples,
    compare_implementations,
    compute_python_over_native,
    compute_speedups,
    family_columns,
    lookup,
    tabulate_families,
    tabulate_signatures,
    with_intervals,
    with_round_checks,
)

__all__ = [
    "BUILDS", "CLOCK_TOLERANCE", "FAMILY_ORDER", "NOTE_RATIOS", "NOTE_SPEEDUPS", "REFERENCE_TABLE",
    "SIGNATURE_OPERATIONS", "TOPIC", "SignatureStudy", "ancestor_intervals", "build_label", "build_samples",
    "check_build", "check_clock", "closing_numbers", "collect_rows", "compare_implementations",
    "compute_python_over_native", "compute_speedups", "declare_sizes", "describe_below_one", "describe_clock",
    "describe_implementations", "describe_python_over_native", "describe_speedups", "failed_rows",
    "family_columns", "liboqs_signatures", "lookup", "measure_signatures", "missing_figure", "numbers",
    "per_call", "plot_cycles_vs_bytes", "plot_python_over_native", "plot_speedups", "resolve_signatures",
    "sample_stats", "scheme_of", "study_counter", "summarize_clock", "table_family", "tabulate_families",
    "tabulate_signatures", "with_intervals", "with_round_checks", "write_closing_note",
]
