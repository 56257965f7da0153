"""Naive alternatives to ACE, for comparison: top-variance (PCA) and top-sensitivity directions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ace_helpers.method.core import _as_float64, observability


def _top_eigvecs(a: np.ndarray, k: int) -> np.ndarray:
    lam, vec = np.linalg.eigh(0.5 * (a + a.T))
    return vec[:, np.argsort(lam)[::-1][:k]]


def pca_directions(h: Any, k: int) -> np.ndarray:
    """(D, k) top-k principal directions of activations H (N, D): the most *active* directions."""
    a = _as_float64("H", h)
    a = a - a.mean(axis=0)
    return _top_eigvecs(a.T @ a, k)


def jacobian_directions(j: Any, dim: int, k: int) -> np.ndarray:
    """(D, k) top-k eigen-directions of the Jacobian Gram of J ((N, K, D), (K, D) or (N, D)): the most *relevant*."""
    return _top_eigvecs(observability(j, dim), k)
