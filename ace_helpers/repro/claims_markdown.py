"""A run's claims as one markdown pipe table (claim, paper and place, our rule, ours, verdict), the form the notebook
tests read back: :meth:`~ace_helpers.repro.report.Claims.table` and, with the claims a run cannot test appended,
:func:`claims_table`.  An unexpected failure shows in bold capitals, a known one with its measured cause."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ace_helpers.repro.tables import markdown_table

#: The columns of every claims table.
CLAIMS_HEADER = ("claim", "paper", "our rule", "ours", "verdict")


def _table_rows(claims: Any) -> list[tuple[str, ...]]:
    """The cells of :meth:`Claims.table`, one tuple per row."""
    rows = []
    for r in claims.rows:
        if r.passed:
            verdict = r.verdict
        elif r.unexpected:
            verdict = f"**{r.verdict.upper()}** (unexpected)"
        else:  # a known gap, or inconclusive (with its cause where one is known)
            verdict = f"{r.verdict}: {r.known_gap}" if r.known_gap else r.verdict
        rows.append((r.claim, f"{r.paper} ({r.where})" if r.where else r.paper, r.rule, r.ours, verdict))
    return rows


def claims_table(claims: Any, not_tested: Sequence[Any]) -> str:
    """One markdown claims table (``Claims.table``) with the claims a run
    cannot test appended as rows whose verdict is "not tested" and why."""
    rows = [
        (r.claim, f"{r.paper} ({r.where})" if r.where else r.paper, r.rule, r.ours, f"not tested: {r.why}") for r in not_tested
    ]
    return markdown_table(CLAIMS_HEADER, [*_table_rows(claims), *rows])
