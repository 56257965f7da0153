"""Algorithmic Core Extraction (ACE): balanced truncation of a layer's activations.

Given activations ``H`` (N, D) at a hook point and Jacobians ``J`` of the task output with
respect to them, ACE builds two Gramians in float64:

* reachability  ``Cov = Hcᵀ Hc / (N − 1)``, with ``Hc = H − mean(H)``  (what is *active*);
* observability ``Obs = mean_s J_sᵀ J_s``                              (what is *relevant*).

Each is factored from its eigen-decomposition as ``L = V diag(sqrt(max(λ, 0) + jitter))``
with ``jitter = 1e-8 · tr(A) / D`` (so ``L Lᵀ ≈ A``), the product ``Lcᵀ Lo = U Σ Vᵀ`` is
decomposed, and the core basis is the orthonormalised ``Lc U[:, :r]``.  The balanced weights
``w = σ²`` are the eigenvalues of ``Cov · Obs``; the rank is the smallest ``r`` whose weights
hold a fraction ``energy`` of the total (or a fixed ``rank``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

Array = Any  # numpy.ndarray or torch.Tensor

JITTER = 1e-8


def _as_float64(name: str, x: Array) -> np.ndarray:
    """numpy float64 copy of a numpy array or torch tensor; rejects NaN/inf with the row."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    a = np.asarray(x, dtype=np.float64)
    bad = ~np.isfinite(a)
    if bad.any():
        where = np.argwhere(bad)[0].tolist()
        raise ValueError(f"{name} contains NaN or inf (first at index {where}); ACE needs finite values")
    return a


def _check_fraction(energy: float) -> float:
    if isinstance(energy, bool) or not isinstance(energy, (int, float, np.floating)) or not 0.0 < energy <= 1.0:
        raise ValueError(f"energy={energy!r} is not allowed: energy must be a number in (0, 1]")
    return float(energy)


def energy_rank_of(weights: np.ndarray, tau: float) -> int:
    """Smallest r with ``sum(weights[:r]) / sum(weights) >= tau`` (weights descending, >= 0)."""
    tau = _check_fraction(tau)
    total = float(np.sum(weights))
    if total <= 0.0:
        raise ValueError("all balanced weights are zero: no direction is both active and relevant")
    frac = np.cumsum(weights) / total
    return int(np.searchsorted(frac, tau - 1e-12) + 1)


