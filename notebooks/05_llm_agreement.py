# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 5: one steerable axis for subject–verb agreement in real LLMs
#
# The paper's third experiment leaves toy models behind: in pretrained GPT-2 Small, Medium and
# Large, the algorithmic core of **subject–verb agreement** is a *single axis* of the residual
# stream. Keeping only that axis keeps agreement, removing it destroys it, and reflecting the
# prompt's coordinate along it about the dataset mean *inverts* the verb's number — during free
# generation too. Here we run the same analysis on the two language models that ship offline with
# this book (SmolLM2-135M, a Llama; Gemma-3-270M) through nnsight; any Hub model (GPT-2, Llama,
# Gemma, Qwen) or an NDIF-hosted model runs by setting `MODELS` (and `REMOTE`).
#
# **Task.** Prompts end right before the verb: *"The keys next to the cabinet"* → ` are`. The
# attractor noun always has the opposite number. The behaviour is the tense-agnostic logit margin
# m = L[are] + L[were] − L[is] − L[was] at the last token; its ROC-AUC against the plural label
# measures agreement (0.5 = chance, below 0.5 = inverted).
#
# **ACE per layer ℓ.** H = the last-token residual stream at the output of block ℓ−1, over the
# training prompts (Cov and μ); J = ∂m/∂h at that token (Obs = mean g gᵀ, back-propagated through
# the rest of the network — all layers' gradients from one backward pass per batch). The core is the
# top balanced direction q (rank fixed to 1, as in the paper). We read H with a hook on the block,
# not from HF's `hidden_states`, so that at the last layer the core is estimated *before* the final
# norm — where the edits are applied.

# %% [markdown]
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **The paper:** Subject–verb agreement in language models runs through one axis per model: keeping it preserves agreement, removing it destroys it, flipping it inverts grammatical number (also throughout generation), and the axes of different models are aligned (Spearman up to 0.93).
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# ```{admonition} Run this chapter
# :class: tip
# From `notebooks/`: `papermill 05_llm_agreement.ipynb out.ipynb -p PRESET ci` (SmolLM2 only, 300
# prompts, every other layer: a few minutes on a CPU). Change the main knobs with `-p`, e.g.
# `-p MODELS gemma3-270m -p N_PROMPTS 400 -p LAYERS all -p GEN_TOKENS 40`; several models as a list:
# `-y "MODELS: [smollm2-135m, gemma3-270m]"`; your own prompts: `-p PROMPTS_FILE my_prompts.csv`
# (UTF-8, columns `prompt,number`). A model that cannot be loaded here, or sizes that would not fit
# in memory, are refused in the second cell, before any compute.
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None: $ACE_PRESET, else "book"
MODELS = None  # model names: "smollm2-135m", "gemma3-270m", or Hub ids ("gpt2", "meta-llama/Llama-3.1-8B", ...)
REMOTE = None  # True: run the traces on NDIF (needs NDIF_API_KEY; no generation section)
N_PROMPTS = None  # synthetic prompts (half singular); split 50/50 into train (core) and test (evaluation)
PROMPTS_FILE = None  # your own prompts (CSV prompt,number or JSON list); replaces the synthetic set
LAYERS = None  # "all", or a list of layers ℓ (1-based: output of block ℓ−1) to sweep
SEED = None  # seed of the prompt generator, the split and the sampled generations
BATCH_SIZE = None  # prompts per forward/backward batch
GEN_TOKENS = None  # new tokens per steered generation (paper: 50)
GEN_SAMPLES = None  # sampled generations per generation prompt
GEN_REFINE = None  # extra secant steps in the per-step flip calibration (0: a single secant step)
GEN_EPS = None  # target copula margin on the other side at every step, in nats (official code: 1.0)
N_PERMUTATIONS = None  # permutations for the cross-model alignment p-value
OUTPUT_DIR = None  # where results.json goes; None: outputs/05_llm_agreement

# %% tags=["hide-input"]
import time

import numpy as np
from IPython.display import Markdown, display

