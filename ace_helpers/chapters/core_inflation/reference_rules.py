"""Chapter 3's rules on the dimension-matched reference (ours, beyond the paper), as data.

A model retrained here from the stored run's setting groks when the stored model 0 does, and at each reference epoch
the modes of random subspaces of the core's own dimension are counted beside the core's
(:func:`~ace_helpers.chapters.modadd.reference.reference_rows`).  At grokking the core holds more modes than random
subspaces of its dimension; after the inflation random subspaces hold nearly as many, so there Fig. 2D's count is
mostly what the core's dimension allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd.analysis import GrokRun, grok_epoch
from ace_helpers.chapters.modadd.reference import RESTATES
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import INTERVAL, ONE, Comparison, Measured, Rule, judge_all
from ace_helpers.repro.verdicts import bootstrap_interval

OURS = "ours.core_inflation."
WHERE = "ours (beyond the paper: a dimension-matched reference for Fig. 2D)"
OBSERVED = "a model retrained from the stored paper-preset run's setting (its model 0), at grokking and after the inflation"


@dataclass(frozen=True)
class ReferenceRun:
    """What the rules read: the reference artifact's arrays (``ref.arrays``), the stored long run and the
    reference rows (:func:`~ace_helpers.chapters.modadd.reference.reference_rows`), the first at grokking."""

    ref: Any
    lrun: GrokRun
    rows: Sequence[Mapping[str, Any]]


def _ratio(row: Mapping[str, Any]) -> float:
    """The median random subspace's modes ÷ the core's."""
    return round(float(np.median(row["random"])) / max(row["ace"], 1), 3)


def _interval(row: Mapping[str, Any]) -> list[float]:
    """The ratio's 90 % percentile-bootstrap interval over the random draws."""
    return list(bootstrap_interval(np.asarray(row["random"], float), lambda v: float(np.median(v)) / max(row["ace"], 1), seed=0))


def _grok(r: ReferenceRun, cfg: Any) -> Measured:
    mine = grok_epoch(r.ref.arrays["wd/epochs"], r.ref.arrays["wd/test_acc"])
    stored = grok_epoch(r.lrun.wd.epochs, r.lrun.wd["test_acc"][:1])
    return Measured(
        {"retrained grok epoch − stored model 0's": float("inf") if mine is None or stored is None else mine - stored},
        ours=[mine, stored],
    )


def _modes(last: bool):
    def measure(r: ReferenceRun, cfg: Any) -> Measured | None:
        row = r.rows[-1] if last else r.rows[0]
        if last and row is r.rows[0]:
            return None  # one reference epoch: nothing after the inflation
        return Measured(
            {"median random modes ÷ the core's": _interval(row)},
            value=_ratio(row),
            ours=[row["ace"], float(np.median(row["random"])), _ratio(row)],
            context={"epoch": row["epoch"], "dim": row["dim"], "draws": len(row["random"])},
        )

    measure.__qualname__ = measure.__name__ = f"modes[{'after the inflation' if last else 'at grokking'}]"
    return measure


SPECS: tuple[Rule, ...] = (
    Rule(
        OURS + "reference_grok_epoch",
        "the retrained model groks when the stored model 0 does (first checkpoint with test acc ≥ 0.99: retrained, stored)",
        "–",
        "ours (reproducibility)",
        OBSERVED,
        (Comparison("retrained grok epoch − stored model 0's", "==", 0, over=ONE),),
        "the same grok epoch; the numbers themselves differ in the last digits from epoch 0 on (other CPU arithmetic than "
        "the machine that trained the stored run), so the runs are siblings, not copies",
        _grok,
        {"retrained grok epoch − stored model 0's": 300.0},
    ),
    Rule(
        OURS + "reference_core_beats_random_at_grok",
        "at grokking (epoch {epoch}) the core holds more modes than random "
        "subspaces of its dimension (d = {dim}: core, random median, ratio)",
        "–",
        WHERE,
        OBSERVED,
        (Comparison("median random modes ÷ the core's", "<", RESTATES, over=INTERVAL),),
        "median over {draws} random orthonormal d-dimensional subspaces of the same activations, same OLS fit, < {t0} × "
        "the core's count (ours)",
        _modes(last=False),
        {"median random modes ÷ the core's": [0.9, 1.0]},
    ),
    Rule(
        OURS + "reference_random_matches_after_inflation",
        "after the inflation (epoch {epoch}) random subspaces of the "
        "core's dimension hold nearly as many modes (d = {dim}: core, random median, ratio)",
        "–",
        WHERE,
        OBSERVED,
        (Comparison("median random modes ÷ the core's", ">=", RESTATES, over=INTERVAL),),
        "the same median ≥ {t0} × the core's count (ours): the count is then mostly what a subspace of that dimension "
        "holds in these activations, not a property of the core",
        _modes(last=True),
        {"median random modes ÷ the core's": [0.2, 0.3]},
    ),
)


def reference_claims(ref: Any, lrun: GrokRun, rows: Sequence[Mapping[str, Any]]) -> Claims:
    """The rules of :data:`SPECS` on the reference ``ref``, the stored long run ``lrun`` and the reference ``rows``
    (:func:`~ace_helpers.chapters.modadd.reference.reference_rows` at each reference epoch's own core dim, the first at
    grokking, the last after the inflation)."""
    return judge_all(SPECS, ReferenceRun(ref, lrun, rows), None, lambda key: None)
