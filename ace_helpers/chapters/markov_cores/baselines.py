"""Baselines for chapter 1's cross-seed comparisons: what the same measurement gives on subspaces that
are not cores, so that "the cores are nearly orthogonal" and "their coordinates are aligned" can fail.

* Projector overlap of two random r-dim subspaces of R^D (Haar-distributed): its distribution, by a
  seeded Monte Carlo (:func:`random_overlap_quantiles`; its mean is r/D).
* The same activations viewed through non-core subspaces of the core's dimension r: each seed's top-r
  PCA subspace, a seeded random r-dim subspace and the one-hot-state oracle subspace
  (:func:`state_oracle_basis`: the top-r directions of what a linear regression on the one-hot current
  state explains, i.e. the class-mean subspace) (:func:`subspace_baselines`): their projector overlap
  across seeds and the canonical correlations of the coordinates they give.  Any subspace whose
  coordinates are linear in the current state gives CCA ≈ 1 across seeds; the oracle measures how
  much of the cores' alignment that alone explains.
* The seeds' weights at initialisation: their cosine, beside the trained one (:func:`init_weight_cosine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nnsight
import numpy as np
import torch

from ace_helpers.chapters.markov_cores.consensus import consensus_results
from ace_helpers.chapters.markov_run.run import capture_states
from ace_helpers.method import compare
from ace_helpers.method.checks import check_int
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


def state_oracle_basis(h: np.ndarray, states: np.ndarray, rank: int) -> np.ndarray:
    """(D, ``rank``) the one-hot-state oracle subspace of activations ``h`` (N, D) with current states ``states`` (N,).

    Regress the centred rows on the one-hot current state: the fitted value of a row is its state's mean
    minus the grand mean.  The oracle is the top-``rank`` right singular directions of those fitted values
    (the class-mean subspace, each state weighted by its number of rows).  With n states present it has at
    most n − 1 directions; ``ValueError`` when ``rank`` asks for more, or on a bad shape or state.
    """
    a = np.asarray(h, dtype=np.float64)
    s = np.asarray(states)
    if a.ndim != 2 or a.shape[0] < 2:
        raise ValueError(f"h has shape {a.shape}: it must be (N, D) activations with N >= 2 rows")
    if s.shape != (a.shape[0],):
        raise ValueError(f"states has shape {s.shape}: it must be ({a.shape[0]},), one current state per row of h")
    if s.dtype.kind not in "iu" or s.min() < 0:
        raise ValueError(f"states must be non-negative integer state indices; got dtype {s.dtype}, min {s.min()!r}")
    rank = check_int("rank", rank, low=1, high=a.shape[1])
    classes, counts = np.unique(s, return_counts=True)
    means = np.stack([a[s == c].mean(axis=0) for c in classes]) - a.mean(axis=0)  # (n, D)
    _, sv, vt = np.linalg.svd(np.sqrt(counts)[:, None] * means, full_matrices=False)
    found = int(np.sum(sv > sv[0] * 1e-10)) if sv[0] > 0 else 0
    if rank > found:
        raise ValueError(
            f"rank={rank!r} is not allowed: the {len(classes)} states present explain {found} "
            f"direction(s) of h, so rank must be in [1, {found}]"
        )
    return vt[:rank].T


def layer_states(models: Sequence[ToyTransformer], inputs: torch.Tensor) -> list[np.ndarray]:
    """Each model's layer output for ``inputs`` (N, T) at every position, as float64 rows (N·T, D)."""
    hs = []
    for model in models:
        model.eval()
        hs.append(capture_states(nnsight.NNsight(model), inputs).reshape(-1, model.config.d_model).double().numpy())
    return hs


