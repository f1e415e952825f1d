"""`python -m pqlab list | bench | compare | fidelity | paper | lab`: measuring, building the paper and starting
JupyterLab without a notebook."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _cmd_list(args) -> int:
    from .algorithms import catalogue

    df = catalogue()
    if args.kind:
        df = df[df["kind"] == args.kind]
    if args.backend:
        df = df[df["backend"] == args.backend]
    cols = ["algorithm", "kind", "backend", "family", "nist_level", "operations"]
    print(df[cols].to_string(index=False, na_rep=""))
    print(f"\n{len(df)} algorithm/backend pairs", file=sys.stderr)
    return 0


def _cmd_bench(args) -> int:
    from .benchmark import bench

    run = bench(args.algorithms, args.operations, args.message_bytes or [100], budget_s=args.budget,
                min_samples=args.min_samples, study=args.study, folder=args.folder, run_id=args.run_id,
                progress=not args.no_progress)
    print(run.summary().to_string())
    print(f"\nsaved run {run.run_id}: {run.path}", file=sys.stderr)
    if args.out:
        from pathlib import Path

        from .files import atomic_write

        atomic_write(Path(args.out), lambda tmp: run.measurements.to_csv(tmp, index=False))
        print(f"measurements also written to {args.out}", file=sys.stderr)
    return 0 if run.measurements["verified"].fillna(False).astype(bool).all() else 1


def _cmd_compare(args) -> int:
    import pandas as pd

    from .formatting import fmt_factor_ci, fmt_time_ns
    from .results import compare_runs

    df = compare_runs(args.a, args.b, alpha=args.alpha, min_factor=args.min_factor,
                      allow_different=args.allow_different)
    for difference in df.attrs.get("differences", []):
        print(f"note: the runs differ in {difference}", file=sys.stderr)
    if df.empty:
        print("the two runs have no measurement in common", file=sys.stderr)
        return 1
    shown = pd.DataFrame({
        "algorithm": df["algorithm"], "backend": df["backend"], "operation": df["operation"],
        "message_bytes": df["message_bytes"], "statistic": df["statistic"],
        "a": df["a_ns"].map(fmt_time_ns), "b": df["b_ns"].map(fmt_time_ns),
        "b/a [95% CI]": [fmt_factor_ci(f, lo, hi, 3) for f, lo, hi in
                         zip(df["factor_b_over_a"], df["factor_ci_low"], df["factor_ci_high"])],
        "p": df["p_value"].map(lambda p: f"{p:.2g}"), "verdict": df["verdict"]})
    print(shown.to_string(index=False, na_rep=""))
    return 0


def _cmd_fidelity(args) -> int:
    from .fidelity import DEFAULT_OPERATIONS, format_fidelity, measure_fidelity, measure_noop

    def say(what: str) -> None:
        print(f"measuring {what} ...", file=sys.stderr)

    noop = measure_noop(min(0.2, args.budget))
    df = measure_fidelity(DEFAULT_OPERATIONS, budget_s=args.budget, blocks=args.blocks, progress=say)
    print(format_fidelity(df, noop))
    return 0


def _cmd_paper(args) -> int:
    from .paper import build

    result = build(args.profile, output=Path(args.output) if args.output else None,
                   out=Path(args.out) if args.out else None, twocolumn=args.twocolumn)
    for problem in result.problems:
        print(f"paper: {problem}", file=sys.stderr)
    if result.problems:
        print(f"error: {len(result.problems)} problem(s) in {result.log}", file=sys.stderr)
        return 1
    print(f"{result.pdf}: no LaTeX error, no Overfull \\hbox over 1 pt (log: {result.log})")
    return 0


def _cmd_cite(args) -> int:
    from .paper import citation

    print(citation(), end="")
    return 0


def lab_command(ip: str, port: int, token: str, euid: int) -> list[str]:
    """The JupyterLab command of `make lab`: notebooks/, no browser, a fixed port (an error when taken, so the
    address printed is the one), and --allow-root when run as root (common in containers)."""
    from .paths import NOTEBOOKS

    argv = [str(Path(sys.executable).with_name("jupyter")), "lab", f"--notebook-dir={NOTEBOOKS}", "--no-browser",
            f"--ip={ip}", f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            "--log-level=WARN", "--LabApp.log_level=WARN"]
    return argv + (["--allow-root"] if euid == 0 else [])


def _cmd_lab(args) -> int:
    import secrets
    import socket
    import subprocess
    import time

    token = secrets.token_hex(16)
    proc = subprocess.Popen(lab_command(args.ip, args.port, token, os.geteuid()))
    try:
        while proc.poll() is None:
            try:
                socket.create_connection((args.ip, args.port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.3)
        else:
            print(f"error: JupyterLab stopped (exit {proc.returncode}) before listening on {args.ip}:{args.port}; "
                  "if the port is taken, choose another: make lab LAB_PORT=8890", file=sys.stderr)
            return 1
        print(f"JupyterLab is listening on http://{args.ip}:{args.port}/lab?token={token} "
              "(notebooks/, kernel pqlab; Ctrl-C stops it)", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pqlab", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="print algorithms with backend, family, NIST level and operations")
    ls.add_argument("--kind", choices=["sig", "kem", "pke", "cipher"])
    ls.add_argument("--backend")
    ls.set_defaults(func=_cmd_list)
    b = sub.add_parser("bench", help="measure algorithms and write a results file")
    b.add_argument("algorithms", nargs="+", help="names; NAME@backend picks a backend (e.g. ML-DSA-44@cryptography)")
    b.add_argument("--operations", nargs="+", help="subset of keygen sign verify encaps decaps encrypt decrypt")
    b.add_argument("--message-bytes", type=int, action="append", help="message size (repeat for several)")
    b.add_argument("--budget", type=float, default=1.0, help="seconds of sampling per operation (default 1)")
    b.add_argument("--min-samples", type=int, default=5)
    b.add_argument("--study", default="", help="label stored with every row")
    b.add_argument("--out", help="also write the measurements table to this CSV file")
    b.add_argument("--folder", help="results folder (default data/results)")
    b.add_argument("--run-id", help=argparse.SUPPRESS)
    b.add_argument("--no-progress", action="store_true")
    b.set_defaults(func=_cmd_bench)
    c = sub.add_parser("compare", help="compare two runs: factor and significance per measurement")
    c.add_argument("a", help="run id or path of the baseline run")
    c.add_argument("b", help="run id or path of the other run")
    c.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01)")
    c.add_argument("--min-factor", type=float, default=1.05,
                   help="smallest factor called slower or faster (default 1.05)")
    c.add_argument("--allow-different", action="store_true",
                   help="compare runs from different machines, parameters or liboqs builds (they are named)")
    c.set_defaults(func=_cmd_compare)
    f = sub.add_parser("fidelity", help="pqlab's medians against a bare liboqs-python loop (harness check)")
    f.add_argument("--budget", type=float, default=2.0, help="seconds of sampling per operation and arm (default 2)")
    f.add_argument("--blocks", type=int, default=20, help="alternating blocks the budget is split into")
    f.set_defaults(func=_cmd_fidelity)
    pp = sub.add_parser("paper", help="typeset paper/pqlab.tex from one profile's exports (make paper)")
    pp.add_argument("--profile", default=os.environ.get("PQLAB_PROFILE") or "full",
                    help="whose exports: full (figures/, data/tables/) or quick (build/quick/)")
    pp.add_argument("--output", help="the folder that holds the exports (default: the repository)")
    pp.add_argument("--out", help="where the PDF and its log go (default build/paper)")
    pp.add_argument("--twocolumn", action="store_true", help="typeset it in two columns")
    pp.set_defaults(func=_cmd_paper)
    ci = sub.add_parser("cite", help="print CITATION.cff with the commit of this checkout")
    ci.set_defaults(func=_cmd_cite)
    la = sub.add_parser("lab", help="start JupyterLab on notebooks/ and say where it listens (make lab)")
    la.add_argument("--ip", default="127.0.0.1")
    la.add_argument("--port", type=int, default=8888)
    la.set_defaults(func=_cmd_lab)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (KeyError, ValueError, FileNotFoundError, RuntimeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {msg}", file=sys.stderr)
        return 2
