"""Chapter 1 pipeline: train the seeds, analyse each model, compare them, flatten the results.

:func:`train_models` trains a chain's seeds, :func:`analyse_model` analyses one model, and :func:`chain_results`
turns one chain's run into the flat ``results.json`` keys listed in :mod:`ace_helpers.chapters.markov_cores`; the
whole chapter's run, in worker processes, is :func:`ace_helpers.chapters.markov_run.jobs.run_chains`.
The eigenvalue check reads three numbers per true eigenvalue λ of the chain: the relative error
of the operator fitted to the core coordinates (:func:`relative_eig_errors`), the same for the
operator fitted to each coordinate's current-state mean (:func:`state_mean_coords`), and the
sampling floor of the test steps themselves (:func:`sampling_floor`: the eigenvalues of the
transition matrix counted on them, which a core holding exactly the current state would give).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ace_helpers.chapters.markov_run.spectra import (  # noqa: F401 - part of the pipeline's API
    empirical_transition,
    relative_eig_errors,
    sampling_floor,
    sorted_eigs,
    state_mean_coords,
)
from ace_helpers.method import compare, interventions
from ace_helpers.method.checks import check_choice
from ace_helpers.method.core import Core, extract_core_from_gramians
from ace_helpers.method.operators import fit_dynamics, match_eigenvalues
from ace_helpers.toys.ensemble_runs import TrainResult, train_seeds
from ace_helpers.toys.models import ToyConfig, ToyTransformer
from ace_helpers.toys.tasks.markov import (
    MarkovData,
    bayes_accuracy,
    chance_accuracy,
    nontrivial_eigenvalues,
    oracle_r2,
    state_r2,
)

HOOK = "layers.0"
ANALYSIS_BATCH = 256  # sequences per forward pass in the analysis (keeps activations in cache)
TAILS = ("centered", "logits")
ABLATIONS = ("mean", "zero")
PAPER_TAIL, PAPER_ABLATION = "logits", "zero"
ALL_VARIANTS = [(t, a) for t in TAILS for a in ABLATIONS]
SEED_STRIDE = 100  # paper: seed_all(0 + 100·m)

#: The largest chain the Markov chapters take (the core has n − 1 dimensions; beyond this the toy is no toy).
MAX_STATES = 64


def model_seeds(seed: int, n: int) -> list[int]:
    """The paper's model seeds ``seed + 100·m``, m = 0..n−1 (0, 100, 200 for seed 0)."""
    return [int(seed) + SEED_STRIDE * m for m in range(n)]


# -------------------- training --------------------------------------------------------------
def toy_config(n_states: int, d_model: int) -> ToyConfig:
    """The paper's one-layer model for an n-state chain: 4 heads, d_ff = 4·d, dropout 0.1, max_len 64."""
    return ToyConfig(vocab=int(n_states), d_model=int(d_model), n_layers=1, n_heads=4, max_len=64, dropout=0.1)


def train_models(
    data: MarkovData,
    seeds: Sequence[int],
    *,
    d_model: int = 64,
    epochs: int = 40,
    batch_size: int = 64,
    lr: float = 1e-4,
    method: str = "ensemble",
    precision: str = "fp32",
    device: str | torch.device = "cpu",
) -> TrainResult:
    """Train one model per seed on ``data`` (AdamW, no weight decay, CE on every position).

    The chapter's model (:func:`toy_config`) trained by :func:`ace_helpers.toys.ensemble_runs.train_seeds`
    (``method``: ``"ensemble"`` all seeds at once, ``"ensemble1"`` the same code one seed at a
    time, ``"sequential"`` the plain ``train_lm`` loop).  ``precision="bf16"`` trains under bf16
    autocast with the fast kernels (see :mod:`ace_helpers.toys.precision`); ``device``: where they train (CPU models back).
    """
    check_choice("method", method, ("ensemble", "ensemble1", "sequential"))
    return train_seeds(
        toy_config(data.n_states, d_model),
        data.train_inputs,
        data.train_targets,
        seeds,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        method=method,
        precision=precision,
        device=device,
    )


