"""The book's wiring: every chapter is paired, executed from its current source, listed in the TOC."""

from pathlib import Path

import nbformat
import pytest
import yaml

from ace_helpers import runbook

ROOT = Path(__file__).resolve().parents[1]
SOURCES = runbook.notebook_sources(ROOT)


def test_cache_key_tracks_source_and_preset():
    assert runbook.cache_key("a", "book") == runbook.cache_key("a", "book")
    assert runbook.cache_key("a", "book") != runbook.cache_key("b", "book")
    assert runbook.cache_key("a", "book") != runbook.cache_key("a", "ci")


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_chapter_is_executed_from_its_current_source(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{py.name} has no paired notebook: run jupytext --to ipynb and make notebooks"
    nb = nbformat.read(ipynb, as_version=4)
    meta = nb.metadata.get("ace_book", {})
    assert meta.get("preset") in ("book", "paper"), f"{ipynb.name} was not executed at the book preset"
    assert meta.get("key") == runbook.cache_key(py.read_text(), meta["preset"]), (
        f"{ipynb.name} is stale: its source changed since it was executed (make notebooks)"
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and "parameters" in code[0].metadata.get("tags", []), "first code cell must be tagged parameters"
    assert all(c.get("outputs") is not None for c in code)
    errors = [o for c in code for o in c["outputs"] if o.get("output_type") == "error"]
    assert not errors, f"{ipynb.name} was committed with an error output"


def test_every_chapter_is_in_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {ch["file"] for part in toc["parts"] for ch in part["chapters"]}
    for py in SOURCES:
        assert f"notebooks/{py.stem}" in files, f"{py.stem} is missing from _toc.yml"
