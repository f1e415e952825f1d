"""What a new user does in JupyterLab, in a real browser: `make lab` (``python -m pqlab lab``), open notebook
01, Run All Cells from the Run menu, save with Ctrl+S, and `git status` is as it was: the page keeps its
outputs, git's copy does not (``pqlab lab`` saves the study notebooks as committed, and git's nbstripout
filter, ``.gitattributes``, keeps outputs out of what git sees).

Chromium is Debian's, driven by Playwright through ``executable_path`` (no browser is ever downloaded).
Without chromium or Playwright the test skips, unless PQLAB_REQUIRE_BROWSER=1 (CI): then it fails with one
line naming ``python -m pqlab.app.provision browser``.  Runs and exports go to tmp_path (PQLAB_OUTPUT), Lab's
settings and workspaces too (a new user's defaults), and the notebook's bytes and times are put back
afterwards, unless another process wrote the file meanwhile.  A checkout whose notebook 01 has changes of its
own is never touched: the test skips.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import require_browser

from pqlab.core import paths
from pqlab.publish import report

NOTEBOOK = "notebooks/01_aes_rsa_sphincs.ipynb"
KERNEL = "pqlab"
KERNEL_LABEL = "Python (pqlab)"
START_TIMEOUT_S = 90  # until `pqlab lab` says where it listens
OPEN_TIMEOUT_S = 120  # until the notebook is shown and its kernel idle
RUN_TIMEOUT_S = 8 * 60  # Run All Cells on a slow machine (about half a minute here)
SAVE_TIMEOUT_S = 60
LISTENING = re.compile(r"JupyterLab is listening on (http://\S+/lab\?token=(\w+))")
STDERR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'

#: what the page shows, read in one go: every code cell's prompt, the kernel in the status bar, the
#: notebook's tab
_STATE = """(name) => {
  const prompts = Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell'))
    .map(c => { const p = c.querySelector('.jp-InputPrompt'); return p ? p.textContent.trim() : ''; });
  const status = Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))\
.map(e => e.textContent.trim());
  const tab = Array.from(document.querySelectorAll('.lm-TabBar-tab'))
    .find(t => t.textContent.trim() === name);
  const outputs = document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-OutputArea-output').length;
  return {prompts, status, outputs, tab: tab ? {dirty: tab.classList.contains('jp-mod-dirty')} : null,
          dialogs: Array.from(document.querySelectorAll('.jp-Dialog'))\
.map(d => d.textContent.trim().slice(0, 300))};
}"""

#: the text of every stderr output with the prompt of its cell (Lab renders an error output as stderr too)
_STDERR = """(selector) => \
Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell'))
  .flatMap(c => Array.from(c.querySelectorAll(selector)).map(o => {
     const p = c.querySelector('.jp-InputPrompt');
     return (p ? p.textContent.trim() : '?') + ' ' + o.textContent.trim();
  }))"""
TRACEBACK = "Traceback (most recent call last)"  # IPython's header of an exception's output


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(paths.ROOT), *args], capture_output=True, text=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base: str, token: str, path: str, method: str = "GET"):
    request = urllib.request.Request(f"{base}{path}", method=method,
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


def lab_environment(tmp_path: Path) -> dict:
    """The test's environment for `pqlab lab`: runs and exports in tmp_path, no profile (an interactive run,
    as a user's), Lab's settings, workspaces and runtime files in tmp_path (a new user's defaults, ~/.jupyter
    untouched)."""
    env = dict(os.environ, PQLAB_OUTPUT=str(tmp_path / "output"), PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1",
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "lab" / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab" / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "lab" / "runtime"))
    env.pop("PQLAB_PROFILE", None)
    return env


@contextlib.contextmanager
def running_lab(tmp_path: Path):
    """`python -m pqlab lab` on a free port; yields (base URL, token) once it says where it listens.  At the
    end the server is asked to shut down (which shuts down its kernels); whatever it started and is still
    running after that is terminated by its process id."""
    import psutil  # ipykernel's dependency: there is no kernel without it

    port = free_port()
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "pqlab", "lab", "--ip", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=log, text=True, env=lab_environment(tmp_path),
                            cwd=tmp_path, start_new_session=True)
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    said, token, base = [], "", ""
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not token:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"`pqlab lab` did not say where it listens within {START_TIMEOUT_S} s (exit "
                            f"{proc.poll()}); it said {''.join(said)!r}; its log: "
                            f"{(tmp_path / 'lab.log').read_text()[-2000:]}", pytrace=False)
            said.append(line)
            found = LISTENING.search(line)
            if found:
                url, token = found.groups()
                base = url.split("/lab?")[0]
        assert base == f"http://127.0.0.1:{port}", said
        yield base, token
    finally:
        started = []
        with contextlib.suppress(psutil.Error):
            started = psutil.Process(proc.pid).children(recursive=True)
        if token and proc.poll() is None:
            with contextlib.suppress(OSError):
                api(base, token, "/api/shutdown", method="POST")
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # what Ctrl-C does: pqlab lab terminates JupyterLab
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        left = [p for p in started if p.is_running()]
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        _, alive = psutil.wait_procs(left, timeout=10)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        log.close()


def wait_until(what: str, done, timeout_s: float, describe, interval_s: float = 0.5):
    """Poll `done()` until it returns something true; fail after `timeout_s` with `describe()` (what the page
    shows)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = done()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f} s; {describe()}", pytrace=False)
        time.sleep(interval_s)


