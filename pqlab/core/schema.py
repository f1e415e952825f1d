"""The tidy results schema: columns, their types and meaning, one place for all of pqlab.

A run is stored as ``data/results/<run_id>.measurements.csv`` (one row per measured
algorithm x operation x message size), ``<run_id>.sizes.csv`` (one row per algorithm
and backend), ``<run_id>.samples.csv.gz`` (every raw sample) and ``<run_id>.meta.json``
(machine, environment and parameters).  Missing values are empty, and the ``flags``
column says why (vocabulary: :mod:`pqlab.core.flags`); nothing is invented.

Version history (results of an older version are converted on load by :func:`convert`, never refused):

- 1: the first release.
- 2: typed columns (this module); ``kind`` (sig | kem | pke | cipher | noop); flags in one vocabulary
  (``cycles-estimated`` rows lose their estimated cycles); the counter label vocabulary of
  :mod:`pqlab.measure.cycles` (``core-cycles`` | ``tsc`` | ``none``); energy runs in the store.
- 3: the median's confidence interval from order statistics (binomial; was a bootstrap), the precision
  reached (``time_ns_rel_ci``) and the sampling's target (``target_rel_ci``); ``cycles_source`` is
  ``none`` (not empty) where no counter ran.  Older rows keep their intervals and get empty precision.
- 4: rounds (pqlab.runners.rounds).  Samples carry their ``round``; a row's ``rounds`` counts them;
  ``time_ns_median`` is the estimate over rounds (the median of the rounds' medians) and
  ``time_ns_ci_low``/``high`` its 95 % t-interval over rounds.  Older rows were measured in one process: they
  convert with ``rounds`` 1, their samples in round 0, and no interval (their order-statistic interval over
  one process's consecutive samples was about three times too narrow), flagged ``no-rounds``.
- 5: builds as records (:mod:`pqlab.core.builds`).  The ``build`` column names the liboqs build that ran by
  its id (``liboqs-0.13.0``, ``liboqs-0.13.0+generic``, ``liboqs-0.16.0+given``); it replaces the old
  default/generic word, which did not say which release.  Older rows convert from the release they recorded
  (their ``library_version``, else the run's liboqs record), and the run's liboqs record gains ``options`` and
  ``build``.  Backend ``liboqs`` is pqlab's lean path into liboqs's C API (pqlab.backends.liboqs); older
  ``liboqs`` rows were measured through liboqs-python and convert to backend ``liboqs-python``.
- 6: "rounds" has one meaning, a number of rounds (the parameter, and a row's column).  The run's record of
  each round's noise and reference loops, stored as ``meta["rounds"]`` before, is ``meta["round_noise"]``;
  older runs and bundles convert on load.
"""
from __future__ import annotations

from typing import NamedTuple

from pqlab.core import flags
from pqlab.core.builds import Build
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.vocabulary import BACKENDS, FAMILIES

SCHEMA_VERSION = 6

STR, INT, FLOAT, BOOL = "str", "Int64", "float64", "bool"
#: The units a column's values can be in (pqlab.core.formatting shows each in a suitable display unit); "" for
#: a count, a label or a flag.
UNITS = ("ns", "cycles", "bytes", "µJ", "W", "fraction")
#: The one unit table: every unit pqlab stores, reads or shows -> (its quantity, its size in the quantity's
#: stored unit, :data:`UNITS`; for a frequency, which no column stores, in Hz: the runs' metadata records the
#: counter's rate in Hz and the CPU's limits in kHz).  :func:`convert_unit` is the one place a value changes
#: unit; pqlab.core.formatting picks its display units from here; a hand conversion anywhere
#: else fails ``tests/core/test_units.py``.
UNIT_TABLE = {
    "ns": ("time", 1.0), "µs": ("time", 1e3), "ms": ("time", 1e6), "s": ("time", 1e9),
    "cycles": ("cycles", 1.0), "kcycles": ("cycles", 1e3), "Mcycles": ("cycles", 1e6),
    "Gcycles": ("cycles", 1e9),
    "bytes": ("size", 1.0), "KiB": ("size", 1024.0), "MiB": ("size", 1024.0 ** 2),
    "GiB": ("size", 1024.0 ** 3),
    "µJ": ("energy", 1.0), "mJ": ("energy", 1e3), "J": ("energy", 1e6),
    "µW": ("power", 1e-6), "mW": ("power", 1e-3), "W": ("power", 1.0),
    "fraction": ("percent", 1.0), "%": ("percent", 0.01),
    "Hz": ("frequency", 1.0), "kHz": ("frequency", 1e3), "MHz": ("frequency", 1e6), "GHz": ("frequency", 1e9),
    "mA": ("current", 1e-3), "A": ("current", 1.0), "mV": ("voltage", 1e-3), "V": ("voltage", 1.0),
}
#: the same units as other sources spell them (column names, published tables, C programs' JSON)
UNIT_ALIASES = {"us": "µs", "uJ": "µJ", "uW": "µW", "B": "bytes", "pct": "%", "percent": "%"}


