"""The schema of a run's metadata (``RUN.meta.json``), as :mod:`pqlab.store.bundle_checks` has one for a
bundle's manifest: every field pqlab writes, its type and its range, declared once (:data:`META`), and
:func:`meta_problem`, the first field that does not fit, in one line naming its path.

Who writes what: :func:`pqlab.measure.machine.collect` (machine, CPU, counter, frequency, liboqs, packages,
git, parameters), :class:`pqlab.store.recorder.RunRecorder` (study, run id, times, status, process, errors),
:meth:`pqlab.store.results.Run.save` (schema version, the files' checksums), the runners (each round's noise
and reference loops, conformance records, implementations, harness costs, plan). Readers of stored runs (the
atlas, :mod:`pqlab.publish.context`, the report) index into these fields: a run that passes
:func:`meta_problem` cannot make them raise (tests/store/test_round3_meta.py feeds them every malformed
field).

A merge refuses a run whose metadata does not fit (:func:`pqlab.store.bundle_checks.check_run`); readers of
the whole store leave such a run out with a warning (:func:`pqlab.store.machines.stored_meta`). Fields the
schema does not declare (a study's own record) are allowed, bounded in size (:class:`Anything`). Old schema
versions' fields (liboqs's old options word, :data:`pqlab.core.schema._OLD_OPTIONS`; ``rounds`` as the noise
records) are declared too: they are converted on load, never refused.
"""
from __future__ import annotations

import math
import re
import reprlib
from dataclasses import dataclass

from pqlab.core.schema import _OLD_OPTIONS, PLAUSIBLE, SCHEMA_VERSION
from pqlab.measure.machine import MAX_ID

#: the longest string of a declared field (a CPU model has its own, shorter cap: it names a platform)
TEXT = 4096
#: the longest message (an error, a reason why not): exceptions quote paths and commands
MESSAGE = 65536
#: the most entries of a list or an object
ITEMS = 100_000
#: the most values (each string, number, list and object counts) of one field the schema does not declare
NODES = 1_000_000
#: the deepest nesting of such a field
DEPTH = 32

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlist = _REPR.maxdict = 4
_REPR.maxlevel = 2
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__


def _wrong(path: str, words: str, value) -> str:
    return f"{path} must be {words}, not {_kind(value)} ({_REPR.repr(value)})"


def _at(path: str, key) -> str:
    """The path of `key` inside `path`: ``cpu.model``, or ``packages['a b']`` for a key that is not a name."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else f"[{_REPR.repr(key)}]"
    return f"{path}{'' if name.startswith('[') else '.'}{name}" if path else name


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Spec:
    """A field's type and range: :meth:`problem` of a value at a path, None when it fits."""

    words = "a value"

    def problem(self, value, path: str) -> str | None:
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Spec):
    """A string of at most `limit` characters, matching `pattern` where given."""

    limit: int = TEXT
    pattern: str = ""
    words: str = "a string"

    def problem(self, value, path):
        if not isinstance(value, str):
            return _wrong(path, self.words, value)
        if len(value) > self.limit:
            return f"{path} is {len(value)} characters long, over the cap of {self.limit}"
        if self.pattern and not re.fullmatch(self.pattern, value):
            return _wrong(path, self.words, value)
        return None


@dataclass(frozen=True)
class Number(Spec):
    """A finite number (a whole one when `whole`) in [low, high]; in (low, high] when `above`."""

    low: float
    high: float
    whole: bool = False
    above: bool = False

    @property
    def words(self) -> str:
        return "a whole number" if self.whole else "a number"

    def problem(self, value, path):
        if not _is_number(value) or (self.whole and not isinstance(value, int)):
            return _wrong(path, self.words, value)
        finite = isinstance(value, int) or math.isfinite(value)  # a huge int compares exactly, as an int
        if not (finite and (value > self.low if self.above else value >= self.low) and value <= self.high):
            low, high = (f"{int(b)}" if self.whole else f"{b:g}" for b in (self.low, self.high))
            return (f"{path} must be {self.words} in {'(' if self.above else '['}{low}, {high}], not "
                    f"{_REPR.repr(value)}")
        return None


