"""A chapter's claims table as a reader sees it: four short columns (claim, paper, ours, verdict badge), with our rule,
the paper's place, the measured cause of a failure and the claim's id folded under each claim.  Where the paper's
code release was rerun here, its own number stands under ours.

The paper's claims (one row per claim and run, the headline rows) are shown open; our own claims, the diagnoses and
the same claims measured again (per model, per run) sit in folded groups under it, each group's summary carrying its
verdict counts as badges, so that a failure inside a closed group is still seen.

``display(ClaimsView(claims))`` in a notebook records the table twice: as HTML, which the book renders, and as the
markdown pipe table of :meth:`~ace_helpers.repro.report.Claims.table`, which the tests read back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ace_helpers.repro.badges import badge, cell, counts_badges
from ace_helpers.repro.claims_markdown import claims_table
from ace_helpers.repro.plain import plain_value
from ace_helpers.repro.report import NOT_TESTED, Claim, Claims
from ace_helpers.repro.untested import ClaimRow

HEADER = ("claim", "paper", "ours", "verdict")
"""The columns of the HTML table (the rule and the details sit under the claim)."""

GROUPS = (
    ("paper", "The paper's claims"),
    ("ours", "Our own claims"),
    ("diagnosis", "Diagnoses (why a claim fails; never counted as a verdict)"),
    ("repeat", "The same claims on each model or run (evidence beside the rows above)"),
)
"""The groups of a claims table in page order, ``(key, title)``; the first non-empty group is shown open."""


def _details(parts: Sequence[tuple[str, str]]) -> str:
    items = "".join(f"<li><b>{name}:</b> {cell(text)}</li>" for name, text in parts if text)
    return f"<details><summary>rule and details</summary><ul>{items}</ul></details>" if items else ""


def _ours_cell(r: Claim) -> str:
    """Our measured cell, with the code release's own number, rerun here, under it where it was rerun."""
    if r.official is None:
        return cell(r.ours)
    return f'{cell(r.ours)}<br><span class="ace-official">official code, rerun here: {cell(plain_value(r.official))}</span>'


def _claim_row(r: Claim) -> str:
    cause = "" if r.passed else (r.known_gap or "")
    details = _details(
        [
            ("our rule", r.rule),
            ("where the paper says it", r.where),
            ("measured cause", cause),
            ("id", f"`{r.id}`" if r.id else ""),
        ]
    )
    return (
        f"<tr><td>{cell(r.claim)}{details}</td><td>{cell(r.paper)}</td><td>{_ours_cell(r)}</td>"
        f"<td>{badge(r.verdict, unexpected=r.unexpected)}</td></tr>"
    )


def _untested_row(r: ClaimRow) -> str:
    details = _details([("why not tested", r.why), ("our rule", r.rule), ("where the paper says it", r.where)])
    return (
        f"<tr><td>{cell(r.claim)}{details}</td><td>{cell(r.paper)}</td><td>{cell(r.ours)}</td><td>{badge(NOT_TESTED)}</td></tr>"
    )


def group_of(r: Claim) -> str:
    """The :data:`GROUPS` key of a claim row: a repeated paper claim (``headline`` False) is a "repeat"; else its
    kind ("paper", "ours", "diagnosis"; an unset kind counts as ours)."""
    if r.kind == "paper" and not r.headline:
        return "repeat"
    return r.kind if r.kind in ("paper", "diagnosis") else "ours"


def _table(rows: Sequence[str]) -> str:
    head = "".join(f"<th>{h}</th>" for h in HEADER)
    return f'<table class="ace-claims"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


class ClaimsView:
    """The claims of one run (``claims.rows``) and, when given, the claims it cannot test, for ``display``."""

    def __init__(self, claims: Claims, not_tested: Sequence[ClaimRow] = ()) -> None:
        self.claims, self.not_tested = claims, list(not_tested)

    def _repr_html_(self) -> str:
        groups: dict[str, list[tuple[str, str]]] = {key: [] for key, _ in GROUPS}  # (row HTML, verdict) per group
        for r in self.claims.rows:
            groups[group_of(r)].append((_claim_row(r), r.verdict))
        groups["paper"] += [(_untested_row(r), NOT_TESTED) for r in self.not_tested]
        parts: list[str] = []
        for key, title in GROUPS:
            rows = [html for html, _ in groups[key]]
            if not rows:
                continue
            if not parts:  # the first group with rows is shown open
                parts.append(_table(rows))
            else:
                counts = Counter(verdict for _, verdict in groups[key])
                parts.append(
                    f'<details class="ace-claims-group"><summary>{title} ({len(rows)}): {counts_badges(counts)}</summary>'
                    f"{_table(rows)}</details>"
                )
        return "".join(parts)

    def _repr_markdown_(self) -> str:
        return claims_table(self.claims, self.not_tested)


__all__ = ["GROUPS", "HEADER", "ClaimsView", "group_of"]
