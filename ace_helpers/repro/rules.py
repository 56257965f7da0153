"""Claims as data: each chapter declares its rules as a table of :class:`Rule` specs, and :func:`judge_all` reads them.

A :class:`Rule` holds everything a verdict rests on, written once: the paper's claim and where it states it
(``where``), where the paper observes it (``observed``: epochs, model, settings), the comparisons that make it hold
(``tests``: a measured quantity, an ``op`` and a threshold, read over every seed, one value or an interval), the
weaker comparisons that make it ``partly`` hold, and the prose of the rule.  A rule's ``measure`` turns a chapter's
results into a :class:`Measured`: the named quantities the tests read, and what the claims table shows.

The evaluator derives the rest: the verdict (:func:`verdict_of`), the one-line rule (:meth:`Rule.short_text`), the
k-of-N count and the interval test, so no threshold is stated twice.  A verdict is ``inconclusive`` when a test's
seeds disagree or its interval straddles the threshold, and no test fails outright.

Each rule also names a plausible wrong input (``wrong``: the values a model without the property would give, such
as chance accuracy or random subspaces); the test suite judges every rule on it and fails a rule that still holds,
so no rule is a check that cannot fail.  :mod:`ace_helpers.repro.rules_ledger` records when each rule was
registered and every later change (:func:`Rule.fingerprint`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ace_helpers.repro.code_keys import code_key
from ace_helpers.repro.comparisons import (  # noqa: F401 - the comparisons of a rule, re-exported with it
    EQUAL,
    EVERY,
    FAIL,
    HOLD,
    INTERVAL,
    MIXED,
    NOISE_Z,
    ONE,
    OVER,
    TEST_OPS,
    WITHIN,
    Comparison,
    compare,
)
from ace_helpers.repro.report import CAUSE_CLASSES, INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, Claims
from ace_helpers.repro.untested import ClaimRow
from ace_helpers.repro.verdicts import BOOTSTRAP_METHOD, OPS, as_numbers

#: The most words a measured cause may have.
CAUSE_WORDS = 20


@dataclass(frozen=True)
class Measured:
    """What a rule's ``measure`` read from a run: named ``quantities`` (a number or per-seed list each), the ``ours``
    cell of the table (default: the first test's quantity), ``context`` for the rule's texts (``{name}``
    placeholders), ``key``: which instance of a rule measured once per part (a chain, a model) this is, filling
    ``{key}`` in the id, and ``official``: the code release's own number for the claim, rerun here (or None).
    ``value`` and ``per_seed``: the record's numbers where they are not the ``ours`` cell and the first test's values
    (a text cell, or numbers per model that the tests do not read one by one)."""

    quantities: Mapping[str, Any]
    ours: Any = None
    context: Mapping[str, Any] = field(default_factory=dict)
    key: str = ""
    official: Any = None
    value: Any = None
    per_seed: Any = None
    #: How this measurement's interval was computed, where it is not the rule's ``method``.
    method: str = ""
    #: The measured cause's class where the measurement decides it (say, ``"paper"`` when the code release's own rerun
    #: fails the claim too), instead of the rule's ``cause_class``.
    cause_class: str = ""

    def quantity(self, name: str) -> Any:
        if name not in self.quantities:
            raise KeyError(f"no measured quantity {name!r}; measured: {sorted(self.quantities)}")
        return self.quantities[name]

    def replace(self, **quantities: Any) -> Measured:
        """This measurement with some quantities replaced (a wrong input, in the tests)."""
        return dataclasses.replace(self, quantities={**self.quantities, **quantities})


@dataclass(frozen=True)
class NotTested:
    """What a rule's ``measure`` returns when the run cannot test it: ``why``, and what it shows as ``ours``."""

    why: str
    ours: str = "—"
    #: The claim's text in the table, where the rule's own text needs a measurement to fill it.
    claim: str = ""
    #: For one part of a rule measured once per part (a model): the placeholders of its claim and id, and its key.
    context: Mapping[str, Any] = field(default_factory=dict)
    key: str = ""


Measure = Callable[[Mapping[str, Any], Any], "Measured | Sequence[Measured | NotTested] | NotTested | None"]
#: ``fn(item, key, cfg)``: one part's measurement (or :class:`NotTested`, or None where the rule does not apply to it).
PartMeasure = Callable[[Any, str, Any], "Measured | NotTested | None"]


def per_part(parts: Callable[[Any], Iterable[tuple[str, Any, Mapping[str, Any]]]]) -> Callable[[PartMeasure], Measure]:
    """Make a rule's ``measure`` that measures each part of a run (a task, a model, a pair) on its own.

    ``parts(results)`` yields ``(key, item, context)`` per part; the decorated ``fn(item, key, cfg)`` measures one, and
    its measurement gets the part's ``key`` (filling ``{key}`` in the rule's id) and ``context`` (its placeholders).
    Returns one measurement per part (parts ``fn`` returns None for are left out), or None where none applies.  The
    rule's fingerprint reads ``fn``'s source (:func:`functools.wraps`)."""

    def wrap(fn: PartMeasure) -> Measure:
        @functools.wraps(fn)
        def measure(results: Any, cfg: Any) -> list[Measured | NotTested] | None:
            out = []
            for key, item, context in parts(results):
                m = fn(item, key, cfg)
                if m is not None:
                    out.append(dataclasses.replace(m, key=key, context={**m.context, **context}))
            return out or None

        return measure

    return wrap


@dataclass(frozen=True)
class Rule:
    """One claim's rule as data (the fields are described in the module docstring).

    ``claim``, ``prose`` and ``id`` may hold ``{name}`` placeholders, filled from the measurement's ``context``,
    ``{key}`` and the thresholds ``{t0}``, ``{t1}``, … (tests) and ``{p0}``, … (partly tests), for this run (a
    ``relative_to`` threshold added to its reference), or as written: ``{d0}``, …, ``{dp0}``, ….  ``measure``:
    ``(results, cfg) -> Measured``, a list of them (one row each), :class:`NotTested`, or ``None`` where the rule does
    not apply to this run.  ``only_if_explained_fails``: a diagnosis judged only when the claim it explains does not
    hold.  ``gap``: the key of the chapter's known gaps.  ``wrong``: the quantities a plausible wrong model gives.
    ``cause`` (at most :data:`CAUSE_WORDS` words once filled) and ``cause_class``: the measured cause recorded where
    the verdict is not "reproduced".  ``headline=False``: a row of evidence for an id another row carries;
    ``method``: how the first test's interval is computed, where it reads one.
    """

    id: str
    claim: str
    paper: str
    where: str
    observed: str
    tests: tuple[Comparison, ...]
    prose: str
    measure: Measure = field(compare=False)
    wrong: Mapping[str, Any] = field(compare=False)
    partly: tuple[Comparison, ...] = ()
    unit: str = "seed"
    mixed: str = INCONCLUSIVE
    explains: str | None = None
    only_if_explained_fails: bool = False
    gap: str = ""
    cause: str = ""
    cause_class: str = ""
    headline: bool = True
    method: str = ""

    def __post_init__(self) -> None:
        if not self.tests:
            raise ValueError(f"rule {self.id!r} has no test: a rule must be able to fail")
        if self.cause_class not in ("", *CAUSE_CLASSES) or bool(self.cause) != bool(self.cause_class):
            raise ValueError(
                f"rule {self.id!r}: cause_class={self.cause_class!r} with cause {self.cause!r}; a cause "
                f"needs a class in {CAUSE_CLASSES}"
            )
        if self.mixed not in (INCONCLUSIVE, NOT_REPRODUCED):
            raise ValueError(f"mixed={self.mixed!r}; allowed: {[INCONCLUSIVE, NOT_REPRODUCED]}")

    def short_text(self) -> str:
        """The rule in one line, derived from the tests."""
        text = " and ".join(t.text(self.unit) for t in self.tests)
        return text + ("; partly: " + " and ".join(t.text(self.unit) for t in self.partly) if self.partly else "")

    def fingerprint(self) -> str:
        """A 16-hex hash of what decides the verdict: the id, the observation point, the tests, the partly tests, the
        mixed verdict, the diagnosis link and the measuring function's code (:func:`~ace_helpers.repro.code_keys.code_key`: its syntax tree, so
        that formatting, comments and the function's own name do not count).  Prose is not in it."""
        source = code_key(self.measure)
        data = [
            self.id,
            self.observed,
            [_test_data(t) for t in self.tests],
            [_test_data(t) for t in self.partly],
            self.mixed,
            self.explains,
            self.only_if_explained_fails,
            source,
        ]
        return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()[:16]

    def fill(self, text: str, m: Measured) -> str:
        """``text`` with its placeholders filled from ``m`` and the thresholds."""
        names = {f"t{i}": _fmt_bound(t.bound(m)) for i, t in enumerate(self.tests)}
        names.update({f"p{i}": _fmt_bound(t.bound(m)) for i, t in enumerate(self.partly)})
        names.update({f"d{i}": _fmt_written(t) for i, t in enumerate(self.tests)})
        names.update({f"dp{i}": _fmt_written(t) for i, t in enumerate(self.partly)})
        names.update(key=m.key, **m.context)
        try:
            return text.format_map(names)
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(
                f"rule {self.id!r}: text {text[:60]!r}… has a placeholder not measured ({err}); available: {sorted(names)}"
            ) from None


def _test_data(t: Comparison) -> list[Any]:
    data = [t.metric, t.op, list(t.threshold) if isinstance(t.threshold, tuple) else t.threshold, t.relative_to, t.over]
    return data + ([t.noise, NOISE_Z] if t.noise else []) + ([["times", t.times]] if t.times else [])


def _fmt_written(t: Comparison) -> str:
    """A threshold as written, as a distance (``{d0}``: its size; the sign is in the prose, as in "≥ PCA's − {d0}")."""
    if isinstance(t.threshold, tuple):
        return _fmt_bound(t.threshold)
    return f"{abs(t.threshold):g}"


def _fmt_bound(b: float | tuple[float, float]) -> str:
    return f"[{b[0]:g}, {b[1]:g}]" if isinstance(b, tuple) else f"{b:g}"


def verdict_of(rule: Rule, m: Measured) -> str:
    """The verdict of ``rule`` on ``m``: reproduced when every test holds; inconclusive when some test is mixed (seeds
    disagree, or an interval straddles its threshold), none fails outright and ``rule.mixed`` allows it; partly when
    every partly test holds; else not reproduced."""
    states = [t.state(m)[0] for t in rule.tests]
    if all(s == HOLD for s in states):
        return REPRODUCED
    if rule.mixed == INCONCLUSIVE and FAIL not in states:
        return INCONCLUSIVE
    if rule.partly and all(t.state(m)[0] == HOLD for t in rule.partly):
        return PARTLY
    return NOT_REPRODUCED


@dataclass(frozen=True)
class Combine:
    """One headline row for a paper claim checked as several rows (a model each, or parts of one claim): the rows of
    ``id`` become evidence and this row holds when all do (:meth:`ace_helpers.repro.report.Claims.combine`)."""

    id: str
    claim: str
    paper: str
    where: str
    prose: str
    short: str
    unit: str = "models"
    mixed: str = PARTLY
    #: The fewest rows of ``id`` that are combined (one: a single model's row becomes the evidence of its own headline).
    min_parts: int = 2
    #: Called as ``after(row, parts)`` with the combined row and the rows it combines (a measured cause, say).
    after: Callable[[Any, list[Any]], None] | None = field(default=None, compare=False)


Spec = Rule | Combine


def judge(claims: Claims, rule: Rule, m: Measured, known_gap: str | None = None) -> str:
    """Record ``rule`` judged on ``m`` in ``claims`` and return its verdict.  ``known_gap`` (the measured cause of a
    claim known not to hold here) is recorded unless the claim holds, and so is the rule's ``cause`` where it fills to
    a text.  The record's ``per_seed``, ``threshold`` and ``op`` are those of the first test; its ``interval`` the
    first test's when it reads one."""
    verdict = verdict_of(rule, m)
    first = rule.tests[0]
    per_seed = first.values(m) if first.over == EVERY and isinstance(m.quantity(first.metric), (list, tuple)) else None
    ours = m.ours if m.ours is not None else m.quantity(first.metric)
    bound = first.bound(m)
    claims.check(
        rule.fill(rule.claim, m),
        rule.fill(rule.paper, m),
        ours,
        verdict == REPRODUCED,
        None if verdict == REPRODUCED else known_gap,
        id=rule.fill(rule.id, m),
        where=rule.where,
        rule=rule.fill(rule.prose, m),
        partly=verdict == PARTLY,
        explains=rule.explains,
        value=m.value,
        per_seed=per_seed if m.per_seed is None else m.per_seed,
        interval=_interval(first, m),
        method=m.method or rule.method or BOOTSTRAP_METHOD,
        threshold=list(bound) if isinstance(bound, tuple) else bound,
        op=first.op if first.op in OPS else None,
        short=rule.fill(rule.short_text(), m),
        headline=rule.headline,
    )
    row = claims.rows[-1]
    row.inconclusive, row.op, row.official = verdict == INCONCLUSIVE, first.op, as_numbers(m.official)
    if verdict != REPRODUCED and rule.cause and rule.fill(rule.cause, m):
        row.cause, row.cause_class = rule.fill(rule.cause, m), m.cause_class or rule.cause_class
        if row.cause_class not in CAUSE_CLASSES:
            raise ValueError(f"rule {rule.id!r}: measured cause_class {row.cause_class!r}; allowed: {CAUSE_CLASSES}")
        if len(row.cause.split()) > CAUSE_WORDS:
            raise ValueError(f"rule {rule.id!r}: its cause has {len(row.cause.split())} words, at most {CAUSE_WORDS}")
    return verdict


def _interval(test: Comparison, m: Measured) -> list[float] | None:
    """The interval a test reads, for the record (None where it reads none, or where no estimate could be made: a fit
    that failed measures ``[nan, nan]``, which fails the test)."""
    if test.over != INTERVAL:
        return None
    vals = test.values(m)
    return vals if all(math.isfinite(v) for v in vals) else None


def judge_all(specs: Sequence[Spec], results: Mapping[str, Any], cfg: Any, gap: Callable[[str], str | None]) -> Claims:
    """The claims of one run: every spec of a chapter's table judged on ``results`` (``cfg``: the run's settings;
    ``gap``: the chapter's known gap for a rule's ``gap`` key, or None)."""
    claims = Claims()
    for spec in specs:
        if isinstance(spec, Combine):
            parts = [r for r in claims.rows if r.id == spec.id and r.headline]
            if len(parts) >= max(spec.min_parts, 1):
                claims.combine(
                    spec.id,
                    spec.claim,
                    spec.paper,
                    where=spec.where,
                    unit=spec.unit,
                    mixed=spec.mixed,
                    rule=spec.prose,
                    short=spec.short,
                )
                if spec.after is not None:
                    spec.after(claims.rows[-1], parts)
            continue
        if spec.only_if_explained_fails and any(r.id == spec.explains and r.passed for r in claims.rows):
            continue
        measured = spec.measure(results, cfg)
        if measured is None:
            continue
        for m in [measured] if isinstance(measured, (Measured, NotTested)) else measured:
            if isinstance(m, NotTested):
                claims.not_tested.append(_untested_row(spec, m))
            else:
                judge(claims, spec, m, gap(spec.fill(spec.gap, m)) if spec.gap else None)
    return claims


def untested(specs: Sequence[Spec], why: str, ours: str = "—") -> list[ClaimRow]:
    """The rows of every rule of ``specs`` that a run cannot test at all, for the same reason ``why`` (a run that never
    groks cannot test the claims about "after grokking")."""
    return [_untested_row(rule, NotTested(why, ours)) for rule in rules_of(specs)]


def _untested_row(rule: Rule, m: NotTested) -> ClaimRow:
    """The not-tested row of ``rule`` (its texts filled as far as they can be without a measurement)."""
    names = _Loose(key=m.key, **m.context, **_written(rule))
    return ClaimRow(
        m.claim or rule.claim.format_map(names),
        rule.paper,
        m.ours,
        m.why,
        where=rule.where,
        rule=rule.prose.format_map(names),
        id=rule.id.format_map(names),
        explains=rule.explains,
    )


def _written(rule: Rule) -> dict[str, str]:
    """The thresholds of ``rule`` as written, for its texts without a measurement (``{t0}``, ``{d0}``, ``{p0}``, …)."""
    out = {f"{name}{i}": _fmt_written(t) for name in ("t", "d") for i, t in enumerate(rule.tests)}
    return out | {f"{name}{i}": _fmt_written(t) for name in ("p", "dp") for i, t in enumerate(rule.partly)}


class _Loose(dict):
    """Placeholders for a rule's text without a measurement: the known ones filled, the others left as they are."""

    def __missing__(self, name: str) -> str:
        return "{" + name + "}"


def rules_of(specs: Sequence[Spec]) -> list[Rule]:
    """The :class:`Rule` rows of a spec table."""
    return [s for s in specs if isinstance(s, Rule)]


__all__ = [
    "Combine",
    "Measured",
    "NotTested",
    "Rule",
    "Spec",
    "judge",
    "judge_all",
    "per_part",
    "rules_of",
    "untested",
    "verdict_of",
]