def check_gramian(name: str, a: np.ndarray) -> None:
    """``a`` must be symmetric and positive semi-definite up to rounding (a Gramian); else ValueError."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    asym = float(np.max(np.abs(a - a.T))) if a.size else 0.0
    if asym > 1e-8 * scale:
        raise ValueError(f"{name} is not symmetric (max |A − Aᵀ| = {asym:.3g}, max |A| = {scale:.3g}); a Gramian is symmetric")
    lam = np.linalg.eigvalsh(0.5 * (a + a.T))
    if lam.size and lam[0] < -1e-6 * max(float(lam[-1]), 0.0) - 1e-300:
        raise ValueError(
            f"{name} is not positive semi-definite (smallest eigenvalue {lam[0]:.3g}, largest {lam[-1]:.3g}); "
            "a covariance or Jacobian Gram never has negative eigenvalues"
        )


def gramian_factor(a: np.ndarray) -> np.ndarray:
    """Square-root factor ``L`` (D, D) of a symmetric PSD matrix: ``L Lᵀ ≈ a`` (trace-scaled jitter)."""
    a = 0.5 * (a + a.T)
    d = a.shape[0]
    lam, vec = np.linalg.eigh(a)
    jitter = JITTER * max(float(np.trace(a)), 0.0) / d
    return vec * np.sqrt(np.maximum(lam, 0.0) + jitter)[None, :]


def _fix_signs(q: np.ndarray) -> np.ndarray:
    """Deterministic column signs: the largest-magnitude entry of each column is positive."""
    idx = np.argmax(np.abs(q), axis=0)
    signs = np.sign(q[idx, np.arange(q.shape[1])])
    signs[signs == 0] = 1.0
    return q * signs[None, :]


@dataclass(frozen=True)
class Core:
    """An algorithmic core: an r-dimensional subspace of a D-dimensional activation space.

    Attributes:
        full_basis: (D, D) orthonormal columns, ordered by balanced weight (all directions).
        weights: (D,) balanced weights σ² (eigenvalues of Cov·Obs), descending.
        rank: r, the number of leading columns that form the core.
        mean: (D,) activation mean (used by centred ablations and the flip).
    """

    full_basis: np.ndarray
    weights: np.ndarray
    rank: int
    mean: np.ndarray

    @property
    def basis(self) -> np.ndarray:
        """(D, r) orthonormal core basis Q."""
        return self.full_basis[:, : self.rank]

    @property
    def dim(self) -> int:
        """D, the activation dimension."""
        return self.full_basis.shape[0]

    def projector(self) -> np.ndarray:
        """(D, D) orthogonal projector P = Q Qᵀ."""
        q = self.basis
        return q @ q.T

    def energy_fraction(self) -> np.ndarray:
        """(D,) cumulative fraction of the total balanced weight held by the first k directions."""
        return np.cumsum(self.weights) / float(np.sum(self.weights))

    def energy_rank(self, tau: float) -> int:
        """Smallest r whose weights hold a fraction ``tau`` of the total."""
        return energy_rank_of(self.weights, tau)

    def truncate(self, r: int) -> Core:
        """The same balanced directions with rank ``r`` (1 <= r <= D)."""
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 1 <= r <= self.dim:
            raise ValueError(f"rank={r!r} is not allowed: rank must be an integer in [1, {self.dim}]")
        return replace(self, rank=int(r))

    def compact(self) -> Core:
        """The same core with only its r core columns and weights: everything an edit needs, in D·r numbers
        instead of D² (what a trace sends to a remote server is small)."""
        return replace(self, full_basis=self.basis.copy(), weights=np.asarray(self.weights)[: self.rank].copy())

    # --- applying the core to activations (numpy or torch, any leading shape) ---------------
    def _cast(self, h: Array) -> tuple[Array, Array, Array]:
        """``(h, Q, μ)`` in one floating dtype: torch stays torch (integer -> default float dtype),
        anything else becomes a numpy float array (integer -> float64)."""
        if hasattr(h, "detach"):
            if not (h.is_floating_point() or h.is_complex()):
                h = h.to(torch.get_default_dtype())
        else:
            h = np.asarray(h)
            if h.dtype.kind not in "fc":
                h = h.astype(np.float64)
        if h.ndim == 0 or h.shape[-1] != self.dim:
            raise ValueError(f"activations have shape {tuple(h.shape)}: the last dimension must be the core's D={self.dim}")
        if hasattr(h, "detach"):
            q = torch.as_tensor(self.basis, dtype=h.dtype, device=h.device)
            mu = torch.as_tensor(self.mean, dtype=h.dtype, device=h.device)
            return h, q, mu
        return h, self.basis, self.mean

    def coords(self, h: Array, centered: bool = False) -> Array:
        """Core coordinates z = Qᵀ h (or Qᵀ (h − μ) when ``centered``): (..., D) -> (..., r)."""
        h, q, mu = self._cast(h)
        return ((h - mu) if centered else h) @ q

    def _project(self, x: Array, q: Array) -> Array:
        return (x @ q) @ q.T

    def keep(self, h: Array, centered: bool = False) -> Array:
        """Core only: ``P h`` (zero the complement) or ``μ + P (h − μ)`` when ``centered``. (..., D).

        The zero-ablating form is the paper's for its toy models; the centred form keeps the
        activation mean's off-core part, which a model's later layers usually rely on: prefer it
        unless you reproduce the paper's uncentred numbers.
        """
        h, q, mu = self._cast(h)
        return mu + self._project(h - mu, q) if centered else self._project(h, q)

    def remove(self, h: Array, centered: bool = False) -> Array:
        """Core removed: ``h − P h`` or ``h − P (h − μ)`` when ``centered``. (..., D) -> (..., D)."""
        h, q, mu = self._cast(h)
        return h - self._project((h - mu) if centered else h, q)

    def flip(self, h: Array, scale: float = 1.0) -> Array:
        """Reflect the core coordinates about the mean: ``h − 2·scale·P (h − μ)``. (..., D)."""
        h, q, mu = self._cast(h)
        return h - 2.0 * scale * self._project(h - mu, q)


def extract_core_from_gramians(
    cov: Array,
    obs: Array,
    *,
    mean: Array | None = None,
    energy: float = 0.99,
    rank: int | None = None,
) -> Core:
    """ACE from precomputed Gramians.

    Args:
        cov: (D, D) activation covariance (reachability Gramian).
        obs: (D, D) mean Jacobian Gram (observability Gramian).
        mean: (D,) activation mean (zeros if omitted).
        energy: cumulative weight fraction for the rank rule, in (0, 1].
        rank: fixed rank (overrides ``energy``), 1 <= rank <= number of non-zero weights.

    Returns:
        :class:`Core` with all D balanced directions and the chosen rank.
    """
    cov = _as_float64("cov", cov)
    obs = _as_float64("obs", obs)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or obs.shape != cov.shape:
        raise ValueError(f"cov and obs must both be square (D, D); got {cov.shape} and {obs.shape}")
    d = cov.shape[0]
    if mean is None:
        mean = np.zeros(d)
    else:
        mean = _as_float64("mean", mean)
        if mean.size != d:
            raise ValueError(f"mean has shape {mean.shape}: it must hold D={d} values, one per activation dimension")
        mean = mean.reshape(d)
    energy = _check_fraction(energy)
    check_gramian("cov", cov)
    check_gramian("obs", obs)
    if np.trace(cov) <= 0.0:
        raise ValueError("activation covariance is zero: every activation row is identical (nothing is active)")
    if np.trace(obs) <= 0.0:
        raise ValueError("observability Gramian is zero: the Jacobian J is identically zero (nothing is relevant)")
    lc, lo = gramian_factor(cov), gramian_factor(obs)
    u, s, _ = np.linalg.svd(lc.T @ lo)
    weights = s**2
    q, _ = np.linalg.qr(lc @ u)
    q = _fix_signs(q)
    n_nonzero = int(np.sum(weights > 1e-7 * weights[0]))  # above the jitter floor
    if rank is None:
        r = energy_rank_of(weights, energy)
    else:
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= d:
            raise ValueError(f"rank={rank!r} is not allowed: rank must be an integer in [1, {d}]")
        if rank > n_nonzero:
            raise ValueError(
                f"rank={rank} is not allowed: only {n_nonzero} directions are both active and relevant "
                "(H or J is rank-deficient); ask for rank <= that"
            )
        r = int(rank)
    return Core(full_basis=q, weights=weights, rank=r, mean=mean)


class GramianAccumulator:
    """Streaming Gramians with memory O(D²): add batches, never hold all N rows.

    ``add_activations(H)`` takes (B, D) rows (or any (..., D), flattened); ``add_jacobians(J)``
    takes (B, K, D) per-sample Jacobians or (B, D) gradients of a scalar output.  Sums are kept
    in float64 about a shift (the first batch's mean) so the covariance does not lose precision.
    """

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim={dim!r} is not allowed: dim must be a positive integer")
        self.dim = int(dim)
        self.n_rows = 0
        self.n_jacobians = 0
        self._shift: np.ndarray | None = None
        self._sum = np.zeros(self.dim)
        self._outer = np.zeros((self.dim, self.dim))
        self._jtj = np.zeros((self.dim, self.dim))

    def add_activations(self, h: Array) -> GramianAccumulator:
        """Add activation rows (..., D)."""
        a = _as_float64("H", h)
        if a.ndim == 0 or a.shape[-1] != self.dim:
            raise ValueError(f"H has shape {a.shape}: its last dimension must be the accumulator's D={self.dim}")
        a = a.reshape(-1, self.dim)
        if a.shape[0] == 0:  # an empty batch adds nothing (and must not set the shift)
            return self
        if self._shift is None:
            self._shift = a.mean(axis=0)
        x = a - self._shift
        self._sum += x.sum(axis=0)
        self._outer += x.T @ x
        self.n_rows += a.shape[0]
        return self

    def add_jacobians(self, j: Array) -> GramianAccumulator:
        """Add per-sample Jacobians (B, K, D) or scalar-output gradients (B, D)."""
        a = _as_float64("J", j)
        if a.ndim == 2:
            a = a[:, None, :]
        if a.ndim != 3 or a.shape[2] != self.dim:
            raise ValueError(f"J must be (B, K, {self.dim}) or (B, {self.dim}); got {tuple(j.shape)}")
        flat = a.reshape(-1, self.dim)
        self._jtj += flat.T @ flat
        self.n_jacobians += a.shape[0]
        return self

    def mean(self) -> np.ndarray:
        """(D,) mean of the activations added so far."""
        if self.n_rows == 0:
            raise ValueError("no activations added yet")
        return self._shift + self._sum / self.n_rows

    def cov(self) -> np.ndarray:
        """(D, D) covariance with the N − 1 normalisation."""
        if self.n_rows < 2:
            raise ValueError(f"need at least 2 activation rows for a covariance, have {self.n_rows}")
        m = self._sum / self.n_rows
        return (self._outer - self.n_rows * np.outer(m, m)) / (self.n_rows - 1)

    def obs(self) -> np.ndarray:
        """(D, D) mean Jacobian Gram."""
        if self.n_jacobians == 0:
            raise ValueError("no Jacobians added yet")
        return self._jtj / self.n_jacobians

    def core(self, *, energy: float = 0.99, rank: int | None = None) -> Core:
        """ACE from the accumulated Gramians."""
        return extract_core_from_gramians(self.cov(), self.obs(), mean=self.mean(), energy=energy, rank=rank)


def observability(j: Array, dim: int) -> np.ndarray:
    """Mean Jacobian Gram (D, D) from J of shape (N, K, D), (K, D) (linear tail) or (N, D) (scalar)."""
    a = _as_float64("J", j)
    if a.ndim == 3:
        flat, n = a.reshape(-1, a.shape[-1]), a.shape[0]
    elif a.ndim == 2:
        # (K, D): one constant Jacobian of a linear tail; (N, D): N gradients of a scalar output.
        # Both give sum of outer products over rows; only the normaliser differs, and the caller
        # tells them apart by passing the matching shape (see extract_core).
        flat, n = a, None
    else:
        raise ValueError(f"J must be (N, K, D), (K, D) or (N, D); got shape {a.shape}")
    if flat.shape[1] != dim:
        raise ValueError(f"J has last dimension {flat.shape[1]}, H has D={dim}")
    gram = flat.T @ flat
    return gram / n if n else gram


def extract_core(H: Array, J: Array, *, energy: float = 0.99, rank: int | None = None) -> Core:
    """ACE from activations and Jacobians.

    Args:
        H: (N, D) activations at the hook point (numpy or torch).
        J: Jacobians of the task output w.r.t. those activations: (N, K, D) per sample;
            (K, D) one constant Jacobian when the tail is linear (e.g. an unembedding W_U, K >= 2
            or K != N); or (N, D) per-sample gradients of a scalar output (N = number of rows of H).
        energy: cumulative weight fraction for the rank rule, in (0, 1].
        rank: fixed rank instead of the energy rule.

    Returns:
        :class:`Core` (basis (D, r), weights (D,), mean (D,)).
    """
    h = _as_float64("H", H)
    if h.ndim != 2:
        raise ValueError(f"H must be (N, D); got shape {h.shape}")
    n, d = h.shape
    if n < 2:
        raise ValueError(f"H has {n} row(s); ACE needs at least 2 activation rows")
    j = _as_float64("J", J)
    if j.ndim == 3 and j.shape[0] != n:
        raise ValueError(
            f"J has {j.shape[0]} per-sample Jacobians but H has {n} rows: they must match one to one (for a "
            "subsample of rows, build the Gramians with GramianAccumulator or extract_core_from_gramians)"
        )
    if j.ndim == 2 and j.shape[0] == n:
        obs = observability(j, d) / n  # (N, D): gradients of a scalar output, averaged
    else:
        obs = observability(j, d)  # (N, K, D) averaged inside; (K, D) used as is
    mean = h.mean(axis=0)
    hc = h - mean
    cov = hc.T @ hc / (n - 1)
    return extract_core_from_gramians(cov, obs, mean=mean, energy=energy, rank=rank)
