"""Statistics for reading cores: ROC-AUC, affine fits, paired and combined tests, permutation p-values.

Method layer: plain numpy/scipy functions of arrays; nothing here knows about a chapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import combine_pvalues, rankdata, wilcoxon


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC-AUC of ``scores`` (N,) for binary ``labels`` (N,), 1 = positive; ties count one half.

    The Mann-Whitney rank formula.  ``sklearn.metrics.roc_auc_score`` (trapezoids under the ROC curve)
    gives the same value up to the last bits only (bit for bit on 127 of 200 random inputs with ties,
    measured 2026-12-05), and the book's stored numbers are this formula's, so it stays.
    """

    scores, labels = np.asarray(scores, float), np.asarray(labels).astype(bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("roc_auc needs both classes among the labels")
    ranks = rankdata(scores)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass
class KnobFit:
    """Affine fit m ≈ slope·z + intercept of a behaviour ``m`` on a core coordinate ``z``, with R²."""

    slope: float
    intercept: float
    r2: float
    z: np.ndarray
    m: np.ndarray


def knob_fit(z: np.ndarray, m: np.ndarray) -> KnobFit:
    """Least-squares affine fit of ``m`` (N,) on ``z`` (N,), with R² (1 − residual / total sum of squares).

    ``scipy.stats.linregress`` fits the same line through moment sums and differs in the last bits (on
    every one of 200 random inputs, measured 2026-12-05); the stored numbers are this fit's, so it stays.
    """
    z, m = np.asarray(z, float), np.asarray(m, float)
    slope, intercept = np.polyfit(z, m, 1)
    resid = m - (slope * z + intercept)
    r2 = 1.0 - float(resid @ resid) / float(((m - m.mean()) ** 2).sum())
    return KnobFit(float(slope), float(intercept), r2, z, m)


def wilcoxon_greater(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided paired Wilcoxon signed-rank p-value of ``a > b``; 1.0 when ``a`` and ``b`` are all equal."""

    a, b = np.asarray(a), np.asarray(b)
    if np.allclose(a - b, 0):
        return 1.0
    return float(wilcoxon(a, b, alternative="greater").pvalue)


def fisher_combine(pvalues: Sequence[float]) -> float:
    """Fisher's combined p-value of independent tests."""

    return float(combine_pvalues(list(pvalues), method="fisher").pvalue)


def permutation_p_value(za: np.ndarray, zb: np.ndarray, *, n_permutations: int = 10000, seed: int = 0) -> float:
    """P-value of the sign-aligned Spearman ``|ρ|`` of ``za`` vs ``zb`` under random pairings.

    Sign alignment makes the statistic ``|ρ|`` (both signs count), so the null statistic is the
    ``|ρ|`` of ``za`` against a permutation of ``zb``. Returns (1 + #{null ≥ observed}) / (1 + n).
    Hand-written, like :func:`stratified_permutations` and :func:`correlation_null`, because
    ``scipy.stats.permutation_test`` cannot permute within strata, and its draws are its own: these take
    the book's seeds and stored numbers, and compute all permutations in one matrix product.
    """

    ra, rb = rankdata(za), rankdata(zb)
    ra, rb = (ra - ra.mean()) / np.linalg.norm(ra - ra.mean()), (rb - rb.mean()) / np.linalg.norm(rb - rb.mean())
    observed = abs(float(ra @ rb))
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, n_permutations, 1000):
        k = min(1000, n_permutations - start)
        perms = np.argsort(rng.random((k, rb.size)), axis=1)
        exceed += int((np.abs(rb[perms] @ ra) >= observed - 1e-12).sum())
    return (1 + exceed) / (1 + n_permutations)


def stratified_permutations(strata: np.ndarray, n_permutations: int, seed: int = 0) -> np.ndarray:
    """(n_permutations, N) index arrays, each a random permutation of 0..N−1 **within** each stratum.

    ``strata`` (N,): any labels (e.g. the number class of each prompt). Row ``k`` maps position
    ``i`` to a position of the same stratum, so a statistic recomputed on ``y[perms[k]]`` keeps
    everything that the strata alone explain (a label-preserving null).
    """
    strata = np.asarray(strata)
    rng = np.random.default_rng(seed)
    out = np.tile(np.arange(strata.size), (n_permutations, 1))
    for value in np.unique(strata):
        idx = np.flatnonzero(strata == value)
        order = np.argsort(rng.random((n_permutations, idx.size)), axis=1)
        out[:, idx] = idx[order]
    return out


def _standardise(x: np.ndarray, rank: bool) -> np.ndarray:

    x = rankdata(x) if rank else np.asarray(x, float)
    x = x - x.mean()
    norm = np.linalg.norm(x)
    if norm == 0:
        raise ValueError("a constant vector has no correlation with anything")
    return x / norm


def correlation_null(
    x: np.ndarray,
    y: np.ndarray,
    *,
    rank: bool = False,
    n_permutations: int = 10000,
    seed: int = 0,
    strata: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """(observed correlation of ``x`` and ``y`` (N,), (n_permutations,) null correlations of ``x`` with permuted ``y``).

    Pearson, or Spearman with ``rank``; ``y`` is permuted freely, or within each value of
    ``strata`` (N,) (:func:`stratified_permutations`), which keeps the part of the correlation that
    the strata explain (for example two coordinates that both separate two classes).
    """
    a, b = _standardise(x, rank), _standardise(y, rank)
    groups = np.zeros(a.size, int) if strata is None else np.asarray(strata)
    null = np.empty(n_permutations)
    for start in range(0, n_permutations, 1000):
        k = min(1000, n_permutations - start)
        perms = stratified_permutations(groups, k, seed=seed + start)
        null[start : start + k] = b[perms] @ a
    return float(a @ b), null


def permutation_p(observed: float, null: np.ndarray, *, alternative: str = "greater") -> float:
    """(1 + #{null ≥ observed}) / (1 + n): ``alternative`` ``"greater"`` compares values, ``"abs"`` magnitudes."""
    if alternative not in ("greater", "abs"):
        raise ValueError(f"alternative={alternative!r} is not allowed: use 'greater' or 'abs'")
    null = np.abs(null) if alternative == "abs" else np.asarray(null)
    observed = abs(observed) if alternative == "abs" else observed
    return (1 + int((null >= observed - 1e-12).sum())) / (1 + null.size)


def r2_interval(r2: float, n: int, z: float = 2.0) -> list[float]:
    """``[r2 − z·se, r2 + z·se]``: an R² of one predictor on ``n`` points with its large-sample standard error
    se = √(4R²(1 − R²)²/n) (Olkin and Finn), the noise against which a threshold on it is read."""
    se = float(np.sqrt(4 * r2 * (1 - r2) ** 2 / max(n, 1)))
    return [r2 - z * se, r2 + z * se]