@dataclass(frozen=True)
class Flag(Spec):
    words: str = "true or false"

    def problem(self, value, path):
        return None if isinstance(value, bool) else _wrong(path, self.words, value)


@dataclass(frozen=True)
class Either(Spec):
    """One of `options`; null too when `null`."""

    options: tuple = ()
    null: bool = True

    @property
    def words(self) -> str:
        return " or ".join([o.words for o in self.options] + (["null"] if self.null else []))

    def problem(self, value, path):
        if value is None and self.null:
            return None
        problems = [o.problem(value, path) for o in self.options]
        if None in problems:
            return None
        if len(problems) == 1:
            return problems[0]
        # an option whose type fits says why the value does not; else the type is none of them
        return next((p for o, p in zip(self.options, problems) if p != _wrong(path, o.words, value)),
                    _wrong(path, self.words, value))


def opt(spec: Spec) -> Either:
    """`spec` or null."""
    return Either((spec,))


@dataclass(frozen=True)
class Items(Spec):
    """A list of at most `limit` values, each `item`."""

    item: Spec
    limit: int = ITEMS
    words: str = "a list"

    def problem(self, value, path):
        if not isinstance(value, list):
            return _wrong(path, self.words, value)
        if len(value) > self.limit:
            return f"{path} has {len(value)} entries, over the cap of {self.limit}"
        return next((p for i, v in enumerate(value) if (p := self.item.problem(v, _at(path, i)))), None)


@dataclass(frozen=True)
class Mapping(Spec):
    """An object of at most `limit` entries, each key a string of at most :data:`TEXT` characters and each
    value `value`."""

    value: Spec
    limit: int = ITEMS
    words: str = "an object"

    def problem(self, value, path):
        if not isinstance(value, dict):
            return _wrong(path, self.words, value)
        if len(value) > self.limit:
            return f"{path} has {len(value)} entries, over the cap of {self.limit}"
        for k, v in value.items():
            if not isinstance(k, str) or len(k) > TEXT:
                return f"{path} has a key that is not a string of at most {TEXT} characters ({_REPR.repr(k)})"
            if p := self.value.problem(v, _at(path, k)):
                return p
        return None


@dataclass(frozen=True)
class Record(Spec):
    """An object with declared `fields` (each optional unless in `required`) and any others (each
    :class:`Anything`)."""

    fields: dict
    required: tuple = ()
    words: str = "an object"

    def problem(self, value, path):
        if not isinstance(value, dict):
            return _wrong(path, self.words, value)
        missing = next((k for k in self.required if k not in value), None)
        if missing is not None:
            return f"{_at(path, missing)} is missing"
        for k, spec in self.fields.items():
            if k in value and (p := spec.problem(value[k], _at(path, k))):
                return p
        others = {k: v for k, v in value.items() if k not in self.fields}
        return Mapping(ANY).problem(others, path) if others else None


@dataclass(frozen=True)
class Anything(Spec):
    """Any JSON value (a field the schema does not declare), bounded: at most :data:`NODES` values nested at
    most :data:`DEPTH` deep, strings of at most `limit` characters, lists and objects of at most
    :data:`ITEMS` entries, numbers finite."""

    limit: int = MESSAGE
    words: str = "a JSON value"

    def problem(self, value, path):
        stack, seen = [(value, path, 0)], 0
        while stack:
            v, p, depth = stack.pop()
            seen += 1
            if seen > NODES:
                return f"{path} holds more than {NODES} values, over the cap"
            if depth > DEPTH:
                return f"{p} is nested deeper than {DEPTH} levels, over the cap"
            if isinstance(v, str):
                if len(v) > self.limit:
                    return f"{p} is {len(v)} characters long, over the cap of {self.limit}"
            elif isinstance(v, float) and not math.isfinite(v):
                return f"{p} must be a finite number, not {v!r}"
            elif isinstance(v, (list, dict)):
                if len(v) > ITEMS:
                    return f"{p} has {len(v)} entries, over the cap of {ITEMS}"
                pairs = v.items() if isinstance(v, dict) else enumerate(v)
                for k, x in pairs:
                    if isinstance(k, str) and len(k) > TEXT:
                        return f"{p} has a key {len(k)} characters long, over the cap of {TEXT}"
                    stack.append((x, _at(p, k), depth + 1))
            elif not (v is None or isinstance(v, (bool, int, float))):
                return _wrong(p, self.words, v)
        return None


