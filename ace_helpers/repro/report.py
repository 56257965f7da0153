"""Claims tables: each chapter states the paper's claims, our numbers, and checks them.

A chapter builds a :class:`Claims`, calls :meth:`Claims.check` once per claim, shows :meth:`Claims.table`
and prints :meth:`Claims.verdict` in a cell that the notebook tests compare, so a chapter that
no longer reproduces fails the test suite instead of quietly printing a worse number, while a
run with a reader's own parameters always finishes and shows its verdicts.  Its claim records
(:meth:`Claims.records`) go into ``results.json`` and, at the ``book`` preset, the scorecard.

Each claim carries the paper's statement and value (``paper``), where the paper states it
(``where``: a figure or section of arXiv 2602.22600, or the official code release
``joshseth/cores`` where the value comes from the code), our acceptance rule and why it differs
from the paper's wording where it does (``rule``), the measured value (``ours``) and a verdict:
reproduced (the rule holds), partly (only the weaker form stated in the rule holds), not
reproduced, inconclusive (the seeds disagree, or the interval of the estimate straddles the
threshold: :mod:`ace_helpers.repro.verdicts`), or not tested at this preset.

Each row also has an ``id`` (the paper claim it tests, :data:`~ace_helpers.repro.paper_claims.PAPER_CLAIMS`,
or ``ours.<chapter>.<name>``), a ``kind`` (paper, ours or diagnosis) and, in its record, the measured
``value`` as JSON numbers, the ``per_seed`` values, the ``interval`` and ``threshold`` where the rule is
judged on an estimate, and ``headline``: whether the row carries its paper claim's verdict
(the same claim from another run is evidence beside it).

A claim we have measured *not* to reproduce at a given preset is recorded with
``known_gap="why"``: it shows as not reproduced, with the reason, and is expected by the tests.
Every other failure fails them.  Known gaps are stated per preset by the chapter
module in one :class:`~ace_helpers.repro.known_gaps.KnownGaps` table, next to the evidence, never added to make a run pass;
a gap applies only to that preset's exact run (:meth:`~ace_helpers.repro.known_gaps.KnownGaps.reason`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ace_helpers.repro.claims_markdown import claims_table
from ace_helpers.repro.combined import combined_ours
from ace_helpers.repro.paper_claims import check_id
from ace_helpers.repro.verdicts import BOOTSTRAP_METHOD, as_numbers, check_op, interval_side, is_flat_numbers, k_of_n


@dataclass
class Claim:
    """One checked claim: what the paper says and where, our rule, what we measured, whether it holds."""

    claim: str
    paper: str
    ours: str
    passed: bool
    known_gap: str | None = None
    where: str = ""
    rule: str = ""
    partly: bool = False
    #: The paper-claim id (:data:`~ace_helpers.repro.paper_claims.PAPER_CLAIMS`) or ours.<chapter>.<name>.
    id: str = ""
    #: "paper", "ours" or "diagnosis" (:func:`claim_kind`).
    kind: str = ""
    #: For a diagnosis: the paper-claim id whose failure it explains.
    explains: str | None = None
    #: The measured value(s) as JSON numbers, the per-seed (or per-model) values, the interval of the estimate.
    value: Any = None
    per_seed: list[Any] | None = None
    interval: list[float] | None = None
    #: The rule's threshold and comparison (:data:`~ace_helpers.repro.verdicts.OPS`), where it has one.
    threshold: Any = None
    op: str | None = None
    #: The rule in one short line (the prose rule is ``rule``, recorded as ``details``).
    short: str = ""
    #: The seeds disagree or the interval straddles the threshold.
    inconclusive: bool = False
    #: False on a row that repeats an id already carried by another row of the same run.
    headline: bool = True
    #: How ``interval`` was computed.
    method: str = ""
    #: Where the verdict is not "reproduced": its measured cause in one sentence, and its class (:data:`CAUSE_CLASSES`).
    cause: str | None = None
    cause_class: str | None = None
    #: The code release's own number for this claim, rerun here (same shape as ``value``), where it was rerun.
    official: Any = None

    @property
    def verdict(self) -> str:
        """``"reproduced"`` when the claim holds, ``"inconclusive"`` when its seeds or interval cannot
        tell, ``"partly"`` when only its weaker form holds, else ``"not reproduced"``."""
        if self.passed:
            return REPRODUCED
        return INCONCLUSIVE if self.inconclusive else PARTLY if self.partly else NOT_REPRODUCED

    @property
    def unexpected(self) -> bool:
        """A failure that is not a documented known gap (an inconclusive verdict is reported, not failed)."""
        return not self.passed and not self.inconclusive and self.known_gap is None


REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED = (
    "reproduced",
    "partly",
    "not reproduced",
    "inconclusive",
    "not tested",
)
#: Verdicts a claim record may carry (the scorecard counts them per chapter).
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED)
#: Why a verdict is not "reproduced": our run departs from the paper; too few seeds or samples; the claim fails on
#: the paper's own protocol; not tested as the paper states it.
CAUSE_CLASSES = ("ours", "samples", "paper", "as-stated")


def format_value(value: Any) -> str:
    """A measured value as the tables print it: floats to 4 significant digits, lists and tuples item by item."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