def unit_size(unit: str) -> tuple[str, float]:
    """(quantity, size in the quantity's stored unit) of `unit` (:data:`UNIT_TABLE`, :data:`UNIT_ALIASES`); an
    unknown unit is refused with the known ones."""

    name = UNIT_ALIASES.get(unit, unit)
    if name not in UNIT_TABLE:
        raise UnknownName("unit", unit, [*UNIT_TABLE, *UNIT_ALIASES])
    return UNIT_TABLE[name]


def convert_unit(value, unit: str, to: str):
    """`value` (a number, an array or a Series) in `unit` expressed in `to`: ``convert_unit(1500, "ns",
    "µs")`` is 1.5.  Units of two quantities (time and energy) are refused in one line."""

    (quantity, size), (other, target) = unit_size(unit), unit_size(to)
    if quantity != other:
        raise BadInput(f"cannot convert {unit} ({quantity}) to {to} ({other}): they measure different things")
    return value * (size / target) if size >= target else value / (target / size)


class Col(NamedTuple):
    """One column, pyperf-style: its type, its meaning and the unit its values are in.  A reader takes the
    unit from here (:func:`unit_of`), never from the column's name."""

    dtype: str
    meaning: str
    unit: str = ""


#: measurements: column -> Col(dtype, meaning, unit)
MEASUREMENTS: dict[str, Col] = {
    "schema_version": Col(INT, "schema version the row was written with"),
    "run_id": Col(STR, "the run (one set of files in data/results)"),
    "started_at": Col(STR, "when the run started, ISO 8601 UTC"),
    "machine_id": Col(STR, "a stable id of the machine (pqlab.measure.machine.machine_id; PQLAB_MACHINE_ID "
                           "overrides it)"),
    "study": Col(STR, "the notebook or label the run belongs to"),
    "backend": Col(STR, " | ".join(b.name for b in BACKENDS) + " (pqlab.core.vocabulary)"),
    "implementation": Col(STR, 'what ran, e.g. "liboqs <version> (default build)"'),
    "library_version": Col(STR, "version of the library that ran"),
    "build": Col(STR, "the liboqs build that ran (pqlab.core.builds id: liboqs-0.13.0, "
                      "liboqs-0.13.0+generic, liboqs-0.16.0+given), empty for a library pqlab does not "
                      "build"),
    "algorithm": Col(STR, "canonical name: ML-DSA-44, SPHINCS+-SHAKE-128f-simple, RSA-2048, AES-256-GCM ..."),
    "kind": Col(STR, "sig | kem | pke | cipher | noop | tls (a TLS handshake: pqlab.runners.tls)"),
    "family": Col(STR, " | ".join(FAMILIES) + " (pqlab.core.vocabulary.family_of)"),
    "nist_level": Col(INT, "1..5 where defined"),
    "operation": Col(STR, "keygen | sign | verify | encaps | decaps | encrypt | decrypt | noop"),
    "message_bytes": Col(INT, "message length for sign/verify/encrypt/decrypt, empty otherwise", "bytes"),
    "samples": Col(INT, "number of samples (each the mean of `loops` back-to-back calls)"),
    "loops": Col(INT, "calls per sample"),
    "rounds": Col(INT, "rounds the row's samples come from (pqlab.runners.rounds: each a fresh worker "
                       "process); 1: one process, no interval"),
    "time_ns_median": Col(FLOAT, "time per call, ns: the median of the rounds' medians (the median of the "
                                 "samples where there is one round)", "ns"),
    "time_ns_q1": Col(FLOAT, "first quartile, ns", "ns"),
    "time_ns_q3": Col(FLOAT, "third quartile, ns", "ns"),
    "time_ns_ci_low": Col(FLOAT, "confidence interval (at pqlab.measure.stats.CONFIDENCE) of time_ns_median, "
                                 "low end, ns: a t-interval over the rounds' log medians "
                                 "(pqlab.measure.stats.round_interval), empty below "
                                 "pqlab.measure.stats.MIN_ROUNDS rounds", "ns"),
    "time_ns_ci_high": Col(FLOAT, "high end, ns", "ns"),
    "time_ns_rel_ci": Col(FLOAT, "precision reached: (ci_high - ci_low) / 2 / median", "fraction"),
    "target_rel_ci": Col(FLOAT, "precision target the sampling stopped at (pqlab.measure.timing.measure); "
                                "empty: the whole budget was used; missed: flag precision-not-reached",
                         "fraction"),
    "time_ns_min": Col(FLOAT, "fastest sample, ns", "ns"),
    "time_ns_mean": Col(FLOAT, "mean of the samples, ns", "ns"),
    "time_ns_cv": Col(FLOAT, "coefficient of variation of the samples", "fraction"),
    "cycles_median": Col(FLOAT, "median cycles per call, of the counter in cycles_source", "cycles"),
    "cycles_q1": Col(FLOAT, "first quartile of cycles", "cycles"),
    "cycles_q3": Col(FLOAT, "third quartile of cycles", "cycles"),
    "cycles_mean": Col(FLOAT, "mean cycles per call", "cycles"),
    "cycles_source": Col(STR, "the counter: core-cycles | tsc | none (pqlab.measure.cycles); the TSC's rate "
                              "is in the run's meta (counter.hz)"),
    "overhead_ns": Col(FLOAT, "cost of a do-nothing call through the same harness path, ns", "ns"),
    "peak_heap_bytes": Col(INT, "heap the operation adds, bytes (memory_source says how measured)", "bytes"),
    "peak_stack_bytes": Col(INT, "stack the operation adds, bytes", "bytes"),
    "memory_source": Col(STR, "valgrind-massif:stacks | valgrind-massif:first-call | tracemalloc | maxrss"),
    "energy_uj": Col(FLOAT, "energy per operation, µJ", "µJ"),
    "power_w": Col(FLOAT, "mean power during the operation, W", "W"),
    "energy_source": Col(STR, "ina219 | rapl | replay:<file> | modelled:<W> | reference, empty with a flag"),
    "verified": Col(BOOL, "every checked output was right"),
    "flags": Col(STR, "';'-separated flags of pqlab.core.flags"),
}

