"""The tidy results schema: column names and their meaning, one place for all of pqlab.

A run is stored as ``data/results/<run_id>.measurements.csv`` (one row per measured
algorithm x operation x message size), ``<run_id>.sizes.csv`` (one row per algorithm
and backend), ``<run_id>.samples.csv.gz`` (every raw sample) and ``<run_id>.meta.json``
(machine, environment and parameters).  Missing values are empty, and the ``flags``
column says why; nothing is invented.
"""
from __future__ import annotations

SCHEMA_VERSION = 1

MEASUREMENT_COLUMNS = [
    "schema_version",
    "run_id",
    "started_at",
    "machine_id",
    "study",
    "backend",  # liboqs | cryptography | pycryptodome | pqcrypto | pure-python | bouncycastle | native
    "implementation",  # e.g. "liboqs 0.13.0 (default build)", "OpenSSL 3.x", "Bouncy Castle 1.86"
    "library_version",
    "variant",  # liboqs build variant (default | generic) or "" where not applicable
    "algorithm",  # canonical name: ML-DSA-44, SPHINCS+-SHAKE-128f-simple, RSA-2048, AES-256-GCM ...
    "family",  # lattice | hash-based | multivariate | code-based | isogeny | RSA | elliptic-curve | symmetric | other
    "nist_level",  # 1..5 where defined, else empty
    "operation",  # keygen | sign | verify | encaps | decaps | encrypt | decrypt | noop
    "message_bytes",
    "samples",  # number of samples (each the mean of `loops` back-to-back calls)
    "loops",
    "time_ns_median",
    "time_ns_q1",
    "time_ns_q3",
    "time_ns_ci_low",  # bootstrap 95% confidence interval of the median
    "time_ns_ci_high",
    "time_ns_min",
    "time_ns_cv",  # coefficient of variation of the samples
    "cycles_median",
    "cycles_q1",
    "cycles_q3",
    "cycles_source",  # perf_event_open:cpu-cycles:user | tsc-estimate | native:... | "" (with a flag)
    "overhead_ns",  # cost of a do-nothing call through the same harness path
    "peak_heap_bytes",
    "peak_stack_bytes",
    "memory_source",
    "energy_uj",
    "power_w",
    "energy_source",  # ina219 | rapl | replay:<file> | modelled:<W> | reference | "" (with a flag)
    "verified",  # True when every checked output was right
    "flags",  # ;-separated: unstable-cv, few-samples, min-far-from-median, no-cycles:<why>, failed:<why> ...
]

SIZE_COLUMNS = [
    "schema_version",
    "run_id",
    "algorithm",
    "backend",
    "family",
    "nist_level",
    "public_key_bytes",
    "secret_key_bytes",
    "signature_bytes",  # observed length of a signature of the run's message
    "signature_max_bytes",  # declared maximum (liboqs length_signature); equals observed for fixed-size schemes
    "ciphertext_bytes",
    "shared_secret_bytes",
    "symmetric_key_bytes",
]

SAMPLE_COLUMNS = ["run_id", "backend", "variant", "algorithm", "operation", "message_bytes", "sample", "loops",
                  "time_ns", "cycles"]

OPERATIONS = {
    "sig": ("keygen", "sign", "verify"),
    "kem": ("keygen", "encaps", "decaps"),
    "pke": ("keygen", "encrypt", "decrypt"),
    "cipher": ("keygen", "encrypt", "decrypt"),
}