@dataclass
class Claims:
    """Collects :class:`Claim` rows; ``assert_all`` raises listing every failed one."""

    rows: list[Claim] = field(default_factory=list)
    #: Claims this run cannot test (:class:`~ace_helpers.repro.untested.ClaimRow`): shown and recorded, never counted as a pass.
    not_tested: list[Any] = field(default_factory=list)
    #: The measured values the rules read, by name, for the chapter's prose and ``results.json``.
    numbers: dict[str, Any] = field(default_factory=dict)

    def check(
        self,
        claim: str,
        paper: str,
        ours: Any,
        passed: bool,
        known_gap: str | None = None,
        *,
        where: str = "",
        rule: str = "",
        partly: bool = False,
        id: str = "",
        explains: str | None = None,
        value: Any = None,
        per_seed: Sequence[Any] | None = None,
        interval: Sequence[float] | None = None,
        threshold: Any = None,
        op: str | None = None,
        short: str = "",
        method: str = BOOTSTRAP_METHOD,
        headline: bool = True,
    ) -> bool:
        """Record a claim; ``passed`` is the caller's comparison of ``ours`` to the rule.

        ``paper``: the paper's statement and value; ``where``: its figure or section (or the code
        release); ``rule``: our acceptance rule, and why it departs from the paper's wording where
        it does; ``partly``: the weaker form the rule names holds (used only if ``passed`` is
        false); ``known_gap``: the measured cause when this claim is known not to hold here;
        ``id``: the paper-claim id this row tests, or ``ours.<chapter>.<name>``; ``explains``: for a
        diagnosis row, the paper-claim id whose failure it explains (the kind follows: :func:`claim_kind`).

        ``value``: the measured number(s) (default: ``ours`` when it is numeric); ``per_seed``: the
        value of each seed or model; ``interval``: ``[low, high]`` of the estimate, computed by
        ``method``; ``threshold`` and ``op`` (``">="``, ``">"``, ``"<="``, ``"<"``): the rule's
        comparison.  With ``op`` and ``threshold``, the verdict is inconclusive when the interval
        straddles the threshold or, without an interval, when some of the ``per_seed`` values
        satisfy it and some do not ("k of N").  ``short``: the rule in one line (default: ``claim``).
        ``headline=False``: the row repeats an id that another row of this run carries.
        """
        kind = claim_kind(id, explains) if id else ""
        inconclusive = False
        if op is not None and threshold is not None:
            check_op(op)
            if interval is not None:
                inconclusive = interval_side(interval, op, threshold) is None
            elif per_seed is not None and is_flat_numbers(per_seed):
                k, n = k_of_n(per_seed, op, threshold)
                inconclusive = 0 < k < n
        self.rows.append(
            Claim(
                claim,
                paper,
                format_value(ours),
                bool(passed) and not inconclusive,
                known_gap,
                where,
                rule,
                bool(partly),
                id,
                kind,
                explains,
                value=as_numbers(ours) if value is None else as_numbers(value),
                per_seed=None if per_seed is None else as_numbers(list(per_seed)),
                interval=None if interval is None else [float(v) for v in interval],
                threshold=as_numbers(threshold),
                op=op,
                short=short or claim,
                inconclusive=inconclusive,
                headline=headline,
                method=method if interval is not None else "",
            )
        )
        return bool(passed) and not inconclusive

    def combine(
        self,
        id: str,
        claim: str,
        paper: str,
        *,
        where: str = "",
        rule: str = "",
        unit: str = "models",
        mixed: str = "partly",
        short: str = "",
        known_gap: str | None = None,
    ) -> bool:
        """One headline row for paper claim ``id`` from the rows of it already checked once per model
        (or seed, or part): they become evidence (``headline=False``) and the new row holds when every
        one holds, and says "k of N {unit}" with each part's number (:func:`ace_helpers.repro.combined.combined_ours`).

        Where it does not hold: ``inconclusive`` when no part fails outright (the failing ones cannot
        tell); otherwise, with ``mixed="partly"`` (the claim holds in some models), ``partly`` when some
        part holds or every part holds its weaker form, and with ``mixed="inconclusive"`` (seeds of one
        protocol disagree) ``inconclusive`` when some part holds.  When every part that fails has a known
        gap, the row carries them (``"<part>: <gap>"``, the part named by its claim's text before the
        first colon), unless ``known_gap`` is given.
        """
        if mixed not in (PARTLY, INCONCLUSIVE):
            raise ValueError(f"mixed={mixed!r}; allowed: {[PARTLY, INCONCLUSIVE]}")
        parts = [r for r in self.rows if r.id == id and r.headline]
        if not parts:
            raise ValueError(f"no checked row has id {id!r} to combine; ids: {sorted({r.id for r in self.rows})}")
        for r in parts:
            r.headline = False
        k, n = sum(r.passed for r in parts), len(parts)
        failing = [r for r in parts if not r.passed and not r.inconclusive]
        if known_gap is None and failing and all(r.known_gap for r in failing):
            known_gap = "; ".join(f"{r.claim.split(':', 1)[0]}: {r.known_gap}" for r in failing)
        inconclusive = k < n and (not failing or (mixed == INCONCLUSIVE and k > 0))
        self.rows.append(
            Claim(
                claim,
                paper,
                combined_ours(parts, k, unit),
                k == n,
                known_gap,
                where,
                rule,
                mixed == PARTLY and any(r.passed or r.partly for r in parts),
                id,
                claim_kind(id),
                value=k,
                per_seed=[int(r.passed) for r in parts],
                threshold=n,
                op=">=",
                short=short or f"holds in every one of the {n} {unit}",
                inconclusive=inconclusive,
            )
        )
        return k == n

    def headline_verdict(self, claim_id: str) -> str:
        """The verdict of ``claim_id``'s headline row (``"not tested"`` when listed as untested; else ``ValueError``)."""
        rows = [r for r in self.rows if r.id == claim_id and r.headline]
        if rows:
            return rows[0].verdict
        if any(getattr(r, "id", "") == claim_id for r in self.not_tested):
            return NOT_TESTED
        raise ValueError(f"no headline row and no untested row has id {claim_id!r}")

    def table(self) -> str:
        """Markdown table of all claims (render with ``IPython.display.Markdown``; MyST renders tables).

        Columns: claim, paper (statement and place), our rule, ours, verdict; an unexpected
        failure shows in bold capitals, a known one with its measured cause.
        """
        return claims_table(self, ())

    def summary(self) -> str:
        """One line: ``"N of M claims hold"`` (stable across presets for nbval)."""
        held = sum(r.passed for r in self.rows)
        return f"{held} of {len(self.rows)} claims hold"

    def verdict(self) -> str:
        """Preset-independent line for nbval: ``"no unexpected claim failures"`` or what failed."""
        bad = [r.claim for r in self.rows if r.unexpected]
        return "no unexpected claim failures" if not bad else f"unexpected claim failures: {bad}"

    def counts(self) -> dict[str, Any]:
        """``results.json`` entries: ``claims_passed``, ``claims_total`` and ``claims_failed`` (those not holding)."""
        return {
            "claims_passed": sum(r.passed for r in self.rows),
            "claims_total": len(self.rows),
            "claims_failed": [r.claim for r in self.rows if not r.passed],
        }

    def records(
        self, section: str, trained: str | None = None, *, evidence: bool = False, departures: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The rows, then the :attr:`not_tested` ones, as plain dicts for ``results.json`` and the scorecard
        (``section`` names the run).

        Keys: ``section``, ``id``, ``kind`` (and ``explains`` for a diagnosis), ``claim``, ``paper``,
        ``where``, ``rule`` (one line), ``details`` (the prose rule), ``ours`` (as shown), ``value``,
        ``per_seed``, ``interval`` (with its ``method``), ``threshold`` and ``op`` where given,
        ``verdict`` (see :data:`VERDICTS`), ``headline``, ``note`` (the known gap's measured cause,
        or ``""``), and ``trained`` when given: how that run was trained (e.g. ``"ensemble, bf16"``),
        where it is not the chapter's own run.  ``evidence=True``: this run is evidence beside the
        chapter's headline run (a stored long run, a variant), so none of its rows is a headline
        (a chapter that moves a claim's headline to such a run rewrites the flags on the records it writes).
        With ``departures`` (:func:`ace_helpers.repro.departures.departures`
        of that run) each record names its ``run`` (``section``) and how it departs from the paper's protocol (else
        :func:`ace_helpers.repro.session.finish` adds them for the notebook's own run); a row with a measured cause carries
        ``cause`` and ``cause_class``.
        """
        recs = []
        for r in self.rows:
            rec: dict[str, Any] = {"section": section, "id": r.id, "kind": r.kind}
            if r.explains:
                rec["explains"] = r.explains
            rec.update(claim=r.claim, paper=r.paper, where=r.where, rule=r.short, details=r.rule, ours=r.ours, value=r.value)
            for key in ("per_seed", "interval", "threshold", "op"):
                if getattr(r, key) is not None:
                    rec[key] = getattr(r, key)
            if r.interval is not None:
                rec["method"] = r.method
            rec.update(verdict=r.verdict, headline=r.headline and not evidence, evidence=evidence, note=r.known_gap or "")
            if r.cause and not r.passed:
                rec.update(cause=r.cause, cause_class=r.cause_class)
            rec.update({"official": r.official} if r.official is not None else {})
            if trained:
                rec["trained"] = trained
            recs.append(rec)
        recs += not_tested_records(self.not_tested, section, trained, evidence=evidence)
        for rec in recs if departures is not None else ():
            rec.update(run=section, departures=list(departures))
        return recs

    def assert_all(self) -> None:
        """Raise ``AssertionError`` naming every failed claim that is not a documented known gap."""
        failed = [r for r in self.rows if r.unexpected]
        if failed:
            raise AssertionError(
                "claims not reproduced: " + "; ".join(f"{r.claim} (ours {r.ours}, paper {r.paper})" for r in failed)
            )


def claim_kind(claim_id: str, explains: str | None = None) -> str:
    """``"paper"`` for an id of the paper's list, ``"diagnosis"`` when it explains one, else ``"ours"`` (checked)."""
    kind = "diagnosis" if explains else "ours" if claim_id.startswith("ours.") else "paper"
    check_id(claim_id, kind, explains)
    return kind


def not_tested_records(rows: Any, section: str, trained: str | None = None, *, evidence: bool = False) -> list[dict[str, Any]]:
    """Records (as :meth:`Claims.records`) of claims a run cannot test: objects with ``claim``,
    ``paper``, ``ours``, ``why`` (the reason becomes the note) and optionally ``where``, ``rule``,
    ``id`` and ``explains``."""
    recs = []
    for r in rows:
        claim_id, explains = getattr(r, "id", ""), getattr(r, "explains", None)
        rec: dict[str, Any] = {"section": section, "id": claim_id, "kind": claim_kind(claim_id, explains) if claim_id else ""}
        if explains:
            rec["explains"] = explains
        rec.update(
            claim=r.claim,
            paper=r.paper,
            where=getattr(r, "where", ""),
            rule=r.claim,
            details=getattr(r, "rule", ""),
            ours=str(r.ours),
            value=None,
            verdict=NOT_TESTED,
            headline=not evidence,
            evidence=evidence,
            note=r.why,
        )
        if trained:
            rec["trained"] = trained
        recs.append(rec)
    return recs
