"""Notebook 06: what post-quantum costs a real TLS 1.3 handshake.  The measurement is :mod:`pqlab.runners.tls`
(OpenSSL 3.6 in a Rust runner, real certificate chains); this package plans the matrix and measures the
primitives with :func:`pqlab.benchmark.bench` (:mod:`.measure`), predicts every message, record and flight
from the measured sizes and the TLS 1.3 framing, with TCP's initial window, QUIC's amplification allowance and
the stack's hard limits (the budget model, :mod:`.model`), and sets that prediction beside the real
handshake; it compares each side's CPU per handshake with the sum of the measured operations (:mod:`.cpu`),
each group with the classical one and every KEM with what TLS 1.3 can carry (:mod:`.tables`), and published
numbers with ours (:mod:`.published`), shown as figures (:mod:`.figures`) and generated text (:mod:`.prose`).
"""
from pqlab.studies.tls_handshake.cpu import compare_cpu, cpu_steps, handshake_rates, operations_ns
from pqlab.studies.tls_handshake.figures import plot_first_flight, plot_rates
from pqlab.studies.tls_handshake.measure import (
    BASELINE,
    GROUP_PARTS,
    KEM_BACKENDS,
    SIGNATURE_OPS,
    TOPIC,
    _inputs,
    chains,
    measure_operations,
    operation_names,
    plan_handshakes,
    plan_matrix,
    share_sizes,
    signature_bytes,
)
from pqlab.studies.tls_handshake.model import (
    LIMITS,
    budget_row,
    certificate_message,
    client_extensions,
    compare_bytes,
    predict_matrix,
    predict_messages,
    tcp_extra_round_trips,
    wire_bytes,
)
from pqlab.studies.tls_handshake.prose import (
    cpu_notes,
    describe_build,
    describe_bytes_check,
    describe_cpu_model,
    describe_extra_kems,
    describe_first_flight,
    describe_model,
    numbers,
    write_closing_note,
)
from pqlab.studies.tls_handshake.published import (
    REFERENCE,
    authentication,
    published_beside_ours,
    recorded_differences,
)
from pqlab.studies.tls_handshake.tables import hybrid_cost, kem_families, kem_table, refused, what_fits

__all__ = [
    "BASELINE", "GROUP_PARTS", "KEM_BACKENDS", "LIMITS", "REFERENCE", "SIGNATURE_OPS", "TOPIC", "_inputs",
    "authentication", "budget_row", "certificate_message", "chains", "client_extensions", "compare_bytes",
    "compare_cpu", "cpu_notes", "cpu_steps", "describe_build", "describe_bytes_check", "describe_cpu_model",
    "describe_extra_kems", "describe_first_flight", "describe_model", "handshake_rates", "hybrid_cost",
    "kem_families", "kem_table", "measure_operations", "numbers", "operation_names", "operations_ns",
    "plan_handshakes", "plan_matrix", "plot_first_flight", "plot_rates", "predict_matrix", "predict_messages",
    "published_beside_ours", "recorded_differences", "refused", "share_sizes", "signature_bytes",
    "tcp_extra_round_trips", "what_fits", "wire_bytes", "write_closing_note",
]
