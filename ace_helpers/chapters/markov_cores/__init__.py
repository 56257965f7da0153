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

from ace_helpers.chapters.markov_cores.baselines import baseline_results
from ace_helpers.chapters.markov_cores.claims import KNOWN_GAPS, build_claims
from ace_helpers.chapters.markov_cores.knobs import (  # noqa: F401 - the chapter's knobs, declared once there
    CHAIN_3_NONCIRCULANT,
    CHAIN_5_COMPLEX,
    KNOBS,
    MEMORY_LIMIT,
    NOTEBOOK,
    PARAMS,
    PRESETS,
    check,
    memory_estimate,
)
from ace_helpers.chapters.markov_cores.measures import eigen_summary, r2_ratios
from ace_helpers.chapters.markov_run.jobs import hook_site, run_chains
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
from ace_helpers.repro.params import Params
from ace_helpers.toys.tasks.markov import state_r2

__all__ = [
    "ABLATIONS",
    "ALL_VARIANTS",
    "KNOWN_GAPS",
    "PAPER_ABLATION",
    "PAPER_TAIL",
    "PARAMS",
    "PRESETS",
    "TAILS",
    "ChainRun",
    "SeedAnalysis",
    "TrainResult",
    "VariantResult",
    "activation_gramian",
    "analyse_model",
    "baseline_results",
    "build_claims",
    "capture_states",
    "chain_results",
    "eigen_summary",
    "hook_site",
    "model_seeds",
    "r2_ratios",
    "relative_eig_errors",
    "run",
    "run_chains",
    "sampling_floor",
    "state_mean_coords",
    "state_r2",
    "tail_jacobian",
    "toy_config",
    "train_models",
]


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