# -------------------- per-model analysis ----------------------------------------------------
def tail_jacobian(model: ToyTransformer, tail: str) -> np.ndarray:
    """(K, D) Jacobian of the tail at the layer output: W_U (``logits``) or (I − 11ᵀ/K) W_U (``centered``)."""
    check_choice("TAIL", tail, TAILS)
    w = model.lm_head.weight.detach().double().numpy()
    if tail == "centered":
        w = w - w.mean(axis=0, keepdims=True)
    return w


@dataclass
class VariantResult:
    """One (tail, ablation) variant of the analysis of one model."""

    core: Core
    keep_acc: float
    remove_acc: float
    eigs: np.ndarray  # fitted operator eigenvalues (r,)
    eig_max_error: float
    r2: float
    r2_state: float
    z: np.ndarray  # (N_test * T, r) core coordinates (uncentred)
    eig_rel_error: list[float] = field(default_factory=list)  # per true eigenvalue (sorted_eigs order)
    eig_rel_error_state: list[float] = field(default_factory=list)  # same, fit on the current-state means
    coord_state_r2: list[float] = field(default_factory=list)  # per core coordinate: variance share set by the state


@dataclass
class SeedAnalysis:
    """Everything measured on one trained model."""

    base_acc: float
    variants: dict[tuple[str, str], VariantResult]
    softmax_cos: float
    energy_at_n_minus_1: float
    energy_softmax_share: float
    energy_shares: dict[str, list[float]]  # per tail: the first n + 1 weights / total weight


def capture_states(wrapped: Any, inputs: torch.Tensor, *, batch_size: int = ANALYSIS_BATCH) -> torch.Tensor:
    """Output of ``layers.0`` at every position, (N, T, D), captured through nnsight in batches."""
    return torch.cat(
        [interventions.capture(wrapped, inputs[i : i + batch_size], HOOK) for i in range(0, inputs.shape[0], batch_size)]
    )


