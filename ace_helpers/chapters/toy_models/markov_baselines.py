"""Baselines for chapter 1's cross-seed comparisons: what the same measurement gives on subspaces that
are not cores, so that "the cores are nearly orthogonal" and "their coordinates are aligned" can fail.

* Projector overlap of two random r-dim subspaces of R^D (Haar-distributed): its distribution, by a
  seeded Monte Carlo (:func:`random_overlap_quantiles`; its mean is r/D).
* The same activations viewed through non-core subspaces of the core's dimension r: each seed's top-r
  PCA subspace, and a seeded random r-dim subspace (:func:`subspace_baselines`): their projector
  overlap across seeds and the canonical correlations of the coordinates they give.
* The seeds' weights at initialisation: their cosine, beside the trained one (:func:`init_weight_cosine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nnsight
import numpy as np
import torch

from ace_helpers.method import compare
from ace_helpers.toys.models import ToyTransformer, build_model

#: Seed of the random subspaces (fixed: the baseline is part of the measurement, not of the run's seeds).
BASELINE_SEED = 20_260_226


def random_overlap_quantiles(rank: int, dim: int, *, draws: int = 4000, seed: int = BASELINE_SEED) -> dict[str, float]:
    """Quantiles ``{"q05", "q50", "q95", "mean"}`` of the projector overlap ``‖QaᵀQb‖²_F / r`` of two
    independent Haar-random ``rank``-dim subspaces of R^``dim`` (``draws`` seeded pairs)."""
    if not 1 <= rank <= dim:
        raise ValueError(f"rank={rank!r} must lie in [1, dim={dim!r}]")
    rng = np.random.default_rng(seed)
    vals = np.empty(draws)
    for i in range(draws):
        qa = np.linalg.qr(rng.standard_normal((dim, rank)))[0]
        qb = np.linalg.qr(rng.standard_normal((dim, rank)))[0]
        vals[i] = np.sum((qa.T @ qb) ** 2) / rank
    q05, q50, q95 = np.quantile(vals, [0.05, 0.5, 0.95])
    return {"q05": float(q05), "q50": float(q50), "q95": float(q95), "mean": float(vals.mean())}


def _pca_basis(h: np.ndarray, rank: int) -> np.ndarray:
    """Top-``rank`` principal directions (D, rank) of activations ``h`` (N, D)."""
    centred = h - h.mean(axis=0)
    return np.linalg.svd(centred, full_matrices=False)[2][:rank].T


def subspace_baselines(
    models: Sequence[ToyTransformer], inputs: torch.Tensor, rank: int, pairs: Sequence[tuple[int, int]], *,
    seed: int = BASELINE_SEED,
) -> dict[str, list[Any]]:  # fmt: skip
    """Per seed pair (``pairs``), on each model's layer output for ``inputs`` (N, T) at every position:

    ``pca_overlap`` (projector overlap of the two top-``rank`` PCA subspaces), ``pca_cca`` and
    ``random_cca`` (the top ``rank`` canonical correlations of the coordinates in the PCA subspaces,
    and in one seeded random ``rank``-dim subspace per model).
    """
    from ace_helpers.chapters.toy_models.markov import capture_states  # load time: avoids an import cycle

    rng = np.random.default_rng(seed)
    hs = []
    for model in models:
        model.eval()
        hs.append(capture_states(nnsight.NNsight(model), inputs).reshape(-1, model.config.d_model).double().numpy())
    pca = [_pca_basis(h, rank) for h in hs]
    rand = [np.linalg.qr(rng.standard_normal((h.shape[1], rank)))[0] for h in hs]
    out: dict[str, list[Any]] = {"pca_overlap": [], "pca_cca": [], "random_cca": []}
    for i, j in pairs:
        out["pca_overlap"].append(compare.projector_overlap(pca[i], pca[j]))
        out["pca_cca"].append(compare.cca(hs[i] @ pca[i], hs[j] @ pca[j], k=rank).tolist())
        out["random_cca"].append(compare.cca(hs[i] @ rand[i], hs[j] @ rand[j], k=rank).tolist())
    return out


def init_weight_cosine(models: Sequence[ToyTransformer], seeds: Sequence[int], pairs: Sequence[tuple[int, int]]) -> list[float]:
    """Per seed pair: the cosine of the two models' parameter vectors at initialisation (``build_model``
    with each model's config and seed, as training starts)."""
    inits = [build_model(m.config, s) for m, s in zip(models, seeds)]
    return [compare.weight_cosine(inits[i], inits[j]) for i, j in pairs]


def baseline_results(run: Any) -> dict[str, Any]:
    """The baselines of one chain's run (a :class:`~ace_helpers.chapters.toy_models.markov.ChainRun`), as
    flat ``results.json`` keys: ``init_weight_cosine``, ``pca_overlap``, ``pca_cca``, ``random_cca``
    (per seed pair, at the core dimension n − 1) and ``random_overlap_q05/q50/q95``."""
    rank, dim = run.n_states - 1, run.train.models[0].config.d_model
    out: dict[str, Any] = {"init_weight_cosine": init_weight_cosine(run.train.models, run.seeds, run.pairs)}
    out.update(subspace_baselines(run.train.models, run.data.test_inputs, rank, run.pairs))
    out.update({f"random_overlap_{k}": v for k, v in random_overlap_quantiles(rank, dim).items() if k != "mean"})
    return out
