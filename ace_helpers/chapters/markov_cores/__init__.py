"""Chapter 1 (notebooks/01_markov_cores): Markov-chain transformers: an (n−1)-D core per seed, compared across seeds.

The chapter protocol: :data:`PARAMS` (the knobs), :func:`run` (the flat results below) and
:func:`build_claims` (:mod:`.claims`, known gaps in :data:`KNOWN_GAPS`); the pipeline of one chain
(:mod:`ace_helpers.chapters.markov_run.run`, :func:`run_chains`) is re-exported here.  Steps (the paper's first
experiment): sample sequences from a chain ``T``; train ``N_SEEDS`` one-layer toy transformers
as one vectorised ensemble (:func:`ace_helpers.toys.ensemble_runs.train_seeds`); capture the layer output
at every position through ``nnsight.NNsight``; run ACE with the tail's Jacobian; ablate the core
(:mod:`ace_helpers.method.interventions`); fit a linear operator to the core coordinates over sequence
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
init_weight_cosine     per seed pair: the same cosine at initialisation (baseline)
pca_overlap            per seed pair: projector overlap of the seeds' top n − 1 PCA subspaces (baseline)
pca_cca, random_cca    per seed pair: top n − 1 canonical correlations of the coordinates in the seeds'
                       PCA subspaces, and in seeded random (n − 1)-dim subspaces (baselines)
random_overlap_q05     5 %, 50 % and 95 % quantiles of the projector overlap of two random
 .._q50, .._q95        (n − 1)-dim subspaces of R^D (seeded Monte Carlo; its mean is ``random_overlap``)
oracle_overlap         per seed pair: projector overlap of the seeds' one-hot-state oracle subspaces (the
                       top n − 1 directions of the activations' part explained by a linear regression on
                       the one-hot current state: the class-mean subspace; a baseline)
oracle_cca             per seed pair: top n − 1 canonical correlations of the coordinates in the oracle
                       subspaces (what any subspace linear in the current state gives)
core_oracle_overlap    per seed: projector overlap of its core (chosen variant) with its own oracle subspace
consensus_dim          the code release's consensus (GCCA) rank k = min(⌊0.75·D⌋, 0.999-energy rank) of all
                       seeds' centred activations side by side (``consensus_energy_rank``: the latter;
                       ``consensus_cut_ratio``: σ_k²/σ_{k+1}², the spectral gap at the cut)
consensus_ranks        per seed: dimension of its consensus basis orth(pinv(H_c) G) (≤ k)
consensus_keep_acc     per seed: accuracy with only the consensus subspace kept (``consensus_keep_acc_zero``:
consensus_remove_acc   raw projection, the code release's; ``_mean``: about the activation mean) or removed
                       (``consensus_remove_acc_zero``, ``consensus_remove_acc_mean``)
true_eigs              the chain's n − 1 non-unit eigenvalues, [re, im]
core_eigs              per seed: eigenvalues of the fitted core operator, [re, im]
eig_max_error          per seed: max ``|true − fitted|`` after optimal matching from the true set
eig_rel_error          per seed, per true eigenvalue (``true_eigs`` order): ``|λ̂ − λ| / |λ|`` of the
                       matched fitted eigenvalue (:func:`ace_helpers.chapters.markov_run.spectra.relative_eig_errors`)
eig_rel_error_state    the same for the operator fitted to each core coordinate's current-state
                       mean (:func:`ace_helpers.chapters.markov_run.spectra.state_mean_coords`)
eig_rel_floor          per true eigenvalue: the test steps' own sampling floor (the eigenvalues of
                       the transition matrix counted on them, :func:`ace_helpers.chapters.markov_run.spectra.sampling_floor`)
coord_state_r2         per seed, per core coordinate: share of its variance set by the current state
r2                     per seed: R² of the one-step core dynamics fit
r2_oracle              oracle R² of the chain (:func:`ace_helpers.toys.tasks.markov.oracle_r2`)
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

from typing import Any

from ace_helpers.chapters.markov_cores.claims import KNOWN_GAPS, build_claims, eigen_summary, r2_ratios
from ace_helpers.chapters.markov_cores.baselines import baseline_results
from ace_helpers.chapters.markov_run.run import (  # noqa: F401 - the chapter's pipeline
    ABLATIONS,
    ALL_VARIANTS,
    ANALYSIS_BATCH,
    EXTRA_KEYS,
    HOOK,
    MAX_STATES,
    PAPER_ABLATION,
    PAPER_TAIL,
    TAILS,
    ChainRun,
    SeedAnalysis,
    TrainResult,
    VariantResult,
    activation_gramian,
    analyse_model,
    capture_states,
    chain_results,
    model_seeds,
    relative_eig_errors,
    sampling_floor,
    state_mean_coords,
    tail_jacobian,
    toy_config,
    train_models,
)
from ace_helpers.chapters.markov_run.jobs import hook_site, run_chains  # noqa: F401 - the chapter's run
from ace_helpers.method.checks import check_choice, check_int, check_list, check_range
from ace_helpers.method.devices import check_device, resolve_device
from ace_helpers.repro.params import ChapterParams, Params
from ace_helpers.toys.precision import resolve_precision
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, state_r2, validate_transition

__all__ = [
    "ABLATIONS", "ALL_VARIANTS", "KNOWN_GAPS", "PAPER_ABLATION", "PAPER_TAIL", "PARAMS", "PRESETS", "TAILS", "ChainRun",
    "SeedAnalysis", "TrainResult", "VariantResult", "activation_gramian", "analyse_model", "baseline_results", "build_claims",
    "capture_states", "chain_results", "eigen_summary", "hook_site",
    "model_seeds", "r2_ratios", "relative_eig_errors", "run", "run_chains", "sampling_floor",
    "state_mean_coords", "state_r2", "tail_jacobian", "toy_config", "train_models",
]  # fmt: skip

NOTEBOOK = "01_markov_cores"

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
    "PRECISION": "auto",
    "DATA_SEED": 0,
    "TEST_DATA_SEED": 999,
    "DEVICE": "auto",
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
MEMORY_LIMIT = 8 * 2**30


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
    p["DEVICE"] = check_device("DEVICE", p["DEVICE"])
    p["PRECISION"] = resolve_precision("PRECISION", p["PRECISION"], resolve_device(p["DEVICE"]))
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


def run(cfg: Params, *, workers: int | None = None) -> dict[str, Any]:
    """The chapter's flat results (keys above): the main chain with its baselines
    (:func:`~ace_helpers.chapters.markov_cores.baselines.baseline_results`: random, PCA and one-hot-state
    oracle subspaces, and the consensus subspace), then each of
    ``EXTRA_CHAINS`` (:func:`run_chains`, which also returns the runs themselves).  Every seed of every chain
    trains and is analysed in one of ``workers`` processes (default: the CPU cores on a CPU run); the
    results do not depend on ``workers``."""
    results, main, _ = run_chains(cfg, workers=workers)
    results.update(baseline_results(main))
    return results
