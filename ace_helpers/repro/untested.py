"""Claims a run cannot test: their rows (:class:`ClaimRow`) and their table; their records for ``results.json`` are
:func:`~ace_helpers.repro.report.not_tested_records`.  They are shown and recorded with the reason, and never counted
as a pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ace_helpers.repro.tables import markdown_table


@dataclass(frozen=True)
class ClaimRow:
    """A claim a run cannot test, with our value and why (never counted as a pass).

    ``where`` (the paper's figure or section) and ``rule`` (our acceptance rule) are carried into
    the claim records (:func:`~ace_helpers.repro.report.not_tested_records`) when given.
    """

    claim: str
    paper: str
    ours: str
    why: str
    where: str = ""
    rule: str = ""
    #: The paper-claim id (or ``ours.<chapter>.<name>``) the run would test, and for a diagnosis the id it explains.
    id: str = ""
    explains: str | None = None


def not_tested_table(rows: Sequence[ClaimRow]) -> str:
    """Markdown table of the claims a run cannot test (the empty string if none)."""
    return (
        ""
        if not rows
        else markdown_table(
            ("claim (not tested at this preset)", "paper", "ours", "why"), [(r.claim, r.paper, r.ours, r.why) for r in rows]
        )
    )
