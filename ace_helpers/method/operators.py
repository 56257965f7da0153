"""Identifying the computation inside a core: linear operators and their spectra.

* :func:`fit_dynamics` — one-step least squares ``z_{t+1} ≈ A z_t`` in core coordinates
  (a one-step DMD), used for the Markov chains: eig(A) should be the chain's spectrum.
* :func:`fit_shift_operator` — the cyclic shift on class means, ``m[c] A ≈ m[(c+1) mod p]``,
  used for modular addition: eigenvalues on the unit circle mean a rotation (a clock);
  :func:`class_means` gives its input, the mean core coordinates of each answer class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from ace_helpers.method.core import _as_float64

Array = Any


def _r2(pred: np.ndarray, target: np.ndarray, center: np.ndarray) -> float:
    """Mean over columns of 1 − SS_res / SS_tot, SS_tot taken about ``center``."""
    ss_res = np.sum((target - pred) ** 2, axis=0)
    ss_tot = np.sum((target - center) ** 2, axis=0)
    return float(np.mean(1.0 - ss_res / np.maximum(ss_tot, 1e-300)))


@dataclass(frozen=True)
class DynamicsFit:
    """``z_{t+1} − μ' ≈ A (z_t − μ)``: operator A (r, r), its eigenvalues (r,), R² (mean over dims)."""

    operator: np.ndarray
    eigenvalues: np.ndarray
    r2: float


def fit_dynamics(z_now: Array, z_next: Array) -> DynamicsFit:
    """Least-squares linear dynamics between paired core coordinates.

    Args:
        z_now: (N, r) coordinates at step t.  z_next: (N, r) at step t + 1 (same rows).
    Each side is centred by its own mean, then ``Z_next ≈ Z_now Aᵀ`` is solved by OLS.
    """
    x, y = _as_float64("z_now", z_now), _as_float64("z_next", z_next)
    if x.ndim != 2 or x.shape != y.shape or x.shape[0] <= x.shape[1]:
        raise ValueError(f"z_now and z_next must be equal (N, r) arrays with N > r; got {x.shape}, {y.shape}")
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    at, *_ = np.linalg.lstsq(xc, yc, rcond=None)
    a = at.T
    return DynamicsFit(operator=a, eigenvalues=np.linalg.eigvals(a), r2=_r2(xc @ at, yc, 0.0))


@dataclass(frozen=True)
class ShiftFit:
    """Shift operator on class means in a k-dimensional reduced basis.

    Attributes:
        operator: (k, k) A with ``x̃[c] A ≈ x̃[c+1]``.
        eigenvalues: (k,) complex.
        r2: in-sample R² on the training pairs.
        r2_holdout: R² on the held-out block (``nan`` without a holdout).
        k: reduced dimension (singular values >= 1e-3·max, at most min(p − 1, r)).
    """

    operator: np.ndarray
    eigenvalues: np.ndarray
    r2: float
    r2_holdout: float
    k: int


