"""Claims a preset cannot test: their rows and table (shared by chapters 2 and 3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimRow:
    """A claim the preset cannot test (reported with our value, never counted as a pass).

    ``where`` (the paper's figure or section) and ``rule`` (our acceptance rule) are carried into
    the claim records (:func:`ace_helpers.report.not_tested_records`) when given.
    """

    claim: str
    paper: str
    ours: str
    why: str
    where: str = ""
    rule: str = ""


def not_tested_table(rows: Sequence[ClaimRow]) -> str:
    """Markdown table of the claims a preset cannot test (empty string if none)."""
    if not rows:
        return ""
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731 - keep pipes inside their cell
    lines = ["| claim (not tested at this preset) | paper | ours | why |", "|---|---|---|---|"]
    lines += [f"| {cell(r.claim)} | {cell(r.paper)} | {cell(r.ours)} | {cell(r.why)} |" for r in rows]
    return "\n".join(lines)