SIZES: dict[str, Col] = {
    "schema_version": Col(INT, "schema version"),
    "run_id": Col(STR, "the run"),
    "algorithm": Col(STR, "canonical name"),
    "backend": Col(STR, "backend"),
    "family": Col(STR, "family"),
    "nist_level": Col(INT, "NIST level"),
    "public_key_bytes": Col(INT, "public key, bytes (raw unless key_encoding says otherwise)", "bytes"),
    "secret_key_bytes": Col(INT, "secret key, bytes", "bytes"),
    "signature_bytes": Col(INT, "observed length of a signature of the run's message", "bytes"),
    "signature_max_bytes": Col(INT, "declared maximum (liboqs length_signature); equals observed for fixed "
                                    "sizes", "bytes"),
    "ciphertext_bytes": Col(INT, "ciphertext, bytes", "bytes"),
    "shared_secret_bytes": Col(INT, "shared secret, bytes", "bytes"),
    "symmetric_key_bytes": Col(INT, "symmetric key, bytes", "bytes"),
    "key_encoding": Col(STR, "raw | DER (SubjectPublicKeyInfo / PKCS#8) ..."),
}

SAMPLES: dict[str, Col] = {
    "run_id": Col(STR, "the run"),
    "backend": Col(STR, "backend"),
    "build": Col(STR, "the liboqs build that ran, as in the measurements"),
    "algorithm": Col(STR, "canonical name"),
    "operation": Col(STR, "operation"),
    "message_bytes": Col(INT, "message length", "bytes"),
    "round": Col(INT, "the round (a fresh worker process) the sample was taken in; empty: a runner without "
                      "rounds"),
    "sample": Col(INT, "index of the sample"),
    "loops": Col(INT, "calls in the sample"),
    "time_ns": Col(FLOAT, "time per call, ns", "ns"),
    "cycles": Col(FLOAT, "cycles per call", "cycles"),
}