def fit_shift_operator(class_means: Array, ridge: float = 0.0, holdout: int | None = None) -> ShiftFit:
    """Fit the cyclic shift ``m[c] A ≈ m[(c+1) mod p]`` on class means (p, r).

    The pairs ``c -> c+1`` for the last ``holdout`` classes (a block at the edge of the cycle)
    are held out.  Inputs and targets are centred with their training means, reduced to the k
    leading right singular directions of the centred training inputs, and A is solved by ridge
    regression (``ridge = 0``: ordinary least squares).  Held-out R² is taken about the
    training target mean (so predicting that mean scores 0).
    """
    m = _as_float64("class_means", class_means)
    if m.ndim != 2 or m.shape[0] < 3:
        raise ValueError(f"class_means must be (p, r) with p >= 3; got shape {m.shape}")
    p, r = m.shape
    if ridge < 0:
        raise ValueError(f"ridge={ridge!r} is not allowed: ridge must be >= 0")
    h = 0 if holdout is None else int(holdout)
    if not 0 <= h <= p - 3:
        raise ValueError(f"holdout={holdout!r} is not allowed: holdout must be in [0, {p - 3}] classes")
    x_all, y_all = m, np.roll(m, -1, axis=0)
    train = np.arange(p - h)
    test = np.arange(p - h, p)
    mu_x, mu_y = x_all[train].mean(axis=0), y_all[train].mean(axis=0)
    xc_train = x_all[train] - mu_x
    _, s, vt = np.linalg.svd(xc_train, full_matrices=False)
    k = int(min(np.sum(s >= 1e-3 * s[0]), p - 1, r)) if s[0] > 0 else 0
    if k == 0:
        raise ValueError("class means are all equal: there is nothing to fit a shift operator to")
    v = vt[:k].T
    xt, yt = xc_train @ v, (y_all[train] - mu_y) @ v
    a = np.linalg.solve(xt.T @ xt + ridge * np.eye(k), xt.T @ yt)
    r2 = _r2(xt @ a, yt, 0.0)
    r2_h = float("nan")
    if h:
        xh, yh = (x_all[test] - mu_x) @ v, (y_all[test] - mu_y) @ v
        r2_h = _r2(xh @ a, yh, 0.0)
    return ShiftFit(operator=a, eigenvalues=np.linalg.eigvals(a), r2=r2, r2_holdout=r2_h, k=k)


def near_unit_circle(eigenvalues: Array, eps: float) -> np.ndarray:
    """Boolean mask (k,): ``| |λ| − 1 | <= eps``."""
    lam = np.asarray(eigenvalues, dtype=np.complex128).reshape(-1)
    return np.abs(np.abs(lam) - 1.0) <= eps


def rotational_modes(eigenvalues: Array, p: int, eps: float | None = None) -> int:
    """Number of distinct folded frequency bins (out of ⌊p/2⌋ + 1) holding a near-unit eigenvalue.

    Bin of λ: ``k = round(arg λ · p / 2π) mod p`` folded to ``min(k, p − k)``; ``eps`` defaults
    to ``sin(π / p)``, the half-spacing of the p-th roots of unity.
    """
    if p < 2:
        raise ValueError(f"p={p!r} is not allowed: p must be an integer >= 2")
    eps = np.sin(np.pi / p) if eps is None else eps
    lam = np.asarray(eigenvalues, dtype=np.complex128).reshape(-1)
    lam = lam[near_unit_circle(lam, eps)]
    bins = np.mod(np.rint(np.angle(lam) * p / (2 * np.pi)).astype(int), p)
    return len(set(np.minimum(bins, p - bins).tolist()))


def match_eigenvalues(true: Array, fitted: Array) -> tuple[list[tuple[complex, complex]], float]:
    """Optimal one-to-one matching of each true eigenvalue to a distinct fitted one.

    Minimises the total distance (Hungarian algorithm) starting from the true set, so a spurious
    extra fitted eigenvalue is simply left out.  Returns ``(pairs, max |true − fitted|)``.
    """

    t = np.asarray(true, dtype=np.complex128).reshape(-1)
    f = np.asarray(fitted, dtype=np.complex128).reshape(-1)
    if t.size == 0 or f.size == 0:
        raise ValueError("match_eigenvalues needs at least one true and one fitted eigenvalue")
    cost = np.abs(t[:, None] - f[None, :])
    rows, cols = linear_sum_assignment(cost)
    pairs = [(complex(t[i]), complex(f[j])) for i, j in zip(rows, cols)]
    return pairs, float(cost[rows, cols].max())


def class_means(z: Array, labels: Array, p: int) -> np.ndarray:
    """(p, r) mean of the rows of z (N, r) for each answer class 0..p−1 (every class must occur).

    The input of :func:`fit_shift_operator` for a task whose answers are the classes of a cycle.
    """
    labels = np.asarray(labels).reshape(-1)
    counts = np.bincount(labels, minlength=p)
    if (counts == 0).any():
        missing = np.flatnonzero(counts == 0).tolist()
        raise ValueError(f"answer classes {missing} have no test example; use a larger test split")
    sums = np.zeros((p, z.shape[1]))
    np.add.at(sums, labels, z)
    return sums / counts[:, None]
