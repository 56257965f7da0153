"""Knobs declared once: the presets, the validation and the parameters cell derived from one table."""

import re
from pathlib import Path

import pytest

from ace_helpers.method.checks import check_int
from ace_helpers.repro.knobs import checker, knob, parameters_cell, plain, presets

ROOT = Path(__file__).resolve().parents[2]


def _table():
    return (knob("N", "how many", plain(check_int, low=1), ci=1, book=3),
            knob("M", "at most N", lambda name, v, k: check_int(name, v, low=0, high=k["N"]), ci=0, book=2, paper=3))


def test_presets_validation_and_cell_come_from_the_table():
    knobs = _table()
    assert presets(knobs) == {"ci": {"N": 1, "M": 0}, "book": {"N": 3, "M": 2}, "paper": {"N": 3, "M": 3}}
    check = checker(knobs, after=lambda p: p.update(total=p["N"] + p["M"]))
    values = {"N": 4, "M": 4}
    check(values)
    assert values == {"N": 4, "M": 4, "total": 8}
    with pytest.raises(ValueError, match="M=5 is not allowed"):
        check({"N": 4, "M": 5})  # a check that reads a knob checked before it
    assert parameters_cell(knobs, "99_toy")[1:] == [("N", "how many"), ("M", "at most N"),
                                                   ("OUTPUT_DIR", "where results.json goes; None: outputs/99_toy")]


def test_a_table_that_declares_a_knob_twice_or_a_bad_preset_is_refused():
    with pytest.raises(ValueError, match=r"knobs declared twice: \['N'\]"):
        presets(_table() + _table()[:1])
    with pytest.raises(TypeError, match="allowed: paper"):
        knob("N", "x", plain(check_int), ci=1, book=1, papr=2)
    with pytest.raises(ValueError, match="preset='fast'"):
        _table()[0].value("fast")


def _cell(py: Path) -> list[tuple[str, str]]:
    """(name, comment) of each line of a notebook source's parameters cell."""
    text = py.read_text().split('# %% tags=["parameters"', 1)[1].split("\n# %%", 1)[0]
    return [(m[1], m[2]) for m in re.finditer(r"^([A-Z][A-Z0-9_]*) = None  # (.*)$", text, re.MULTILINE)]


@pytest.mark.parametrize("chapter", ["ace_planted_system", "markov_cores", "grokking_scaling_law", "llm_agreement", "ace_vs_alternatives",
                                     "toy_views"])
def test_a_chapters_parameters_cell_is_its_knob_table(chapter):
    import importlib

    knobs = importlib.import_module(f"ace_helpers.chapters.{chapter}.knobs")  # toy_views: chapter 7's knobs
    assert _cell(ROOT / "notebooks" / f"{knobs.NOTEBOOK}.py") == knobs.CELL


def test_chapters_2_and_3_share_one_knob_table_with_their_own_comments():
    from ace_helpers.chapters.core_inflation import knobs as three
    from ace_helpers.chapters.modadd import config
    from ace_helpers.repro.knobs import presets

    assert _cell(ROOT / "notebooks" / "02_modadd_grokking.py") == config.CELL
    assert _cell(ROOT / "notebooks" / "03_core_inflation.py") == three.CELL
    assert presets(three.KNOBS) == config.PRESETS  # one run: the same presets and checks, other comments
    assert [k.check for k in three.KNOBS] == [k.check for k in config.KNOB_TABLE]


def test_a_shared_knob_is_checked_the_same_way_in_both_chapters():
    """Chapter 6 restates chapter 7's toy-model knobs with its own comments and presets, and their checks."""
    from ace_helpers.chapters.ace_vs_alternatives import knobs as six
    from ace_helpers.chapters.toy_views import knobs as seven

    shared = {k.name for k in six.KNOBS} & {k.name for k in seven.KNOBS}
    assert len(shared) == 21  # the Markov and mod-add knobs, PRECISION and DEVICE
    for name in shared:
        assert next(k for k in six.KNOBS if k.name == name).check is next(k for k in seven.KNOBS if k.name == name).check


@pytest.mark.parametrize("chapter", ["ace_planted_system", "markov_cores", "grokking_scaling_law", "llm_agreement",
                                     "ace_vs_alternatives", "core_stitching"])
def test_settings_resolved_from_a_knob_table_pickle(chapter):
    """Worker processes receive pickled settings: the chapter's check must pickle by reference."""
    import importlib
    import pickle

    params = importlib.import_module(f"ace_helpers.chapters.{chapter}").PARAMS
    cfg = params.resolve(PRESET="ci")
    assert dict(pickle.loads(pickle.dumps(cfg))) == dict(cfg)
