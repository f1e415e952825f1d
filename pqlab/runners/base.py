"""What every runner shares: running its program and reading the one JSON document it prints."""
from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence


class RunnerError(RuntimeError):
    """A program pqlab runs could not run or failed; the message names the program and what it said."""


def call_json(cmd: Sequence, *, what: str, timeout_s: float, error: type[Exception] = RunnerError,
              env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run `cmd` (`what`: the program's name in messages) and return its process and the JSON document it printed
    on stdout (None when stdout is not one).  A timeout raises `error` naming the command; what the exit code
    means is the caller's (each program has its own)."""
    cmd = [str(c) for c in cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        raise error(f"{what} timed out after {timeout_s:.0f} s: {' '.join(cmd)}") from exc
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        document = None
    return proc, document if isinstance(document, dict) else None


def failure(proc: subprocess.CompletedProcess, document: dict | None = None, tail: int = 2000) -> str:
    """How a program ended and why, for an error message: "exit 3: <its error>" or "signal 9: <stderr's end>"."""
    status = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    why = (document or {}).get("error") or (proc.stderr or proc.stdout or "").strip()[-tail:] or "no output"
    return f"{status}: {why}"
