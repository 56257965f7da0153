"""Claims a preset cannot test: their rows and table (shared by chapters 2 and 3)."""

from __future__ import annotations

from collections.abc import Sequence

from ace_helpers.repro.report import ClaimRow, md_cell

__all__ = ["ClaimRow", "not_tested_table"]


def not_tested_table(rows: Sequence[ClaimRow]) -> str:
    """Markdown table of the claims a preset cannot test (empty string if none)."""
    if not rows:
        return ""
    lines = ["| claim (not tested at this preset) | paper | ours | why |", "|---|---|---|---|"]
    lines += [f"| {md_cell(r.claim)} | {md_cell(r.paper)} | {md_cell(r.ours)} | {md_cell(r.why)} |" for r in rows]
    return "\n".join(lines)
