"""`python -m pqlab rerun TOPIC [KEY ...] [--profile quick|full]`: re-run the notebook behind an exported
number, figure or table, as ``make reproduce`` does, and say whether the number came out where it was.

    python -m pqlab rerun 06_tls_handshake --profile quick                # the whole notebook, every number
    python -m pqlab rerun 03_memory_footprint study_over_x_sign --profile quick   # one number

The notebook ``notebooks/TOPIC.ipynb`` is executed with papermill exactly as the Makefile's recipe does for
the profile (kernel ``pqlab``, working folder ``notebooks/``, ``-f notebooks/params/TOPIC.yaml`` for full, the
notebook's stored defaults for quick, then ``--nb-args``: the Makefile's ``NB_ARGS``), but into its own output
tree, ``PQLAB_OUTPUT=build/rerun/PROFILE`` (``--into``): the exports it is compared with (``build/quick/`` for
quick, ``figures/`` and ``data/tables/`` for full; ``--output`` names the ``PQLAB_OUTPUT`` that wrote them)
are never overwritten. For each KEY of the topic's ``numbers.export.json`` it prints the number before and
after, their intervals, and whether the new value lies inside the old interval; a KEY that names a figure or
table says where its old and new files are. Its runs go to the rerun tree's ``data/results/``: a notebook that
reads runs other notebooks saved finds only the rerun tree's.

Every export records this command (:func:`command`, the sidecar's ``command``) and the HTML report shows it
beside each number, figure and table.  Bad input (an unknown topic, key or profile; no earlier exports to
compare a key with) is refused in one line, with close matches, before anything runs; a failed run is one line
naming its executed copy and papermill's log.
"""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import BadInput, close_matches
from pqlab.core.escaping import slug