from myst_nb import glue

from ace_helpers import artifacts, params, report
from ace_helpers.chapters import llm_agreement as chapter
from ace_helpers.plots import llm_agreement as plots
from ace_helpers.tasks.agreement import DEMO_PROMPTS, agreement_split

T0 = time.perf_counter()
cfg = chapter.PARAMS.resolve(globals())  # validates every knob before any compute
params.begin(cfg)

# %% [markdown]
# ## Data
#
# The synthetic set of the official code release (`build_sva_dataset` in `joshseth/cores`'s
# `src/cores/SVA_uni.py`, drawn here in our own order): 9 singular and 9 plural heads, an
# opposite-number attractor, six connectors, five templates (plain, front pad, back pad, the
# ungrammatical "There …", a relative clause), "In the past," in front of half of them; split 50/50
# with the seed. `PROMPTS_FILE` replaces it with your own prompts (read once, in the check).

# %%
data = agreement_split(cfg.N_PROMPTS, cfg.SEED, cfg.PROMPTS_FILE)
print(f"{len(data.train_prompts)} train / {len(data.test_prompts)} test prompts; "
      f"test plural fraction {data.test_labels.mean():.2f}")
for text, label in list(zip(data.test_prompts, data.test_labels))[:6]:
    print(f"  {'plural  ' if label else 'singular'} | {text}")

# %% [markdown]
# ## Run every model
#
# For each model: train-prompt states and margin gradients at every layer (one forward + one
# backward per batch), a 1-D core per layer, the keep / remove / flip sweep on the test prompts
# (mean-centred, last token only; each edit recomputes only the last token from the edited layer
# on), the flip demo, and steered generation. The offline models are read from a float32
# safetensors cache built from their GGUF files on first use.

# %%
results = chapter.run_chapter(cfg)

# %% [markdown]
# ## A. Where the agreement core lives: AUC vs depth
#
# **Paper (SVA figure, panel A):** a single axis in GPT-2 S/M/L; keeping it keeps agreement,
# removing it destroys it, flipping it inverts it (AUC < 0.5). Per-model AUCs were not retrievable;
# our own earlier quick port of the official code on the same two offline models (200 train / 200
# test prompts) gave SmolLM2: base 0.90, layers 28–29 keep 0.94, remove 0.47, flip 0.14–0.15;
# Gemma: base 0.88, layers 14–15 keep 0.93, remove 0.56–0.63, flip 0.28–0.34.

# %%
rows = []
for name, r in results.items():
    rows.append(f"| {name} | {r.chosen_layer} / {r.n_layers} | {r.auc_base:.3f} | {r.at_chosen('keep'):.3f} | "
                f"{r.at_chosen('remove'):.3f} | {r.at_chosen('flip'):.3f} | "
                f"{r.spectral_gaps[r.layers.index(r.chosen_layer)]:.1f} |")
display(Markdown("| model | chosen layer ℓ | base AUC | keep | remove | flip | gap w1/w2 |\n|---|---|---|---|---|---|---|\n"
                 + "\n".join(rows)))
curves = [{"name": n, "layers": r.layers, "n_layers": r.n_layers, "base": r.auc_base, **r.auc} for n, r in results.items()]
fig = plots.plot_auc_depth(curves, chosen={n: r.chosen_layer for n, r in results.items()})

# %% [markdown]
# *Fig. A (paper's panel A, layer sweep):* look at the last few layers, where the green (core only)
# line stays at or above the base AUC, orange (core removed) drops towards 0.5 and red (core
# flipped) falls below 0.5; the dotted vertical line is the chosen layer.
#
# In both models nothing happens in the early and middle layers — the number of the subject has
# not reached the last token yet, so a last-token edit cannot touch it — and in the last few layers
# a single direction becomes necessary and sufficient and its reflection inverts agreement, with the
# spectral gap w1/w2 jumping at the same depth. Keep can exceed the base AUC: projecting out
# everything else also removes the attractor's pull.

