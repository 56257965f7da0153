"""Comparing cores across models: geometry (subspaces) versus statistics (coordinates).

Two cores can sit in nearly orthogonal subspaces (projector overlap ~ r/D, principal angles
near 90°) while their coordinates on the same inputs are almost perfectly correlated (CCA ~ 1):
the same algorithm in different coordinates.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from scipy import stats

from ace_helpers.method.core import _as_float64

Array = Any


#: Largest allowed ``max |QᵀQ − I|`` of a basis passed to :func:`projector_overlap` /
#: :func:`principal_angles` (float32 bases reach ~1e-6; a zero or repeated column gives ~1).
ORTHONORMAL_TOL = 1e-4


def _orthonormal(name: str, q: Array) -> np.ndarray:
    """``q`` as float64 after checking it has orthonormal columns (then re-orthonormalised by QR)."""
    a = _as_float64(name, q)
    if a.ndim != 2 or a.shape[1] > a.shape[0] or a.shape[1] == 0:
        raise ValueError(f"{name} must be a (D, r) basis with 1 <= r <= D; got shape {a.shape}")
    err = float(np.max(np.abs(a.T @ a - np.eye(a.shape[1]))))
    if err > ORTHONORMAL_TOL:
        raise ValueError(
            f"{name} does not have orthonormal columns: max |{name}ᵀ{name} − I| = {err:.3g} > {ORTHONORMAL_TOL:g} "
            f"(a zero, repeated or unnormalised column); orthonormalise it first, e.g. np.linalg.qr({name})[0]"
        )
    qq, _ = np.linalg.qr(a)  # removes the residual rounding error (within the tolerance above)
    return qq


def projector_overlap(qa: Array, qb: Array) -> float:
    """‖Qaᵀ Qb‖²_F / √(ra·rb) for bases Qa (D, ra), Qb (D, rb): 1 = same subspace, 0 = orthogonal.

    Random r-dimensional subspaces of R^D give about r/D.  The value lies in [0, 1] and is 1
    exactly when the two spans are equal (ra = rb and span(Qa) = span(Qb)).

    Raises:
        ValueError: a basis without orthonormal columns (``max |QᵀQ − I| >``
            :data:`ORTHONORMAL_TOL`: a zero, repeated or unnormalised column), or bases of
            different ambient dimensions D.
    """
    a, b = _orthonormal("Qa", qa), _orthonormal("Qb", qb)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bases live in different spaces: D={a.shape[0]} vs D={b.shape[0]}")
    return float(np.sum((a.T @ b) ** 2) / np.sqrt(a.shape[1] * b.shape[1]))


def principal_angles(qa: Array, qb: Array) -> np.ndarray:
    """Principal angles in degrees, ascending, between span(Qa) and span(Qb): (min(ra, rb),).

    Both bases must have orthonormal columns (``ValueError`` otherwise, as in :func:`projector_overlap`).
    """
    a, b = _orthonormal("Qa", qa), _orthonormal("Qb", qb)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bases live in different spaces: D={a.shape[0]} vs D={b.shape[0]}")
    cos = np.clip(np.linalg.svd(a.T @ b, compute_uv=False), -1.0, 1.0)
    return np.degrees(np.arccos(cos))


def canonical_correlations(caa: np.ndarray, cbb: np.ndarray, cab: np.ndarray, *, reg: float = 1e-8) -> np.ndarray:
    """Canonical correlations (descending, (min(a, b),)) from the covariances of two views: Caa (a, a), Cbb (b, b)
    and the cross-covariance Cab (a, b).  Whiten each view with the inverse Cholesky factor of its covariance
    (+ ``reg``·I) and take the singular values of the whitened cross-covariance, clipped to [0, 1]."""
    wa = np.linalg.inv(np.linalg.cholesky(caa + reg * np.eye(caa.shape[0])))
    wb = np.linalg.inv(np.linalg.cholesky(cbb + reg * np.eye(cbb.shape[0])))
    return np.clip(np.linalg.svd(wa @ cab @ wb.T, compute_uv=False), 0.0, 1.0)


def cca(za: Array, zb: Array, k: int | None = None, *, reg: float = 1e-8) -> np.ndarray:
    """Canonical correlations (descending) between views Za (N, a) and Zb (N, b) of the same N inputs.

    Closed form: centre, whiten each view with the inverse Cholesky factor of its covariance
    (+ ``reg``·I), take the singular values of the whitened cross-covariance.  ``k`` keeps the top k.
    Hand-written because ``sklearn.cross_decomposition.CCA`` fits its components iteratively (NIPALS,
    to a tolerance) and returns projections, not the exact canonical correlations compared here.
    """
    a, b = _as_float64("Za", za), _as_float64("Zb", zb)
    if a.ndim == 1:
        a = a[:, None]
    if b.ndim == 1:
        b = b[:, None]
    if a.shape[0] != b.shape[0] or a.shape[0] < 2:
        raise ValueError(f"Za and Zb must have the same number (>= 2) of rows; got {a.shape[0]} and {b.shape[0]}")
    n = a.shape[0]
    a = a - a.mean(axis=0)
    b = b - b.mean(axis=0)
    rho = canonical_correlations(a.T @ a / n, b.T @ b / n, a.T @ b / n, reg=reg)
    if k is not None:
        if not 1 <= k <= len(rho):
            raise ValueError(f"k={k!r} is not allowed: k must be in [1, {len(rho)}]")
        rho = rho[:k]
    return rho


def aligned_correlations(za: Array, zb: Array) -> tuple[float, float]:
    """(Spearman, Pearson) of two per-input scalar coordinates (N,), after sign alignment.

    A 1-D core's sign is arbitrary, so ``zb`` is negated first when their Pearson r is negative.

    Raises:
        ValueError: vectors of different lengths or fewer than 3 values, non-finite values, or
            a constant vector (its correlation is undefined).
    """
    a = _as_float64("za", za).reshape(-1)
    b = _as_float64("zb", zb).reshape(-1)
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"za and zb must be equal-length vectors of >= 3 values; got {a.size} and {b.size}")
    for name, v in (("za", a), ("zb", b)):  # (finite: checked by _as_float64)
        if np.ptp(v) == 0:
            raise ValueError(f"{name} is constant ({v[0]!r} for all {v.size} inputs): its correlation is undefined")
    pearson = float(np.corrcoef(a, b)[0, 1])
    if pearson < 0:
        b, pearson = -b, -pearson

    return float(stats.spearmanr(a, b).statistic), pearson


def aligned_spearman(za: Array, zb: Array) -> float:
    """Sign-aligned Spearman correlation of two per-input coordinates (N,)."""
    return aligned_correlations(za, zb)[0]


def weight_cosine(model_a: Any, model_b: Any) -> float:
    """Cosine similarity between two models' flattened, concatenated parameter vectors."""

    pa = [p.detach().double().reshape(-1) for p in model_a.parameters()]
    pb = [p.detach().double().reshape(-1) for p in model_b.parameters()]
    if [p.numel() for p in pa] != [p.numel() for p in pb]:
        raise ValueError("models have different parameter shapes; weight cosine needs the same architecture")
    va, vb = torch.cat(pa), torch.cat(pb)
    return float(va @ vb / (va.norm() * vb.norm()))
