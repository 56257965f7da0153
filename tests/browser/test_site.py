"""The built book opened as a reader opens it: every page of the table of contents in a real browser.

Each page must load with no console error, no failed or off-host request, every image loaded,
every table an HTML ``<table>`` (no raw markdown table text), and (on the method page) typeset
math.  Search, the left navigation, both colour themes and a copy served under a sub-path are
checked too.  Full-page screenshots of every chapter go to ``_build/screenshots/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
LOCAL_HOSTS = {"127.0.0.1"}
#: A markdown table's separator cell (``|---|``, ``| :--: |``; Sphinx's smart quotes turn ``---`` into an
#: em dash) left as text: the table did not render.
RAW_TABLE = re.compile(r"\|\s*:?(?:-{3,}|[\u2014\u2013]+):?\s*\|")


def toc_pages() -> list[str]:
    """Site-relative HTML paths of every page in ``_toc.yml`` (root first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc.get("parts", []) for ch in part["chapters"]]
    return [f"{f}.html" for f in files]


PAGES = toc_pages()
CHAPTERS = [p for p in PAGES if p.startswith("notebooks/")]


@dataclass
class Visit:
    """What the browser saw while loading one page."""

    console_errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    off_host: list[str] = field(default_factory=list)


def open_page(browser, url: str, *, scheme: str = "light", width: int = 1280):
    """Open ``url`` in a fresh context ``width`` px wide (``scheme``: "light" | "dark"); returns (page, Visit)."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    if scheme == "dark":  # the theme's own switch, as a reader's click leaves it
        context.add_init_script("localStorage.setItem('theme', 'dark'); localStorage.setItem('mode', 'dark');")
    visit = Visit()

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
            r.continue_()
        else:
            visit.off_host.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and visit.console_errors.append(m.text))
    page.on("pageerror", lambda e: visit.console_errors.append(str(e)))
    page.on("requestfailed", lambda r: visit.failed.append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and visit.failed.append(f"{r.url} (HTTP {r.status})"))
    page.goto(url, wait_until="networkidle")
    return page, visit


def visible_text_outside_code(page) -> str:
    """The article's text without code blocks (where table syntax may legitimately appear)."""
    return page.evaluate(
        """() => { const main = document.querySelector('main') || document.body;
                   const copy = main.cloneNode(true);
                   copy.querySelectorAll('pre, code, .highlight').forEach(e => e.remove());
                   return copy.innerText; }"""
    )


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly(browser, site_url, screenshots, path):
    page, visit = open_page(browser, site_url + path)
    try:
        assert page.title(), f"{path}: no title"
        assert not visit.console_errors, f"{path}: console errors {visit.console_errors}"
        assert not visit.failed, f"{path}: failed requests {visit.failed}"
        assert not visit.off_host, f"{path}: requests leaving 127.0.0.1 {visit.off_host}"
        broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        assert not broken, f"{path}: images that did not load {broken}"
        raw = RAW_TABLE.findall(visible_text_outside_code(page))
        assert not raw, f"{path}: markdown table text left unrendered ({len(raw)} separator rows)"
        wide = page.evaluate(
            "Array.from(document.querySelectorAll('main pre')).filter(e => e.scrollWidth > e.clientWidth + 1).length"
        )
        assert not wide, f"{path}: {wide} code blocks do not fit the column (they scroll sideways)"
        if path in CHAPTERS:
            assert page.locator("main table").count() >= 1, f"{path}: a chapter page without an HTML table"
            page.screenshot(path=str(screenshots / f"{Path(path).stem}.png"), full_page=True)
    finally:
        page.context.close()


@pytest.mark.parametrize("path", CHAPTERS)
def test_notebook_download_link_serves_the_notebook(browser, site_url, path):
    import json

    page, _ = open_page(browser, site_url + path)
    try:
        links = page.eval_on_selector_all("a[href$='.ipynb']", "els => [...new Set(els.map(e => e.href))]")
        assert links, f"{path}: no download link for the notebook"
        for link in links:
            response = page.request.get(link)
            assert response.status == 200, f"{path}: {link} answers HTTP {response.status}"
            nb = json.loads(response.body())
            assert nb["cells"] and nb["nbformat"] == 4, f"{path}: {link} is not a notebook"
    finally:
        page.context.close()


def test_method_page_typesets_math(browser, site_url):
    page, visit = open_page(browser, site_url + "book/ace_method.html")
    try:
        page.wait_for_selector("mjx-container", timeout=20_000)
        assert page.locator("mjx-container").count() >= 5
        assert not page.locator("main").inner_text().count("\\mathrm"), "raw TeX left on the page"
        assert not visit.off_host
    finally:
        page.context.close()


@pytest.mark.parametrize("word", ["balanced", "grokking"])
def test_search_finds(browser, site_url, word):
    page, visit = open_page(browser, f"{site_url}search.html?q={word}")
    try:
        page.wait_for_selector("#search-results ul.search li", timeout=20_000)
        hits = page.locator("#search-results ul.search li").count()
        assert hits >= 1, f"search for {word!r} found nothing"
        assert not visit.console_errors and not visit.off_host
    finally:
        page.context.close()


def test_navigation_reaches_every_chapter(browser, site_url):
    page, _ = open_page(browser, site_url + PAGES[0])
    try:
        hrefs = page.eval_on_selector_all("nav.bd-docs-nav a", "els => els.map(e => e.href)")
        reached = {urlparse(h).path.lstrip("/") for h in hrefs}
        missing = [p for p in PAGES[1:] if p not in reached]
        assert not missing, f"left navigation does not link {missing}"
    finally:
        page.context.close()


def test_light_and_dark_themes_render(browser, site_url, screenshots):
    colours = {}
    for scheme in ("light", "dark"):
        page, visit = open_page(browser, site_url + CHAPTERS[0], scheme=scheme)
        try:
            theme = page.evaluate("document.documentElement.dataset.theme")
            assert theme == scheme, f"asked for the {scheme} theme, page shows {theme!r}"
            colours[scheme] = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert not visit.console_errors
            page.screenshot(path=str(screenshots / f"theme_{scheme}.png"))
        finally:
            page.context.close()
    assert colours["light"] != colours["dark"], f"both themes have background {colours['light']}"


def test_site_is_relocatable_under_a_sub_path(browser, prefixed_site_url):
    for path in (PAGES[0], CHAPTERS[-1], "search.html"):
        page, visit = open_page(browser, prefixed_site_url + path)
        try:
            assert not visit.failed, f"served under a prefix, {path} has failed requests {visit.failed}"
            assert page.locator("main").count() == 1
        finally:
            page.context.close()


def test_raw_table_detector():
    assert RAW_TABLE.search("| claim | paper | ours | holds | |---|---|---|---| | a | b | c | yes |")
    assert RAW_TABLE.search("| a | b |\n| :---: | --- |") and RAW_TABLE.search("| a | b |\n|\u2014|\u2014|")
    assert not RAW_TABLE.search("x | y --- z | w") and not RAW_TABLE.search("epoch 1000 - 2000 | note")


def test_no_absolute_links_in_the_site():
    bad = []
    for html in SITE.rglob("*.html"):
        bad += [f"{html.relative_to(SITE)}: {m}" for m in re.findall(r'(?:href|src)="(/[^"/][^"]*)"', html.read_text())]
    assert not bad, f"root-absolute links break a site served from a sub-path: {bad[:5]}"
