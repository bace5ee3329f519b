"""A real browser for page tests: Playwright for Python driving the system's Chromium.

Shared by the static pages' tests and the console's (``lagless ui``). ``playwright install``
cannot download browsers here, so it launches Debian's ``chromium`` (``make test`` installs it
where it can: scripts/install_tools.sh). Without Chromium or Playwright the tests skip and say
why; they never pass silently.

Use the ``browser`` fixture (tests/integration/conftest.py) and :func:`watched`::

    def test_page(browser: Browser) -> None:
        with watched(browser, "file:///.../report.html") as w:
            w.page.locator("h1").inner_text()
            ...
        assert w.problems() == []      # console errors, page errors, dialogs, requests elsewhere

:func:`box` and :func:`intersects` compare element boxes (page coordinates).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM_NAMES = ("chromium", "chromium-browser")
VIEWPORT = {"width": 1400, "height": 1000}
Box = dict[str, float]  # left, top, right, bottom


def chromium_path() -> str | None:
    """The system's Chromium, or None."""
    return next((p for name in CHROMIUM_NAMES if (p := shutil.which(name))), None)


@contextmanager
def launched() -> Iterator[Browser]:
    """Chromium driven by Playwright; skips the test (with the reason) where either is missing."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("no chromium on PATH (scripts/install_tools.sh installs it as root on Debian)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """A page and what went wrong on it: console errors, uncaught errors, dialogs (an
    ``alert`` that ran), requests to anything but ``allowed`` URL prefixes."""

    page: Page
    allowed: tuple[str, ...]
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        outside = [u for u in self.requests if not u.startswith(self.allowed)]
        return (
            [f"console/page error: {e}" for e in self.errors]
            + [f"dialog: {d}" for d in self.dialogs]
            + [f"request elsewhere: {u}" for u in outside]
        )


@contextmanager
def watched(
    browser: Browser,
    url: str,
    viewport: dict[str, int] | None = None,
    allowed: tuple[str, ...] | None = None,
) -> Iterator[Watched]:
    """Open ``url`` in a fresh page, recording errors, dialogs and requests; closes it after.
    ``allowed``: URL prefixes the page may request (default: ``url`` itself only)."""
    page = browser.new_page(viewport=viewport or VIEWPORT)  # type: ignore[arg-type]
    w = Watched(page, allowed if allowed is not None else (url,))
    page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(str(e)))

    def dialog(d: Any) -> None:
        w.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.on("request", lambda r: w.requests.append(r.url))
    try:
        page.goto(url)
        page.wait_for_load_state("load")
        yield w
    finally:
        page.close()


def box(page: Page, selector: str) -> Box:
    """The first match's box in page coordinates."""
    found: Box = page.eval_on_selector(
        selector,
        "e => { const r = e.getBoundingClientRect(); return {left: r.left + scrollX, "
        "top: r.top + scrollY, right: r.right + scrollX, bottom: r.bottom + scrollY}; }",
    )
    return found


def intersects(a: Box, b: Box) -> bool:
    """Whether two boxes share any area (touching edges do not)."""
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )
