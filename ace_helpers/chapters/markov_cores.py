"""Chapter 1 (notebooks/01_markov_cores): Markov-chain transformers converge to the same (n−1)-D core.

The chapter's knobs (:data:`PARAMS`), its pipeline and its claims.  Steps (the paper's first
experiment): sample sequences from a chain ``T``; train ``N_SEEDS`` one-layer toy transformers
as one vectorised ensemble (:func:`ace_helpers.ensemble.train_seeds`); capture the layer output
at every position through ``nnsight.NNsight``; run ACE with the tail's Jacobian; ablate the core
(:mod:`ace_helpers.interventions`); fit a linear operator to the core coordinates over sequence
steps; compare the seeds' cores.  Two refinements, each computed beside the paper's variant:

* ``TAIL``: ``"logits"`` (paper) takes J = W_U; ``"centered"`` takes J = (I − 11ᵀ/K) W_U, the
  Jacobian of the logits minus their mean, whose null space holds the softmax-invariant
  direction (0.1–3 % of the balanced energy under the raw-logit tail, right at the 0.999 cut).
* ``ABLATION``: ``"zero"`` (paper) projects the raw activation (``h → QQᵀh`` / ``h → h − QQᵀh``);
  ``"mean"`` projects about the activation mean μ (``h → μ + QQᵀ(h − μ)`` / ``h → h − QQᵀ(h − μ)``).

``results.json`` keys (for the chosen ``TAIL``/``ABLATION``; the same key with suffix
``_paper`` holds the paper's variant, ``TAIL="logits"`` with ``ABLATION="zero"``):

=====================  ==========================================================================
key                    meaning
=====================  ==========================================================================
n_states               number of chain states n
core_ranks             core rank per seed (energy rule, ``ENERGY``)
base_acc               full-model test accuracy per seed (all positions)
keep_acc               core-only accuracy per seed
remove_acc             core-removed accuracy per seed
chance_acc             fraction of test targets equal to argmax π
bayes_acc              Σ_x π(x) max_y T[x, y]
projector_overlap      per seed pair (i < j, row-major): ‖QᵢᵀQⱼ‖²_F / √(rᵢrⱼ)
random_overlap         r/D with r = n − 1 (overlap of random subspaces)
principal_angles       per seed pair: principal angles in degrees, ascending
cca                    per seed pair: top n − 1 canonical correlations of the core coordinates
                       (``cca_paper``: top 3, the paper's choice)
weight_cosine          per seed pair: cosine of the flattened parameter vectors (tail-free)
true_eigs              the chain's n − 1 non-unit eigenvalues, [re, im]
core_eigs              per seed: eigenvalues of the fitted core operator, [re, im]
eig_max_error          per seed: max ``|true − fitted|`` after optimal matching from the true set
r2                     per seed: R² of the one-step core dynamics fit
r2_oracle              oracle R² of the chain (:func:`ace_helpers.tasks.markov.oracle_r2`)
r2_state               per seed: R² of regressing the next core coordinates on the one-hot
                       current state (a basis-free oracle)
softmax_cos            per seed: ``|cos|`` between the all-ones logit vector and the logit image
                       W_U q of the n-th balanced direction of the logits-tail core
energy_at_n_minus_1    per seed: cumulative energy of the first n − 1 directions (logits tail)
energy_softmax_share   per seed: energy share of the n-th direction (logits tail)
energy_shares_logits   per seed: shares of the total balanced weight of the first n + 1
                       directions, logits tail (``energy_shares_centered``: centered tail)
seeds                  model seeds (init, data order; dropout uses seed + 1,000,003)
train_loss             per seed: mean training loss of the last epoch
core_ranks_<t>         per seed: core rank with tail t ("centered" or "logits")
keep_acc_<t>_<a>       per seed: core-only accuracy for tail t and ablation a, all four
                       combinations (``remove_acc_<t>_<a>``: core removed)
extra_*                the same quantities for each chain in ``EXTRA_CHAINS`` (lists per chain)
wall_s                 wall time of the whole chapter in seconds (added by the notebook)
cpu_s                  CPU time of the notebook kernel in seconds (on a shared machine wall_s
                       includes waiting for the CPU; cpu_s is what the chapter costs)
train_s, chain_s       seconds spent training the main chain / on the whole main chain
train_cpu_s            CPU seconds of this process spent training (``chain_cpu_s``: whole chain)
=====================  ==========================================================================
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import torch

from ace_helpers import compare, interventions
from ace_helpers.core import Core, extract_core_from_gramians
from ace_helpers.ensemble import TrainResult, train_seeds
from ace_helpers.models import ToyConfig, ToyTransformer
from ace_helpers.operators import fit_dynamics, match_eigenvalues
from ace_helpers.params import ChapterParams, Params, check_choice, check_int, check_list, check_range
from ace_helpers.report import Claims
from ace_helpers.tasks.markov import (
    PAPER_CHAIN,
    MarkovData,
    bayes_accuracy,
    chance_accuracy,
    is_paper_chain,
    markov_dataset,
    nontrivial_eigenvalues,
    oracle_r2,
    state_r2,
    validate_transition,
)

__all__ = ["PARAMS", "PRESETS", "TrainResult", "run_chapter", "build_claims", "state_r2"]

NOTEBOOK = "01_markov_cores"
HOOK = "layers.0"
ANALYSIS_BATCH = 256  # sequences per forward pass in the analysis (keeps activations in cache)
TAILS = ("centered", "logits")
ABLATIONS = ("mean", "zero")
PAPER_TAIL, PAPER_ABLATION = "logits", "zero"
ALL_VARIANTS = [(t, a) for t in TAILS for a in ABLATIONS]
SEED_STRIDE = 100  # paper: seed_all(0 + 100·m)

#: "Try your own chain" examples (book preset): different sizes and spectra.
#: 3 states, non-circulant, reversible (real spectrum 0.779, 0.321).
CHAIN_3_NONCIRCULANT: list[list[float]] = [
    [0.8, 0.2, 0.0],
    [0.1, 0.6, 0.3],
    [0.0, 0.3, 0.7],
]
#: 5 states, non-circulant, with complex eigenvalue pairs (a lopsided cycle).
CHAIN_5_COMPLEX: list[list[float]] = [
    [0.70, 0.25, 0.00, 0.00, 0.05],
    [0.00, 0.60, 0.40, 0.00, 0.00],
    [0.05, 0.00, 0.75, 0.20, 0.00],
    [0.00, 0.00, 0.00, 0.65, 0.35],
    [0.30, 0.00, 0.10, 0.00, 0.60],
]

_COMMON = {
    "T": PAPER_CHAIN,
    "D_MODEL": 64,
    "SEQ_LEN": 32,
    "ENERGY": 0.999,
    "TAIL": "centered",
    "ABLATION": "mean",
    "SEED": 0,
    "BATCH_SIZE": 64,
    "DATA_SEED": 0,
    "TEST_DATA_SEED": 999,
}
#: Presets: ``book`` = the paper's settings (3 seeds, 3000/3000 sequences, 40 epochs, lr 1e-4);
#: ``ci`` = 2 seeds, 1000/1000 sequences, 8 epochs (1/15 of the optimizer steps) at 10x the
#: learning rate; the extra chains get 1 seed each (3 at ``paper``).
PRESETS: dict[str, dict[str, Any]] = {
    "ci": {
        **_COMMON,
        "N_SEEDS": 2,
        "EPOCHS": 8,
        "N_TRAIN": 1000,
        "N_TEST": 1000,
        "LR": 1e-3,
        "EXTRA_CHAINS": [CHAIN_3_NONCIRCULANT, CHAIN_5_COMPLEX],
        "EXTRA_SEEDS": 1,
        "EXTRA_EPOCHS": 8,
    },
    "book": {
        **_COMMON,
        "N_SEEDS": 3,
        "EPOCHS": 40,
        "N_TRAIN": 3000,
        "N_TEST": 3000,
        "LR": 1e-4,
        "EXTRA_CHAINS": [CHAIN_3_NONCIRCULANT, CHAIN_5_COMPLEX],
        "EXTRA_SEEDS": 1,
        "EXTRA_EPOCHS": 40,
    },
}
PRESETS["paper"] = PRESETS["book"] | {"EXTRA_SEEDS": 3}  # the book preset is the paper's settings

# -------------------- parameters ------------------------------------------------------------
#: Largest chain (ours): at the paper's sizes (3000 sequences of 31 steps) a 64-state chain sees
#: ~23 transitions per entry of T.  MEMORY_LIMIT (ours): a quarter of a 32 GiB laptop or CI runner.
MAX_STATES, MEMORY_LIMIT = 64, 8 * 2**30


def memory_estimate(p: dict[str, Any]) -> dict[str, int]:
    """Rough bytes of a run's largest parts, from checked knobs: ``tokens`` (N_TRAIN + N_TEST)·SEQ_LEN
    × 24 (int64 sequences, inputs, targets); ``activations`` N_TEST·(SEQ_LEN − 1)·D_MODEL × 28
    (float32 capture + 3 float64 copies); ``models`` seeds × (12·D² + 2·n·D + 64·D) parameters × 16
    (weights, gradients, two AdamW moments)."""
    n_max, d = max(len(t) for t in [p["T"], *p["EXTRA_CHAINS"]]), p["D_MODEL"]
    return {"tokens": (p["N_TRAIN"] + p["N_TEST"]) * p["SEQ_LEN"] * 24,
            "activations": p["N_TEST"] * (p["SEQ_LEN"] - 1) * d * 28,
            "models": max(p["N_SEEDS"], p["EXTRA_SEEDS"]) * (12 * d * d + 2 * n_max * d + 64 * d) * 16}


def _check_chain(name: str, value: Any) -> list[list[float]]:
    T = validate_transition(value, name)
    if T.shape[0] > MAX_STATES:
        raise ValueError(f"{name} has {T.shape[0]} states: the chapter takes chains of 2..{MAX_STATES} states")
    return T.tolist()


def check(p: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it); ``T`` and ``EXTRA_CHAINS`` become lists of float rows.

    Every chain is square, non-negative, row-stochastic (rows sum to 1 within 1e-6), irreducible,
    of 2..MAX_STATES states and at most D_MODEL (the core has n − 1 dimensions, the softmax check
    reads the n-th); :func:`memory_estimate` must stay under MEMORY_LIMIT.
    """
    p["T"] = _check_chain("T", p["T"])
    p["N_SEEDS"] = check_int("N_SEEDS", p["N_SEEDS"], low=2, high=16)
    p["EPOCHS"] = check_int("EPOCHS", p["EPOCHS"], low=1)
    p["EXTRA_EPOCHS"] = check_int("EXTRA_EPOCHS", p["EXTRA_EPOCHS"], low=1)
    p["D_MODEL"] = check_int("D_MODEL", p["D_MODEL"], low=4, high=4096)
    if p["D_MODEL"] % 4:
        raise ValueError(f"D_MODEL={p['D_MODEL']!r} is not allowed: D_MODEL must be divisible by the 4 heads")
    p["N_TRAIN"] = check_int("N_TRAIN", p["N_TRAIN"], low=1)
    p["N_TEST"] = check_int("N_TEST", p["N_TEST"], low=2)
    p["SEQ_LEN"] = check_int("SEQ_LEN", p["SEQ_LEN"], low=3, high=65)
    p["ENERGY"] = check_range("ENERGY", p["ENERGY"], low=0.0, high=1.0, low_open=True)
    p["TAIL"] = check_choice("TAIL", p["TAIL"], TAILS)
    p["ABLATION"] = check_choice("ABLATION", p["ABLATION"], ABLATIONS)
    p["SEED"] = check_int("SEED", p["SEED"], low=0)
    p["DATA_SEED"] = check_int("DATA_SEED", p["DATA_SEED"], low=0)
    p["TEST_DATA_SEED"] = check_int("TEST_DATA_SEED", p["TEST_DATA_SEED"], low=0)
    p["LR"] = check_range("LR", p["LR"], low=0.0, high=1.0, low_open=True)
    p["BATCH_SIZE"] = check_int("BATCH_SIZE", p["BATCH_SIZE"], low=1)
    p["EXTRA_CHAINS"] = check_list("EXTRA_CHAINS", p["EXTRA_CHAINS"], _check_chain, min_len=0)
    p["EXTRA_SEEDS"] = check_int("EXTRA_SEEDS", p["EXTRA_SEEDS"], low=1, high=16)
    for name, T in [("T", p["T"])] + [(f"EXTRA_CHAINS[{i}]", t) for i, t in enumerate(p["EXTRA_CHAINS"])]:
        if len(T) > p["D_MODEL"]:
            raise ValueError(f"{name} has {len(T)} states but D_MODEL={p['D_MODEL']}: D_MODEL must be >= the number of states")
    need, gib = memory_estimate(p), lambda b: f"{b / 2**30:.3g}"
    if sum(need.values()) > MEMORY_LIMIT:
        lower = {"tokens": "N_TRAIN, N_TEST, SEQ_LEN", "activations": "N_TEST, SEQ_LEN, D_MODEL",
                 "models": "D_MODEL, N_SEEDS, EXTRA_SEEDS"}[max(need, key=need.get)]
        raise ValueError(f"N_TRAIN={p['N_TRAIN']}, N_TEST={p['N_TEST']}, SEQ_LEN={p['SEQ_LEN']}, D_MODEL={p['D_MODEL']} "
                         f"would need ~{gib(sum(need.values()))} GiB (" + ", ".join(f"{gib(v)} GiB for the {k}" for k, v in
                         need.items()) + f"); the limit is {gib(MEMORY_LIMIT)} GiB: lower {lower}")


