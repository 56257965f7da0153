"""How chapter 3 reads a per-model quantity that fluctuates from checkpoint to checkpoint (a window of the run, not its
last checkpoint), and the measured cause of each paper claim a full run does not reproduce."""

from __future__ import annotations

from typing import Any

import numpy as np

from ace_helpers.chapters.modadd.analysis import ArmResult
from ace_helpers.repro.report import Claims


#: A per-model rule on a quantity that fluctuates from checkpoint to checkpoint reads the checkpoints of the last
#: WINDOW share of the run (in the paper's 20 000-epoch run: epochs 15 000–20 000, 11 checkpoints), not the last alone.
WINDOW = 0.25


def window_mask(epochs: np.ndarray) -> np.ndarray:
    """(C,) mask of the checkpoints in the last :data:`WINDOW` share of the run."""
    return np.asarray(epochs) >= (1 - WINDOW) * float(np.max(epochs))


def window_states(values: np.ndarray, epochs: np.ndarray, threshold: float) -> tuple[list[str], list[float]]:
    """Per model, whether ``values`` (M, C) over the last :data:`WINDOW` share of the run is ≥ ``threshold``: ``"hold"``
    when its lower quartile is, ``"fail"`` when its upper quartile is not, else ``"undecided"`` (the threshold lies
    within the window's own spread); with each model's window median."""
    w = np.asarray(values, dtype=float)[:, window_mask(epochs)]
    q25, med, q75 = np.percentile(w, [25, 50, 75], axis=1)
    states = ["hold" if lo >= threshold else "fail" if hi < threshold else "undecided" for lo, hi in zip(q25, q75)]
    return states, med.tolist()


def judge_window(claims: Claims, states: list[str], arm: ArmResult, key: str, threshold: float, what: str) -> None:
    """The last row is inconclusive, with its measured cause, when no model fails outright and some are undecided."""
    row = claims.rows[-1]
    if not row.passed and "fail" not in states and "undecided" in states:
        row.inconclusive, row.partly = True, False
        m = states.index("undecided")
        mask = window_mask(arm.epochs)
        lo, hi = np.percentile(np.asarray(arm[key], dtype=float)[m, mask], [25, 75])
        row.cause = (f"model {m}'s {what} over its last {int(mask.sum())} checkpoints has quartiles {lo:g}–{hi:g}, "
                     f"around the bound {threshold:g}")
        row.cause_class = "samples"


def span(values: Any, digits: int = 1) -> str:
    vals = [float(v) for v in values]
    return f"{min(vals):.{digits}f}–{max(vals):.{digits}f}"


def add_causes(claims: Claims) -> None:
    """The measured cause, in one sentence, of each of the chapter's paper claims that a full run does not reproduce."""
    for row in claims.rows:
        if row.passed or row.cause or not row.headline or row.per_seed is None or row.known_gap is None:
            continue
        if row.id == "inflation.no_wd":
            row.cause = (f"without weight decay the core ends at {span(row.per_seed)}× its grokking size, in one "
                         "20 000-epoch sample of our trainer")
            row.cause_class = "samples"
        elif row.id == "inflation.no_wd_modes":
            row.cause = (f"without weight decay the modes end at {span(row.per_seed)}× their count at grokking, in one "
                         "20 000-epoch sample of our trainer")
            row.cause_class = "samples"
        elif row.id == "inflation.redistribution" and isinstance(row.value, list) and len(row.value) == 2:
            row.cause = (f"the unembedding's power spreads over {span(row.value[1])} effective harmonics, the "
                         f"embedding's over {span(row.value[0])}; the paper names neither weight")
            row.cause_class = "as-stated"
        elif row.id == "inflation.sufficient_flat":
            row.cause = (f"the sufficient dim grows {span(row.per_seed)}× after grokking in our bf16 ensemble run, "
                         "at a 1 % keep tolerance too")
            row.cause_class = "ours"