PROFILES = ("quick", "full")
KERNEL = "pqlab"
#: the folder under build/ a rerun writes into (one per profile)
RERUN = "rerun"
_NUMBER = re.compile(r"[-+−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _shown(path: Path | str) -> str:
    """`path` relative to the checkout when it is inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(paths.ROOT.resolve())) or "."
    except ValueError:
        return str(path)


def command(topic: str, profile: str, keys=(), output: Path | str | None = None) -> str:
    """The command that re-runs `topic`'s notebook for `profile` and compares `keys`; `output`: the
    PQLAB_OUTPUT of the exports compared (left out when it is the checkout)."""
    parts = ["python", "-m", "pqlab", "rerun", topic, *keys, "--profile", profile]
    if output is not None and Path(output).resolve() != paths.ROOT.resolve():
        parts += ["--output", _shown(output)]
    return shlex.join(parts)


def with_keys(text: str, keys) -> str:
    """A recorded :func:`command` with `keys` after its topic."""
    parts = shlex.split(text)
    return shlex.join([*parts[:5], *keys, *parts[5:]]) if len(parts) >= 5 else text


def sidecar_command(topic: str) -> str | None:
    """The command an export of `topic` written by this process records (None when no notebook of the
    checkout is named `topic`, or the profile is neither quick nor full: an interactive run)."""
    try:
        profile, output = paths.PROFILE, paths.OUTPUT
    except BadInput:
        return None
    if profile not in PROFILES or not (paths.NOTEBOOKS / f"{topic}.ipynb").is_file():
        return None
    return command(topic, profile, output=output)


# ----- numbers --------------------------------------------------------------------------------------------

@dataclass
class Number:
    """One exported number: its text as quoted, its value and interval when they can be read."""

    key: str
    text: str
    value: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def interval(self) -> str:
        return "no interval" if self.low is None or self.high is None else f"[{self.low:g}, {self.high:g}]"


def parse_number(text) -> float | None:
    """The number a quoted text starts with ("4.31×", "1,184", "51 µs"), None when it starts with none ("not
    resolved (...)", "–")."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return None if math.isnan(float(text)) else float(text)
    found = _NUMBER.match(str(text or "").strip())
    if not found:
        return None
    try:
        return float(found.group(0).replace(",", "").replace("−", "-"))
    except ValueError:
        return None


def read_numbers(folder: Path) -> dict[str, Number]:
    """The numbers of `folder`/numbers.export.json: per key its text (KEY.txt), value and interval (the
    sidecar's "numbers" when it has them, else the KEY_ci_low and KEY_ci_high numbers beside KEY).  {} when
    there is no such file."""
    path = Path(folder) / "numbers.export.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    quoted = data.get("numbers") if isinstance(data.get("numbers"), dict) else {}
    notes = {f"{k}_note" for k in quoted}  # the macro of a quoted number's statistic and caveats
    keys = [k for k in dict.fromkeys([*(data.get("macros") or {}), *quoted]) if k not in notes]

    def text_of(key: str) -> str:
        try:
            return (Path(folder) / f"{slug(key)}.txt").read_text(encoding="utf-8")
        except OSError:
            return ""

    out = {}
    for key in keys:
        q = quoted.get(key) if isinstance(quoted.get(key), dict) else None
        if q is not None:
            out[key] = Number(key, str(q.get("text") or text_of(key)), parse_number(q.get("value")),
                              parse_number(q.get("low")), parse_number(q.get("high")))
            continue
        text = text_of(key)
        out[key] = Number(key, text, parse_number(text))
    for key, number in out.items():
        if number.low is None and f"{key}_ci_low" in out and f"{key}_ci_high" in out:
            number.low, number.high = out[f"{key}_ci_low"].value, out[f"{key}_ci_high"].value
    return out


def interval_ends(keys) -> set[str]:
    """The keys that are another key's interval ends (KEY_ci_low, KEY_ci_high of a KEY in `keys`)."""
    keys = set(keys)
    return {k for k in keys for end in ("_ci_low", "_ci_high") if k.endswith(end) and k[:-len(end)] in keys}


def verdict(before: Number, after: Number | None) -> str:
    """Whether `after` lies inside `before`'s interval, in words."""
    if after is None or after.value is None:
        return "the re-run gave no number to compare"
    if before.low is None or before.high is None:
        if before.value is None:
            return "no number to compare"
        return "the same" if math.isclose(before.value, after.value) else "different (no interval)"
    if before.low <= after.value <= before.high:
        return "inside the old interval"
    overlap = after.low is not None and after.high is not None and after.low <= before.high \
        and before.low <= after.high
    return "outside the old interval (" + ("the two intervals overlap" if overlap else
                                           "the two intervals do not overlap") + ")"


def compare_line(key: str, before: Number, after: Number | None) -> str:
    shown = "not given" if after is None else f"{after.text or '–'} {after.interval}"
    return f"{key}: before {before.text or '–'} {before.interval}, after {shown}: {verdict(before, after)}"


# ----- the run --------------------------------------------------------------------------------------------

@dataclass
class Plan:
    """A checked rerun: what runs, where, and what it is compared with."""

    topic: str
    profile: str
    keys: list[str]
    exports: Path  # the export tree compared with
    into: Path  # the rerun's PQLAB_OUTPUT
    argv: list[str]  # papermill's command line
    env: dict

    @property
    def notebook(self) -> Path:
        return self.into / f"{self.topic}.ipynb"

    @property
    def new_exports(self) -> Path:
        return paths.export_root(self.profile, self.into)


def topics() -> list[str]:
    return sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _named(exports: Path, topic: str) -> dict[str, str]:
    """Figure and table names of `topic` under `exports` -> their kind."""
    out = {}
    for kind, folder in (("figure", exports / "figures" / topic),
                         ("table", exports / "data" / "tables" / topic)):
        for p in sorted(folder.glob("*.export.json")) if folder.is_dir() else []:
            if p.name != "numbers.export.json":
                out[p.name.removesuffix(".export.json")] = kind
    return out


def plan(topic: str, keys, profile: str, output: Path | str | None = None, into: Path | str | None = None,
         nb_args: str = "", fresh: bool = False) -> Plan:
    """Check everything before anything runs; bad input is one BadInput line with close matches."""
    if profile not in PROFILES:
        raise BadInput(f"profile {profile!r} is not one of {', '.join(PROFILES)}")
    known = topics()
    if topic not in known:
        near = close_matches(topic, known, n=3)
        raise BadInput(f"no notebook {topic!r} in {_shown(paths.NOTEBOOKS)}: "
                       + (f"did you mean {', '.join(near)}?" if near else f"one of {', '.join(known)}"))
    output = Path(output) if output else paths.OUTPUT
    exports = paths.export_root(profile, output)
    into = Path(into) if into else paths.BUILD / RERUN / profile
    if into.resolve() == output.resolve() or into.resolve() in exports.resolve().parents \
            or exports.resolve() == paths.export_root(profile, into).resolve():
        raise BadInput(f"--into {_shown(into)} would overwrite the exports it is compared with "
                       f"({_shown(exports)}): name another folder")
    numbers, named = read_numbers(exports / "data" / "tables" / topic), _named(exports, topic)
    if keys and not numbers and not named:
        raise BadInput(f"{_shown(exports)} holds no exports of {topic} to compare with: run make reproduce "
                       f"PROFILE={profile} first, or name no key to only re-run it")
    for key in keys:
        if key not in numbers and key not in named:
            near = close_matches(key, [*numbers, *named], n=3)
            raise BadInput(f"{topic} exported no number, figure or table {key!r}"
                           + (f": did you mean {', '.join(near)}?" if near else ""))
    try:
        extra = shlex.split(nb_args or "")
    except ValueError as exc:
        raise BadInput(f"--nb-args {nb_args!r} cannot be read as papermill arguments ({exc})") from None
    params = paths.NOTEBOOKS / "params" / f"{topic}.yaml"
    if profile == "full" and not params.is_file():
        raise BadInput(f"{_shown(params)} is missing: the full profile runs {topic} with it")
    argv = [sys.executable, "-m", "papermill", "--kernel", KERNEL, "--cwd", str(paths.NOTEBOOKS),
            "--log-level", "WARNING", "--no-progress-bar",
            *(["-f", str(params)] if profile == "full" else []),
            *extra, str(paths.NOTEBOOKS / f"{topic}.ipynb"), str(into / f"{topic}.ipynb")]
    env = {**os.environ, "PQLAB_PROFILE": profile, "PQLAB_FRESH": "1" if fresh else "",
           "PQLAB_OUTPUT": str(into.resolve())}
    return Plan(topic, profile, list(keys), exports, into, argv, env)


def _kernel_problem() -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    if KERNEL in KernelSpecManager().find_kernel_specs():
        return ""
    return f"the Jupyter kernel {KERNEL!r} is not registered: run make setup"


def execute(p: Plan) -> None:
    """Run papermill as the Makefile does; a failure is one RuntimeError line (the executed copy is moved to
    INTO/failed/, papermill's output is in INTO/TOPIC.papermill.log)."""
    problem = _kernel_problem()
    if problem:
        raise BadInput(problem)
    p.into.mkdir(parents=True, exist_ok=True)
    (p.into / "failed" / p.notebook.name).unlink(missing_ok=True)
    log = p.into / f"{p.topic}.papermill.log"
    with open(log, "w", encoding="utf-8") as fh:
        done = subprocess.run(p.argv, env=p.env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        failed = p.into / "failed" / p.notebook.name
        if p.notebook.exists():
            failed.parent.mkdir(exist_ok=True)
            shutil.move(p.notebook, failed)
        lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()
                 if ln.strip()]
        raise RuntimeError(f"{p.topic} failed ({lines[-1] if lines else 'papermill gave no reason'}); its "
                           f"executed copy is {_shown(failed)}, papermill's output {_shown(log)}")


def report(p: Plan, before: dict[str, Number], after: dict[str, Number]) -> list[str]:
    """The lines printed after the run: each KEY (or, with none, each number with an interval) before and
    after."""
    named = _named(p.exports, p.topic)
    keys = p.keys or [k for k, n in before.items() if n.low is not None and k not in interval_ends(before)]
    lines, inside, compared = [], 0, 0
    for key in keys:
        if key in before:
            lines.append(compare_line(key, before[key], after.get(key)))
            inside += verdict(before[key], after.get(key)) == "inside the old interval"
            compared += 1
            continue
        kind = named.get(key, "export")
        folder = ("figures" if kind == "figure" else "data/tables") + f"/{p.topic}"
        lines.append(f"{key} ({kind}): before {_shown(p.exports / folder)}/{key}.*, after "
                     f"{_shown(p.new_exports / folder)}/{key}.*")
    if not before:
        lines.append(f"no earlier numbers of {p.topic} in {_shown(p.exports)} to compare with")
    elif not keys:
        lines.append(f"none of {p.topic}'s {len(before)} numbers has an interval: name keys to compare them")
    elif compared:
        lines.append(f"{inside} of {compared} inside the old interval")
    lines.append(f"the re-run: {_shown(p.notebook)}; its exports: {_shown(p.new_exports)}/ (figures/, "
                 "data/tables/)")
    return lines


def rerun(topic: str, keys=(), profile: str = "full", output=None, into=None, nb_args: str = "",
          fresh: bool = False, say=print) -> list[str]:
    """Check, run, compare: the lines of :func:`report` (each also passed to `say`)."""
    p = plan(topic, list(keys), profile, output, into, nb_args, fresh)
    before = read_numbers(p.exports / "data" / "tables" / topic)
    say(f"rerun: {topic} as make reproduce PROFILE={profile} runs it, into {_shown(p.into)}/ (compared with "
        f"{_shown(p.exports)}/)")
    execute(p)
    lines = report(p, before, read_numbers(p.new_exports / "data" / "tables" / topic))
    for line in lines:
        say(line)
    return lines


# ----- command line ---------------------------------------------------------------------------------------

def add_arguments(p):
    p.add_argument("topic", help="the notebook, e.g. 06_tls_handshake")
    p.add_argument("keys", nargs="*", metavar="KEY",
                   help="numbers of its numbers.export.json (or figure and table names) to compare; none: "
                        "every number with an interval")
    p.add_argument("--profile", default="full", choices=PROFILES,
                   help="as make reproduce PROFILE=...: full (notebooks/params/TOPIC.yaml) or quick (the "
                        "notebook's stored defaults); default %(default)s")
    p.add_argument("--output", help="the PQLAB_OUTPUT whose exports are compared (default: the checkout)")
    p.add_argument("--into", help="the rerun's PQLAB_OUTPUT (default build/rerun/PROFILE)")
    p.add_argument("--nb-args", default=os.environ.get("NB_ARGS", ""),
                   help="extra papermill arguments, as the Makefile's NB_ARGS (default: $NB_ARGS)")
    p.add_argument("--fresh", action="store_true", help="as make reproduce FRESH=1 (PQLAB_FRESH)")
    return p


def run(args) -> int:
    rerun(args.topic, args.keys, args.profile, args.output, args.into, args.nb_args, args.fresh)
    return 0