# ----- TLS handshakes (notebook 06, pqlab.runners.tls) ------------------------------------------------
# A handshake run stores one measurement row per configuration (backend "openssl-tls", algorithm
# "<group> + <signature>", operation "handshake:<server-auth|mutual|resumed>", the time_ns_* columns =
# wall time of the client's SSL_connect) with these columns after the schema's:
TLS_MEASUREMENTS: dict[str, Col] = {
    "tls_group": Col(STR, "OpenSSL's group name (x25519, MLKEM768, X25519MLKEM768 ...)"),
    "tls_signature": Col(STR, "the chain's algorithm (ECDSA-P256, ML-DSA-44 ...)"),
    "chain_depth": Col(INT, "certificates the server sends: 1 (leaf) or 2 (leaf + intermediate)"),
    "mutual": Col(BOOL, "the client authenticates too"),
    "resumed": Col(BOOL, "PSK resumption (psk_dhe_ke) from a ticket of the previous connection"),
    "client_cpu_ns_median": Col(FLOAT, "client thread CPU time (CLOCK_THREAD_CPUTIME_ID) in SSL_connect, ns",
                                "ns"),
    "client_cpu_ns_ci_low": Col(FLOAT, "confidence interval (at pqlab.measure.stats.CONFIDENCE) of that "
                                       "median, low end, ns", "ns"),
    "client_cpu_ns_ci_high": Col(FLOAT, "high end, ns", "ns"),
    "server_cpu_ns_median": Col(FLOAT, "server thread CPU time in SSL_accept (tickets included), ns", "ns"),
    "server_cpu_ns_ci_low": Col(FLOAT, "confidence interval (at pqlab.measure.stats.CONFIDENCE) of that "
                                       "median, low end, ns", "ns"),
    "server_cpu_ns_ci_high": Col(FLOAT, "high end, ns", "ns"),
    "bytes_c1": Col(INT, "wire bytes (records) of the client's first flight (ClientHello)", "bytes"),
    "bytes_s1": Col(INT, "the server's first flight (ServerHello .. Finished)", "bytes"),
    "bytes_c2": Col(INT, "the client's second flight (CCS, [Certificate, CertificateVerify], Finished)",
                    "bytes"),
    "bytes_s2": Col(INT, "after the handshake: NewSessionTicket messages", "bytes"),
}
# ... and its samples (one per handshake: time_ns = wall time) these, after the schema's:
TLS_SAMPLES: dict[str, Col] = {
    "client_cpu_ns": Col(FLOAT, "client thread CPU time of this handshake, ns", "ns"),
    "server_cpu_ns": Col(FLOAT, "server thread CPU time of this handshake, ns", "ns"),
    "bytes_c1": Col(INT, "wire bytes of the ClientHello flight", "bytes"),
    "bytes_s1": Col(INT, "wire bytes of the server's first flight", "bytes"),
    "bytes_c2": Col(INT, "wire bytes of the client's second flight", "bytes"),
    "bytes_s2": Col(INT, "wire bytes of the tickets after the handshake", "bytes"),
    "cv_signature_bytes": Col(INT, "signature length in the server's CertificateVerify", "bytes"),
    "client_cv_signature_bytes": Col(INT, "signature length in the client's CertificateVerify (mutual)",
                                     "bytes"),
    "ticket_bytes": Col(INT, "length of the ticket a resumed client offered", "bytes"),
    "cipher": Col(STR, "negotiated TLS 1.3 cipher suite"),
    "chain_depth": Col(INT, "as in the measurements"),
    "mutual": Col(BOOL, "as in the measurements"),
    "resumed": Col(BOOL, "as in the measurements"),
}
TLS_MEASUREMENT_COLUMNS = list(TLS_MEASUREMENTS)
TLS_SAMPLE_COLUMNS = list(TLS_SAMPLES)

MEASUREMENT_COLUMNS = list(MEASUREMENTS)
SIZE_COLUMNS = list(SIZES)
SAMPLE_COLUMNS = list(SAMPLES)
#: table part -> its columns
PARTS = {"measurements": MEASUREMENTS, "sizes": SIZES, "samples": SAMPLES}

#: algorithm kind -> its operations, in the order they are measured
KIND_OPERATIONS = {
    "sig": ("keygen", "sign", "verify"),
    "kem": ("keygen", "encaps", "decaps"),
    "pke": ("keygen", "encrypt", "decrypt"),
    "cipher": ("keygen", "encrypt", "decrypt"),
}
#: every operation name
OPERATION_NAMES = tuple(dict.fromkeys(op for ops in KIND_OPERATIONS.values() for op in ops)) + ("noop",)
#: operations whose cost depends on the message; the others are measured once per algorithm
MESSAGE_OPERATIONS = ("sign", "verify", "encrypt", "decrypt")


