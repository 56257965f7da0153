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
# # Chapter 6: ACE against the alternatives
#
# ```{admonition} The claim, and what this run finds
# :class: note
# **Ours (beyond [the paper](https://arxiv.org/abs/2602.22600)):** on every task with a known answer, ACE is necessary and sufficient at the smallest rank of all methods and its subspace is the ground truth; activity alone (PCA) and relevance alone (the Jacobian Gram) fail on the planted distractors. In the LLMs, ACE's 1-D core is necessary and sufficient for agreement at r = 1 and its flip flips the verb number.
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# The paper argues that a core must be both *active* (it carries activation variance) and
# *relevant* (the output is sensitive to it), and that either criterion alone misses it (its
# Sec. 2). It never sets ACE against other subspace methods. This chapter does (ours, beyond the
# paper), on three tasks where the right answer is known, and on one where it is not:
#
# * the **planted system** of chapter 0 — the planted active-and-relevant block, next to an
#   active-only and a relevant-only distractor block;
# * the **Markov chain** of chapter 1 — the belief state: the n − 1 = 3 dimensional span of the
#   activation means per current state;
# * **modular addition** after grokking (chapter 7's model) — the Fourier subspace of the key
#   frequencies, read from the token embedding;
# * **subject–verb agreement** in the four offline LLMs, SmolLM2-135M, Gemma-3-270M and Qwen2.5-Coder 0.5B and 1.5B (chapter 5's prompts and margin
#   m = L[are] + L[were] − L[is] − L[was]) — no ground truth: causal metrics only.
#
# Each method returns a rank-r basis at the same layer from the same activations: **ACE**;
# **PCA** (activity only, scikit-learn); the **Jacobian Gram** (relevance only); a **linear
# probe** for the task labels (scikit-learn logistic regression, weight rows orthonormalised);
# the **class means**; a **random** subspace; and a **learned** subspace (an orthonormal basis
# trained by gradient descent so that keeping it alone keeps the model's answers, as distributed
# alignment search, DAS, does). DAS is written on torch here: pyvene installs with our pins but
# brings 17 more packages (datasets, pyarrow, plotnine, …), and a keep-only objective through a linear tail needs no more than an
# (D, r) matrix kept orthonormal by a differentiable QR.
#
# ```{admonition} Run this chapter
# :class: tip dropdown
# From `notebooks/`: `papermill 06_ace_vs_alternatives.ipynb out.ipynb -p PRESET ci -p MODADD False -p DAS_STEPS 300`
# (any knob of the parameters cell can be set with `-p NAME VALUE`; a bad value stops the run in its
# second cell with a `ValueError` naming the knob). The `ci` preset skips modular addition and the
# LLMs (`-p LLM_MODELS '["smollm2-135m"]'` adds one; the models load offline).
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None: $ACE_PRESET, else "book"
N_SAMPLES = None  # planted system: activation rows
DIM = None  # planted system: activation dimension
R_CORE = None  # planted system: dimension of each planted block
PLANTED_R_MAX = None  # planted system: ranks 1..PLANTED_R_MAX
T = None  # Markov transition matrix as a list of rows; None: the paper's 4-state chain
D_MODEL = None  # Markov model width
SEQ_LEN = None  # Markov sequence length
N_TRAIN = None  # Markov training sequences (the methods are fitted on them)
N_TEST = None  # Markov held-out sequences (every basis is scored on them)
EPOCHS = None  # Markov training epochs
LR = None  # Markov AdamW learning rate
R_MAX = None  # Markov ranks 1..R_MAX
ENERGY = None  # Markov ACE energy threshold
SEED = None  # seed of the planted system, the Markov model, the random subspaces and DAS
DAS_STEPS = None  # Adam steps of each learned (DAS) basis
DAS_LR = None  # Adam learning rate of the learned bases
MODADD = None  # True: also compare on a grokked modular-addition model
P = None  # mod-add modulus (a prime)
TRAIN_FRACTION = None  # mod-add share of the pairs used for training (and for fitting the methods)
MODADD_LR = None  # mod-add AdamW learning rate (weight decay 1)
MODADD_SEED = None  # mod-add model seed
MODADD_ENERGY = None  # mod-add ACE energy threshold
MODADD_MAX_STEPS = None  # mod-add step cap
MODADD_EXTRA_STEPS = None  # mod-add steps after the test accuracy first reaches 0.99
MODADD_R_MAX = None  # mod-add ranks 1..MODADD_R_MAX
LLM_MODELS = None  # LLMs compared on subject–verb agreement; an empty list skips them
LLM_N_PROMPTS = None  # agreement prompts (half to fit the methods, half to score them)
LLM_R_MAX = None  # LLM ranks 1..LLM_R_MAX
LLM_BATCH_SIZE = None  # prompts per LLM forward and backward batch
PRECISION = None  # model training: "auto" (bf16 on a GPU with native bf16, else fp32), "fp32", "bf16"
DEVICE = None  # where the toy models train (the LLMs run on the CPU): "auto", "cpu", "cuda", "cuda:N", "mps"
OUTPUT_DIR = None  # where results.json goes; None: outputs/06_ace_vs_alternatives

# %% tags=["hide-input", "hide-output"]
import time

from IPython.display import Markdown, display
from myst_nb import glue

import ace_helpers
from ace_helpers.chapters import ace_vs_alternatives as chapter
from ace_helpers.chapters.ace_vs_alternatives import figures as plots
from ace_helpers.repro import session
from ace_helpers.repro.claims_view import ClaimsView

