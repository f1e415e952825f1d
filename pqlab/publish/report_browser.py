"""The report's browser check (:func:`check_pages`, re-exported by :mod:`pqlab.publish.report`): every page
of a report opened in Debian's chromium through Playwright (``executable_path``; Playwright never downloads a
browser here): each page loads, every ``<img>`` is decoded (``naturalWidth > 0``), no table is wider than its
column, no error output, no traceback, no script, no request leaves the folder, every relative link resolves
inside it.
"""
from __future__ import annotations

import html as _html
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pqlab.core.errors import shell_command
from pqlab.core.schema import convert_unit
from pqlab.publish.report_notebooks import ReportError

#: the Debian package :func:`pqlab.app.provision.browser` installs, and the names its binary goes by
CHROMIUM_PACKAGE = "chromium"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
#: the page the check opens first
INDEX = "index.html"
#: text that marks a failed cell on a page: a Python traceback, papermill's banner above a failed notebook
ERROR_TEXT = ("Traceback (most recent call last)", "An Exception was encountered at")

def find_chromium() -> str | None:
    """The chromium binary to drive: PQLAB_CHROMIUM when set (None when it is not executable), else
    Debian's."""
    named = os.environ.get("PQLAB_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def browser_problem() -> str:
    """Why the report cannot be checked in a browser here ("" when it can)."""
    if find_chromium() is None:
        named = os.environ.get("PQLAB_CHROMIUM")
        return (f"PQLAB_CHROMIUM={named} is not an executable file" if named
                else f"chromium is not installed (Debian's package {CHROMIUM_PACKAGE})")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("Playwright is not installed in this environment (make setup installs it from "
                "requirements.lock)")
    return ""


_FACTS = """() => {
  const images = Array.from(document.images);
  const ok = i => i.complete && i.naturalWidth > 0;
  return {
    images: images.length,
    loaded: images.filter(ok).length,
    broken: images.filter(i => !ok(i)).map(i => (i.getAttribute('src') || '').slice(0, 80)),
    errors: document.querySelectorAll('[data-pqlab-error]').length,
    scripts: document.querySelectorAll('script').length,
    text: document.body ? document.body.innerText : '',
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
    wide: Array.from(document.querySelectorAll('table')).map(t => {
      const col = (t.parentElement && t.parentElement.closest('.jp-Cell')) || document.body;
      const r = t.getBoundingClientRect(), c = col.getBoundingClientRect(), s = getComputedStyle(col);
      const right = c.right - parseFloat(s.paddingRight), width = c.width - parseFloat(s.paddingLeft)
        - parseFloat(s.paddingRight);
      return r.width > 0 && (r.width > width + 1 || r.right > right + 1) ? Math.round(r.width) : 0;
    }).filter(w => w > 0),
    anchors: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
  };
}"""


@dataclass
class BrowserCheck:
    """What :func:`check_pages` saw: one dict per page, and one line per problem."""

    pages: list[dict]
    problems: list[str]
    chromium: str = ""

    @property
    def images(self) -> int:
        return sum(p["images"] for p in self.pages)

    @property
    def loaded(self) -> int:
        return sum(p["loaded"] for p in self.pages)

    def summary(self) -> str:
        links = sum(p["links"] for p in self.pages)
        errors = sum(p["errors"] for p in self.pages)
        text = (f"browser check ({self.chromium}): {len(self.pages)} pages loaded, {self.loaded} of "
                f"{self.images} images shown, {links} relative links resolve, {errors} error outputs")
        return "\n".join([text, *(f"problem: {p}" for p in self.problems)])


def _link_problem(page: Path, href: str, root: Path, anchors: dict[Path, set[str]]) -> str:
    """Why a link of `page` does not resolve inside `root` ("" when it does; an http(s) or mailto link is
    fine)."""
    parts = urlsplit(href)
    if parts.scheme in ("http", "https", "mailto"):
        return ""
    if parts.scheme or href.startswith("/"):
        why = f" (it has the scheme {parts.scheme}: text from data read as a link?)" if parts.scheme else ""
        return f"{page.name}: link {href!r} is not relative{why}"
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if root != target and root not in target.parents:
        return f"{page.name}: link {href!r} leaves the report folder"
    if not target.is_file():
        return f"{page.name}: link {href!r} names no file"
    if parts.fragment and target.suffix == ".html":
        if target not in anchors:  # a page not opened yet: its ids from its source
            anchors[target] = {_html.unescape(i)
                               for i in re.findall(r'\sid="([^"]+)"', target.read_text(encoding="utf-8"))}
        # browsers try the raw id, then decoded
        if not {parts.fragment, unquote(parts.fragment)} & anchors[target]:
            return f"{page.name}: link {href!r} names no anchor of {target.name}"
    return ""


def check_pages(report: Path | str, chromium: str | None = None, timeout_s: float = 60) -> BrowserCheck:
    """Open the index and every page of `report` in chromium (Playwright, ``executable_path``; nothing is
    downloaded): each page loads, every ``<img>`` is shown (naturalWidth > 0), no error output, no traceback,
    no script and no dialog, no request outside the folder, every relative link resolves inside it."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    problem = browser_problem() if chromium is None else ""
    if problem:
        raise ReportError(f"{problem}: run {shell_command('pqlab.app.provision browser')}")
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    root = Path(report).resolve()
    if not (root / INDEX).is_file():
        raise ReportError(f"{root} has no {INDEX}: build the report first (make report)")
    files = [root / INDEX, *sorted(p for p in root.glob("*.html") if p.name != INDEX)]
    chromium = chromium or find_chromium()
    result = BrowserCheck(pages=[], problems=[], chromium=str(chromium))
    outside: list[str] = []
    events: list[str] = []
    anchors: dict[Path, set[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--disable-dev-shm-usage"])
        try:
            context = browser.new_context()
            context.route(lambda url: not url.startswith(("file:", "data:")),
                          lambda route: (outside.append(route.request.url), route.abort()))
            page = context.new_page()
            page.on("dialog", lambda d: (events.append(f"a dialog ({d.message[:60]!r})"), d.dismiss()))
            page.on("pageerror", lambda exc: events.append(f"a script error ({str(exc)[:80]})"))
            page.on("console",
                    lambda m: m.type == "error" and events.append(f"a console error ({m.text[:120]})"))
            for path in files:
                outside.clear()
                events.clear()
                try:
                    page.goto(path.as_uri(), wait_until="load", timeout=convert_unit(timeout_s, "s", "ms"))
                    facts = page.evaluate(_FACTS)
                except PlaywrightError as exc:
                    result.problems.append(f"{path.name} did not load: {str(exc).splitlines()[0]}")
                    continue
                anchors[path] = set(facts["anchors"])
                relative = [h for h in facts["links"]
                            if urlsplit(h).scheme not in ("http", "https", "mailto")]
                found = [f"{path.name}: image not shown: {src!r}" for src in facts["broken"]]
                found += [f"{path.name}: {facts['errors']} error output(s)"] if facts["errors"] else []
                found += ([f"{path.name}: {len(facts['wide'])} table(s) wider than their column "
                           f"({', '.join(map(str, facts['wide']))} px)"] if facts["wide"] else [])
                found += [f"{path.name}: shows {t!r}" for t in ERROR_TEXT if t in facts["text"]]
                found += [f"{path.name}: {facts['scripts']} script element(s)"] if facts["scripts"] else []
                found += [f"{path.name}: requested {u[:100]!r} outside the folder" for u in outside]
                found += [f"{path.name}: {e}" for e in events]
                found += [p for h in relative if (p := _link_problem(path, h, root, anchors))]
                result.problems += found
                result.pages.append({"page": path.name, "images": facts["images"], "loaded": facts["loaded"],
                                     "errors": facts["errors"], "links": len(relative)})
        finally:
            browser.close()
    return result


def browser_version(chromium: str | None = None) -> str:
    """The version chromium reports when Playwright launches it (a smoke test of the pair)."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium or find_chromium(),
                                     args=["--disable-dev-shm-usage"])
        try:
            return browser.version
        finally:
            browser.close()