ANY = Anything()
STR = Text()
MSG = Text(MESSAGE)
LABEL = opt(STR)
WHOLE = Number(0, 2 ** 53, whole=True)
DAY_NS = PLAUSIBLE["ns"].high
#: a time in ns: positive (an estimate), at most a day
TIME = Number(0, DAY_NS, above=True)
#: a frequency in kHz as sysfs gives it: its digits, or a number
KHZ = Either((Number(0, 1e9), Text(16, r"\d*", "digits")))
#: a round's record (``round_noise``; ``rounds`` before schema 6): pqlab.measure.noise.round_record
ROUND = Record({
    "round": WHOLE, "pid": opt(WHOLE), "wall_s": opt(Number(0, 1e6)), "steal": opt(Number(-1e6, 1e6)),
    "others_cores": opt(Number(-1e6, 1e6)), "ctxt": opt(WHOLE), "own_involuntary": opt(WHOLE),
    "load1": opt(Number(0, 1e6)), "mhz": opt(Number(0, 1e6)),
    "others_by_core": opt(Mapping(opt(Number(-1e6, 1e6)))),
    "cpu": opt(WHOLE), "busy": LABEL, "reference_shift": LABEL,
    **{f"{kind}{end}_ns": opt(TIME) for kind in ("scalar", "vector") for end in ("", "_start", "_end")},
    "protection": opt(Record({"cpu": opt(WHOLE), "nice": opt(Number(-100, 100, whole=True)),
                              "nice_asked": opt(Number(-100, 100, whole=True)), "refused": LABEL})),
}, required=("round",))
#: a conformance record (pqlab.checks.conformance.record_from_rows): its status, counts and failures are read
CONFORMANCE = Record({
    "status": STR, "ran": WHOLE, "passed": opt(WHOLE), "failed": opt(WHOLE), "skipped": opt(WHOLE),
    "failures": Mapping(WHOLE), "skip_reasons": opt(Mapping(WHOLE)), "sources": opt(Items(STR)),
    "seconds": opt(Number(0, 1e9)), "why_not": opt(MSG), "implementation": LABEL, "build": LABEL,
    "library_version": LABEL, "algorithm": LABEL, "backend": LABEL, "checked_at": LABEL,
    "liboqs": opt(Record({"build": LABEL, "options": LABEL, "build_config": opt(Mapping(STR))})),
}, required=("status", "ran", "failures"))
#: a cycle counter's record: the one in use (``counter``: pqlab.measure.cycles.in_use) or one that works here
#: (``counters.perf``/``.tsc``: availability)
COUNTER = Record({
    "label": LABEL, "unit": LABEL, "hz": opt(Number(0, 1e11, above=True)), "hz_source": LABEL,
    "read_cost_ns": opt(Number(0, DAY_NS)), "read_cost_ticks": opt(Number(0, 1e15)),
    "read_cost_ticks_in_c": opt(Number(0, 1e15)), "reason": opt(MSG), "requested": LABEL, "error": opt(MSG),
    "instruction": LABEL, "available": opt(Flag()), "errno": LABEL, "flags": opt(Mapping(Flag(), 256)),
})
LIBOQS = Record({
    "available": opt(Flag()), "reason": opt(MSG), "liboqs_version": LABEL, "liboqs_python_version": LABEL,
    "liboqs_path": LABEL, "options": LABEL, "build": LABEL, _OLD_OPTIONS: LABEL,
    "build_config": opt(Mapping(STR, 1024)), "cpu_extensions": opt(Items(Text(256), 1024)),
    "cpu_specific": opt(Mapping(Items(Text(256), 1024))), "built_from": opt(Mapping(ANY, 1024)),
})