# %% [markdown]
# ## B. The knob: core coordinate vs margin
#
# **Paper (SVA figure, panel B):** the margin is an affine function of the single core coordinate z = qᵀ(h − μ)
# (values not retrieved). We fit m ≈ a·z + b on the test prompts at the chosen layer.

# %%
for name, r in results.items():
    best = int(np.argmax(r.knob_r2_per_layer))
    print(f"{name}: m ≈ {r.knob.slope:+.3g}·z {r.knob.intercept:+.3g},  R² = {r.knob.r2:.3f} at ℓ = {r.chosen_layer}; "
          f"highest R² over layers {r.knob_r2_per_layer[best]:.3f} at ℓ = {r.layers[best]}")
fig = plots.plot_knob({n: {"z": r.knob.z, "m": r.knob.m, "labels": data.test_labels, "r2": r.knob.r2}
                       for n, r in results.items()})

# %% [markdown]
# *Fig. B (paper's panel B, the knob):* look at how tightly the points follow the black affine
# fit (R² in the legend), with plural prompts (red) to the right of singular ones (blue).
#
# One number per prompt, read off one direction, carries much of the variance of the model's
# agreement decision. When the chosen layer is the last block (Gemma), the final RMS norm still
# sits between the coordinate and the logits and divides by each prompt's residual norm, so the
# relation need not be affine there; the line above prints the layer where the fit is tightest.

# %% [markdown]
# ## C. Flip demo: the six prompts of the official code release's flip demo
#
# **Paper (SVA figure, panel C).** P(is / are / was / were) at the chosen layer under clean / core removed / core flipped, with the
# score log(P(correct pair)/max of the four) and one-sided paired Wilcoxon tests
# (base > removed, base > flipped, removed > flipped), Fisher-combined over models. With six
# prompts the smallest possible one-sided p-value is 1/64 ≈ 0.016.

# %%
for name, r in results.items():
    print(name, {k: np.round(v, 2).tolist() for k, v in r.demo_scores.items()})
    print("   Wilcoxon p:", {k: round(v, 4) for k, v in r.demo_p.items()})
fig = plots.plot_flip_demo({n: r.demo_probs for n, r in results.items()}, [p for p, _ in DEMO_PROMPTS])

# %% [markdown]
# *Fig. C (paper's panel C, flip demo):* compare the colours across the three columns — the share of
# the singular verbs (dark blue *is*, light blue *was*) against the plural ones (red *are*, light
# red *were*) on each prompt, clean, with the core removed, and with it flipped.
#
# Flipping moves the probability mass to the other number's verbs on every prompt, including the
# ungrammatical "There key/keys" frames.

# %% [markdown]
# ## D. Steered generation (panel D is ours)
#
# **Paper:** the flip "inverts grammatical number throughout generation". At every step, at the
# chosen layer and the last position, the official code's *calibrated* flip h + s·(−2qqᵀ(h − μ)) is applied,
# with s chosen per step so that the copula margin logsumexp(are, were) − logsumexp(is, was) lands
# on the other side (sampling at temperature 1, top-k 50, the same seed for the clean and steered
# runs). We score a generation as changed when most of its number-marked verbs (is/are, was/were,
# has/have, does/do) are the form the **clean** model likes less than the other-number form in
# that very context (teacher-forced), and show the same statistic for the clean texts.
#
# **Where we differ, and why.** The official code release's rule (`generate_surgical` in
# `SVA_uni.py`: one secant step from s₀ = 0.2 to a target of 1 nat) undershoots in both offline
# models, as we measured here: the margin grows faster than linearly in s, so the
# achieved margin often stays on the clean side; and even a margin of exactly 1 nat leaves the
# clean number's copula a 27 % chance when sampling at temperature 1. So the book preset adds
# `GEN_REFINE` secant steps (the target is then met to ±0.05 nat) and a target of `GEN_EPS` nats;
# the official code's exact rule is run as well and reported beside it.

