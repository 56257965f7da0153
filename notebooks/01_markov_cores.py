# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 1: Markov-chain transformers — one 3-D core per seed, the same up to a linear map?
#
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **[The paper](https://arxiv.org/abs/2602.22600):** Independently trained one-layer transformers on a 4-state Markov chain share a 3-D core out of 64 dimensions: necessary and sufficient, in nearly orthogonal subspaces (projector overlap 0.02–0.04) yet linearly equivalent (CCA 0.999, 0.999, 0.929), with a fitted operator whose eigenvalues match the chain's to < 1 %.
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# The paper's first experiment (its Markov-chain figure, panels A–E) trains small transformers to predict the next state of a
# 4-state Markov chain. Each model has one post-LN encoder layer with d_model = 64. ACE then finds,
# in every seed, a **3-dimensional core** inside the 64-dimensional residual stream. The core is
# sufficient (keeping only it keeps the accuracy) and necessary (removing it drops accuracy to
# chance). The cores of different seeds lie in nearly orthogonal subspaces. Yet their coordinates
# are linearly equivalent (CCA ≈ 1). Panel D tests whether that equivalence is special to the core;
# in our runs it is not: any subspace whose coordinates are linear in the current state gives it. A
# linear operator fitted to the core coordinates, step by step along the sequence, has the chain's
# own eigenvalues (to within 1 %, the paper says; the weak real mode is a few percent off here, see
# panel E).
#
# This chapter reproduces each panel (A–E) and turns it into a tool for any chain you supply
# (the `T` parameter, or `EXTRA_CHAINS`). It also adds two refinements to the method, each shown
# beside the paper's variant:
#
# * `TAIL="centered"` takes the Jacobian of the logits minus their mean. The paper's `"logits"`
#   uses the raw logits.
# * `ABLATION="mean"` keeps or removes the core about the activation mean. The paper's `"zero"`
#   projects the raw activation.
#
# ```{admonition} Run this chapter
# :class: tip dropdown
# From `notebooks/`: `papermill 01_markov_cores.ipynb out.ipynb -p PRESET ci -p N_SEEDS 2 -p EPOCHS 8 -p TAIL centered -p ABLATION mean`
# Your own chain: add `-y "T: [[0.9, 0.1], [0.2, 0.8]]"` (2 to
# 64 states, rows summing to 1); a bad value stops the run in its second cell with a `ValueError`
# naming the knob.
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None: $ACE_PRESET, else "book" (the paper settings)
T = None  # transition matrix as a list of rows (row: current state); None: the 4-state paper chain
N_SEEDS = None  # number of models; model m uses seed SEED + 100·m (paper: 3)
EPOCHS = None  # training epochs (paper: 40)
D_MODEL = None  # residual width of the one-layer transformer (paper: 64)
N_TRAIN = None  # training sequences (paper: 3000)
N_TEST = None  # test sequences; ACE uses all positions of all of them (paper: 3000)
SEQ_LEN = None  # sequence length; the model sees SEQ_LEN − 1 tokens (paper: 32)
ENERGY = None  # cumulative-energy threshold of the ACE rank rule (paper: 0.999)
TAIL = None  # "centered" (logits minus their mean) | "logits" (the paper's raw logits)
ABLATION = None  # "mean" (project about the activation mean) | "zero" (the paper's raw projection)
SEED = None  # base seed of model initialisation, data order and dropout
LR = None  # AdamW learning rate (paper: 1e-4, no weight decay)
BATCH_SIZE = None  # mini-batch size (paper: 64)
PRECISION = None  # "auto" (bf16 on a GPU with native bf16, else fp32: the stored results), "fp32", "bf16" (bf16 matmuls)
DEVICE = None  # where the models train: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"
DATA_SEED = None  # numpy RandomState seed of the training sequences (paper: 0)
TEST_DATA_SEED = None  # numpy RandomState seed of the test sequences (paper: 999)
EXTRA_CHAINS = None  # "try your own chain": more transition matrices, analysed the same way
EXTRA_SEEDS = None  # models trained per extra chain
EXTRA_EPOCHS = None  # training epochs for the extra chains
OUTPUT_DIR = None  # where results.json goes; None: outputs/01_markov_cores

# %% tags=["hide-input", "hide-output"]
import time

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display
from myst_nb import glue

import ace_helpers
from ace_helpers.chapters import markov_cores as chapter
from ace_helpers.chapters.markov_cores import baseline_tables
from ace_helpers.chapters.markov_cores import figures as plots
from ace_helpers.repro import session
from ace_helpers.repro.claims_view import ClaimsView
from ace_helpers.toys.tasks.markov import chain_summary

start_time, start_cpu = time.perf_counter(), time.process_time()
cfg = session.start(chapter, globals())  # validates every knob before any compute, then prints what runs

# %% [markdown]
# ## The chain
#
# Rows are the current state. The paper's chain is circulant: stay with probability 0.75,
# step forward with 0.25. Its eigenvalues are 1, 0.75 ± 0.25i and 0.5. A model can do no better
# than the Bayes accuracy Σ_x π(x) max_y T[x, y] = 0.75. Always guessing the most frequent
# state gives the chance level ≈ 0.25.

# %%
chain = chain_summary(cfg["T"])
print("T =", np.array(cfg["T"]))
print(f"n = {chain['n_states']} states; stationary π = {np.round(chain['stationary'], 4).tolist()}")
print("non-unit eigenvalues:", [complex(round(a, 4), round(b, 4)) for a, b in chain["true_eigs"]])
print(f"Bayes accuracy {chain['bayes_acc']:.4f}; oracle R² {chain['r2_oracle']:.4f}")

# %% [markdown]
# ## ACE in plain sight
#
# Before the full pipeline, the method itself on one model: a model trained here on the chain with
# this chapter's knobs (seed `SEED`). Capture the layer output at every position of the test
# sequences, balance its covariance against the Jacobian Gram of the centered logits (the tail after
# the layer is linear, so the Jacobian is one matrix), keep the directions the energy rule picks, and
# run the model with only those kept.
# %%
site = chapter.hook_site(cfg)
h = ace_helpers.capture(site.model, site.inputs, site.hook)  # (sequences, positions, D_MODEL)
core = ace_helpers.extract_core(h.reshape(-1, h.shape[-1]), site.jacobian, energy=cfg.ENERGY)
kept = ace_helpers.run_with_core(site.model, site.inputs, site.hook, core, "keep")
print(f"core rank {core.rank} (n - 1 = {len(cfg.T) - 1}); next-token accuracy with only the core {site.score(kept):.3f}, "
      f"whole model {site.accuracy():.3f}")

# %% [markdown]
# ## Training the seeds and extracting the cores
#
# `chapter.run` does the whole pipeline for the main chain, then for each extra chain:
#
# 1. It samples the data and trains the seeds together as one vectorised ensemble. The stacked
#    weights are trained with batched matmuls. Each member has its own data order and its own
#    dropout generator, so its run does not depend on the other members. `benchmarks/markov_training.py`
#    compares this with sequential training. On one CPU thread the two are about equally fast,
#    because the step is compute-bound (matrix products and dropout masks), not Python-bound.
# 2. It captures the layer output at every position of every test sequence. At the paper's
#    settings that is 3000 × 31 = 93,000 rows of dimension 64. The capture goes through
#    `nnsight.NNsight`.
# 3. It runs ACE with each tail and ablates the cores inside the model with
#    `ace_helpers.method.interventions`.
# 4. It fits the core dynamics z_{t+1} ≈ A z_t over sequence positions and compares the seeds.

# %%
results = chapter.run(cfg)
for key, text in plots.prose_numbers(results).items():  # the numbers the text below quotes
    glue(key, Markdown(text), display=False)
print(f"trained {cfg.N_SEEDS} seeds in {results['train_s']:.0f} s ({results['train_cpu_s']:.0f} CPU s); "
      f"main chain total {results['chain_s']:.0f} s ({results['chain_cpu_s']:.0f} CPU s)")
print("final training loss per seed:", np.round(results["train_loss"], 4).tolist())
print("full-model test accuracy per seed:", np.round(results["base_acc"], 4).tolist(), f"(Bayes {results['bayes_acc']:.4f})")

# %% [markdown]
# ## A. Different weights
#
# The paper describes the seeds as having "different weights". Our reruns of the official code
# release on this CPU found cosine similarities of 0.03–0.05 between the flattened parameter vectors;
# this run finds {glue:md}`weight_cos`.

# %% tags=["hide-input"]
n_seeds = len(results["seeds"])
pairs = plots.seed_pairs(n_seeds)
plots.plot_weight_cosine(plots.pair_matrix(results["weight_cosine"], n_seeds, pairs))
plt.show()
print("weight cosine per pair:", np.round(results["weight_cosine"], 4).tolist())
print("the same pairs at initialisation:", np.round(results["init_weight_cosine"], 4).tolist())

# %% [markdown]
# *Panel A (paper): cosine similarity of the seeds' flattened parameter vectors — look at the
# off-diagonal cells: near 0, far from the diagonal's 1.*
#
# The seeds end up with nearly orthogonal weight vectors. Independent initialisations are nearly
# orthogonal to begin with (the shared LayerNorm gains put a floor of a few hundredths), so the
# test that can fail is whether training brings them together: the second line gives the same
# pairs before training, and the claims table compares the two.
#
# ## B. The core is necessary and sufficient
#
# Paper: the core-only accuracy equals the full model's (0.7501), and removing the core drops
# accuracy to chance. We show both variants. "paper" uses the raw-logit core and projects the raw
# activation. "ours" uses the centered-logit core and projects about the activation mean (the
# `TAIL` and `ABLATION` parameters).

# %% tags=["hide-input"]
plots.plot_necessity_sufficiency(
    results["bayes_acc"], results["chance_acc"], results["base_acc"],
    {"ours": (results["keep_acc"], results["remove_acc"]),
     "paper": (results["keep_acc_paper"], results["remove_acc_paper"])},
)
plt.show()
print("core only   :", np.round(results["keep_acc"], 4).tolist(), "| paper variant:", np.round(results["keep_acc_paper"], 4).tolist())
print("core removed:", np.round(results["remove_acc"], 4).tolist(), "| paper variant:", np.round(results["remove_acc_paper"], 4).tolist())
print(f"chance {results['chance_acc']:.4f}, Bayes {results['bayes_acc']:.4f}")

# %% [markdown]
# *Panel B (paper): next-state accuracy of the full model, the core alone and the model without its
# core (dots: seeds) — look at "Core only" matching "Full model" and "Core removed" at "Chance".*
#
# A few dimensions carry everything the model needs. With them alone the model predicts as well
# as with all 64. Without them it falls to the level of always guessing one state.
#
# ## Why the core has n − 1 = 3 dimensions: the softmax-invariant direction
#
# Predicting the next state depends only on which of the n states the chain is in. The model
# needs n distinct logit vectors, one per state. Adding the same constant to all logits changes
# no probability, so only the differences between logits matter. n points span n − 1 dimensions
# of differences. So the core holds n − 1 directions, one per non-trivial eigen-mode of T
# (0.75 ± 0.25i and 0.5 here).
#
# ```{fold} Show why: the rank with and without the softmax-invariant direction, per seed
# ```
#
# The raw-logit Jacobian W_U also sees the **softmax-invariant direction**, the one that moves
# every logit by the same amount. It carries no information, but it does carry balanced energy.
# On the paper's chain that energy sits right at the 0.999 cut. Our reruns of the official code
# release (`joshseth/cores`, `markov.py`) on this CPU, five seeds: model 0 has a share of 0.00088,
# just below 1 − 0.999 = 0.001, so its rank is 3; two of the five seeds land just above the cut and
# get rank 4. The centered tail J = (I − 11ᵀ/K) W_U has this direction in its null space. With it,
# the rank rule sees only the n − 1 chain modes.

# %% tags=["hide-input"]
n = results["n_states"]
print(f"logits tail: rank per seed {results['core_ranks_paper']}; energy of the first n − 1 = {n - 1} directions",
      np.round(results["energy_at_n_minus_1"], 5).tolist(), f"(cut {cfg['ENERGY']})")
print(f"energy share of direction n = {n}:", np.round(results["energy_softmax_share"], 5).tolist(),
      f"(1 − cut = {1 - cfg['ENERGY']:.4f})")
print(f"|cos(W_U q_{n}, 1)| per seed:", np.round(results["softmax_cos"], 4).tolist())
print("centered tail: rank per seed", results["core_ranks"])
plots.plot_energy_cut({"logits": results["energy_shares_logits"], "centered": results["energy_shares_centered"]},
                       cfg["ENERGY"])
plt.show()

# %% [markdown]
# *Figure (ours): energy left after the first k balanced directions, per seed and tail, on a log
# scale — look at where each curve crosses the dashed cut: the centered tail at k = n − 1, the raw
# logits near it.*
#
# The n-th balanced direction of the raw-logit core maps to a logit change almost parallel to
# the all-ones vector, so it only shifts every logit by the same amount. Its energy share is of
# the same order as 1 − 0.999, so whether it enters the core is luck of the seed. With the
# centered tail the curve drops below the cut at exactly n − 1 in every seed.
#
# ## C. Cores lie in different subspaces
#
# Paper: the pairwise projector overlap is 0.02–0.04. Random 3-dimensional subspaces of R⁶⁴ give
# r/D ≈ 0.047. This run: overlaps {glue:md}`overlap_range` (random level {glue:md}`random_overlap`),
# principal angles {glue:md}`angle_range`.

# %% tags=["hide-input"]
plots.plot_projector_overlap(plots.pair_matrix(results["projector_overlap"], n_seeds, pairs),
                              results["random_overlap"])
plt.show()
for (i, j), ov, ang in zip(pairs, results["projector_overlap"], results["principal_angles"]):
    print(f"seeds {i + 1}–{j + 1}: overlap {ov:.4f}, principal angles {np.round(ang, 1).tolist()}°")
print(f"two random {n - 1}-dim subspaces: 5–95 % of overlaps in [{results['random_overlap_q05']:.3f}, "
      f"{results['random_overlap_q95']:.3f}]; the seeds' top {n - 1} PCA subspaces:",
      np.round(results["pca_overlap"], 4).tolist())
print(f"the seeds' one-hot-state oracle subspaces ({n - 1}-dim):", np.round(results["oracle_overlap"], 4).tolist())

# %% [markdown]
# *Panel C (paper): projector overlap between the seeds' cores — look at the off-diagonal cells
# against the random level r/D in the title.*
#
# The overlap is at the level of random subspaces and all principal angles are large: geometrically
# the cores are as unrelated as two random subspaces (the claim fails if a pair's overlap is above
# 95 % of random pairs). The seeds' top PCA subspaces of the same dimension are as unrelated, and so
# are their one-hot-state oracle subspaces (defined in panel D): low overlap is what any two seeds'
# subspaces of this size show, whatever they hold.
#
# ## D. Core coordinates are the same up to a linear map
#
# Paper: the canonical correlations between two seeds' core coordinates, on the same 93,000
# inputs, are 0.999, 0.999 and 0.93. The paper keeps the top 3. We score the top n − 1 (our
# choice): a chain with n states has n − 1 core directions, so for any other chain a fixed 3 would
# compare too many or too few.

# %% tags=["hide-input"]
cca_mean = [float(np.mean(c)) for c in results["cca"]]
plots.plot_cca(plots.pair_matrix(cca_mean, n_seeds, pairs), results["cca"])
plt.show()
for (i, j), c in zip(pairs, results["cca"]):
    print(f"seeds {i + 1}–{j + 1}: CCA {np.round(c, 4).tolist()}")
for (i, j), r, pc, o in zip(pairs, results["random_cca"], results["pca_cca"], results["oracle_cca"]):
    print(f"seeds {i + 1}–{j + 1}, baselines: random subspaces {np.round(r, 4).tolist()}, PCA subspaces "
          f"{np.round(pc, 4).tolist()}, one-hot-state oracle subspaces {np.round(o, 4).tolist()}")

# %% [markdown]
# *Panel D (paper): mean of the top n − 1 canonical correlations between the seeds' core
# coordinates (each pair's values under the plot) — look at the off-diagonal cells near 1.*
#
# Two directions match almost perfectly ({glue:md}`cca_top2` over the seed pairs). These are the two
# big ones, carrying the rotation pair 0.75 ± 0.25i. The third, the weak λ = 0.5 mode, matches less
# well ({glue:md}`cca_third`; the paper: 0.929) but is still strongly correlated. The seeds compute
# the same thing in different coordinates.
#
# ```{fold} Show whether this alignment is special to the core: random, PCA and one-hot oracle subspaces
# ```
#
# Is this alignment special to the core? Each core coordinate is almost entirely set by the current
# token (the share printed under panel E), and two variables that are each a linear function of the
# same state correlate perfectly, whatever the directions that hold them. So we compare the cores with
# three non-core subspaces of the same dimension n − 1 in each seed, on the same activations:
#
# * a seeded **random** subspace;
# * the seed's **top PCA** subspace (most variance);
# * the seed's **one-hot-state oracle** subspace: regress the centred activations on the one-hot
#   current state and keep the top n − 1 directions of the fitted part (the class-mean subspace). Its
#   coordinates are, by construction, as close to linear in the current state as the activations allow.

# %% tags=["remove-input"]
display(Markdown(baseline_tables.subspace_table(results)))
display(Markdown(baseline_tables.cca_specificity(results)))

# %% [markdown]
# Random subspaces correlate far less, so the alignment is not what an arbitrary low-dimensional view
# gives. But the oracle and PCA subspaces align as well as the cores, and each seed's core nearly
# coincides with its own oracle subspace (the overlap in the sentence above). CCA ≈ 1 across seeds therefore
# says that every seed holds the current state linearly in n − 1 dimensions, which any model that
# predicts the next state well must do; it does not single the core out among such subspaces. What
# singles the core out is the keep/remove test of panel B: it is found from the model's own output
# sensitivity, without the state labels, and it is necessary as well as sufficient. The claims table
# records this as `ours.markov_cores.cca_not_core_specific`, a rule that fails if the cores align
# beyond what the state explains.
#
# ## The code release's consensus subspace: sufficient, not necessary
#
# The code release also builds a **consensus** of all seeds, without the task or the tail (its panel is
# commented out of the paper's final figure). Put every seed's centred activations on the same test
# inputs side by side, keep the top k = min(⌊0.75·D⌋, 0.999-energy rank) left singular vectors G, and
# map them into each seed with its least-squares read-out, orth(pinv(H_c) G). Then keep and remove that
# subspace in each seed, exactly as the core in panel B. The code release reports it sufficient but not
# necessary (keep = the full accuracy, removed 0.53–0.55), unlike the core.
#
# ```{fold} Show the consensus subspace's keep and remove accuracies, per seed
# ```

# %%
print(f"consensus rank k = {results['consensus_dim']} (cap ⌊0.75·D⌋, 0.999-energy rank "
      f"{results['consensus_energy_rank']}); per seed {results['consensus_ranks']}; spectral gap at the cut "
      f"σ_k²/σ_(k+1)² = {results['consensus_cut_ratio']:.3f}")
display(Markdown(baseline_tables.consensus_table(results)))

# %% [markdown]
# The consensus subspace is large (three quarters of the residual width), so keeping it keeps the
# state and the full accuracy. Removing it leaves a quarter of the width, and under the code release's
# zero ablation the model still predicts far above chance: part of the state survives outside the
# consensus. The core, a handful of dimensions, is both sufficient and necessary. The mean-ablation
# column is shown beside it; the rule reads the code release's zero ablation.
#
# Read the removed accuracy as "well above chance", not as a number to match: the cap ⌊0.75·D⌋, not a
# gap in the spectrum, sets k (the energy rank above is larger, and the gap at the cut is close to 1).
# Directions just inside and just outside the cut carry nearly the same energy, so a different cap, a
# different set of seeds, or even the last bits of the floating-point kernels move the removed accuracy
# by several points while the verdict stays.
#
# ## E. The core operator has the chain's spectrum
#
# Paper: the eigenvalues of the operator fitted to the core coordinates match the chain's to
# within 1 %, and R²/R²_oracle > 0.98 (R²_oracle = 0.5 for this chain). We measure the error as
# the paper states it, relative to each true eigenvalue: |λ̂ − λ|/|λ|, with each true eigenvalue
# matched to one fitted eigenvalue. R²_oracle averages over one-hot coordinates, so it depends on
# the basis. We add a basis-free comparator, `r2_state`: the R² of regressing the next core
# coordinates on the one-hot current state.

# %% tags=["hide-input"]
ratio_oracle, ratio_state = chapter.r2_ratios(results)
plots.plot_spectrum(results["true_eigs"], results["core_eigs"], ratio_oracle)
plt.show()
for s in range(n_seeds):
    eigs = [complex(round(a, 4), round(b, 4)) for a, b in results["core_eigs"][s]]
    print(f"seed {s + 1}: eigenvalues {eigs}; max relative error {max(results['eig_rel_error'][s]):.4f}; "
          f"R² {results['r2'][s]:.4f}, R²/R²_oracle {ratio_oracle[s]:.3f}, R²/r2_state {ratio_state[s]:.3f}")
display(Markdown(plots.eigen_table(results)))
print("share of each core coordinate's variance set by the current state, per seed:",
      [np.round(v, 4).tolist() for v in results["coord_state_r2"]])

# %% [markdown]
# *Panel E (paper): the chain's non-unit eigenvalues (circles) and each seed's fitted core-operator
# eigenvalues (crosses) in the complex plane — look at the crosses sitting inside the circles.*
#
# The fitted operator finds the chain's non-trivial spectrum, but not everywhere to the paper's
# 1 %. The rotation pair 0.75 ± 0.25i comes out within {glue:md}`eig_complex` in every seed; the
# weak real mode λ = 0.5 within {glue:md}`eig_real`. R²/R²_oracle is {glue:md}`ratio_oracle`: the
# operator reaches the R² that the current state allows.
#
# How far can a fit on these test sequences get? Even a core that held exactly the current state
# would see the transition matrix as counted on the test steps, not T itself. Its eigenvalues are
# the **sampling floor** (the table's last column: {glue:md}`eig_floor` at most on this run's test
# steps, not far from the paper's 1 % by itself). The column before it fits the operator to each core
# coordinate's mean over the positions with the same current state. That fit lands on the floor
# ({glue:md}`eig_state`). So the operator fit is sound and the core holds the state linearly. The
# gap comes from the part of the weak coordinate that the current state does not set: here
# {glue:md}`weak_unset` of its variance, against {glue:md}`strong_unset` for the rotation pair's
# two coordinates (printed above the table). The weak mode carries only {glue:md}`weak_energy` of
# the balanced energy, so small history- or position-dependent terms in it move its fitted
# eigenvalue. The claims table tests this explanation in its diagnosis row.
#
# ## The two refinements beside the paper's variant
#
# The table puts our defaults next to the paper's variant (raw-logit tail, zero ablation) on the
# same models. When the paper's core has a 4th, softmax-invariant dimension, that dimension is
# almost unpredictable from step to step. It pulls down R² (a mean over dimensions), and the
# operator gets one spurious eigenvalue, which the optimal matching from the true set leaves out.
# On less symmetric chains, projecting about zero also discards the mean's off-core component.
# Keeping the mean (`ABLATION="mean"`) avoids that cost.
#
# ```{fold} Show the two refinements beside the paper's variant
# ```

# %% tags=["remove-input"]
display(Markdown(plots.variant_table(results, cfg["TAIL"], cfg["ABLATION"])))

# %% [markdown]
# The ablation choice and the tail choice can be separated: all four combinations on the same
# models (mean accuracy over seeds).

# %% tags=["remove-input"]
display(Markdown(plots.ablation_table(results)))

# %% [markdown]
# ## Try your own chain
#
# Any irreducible row-stochastic matrix works. Pass it as `T` to rerun the whole chapter, or add
# it to `EXTRA_CHAINS`. For example:
#
# ```{fold} Show the extra chains: cores, ablations and spectra
# ```
#
# ```
# papermill 01_markov_cores.ipynb out.ipynb -y "T: [[0.9, 0.1, 0.0], [0.0, 0.9, 0.1], [0.1, 0.0, 0.9]]"
# ```
#
# (`-y` passes YAML, so the matrix arrives as a list; `-p` would pass it as a string.) A matrix
# that is not square, has a negative entry, has a row that does not sum to 1, or is reducible
# stops the notebook in its second cell with a `ValueError` that says which.
#
# The book preset runs two extra chains. Chain 1 has 3 states, is non-circulant and reversible,
# and has a real spectrum. Chain 2 has 5 states, is a lopsided non-circulant cycle, and has two
# complex pairs. The prediction for each is a core of rank n − 1 (centered tail), the chain's
# eigenvalues in the core operator, and R² at the one-hot-state level.

# %% tags=["hide-input"]
if results["extra_n_states"]:
    display(Markdown(plots.extra_table(results)))
    for c in range(len(results["extra_n_states"])):
        display(Markdown(f"Extra chain {c + 1}, core-only / core-removed accuracy by tail and ablation:"))
        display(Markdown(plots.ablation_table(results, "extra_", c)))
    last = len(results["extra_n_states"]) - 1
    ratio_last = [a / results["extra_r2_oracle"][last] for a in results["extra_r2"][last]]
    plots.plot_spectrum(results["extra_true_eigs"][last], results["extra_core_eigs"][last], ratio_last,
                         title=f"Your chain (ours): n = {results['extra_n_states'][last]} states")
    plt.show()
else:
    print("no extra chains at this preset (EXTRA_CHAINS is empty)")

# %% [markdown]
# *Figure (ours, as panel E): the last extra chain's eigenvalues (circles) and its core operator's
# (crosses) — look at the complex pairs being recovered too.*
#
# On these chains too the centered-tail core has n − 1 dimensions and carries the chain's spectrum,
# to the relative errors in the table (the floor in brackets is this chain's own sampling floor).
# The raw-logit tail (column "rank (logits)") gives n on both: the softmax-invariant direction again.
# On the 3-state chain, the zero ablation loses accuracy with either tail: the core alone, projected
# about zero, no longer predicts as well as the full model. Keeping the activation mean's
# off-core component (`ABLATION="mean"`) restores it. On the symmetric paper chain both
# ablations are equal. R²/R²_oracle can exceed 1 on an asymmetric chain, because the oracle
# averages over one-hot coordinates, so its value depends on the basis. R²/r2_state stays at 1.
#
# ## Claims
#
# `chapter.build_claims` gives, per row, the paper's statement and where it is stated, our
# acceptance rule (the paper's value where it gives one; the rule says where and why ours differs,
# and which weaker form counts as *partly*), our number and the verdict. The paper-variant
# equal-accuracy claim is checked only when `T` is the paper chain (its 4 × 4 shape and values),
# the third canonical correlation only when n − 1 ≥ 3, and the eigenvalue diagnosis only when the
# eigenvalue row misses 1 %. The rows that read the baselines (random, PCA and one-hot-state oracle
# subspaces; the consensus subspace) say how much of each result is specific to the core.

# %% tags=["remove-input"]
claims = chapter.build_claims(results, cfg)
records = claims.records(f"{cfg.PRESET} preset")
display(ClaimsView(claims))

# %% tags=["remove-cell"]
print(claims.summary())

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(claims.verdict())  # the tests compare this line: a failure that is not a documented known gap changes it

# %% [markdown]
# ## Results
#
# `results.json` keys are documented in the `ace_helpers.chapters.markov_cores` module docstring. `_paper`
# keys hold the paper's variant (raw-logit tail, zero ablation), and `extra_*` keys hold one
# entry per extra chain.

# %% tags=["remove-cell"]
results["wall_s"] = time.perf_counter() - start_time
results["cpu_s"] = time.process_time() - start_cpu
session.finish(cfg, results, records)  # glues the verdicts shown at the top, writes results.json
print(f"wall time {results['wall_s']:.0f} s, CPU time of this kernel {results['cpu_s']:.0f} s")
