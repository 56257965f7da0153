"""A chapter's knobs declared once: a table of :class:`Knob` rows, from which its presets (:func:`presets`), its
validation (:func:`checker`) and the lines of its notebook's parameters cell (:func:`parameters_cell`, which a test
holds the notebook to) are derived.

A knob's ``check`` takes ``(name, value, knobs)`` and returns the normalised value or raises ``ValueError`` naming
the knob and what is allowed (the error texts of :mod:`ace_helpers.method.checks`); ``knobs`` holds the knobs
checked so far, for a value that depends on another (a precision on its device).  Checks that read several knobs
at once (memory, sizes that must agree) run after every knob, in the chapter's ``after``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ace_helpers.repro.params import PRESET_NAMES

#: A knob's check: ``(name, value, knobs checked so far) -> normalised value``.
Check = Callable[[str, Any, Mapping[str, Any]], Any]
#: The comment of the parameters cell's PRESET line (PRESET and OUTPUT_DIR are every chapter's, not knobs).
PRESET_DOC = '"ci" | "book" | "paper"; None: $ACE_PRESET, else "book"'


@dataclass(frozen=True)
class Knob:
    """One knob: its ``name``, what it sets (``doc``: the comment of its line in the notebook's parameters cell), its
    ``check``, and its value at each preset (``paper`` defaults to the ``book`` value)."""

    name: str
    doc: str
    check: Check = field(compare=False)
    ci: Any
    book: Any
    paper: Any = None
    #: Whether the paper preset's value is ``book``'s (``paper`` given as None means "the same as book").
    paper_is_book: bool = True

    def value(self, preset: str) -> Any:
        """The knob's value at ``preset``."""
        if preset not in PRESET_NAMES:
            raise ValueError(f"preset={preset!r}; allowed: {list(PRESET_NAMES)}")
        if preset == "paper":
            return self.book if self.paper_is_book else self.paper
        return self.ci if preset == "ci" else self.book


def knob(name: str, doc: str, check: Check, *, ci: Any, book: Any, **paper: Any) -> Knob:
    """A :class:`Knob`; ``paper=...`` gives the paper preset's own value (default: the ``book`` value)."""
    if set(paper) - {"paper"}:
        raise TypeError(f"knob {name!r}: unknown argument(s) {sorted(set(paper) - {'paper'})}; allowed: paper")
    return Knob(name, doc, check, ci, book, paper.get("paper"), "paper" not in paper)


def restate(base: Knob, doc: str, *, ci: Any, book: Any, **paper: Any) -> Knob:
    """``base`` (another chapter's knob) with this chapter's comment and preset values: the same name and check, so a
    knob two chapters share is validated, and refused, the same way in both."""
    return knob(base.name, doc, base.check, ci=ci, book=book, **paper)


def by_name(knobs: Sequence[Knob]) -> dict[str, Knob]:
    """The table as ``{name: knob}``."""
    _unique(knobs)
    return {k.name: k for k in knobs}


def plain(fn: Callable[..., Any], **kwargs: Any) -> Check:
    """A knob check from a check of :mod:`ace_helpers.method.checks` (``fn(name, value, **kwargs)``)."""
    return lambda name, value, knobs: fn(name, value, **kwargs)


def presets(knobs: Sequence[Knob]) -> dict[str, dict[str, Any]]:
    """``{preset: {knob: value}}`` for every preset, from the table."""
    _unique(knobs)
    return {p: {k.name: k.value(p) for k in knobs} for p in PRESET_NAMES}


def checker(knobs: Sequence[Knob], after: Callable[[dict[str, Any]], None] | None = None) -> Callable[[dict[str, Any]], None]:
    """The chapter's validation: each knob's check in table order (its value replaced by the normalised one), then
    ``after(values)``, the checks across knobs.  A chapter wraps it in a module-level ``check`` function, which its
    :class:`~ace_helpers.repro.params.ChapterParams` holds, so that resolved settings pickle (by reference) for worker
    processes."""
    _unique(knobs)

    def check(values: dict[str, Any]) -> None:
        for k in knobs:
            values[k.name] = k.check(k.name, values[k.name], values)
        if after is not None:
            after(values)

    return check


def parameters_cell(knobs: Sequence[Knob], notebook: str, preset_doc: str = PRESET_DOC) -> list[tuple[str, str]]:
    """``(name, comment)`` of every line of ``notebook``'s parameters cell, in order: PRESET, the knobs, OUTPUT_DIR."""
    output_doc = f"where results.json goes; None: outputs/{notebook}"
    return [("PRESET", preset_doc), *((k.name, k.doc) for k in knobs), ("OUTPUT_DIR", output_doc)]


def _unique(knobs: Sequence[Knob]) -> None:
    names = [k.name for k in knobs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"knobs declared twice: {twice}")
