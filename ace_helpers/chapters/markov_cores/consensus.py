"""The code release's consensus (GCCA) baseline for chapter 1: one subspace per seed, built from all seeds at once.

The consensus is what every seed's activations share, found without looking at the task or the tail:

1. Centre each seed's activations H_i (N, D) on the same N test inputs and put them side by side,
   X = [H_1c, …, H_Sc] (N, S·D).
2. Take the SVD X = U Σ Vᵀ and keep k = min(⌊0.75·D⌋, the 0.999-energy rank of Σ²) left singular
   vectors: the consensus variates G = U[:, :k] (N, k), orthonormal columns.
3. Map G back into each seed: B_i = orth(pinv(H_ic) G), a (D, k_i) orthonormal basis (k_i ≤ k) whose
   coordinates best reproduce the consensus variates by a linear read-out of that seed's activations.

Each seed is then ablated with its B_i exactly as with its core (keep: only the consensus subspace; remove:
the rest), through :func:`ace_helpers.method.interventions.accuracy_under`.  The code release reports the
consensus sufficient (keep = the full accuracy) but not necessary (remove 0.53–0.55, far above chance),
unlike the core.  Written here from that description (:func:`gcca_consensus`, :func:`consensus_results`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import nnsight
import numpy as np

from ace_helpers.chapters.markov_run.run import ANALYSIS_BATCH, HOOK
from ace_helpers.method import interventions
from ace_helpers.method.checks import check_range
from ace_helpers.method.core import Core, energy_rank_of
from ace_helpers.toys.models import ToyTransformer
from ace_helpers.toys.tasks.markov import MarkovData

#: The code release's cap on the consensus rank (a fraction of D) and its energy threshold.
MAX_FRACTION, ENERGY = 0.75, 0.999


@dataclass(frozen=True)
class Consensus:
    """A GCCA consensus of S views of the same N inputs.

    Attributes:
        variates: (N, k) consensus variates G, orthonormal columns (left singular vectors of X).
        bases: per view, its (D_i, k_i) orthonormal basis orth(pinv(H_ic) G).
        rank: k = min(cap, energy_rank).
        energy_rank: the smallest r whose squared singular values hold the energy fraction.
        cap: ⌊max_fraction · min D_i⌋ (at least 1).
        cut_ratio: σ_k² / σ_{k+1}², the spectral gap at the cut (1: the k-th and (k+1)-th directions carry the
            same energy, so which of them the consensus holds is set by rounding; inf when k is the full width).
    """

    variates: np.ndarray
    bases: list[np.ndarray]
    rank: int
    energy_rank: int
    cap: int
    cut_ratio: float


def _views(hs: Sequence[Any]) -> list[np.ndarray]:
    """The views as float64 (N, D_i) arrays, checked: at least 2, 2-D, the same N >= 2 rows, finite."""
    if isinstance(hs, np.ndarray) or not isinstance(hs, Sequence) or len(hs) < 2:
        raise ValueError(
            f"hs must be a list of at least 2 activation arrays (N, D_i); got {type(hs).__name__}"
            + (f" of length {len(hs)}" if isinstance(hs, Sequence) else "")
        )
    views = [np.asarray(h, dtype=np.float64) for h in hs]
    for i, v in enumerate(views):
        if v.ndim != 2 or v.shape[0] < 2 or v.shape[1] < 1:
            raise ValueError(f"hs[{i}] has shape {v.shape}: each view must be (N, D) with N >= 2 rows and D >= 1")
        if v.shape[0] != views[0].shape[0]:
            raise ValueError(
                f"hs[{i}] has {v.shape[0]} rows but hs[0] has {views[0].shape[0]}: the views must "
                "hold the same inputs, row for row"
            )
        if not np.all(np.isfinite(v)):
            raise ValueError(f"hs[{i}] holds a NaN or infinity")
    return views


def orth(a: np.ndarray) -> np.ndarray:
    """(D, k') orthonormal basis of the column span of ``a`` (D, k): its left singular vectors whose singular
    values exceed ``max(D, k) · eps · s_max`` (k' ≤ k; a zero matrix has no span: ``ValueError``)."""
    u, s, _ = np.linalg.svd(np.asarray(a, dtype=np.float64), full_matrices=False)
    if s.size == 0 or s[0] <= 0:
        raise ValueError(f"the matrix of shape {np.shape(a)} is zero: it spans no subspace")
    keep = int(np.sum(s > max(np.shape(a)) * np.finfo(np.float64).eps * s[0]))
    return u[:, :keep]


def gcca_consensus(hs: Sequence[Any], *, max_fraction: float = MAX_FRACTION, energy: float = ENERGY) -> Consensus:
    """The consensus of views ``hs`` (each (N, D_i), the same N inputs row for row), as the code release builds it.

    Centres each view, takes the SVD of their concatenation X (N, ΣD_i) through its Gram matrix XᵀX (ΣD_i, ΣD_i),
    keeps k = min(⌊max_fraction · min D_i⌋, energy rank) variates G = X V_k Σ_k⁻¹, and maps them into each view
    with the least-squares read-out pinv(H_ic) G, orthonormalised (:func:`orth`).
    """
    views = _views(hs)
    max_fraction = check_range("max_fraction", max_fraction, low=0.0, high=1.0, low_open=True)
    energy = check_range("energy", energy, low=0.0, high=1.0, low_open=True)
    centred = [v - v.mean(axis=0) for v in views]
    x = np.concatenate(centred, axis=1)  # (N, ΣD)
    lam, vec = np.linalg.eigh(x.T @ x)
    order = np.argsort(lam)[::-1]
    lam, vec = np.clip(lam[order], 0.0, None), vec[:, order]
    if lam[0] <= 0:
        raise ValueError("every view is constant over its rows: there is no variance to share")
    e_rank = energy_rank_of(lam, energy)
    cap = max(1, int(np.floor(max_fraction * min(v.shape[1] for v in views))))
    k = min(cap, e_rank)
    g = x @ vec[:, :k] / np.sqrt(lam[:k])  # (N, k) = U[:, :k]
    bases = [orth(np.linalg.lstsq(h, g, rcond=None)[0]) for h in centred]
    cut = float(lam[k - 1] / lam[k]) if k < len(lam) and lam[k] > 0 else float("inf")
    return Consensus(g, bases, k, e_rank, cap, cut)


def basis_core(basis: np.ndarray, mean: np.ndarray) -> Core:
    """A :class:`~ace_helpers.method.core.Core` holding an orthonormal ``basis`` (D, k) and the activation
    ``mean`` (D,), so that the library's keep/remove interventions apply to it as to a core."""
    q = np.asarray(basis, dtype=np.float64)
    mu = np.asarray(mean, dtype=np.float64)
    if q.ndim != 2 or mu.shape != (q.shape[0],):
        raise ValueError(f"basis has shape {q.shape} and mean {mu.shape}: they must be (D, k) and (D,)")
    return Core(full_basis=q, weights=np.ones(q.shape[1]), rank=q.shape[1], mean=mu)


def consensus_results(
    models: Sequence[ToyTransformer],
    hs: Sequence[np.ndarray],
    data: MarkovData,
    *,
    max_fraction: float = MAX_FRACTION,
    energy: float = ENERGY,
    batch_size: int = ANALYSIS_BATCH,
) -> dict[str, Any]:
    """The consensus baseline of a chain's seeds, as flat ``results.json`` keys.

    ``hs``: each model's layer output on ``data.test_inputs`` at every position, (N·T, D) rows in the
    inputs' order.  Keys: ``consensus_dim`` (k), ``consensus_energy_rank``, ``consensus_cut_ratio`` (the spectral
    gap at the cut, :class:`Consensus`), ``consensus_ranks`` (per seed k_i), and per seed the next-token accuracy with only the seed's consensus subspace kept or with it
    removed, at all positions, under both ablations: ``consensus_keep_acc_zero``,
    ``consensus_remove_acc_zero`` (the code release's: raw projection) and ``consensus_keep_acc_mean``,
    ``consensus_remove_acc_mean`` (about the activation mean).
    """
    if len(models) != len(hs):
        raise ValueError(f"{len(models)} models but {len(hs)} activation arrays: one array per model")
    cons = gcca_consensus(hs, max_fraction=max_fraction, energy=energy)
    x, y = data.test_inputs, data.test_targets
    out: dict[str, Any] = {
        "consensus_dim": cons.rank,
        "consensus_energy_rank": cons.energy_rank,
        "consensus_cut_ratio": cons.cut_ratio,
        "consensus_ranks": [b.shape[1] for b in cons.bases],
    }
    ablations = (("zero", False), ("mean", True))
    out.update({f"consensus_{mode}_acc_{a}": [] for a, _ in ablations for mode in ("keep", "remove")})
    for model, h, basis in zip(models, hs, cons.bases):
        model.eval()
        wrapped, core = nnsight.NNsight(model), basis_core(basis, np.asarray(h).mean(axis=0))
        for ablation, centered in ablations:
            for mode in ("keep", "remove"):
                acc = interventions.accuracy_under(wrapped, x, y, HOOK, core, mode, centered=centered, batch_size=batch_size)
                out[f"consensus_{mode}_acc_{ablation}"].append(acc)
    return out