#: A run's metadata: field -> its type and range (all optional; readers treat a missing one as unrecorded).
META = Record({
    # pqlab.measure.machine.collect
    "machine_id": Text(MAX_ID),
    "machine_id_override": opt(Record({k: STR for k in ("variable", "value", "host_id")},
                                      required=("variable", "value", "host_id"))),
    **{k: LABEL for k in ("hostname", "arch", "os", "kernel", "python", "python_implementation", "hypervisor",
                          "openssl", "params_hash", "profile")},
    "cpu": opt(Record({
        "model": Text(512), "logical_cores": opt(Number(1, 100_000, whole=True)),
        "usable_cores": opt(Number(1, 100_000, whole=True)), "mhz_reported": opt(Number(0, 1e6)),
        "flags_avx2": opt(Flag()), "flags_avx512f": opt(Flag()), "hypervisor_flag": opt(Flag()),
        "tsc_flags": opt(Mapping(Flag(), 256))})),
    "frequency": opt(Record({
        "available": opt(Flag()), "reason": opt(MSG), "scaling_governor": LABEL, "scaling_driver": LABEL,
        "boost": LABEL,
        **{k: opt(KHZ) for k in ("scaling_min_freq", "scaling_max_freq", "cpuinfo_max_freq")}})),
    "packages": opt(Mapping(Text(256), 1024)),
    "counter": opt(COUNTER),
    "counters": opt(Record({"perf": opt(COUNTER), "tsc": opt(COUNTER), "perf_event_paranoid": LABEL,
                            "hypervisor": LABEL})),
    "git": opt(Record({"commit": LABEL, "dirty": opt(Flag()), "reason": opt(MSG)})),
    "params": opt(Mapping(ANY)),
    "liboqs": opt(LIBOQS),
    # pqlab.store.recorder and results
    **{k: LABEL for k in ("study", "run_id", "started_at", "finished_at", "status", "interrupted_by")},
    "error": opt(MSG), "abandoned": opt(MSG),
    # a newer schema than this pqlab's is refused on merge by its own check, which says to update pqlab
    "schema_version": Number(1, 1_000_000, whole=True),
    "converted_from_schema": opt(Number(1, SCHEMA_VERSION, whole=True)),
    "process": opt(Record({"pid": Number(1, 2 ** 22, whole=True), "host": LABEL, "boot_id": LABEL,
                           "start_ticks": opt(WHOLE)})),
    "files": opt(Mapping(Record({"rows": opt(WHOLE), "sha256": opt(Text(64))}), 16)),
    # the runners
    "round_noise": opt(Items(ROUND)),
    "rounds": Either((Items(ROUND), WHOLE)),
    "conformance": opt(Mapping(CONFORMANCE)),
    "allowed_nonconforming": opt(Items(STR)),
    "implementations": opt(Mapping(STR)),
    "liboqs_names": opt(Mapping(MSG)),
    "warmup_skipped": opt(Items(STR)),
    **{k: LABEL for k in ("isolation", "isolation_asked", "raw_traces")},
    **{k: opt(Number(-DAY_NS, DAY_NS)) for k in ("harness_overhead_ns", "harness_lean_ns", "harness_fed_ns",
                                                 "harness_feed_ns")},
    "plan": opt(Items(ANY)),
})


def meta_problem(meta) -> str | None:
    """The first field of a run's metadata (`meta`, as its file holds it) that does not fit :data:`META`, in
    one line naming its path ("counter.hz must be a number, not str ('fast')"); None when every field fits."""
    return META.problem(meta, "") if isinstance(meta, dict) else _wrong("the metadata", "an object", meta)
