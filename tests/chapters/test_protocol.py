"""Every chapter package speaks one protocol, and every notebook uses it.

``PARAMS`` (a :class:`~ace_helpers.repro.params.ChapterParams`), ``run(cfg) -> results``,
``build_claims(results, cfg) -> Claims`` (the claims the run cannot test inside) and
``hook_site(...)`` (one model of the chapter at its hook, for the cell that shows ACE in plain sight).
"""

import importlib
import inspect
import re
from pathlib import Path

import pytest

from ace_helpers.repro import runbook
from ace_helpers.repro.params import ChapterParams

ROOT = Path(__file__).resolve().parents[2]
STEMS = [p.stem for p in runbook.notebook_sources(ROOT)]


def _package(stem: str):
    return importlib.import_module(f"ace_helpers.chapters.{stem.split('_', 1)[1]}")


def test_there_are_eight_chapters():
    assert len(STEMS) == 8, STEMS


@pytest.mark.parametrize("stem", STEMS)
def test_the_package_exposes_the_protocol(stem):
    mod = _package(stem)
    assert isinstance(mod.PARAMS, ChapterParams) and mod.PARAMS.notebook == stem
    run = inspect.signature(mod.run)
    first = next(iter(run.parameters.values()))
    assert first.name == "cfg", f"{stem}: run's first parameter is {first.name!r}, not cfg"
    assert all(p.default is not p.empty for p in list(run.parameters.values())[1:]), f"{stem}: run(cfg) needs more"
    claims = inspect.signature(mod.build_claims)
    names = list(claims.parameters)
    assert names[1] == "cfg", f"{stem}: build_claims(results, cfg) has parameters {names}"
    assert all(p.default is not p.empty for p in list(claims.parameters.values())[2:])
    assert claims.return_annotation in ("Claims", "ace_helpers.repro.report.Claims"), claims.return_annotation
    assert callable(mod.hook_site)


@pytest.mark.parametrize("stem", STEMS)
def test_the_notebook_runs_the_protocol(stem):
    """One prologue call, one ``run``, the claims from its results, one epilogue call."""
    text = (ROOT / "notebooks" / f"{stem}.py").read_text()
    assert text.count("session.start(chapter, globals())") == 1
    assert text.count("session.finish(cfg,") == 1
    found = re.search(r"^(\w+) = chapter\.run\(cfg\)", text, re.M)
    assert found, f"{stem}: the notebook does not call chapter.run(cfg)"
    assert f"chapter.build_claims({found.group(1)}, cfg)" in text, f"{stem}: build_claims does not read run's results"
