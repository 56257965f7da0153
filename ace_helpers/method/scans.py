"""Rank scans: keep-only / core-removed accuracy at every rank of a core, and the dimensions they give.

Method level (any model whose tail after the hooked layer is linear, ``logits = W h + b``):

* :func:`rank_scan` — keep-only and core-removed accuracy for every rank r = 0..R at once;
* :func:`necessary_dim` — the smallest rank whose removal drops accuracy to a floor;
* :func:`sufficient_dim` — the smallest rank whose keep-only accuracy matches the base accuracy.
"""

from __future__ import annotations

import numpy as np
import torch


def rank_scan(
    H: torch.Tensor | np.ndarray,
    weight: torch.Tensor | np.ndarray,
    bias: torch.Tensor | np.ndarray | None,
    basis: np.ndarray,
    targets: torch.Tensor | np.ndarray,
    chunk: int = 32,
) -> tuple[np.ndarray, np.ndarray]:
    """Keep-only and core-removed accuracy for **every** rank r = 0..R at once.

    The tail after the hook is linear (logits = W h + b), so with core coordinates C = H Q the
    keep-only logits at rank r are ``b + Σ_{i<r} C[:, i] ⊗ (W Q)[:, i]`` (a cumulative sum over
    i) and the removed logits are ``W h + b − Σ_{i<r} ...``.  Uncentred projections, as the paper.

    Args:
        H: (N, D) activations.  weight: (K, D) unembedding.  bias: (K,) or None.
        basis: (D, R) orthonormal columns in the order to add them (``core.full_basis``).
        targets: (N,) int labels.  chunk: ranks processed per batched op (memory N·chunk·K).

    Returns:
        ``(keep_acc, remove_acc)``, each (R + 1,) float64; index r = first r columns kept/removed.
    """
    h = torch.as_tensor(np.asarray(H) if not torch.is_tensor(H) else H.detach()).double()
    w = torch.as_tensor(np.asarray(weight) if not torch.is_tensor(weight) else weight.detach()).double()
    q = torch.as_tensor(np.asarray(basis, dtype=np.float64))
    y = torch.as_tensor(np.asarray(targets) if not torch.is_tensor(targets) else targets).long().reshape(-1)
    if h.ndim != 2 or w.ndim != 2 or w.shape[1] != h.shape[1] or q.shape[0] != h.shape[1] or y.shape[0] != h.shape[0]:
        raise ValueError(
            f"rank_scan needs H (N, D), weight (K, D), basis (D, R), targets (N,); got {tuple(h.shape)}, "
            f"{tuple(w.shape)}, {tuple(q.shape)}, {tuple(y.shape)}"
        )
    b = (
        torch.zeros(w.shape[0], dtype=torch.float64)
        if bias is None
        else torch.as_tensor(np.asarray(bias) if not torch.is_tensor(bias) else bias.detach()).double()
    )
    n, r_max = h.shape[0], q.shape[1]
    coords = h @ q  # (N, R)
    readout = (w @ q).T  # (R, K): logit change per unit of coordinate i
    full = h @ w.T  # (N, K) without bias
    keep = np.empty(r_max + 1)
    remove = np.empty(r_max + 1)
    running = torch.zeros(n, w.shape[0], dtype=torch.float64)  # Σ_{i<r} contributions
    keep[0] = float(((running + b).argmax(-1) == y).double().mean())
    remove[0] = float(((full + b).argmax(-1) == y).double().mean())
    for start in range(0, r_max, chunk):
        stop = min(start + chunk, r_max)
        part = torch.cumsum(coords[:, start:stop, None] * readout[None, start:stop, :], dim=1)
        part = part + running[:, None, :]  # (N, c, K)
        keep[start + 1 : stop + 1] = ((part + b).argmax(-1) == y[:, None]).double().mean(0).numpy()
        remove[start + 1 : stop + 1] = ((full[:, None, :] - part + b).argmax(-1) == y[:, None]).double().mean(0).numpy()
        running = part[:, -1]
    return keep, remove


def necessary_dim(remove_curve: np.ndarray, energy_rank: int, floor: float) -> int:
    """max(energy rank, smallest r ≥ energy rank with remove accuracy ≤ ``floor``); D if never."""
    r_max = len(remove_curve) - 1
    hits = [r for r in range(max(energy_rank, 1), r_max + 1) if remove_curve[r] <= floor]
    return hits[0] if hits else r_max


def sufficient_dim(keep_curve: np.ndarray, base_acc: float, tol: float = 1e-3) -> int:
    """Smallest r ≥ 1 whose keep-only accuracy is ≥ ``base_acc − tol`` (D at worst, where keep = base)."""
    r_max = len(keep_curve) - 1
    hits = [r for r in range(1, r_max + 1) if keep_curve[r] >= base_acc - tol]
    return hits[0] if hits else r_max
