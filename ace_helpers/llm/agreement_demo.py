"""The flip demo's statistics: the agreement score of each prompt and the paired tests between conditions.

The paper's flip demo (its subject–verb agreement figure, panel C) scores each of six prompts under
three conditions — the clean model (``base``), the core removed (``removed``) and the core flipped
(``flipped``) — by log(P(correct number) / max of the four verb probabilities), then compares the
conditions with a paired Wilcoxon signed-rank test per model and combines the models' p-values with
Fisher's method, for Base vs Removed, Base vs Flipped and Removed vs Flipped (:data:`COMPARISONS`).

The code release (``SVA_uni.py``, its ``paired_wilcoxon``) calls ``scipy.stats.wilcoxon`` with its
default, the two-sided test. The claim is directional (removal lowers the score, the flip lowers it
below removal), so the book judges it on the one-sided test (``alternative="greater"``: the first
condition of each pair scores higher) and reports the two-sided one beside it. With six prompts the
smallest one-sided p-value of one model is 1/64 ≈ 0.016 (two-sided 1/32).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import combine_pvalues, wilcoxon

#: The demo's conditions, in the order the figure shows them.
CONDITIONS = ("base", "removed", "flipped")
#: The paper's three comparisons ``(a, b)``; the one-sided test asks whether ``a`` scores higher than ``b``.
COMPARISONS = (("base", "removed"), ("base", "flipped"), ("removed", "flipped"))
#: The alternatives :func:`paired_wilcoxon_p` accepts: ``"greater"`` (ours, one-sided) and ``"two-sided"`` (the code release's).
ALTERNATIVES = ("greater", "two-sided")


def comparison_key(a: str, b: str) -> str:
    """``"a_vs_b"``: how a comparison is named in the results (``base_vs_flipped``)."""
    return f"{a}_vs_{b}"


#: The keys of :data:`COMPARISONS`: ``base_vs_removed``, ``base_vs_flipped``, ``removed_vs_flipped``.
COMPARISON_KEYS = tuple(comparison_key(a, b) for a, b in COMPARISONS)


def demo_scores(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """log(P(correct pair) / max of the four verb probabilities), per prompt: (N,).

    ``probs``: (N, 4) probabilities of is, are, was, were; ``labels``: (N,), 0 singular, 1 plural.
    The correct pair is {is, was} for singular and {are, were} for plural; 0 or above means the top
    verb has the right number.
    """
    probs, labels = np.asarray(probs, float), np.asarray(labels)
    if probs.ndim != 2 or probs.shape[1] != 4 or labels.shape != (probs.shape[0],):
        raise ValueError(f"need probs (N, 4) and labels (N,), got {probs.shape} and {labels.shape}")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"labels must be 0 (singular) or 1 (plural), got {sorted(set(labels.tolist()))}")
    correct = np.where(labels[:, None] == 1, probs[:, [1, 3]], probs[:, [0, 2]]).sum(1)
    return np.log(correct) - np.log(probs.max(1))


def paired_wilcoxon_p(a: np.ndarray, b: np.ndarray, alternative: str = "greater") -> float:
    """Paired Wilcoxon signed-rank p-value of ``a`` vs ``b`` (both (N,), paired by position).

    ``alternative="greater"``: one-sided, ``a`` tends to exceed ``b``; ``"two-sided"``: either way
    (``scipy.stats.wilcoxon``'s default, as the code release calls it). Zero differences are dropped
    (scipy's default); when every difference is zero there is no evidence either way and the p-value is 1.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative={alternative!r}; allowed: {list(ALTERNATIVES)}")
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError(f"need two non-empty paired score vectors of one shape (N,), got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("the scores hold a NaN or infinity (a verb probability of 0?)")
    if np.allclose(a - b, 0):
        return 1.0
    return float(wilcoxon(a, b, alternative=alternative).pvalue)


def demo_tests(scores: Mapping[str, np.ndarray], alternative: str = "greater") -> dict[str, float]:
    """One model's paired Wilcoxon p-values for each of :data:`COMPARISONS`: ``{"base_vs_removed": p, …}``.

    ``scores``: condition -> (N,) scores (:func:`demo_scores`) of the same N prompts; one-sided by default.
    """
    missing = [c for c in CONDITIONS if c not in scores]
    if missing:
        raise ValueError(f"scores lack the conditions {missing}; need {list(CONDITIONS)}")
    return {comparison_key(a, b): paired_wilcoxon_p(scores[a], scores[b], alternative) for a, b in COMPARISONS}


def fisher_p(pvalues: Sequence[float]) -> float:
    """Fisher's combination of independent p-values (one p-value is returned as it is)."""
    p = np.asarray(pvalues, float)
    if p.ndim != 1 or p.size == 0 or not ((p > 0) & (p <= 1)).all():
        raise ValueError(f"need one or more p-values in (0, 1], got {p.tolist()}")
    return float(combine_pvalues(p, method="fisher").pvalue)


@dataclass(frozen=True)
class DemoTests:
    """The flip demo's tests over several models, for one ``alternative``.

    ``per_model``: model -> comparison key -> p-value; ``combined``: comparison key -> Fisher-combined
    p-value over the models (in ``per_model``'s order).
    """

    alternative: str
    per_model: dict[str, dict[str, float]]
    combined: dict[str, float]

    def table(self) -> list[list[float]]:
        """(models, 3) per-model p-values, columns in :data:`COMPARISON_KEYS` order."""
        return [[row[k] for k in COMPARISON_KEYS] for row in self.per_model.values()]


def combined_demo_tests(scores: Mapping[str, Mapping[str, np.ndarray]], alternative: str = "greater") -> DemoTests:
    """:func:`demo_tests` per model and their Fisher combination over the models, for each comparison.

    ``scores``: model -> condition -> (N,) scores; every model needs all three conditions.
    """
    if not scores:
        raise ValueError("need the demo scores of at least one model")
    per_model = {name: demo_tests(s, alternative) for name, s in scores.items()}
    combined = {k: fisher_p([p[k] for p in per_model.values()]) for k in COMPARISON_KEYS}
    return DemoTests(alternative, per_model, combined)
