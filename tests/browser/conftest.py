"""Fixtures of the browser tests: the built site served on 127.0.0.1, and Debian's Chromium driven by Playwright.

Run with ``make browser-test`` after ``make html`` (or ``make book``).  The browser is the system
``chromium`` (``apt-get install chromium``): Playwright's own browser download is never used.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
#: The sub-path the relocatable-site test serves the book under (as GitHub Pages serves a fork).
PREFIX = "/ace-book/"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps",
]  # fmt: skip


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    prefix = "/"

    def translate_path(self, path: str) -> str:
        if not path.startswith(self.prefix):
            return str(Path(self.directory) / "__outside_the_prefix__")  # a 404
        return super().translate_path("/" + path[len(self.prefix) :])

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


def _serve(prefix: str) -> Iterator[str]:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `make html` (or `make book`) first")
    handler = type("Handler", (_QuietHandler,), {"prefix": prefix})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """Base URL of the built site served at the root of a local server."""
    yield from _serve("/")


@pytest.fixture(scope="session")
def prefixed_site_url() -> Iterator[str]:
    """Base URL of the same site served under :data:`PREFIX` only."""
    yield from _serve(PREFIX)


def _chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no chromium on PATH: `apt-get install chromium` (or set CHROMIUM=/path/to/chromium)")
    return path


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Folder for full-page screenshots (kept by CI as its output)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
