"""Claims a preset cannot test: their rows and table (shared by chapters 2 and 3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimRow:
    """A claim the preset cannot test (reported with our value, never counted as a pass)."""

    claim: str
    paper: str
    ours: str
    why: str


def not_tested_table(rows: Sequence[ClaimRow]) -> str:
    """Markdown table of the claims a preset cannot test (empty string if none)."""
    if not rows:
        return ""
    lines = ["| claim (not tested at this preset) | paper | ours | why |", "|---|---|---|---|"]
    lines += [f"| {r.claim} | {r.paper} | {r.ours} | {r.why} |" for r in rows]
    return "\n".join(lines)
