"""Notebook 01: AES-256, RSA-2048 and SPHINCS+ per operation, beside study 000 (Java + Bouncy Castle).
Absolute times from another machine, language and year do not compare; ratios between operations *within*
one system do (signing over verifying, key generation over decryption ...), and so do sizes where the
encodings are the same.  The notebook compares the study's published means with each of our systems' times
-- Python backends, and Bouncy Castle's first calls and steady state, on the current release and the study's
own (:mod:`.measure`) -- as ratios within each system, with intervals (:mod:`.ratios`), and sizes beside the
study's, shown as tables (:mod:`.tables`), figures (:mod:`.figures`) and generated text (:mod:`.prose`); the
study's own rows, platform and printed digits are in :mod:`.published`.
"""
from pqlab.studies.aes_rsa_sphincs.figures import (
    plot_key_sizes,
    plot_operation_times,
    plot_ratios,
    plot_signature_sizes,
)
from pqlab.studies.aes_rsa_sphincs.measure import (
    CURRENT,
    STUDYS,
    bc_release,
    measured,
    not_run,
    run_bouncycastle,
    system_values,
)
from pqlab.studies.aes_rsa_sphincs.prose import _key as _key
from pqlab.studies.aes_rsa_sphincs.prose import (
    caveats,
    describe_bc,
    describe_ratio_spread,
    describe_ratios,
    describe_sizes,
    describe_study_method,
    describe_study_over_ours,
    numbers,
)
from pqlab.studies.aes_rsa_sphincs.published import (
    COLD,
    OPERATION_ROLE,
    PAIRS,
    PYTHON,
    STEADY,
    STUDY,
    STUDY_ROW,
    TOPIC,
    approx,
    construction_of,
    constructions,
    digits,
    round_sig,
    study_label,
    study_platform,
    study_runs,
)
from pqlab.studies.aes_rsa_sphincs.ratios import (
    STUDY_OVER_COLUMNS,
    agreement,
    ratio_pairs,
    ratio_table,
    study_over_ours,
)
from pqlab.studies.aes_rsa_sphincs.ratios import _agrees as _agrees
from pqlab.studies.aes_rsa_sphincs.tables import (
    key_sizes,
    ratio_caption,
    ratio_columns,
    results_table,
    role_times,
    size_columns,
    size_table,
    study_over_caption,
    study_over_columns,
    time_columns,
    times_by_system,
)

__all__ = [
    "COLD", "CURRENT", "OPERATION_ROLE", "PAIRS", "PYTHON", "STEADY", "STUDY", "STUDYS", "STUDY_OVER_COLUMNS",
    "STUDY_ROW", "TOPIC", "agreement", "approx", "bc_release", "caveats", "construction_of", "constructions",
    "describe_bc", "describe_ratio_spread", "describe_ratios", "describe_sizes", "describe_study_method",
    "describe_study_over_ours", "digits", "key_sizes", "measured",
    "not_run", "numbers", "plot_key_sizes",
    "plot_operation_times", "plot_ratios", "plot_signature_sizes", "ratio_caption", "ratio_columns",
    "ratio_pairs", "ratio_table", "results_table", "role_times", "round_sig", "run_bouncycastle",
    "size_columns", "size_table", "study_label", "study_over_caption", "study_over_columns",
    "study_over_ours", "study_platform", "study_runs", "system_values", "time_columns", "times_by_system",
]