def activation_gramian(h_flat: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean (D,) and covariance (D, D, N − 1 normalisation) of activation rows (N, D), in float64.

    Computed with torch so that it honours ``torch.set_num_threads`` (numpy's BLAS may use
    every core, which is slow on a shared machine).
    """
    h = h_flat.detach().double()
    mean = h.mean(dim=0)
    hc = h - mean
    cov = hc.T @ hc / (h.shape[0] - 1)
    return mean.numpy(), cov.numpy()


def _fit_steps(z: np.ndarray) -> Any:
    """One-step operator fit over the positions of (N, L, r) coordinates (:func:`fit_dynamics`)."""
    r = z.shape[-1]
    return fit_dynamics(z[:, :-1].reshape(-1, r), z[:, 1:].reshape(-1, r))


def analyse_model(
    model: ToyTransformer,
    data: MarkovData,
    *,
    energy: float,
    variants: Sequence[tuple[str, str]],
) -> SeedAnalysis:
    """ACE, ablations and operator fit for one model, for each ``(tail, ablation)`` in ``variants``.

    Activations are the output of ``layers.0`` at every position of every test sequence,
    captured through ``nnsight.NNsight``; ablations replace that output at all positions
    (:func:`ace_helpers.method.interventions.accuracy_under`).  The full-model accuracy is read from the
    captured activations (the layer output feeds ``lm_head`` directly, so ``lm_head(H)`` *is*
    the model's output).
    """
    import nnsight  # load time: a heavy import, done on first use

    model.eval()
    wrapped = nnsight.NNsight(model)
    x, y = data.test_inputs, data.test_targets
    n = data.n_states
    h = capture_states(wrapped, x)  # (N, T, D)
    n_seq, seq, dim = h.shape
    h_flat = h.reshape(-1, dim)
    with torch.no_grad():
        base = float((model.lm_head(h).argmax(-1) == y).double().mean())
    mean, cov = activation_gramian(h_flat)
    cores = {}
    for tail in TAILS:
        w = tail_jacobian(model, tail)
        cores[tail] = extract_core_from_gramians(cov, w.T @ w, mean=mean, energy=energy)
    out: dict[tuple[str, str], VariantResult] = {}
    states = x.numpy()
    h_np = h_flat.double().numpy()
    true = sorted_eigs(nontrivial_eigenvalues(data.T))
    dynamics: dict[str, tuple] = {}
    for tail in TAILS:  # the operator fit depends on the core only, not on the ablation
        core = cores[tail]
        z = core.coords(h_np).reshape(n_seq, seq, core.rank)
        fit = _fit_steps(z)
        _, err = match_eigenvalues(true, fit.eigenvalues)
        r2s = state_r2(z[:, 1:].reshape(-1, core.rank), states[:, :-1].reshape(-1), n)
        z_state, coord_r2 = state_mean_coords(z, states, n)
        rel_state = relative_eig_errors(true, _fit_steps(z_state).eigenvalues)
        dynamics[tail] = (
            fit,
            err,
            r2s,
            z.reshape(-1, core.rank),
            relative_eig_errors(true, fit.eigenvalues),
            rel_state,
            coord_r2,
        )
    for tail, ablation in variants:
        core = cores[tail]
        centered = ablation == "mean"
        keep = interventions.accuracy_under(wrapped, x, y, HOOK, core, "keep", centered=centered, batch_size=ANALYSIS_BATCH)
        remove = interventions.accuracy_under(wrapped, x, y, HOOK, core, "remove", centered=centered, batch_size=ANALYSIS_BATCH)
        fit, err, r2s, z, rel, rel_state, coord_r2 = dynamics[tail]
        out[(tail, ablation)] = VariantResult(core, keep, remove, fit.eigenvalues, err, fit.r2, r2s, z, rel, rel_state, coord_r2)
    logit_core = cores["logits"]
    q_n = logit_core.full_basis[:, n - 1]
    image = model.lm_head.weight.detach().double().numpy() @ q_n
    softmax_cos = float(abs(image.sum()) / (np.linalg.norm(image) * np.sqrt(len(image))))
    frac = logit_core.energy_fraction()
    share = float(logit_core.weights[n - 1] / logit_core.weights.sum())
    shares = {t: (c.weights[: n + 1] / c.weights.sum()).tolist() for t, c in cores.items()}
    return SeedAnalysis(base, out, softmax_cos, float(frac[n - 2]), share, shares)


# -------------------- one chain: train, analyse, compare ------------------------------------
@dataclass
class ChainRun:
    """All results for one chain (several seeds)."""

    T: np.ndarray
    seeds: list[int]
    data: MarkovData
    train: TrainResult
    analyses: list[SeedAnalysis]
    variants: list[tuple[str, str]]
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    pairs: list[tuple[int, int]] = field(default_factory=list)

    @property
    def n_states(self) -> int:
        """Number of chain states."""
        return self.data.n_states

    def variant(self, key: tuple[str, str]) -> list[VariantResult]:
        """The per-seed results of one (tail, ablation) variant."""
        return [a.variants[key] for a in self.analyses]


def _eig_list(eigs: np.ndarray) -> list[list[float]]:
    return [[float(e.real), float(e.imag)] for e in sorted_eigs(eigs)]


def variant_results(run: ChainRun, key: tuple[str, str], *, cca_k: int | None = None) -> dict[str, Any]:
    """Flat results of one variant (documented in :mod:`ace_helpers.chapters.markov_cores`), plain Python types.

    ``cca_k``: how many canonical correlations to keep (default n − 1).
    """
    per_seed = run.variant(key)
    n = run.n_states
    k = n - 1 if cca_k is None else cca_k
    overlaps, angles, ccas = [], [], []
    for i, j in run.pairs:
        a, b = per_seed[i], per_seed[j]
        overlaps.append(compare.projector_overlap(a.core.basis, b.core.basis))
        angles.append(compare.principal_angles(a.core.basis, b.core.basis).tolist())
        kk = min(k, a.core.rank, b.core.rank)
        ccas.append(compare.cca(a.z, b.z, k=kk).tolist())
    return {
        "core_ranks": [v.core.rank for v in per_seed],
        "keep_acc": [v.keep_acc for v in per_seed],
        "remove_acc": [v.remove_acc for v in per_seed],
        "projector_overlap": overlaps,
        "principal_angles": angles,
        "cca": ccas,
        "core_eigs": [_eig_list(v.eigs) for v in per_seed],
        "eig_max_error": [v.eig_max_error for v in per_seed],
        "eig_rel_error": [v.eig_rel_error for v in per_seed],
        "eig_rel_error_state": [v.eig_rel_error_state for v in per_seed],
        "coord_state_r2": [v.coord_state_r2 for v in per_seed],
        "r2": [v.r2 for v in per_seed],
        "r2_state": [v.r2_state for v in per_seed],
    }


def chain_results(run: ChainRun, tail: str, ablation: str) -> dict[str, Any]:
    """Flat ``results.json`` dict for one chain: chosen variant + ``_paper`` copies + shared keys."""
    chance = chance_accuracy(run.T, run.data.test_targets)
    out: dict[str, Any] = {
        "n_states": run.n_states,
        "seeds": run.seeds,
        "base_acc": [a.base_acc for a in run.analyses],
        "chance_acc": chance,
        "bayes_acc": bayes_accuracy(run.T),
        "r2_oracle": oracle_r2(run.T),
        "true_eigs": _eig_list(nontrivial_eigenvalues(run.T)),
        "eig_rel_floor": sampling_floor(run.T, run.data.test_inputs.numpy()),
        "random_overlap": (run.n_states - 1) / run.train.models[0].config.d_model,
        "weight_cosine": [compare.weight_cosine(run.train.models[i], run.train.models[j]) for i, j in run.pairs],
        "softmax_cos": [a.softmax_cos for a in run.analyses],
        "energy_at_n_minus_1": [a.energy_at_n_minus_1 for a in run.analyses],
        "energy_softmax_share": [a.energy_softmax_share for a in run.analyses],
        "energy_shares_logits": [a.energy_shares["logits"] for a in run.analyses],
        "energy_shares_centered": [a.energy_shares["centered"] for a in run.analyses],
        "train_loss": [l[-1] for l in run.train.loss],
        "train_s": run.train.seconds,
        "chain_s": run.seconds,
        "train_cpu_s": run.train.cpu_seconds,
        "chain_cpu_s": run.cpu_seconds,
    }
    out.update(variant_results(run, (tail, ablation)))
    for t in TAILS:
        with_tail = [v for v in run.variants if v[0] == t]
        if with_tail:
            out[f"core_ranks_{t}"] = [v.core.rank for v in run.variant(with_tail[0])]
    for t, a in run.variants:
        out[f"keep_acc_{t}_{a}"] = [v.keep_acc for v in run.variant((t, a))]
        out[f"remove_acc_{t}_{a}"] = [v.remove_acc for v in run.variant((t, a))]
    paper = variant_results(run, (PAPER_TAIL, PAPER_ABLATION), cca_k=3)
    out.update({f"{k}_paper": v for k, v in paper.items()})
    return out


#: Keys stored per extra chain (as ``extra_<key>``, one list entry per chain).
EXTRA_KEYS = (
    "n_states",
    "core_ranks",
    "keep_acc",
    "remove_acc",
    "base_acc",
    "chance_acc",
    "bayes_acc",
    "true_eigs",
    "core_eigs",
    "eig_max_error",
    "eig_rel_error",
    "eig_rel_floor",
    "r2",
    "r2_oracle",
    "r2_state",
    "core_ranks_paper",
    "keep_acc_paper",
    "remove_acc_paper",
    "eig_max_error_paper",
    "softmax_cos",
    "chain_s",
    "chain_cpu_s",
    *(f"core_ranks_{t}" for t in TAILS),
    *(f"{kind}_acc_{t}_{a}" for kind in ("keep", "remove") for t, a in ALL_VARIANTS),
)