def dtypes(part: str) -> dict[str, str]:
    """column -> dtype of a table part ("measurements", "sizes" or "samples")."""
    return {c: col.dtype for c, col in PARTS[part].items()}


def unit_of(column: str) -> str | None:
    """The unit (:data:`UNITS`, or "" for none) the schema declares for `column` of any part, TLS runs'
    included; None for a column the schema does not have (a study's own derived column)."""
    col = _col(column)
    return None if col is None else col.unit


class Plausible(NamedTuple):
    """The values a stored quantity of one unit can have (issue #46 D11): finite, at most `high`; at least
    `floor` for one reading of a clock or counter (:data:`ONE_READING`), at least `least` for any other value
    (a median, a mean, an interval's end, a size)."""

    floor: float
    least: float
    high: float


#: unit -> the plausible range of a stored value (:func:`plausible_range`; outside it a value is damage or a
#: forgery: a merge refuses it, a load makes it missing).  A time per call is at most a day and, for an
#: estimate, at least a picosecond (far below one cycle of any CPU); cycles per call at most 1e15; a size at
#: most a tebibyte; energy per operation and power at most a megajoule and a megawatt either way (energy is
#: net of the idle baseline, so a fast operation's is often at or below 0: the energy study drops those).
_MJ = convert_unit(1e6, "J", "µJ")
PLAUSIBLE = {
    "ns": Plausible(0.0, 1e-3, convert_unit(86_400, "s", "ns")),
    "cycles": Plausible(0.0, 1e-3, 1e15),
    "bytes": Plausible(0.0, 0.0, convert_unit(1024, "GiB", "bytes")),
    "µJ": Plausible(-_MJ, -_MJ, _MJ),
    "W": Plausible(-1e6, -1e6, 1e6),
}
#: a whole-number column without a unit (a count, an index, a level): 0 to 2^53 (exact in a float64)
COUNT = Plausible(0.0, 0.0, float(2 ** 53))
#: columns whose value is one reading (a sample, the fastest or the first quartile of samples, an empty timing
#: bracket): a clock read twice within its resolution gives 0 (timing.py's samples cannot, being calibrated to
#: last microseconds, but a leakage screen's single calls or a runner's empty bracket can), so 0 is plausible
ONE_READING = frozenset({"time_ns", "cycles", "client_cpu_ns", "server_cpu_ns", "time_ns_min", "time_ns_q1",
                         "cycles_q1", "overhead_ns"})


def _col(column: str) -> Col | None:
    for part in (MEASUREMENTS, SIZES, SAMPLES, TLS_MEASUREMENTS, TLS_SAMPLES):
        if column in part:
            return part[column]
    return None


def plausible_range(column: str) -> tuple[float, float] | None:
    """[low, high] of a plausible stored value of `column` (any part, TLS runs' too: :data:`PLAUSIBLE` by its
    unit, :data:`COUNT` for a whole number without one); None for a column without bounds."""
    col = _col(column)
    bounds = None if col is None else PLAUSIBLE.get(col.unit) or (COUNT if col.dtype == INT else None)
    if bounds is None:
        return None
    return (bounds.floor if column in ONE_READING else bounds.least), bounds.high


def range_text(column: str) -> str:
    """`column`'s plausible range as a reader sees it: "[0.001, 8.64e+13] ns"."""
    low, high = plausible_range(column)
    unit = (_col(column) or Col("", "")).unit
    return f"[{low:g}, {high:g}]" + (f" {unit}" if unit else "")


def implausible(frame) -> dict:
    """column -> the rows (a boolean array) of `frame` whose value is outside :func:`plausible_range`: not
    finite, or beyond a bound.  A missing value (empty, or text that is not a number) is not counted."""
    import numpy as np
    import pandas as pd

    out = {}
    for column in frame.columns:
        bounds = plausible_range(column) if isinstance(column, str) else None
        if bounds is None:
            continue
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            bad = ~np.isnan(values) & ~((values >= bounds[0]) & (values <= bounds[1]))
        if bad.any():
            out[column] = bad
    return out


