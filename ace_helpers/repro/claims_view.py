"""A chapter's claims table as a reader sees it: four short columns (claim, paper, ours, verdict badge), with our rule,
the paper's place, the measured cause of a failure and the claim's id folded under each claim.

``display(ClaimsView(claims))`` in a notebook records the table twice: as HTML, which the book renders, and as the
markdown pipe table of :meth:`~ace_helpers.repro.report.Claims.table`, which the tests read back.
"""

from __future__ import annotations

from collections.abc import Sequence

from ace_helpers.repro.badges import badge, cell
from ace_helpers.repro.report import NOT_TESTED, Claim, ClaimRow, Claims, claims_table

HEADER = ("claim", "paper", "ours", "verdict")
"""The columns of the HTML table (the rule and the details sit under the claim)."""


def _details(parts: Sequence[tuple[str, str]]) -> str:
    items = "".join(f"<li><b>{name}:</b> {cell(text)}</li>" for name, text in parts if text)
    return f"<details><summary>rule and details</summary><ul>{items}</ul></details>" if items else ""


def _claim_row(r: Claim) -> str:
    cause = "" if r.passed else (r.known_gap or "")
    details = _details([("our rule", r.rule), ("where the paper says it", r.where), ("measured cause", cause),
                        ("id", f"`{r.id}`" if r.id else "")])
    return (f"<tr><td>{cell(r.claim)}{details}</td><td>{cell(r.paper)}</td><td>{cell(r.ours)}</td>"
            f"<td>{badge(r.verdict, unexpected=r.unexpected)}</td></tr>")


def _untested_row(r: ClaimRow) -> str:
    details = _details([("why not tested", r.why), ("our rule", r.rule), ("where the paper says it", r.where)])
    return f"<tr><td>{cell(r.claim)}{details}</td><td>{cell(r.paper)}</td><td>{cell(r.ours)}</td><td>{badge(NOT_TESTED)}</td></tr>"


class ClaimsView:
    """The claims of one run (``claims.rows``) and, when given, the claims it cannot test, for ``display``."""

    def __init__(self, claims: Claims, not_tested: Sequence[ClaimRow] = ()) -> None:
        self.claims, self.not_tested = claims, list(not_tested)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in HEADER)
        body = [_claim_row(r) for r in self.claims.rows] + [_untested_row(r) for r in self.not_tested]
        return f'<table class="ace-claims"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'

    def _repr_markdown_(self) -> str:
        return claims_table(self.claims, self.not_tested)


__all__ = ["HEADER", "ClaimsView"]