cfg = session.start(chapter, globals())  # validates every knob before any compute, then prints what runs
start_time, start_cpu = time.perf_counter(), time.process_time()

# %% [markdown]
# ## ACE in plain sight
#
# First ACE alone, on the Markov task of this chapter: one model trained here, its layer output
# captured at every test position, the core extracted against the centred-logit Jacobian with the
# energy rule, and the model run with only the core kept. The comparison below ranks the other
# methods' subspaces against this core.
# %%
site = chapter.hook_site(cfg)
states = ace_helpers.capture(site.model, site.inputs, site.hook)  # Markov: (sequences, positions, D_MODEL)
core = ace_helpers.extract_core(states.reshape(-1, states.shape[-1]), site.jacobian, energy=cfg.ENERGY)
only_core = ace_helpers.run_with_core(site.model, site.inputs, site.hook, core, "keep")
print(f"Markov core: rank {core.rank} of {states.shape[-1]}; accuracy with the core alone {site.score(only_core):.3f} "
      f"(whole model {site.accuracy():.3f})")

# %% [markdown]
# ## Run every method on every task
#
# Keep and remove act about the activation mean, through each model's linear tail (the planted
# readout; the Markov and mod-add unembeddings). A rank is **necessary and sufficient** (N&S)
# when keeping the subspace alone stays within 0.01 of the full accuracy and removing it leaves at
# most chance + 0.05. The probe and the class means have at most K and K − 1 directions (K labels).

# %%
res = chapter.run(cfg)
print(f"wall time {res['wall_s']:.0f} s")

# %%
fig = plots.task_figure(res["planted"], "planted system")

# %% [markdown]
# *Figure (ours). The planted system, against the rank r (dashed: the planted core's rank; dotted:
# full accuracy and chance). A: overlap with the planted core. B: accuracy with the subspace kept
# alone. C: accuracy with it removed. Look for the one method whose overlap reaches 1 and whose
# keep and remove curves both reach their targets at the planted rank.*

# %%
fig = plots.task_figure(res["markov"], "Markov chain")

# %% [markdown]
# *Figure (ours). The Markov chain (one seed), panels as above; the ground truth is the span of the
# activation means per current state (n − 1 = 3 dimensions).*

# %%
if res["modadd"] is not None:
    fig = plots.task_figure(res["modadd"], "modular addition")

# %% [markdown]
# *Figure (ours; at the book preset). Modular addition after grokking, panels as above; the ground
# truth is the Fourier subspace of the key frequencies of the token embedding.*

# %% [markdown]
# ## Subject–verb agreement in the LLMs
#
# No ground truth here, so only causal metrics. At one layer per model (the block output at the
# last token; the layer chapter 5's rule, the lowest flip AUC, chose at its book run: ℓ = 29 of 30
# in SmolLM2, ℓ = 18 of 18 in Gemma-3, the last block in both Qwen2.5 models), every method gets the same train prompts: their
# activations and the gradients of the margin m. The probe and the class means have one direction
# (two numbers). The learned (DAS-like) basis is trained through the tail's first-order expansion
# m − g·(I − P)(h − μ), since a backward pass through the model at every step would cost minutes
# per basis here; every basis is scored through the real model on the held-out prompts. Accuracy
# is the share of test prompts whose margin has the subject's number (chance 0.5); N&S is keep ≥
# base − 0.05 and remove ≤ 0.5 + 0.10; the flip reflects the subspace coordinates about the train
# mean, and its shift is how far the margin moves toward the other number (in logits).

# %%
if res["llm"] is not None:
    fig = plots.llm_figure(res["llm"])
    for name, s in res["llm"].items():
        if "unavailable" in s:
            print(f"{name}: not run ({s['unavailable']})")

# %% [markdown]
# *Figure (ours; at the book preset). Subject–verb agreement, one row per model, against the rank
# r (dotted: clean accuracy and chance). A, E: accuracy with the subspace kept alone. B, F: with it
# removed. C, G: with it flipped (low = the verb number flips). D, H: the flip's margin shift
# toward the other number. Single points: the probe and the class means have one direction. The
# paper's counterpart is its single agreement axis in GPT-2 (its subject–verb agreement figure,
# panel A), set against no other method.*

# %% [markdown]
# ## Minimal necessary-and-sufficient rank

# %% tags=["remove-input"]
display(Markdown(chapter.ns_markdown(res)))

# %% [markdown]
# {glue:md}`finding`

# %% [markdown]
# ## Claims

# %% tags=["remove-input"]
claims = chapter.build_claims(res, cfg)  # with the claims this run cannot test inside
records = claims.records(f"{cfg.PRESET} preset", departures=chapter.run_departures(cfg))
glue("finding", Markdown(chapter.finding_text(res)), display=False)
display(ClaimsView(claims))
if claims.not_tested:
    display(Markdown(chapter.not_tested_table(claims.not_tested)))

# %% tags=["remove-cell"]
print(claims.summary())

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(claims.verdict())  # the tests compare this line: a failure that is not a documented known gap changes it

# %% tags=["remove-cell"]
res["wall_s"] = time.perf_counter() - start_time
res["cpu_s"] = time.process_time() - start_cpu
session.finish(cfg, res, records)  # glues the verdicts shown at the top, writes results.json
print(f"wall time {res['wall_s']:.0f} s, CPU time of this kernel {res['cpu_s']:.0f} s")
