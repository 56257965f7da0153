"""Stitching two models through a subspace: run model B with its subspace coordinates replaced by model A's.

A *chart* is an r-dimensional subspace of a model's activation space with an origin: basis Q
(D, r) with orthonormal columns and mean μ (D,); its coordinates are ``z = Qᵀ(h − μ)``.  Given a
chart of model A and one of model B at the same hook point and the same inputs, a linear map
``z_B ≈ z_A W + c`` (:func:`fit_linear_map`, least squares with a small ridge) carries A's
coordinates into B's.  The stitched model B runs with

    h_B  ->  h_B − Q_B Q_Bᵀ (h_B − μ_B) + Q_B ẑ,      ẑ = z_A W + c,

so the part of B's activation outside its chart is kept and only the chart's coordinates come
from A (:meth:`Chart.replace`).  The chart may be an ACE core (:func:`core_chart`), a random
subspace of the same rank (:func:`random_chart`) or the whole space (:func:`full_chart`, Q = I:
the whole activation of B is replaced by a full-rank linear image of A's).

The edit is applied inside B through nnsight (:func:`ace_helpers.method.interventions.run_with_edit`),
at every position or at chosen ones, in batches (:func:`stitched_predictions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ace_helpers.method.core import Core, _as_float64
from ace_helpers.method.interventions import Positions, run_with_edit


@dataclass(frozen=True)
class Chart:
    """A subspace with an origin: basis (D, r) with orthonormal columns and mean (D,)."""

    basis: np.ndarray
    mean: np.ndarray

    @property
    def rank(self) -> int:
        """r, the number of coordinates."""
        return int(self.basis.shape[1])

    @property
    def dim(self) -> int:
        """D, the activation dimension."""
        return int(self.basis.shape[0])

    def coords(self, h: Any) -> np.ndarray:
        """Coordinates ``Qᵀ(h − μ)``: (..., D) -> (..., r), float64."""
        a = _as_float64("h", h.detach().cpu().numpy() if hasattr(h, "detach") else h)
        if a.shape[-1] != self.dim:
            raise ValueError(f"activations have shape {a.shape}: the last dimension must be the chart's D={self.dim}")
        return (a - self.mean) @ self.basis

    def replace(self, h: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``h − QQᵀ(h − μ) + Q z``: h (..., D) with its chart coordinates set to z (..., r); torch, h's dtype."""
        q = torch.as_tensor(self.basis, dtype=h.dtype, device=h.device)
        mu = torch.as_tensor(self.mean, dtype=h.dtype, device=h.device)
        z = torch.as_tensor(z, dtype=h.dtype, device=h.device)
        if z.shape != (*h.shape[:-1], self.rank):
            raise ValueError(f"new coordinates have shape {tuple(z.shape)}; expected {(*h.shape[:-1], self.rank)}")
        return h - ((h - mu) @ q) @ q.T + z @ q.T


def _check_rank(r: int, dim: int) -> int:
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 1 <= r <= dim:
        raise ValueError(f"rank={r!r} is not allowed: rank must be an integer in [1, {dim}]")
    return int(r)


def core_chart(core: Core, rank: int | None = None) -> Chart:
    """The chart of the first ``rank`` balanced directions of ``core`` (default: its rank) about its mean."""
    r = core.rank if rank is None else _check_rank(rank, core.dim)
    return Chart(np.array(core.full_basis[:, :r], dtype=np.float64), np.array(core.mean, dtype=np.float64))


def random_chart(dim: int, rank: int, mean: Any, seed: int) -> Chart:
    """A uniformly random r-dimensional subspace of R^D (QR of a Gaussian matrix, ``seed``) about ``mean``."""
    r = _check_rank(rank, dim)
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, r)))
    return Chart(q, _as_float64("mean", mean).reshape(dim))


def full_chart(mean: Any) -> Chart:
    """The whole space (Q = I) about ``mean`` (D,): replacing its coordinates replaces the activation."""
    mu = _as_float64("mean", mean).reshape(-1)
    return Chart(np.eye(mu.size), mu)


