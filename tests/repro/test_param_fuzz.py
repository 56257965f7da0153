"""Fuzzing every knob of every chapter: a bad value is refused by name before any compute.

For each knob, hypothesis draws values that are wrong for the knob's kind (taken from its ``ci``
preset value): a string or a non-integral float for a count, NaN or infinity for a real number,
a number for a choice, a scalar for a list, a negative count, and so on.  Resolving the chapter's
parameters with one such value must raise ``ValueError`` naming that knob; resolution runs no
training, so nothing is computed first.  A value that is accepted is a silent failure.

A misspelt knob (a letter dropped, added, doubled or swapped, as ``papermill -p DIMS 32`` for
``DIM``) lands in the notebook's namespace as a new UPPER_CASE name: it must be refused, naming it
and, where one is close, the knob meant.
"""

import importlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
STEMS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def chapter_params(stem: str):
    return importlib.import_module(f"ace_helpers.chapters.{stem.split('_', 1)[1]}").PARAMS


NOT_A_NUMBER = st.one_of(st.text(min_size=1, max_size=5), st.lists(st.integers(), min_size=1, max_size=2), st.just({"a": 1}))


def invalid_values(example):
    """Values that are wrong for a knob whose valid ``ci`` value is ``example``."""
    if isinstance(example, bool):
        return st.one_of(st.sampled_from(["yes", "true", 1.5, 2]), st.lists(st.booleans(), min_size=1, max_size=2))
    if isinstance(example, int):
        return st.one_of(
            NOT_A_NUMBER, st.booleans(), st.integers(max_value=-1),
            st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)),
            st.sampled_from([float("nan"), float("inf")]),
        )  # fmt: skip
    if isinstance(example, float):
        return st.one_of(NOT_A_NUMBER, st.booleans(), st.sampled_from([float("nan"), float("inf"), -float("inf")]))
    if isinstance(example, str):
        # a list of non-positive integers: chapter 5's LAYERS takes a string or a list of layers >= 1
        return st.one_of(st.integers(), st.floats(allow_nan=True), st.lists(st.integers(max_value=0), min_size=1, max_size=2),
                         st.just("\x00 not-a-valid-choice"))  # fmt: skip
    if isinstance(example, (list, tuple)):
        return st.one_of(st.just("abc"), st.floats(allow_nan=True), st.just({"a": 1}), st.just([[["x"]]]))
    return st.one_of(st.integers(), st.just({"a": 1}), st.floats(allow_nan=True))  # an optional path or list


def knob_cases():
    for stem in STEMS:
        chapter = chapter_params(stem)
        for knob, value in chapter.presets["ci"].items():
            if value is None:  # optional: judge by the other presets' values
                value = next((p[knob] for p in chapter.presets.values() if p[knob] is not None), None)
            yield pytest.param(stem, knob, value, id=f"{stem}-{knob}")


def fuzz(chapter, knob: str, example) -> None:
    """Fail (pytest.fail) if any drawn bad value of ``knob`` is accepted or refused without its name."""

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(bad=invalid_values(example))
    def check(bad):
        with pytest.raises(ValueError) as err:
            chapter.resolve(PRESET="ci", **{knob: bad})
        assert knob in str(err.value), f"{chapter.notebook}: {knob}={bad!r} raised without naming {knob}: {err.value}"

    check()


@pytest.mark.parametrize("stem, knob, example", list(knob_cases()))
def test_bad_values_are_refused_by_name(stem, knob, example):
    fuzz(chapter_params(stem), knob, example)


def _lax_check(values):  # accepts anything for N
    pass


def test_the_fuzzer_catches_a_knob_that_accepts_anything():
    from ace_helpers.repro.params import ChapterParams

    lax = ChapterParams("99_lax", {name: {"N": 3} for name in ("ci", "book", "paper")}, _lax_check)
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        fuzz(lax, "N", 3)


def misspellings(knob: str):
    """Misspelt forms of ``knob``: a character dropped, doubled, swapped with the next, or an S added."""
    drop = st.integers(0, len(knob) - 1).map(lambda i: knob[:i] + knob[i + 1 :])
    double = st.integers(0, len(knob) - 1).map(lambda i: knob[: i + 1] + knob[i:])
    swap = st.integers(0, max(len(knob) - 2, 0)).map(lambda i: knob[:i] + knob[i + 1 : i + 2] + knob[i] + knob[i + 2 :])
    return st.one_of(drop, double, swap, st.just(knob + "S")).filter(lambda name: name != knob and name)


@pytest.mark.parametrize("stem", STEMS)
def test_misspelt_knobs_are_refused_by_name(stem):
    from ace_helpers.repro.params import KNOB_NAME

    chapter = chapter_params(stem)
    allowed = {*chapter.knobs, "PRESET", "OUTPUT_DIR"}

    @settings(max_examples=40, deadline=None, database=None)
    @given(knob=st.sampled_from(sorted(chapter.knobs)), data=st.data())
    def check(knob, data):
        typo = data.draw(misspellings(knob))
        if typo in allowed or not KNOB_NAME.fullmatch(typo):
            return  # another real knob, or not a knob-like name (e.g. a leading digit)
        with pytest.raises(ValueError, match=f"{typo}: no such knob") as err:
            chapter.resolve({"PRESET": "ci", typo: chapter.presets["ci"][knob]})
        assert "did you mean" in str(err.value) or len(knob) <= 2, str(err.value)

    check()