# %%
if any(r.generation is not None for r in results.values()):
    rates = {}
    for name, r in results.items():
        if r.generation is None:
            continue
        (rate, scored), (base, _) = r.generation.flip_rate(), r.generation.baseline_rate()
        official_rate = (r.generation_spec or r.generation).flip_rate()[0]
        rates[name] = {"clean": base, "steered": rate}
        print(f"{name}: changed {rate:.2f} of {scored} steered generations with a number-marked verb "
              f"(target {cfg.GEN_EPS} nat, {cfg.GEN_REFINE} refinements); clean texts {base:.2f}; "
              f"official code's one-step 1-nat rule {official_rate:.2f}")
        for prompt, clean, steered in list(zip(r.generation.prompts, r.generation.clean, r.generation.steered))[:: cfg.GEN_SAMPLES]:
            print(f"  PROMPT  {prompt!r}\n  clean   {clean!r}\n  flipped {steered!r}")
    fig = plots.plot_generation(rates)
else:
    print("no generation in remote mode")

# %% [markdown]
# *Fig. D (ours, steered generation):* look at the red bars (calibrated flip) against the grey ones
# (clean texts, sampling noise) and the dotted line at 0.7, our acceptance line for the claim below.

# %% [markdown]
# ## E. Cross-model alignment (panel E is ours) of the core coordinate
#
# **Paper ("Table 6"):** sign-aligned Spearman correlations of per-prompt core coordinates between
# models, "up to 0.93" across families (values not retrieved). The p-value is from random pairings
# of the prompts.

# %%
pairs = chapter.cross_model_alignment(results, cfg)
if pairs:
    display(Markdown("| model A | model B | Spearman | Pearson | permutation p |\n|---|---|---|---|---|\n" + "\n".join(
        f"| {p['a']} | {p['b']} | {p['spearman']:.3f} | {p['pearson']:.3f} | {p['p_value']:.2g} |" for p in pairs)))
    fig = plots.plot_alignment({n: r.test_coords for n, r in results.items()}, data.test_labels)
else:
    print("only one model: no cross-model alignment")

# %% [markdown]
# *Fig. E (ours, cross-model alignment; drawn with two or more models):* look at how closely the
# points follow the diagonal — the same prompts sit at the same place along both models' axes.
#
# Two models of different families, sizes and tokenizers order the same prompts along their
# agreement axes in much the same way.

# %% [markdown]
# ## Claims
#
# The claims are the paper's: one axis, necessary and sufficient, flip inverts, and steered
# generation changes verb number. The paper states them in words, so the numeric lines (base AUC
# ≥ 0.85, core-only ≥ 0.88, removed ≤ 0.75, flipped ≤ 0.25, knob R² ≥ 0.5, generations ≥ 0.70)
# are ours: each sits well on the far side of chance (0.5) or of the clean texts' rate. At the
# `ci` preset (SmolLM2 only, fewer prompts, every other layer) the same thresholds apply; the
# cross-model claim needs two models and is not checked there. A claim measured not to reproduce is
# listed with its reason (`chapter.KNOWN_GAPS`) and does not stop the run.

# %%
claims = chapter.build_claims(cfg, results, pairs)
records = claims.records(f"{cfg.PRESET} preset")
glue("verdicts", Markdown(report.verdict_summary(records)), display=False)  # shown in the summary box at the top
display(Markdown(claims.table()))

# %% [markdown]
# `results.json` is written before the claims are asserted, so that a run whose claims fail still
# leaves its numbers (keys: see the `ace_helpers.chapters.llm_agreement.pipeline` module docstring).

# %%
out = chapter.flat_results(results, pairs, claims)
out["wall_s"] = time.perf_counter() - T0
artifacts.write_results(cfg.OUTPUT_DIR, out, cfg, claims=records)
print(f"wrote {cfg.OUTPUT_DIR}/results.json ({out['wall_s']:.0f} s)")

# %%
# NBVAL_CHECK_OUTPUT
print(claims.verdict())  # the tests compare this line: a failure that is not a documented known gap changes it