@dataclass(frozen=True)
class LinearMap:
    """``z_B = z_A W + c``: W (a, b), c (b,)."""

    weight: np.ndarray
    bias: np.ndarray

    def __call__(self, z: Any) -> np.ndarray:
        """(..., a) -> (..., b), float64."""
        return _as_float64("z", z) @ self.weight + self.bias

    def then(self, other: LinearMap) -> LinearMap:
        """The composition ``other(self(z))``."""
        return LinearMap(self.weight @ other.weight, self.bias @ other.weight + other.bias)


def identity_map(rank: int) -> LinearMap:
    """The unmapped swap: ``z_B = z_A`` (rank r to rank r)."""
    return LinearMap(np.eye(rank), np.zeros(rank))


def fit_linear_map(za: Any, zb: Any, *, ridge: float = 1e-6) -> LinearMap:
    """Least-squares map with intercept from Za (N, a) to Zb (N, b) on the same N inputs.

    ``ridge`` is relative: the penalty is ``ridge · tr(Cov_A)/a · ‖W‖²`` on the centred problem
    (scale-free; 1e-6 is plain least squares up to rounding).
    """
    a, b = _as_float64("Za", za), _as_float64("Zb", zb)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0] or a.shape[0] < 2:
        raise ValueError(f"Za and Zb must be (N, a) and (N, b) with the same N >= 2; got {a.shape} and {b.shape}")
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge={ridge!r} is not allowed: ridge must be a finite number >= 0")
    ma, mb = a.mean(axis=0), b.mean(axis=0)
    ac, bc = a - ma, b - mb
    gram = ac.T @ ac
    lam = ridge * max(float(np.trace(gram)) / a.shape[1], 1e-300)
    w = np.linalg.solve(gram + lam * np.eye(a.shape[1]), ac.T @ bc)
    return LinearMap(w, mb - ma @ w)


def map_r2(fit: LinearMap, za: Any, zb: Any) -> float:
    """Fraction of Zb's total variance that ``fit(Za)`` explains: ``1 − Σ‖zb − ẑ‖² / Σ‖zb − z̄b‖²``."""
    b = _as_float64("Zb", zb)
    resid = b - fit(za)
    return float(1.0 - np.sum(resid**2) / np.sum((b - b.mean(axis=0)) ** 2))


def stitched_predictions(
    model: Any,
    inputs: torch.Tensor,
    module: str,
    chart: Chart,
    z_new: np.ndarray | None,
    *,
    positions: Positions = None,
    batch_size: int = 512,
) -> torch.Tensor:
    """Argmax predictions of ``model`` (nnsight-wrapped) with ``chart``'s coordinates at ``module`` set to ``z_new``.

    Args:
        inputs: (N, T) long.
        z_new: new coordinates for each input row, shaped like the selected slice with last
            dimension r: (N, T, r) for ``positions=None``, (N, r) for an int position;
            ``None`` runs the clean model.

    Returns:
        (N, T) long predictions (all positions, whatever ``positions`` edits).
    """
    preds = []
    for start in range(0, inputs.shape[0], batch_size):
        x = inputs[start : start + batch_size]
        if z_new is None:
            fn = None
        else:
            z = torch.as_tensor(z_new[start : start + batch_size])
            fn = lambda h, z=z: chart.replace(h, z)
        preds.append(run_with_edit(model, x, module, fn, positions=positions).argmax(-1))
    return torch.cat(preds)


def scores(
    preds: torch.Tensor, targets: torch.Tensor, reference: torch.Tensor, positions: Positions = None
) -> tuple[float, float]:
    """(accuracy against ``targets``, agreement with ``reference`` predictions), both (N, T), at ``positions``."""
    if positions is not None:
        preds, targets, reference = (t[:, positions] for t in (preds, targets, reference))
    return float((preds == targets).double().mean()), float((preds == reference).double().mean())


def crossed_order(n: int, seed: int) -> np.ndarray:
    """A permutation of range(n) with no fixed point (a random derangement by rejection, ``seed``)."""
    if n < 2:
        raise ValueError(f"a derangement needs n >= 2 rows, got {n}")
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(n)
        if not np.any(order == np.arange(n)):
            return order


def ranks_up_to(r_max: int, dim: int, extra: Sequence[int] = ()) -> list[int]:
    """Sorted distinct ranks 1..r_max plus ``extra``, each within [1, dim]."""
    return sorted({_check_rank(r, dim) for r in [*range(1, r_max + 1), *extra]})