def subspace_baselines(
    models: Sequence[ToyTransformer],
    inputs: torch.Tensor,
    rank: int,
    pairs: Sequence[tuple[int, int]],
    *,
    seed: int = BASELINE_SEED,
    cores: Sequence[np.ndarray] | None = None,
) -> dict[str, list[Any]]:
    """Per seed pair (``pairs``), on each model's layer output for ``inputs`` (N, T) at every position:

    ``pca_overlap`` and ``oracle_overlap`` (projector overlap of the two top-``rank`` PCA subspaces, and
    of the two one-hot-state oracle subspaces, :func:`state_oracle_basis` with the current states
    ``inputs``), ``pca_cca``, ``oracle_cca`` and ``random_cca`` (the top ``rank`` canonical correlations
    of the coordinates in the PCA subspaces, the oracle subspaces, and one seeded random ``rank``-dim
    subspace per model); with ``cores`` (one (D, r) basis per model): ``core_oracle_overlap``, per
    model, the projector overlap of its core with its own oracle subspace.
    """
    hs = layer_states(models, inputs)
    return _compare_views(hs, inputs.reshape(-1).numpy(), rank, pairs, seed=seed, cores=cores)


def _compare_views(
    hs: Sequence[np.ndarray],
    states: np.ndarray,
    rank: int,
    pairs: Sequence[tuple[int, int]],
    *,
    seed: int,
    cores: Sequence[np.ndarray] | None = None,
) -> dict[str, list[Any]]:
    """:func:`subspace_baselines` on captured rows ``hs`` (one (N, D) array per model) and their states (N,)."""
    rng = np.random.default_rng(seed)
    views = {
        "pca": [_pca_basis(h, rank) for h in hs],
        "random": [np.linalg.qr(rng.standard_normal((h.shape[1], rank)))[0] for h in hs],
        "oracle": [state_oracle_basis(h, states, rank) for h in hs],
    }
    out: dict[str, list[Any]] = {"pca_overlap": [], "oracle_overlap": [], "pca_cca": [], "random_cca": [], "oracle_cca": []}
    for i, j in pairs:
        for name in ("pca", "oracle"):
            out[f"{name}_overlap"].append(compare.projector_overlap(views[name][i], views[name][j]))
        for name, q in views.items():
            out[f"{name}_cca"].append(compare.cca(hs[i] @ q[i], hs[j] @ q[j], k=rank).tolist())
    if cores is not None:
        out["core_oracle_overlap"] = [compare.projector_overlap(c, o) for c, o in zip(cores, views["oracle"])]
    return out


def init_weight_cosine(models: Sequence[ToyTransformer], seeds: Sequence[int], pairs: Sequence[tuple[int, int]]) -> list[float]:
    """Per seed pair: the cosine of the two models' parameter vectors at initialisation (``build_model``
    with each model's config and seed, as training starts)."""
    inits = [build_model(m.config, s) for m, s in zip(models, seeds)]
    return [compare.weight_cosine(inits[i], inits[j]) for i, j in pairs]


def baseline_results(run: Any, key: tuple[str, str] | None = None) -> dict[str, Any]:
    """The baselines of one chain's run (a :class:`~ace_helpers.chapters.markov_run.run.ChainRun`), as
    flat ``results.json`` keys: ``init_weight_cosine``; per seed pair, at the core dimension n − 1,
    ``pca_overlap``, ``oracle_overlap``, ``pca_cca``, ``oracle_cca``, ``random_cca``; per seed
    ``core_oracle_overlap`` (the cores of variant ``key``, default the run's first: the chosen one);
    ``random_overlap_q05/q50/q95``; and the code release's consensus (GCCA) baseline,
    ``consensus_*`` (:func:`~ace_helpers.chapters.markov_cores.consensus.consensus_results`).
    The layer output is captured once and shared by both."""

    rank, dim = run.n_states - 1, run.train.models[0].config.d_model
    key = run.variants[0] if key is None else key
    hs = layer_states(run.train.models, run.data.test_inputs)
    out: dict[str, Any] = {"init_weight_cosine": init_weight_cosine(run.train.models, run.seeds, run.pairs)}
    out.update(
        _compare_views(
            hs,
            run.data.test_inputs.reshape(-1).numpy(),
            rank,
            run.pairs,
            seed=BASELINE_SEED,
            cores=[v.core.basis for v in run.variant(key)],
        )
    )
    out.update({f"random_overlap_{k}": v for k, v in random_overlap_quantiles(rank, dim).items() if k != "mean"})
    out.update(consensus_results(run.train.models, hs, run.data))
    return out
