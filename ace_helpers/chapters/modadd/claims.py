"""Claims a preset cannot test: their rows and table (shared by chapters 2 and 3)."""

from __future__ import annotations

from collections.abc import Sequence

from ace_helpers.report import ClaimRow

__all__ = ["ClaimRow", "not_tested_table"]


def not_tested_table(rows: Sequence[ClaimRow]) -> str:
    """Markdown table of the claims a preset cannot test (empty string if none)."""
    if not rows:
        return ""
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731 - keep pipes inside their cell
    lines = ["| claim (not tested at this preset) | paper | ours | why |", "|---|---|---|---|"]
    lines += [f"| {cell(r.claim)} | {cell(r.paper)} | {cell(r.ours)} | {cell(r.why)} |" for r in rows]
    return "\n".join(lines)
