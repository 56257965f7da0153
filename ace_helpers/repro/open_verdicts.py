"""The open verdicts: every paper claim whose headline verdict is inconclusive, or fails for too few samples, with
what would settle it and what that costs.

:data:`SETTLE` holds, per claim id, the run or design that would settle the verdict and its cost in CPU-hours on the
book's reference machine (a 2-core x86-64 CPU, one thread per run), each an estimate scaled from a measured run named
in ``basis``.  :func:`open_rows` picks the open claims from the stored records (the scorecard's rows), so a verdict
that settles leaves the table by itself; :func:`missing` lists the open claims without an entry, which a test keeps
empty.  The reproducibility page includes :func:`table` (``book/open_verdicts_table.md``, written by the runbook).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ace_helpers.repro.report import INCONCLUSIVE
from ace_helpers.repro.scorecard import cause_text, headlines
from ace_helpers.repro.tables import markdown_table, md_cell


@dataclass(frozen=True)
class Settle:
    """What would settle an open verdict (``what``), its estimated cost (``cpu_hours``) and the measured run the
    estimate is scaled from (``basis``)."""

    what: str
    cpu_hours: float
    basis: str


_LONG_RUN = "the stored 20 000-epoch run: 0.86 CPU-hours per model (its manifests)"
_TRAINERS = "runs already stored: the trainers' comparison, 12 ensemble models to epoch 2000"

SETTLE: dict[str, Settle] = {
    "markov.necessary": Settle(
        "4× the test sequences (N_TEST = 12 000): the sampling error of the removed-core accuracy "
        "halves, and it now sits within 2 s.e. of the bound",
        0.3,
        "chapter 1 at book: 297 s on 2 workers",
    ),
    "modadd.r2_jump": Settle(
        "the same rule over the 12 models of the trainers' comparison: the long run's three models "
        "straddle R_h² = 0.9 one checkpoint after grokking",
        0.0,
        _TRAINERS,
    ),
    "modadd.invariant": Settle("as modadd.r2_jump: the same R_h² reading over the 12 stored models", 0.0, _TRAINERS),
    "inflation.grows": Settle("3 more models to epoch 20 000: model 0's late quartiles straddle the bound", 2.6, _LONG_RUN),
    "inflation.modes": Settle(
        "3 more models to epoch 20 000: model 0's late mode-count quartiles straddle the bound", 2.6, _LONG_RUN
    ),
    "scaling.p": Settle(
        "4× the seeds per prime (48) halve the interval's width; or primes above 101, where p ≫ p_crit",
        12.3,
        "the stored paper-settings p sweep: 84 runs, 4.1 CPU-hours",
    ),
    "sva.knob": Settle(
        "4× the prompts of the knob fit: gemma3-270m's R² interval straddles the bound",
        0.6,
        "chapter 5 at book: 738 s for four models",
    ),
    "sva.generation": Settle(
        "≥ 100 scored generations per model (64 samples per prompt and 6 prompts), judged on the "
        "Wilson interval; 8–18 are scored now",
        1.0,
        "chapter 5 at book: 738 s with 8 samples per prompt and 3 prompts",
    ),
}


def open_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline records (:func:`~ace_helpers.repro.scorecard.headlines`) that are inconclusive, or whose measured
    cause is too few samples, in scorecard order."""
    return [r for r in headlines(rows).values() if r["verdict"] == INCONCLUSIVE or r.get("cause_class") == "samples"]


def missing(rows: list[dict[str, Any]], settle: Mapping[str, Settle] = SETTLE) -> list[str]:
    """The open claims (:func:`open_rows`) with no entry in ``settle``."""
    return [r["id"] for r in open_rows(rows) if r["id"] not in settle]


def table(rows: list[dict[str, Any]], settle: Mapping[str, Settle] = SETTLE) -> str:
    """The open claims as a markdown table: id, verdict, measured cause, what would settle it, its CPU-hours, basis."""
    out = []
    for r in open_rows(rows):
        s = settle.get(r["id"])
        out.append(
            (
                f"`{r['id']}`",
                r["verdict"],
                md_cell(cause_text(r)) or "—",
                md_cell(s.what) if s else "**not costed**",
                f"{s.cpu_hours:g}" if s else "—",
                md_cell(s.basis) if s else "—",
            )
        )
    head = ("claim", "verdict", "measured cause", "what would settle it", "CPU-hours (estimate)", "scaled from")
    return (
        markdown_table(head, out)
        + f"\n\nIn all: {sum(settle[r['id']].cpu_hours for r in open_rows(rows) if r['id'] in settle):g} CPU-hours.\n"
    )
