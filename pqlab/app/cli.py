"""`python -m pqlab list | builds | bench | conformance | calibrate | compare | fidelity | bundle | merge |
machine | paper | report | rerun | cite | lab`:
measuring without a notebook, moving results between machines, the cycle counters here, building the paper,
the executed notebooks as HTML pages and starting JupyterLab.

Bad input is refused with one ``error:`` line (exit 2) before anything is measured; warnings are one
``warning:`` line each.  SIGINT, SIGTERM and SIGHUP stop a run with one line saying what was kept
and where, and exit 128 + the signal number.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import warnings
from pathlib import Path

from pqlab.app import lab, provision
from pqlab.backends.algorithms import UNAVAILABLE, catalogue, names, resolve
from pqlab.core import builds, files, inputs
from pqlab.core.errors import BadInput
from pqlab.core.escaping import terminal
from pqlab.core.formatting import fmt_factor_ci, fmt_time_ns
from pqlab.core.paths import check_environment
from pqlab.core.schema import KIND_OPERATIONS, convert_unit
from pqlab.liboqs import loader as liboqs_loader
from pqlab.measure.load import LOADS
from pqlab.measure.load import describe as load_describe
from pqlab.measure.machine import counter_report
from pqlab.measure.noise import quiet_now
from pqlab.publish import rerun
from pqlab.publish.report import add_arguments, run
from pqlab.publish.rerun import add_arguments as rerun_arguments
from pqlab.runners.rounds import MAX_ROUNDS, MAX_ROUNDS_FACTOR, ROUNDS
from pqlab.store.bundle import create_bundle, merge_bundles
from pqlab.store.recorder import SIGNALS, Interrupted, _raise_interrupted, check_folder


def _say(text: object = "", file=None, *, lines: bool = False, **kwargs) -> None:
    """print() for every text that may hold a path, a name or a message from data (a bundle's file name, a
    run's fields): each control and format character shown as ``<U+XXXX>`` (:func:`escaping.terminal`), so
    nothing in it moves the cursor, sets the title or clears the screen, nor (one line) starts a line of its
    own; `lines`: a table or a text of several lines, each line escaped on its own."""
    text = str(text)
    print("\n".join(map(terminal, text.split("\n"))) if lines else terminal(text), file=file, **kwargs)


def _cmd_list(args) -> int:

    names(args.kind or None, args.backend or None)  # an unknown kind or backend: refused with close matches
    df = catalogue()
    if args.kind:
        df = df[df["kind"] == args.kind]
    if args.backend:
        df = df[df["backend"] == args.backend]

    cols = ["algorithm", "kind", "backend", "family", "nist_level", "operations"]
    _say(df[cols].to_string(index=False, na_rep=""), lines=True)
    print(f"\n{len(df)} algorithm/backend pairs", file=sys.stderr)
    for backend, why in UNAVAILABLE.items():
        _say(f"not available: {backend}: {why}", file=sys.stderr)
    return 0


def _cmd_builds(args) -> int:
    import pandas as pd

    if args.add_source:
        provision.register(args.add_source)
    if args.use:
        provision.use(args.use)
    df = pd.DataFrame(liboqs_loader.catalogue())
    df["loaded"] = df["loaded"].map({True: "yes", False: ""})
    _say(df[["build", "release", "options", "compiler", "level", "state", "loaded", "source"]].to_string(
        index=False), lines=True)
    print("\nmeasure one with NAME@BUILD, e.g. ML-KEM-768@liboqs-0.12.0 (a worker process loads it); "
          "python -m pqlab.app.provision liboqs BUILD installs one now; another compiler or level is a tag "
          f"of any own build: +clang19, +gcc, then +{', +'.join(builds.LEVELS)} (liboqs-0.9.0+clang19+Os)",
          file=sys.stderr)
    return 0


def _cmd_conformance(args) -> int:

    from pqlab.checks.conformance import table

    programs = [p for p in (args.programs or "").split(",") if p]
    if not args.algorithms and not programs:
        raise BadInput("name the implementations to check (e.g. ML-DSA-44@liboqs Ed25519@cryptography), or "
                       "--programs rust,openssl,go for notebook 08's programs")
    if args.records:  # the whole records of this process's implementations (what a worker hands back)
        from pqlab.checks.conformance import check

        print(json.dumps([check(a, refresh=args.refresh) for a in resolve(args.algorithms)], default=str))
        return 0
    df = table(args.algorithms, refresh=args.refresh, programs=programs)
    if args.json:
        _say(json.dumps(df.to_dict("records"), indent=1, default=str), lines=True)
        return 0
    shown = df[["algorithm", "backend", "build", "status", "ran", "passed", "failed", "failures", "skipped",
                "seconds", "cached"]]
    _say(shown.to_string(index=False), lines=True)
    for r in df.itertuples():
        if r.skip_reasons:
            _say(f"{r.algorithm}@{r.backend} skipped: {r.skip_reasons}", file=sys.stderr)
        if r.why_not:
            _say(f"{r.algorithm}@{r.backend}: {r.why_not}", file=sys.stderr)
    return 0


def _cmd_bench(args) -> int:
    from pqlab.benchmark import MESSAGE_BYTES, bench
    from pqlab.measure.timing import TARGET_REL_CI

    # refused before anything is measured: an existing file (without --force), a link, the results folder
    if args.out:
        inputs.output_file(args.out, force=args.force, stores=[args.folder] if args.folder else [])
        check_folder(Path(args.out).resolve().parent, "folder of --out",
                     fix="name an --out file in a writable folder")
    target = TARGET_REL_CI if args.target_rel_ci is None else args.target_rel_ci or None
    run = bench(args.algorithms, args.operations, args.message_bytes or [MESSAGE_BYTES], budget_s=args.budget,
                min_samples=args.min_samples, max_samples=args.max_samples, target_rel_ci=target,
                rounds=args.rounds, max_rounds=args.max_rounds, quiet_only=args.quiet_only,
                isolation=args.isolation, study=args.study, folder=args.folder, run_id=args.run_id,
                progress=not args.no_progress, allow_nonconforming=args.allow_nonconforming)
    written = False
    try:
        _say(run.summary().to_string(), lines=True)  # the notebooks' rules: units, digits, flags as marks
        print(file=sys.stderr)
        _say(f"saved run {run.run_id}: {run.path}", file=sys.stderr)
        if args.out:

            try:
                files.atomic_write(Path(args.out), lambda tmp: run.measurements.to_csv(tmp, index=False),
                                   replace=args.force)
            except FileExistsError:
                raise BadInput(f"--out {args.out} appeared while the run measured and was left alone: the "
                               f"run is saved in {run.path}; pass --force to replace the file") from None
            written = True
            _say(f"measurements also written to {args.out}", file=sys.stderr)
    except KeyboardInterrupt as exc:  # the run is complete on disk: say so, and what was not done
        signum = getattr(exc, "signum", signal.SIGINT)
        skipped = f"; --out {args.out} not written" if args.out and not written else ""
        raise Interrupted(signum, f"{signal.Signals(signum).name} after the run was saved: run {run.run_id} "
                                  f"is complete in {run.path} (status {run.meta.get('status')})"
                                  f"{skipped}") from None
    return 0 if run.measurements["verified"].fillna(False).astype(bool).all() else 1


def _cmd_compare(args) -> int:
    import pandas as pd

    from pqlab.measure.stats import CONFIDENCE
    from pqlab.store.results import compare_runs

    df = compare_runs(args.a, args.b, alpha=args.alpha, min_factor=args.min_factor,
                      allow_different=args.allow_different, allow_partial=args.allow_partial,
                      allow_changed_meaning=args.allow_changed_meaning)
    for difference in df.attrs.get("differences", []):
        _say(f"note: the runs differ in {difference}", file=sys.stderr)
    for partial in df.attrs.get("partial", []):
        _say(f"note: {partial}: a partial run", file=sys.stderr)
    if df.empty:
        print("runs A and B have no measurement in common", file=sys.stderr)
        return 1
    shown = pd.DataFrame({
        "algorithm": df["algorithm"], "backend": df["backend"], "operation": df["operation"],
        "message_bytes": df["message_bytes"], "statistic": df["statistic"],
        "a": df["a_ns"].map(fmt_time_ns), "b": df["b_ns"].map(fmt_time_ns),
        f"b/a [{CONFIDENCE:.0%} CI]": [fmt_factor_ci(f, lo, hi, 3) for f, lo, hi in
                         zip(df["factor_b_over_a"], df["factor_ci_low"], df["factor_ci_high"])],
        "p": df["p_value"].map(lambda p: f"{p:.2g}"), "verdict": df["verdict"]})
    _say(shown.to_string(index=False, na_rep=""), lines=True)
    return 0


def _cmd_fidelity(args) -> int:
    from pqlab.runners.fidelity import DEFAULT_OPERATIONS, format_fidelity, measure_fidelity, measure_noop

    def say(what: str) -> None:
        _say(f"measuring {what} ...", file=sys.stderr)

    noop = measure_noop(min(0.2, args.budget))
    df = measure_fidelity(DEFAULT_OPERATIONS, budget_s=args.budget, blocks=args.blocks, progress=say)
    _say(format_fidelity(df, noop), lines=True)
    return 0


def _cmd_paper(args) -> int:
    from pqlab.publish.paper import MAX_OVERFULL_PT, build

    result = build(args.profile, output=Path(args.output) if args.output else None,
                   out=Path(args.out) if args.out else None, twocolumn=args.twocolumn)
    for problem in result.problems:
        _say(f"paper: {problem}", file=sys.stderr)
    for number in result.unmeasured:  # typeset as not measured, and listed in the paper's run context
        _say(f"paper: note: {number}", file=sys.stderr)
    if result.problems:
        _say(f"error: {len(result.problems)} problem(s) in {result.log}", file=sys.stderr)
        return 1
    _say(f"{result.pdf}: no LaTeX error, no Overfull \\hbox over {MAX_OVERFULL_PT:g} pt (log: {result.log})")
    return 0


def _cmd_report(args) -> int:

    return run(args)


def _cmd_rerun(args) -> int:
    return rerun.run(args)


def _cmd_cite(args) -> int:
    from pqlab.publish.paper import citation

    _say(citation(), lines=True, end="")
    return 0


def _cmd_lab(args) -> int:
    return lab.run(args.ip, args.port, args.dir)


def _cmd_machine(args) -> int:

    _say(counter_report(), lines=True)
    quiet, why, _ = quiet_now()
    _say(f"right now: {why}" + ("" if quiet else " (measurements made now carry the flag busy)"))
    return 0


def _cmd_calibrate(args) -> int:
    import pandas as pd

    from pqlab.calibration import analyse, describe, repeat

    if args.out:
        inputs.output_file(args.out, force=args.force, stores=[args.folder] if args.folder else [])
    if args.screen:
        from pqlab.calibration import screen_false_positives

        _say(screen_false_positives(args.repeats, args.screen, load=args.load), lines=True)
        return 0
    if args.runs:
        runs = args.runs
    else:
        if not args.algorithms:
            raise BadInput("name the algorithms to calibrate (e.g. Ed25519 ML-KEM-768), or --runs RUN... to "
                           "check runs already made")
        # --target-rel-ci 0: none
        kwargs = {} if args.target_rel_ci is None else {"target_rel_ci": args.target_rel_ci or None}
        if args.budget is not None:
            kwargs["budget_s"] = args.budget
        if args.rounds is not None:
            kwargs.update(rounds=args.rounds, max_rounds=args.max_rounds)
        programs = [p for p in (args.programs or "").split(",") if p]
        if not programs:
            kwargs.update(isolation=args.isolation, quiet_only=args.quiet_only)
        _say(f"{args.repeats} runs, profile {args.profile}, load: {load_describe(args.load)} ...",
             file=sys.stderr, flush=True)
        runs = repeat(args.algorithms, args.repeats, profile=args.profile, load=args.load, programs=programs,
                      folder=args.folder,
                      progress=lambda k, run: _say(f"  run {k + 1} of {args.repeats}: saved "
                                                   f"{run.run_id}", file=sys.stderr, flush=True),
                      **kwargs)
    result = analyse(runs)
    rows = result["rows"]
    if not rows.empty:
        shown = pd.DataFrame({
            "algorithm": rows["algorithm"] + "@" + rows["backend"].astype(str),
            "operation": rows["operation"],
            "method": rows["method"], "pooled median": rows["pooled"].map(fmt_time_ns),
            "± (median)": rows["half_width"].map(lambda v: f"{v:.1%}"),
            "holds pooled": [f"{c:.0%}" for c in rows["cover_pooled"]],
            "holds other": [f"{c:.0%}" for c in rows["cover_other"]],
            "spread ratio": rows["spread_ratio"].map(lambda v: f"{v:.2f}")})
        _say(shown.to_string(index=False), lines=True)
    ratios = result["ratios"]
    if not ratios.empty:
        print()
        shown = pd.DataFrame({
            "ratio": ratios["numerator"] + " / " + ratios["denominator"], "operation": ratios["operation"],
            "pooled": ratios["pooled"].map(lambda v: f"{v:.3g}"),
            "± (median)": ratios["half_width"].map(lambda v: f"{v:.1%}"),
            "holds pooled": [f"{c:.0%}" for c in ratios["cover_pooled"]],
            "holds other": [f"{c:.0%}" for c in ratios["cover_other"]],
            "spread ratio": ratios["spread_ratio"].map(lambda v: f"{v:.2f}")})
        _say(shown.to_string(index=False), lines=True)
    print()
    _say(describe(result), lines=True)
    if args.out:

        files.atomic_write(Path(args.out),
                           lambda tmp: pd.concat([rows.assign(what="measurement"),
                                                  ratios.assign(what="ratio")]).to_csv(tmp, index=False),
                           replace=args.force)
        _say(f"written to {args.out}", file=sys.stderr)
    return 0


def _cmd_bundle(args) -> int:

    if args.out:  # never an existing file without --force, a link, or a file of the results folder
        inputs.output_file(args.out, force=args.force, stores=[args.folder] if args.folder else [])
    path = create_bundle(args.out, profile=args.profile, notebooks=not args.no_notebooks, folder=args.folder,
                         replace=args.out is None or args.force)
    _say(path)
    return 0


def _cmd_merge(args) -> int:

    caps = {f"max_{k}_bytes": int(convert_unit(v, "MiB", "bytes"))
            for k, v in (("member", args.max_member_mib), ("manifest", args.max_manifest_mib),
                         ("total", args.max_total_mib)) if v is not None}
    try:
        reports = merge_bundles(args.bundles, folder=args.folder, override=args.override, **caps)
    except KeyboardInterrupt as exc:  # the import under way is staged (pqlab.store.bundle): none of it shows
        signum = getattr(exc, "signum", signal.SIGINT)
        _say(f"merge interrupted by {signal.Signals(signum).name}: nothing of the bundle being imported is "
             "visible in the store yet; run the same merge again to complete it", file=sys.stderr)
        return 128 + signum
    for r in reports:
        who = r["machine_id"] + (f", counted as {r['host']}" if r["host"].startswith("this host") else
                                 f" (its identity override of host {r['override']['host_id']} not verified)"
                                 if r["override"] else "")
        if r["status"] == "already imported":
            _say(f"{r['bundle']}: already imported (machine {who}); nothing changed")
            continue
        converted = f", {len(r['converted'])} converted to the current schema" if r["converted"] else ""
        _say(f"{r['bundle']}: machine {who}: {len(r['imported'])} run(s) imported{converted}, "
             f"{len(r['present'])} already present -> {r['folder']}")
        for run_id, status in r["partial"].items():
            _say(f"{r['bundle']}: note: run {run_id} is {status}: a partial run (it holds part of its plan "
                 "only)")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (the problem, and where the help is)."""

    def error(self, message: str):
        self.exit(2, terminal(f"error: {message} (see `{self.prog} --help`)") + "\n")


def _checked(check, *args, **kwargs):
    """An argparse type from a check of pqlab.core.inputs (its message becomes argparse's)."""
    def convert(text: str):
        try:
            value = int(text) if check in (inputs.count, inputs.count, inputs.message_size) else text
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        try:
            return check(value, *args, **kwargs)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = check.__name__  # argparse names the type in its messages
    return convert


def _round_options(p: argparse.ArgumentParser, profiled: bool = False) -> None:
    from pqlab.measure.stats import MIN_ROUNDS

    most = inputs.MAX_ROUND_COUNT
    p.add_argument("--rounds", type=_checked(inputs.count, "--rounds", MIN_ROUNDS, most),
                   default=None if profiled else ROUNDS,
                   help="first-stage rounds, each a fresh worker process (default "
                        + ("the profile's, bench's " if profiled else "")
                        + f"{ROUNDS}; at least {MIN_ROUNDS})")
    p.add_argument("--max-rounds", type=_checked(inputs.count, "--max-rounds", 1, most),
                   help=f"most rounds an operation gets (default {MAX_ROUNDS_FACTOR} times --rounds: "
                        f"{MAX_ROUNDS} for {ROUNDS})")
    p.add_argument("--isolation", choices=["process", "in-process"], default="process",
                   help="where rounds run: each in a fresh worker process (default), or all in this one")


def parser() -> argparse.ArgumentParser:
    from pqlab.benchmark import MESSAGE_BYTES
    from pqlab.calibration import MIN_RUNS, PROFILES
    from pqlab.checks.leakage import MIN_BLOCKS
    from pqlab.measure.stats import CONFIDENCE
    from pqlab.store.results import ALPHA, MIN_FACTOR

    p = _Parser(prog="python -m pqlab", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ls = sub.add_parser("list", help="print algorithms with backend, family, NIST level and operations")
    ls.add_argument("--kind", choices=list(KIND_OPERATIONS))
    ls.add_argument("--backend")
    ls.set_defaults(func=_cmd_list)
    bl = sub.add_parser("builds",
                        help="list the liboqs builds: pqlab's own (each release, each option) and any given")
    bl.add_argument("--add-source", metavar="DIR",
                    help="register a liboqs source tree (any release from 0.9 on) as the build "
                         "liboqs-<release>+source and build it (cached per user)")
    bl.add_argument("--use", metavar="BUILD",
                    help="make one of pqlab's builds the one this clone loads by default (e.g. "
                         f"liboqs-0.16.0+source; {builds.SETUP.id} goes back)")
    bl.set_defaults(func=_cmd_builds)
    b = sub.add_parser("bench", help="measure algorithms and write a results file")
    b.add_argument("algorithms", nargs="+",
                   help="names; NAME@backend picks a backend (e.g. ML-DSA-44@cryptography), "
                        "NAME@liboqs-0.12.0 a liboqs build (python -m pqlab builds)")
    b.add_argument("--operations", nargs="+",
                   help="keygen sign verify encaps decaps encrypt decrypt, each of which every algorithm "
                        "must have; default all (each algorithm's own)")
    b.add_argument("--message-bytes", type=_checked(inputs.message_size), action="append",
                   help=f"message size in bytes (repeat for several; default {MESSAGE_BYTES})")
    b.add_argument("--budget", type=_checked(inputs.positive_number, "the value"), default=1.0,
                   help="seconds of sampling per operation over --max-rounds rounds (default %(default)g)")
    for bound, default in (("min", 5), ("max", 10_000)):
        b.add_argument(f"--{bound}-samples", default=default,
                       type=_checked(inputs.count, "the value", 1, inputs.MAX_SAMPLES))
    b.add_argument("--target-rel-ci", type=_checked(inputs.positive_number, "the value", zero=True),
                   help=f"make rounds until the {convert_unit(CONFIDENCE, 'fraction', '%'):g}%% interval is "
                        "expected within ± this fraction (default pqlab.measure.timing.TARGET_REL_CI; 0: "
                        "always --max-rounds)")
    _round_options(b)
    b.add_argument("--quiet-only", action="store_true",
                   help="refuse to measure when the machine is busy (other processes' CPU or steal: "
                        "pqlab.measure.noise)")
    b.add_argument("--study", default="", help="label stored with every row")
    b.add_argument("--out",
                   help="also write the measurements table to this CSV file (a new one; not in the results "
                        "folder, not a symbolic link)")
    b.add_argument("--force", action="store_true", help="let --out replace an existing file")
    b.add_argument("--folder", help="results folder (default data/results)")
    b.add_argument("--run-id", help="the run's id (default: a new unique one); must not exist in the folder")
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--allow-nonconforming", action="store_true",
                   help="time an implementation that fails its known-answer checks (pqlab conformance); the "
                        "run records that it was asked")
    b.set_defaults(func=_cmd_bench)
    co = sub.add_parser("conformance",
                        help="the known-answer and invalid-input checks of each implementation "
                             "(cached per build): vectors run, passed, failed by kind, skipped")
    co.add_argument("algorithms", nargs="*",
                    help="names as for bench, e.g. ML-DSA-44@liboqs Ed25519@cryptography "
                         "ML-DSA-44@liboqs-0.12.0 (a liboqs build: checked in a worker)")
    co.add_argument("--programs",
                    help="also notebook 08's programs (comma-separated, e.g. rust,openssl,go): every "
                         "implementation of the named algorithms (all they list when none is named)")
    co.add_argument("--json", action="store_true", help="the records as JSON")
    co.add_argument("--refresh", action="store_true", help="check again, ignoring the cache")
    co.add_argument("--records", action="store_true", help="print the whole records as JSON (this process's "
                                                           "implementations only)")
    co.set_defaults(func=_cmd_conformance)
    c = sub.add_parser("compare", help="compare run B with run A: factor and significance per measurement")
    c.add_argument("a", help="run id or path of the baseline run")
    c.add_argument("b", help="run id or path of the other run")
    c.add_argument("--alpha", type=float, default=ALPHA,
                   help="significance level, in (0, 1) (default %(default)g)")
    c.add_argument("--min-factor", type=float, default=MIN_FACTOR,
                   help="smallest factor called slower or faster, >= 1 (default %(default)g; 1: any "
                        "significant difference)")
    c.add_argument("--allow-different", action="store_true",
                   help="compare runs from different machines, parameters or liboqs builds (they are named)")
    c.add_argument("--allow-partial", action="store_true",
                   help="compare runs that did not finish (interrupted, failed, abandoned; they are named)")
    c.add_argument("--allow-changed-meaning", action="store_true",
                   help="runs of two liboqs releases: compare names that mean different algorithms in them "
                        "too (a name liboqs re-used for another algorithm; each such row says so)")
    c.set_defaults(func=_cmd_compare)
    f = sub.add_parser("fidelity",
                       help="pqlab's liboqs path, liboqs-python and a bare loop against liboqs timed from C "
                            "(harness check, one run)")
    f.add_argument("--budget", type=_checked(inputs.positive_number, "the value"), default=2.0,
                   help="seconds of sampling per operation and arm (default %(default)g)")
    f.add_argument("--blocks", type=_checked(inputs.count, "the value", 1, inputs.MAX_ROUND_COUNT),
                   default=20,
                   help="alternating blocks the budget is split into")
    f.set_defaults(func=_cmd_fidelity)
    bu = sub.add_parser("bundle",
                        help="pack this machine's runs, raw traces and executed notebooks into one archive")
    bu.add_argument("--profile", choices=["quick", "full"],
                    help="only the runs and notebooks of `make reproduce PROFILE=...` (default: every run)")
    bu.add_argument("--out",
                    help="the archive to write, a new file outside the results folder and not a symbolic "
                         "link (default build/bundles/pqlab-<machine>-<profile>-<id>.tar.gz under "
                         "PQLAB_OUTPUT, else the checkout)")
    bu.add_argument("--force", action="store_true", help="let --out replace an existing file")
    bu.add_argument("--no-notebooks", action="store_true", help="leave the executed notebooks out")
    bu.add_argument("--folder", help="results folder (default data/results)")
    bu.set_defaults(func=_cmd_bundle)
    me = sub.add_parser("merge",
                        help="verify bundles and import their runs under data/results/machines/<id>/")
    me.add_argument("bundles", nargs="+", metavar="BUNDLE", help="archives made by `python -m pqlab bundle`")
    me.add_argument("--folder", help="results folder (default data/results)")
    me.add_argument("--override", action="store_true",
                    help="merge a bundle that carries this host's own machine id (only one made here: its "
                         "runs count as this machine's)")
    for what, default, text in (("member", 256, "one file in a bundle"),
                                ("manifest", 16, "a bundle's manifest"),
                                ("total", 2048, "all files of one bundle")):
        me.add_argument(f"--max-{what}-mib", type=_checked(inputs.positive_number, f"--max-{what}-mib"),
                        help=f"the cap on {text}, MiB (default {default})")
    me.set_defaults(func=_cmd_merge)
    cal = sub.add_parser("calibrate", help="run one benchmark K times and check that its "
                                           f"{convert_unit(CONFIDENCE, 'fraction', '%'):g}%% intervals hold")
    cal.add_argument("algorithms", nargs="*",
                     help="names, as for bench (every operation of each is measured)")
    cal.add_argument("--repeats", default=6,
                     type=_checked(inputs.count, "--repeats", MIN_RUNS, inputs.MAX_REPEATS),
                     help="separate runs of the benchmark (default %(default)s)")
    cal.add_argument("--runs", nargs="+", metavar="RUN", help="check these runs instead of making new ones")
    cal.add_argument("--profile", choices=list(PROFILES), default="default",
                     help="the measurement settings repeated: bench's defaults, or the notebooks' quick "
                          "profile (" + ", ".join(f"{k} {v}" for k, v in PROFILES["quick"].items()) + "); "
                          "--budget, --rounds and --target-rel-ci override it")
    cal.add_argument("--load", choices=list(LOADS), default="none",
                     help="a standard background load started before the first run and stopped after the "
                          "last: " + "; ".join(f"{k}: {v}" for k, v in LOADS.items()))
    cal.add_argument("--programs",
                     help="calibrate notebook 08's programs instead of pqlab's harness: a comma-"
                          "separated list of native/impls programs (e.g. rust,openssl,go)")
    cal.add_argument("--screen", metavar="BLOCKS",
                     type=_checked(inputs.count, "--screen", MIN_BLOCKS, inputs.MAX_SCREEN_BLOCKS),
                     help="calibrate the timing-leakage screen instead: its false-positive rate over "
                          "--repeats screens of BLOCKS blocks of one class labelled twice (notebook 09's "
                          "experiment)")
    cal.add_argument("--budget", type=_checked(inputs.positive_number, "the value"),
                     help="as for bench (default: the profile's)")
    cal.add_argument("--target-rel-ci", type=_checked(inputs.positive_number, "the value", zero=True),
                     help="as for bench (default bench's)")
    _round_options(cal, profiled=True)
    cal.add_argument("--quiet-only", action="store_true",
                     help="as for bench: refuse to start on a busy machine")
    cal.add_argument("--folder", help="results folder for the runs (default data/results)")
    cal.add_argument("--out", help="also write the per-measurement and per-ratio table to this CSV file (as "
                                   "for bench)")
    cal.add_argument("--force", action="store_true", help="let --out replace an existing file")
    cal.set_defaults(func=_cmd_calibrate)
    m = sub.add_parser("machine",
                       help="the cycle counters here (core cycles, TSC), whether to trust them, and "
                            "whether the machine is quiet right now")
    m.set_defaults(func=_cmd_machine)
    pp = sub.add_parser("paper", help="typeset paper/pqlab.tex from one profile's exports (make paper)")
    pp.add_argument("--profile", default=os.environ.get("PQLAB_PROFILE") or "full",
                    help="whose exports: full (figures/, data/tables/) or quick (build/quick/)")
    pp.add_argument("--output", help="the folder that holds the exports (default: the repository)")
    pp.add_argument("--out", help="where the PDF and its log go (default build/paper)")
    pp.add_argument("--twocolumn", action="store_true", help="typeset it in two columns")
    pp.set_defaults(func=_cmd_paper)

    rp = add_arguments(sub.add_parser("report",
                                      help="render a profile's executed notebooks and exports as static "
                                           "HTML pages: build/PROFILE/report/index.html (make report)"))
    rp.set_defaults(func=_cmd_report)
    rr = rerun_arguments(sub.add_parser(
        "rerun", help="re-run the notebook behind an exported number, figure or table as make reproduce "
                      "does, into build/rerun/PROFILE, and say whether each number lies inside its old "
                      "interval"))
    rr.set_defaults(func=_cmd_rerun)
    ci = sub.add_parser("cite", help="print CITATION.cff with the commit of this checkout")
    ci.set_defaults(func=_cmd_cite)
    la = sub.add_parser("lab", help="start JupyterLab on the checkout (or --dir) and say where it listens "
                                    "(make lab)")
    la.add_argument("--ip", default="127.0.0.1")
    la.add_argument("--port", type=_checked(inputs.count, "--port", 1, 65535), default=8888)
    la.add_argument("--dir", default="", help="the folder to open (make lab LAB_DIR=...; default: the "
                                              "checkout, with my-notebooks/ for your own notebooks)")
    la.set_defaults(func=_cmd_lab)
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    _say(f"warning: {message}", file=sys.stderr)


def main(argv=None) -> int:

    args = parser().parse_args(argv)
    previous = {s: signal.signal(s, _raise_interrupted) for s in SIGNALS}
    try:

        check_environment()  # PQLAB_OUTPUT, PQLAB_PROFILE: one line, before anything runs
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args)
    except KeyboardInterrupt as exc:  # a run's says what it kept and where
        exc = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
        _say(f"interrupted by {exc}", file=sys.stderr)
        return 128 + exc.signum
    except (KeyError, ValueError, FileNotFoundError, RuntimeError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        _say(f"error: {msg}", file=sys.stderr)
        return 2
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