def typed(df, part: str):
    """`df` with the schema's columns (missing ones added empty, extra ones kept after them) and dtypes."""
    import pandas as pd

    columns = PARTS[part]
    data = {col: _as_type(df[col] if col in df.columns else pd.Series(pd.NA, index=df.index, dtype=object),
                          c.dtype) for col, c in columns.items()}
    data.update((c, df[c].copy()) for c in df.columns if c not in columns)
    return pd.DataFrame(data, index=df.index)  # built at once: a frame grown column by column is slow to make


def _as_type(series, dtype: str):
    import numpy as np
    import pandas as pd

    if dtype == BOOL:
        return series.map(lambda v: v is True or str(v).strip().lower() == "true").astype(bool)
    if dtype == INT:
        values = pd.to_numeric(series, errors="coerce")
        if values.dtype.kind not in "iu":  # floats: what no int64 holds (inf, 1e300) is missing, not an error
            values = values.astype("float64")
            values = values.where(np.abs(values) < 2.0 ** 63)
        return values.round().astype("Int64")
    if dtype == FLOAT:
        return pd.to_numeric(series, errors="coerce").astype("float64")
    values, missing = series.to_numpy(dtype=object), series.isna().to_numpy()
    return pd.Series([np.nan if m else str(v) for v, m in zip(values, missing)], index=series.index,
                     dtype="str")


def kind_of(operations) -> str:
    """The algorithm kind that has these operations ("" when keygen alone cannot tell)."""
    ops = set(operations)
    for kind in ("sig", "kem"):
        if ops & set(KIND_OPERATIONS[kind][1:]):
            return kind
    if ops & {"encrypt", "decrypt"}:
        return "cipher"
    return "noop" if ops == {"noop"} else ""


#: a size column a run stored -> the kind of algorithm that has it (what an old run's keygen-only rows were)
_SIZE_KINDS = (("signature_bytes", "sig"), ("signature_max_bytes", "sig"), ("shared_secret_bytes", "kem"),
               ("symmetric_key_bytes", "cipher"))


def _stored_kind(algorithm, sizes) -> str:
    """The kind of `algorithm` as the run's own sizes table says it ("" when it does not): a conversion reads
    what the run stored, never today's registry (whose answer would depend on what is installed)."""
    if sizes is None or "algorithm" not in getattr(sizes, "columns", ()):
        return ""
    rows = sizes[sizes["algorithm"] == algorithm]
    return next((kind for column, kind in _SIZE_KINDS if column in rows and rows[column].notna().any()), "")


#: The column a schema < 5 run named liboqs's build options in (default | generic), without the release; its
#: conversion (:func:`convert`) is the one place pqlab still reads it.
_OLD_OPTIONS = "variant"


def _old_build(release: str, options: str) -> str:
    """The build id of schema 4's liboqs `release` and options word ("default" | "generic"; others were
    default builds with a target of their own)."""

    return Build(release, "generic" if options == "generic" else "default").id


def convert_meta(meta: dict, version: int) -> dict:
    """A run's meta of schema `version` in today's form: its liboqs record names its build (schema 5), its
    rounds' noise is ``round_noise`` (schema 6)."""
    if version < 6 and isinstance(meta.get("rounds"), list) and "round_noise" not in meta:
        meta = {("round_noise" if k == "rounds" else k): v for k, v in meta.items()}
    info = meta.get("liboqs")
    if version >= 5 or not isinstance(info, dict) or _OLD_OPTIONS not in info:
        return meta
    info = {k: v for k, v in info.items() if k != _OLD_OPTIONS}
    info["options"] = options = meta["liboqs"][_OLD_OPTIONS]
    if "build" not in info and info.get("liboqs_version"):
        info["build"] = _old_build(info["liboqs_version"], options)
    return dict(meta, liboqs=info)


def _build_column(frame, meta: dict | None, key=None):
    """`frame` with schema 5's ``build`` column in place of the old options column: ``liboqs-<release>`` (with
    ``+generic``) from the release each row recorded (``library_version``, else the run's liboqs record), or,
    for samples (which record no release), from the measurement rows `key` maps by algorithm, backend and
    options."""
    if frame is None or _OLD_OPTIONS not in frame.columns:
        return frame
    old = frame[_OLD_OPTIONS].astype(object).where(frame[_OLD_OPTIONS].notna(), "")
    if key is not None:
        built = [key.get((a, b, o), "") for a, b, o in zip(frame["algorithm"], frame["backend"], old)]
    else:
        run_release = ((meta or {}).get("liboqs") or {}).get("liboqs_version") or ""

        def build_of(options: str, release) -> str:
            release = release if isinstance(release, str) and release else run_release
            return _old_build(release, options) if options and release else ""

        releases = frame["library_version"] if "library_version" in frame.columns else [None] * len(frame)
        built = [build_of(o, r) for o, r in zip(old, releases)]
    return frame.drop(columns=[_OLD_OPTIONS]).assign(build=built)