def kernel_state(base: str, token: str) -> tuple[str, str]:
    """(kernel name, execution state) of the notebook's session, from the server ('' when there is none
    yet)."""
    for session in api(base, token, "/api/sessions"):
        if session.get("path") == NOTEBOOK:
            return session["kernel"]["name"], session["kernel"]["execution_state"]
    return "", ""


def run_all_and_save(page, base: str, token: str, code_cells: int, path: Path) -> bytes:
    """Open the notebook, wait for its kernel, Run All Cells from the Run menu, check every cell ran without
    an error, save with Ctrl+S and wait until Lab shows the document saved; returns the bytes Lab saved."""
    name = path.name

    def state() -> dict:
        return page.evaluate(_STATE, name)

    def describe() -> str:
        try:
            shown = state()
            stderr = [t[:2000] for t in page.evaluate(_STDERR, STDERR_OUTPUT)
                      if re.search("Error|Exception", t)]
        except Exception as exc:  # the page itself is gone: say so
            return f"the page cannot be read ({str(exc).splitlines()[0]})"
        return (f"prompts {shown['prompts']}, status bar {[s for s in shown['status'] if s]}, tab "
                f"{shown['tab']}, dialogs {shown['dialogs']}, kernel {kernel_state(base, token)}, errors "
                f"shown {stderr}")

    def kernel_idle() -> bool:
        shown = state()
        return (kernel_state(base, token) == (KERNEL, "idle") and f"{KERNEL_LABEL} | Idle" in shown["status"]
                and not any("[*]" in p for p in shown["prompts"]))

    page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}", wait_until="domcontentloaded",
              timeout=OPEN_TIMEOUT_S * 1000)
    wait_until("the notebook is shown with all its code cells", lambda: len(state()["prompts"]) == code_cells,
               OPEN_TIMEOUT_S, describe)
    wait_until(f"the kernel {KERNEL_LABEL} is idle", kernel_idle, OPEN_TIMEOUT_S, describe)

    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel",
                 has_text=re.compile(r"^Run All Cells$")).click()
    started = time.monotonic()
    wait_until("Run All Cells started (a [*] prompt or a number)",
               lambda: any(p != "[ ]:" for p in state()["prompts"]), 30, describe, interval_s=0.1)
    wait_until("every code cell ran and the kernel is idle", kernel_idle, RUN_TIMEOUT_S, describe,
               interval_s=1)
    ran_s = time.monotonic() - started
    prompts = state()["prompts"]
    # Run All stops at a cell that raises: the cells after it keep an empty prompt
    assert all(re.fullmatch(r"\[\d+\]:", p) for p in prompts), f"not every code cell ran: {describe()}"
    tracebacks = [t[:2000] for t in page.evaluate(_STDERR, STDERR_OUTPUT) if TRACEBACK in t]
    assert not tracebacks, f"a cell shows an error: {tracebacks}"
    shown = state()["outputs"]
    assert shown, f"Run All Cells showed no output; {describe()}"
    print(f"Run All Cells: {ran_s:.0f} s, {shown} outputs shown")

    before = path.stat().st_mtime_ns
    page.keyboard.press("Escape")  # command mode, as after a click beside a cell
    page.keyboard.press("Control+S")

    def saved() -> bool:
        shown = state()
        # never overwrite another writer's file
        if any(d.startswith("File Changed") for d in shown["dialogs"]):
            pytest.fail(f"{NOTEBOOK} changed on disk while the test ran (another process wrote it): Lab asks "
                        f"whether to overwrite it, and the test does not; {describe()}", pytrace=False)
        return shown["tab"] == {"dirty": False} and path.stat().st_mtime_ns != before

    wait_until("Lab shows the notebook saved (its tab not dirty)", saved, SAVE_TIMEOUT_S, describe,
               interval_s=0.2)
    assert state()["outputs"] == shown, f"the page lost outputs when the notebook was saved; {describe()}"
    return path.read_bytes()


