"""What each chapter's headlines rest on: the runs that carry them, how each departs from the paper's protocol, and
every verdict other than "reproduced" with its measured cause; generated from the stored results.

:func:`coverage_markdown` writes the reproducibility page's table (``book/coverage_table.md``, rebuilt by the
runbook with the scorecard), so that the page never quotes a number the results no longer hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ace_helpers.repro.badges import badge
from ace_helpers.repro.report import REPRODUCED
from ace_helpers.repro.scorecard import cause_text, headlines
from ace_helpers.repro.tables import markdown_table, md_cell


def _runs(heads: Sequence[Mapping[str, Any]]) -> str:
    """Each run that carries a headline, once, with its departures (``"the paper's protocol"`` for none)."""
    seen: dict[str, Any] = {}
    for h in heads:
        seen.setdefault(h.get("run") or h["section"], h.get("departures"))
    parts = []
    for run, deps in seen.items():
        said = "departures not listed" if deps is None else "the paper's protocol" if not deps else "; ".join(deps)
        parts.append(f"**{run}**: {said}")
    return "<br>".join(md_cell(p) for p in parts)


def coverage_markdown(rows: list[dict[str, Any]]) -> str:
    """One row per chapter: the runs its paper-claim headlines come from (with their departures), and each of its
    headlines that is not reproduced, with its badge and measured cause.  ``rows``: the scorecard's rows."""
    table = []
    for stem in sorted({r["chapter"] for r in rows if r.get("chapter")}):
        heads = list(headlines([r for r in rows if r.get("chapter") == stem]).values())
        if not heads:
            continue
        missed = [
            f"{badge(h['verdict'])} {md_cell(h['claim'])}" + (f": {md_cell(c)}" if (c := cause_text(h)) else "")
            for h in heads
            if h["verdict"] != REPRODUCED
        ]
        table.append((f"[{stem}](../notebooks/{stem}.ipynb)", _runs(heads), "<br>".join(missed) or "—"))
    return (
        markdown_table(
            (
                "chapter",
                "runs carrying the paper's claims, and how they depart from its protocol",
                "not reproduced as the paper states it, and why",
            ),
            table,
        )
        + "\n"
    )