def _through_binding(frame, meta: dict | None):
    """`frame` with schema < 5's liboqs rows as what they were: liboqs through liboqs-python."""
    if frame is None or "backend" not in getattr(frame, "columns", ()):
        return frame
    frame = frame.copy()
    rows = frame["backend"] == "liboqs"
    frame.loc[rows, "backend"] = "liboqs-python"
    if "implementation" in frame.columns:
        version = ((meta or {}).get("liboqs") or {}).get("liboqs_python_version")
        through = f" through liboqs-python {version}" if version else " through liboqs-python"
        frame.loc[rows, "implementation"] = frame.loc[rows, "implementation"].astype(object).map(
            lambda v: f"{v}{through}" if isinstance(v, str) and "liboqs-python" not in v else v)
    return frame


#: Counter labels of schema 1 (results written before the label vocabulary) -> today's labels.
LEGACY_SOURCES = {"perf_event_open:cpu-cycles:user": "core-cycles"}


def convert(measurements, sizes, samples, version: int, meta: dict | None = None):
    """Frames of schema `version` in today's schema (see the version history above); `meta` is the run's own
    (schema 5 reads the release it recorded)."""
    import pandas as pd


    m = measurements.copy()
    if version < 2:
        if "kind" not in m.columns:
            kinds = m.groupby("algorithm")["operation"].agg(kind_of)
            m["kind"] = m["algorithm"].map(kinds)
            rsa = m["family"].astype("object") == "RSA"
            m.loc[rsa & (m["kind"] == "cipher"), "kind"] = "pke"
            unknown = m["kind"] == ""  # keygen alone: what the run's sizes say
            m.loc[unknown, "kind"] = [_stored_kind(a, sizes) for a in m.loc[unknown, "algorithm"]]
        source = m["cycles_source"].astype("object").fillna("")
        estimated = source.str.startswith("estimate:")
        m.loc[estimated, ["cycles_median", "cycles_q1", "cycles_q3"]] = float("nan")
        m.loc[estimated, "cycles_source"] = None
        m["cycles_source"] = m["cycles_source"].astype("object").map(lambda s: LEGACY_SOURCES.get(s, s))
        m["flags"] = m["flags"].map(flags.upgrade)
    if version < 3:
        timed = pd.to_numeric(m["time_ns_median"], errors="coerce").notna()
        m["cycles_source"] = m["cycles_source"].astype("object")  # all empty (a JVM run) reads as float
        uncounted = m["cycles_source"].isna() | (m["cycles_source"] == "")
        m.loc[timed & uncounted, "cycles_source"] = "none"
    if version < 4:
        timed = pd.to_numeric(m["time_ns_median"], errors="coerce").notna()
        m["rounds"] = pd.array([1 if t else pd.NA for t in timed], dtype="Int64")
        for c in ("time_ns_ci_low", "time_ns_ci_high", "time_ns_rel_ci"):
            if c in m.columns:
                m.loc[timed, c] = float("nan")
        cells = m["flags"] if "flags" in m.columns else pd.Series([""] * len(m), index=m.index)
        m["flags"] = [flags.add(cell, "no-rounds", "measured before rounds (schema < 4)") if t else cell
                      for cell, t in zip(cells, timed)]
        if samples is not None and len(samples) and "round" not in samples.columns:
            samples = samples.assign(round=0)
    if version < 5 and _OLD_OPTIONS in m.columns:
        old = m[_OLD_OPTIONS].astype(object).where(m[_OLD_OPTIONS].notna(), "")
        m = _build_column(m, meta)
        key = dict(zip(zip(m["algorithm"], m["backend"], old), m["build"]))
        samples = _build_column(samples, meta, key)
    if version < 5:
        m, sizes, samples = (_through_binding(f, meta) for f in (m, sizes, samples))
    m["schema_version"] = SCHEMA_VERSION
    s = sizes.copy()
    s["schema_version"] = SCHEMA_VERSION
    return m, s, samples
