"""Notebook 02: how signing and verifying cost grows with the message.  It compares sweeps over message
lengths (:mod:`.measure`) through a fitted cost model ``t(n) = fixed + per_byte * n`` (:mod:`.model`), pure
Python beside native code and the study's table beside ours (:mod:`.tables`; the study's own numbers and its
SPHINCS-256, set beside the SPHINCS+/SLH-DSA sets with the same hash length, in :mod:`.published`), reads what
the study's RSA columns say about themselves, and shows it all as figures (:mod:`.figures`) and generated text
(:mod:`.prose`).
"""
from pqlab.checks.interop import round3_equivalent
from pqlab.studies.message_scaling.figures import (
    plot_per_byte,
    plot_slowdown,
    plot_study_vs_ours,
    plot_time_vs_message,
)
from pqlab.studies.message_scaling.measure import (
    MIB,
    comparison_set,
    measured,
    samples_of,
    signature_sizes,
    sweep_lengths,
)
from pqlab.studies.message_scaling.model import fit_linear_cost, fit_table, hashing_passes, model_deviation
from pqlab.studies.message_scaling.prose import (
    caveats,
    closing_note,
    describe_fits,
    describe_implementations,
    describe_rsa_evidence,
    describe_slowdown,
    describe_study,
    numbers,
    recommend,
)
from pqlab.studies.message_scaling.published import (
    CLASSICAL_MAP,
    STUDY_NOTES,
    TOPIC,
    load_study,
    parameter_set,
    sphincs256,
    study_as_measurements,
    study_comparators,
    study_findings,
    study_labels,
    study_lengths,
)
from pqlab.studies.message_scaling.tables import (
    compare_with_study,
    median_table,
    ranking,
    rsa_evidence,
    slowdown,
    slowdown_summary,
    study_summary,
)

__all__ = [
    "CLASSICAL_MAP", "MIB", "STUDY_NOTES", "TOPIC", "caveats", "closing_note", "compare_with_study",
    "comparison_set", "describe_fits", "describe_implementations", "describe_rsa_evidence",
    "describe_slowdown", "describe_study", "fit_linear_cost", "fit_table", "hashing_passes", "load_study",
    "measured", "median_table", "model_deviation", "numbers", "parameter_set", "plot_per_byte",
    "plot_slowdown", "plot_study_vs_ours", "plot_time_vs_message", "ranking", "recommend",
    "round3_equivalent", "rsa_evidence", "samples_of", "signature_sizes", "slowdown", "slowdown_summary",
    "sphincs256", "study_as_measurements", "study_comparators", "study_findings", "study_labels",
    "study_lengths", "study_summary", "sweep_lengths",
]