def put_back(path: Path, original: bytes, stat: os.stat_result, saved: bytes | None) -> str:
    """Put the notebook's bytes and times back when what is on disk is what Lab saved; leave a file someone
    else wrote meanwhile as it is, and say so ("" when all is well)."""
    now = path.read_bytes() if path.exists() else None
    if now == original:
        if saved is not None:  # saved as committed (JupyterLab's pre-save hook): only its time changed
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return ""
    if saved is None or now != saved:
        return f"{NOTEBOOK} was changed by another process while the test ran: left as it is"
    path.write_bytes(original)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # make sees the notebook as it was
    return ""


@contextlib.contextmanager
def kept(path: Path):
    """Lab's checkpoint of the notebook: put back as it was afterwards (removed, with its folder, when it was
    not there)."""
    was = path.read_bytes() if path.exists() else None
    folder_existed = path.parent.exists()
    try:
        yield
    finally:
        if was is None:
            path.unlink(missing_ok=True)
        elif path.read_bytes() != was:
            path.write_bytes(was)
        if not folder_existed and path.parent.is_dir() and not any(path.parent.iterdir()):
            path.parent.rmdir()


@pytest.mark.slow
def test_running_and_saving_notebook_01_in_jupyterlab_leaves_git_status_clean(tmp_path, monkeypatch):
    require_browser()
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode:
        pytest.skip("not a git checkout (or no git): nothing to keep clean")
    notebook = paths.ROOT / NOTEBOOK
    committed = subprocess.run(["git", "-C", str(paths.ROOT), "show", f"HEAD:{NOTEBOOK}"],
                               capture_output=True).stdout
    if git("diff", "--quiet", "HEAD", "--", NOTEBOOK).returncode and notebook.read_bytes() != committed:
        pytest.skip(f"{NOTEBOOK} has changes of yours: the test runs and saves it only in a clean checkout")
    code_cells = sum(c["cell_type"] == "code" for c in json.loads(notebook.read_text())["cells"])
    checkpoint = notebook.parent / ".ipynb_checkpoints" / f"{notebook.stem}-checkpoint.ipynb"
    mine = paths.ROOT / "my-notebooks"
    had_mine = mine.exists()
    status = git("status", "--porcelain")
    assert status.returncode == 0, status.stderr

    from playwright.sync_api import sync_playwright

    original, original_stat, saved, left = notebook.read_bytes(), notebook.stat(), None, ""
    try:
        with kept(checkpoint):
            with running_lab(tmp_path) as (base, token), sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=report.find_chromium(),
                                             args=["--disable-dev-shm-usage"])
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    page.on("pageerror", lambda exc: print(f"script error in Lab: {str(exc)[:200]}"))
                    saved = run_all_and_save(page, base, token, code_cells, notebook)
                finally:
                    browser.close()
            # what Lab saved, to look at when an assertion fails
            (tmp_path / notebook.name).write_bytes(saved)
            # what git sees, with the saved notebook on disk and the server stopped
            assert notebook.read_bytes() == saved, f"{NOTEBOOK} changed on disk after Lab saved it"
            cells = json.loads(saved)["cells"]
            assert [c.get("id") for c in cells] == [c.get("id") for c in json.loads(original)["cells"]], \
                "the saved notebook's cells are not the notebook's"
            errors = [f"{o['ename']}: {o['evalue']}" for c in cells for o in c.get("outputs", [])
                      if o["output_type"] == "error"]
            assert not errors, errors
            print(f"saved: {sum(bool(c.get('outputs')) for c in cells)} cells with outputs on disk")
            # the stored (filtered) notebook against the index, not the textconv view, which strips both sides
            stored_diff = git("diff", "--no-textconv", "--", NOTEBOOK).stdout[:3000]
            after = git("status", "--porcelain")
            changed = sorted(set(after.stdout.splitlines()) ^ set(status.stdout.splitlines()))
            assert after.stdout == status.stdout, f"git status changed: {changed}; git diff: {stored_diff}"
            diff = git("diff", "--quiet", "--", NOTEBOOK)
            assert diff.returncode == 0, f"git sees {NOTEBOOK} changed: {stored_diff}"
    finally:
        left = put_back(notebook, original, original_stat, saved)
        if left:
            print(left)
        if not had_mine and mine.is_dir() and not any(mine.iterdir()):
            mine.rmdir()  # made by pqlab lab for a user's own notebooks; this test had none
    assert not left, left