#: The chapter's knobs: ``PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(N_SEEDS=3)`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)


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
) -> TrainResult:
    """Train one model per seed on ``data`` (AdamW, no weight decay, CE on every position).

    The chapter's model (:func:`toy_config`) trained by :func:`ace_helpers.ensemble.train_seeds`
    (``method``: ``"ensemble"`` all seeds at once, ``"ensemble1"`` the same code one seed at a
    time, ``"sequential"`` the plain ``train_lm`` loop).
    """
    check_choice("method", method, ("ensemble", "ensemble1", "sequential"))
    return train_seeds(toy_config(data.n_states, d_model), data.train_inputs, data.train_targets, seeds,
                       epochs=epochs, batch_size=batch_size, lr=lr, method=method)


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
    return torch.cat([interventions.capture(wrapped, inputs[i : i + batch_size], HOOK)
                      for i in range(0, inputs.shape[0], batch_size)])


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
    (:func:`ace_helpers.interventions.accuracy_under`).  The full-model accuracy is read from the
    captured activations (the layer output feeds ``lm_head`` directly, so ``lm_head(H)`` *is*
    the model's output).
    """
    import nnsight

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
    tails = list(TAILS)
    cores = {}
    for tail in tails:
        w = tail_jacobian(model, tail)
        cores[tail] = extract_core_from_gramians(cov, w.T @ w, mean=mean, energy=energy)
    out: dict[tuple[str, str], VariantResult] = {}
    states_now = x[:, :-1].reshape(-1).numpy()
    h_np = h_flat.double().numpy()
    true = nontrivial_eigenvalues(data.T)
    dynamics: dict[str, tuple] = {}
    for tail in tails:  # the operator fit depends on the core only, not on the ablation
        core = cores[tail]
        z = core.coords(h_np).reshape(n_seq, seq, core.rank)
        fit = fit_dynamics(z[:, :-1].reshape(-1, core.rank), z[:, 1:].reshape(-1, core.rank))
        _, err = match_eigenvalues(true, fit.eigenvalues)
        r2s = state_r2(z[:, 1:].reshape(-1, core.rank), states_now, n)
        dynamics[tail] = (fit, err, r2s, z.reshape(-1, core.rank))
    for tail, ablation in variants:
        core = cores[tail]
        centered = ablation == "mean"
        keep = interventions.accuracy_under(wrapped, x, y, HOOK, core, "keep", centered=centered,
                                            batch_size=ANALYSIS_BATCH)
        remove = interventions.accuracy_under(wrapped, x, y, HOOK, core, "remove", centered=centered,
                                              batch_size=ANALYSIS_BATCH)
        fit, err, r2s, z = dynamics[tail]
        out[(tail, ablation)] = VariantResult(core, keep, remove, fit.eigenvalues, err, fit.r2, r2s, z)
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


def run_chain(
    T: Any,
    *,
    seeds: Sequence[int],
    epochs: int,
    d_model: int,
    n_train: int,
    n_test: int,
    seq_len: int,
    energy: float,
    variants: Sequence[tuple[str, str]],
    lr: float = 1e-4,
    batch_size: int = 64,
    data_seed: int = 0,
    test_data_seed: int = 999,
    method: str = "ensemble",
) -> ChainRun:
    """Sample data, train the seeds, analyse each model for each ``(tail, ablation)`` variant."""
    start, start_cpu = time.perf_counter(), time.process_time()
    T = validate_transition(T)
    data = markov_dataset(T, n_train, n_test, seq_len, train_seed=data_seed, test_seed=test_data_seed)
    trained = train_models(data, seeds, d_model=d_model, epochs=epochs, batch_size=batch_size, lr=lr, method=method)
    variants = list(dict.fromkeys(tuple(v) for v in variants))
    analyses = [analyse_model(m, data, energy=energy, variants=variants) for m in trained.models]
    pairs = list(combinations(range(len(seeds)), 2))
    return ChainRun(T, list(seeds), data, trained, analyses, variants, time.perf_counter() - start,
                    time.process_time() - start_cpu, pairs)


def _eig_list(eigs: np.ndarray) -> list[list[float]]:
    eigs = np.asarray(eigs, dtype=np.complex128)
    order = np.lexsort((-eigs.imag, -eigs.real))
    return [[float(e.real), float(e.imag)] for e in eigs[order]]


def variant_results(run: ChainRun, key: tuple[str, str], *, cca_k: int | None = None) -> dict[str, Any]:
    """Flat results of one variant (documented in the module docstring), plain Python types.

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
    r2 = [v.r2 for v in per_seed]
    return {
        "core_ranks": [v.core.rank for v in per_seed],
        "keep_acc": [v.keep_acc for v in per_seed],
        "remove_acc": [v.remove_acc for v in per_seed],
        "projector_overlap": overlaps,
        "principal_angles": angles,
        "cca": ccas,
        "core_eigs": [_eig_list(v.eigs) for v in per_seed],
        "eig_max_error": [v.eig_max_error for v in per_seed],
        "r2": r2,
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


def run_chapter(p: Params, *, method: str = "ensemble") -> tuple[dict[str, Any], ChainRun, list[ChainRun]]:
    """Run the whole chapter from resolved knobs (``PARAMS.resolve(...)``): the main chain, then ``EXTRA_CHAINS``.

    Returns ``(results, main_run, extra_runs)``; ``results`` holds the flat keys of the module
    docstring (the extra chains' under ``extra_<key>``, one list entry per chain).
    """
    variants = [(p["TAIL"], p["ABLATION"]), (PAPER_TAIL, PAPER_ABLATION)] + ALL_VARIANTS
    common = dict(d_model=p["D_MODEL"], n_train=p["N_TRAIN"], n_test=p["N_TEST"], seq_len=p["SEQ_LEN"],
                  energy=p["ENERGY"], lr=p["LR"], batch_size=p["BATCH_SIZE"], data_seed=p["DATA_SEED"],
                  test_data_seed=p["TEST_DATA_SEED"], variants=variants, method=method)
    main = run_chain(p["T"], seeds=model_seeds(p["SEED"], p["N_SEEDS"]), epochs=p["EPOCHS"], **common)
    results = chain_results(main, p["TAIL"], p["ABLATION"])
    extras = [run_chain(T, seeds=model_seeds(p["SEED"], p["EXTRA_SEEDS"]), epochs=p["EXTRA_EPOCHS"], **common)
              for T in p["EXTRA_CHAINS"]]
    extra_keys = ("n_states", "core_ranks", "keep_acc", "remove_acc", "base_acc", "chance_acc", "bayes_acc",
                  "true_eigs", "core_eigs", "eig_max_error", "r2", "r2_oracle", "r2_state", "core_ranks_paper",
                  "keep_acc_paper", "remove_acc_paper", "eig_max_error_paper", "softmax_cos", "chain_s", "chain_cpu_s")
    extra_keys += tuple(f"core_ranks_{t}" for t in TAILS)
    extra_keys += tuple(f"{kind}_acc_{t}_{a}" for kind in ("keep", "remove") for t, a in ALL_VARIANTS)
    per_chain = [chain_results(r, p["TAIL"], p["ABLATION"]) for r in extras]
    results["extra_T"] = [r.T.tolist() for r in extras]
    for key in extra_keys:
        results[f"extra_{key}"] = [c[key] for c in per_chain]
    return results, main, extras


# -------------------- claims (read only the flat results dict, so a stored results.json checks the same) 
def r2_ratios(results: dict[str, Any], suffix: str = "") -> tuple[list[float], list[float]]:
    """Per seed ``(R²/R²_oracle, R²/r2_state)`` of a variant (``suffix`` "" or "_paper")."""
    r2, r2s = results[f"r2{suffix}"], results[f"r2_state{suffix}"]
    return [v / results["r2_oracle"] for v in r2], [a / b for a, b in zip(r2, r2s)]


def build_claims(results: dict[str, Any], cfg: Params) -> Claims:
    """The chapter's claims, written for a general n-state chain; each states its own threshold.

    One rule decides which claims apply, and it is stated in the claim's text: the paper's
    equal-accuracy check of its own variant (zero ablation, raw-logit tail) is made only when
    ``T`` is the paper chain (:func:`ace_helpers.tasks.markov.is_paper_chain`: the paper chain's
    (4, 4) shape and values), and the third canonical correlation only when n − 1 ≥ 3.  No
    threshold depends on the preset.
    """
    claims = Claims()
    n = results["n_states"]
    base = results["base_acc"]
    ratio_o, ratio_s = r2_ratios(results)
    claims.check(f"core rank = n − 1 = {n - 1} in every seed ({cfg['TAIL']} tail)", "3",
                 results["core_ranks"], all(r == n - 1 for r in results["core_ranks"]))
    claims.check("logits tail: rank n − 1 or n; extra direction softmax-invariant (cosine of its logit image with 1 ≥ 0.9)",
                 "3", [results["core_ranks_paper"], results["softmax_cos"]],
                 all(r in (n - 1, n) for r in results["core_ranks_paper"]) and min(results["softmax_cos"]) >= 0.9)
    claims.check(f"core only ≥ 0.99 × full model ({cfg['ABLATION']} ablation)", "equal",
                 [results["keep_acc"], base], all(k >= 0.99 * b for k, b in zip(results["keep_acc"], base)))
    if is_paper_chain(cfg["T"]):
        claims.check("core only within 0.005 of full model (zero ablation, paper variant; checked when T is the "
                     "paper chain: its 4 × 4 shape and values)", "equal", results["keep_acc_paper"],
                     all(abs(k - b) <= 0.005 for k, b in zip(results["keep_acc_paper"], base)))
    claims.check("core removed ≤ chance + 0.03", f"chance ({results['chance_acc']:.3f})", results["remove_acc"],
                 all(r <= results["chance_acc"] + 0.03 for r in results["remove_acc"]))
    claims.check("projector overlap ≤ 0.1 (random r/D = %.3f)" % results["random_overlap"], "0.02–0.04",
                 results["projector_overlap"], max(results["projector_overlap"]) <= 0.1)
    top2 = min(min(c[: min(2, n - 1)]) for c in results["cca"])
    claims.check("CCA: top 2 ≥ 0.99", "0.999, 0.999", top2, top2 >= 0.99)
    if n - 1 >= 3:
        third = min(c[2] for c in results["cca"])
        claims.check("CCA: third ≥ 0.9 (checked when n − 1 ≥ 3)", "0.93", third, third >= 0.9)
    claims.check("weight cosine within ±0.1", "different weights", results["weight_cosine"],
                 max(abs(w) for w in results["weight_cosine"]) <= 0.1)
    claims.check("core eigenvalues within 0.03 of the chain's", "< 1 %", results["eig_max_error"],
                 max(results["eig_max_error"]) <= 0.03)
    claims.check("R²/R²_oracle within 0.05 of 1", "> 0.98", ratio_o, max(abs(r - 1) for r in ratio_o) <= 0.05)
    claims.check("R²/r2_state in [0.95, 1.05]", "n/a (basis-free oracle)", ratio_s,
                 all(0.95 <= r <= 1.05 for r in ratio_s))
    for c, m in enumerate(results.get("extra_n_states", [])):
        ratios = [a / b for a, b in zip(results["extra_r2"][c], results["extra_r2_state"][c])]
        ok = (all(r == m - 1 for r in results["extra_core_ranks"][c])
              and max(results["extra_eig_max_error"][c]) <= 0.075 and all(0.95 <= r <= 1.05 for r in ratios))
        claims.check(f"extra chain {c + 1} (n = {m}): rank n − 1, eig. error ≤ 0.075, R²/r2_state in [0.95, 1.05]",
                     "(beyond the paper)", [results["extra_core_ranks"][c], results["extra_eig_max_error"][c], ratios], ok)
    return claims
