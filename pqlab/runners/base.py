"""What every runner shares: running its program and reading the one JSON document it prints."""
from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable, Hashable, Sequence

from pqlab.core import flags
from pqlab.measure import cycles, noise


class RunnerError(RuntimeError):
    """A program pqlab runs could not run or failed; the message names the program and what it said."""


def call_json(cmd: Sequence, *, what: str, timeout_s: float, error: type[Exception] = RunnerError,
              env: dict | None = None,
              stdin: str | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run `cmd` (`what`: the program's name in messages; `stdin`: text it reads) and return its process and
    the JSON document it printed on stdout (None when stdout is not one).  A timeout raises `error` naming the
    command; what the exit code means is the caller's (each program has its own)."""
    cmd = [str(c) for c in cmd]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        raise error(f"{what} timed out after {timeout_s:.0f} s: {' '.join(cmd)}") from exc
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        document = None
    return proc, document if isinstance(document, dict) else None


def list_document(cmd: Sequence, *, what: str, protocol: int, error: type[Exception] = RunnerError) -> dict:
    """The JSON document `cmd` prints for ``list`` (`what`: the program's name in messages), checked for the
    `protocol` pqlab speaks; `error` in one line when it fails, prints something else, or speaks another
    protocol."""
    proc, document = call_json([*cmd, "list"], what=what, timeout_s=120, error=error)
    if proc.returncode != 0 or document is None:
        raise error(f"{what}'s list failed ({failure(proc, document)})")
    if document.get("protocol") != protocol:
        raise error(f"{what} speaks protocol {document.get('protocol')}, pqlab speaks {protocol}: rebuild it "
                    "from this checkout")
    return document


def failure(proc: subprocess.CompletedProcess, document: dict | None = None, tail: int = 2000) -> str:
    """How a program ended and why, for an error message: "exit 3: <its error>" or "signal 9: <stderr's
    end>"."""
    status = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    why = (document or {}).get("error") or (proc.stderr or proc.stdout or "").strip()[-tail:] or "no output"
    return f"{status}: {why}"


def rows_over_rounds(results: list[tuple[int, dict]], rec, to_rows, to_samples) -> list[dict]:
    """One algorithm's measurement rows from its rounds, each round one process of a runner that printed
    ``operations`` of raw samples (``samples_ns``, and ``samples_cycles`` where it counts cycles).

    `to_rows(result, base)` makes the rows of a result (the rounds' samples merged: the summary of every
    sample), `to_samples(result, run_id=, round_index=)` its sample rows.  The estimate and interval are over
    rounds (:func:`pqlab.measure.stats.round_interval`, widened by the machine's drift read from the rounds'
    reference loops), and a row flags the busy rounds of `rec` (a
    :class:`pqlab.store.recorder.RunRecorder`)."""
    import pandas as pd

    from pqlab.measure.stats import relative_half_width, round_interval, with_rounds

    def merged_op(i: int, op: dict) -> dict:
        ops = [r["operations"][i] for _, r in results]
        merged = dict(op, samples_ns=[t for o in ops for t in o["samples_ns"]],
                      verified=all(o["verified"] for o in ops),
                      error=next((o.get("error") for o in ops if not o["verified"]), ""))
        if "samples_cycles" in op:
            merged["samples_cycles"] = [c for o in ops for c in o["samples_cycles"]]
        return merged

    merged = dict(results[0][1],
                  operations=[merged_op(i, op) for i, op in enumerate(results[0][1]["operations"])])
    samples = pd.concat([to_samples(r, run_id=rec.run_id, round_index=k) for k, r in results],
                        ignore_index=True)
    rows = to_rows(merged, rec.base).to_dict("records")
    for row in rows:
        mine = samples[samples["operation"] == row["operation"]]
        if not row["verified"] or mine.empty:
            continue
        value, low, high, k = round_interval(with_rounds(mine, "time_ns",
                                                         {rec.run_id: rec.meta.get("round_noise")}))
        marks = [flags.make(c, d) for c, d in flags.parse(row["flags"]) if c != "no-rounds"]
        busy = [x["round"] for x in rec.meta.get("round_noise", []) if x.get("busy")]
        if busy:
            marks.append(flags.make("busy", f"{len(busy)} of {k} rounds"))
        row.update(time_ns_median=value, time_ns_ci_low=low, time_ns_ci_high=high, rounds=k,
                   time_ns_rel_ci=relative_half_width(value, low, high), flags=flags.join(marks))
        counted = mine.dropna(subset=["cycles"]) if "cycles" in mine else mine.iloc[0:0]
        if row.get("cycles_source") not in (None, cycles.NONE) and not counted.empty:
            row["cycles_median"] = round_interval(with_rounds(counted, "cycles"))[0]
    return rows


def in_rounds(rec, entries: Sequence[Hashable], rounds: int, run_one: Callable[[Hashable, int], dict],
              to_rows, to_samples, *, label: str, lost: tuple[type[Exception], ...] = (RunnerError,),
              first: Callable[[Hashable, dict], None] | None = None,
              describe: Callable[[Hashable], dict] | None = None) -> dict[Hashable, list]:
    """The one round loop of every program pqlab times (native/PROTOCOL.md): `rounds` rounds, each running
    every entry once (``run_one(entry, round)``: one process of its program, its ``time`` document) in an
    order shuffled per round (seeded by `label` and the round), with the machine's noise and reference loops
    recorded around each round (``rec.meta["round_noise"]``).

    A process that fails with one of `lost` loses that entry's round only: ``rec.meta["lost"]`` says which
    and why (`describe(entry)`: the fields naming it).  `first(entry, result)` is called on an entry's first
    result (its sizes).  After every round the rows so far are written (:func:`rows_over_rounds`, with
    `to_rows` and `to_samples`) and the run is checkpointed, so an interrupted run keeps every round it
    finished.  Returns ``{entry: [(round, result)]}``."""
    results: dict[Hashable, list] = {entry: [] for entry in entries}
    rec.meta.setdefault("lost", [])
    rec.meta.setdefault("round_noise", [])
    for r in range(rounds):
        before, start = noise.snapshot(), noise.reference_times()
        order = list(entries)
        random.Random(f"{label}-{r}").shuffle(order)
        for entry in order:
            try:
                result = run_one(entry, r)
            except lost as exc:
                named = describe(entry) if describe else {"entry": str(entry)}
                rec.meta["lost"].append({"round": r, **named, "why": str(exc).splitlines()[0]})
                continue
            if first is not None and not results[entry]:
                first(entry, result)
            results[entry].append((r, result))
            rec.add(samples=to_samples(result, run_id=rec.run_id, round_index=r))
        rec.meta["round_noise"].append(noise.round_record(r, before, start))
        rec.set_measurements([row for entry in entries if results[entry]
                              for row in rows_over_rounds(results[entry], rec, to_rows, to_samples)])
        rec.checkpoint()
    return results
