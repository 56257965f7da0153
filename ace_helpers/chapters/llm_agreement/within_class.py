"""Chapter 5 statistics within each number class: the knob fit and the cross-model alignment.

Both the core coordinate z and the margin m separate singular from plural prompts, so on the pooled
test set any two of them correlate just because of the label: a pooled R² or Spearman restates that
both separate the classes. Here each is also computed **within** each class (singular, plural),
and every p-value comes from a **label-preserving** null that permutes within each class
(:func:`ace_helpers.method.stats.correlation_null` with ``strata``), which keeps what the label alone
explains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ace_helpers.method import stats
from ace_helpers.method.compare import aligned_correlations

CLASSES = ("singular", "plural")
"""Number classes, in label order (0 = singular, 1 = plural)."""


def knob_tests(z: np.ndarray, m: np.ndarray, labels: np.ndarray, *, n_permutations: int = 10000, seed: int = 0) -> dict[str, float]:
    """The knob fit m ≈ a·z + b pooled and within each class, with label-preserving permutation p-values.

    Args:
        z: (N,) core coordinates; m: (N,) margins; labels: (N,) 1 = plural.

    Returns:
        ``r2`` (pooled), ``r2_label_null`` (median pooled R² when z is permuted within each class:
        what the label alone gives), ``p_label_preserving`` (pooled R² against that null), and per
        class ``c`` in :data:`CLASSES`: ``r2_<c>``, ``r_<c>`` (the within-class correlation, signed so
        that positive means the pooled slope's direction) and ``p_<c>`` (one-sided, within-class
        permutations of z).
    """
    z, m, labels = np.asarray(z, float), np.asarray(m, float), np.asarray(labels)
    r_pooled, null = stats.correlation_null(z, m, n_permutations=n_permutations, seed=seed, strata=labels)
    sign = 1.0 if r_pooled >= 0 else -1.0
    out = {"r2": r_pooled**2, "r2_label_null": float(np.median(null**2)),
           "p_label_preserving": stats.permutation_p(r_pooled**2, null**2)}  # fmt: skip
    for value, name in enumerate(CLASSES):
        keep = labels == value
        r, rnull = stats.correlation_null(z[keep], m[keep], n_permutations=n_permutations, seed=seed + 1 + value)
        out[f"r2_{name}"] = r**2
        out[f"r_{name}"] = sign * r
        out[f"p_{name}"] = stats.permutation_p(sign * r, sign * rnull)
    return out


def pairwise_alignment(
    coords: Mapping[str, np.ndarray], labels: np.ndarray | None = None, *, n_permutations: int = 10000, seed: int = 0
) -> list[dict[str, Any]]:
    """Sign-aligned Spearman / Pearson of per-prompt core coordinates for every pair of models.

    Per pair: ``spearman``, ``pearson`` (signed by the Pearson sign, as the official code release
    aligns), ``p_value`` (random pairings of the prompts). With ``labels`` (N,) also
    ``p_label_preserving`` (pooled ``|ρ|`` against pairings within each class), ``label_null`` (the
    median ``|ρ|`` of that null), and per class ``c``: ``spearman_<c>`` (signed by the pooled alignment)
    and ``p_<c>`` (one-sided, within-class pairings).
    """

    names = list(coords)
    rows = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            za, zb = np.asarray(coords[names[i]], float), np.asarray(coords[names[j]], float)
            rho, r = aligned_correlations(za, zb)
            p = stats.permutation_p_value(za, zb, n_permutations=n_permutations, seed=seed)
            row = {"a": names[i], "b": names[j], "spearman": rho, "pearson": r, "p_value": p}
            if labels is not None:
                row.update(_within_class_alignment(za, zb, np.asarray(labels), n_permutations, seed))
            rows.append(row)
    return rows


def _within_class_alignment(za: np.ndarray, zb: np.ndarray, labels: np.ndarray, n: int, seed: int) -> dict[str, float]:
    sign = 1.0 if np.corrcoef(za, zb)[0, 1] >= 0 else -1.0
    rho, null = stats.correlation_null(za, zb, rank=True, n_permutations=n, seed=seed, strata=labels)
    out = {"p_label_preserving": stats.permutation_p(rho, null, alternative="abs"),
           "label_null": float(np.median(np.abs(null)))}  # fmt: skip
    for value, name in enumerate(CLASSES):
        keep = labels == value
        rc, rnull = stats.correlation_null(za[keep], zb[keep], rank=True, n_permutations=n, seed=seed + 1 + value)
        out[f"spearman_{name}"] = sign * rc
        out[f"p_{name}"] = stats.permutation_p(sign * rc, sign * rnull)
    return out


def pair_key(row: Mapping[str, Any]) -> str:
    """``"<a>~<b>"``: the key of a model pair in ``results.json``."""
    return f"{row['a']}~{row['b']}"


PAIR_FIELDS = ("spearman", "pearson", "p_value", "p_label_preserving", "label_null", "spearman_singular", "p_singular",
               "spearman_plural", "p_plural")  # fmt: skip
"""Fields of a pair stored as ``pairwise_<field>: {"<a>~<b>": value}`` in ``results.json``."""


def flat_pairs(pairs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``pairwise_<field>`` entries for :data:`PAIR_FIELDS` (fields a pair lacks are left out)."""
    return {f"pairwise_{f}": {pair_key(p): p[f] for p in pairs if f in p} for f in PAIR_FIELDS}
