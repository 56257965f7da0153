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
# # Chapter 3: Does the core inflate under weight decay?
#
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **[The paper](https://arxiv.org/abs/2602.22600):** Under continued weight decay the core inflates from ~15 to ~60 dimensions through redundancy (the necessary dimension grows while the sufficient one stays flat) and fills up to ⌊p/2⌋ + 1 = 27 frequency bins; without weight decay it does not (§ core inflation, Fig. 2).
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# After grokking (Chapter 2) the paper keeps training the modular-addition models for 20 000
# epochs (§ core inflation, Fig. 2). With weight decay the core keeps growing — from ~15
# dimensions at grokking to ~60 (Fig. 2A) — and the shift operator's near-unit eigenvalues
# spread over more and more of the $\lfloor p/2\rfloor + 1 = 27$ folded frequency bins (Fig. 2D).
# A copy of each model forked just after grokking and trained on *without* weight decay does
# not inflate. The paper reads the growth as redundancy (Fig. 2B): the *sufficient* dimension
# (keep-only accuracy back to the full model's) stays flat while the *necessary* dimension
# (core-removed accuracy down to $2/p$) grows — more and more copies of the harmonics must all
# be removed before the model fails.
#
# Fig. 2D counts rotational modes on the ordinary least-squares fit of the shift operator on all
# $p$ class means, as the official code release computes it (`joshseth/cores`,
# `src/cores/modular_addition_analysis.py`, `sweep_mode_spread`); that is our headline count, and
# the ridge fit with a held-out block is shown beside it as our variant. A fit on a
# $d$-dimensional core has $d$ eigenvalues, so it can fill at most $\lfloor d/2 \rfloor + 1$ bins:
# the mode count is bounded by the core's size. The section *How many modes can a core of
# dimension d hold?* measures what that bound means here, against random subspaces of the same
# dimension in the same activations.
#
# This chapter reuses the training run of Chapter 2 (the same parameters give the same cached
# artifact; run either notebook first) and the stored 20 000-epoch run.

# %% [markdown]
#
# ```{admonition} Run this chapter
# :class: tip dropdown
# From `notebooks/`: `papermill 03_core_inflation.ipynb out.ipynb -p PRESET ci` (minutes on a CPU, the same cached
# run as Chapter 2's; add knobs for a new run, e.g. `papermill 03_core_inflation.ipynb out.ipynb -p PRESET ci -p SEED 1033`).
# `-p PRESET book` loads the stored book run (p = 53, 2 models × 1400 epochs, fork at 900 as in the paper). The paper's
# 20 000-epoch run takes hours: from the repository root, `python -m ace_helpers.chapters.modadd --preset paper`
# (resumable: re-run the same command after an interruption; the same with `--store-partial` stores what an
# unfinished run has reached for this chapter's long-run sections). `python -m ace_helpers.chapters.core_inflation` retrains its
# model 0 (weight decay arm) to the reference epochs and stores the activations that the dimension-matched
# reference uses (tens of minutes; resumable).
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None -> $ACE_PRESET or "book"
P = None  # modulus, a prime (paper: 53)
TRAIN_FRACTION = None  # fraction of the p^2 pairs used for training (paper: 0.5)
DATA_SEED = None  # seed of the fixed train/test permutation (paper: 42)
EPOCHS = None  # training epochs of both arms (paper: 20000)
N_MODELS = None  # number of independently initialised models (paper: 3)
WEIGHT_DECAY = None  # AdamW weight decay of the main arm (paper: 1.0)
FORK_EPOCH = None  # epoch at which the weight-decay-off arm forks, fresh optimizer (paper: 900)
CHECKPOINT_EVERY = None  # analyse every this many epochs ... (paper: 100)
CHECKPOINT_SWITCH = None  # ... up to this epoch (paper: 2000) ...
CHECKPOINT_EVERY_LATE = None  # ... then every this many (paper: 500)
SEED = None  # base seed: model m is initialised with SEED + m (paper: 1031)
LR = None  # AdamW learning rate (paper: 1e-3)
BATCH_SIZE = None  # mini-batch size (paper: 512)
ENERGY = None  # ACE energy threshold (paper: 0.99)
RIDGE = None  # ridge of the variant shift-operator fit (code release clocks: 1.0)
HOLDOUT_FRACTION = None  # fraction of classes held out (block at the cycle's edge) for R_h^2 (paper: 0.075)
CLOCK_EPOCHS = None  # unused here (Chapter 2's clock panels); kept so both chapters share one run
WORKERS = None  # processes training the models in parallel, "loop" trainer only (same numbers; book: 2); the ensemble trains in one
TRAINER = None  # "ensemble" (default): every model and both arms in one batched step; "loop": each model alone (the first stored runs)
PRECISION = None  # "auto" (bf16 on a GPU with native bf16, else fp32), "fp32", "bf16" (ensemble trainer only)
DEVICE = None  # where the ensemble trainer runs: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"
ARTIFACT_DIR = None  # cache folder of the training run; None -> book/artifacts/modadd_grokking (ci: outputs/)
OUTPUT_DIR = None  # where results.json goes; None: outputs/03_core_inflation

# %% tags=["hide-input", "hide-output"]
import time

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

import ace_helpers
from ace_helpers.chapters import core_inflation as chapter
from ace_helpers.chapters.core_inflation import figures as plots
from ace_helpers.repro import session, variants
from ace_helpers.repro.claims_view import ClaimsView

start_time = time.perf_counter()
cfg = session.start(chapter, globals())  # validates every knob before any compute, then prints what runs

# %% [markdown]
# ## ACE in plain sight
#
# First the core itself, on one stored grokked model (chapter 2 shows the same model): capture the
# last-token output of block 2, extract the core against the unembedding with the energy rule, and
# compare the accuracy with the core kept alone and with it removed.
# %%
site = chapter.hook_site()
acts = ace_helpers.capture(site.model, site.inputs, site.hook, positions=site.positions)
core = ace_helpers.extract_core(acts, site.jacobian, energy=cfg.ENERGY)
without = ace_helpers.run_with_core(site.model, site.inputs, site.hook, core, "remove", positions=site.positions)
print(f"rank {core.rank}: removed, the accuracy falls to {site.score(without):.3f} (chance {1 / site.jacobian.shape[0]:.3f}); "
      f"kept alone it is {site.accuracy(core):.3f}")

# %% [markdown]
# ## The shared training run
#
# Loaded from the artifact Chapter 2 stored when the parameters match, trained (and stored)
# otherwise. The weight-decay-off arm ("WD 1 → 0") is a deep copy of each model at `FORK_EPOCH`
# continued with a fresh AdamW without weight decay.

# %%
run = chapter.run(cfg)
p = cfg.P
wd, nowd = run.wd, run.nowd
grok = chapter.grok_epoch(wd.epochs, wd["test_acc"])
print(f"models loaded from stored artifacts: {run.cached}; grok epoch: {grok}; fork epoch: {cfg.FORK_EPOCH}; "
      f"last epoch: {int(wd.epochs[-1])}")
if cfg.EPOCHS < 20000:
    print(f"NOTE: this run stops at epoch {cfg.EPOCHS}, the paper trains to 20 000. It shows the start of the "
          "post-grokking regime only; the paper's inflation, the core's growth to ~60 dimensions by epoch 20 000, is "
          "not reached here (see the long run below).")

# %% [markdown]
# ## Core dimension with and without weight decay (Fig. 2A)
#
# **Paper:** with weight decay the core inflates from ~15 dimensions at grokking to ~60 by epoch
# 20 000; the arm forked without weight decay does not.

# %% tags=["hide-input"]
plots.plot_core_inflation(wd.epochs, wd["core_dim"], nowd.epochs, nowd["core_dim"], cfg.FORK_EPOCH, grok)
plt.show()
display(Markdown("**Fig. 2A (paper).** Core size (the necessary dimension) per epoch with weight decay (blue) and for the "
                 "copy forked without it (orange, from the dashed fork line): look at how the two arms diverge after the fork."
                 + (f" This run stops at epoch {cfg.EPOCHS}, long before the paper's 20 000: it shows the burst that follows "
                    "grokking, not the inflation the claim is about, so it cannot test the claim; the stored long run below "
                    "does." if cfg.EPOCHS < 20000 else "")))
if grok is not None:
    print(f"ours: core dim at grokking (epoch {grok}) {chapter.per_model_at(wd, 'core_dim', grok).tolist()}; "
          f"at epoch {int(wd.epochs[-1])}: WD = 1 {wd['core_dim'][:, -1].tolist()}, WD 1 → 0 {nowd['core_dim'][:, -1].tolist()}")
    print(f"energy rank (ACE's 0.99-energy rule alone) at epoch {int(wd.epochs[-1])}: WD = 1 {wd['energy_rank'][:, -1].tolist()}, "
          f"WD 1 → 0 {nowd['energy_rank'][:, -1].tolist()}")

# %% [markdown]
# ## Sufficient vs necessary dimension: redundancy (Fig. 2B)
#
# **Paper:** after grokking the sufficient dimension stays flat while the necessary dimension
# grows; the gap between them (shaded) is redundancy.

# %% tags=["hide-input"]
plots.plot_redundancy(wd.epochs, wd["suff_dim"], wd["core_dim"], grok)
plt.show()
display(Markdown("**Fig. 2B (paper).** Necessary (red) and sufficient (green) dimension with weight decay, model means: look "
                 "at the shaded gap, the redundancy, after grokking (dotted line)."))
gap = wd["core_dim"] - wd["suff_dim"]
print("epoch                 :", wd.epochs.tolist())
print("sufficient dim (mean) :", wd["suff_dim"].mean(0).round(1).tolist())
print("necessary dim (mean)  :", wd["core_dim"].mean(0).round(1).tolist())
print("redundancy gap (mean) :", gap.mean(0).round(1).tolist())

# %% [markdown]
# Before grokking the gap is an artefact of chance-level accuracy (keeping one direction already
# "matches" a base accuracy at chance, while removal needs the whole energy rank). From grokking
# on it measures redundancy: directions that are not needed for a complete solution but all
# have to be removed before accuracy collapses.

# %% [markdown]
# ## Clocks at the last epoch of both arms (Fig. 2C)
#
# **Paper (epoch 20 000):** with weight decay the near-unit eigenvalues cover almost all 27
# frequency bins; without weight decay far fewer. Ours at the last epoch of this run, model 0.

# %% tags=["hide-input"]
last = int(wd.epochs[-1])
eig_a, tit_a, note_a = chapter.clock_panels(wd, [last], model=0, label="WD = 1, ")
eig_b, tit_b, note_b = chapter.clock_panels(nowd, [last], model=0, label="WD 1 → 0, ")
plots.plot_clocks(eig_a + eig_b, tit_a + tit_b, p, note_a + note_b)
plt.show()
display(Markdown("**Fig. 2C (paper).** Shift-operator eigenvalues of model 0 at the last epoch, with and without weight "
                 "decay: look at how many distinct angles (frequencies) sit on the unit circle in each arm. The stored "
                 "eigenvalues are those of our ridge fit with a held-out block (the code release draws this panel with "
                 "the OLS fit, whose counts are in Fig. 2D below)."))

# %% [markdown]
# ## Rotational modes vs epoch (Fig. 2D)
#
# **Paper:** the number of folded frequency bins holding a near-unit eigenvalue climbs towards
# $\lfloor p/2 \rfloor + 1$ under weight decay and stays low without it. Left, the count as the
# code release fits it (OLS on all class means); right, our ridge variant. The dashed lines are
# each arm's cap $\lfloor d/2 \rfloor + 1$ for its core dim $d$: no fit on that core can fill more bins.

# %% tags=["hide-input"]
caps = chapter.mode_caps(wd["core_dim"], p), chapter.mode_caps(nowd["core_dim"], p)  # ⌊d/2⌋ + 1 per core dim d
plots.plot_modes_fits(wd.epochs, wd["rotational_modes_ols"], wd["rotational_modes"], caps[0],
                      nowd.epochs, nowd["rotational_modes_ols"], nowd["rotational_modes"], caps[1], p)
plt.show()
display(Markdown("**Fig. 2D (paper), OLS as the code release (left) and our ridge variant (right).** Rotational modes per "
                 "epoch in both arms, with each arm's cap ⌊d/2⌋ + 1 (dashed): look at how closely the weight-decay arm "
                 "follows its cap, and at the dotted ceiling ⌊p/2⌋ + 1."))
print("epoch            :", wd.epochs.tolist())
print("modes OLS, WD = 1:", wd["rotational_modes_ols"].mean(0).round(1).tolist())
print("modes ridge, WD=1:", wd["rotational_modes"].mean(0).round(1).tolist())
print("cap, WD = 1      :", caps[0].mean(0).round(1).tolist())

# %% [markdown]
# ## Claims
#
# Each row gives the paper's statement and where it is made, our acceptance rule and why it
# differs from the paper's wording, our value and the verdict. The paper gives approximate values
# ("~60", "→ 27"); we read them with a stated tolerance and name a weaker form (**partly**)
# where one holds. The 20 000-epoch targets need the paper's 20 000 epochs: at a preset that
# trains fewer they are listed as **not tested** with our value at the last epoch. Two rows
# measure on ACE's 0.99-energy rank what the paper measures on the core dim (the necessary
# dimension); rows marked "diagnosis" test the measured cause of a gap.

# %% tags=["remove-input"]
claims = chapter.build_claims(run, cfg)  # with the claims this run cannot test inside
display(ClaimsView(claims, claims.not_tested))

# %% tags=["remove-cell"]
print(claims.summary())

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(claims.verdict())

# %% [markdown]
# **Why the WD-off core dim jumps.** The necessary dimension removes the first r ACE directions
# until accuracy is ≤ 2/p. Without weight decay, removing the energy-rank directions (which hold
# 99 % of the balanced energy) leaves accuracy above that floor, so the scan runs on past the
# energy rank. The table gives, per WD-off model and checkpoint, the energy rank, the necessary
# dim and the accuracy left at the energy rank in units of the 2/p floor; the full curves are
# stored per checkpoint (`remove_curve` in the artifact).

# %% tags=["remove-input"]
display(Markdown(chapter.residue_table(nowd, p, nowd.epochs)))

# %% [markdown]
# ## The long run: the paper's 20 000 epochs
#
# Inflation is slow: the paper's core grows over 19 000 epochs after grokking. The `paper` preset
# is that run (3 models × 20 000 epochs, both arms) and takes hours on a CPU. It has been trained
# in the background three times: first each model alone in fp32 (2 of the 3 models, the WD-off arm
# to epoch 15 500), then all three models and both arms as one ensemble in bf16
# (`python -m ace_helpers.chapters.modadd --preset paper --trainer ensemble --precision bf16`,
# resumable from committed snapshots). Both forked the weight-decay-off arm at epoch 1100, 200
# epochs after the paper's fork at 900. The third run, the ensemble again with the fork at 900 as in
# the paper, is the subject of the next section. This section loads the most complete stored run
# and prints which it is; it trains nothing. In exact arithmetic the fork does not touch the
# weight-decay arm; in the batched bf16 ensemble it does, a little: the ensemble holds more members
# from the fork on and its sums round differently, so the two runs' weight-decay arms agree exactly
# up to epoch 900 and drift apart after (siblings, like runs on two kinds of CPU). This chapter's run is the ensemble in fp32, so no
# stored run is its continuation: each has the same seeds and protocol but other kernels or
# precision, a sibling of this run, and its models grok at their own epoch (printed beside the fork).
#
# ```{fold} Show the 20 000-epoch run: dimensions, clocks, modes and its claims table
# ```

# %%
long = chapter.stored_long_run(cfg)
if long is None:
    print(chapter.NO_LONG_RUN)
else:
    long_cfg, lrun, through = long
    lwd, lnowd, lp = lrun.wd, lrun.nowd, long_cfg.P
    lgrok = chapter.grok_epoch(lwd.epochs, lwd["test_acc"])
    print(chapter.describe_long_run(long_cfg, lrun, through))
    comparison = chapter.compare_with_long_run(cfg, run, long_cfg, lrun)
    same, shared, diff = comparison
    print(f"agrees with this chapter's run at its {len(shared)} shared checkpoints (epochs {shared[0]}–{shared[-1]}): "
          f"{same} (largest difference {diff:.1e})" if shared else f"not this chapter's run continued (the long run: "
          f"{chapter.how_trained(long_cfg)}; this run: {chapter.how_trained(cfg)}, p = {cfg.P}, {cfg.EPOCHS} epochs)")

# %% [markdown]
# Fig. 2A, 2B and 2D (OLS, as the code release) for the long run (mean over its models, min–max band):

# %% tags=["hide-input"]
if long is not None:
    plots.plot_inflation_overview(
        lwd.epochs, lwd["core_dim"], lwd["suff_dim"], lwd["rotational_modes_ols"],
        lnowd.epochs, lnowd["core_dim"], lnowd["rotational_modes_ols"], long_cfg.FORK_EPOCH, lp, lgrok,
    )
    plt.show()
    display(Markdown("**Fig. 2A, 2B and 2D (paper), long run.** The three panels on the paper preset's models (epochs in "
                     "thousands): look at the weight-decay arm's core and modes growing over the first few thousand epochs and "
                     "then levelling off, and at the sufficient dimension, which grows too."))
    for name, arm in (("WD = 1", lwd), ("WD 1 → 0", lnowd)):
        late = (arm.epochs >= 2000) & (arm.epochs % 2000 == 0)
        print(f"{name:9s} epochs {arm.epochs[late].tolist()}")
        print(f"{'':9s} core dim per model    {arm['core_dim'][:, late].tolist()}")
        print(f"{'':9s} energy rank           {arm['energy_rank'][:, late].tolist()}")
        print(f"{'':9s} sufficient dim        {arm['suff_dim'][:, late].tolist()}")
        print(f"{'':9s} modes (OLS)           {arm['rotational_modes_ols'][:, late].tolist()}")

# %% [markdown]
# Fig. 2D on the long run, both fits, each with its cap $\lfloor d/2 \rfloor + 1$:

# %% tags=["hide-input"]
if long is not None:
    lcaps = chapter.mode_caps(lwd["core_dim"], lp), chapter.mode_caps(lnowd["core_dim"], lp)
    plots.plot_modes_fits(lwd.epochs, lwd["rotational_modes_ols"], lwd["rotational_modes"], lcaps[0],
                          lnowd.epochs, lnowd["rotational_modes_ols"], lnowd["rotational_modes"], lcaps[1], lp)
    plt.show()
    display(Markdown("**Fig. 2D (paper), long run: OLS as the code release (left), our ridge variant (right).** Look at the "
                     "weight-decay arm (blue) running along its cap (blue dashed) once the core has inflated: the count "
                     "is as large as the core's dimension allows, and no larger."))

# %% [markdown]
# Two measures of the core's size: the 0.99-energy rank (ACE's energy rule alone) and the
# necessary dimension (at least the energy rank; more if removing that many directions leaves
# accuracy above 2/p). The necessary dimension is the paper's core dim, the one plotted above.
# The second table is the WD-off arm's residue, as above for the book run.

# %% tags=["remove-input"]
if long is not None:
    display(Markdown(chapter.dimension_table(lrun, lgrok)))
    display(Markdown(chapter.residue_table(lnowd, lp, lnowd.epochs, most=8)))

# %% [markdown]
# Clocks of model 0 (Fig. 2C; the paper's are at epoch 20 000): both arms at the last epoch the
# WD-off arm has reached, and the weight-decay arm at its own last stored epoch.

# %% tags=["hide-input"]
if long is not None:
    both = min(through.values())
    eig_a, tit_a, note_a = chapter.clock_panels(lwd, sorted({both, through["wd"]}), model=0, label="WD = 1, ")
    eig_b, tit_b, note_b = chapter.clock_panels(lnowd, [both], model=0, label="WD 1 → 0, ")
    plots.plot_clocks(eig_a[:1] + eig_b + eig_a[1:], tit_a[:1] + tit_b + tit_a[1:], lp, note_a[:1] + note_b + note_a[1:])
    plt.show()
    display(Markdown("**Fig. 2C (paper), long run.** Model 0's eigenvalues (our ridge fit, as stored) in both arms at the last "
                     "epoch both reached, then the weight-decay arm at its own last one: look at the many more occupied "
                     "angles with weight decay."))

# %% [markdown]
# The same claims on the long run. The 20 000-epoch targets count where the stored part already
# meets them (a target reached by its last epoch is reached "by epoch 20 000"); the others stay
# **not tested** until the run is finished. The last row checks that the long run reproduces this
# chapter's run exactly where they overlap.

# %% tags=["remove-input"]
if long is not None:
    long_claims = chapter.long_run_claims(cfg, long_cfg, lrun, through, comparison)
    display(ClaimsView(long_claims, long_claims.not_tested))

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(long_claims.verdict() if long is not None else "no long run stored")

# %% [markdown]
# ## The fork at the paper's epoch
#
# The paper forks the weight-decay-off arm at epoch 900, 100 epochs after grokking (the code
# release: `BRANCH_EPOCH = 900` in `run_modadd.py`). The stored long run above forked at 1100,
# 300 epochs after its models grokked (printed below), inside the burst of core size that follows
# grokking under weight decay (the table's first row gives each model's core at the fork). Does the
# later fork explain what the WD-off arm does? This section sets the run forked at 900 (the paper preset's protocol; the stored
# part of an unfinished run where it has not reached epoch 20 000) beside the run forked at 1100 and
# compares their WD-off arms at the same number of epochs after the fork.
#
# ```{fold} Show the forked runs: the arm without weight decay from epochs 900 and 1100
# ```

# %% tags=["hide-input"]
pair = chapter.fork_pair(cfg)
if pair is None:
    print("the paper-preset runs forked at 900 and at 1100 are not both stored: "
          "`python -m ace_helpers.chapters.modadd --preset paper --trainer ensemble --precision bf16` trains the first")
else:
    (f_cfg, frun, fthrough), (o_cfg, orun, othrough) = pair
    fgrok = chapter.grok_epoch(frun.wd.epochs, frun.wd["test_acc"])
    print(chapter.describe_long_run(f_cfg, frun, fthrough))
    print(chapter.describe_long_run(o_cfg, orun, othrough))
    plots.plot_fork_comparison([("fork 900", frun.wd, frun.nowd, f_cfg.FORK_EPOCH),
                                ("fork 1100", orun.wd, orun.nowd, o_cfg.FORK_EPOCH)])
    plt.show()
    display(Markdown("**The WD-off transient (ours, beside Fig. 2A and 2D).** The WD-off arm's core dim (left) and OLS "
                     "modes (right) against epochs after the fork, for the run forked at 900 (solid) and at 1100 (dashed), "
                     "mean over models with min–max band; grey: the weight-decay arm after epoch 900. Look at the burst "
                     "right after the fork in both runs — the WD-off core grows larger than the weight-decay core and its "
                     "modes fill nearly every bin — and at how the run forked at 1100 settles thousands of epochs later, "
                     "while the run forked at 900 never does. The table gives each run's checkpoint "
                     "nearest the same number of epochs after its fork."))
    display(Markdown(chapter.fork_table(frun.nowd, f_cfg.FORK_EPOCH, orun.nowd, o_cfg.FORK_EPOCH,
                                        [0, 100, 300, 500, 1000, 2000, 3000, 5000, 8000, 10000, 15000, 18900])))

# %% [markdown]
# The chapter's claims on the run forked at 900 while it is unfinished; once it has reached epoch 20 000 it is the
# long run above and carries these headlines, and this table shows the run forked at 1100 beside it, as a named
# variant. "No inflation without weight decay" (Fig. 2A)
# and "no mode proliferation" (Fig. 2D) are judged by one rule, as the paper shows both: the
# WD-off arm's value at the last epoch both arms reached against its value at grokking. The burst
# after the fork is shown in the figure and table above (its peak ratio is in the results). Weight
# decay as redistribution is measured on the Fourier spectra of the embedding and the unembedding,
# which only the runs forked at 900 store (next section).

# %%
if pair is not None:  # once the run forked at 900 is finished it is the long run above: show the run forked at 1100 here
    shown = chapter.fork_shown(long, pair)
    s_cfg, srun, sthrough = shown
    print(f"claims on the run forked at {s_cfg.FORK_EPOCH}"
          + (" (a named variant beside the finished run forked at 900, which carries the headlines)" if shown is pair[1] else ""))
    fork_claims = chapter.build_claims(srun, s_cfg, last_epoch=sthrough["wd"])
    display(ClaimsView(fork_claims, fork_claims.not_tested))

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(fork_claims.verdict() if pair is not None else "no run forked at 900 stored")

# %% [markdown]
# ## The code release's own arm without weight decay
#
# "No inflation" and "no mode proliferation" without weight decay are judged above on our trainer's runs. The code
# release itself, rerun here unmodified from a scratch copy (its `modadd.py` with `TOTAL_EPOCHS = 5000` and one model;
# its own training and its own analysis, one thread, under the book's kernel setting), forks the same arm at epoch 900
# with a fresh optimizer, as ours does. Its numbers below are read from the files it writes; the claims tables carry
# its ratio at its last epoch in their "official code, rerun here" line. Look at whether its arm without weight decay
# bursts after the fork as ours does, and where it ends against the rule's bound.

# %% tags=["hide-input"]
release = chapter.official.stored_arrays()
if release is None:
    print("the code release's run to epoch 5000 is not stored: python -m ace_helpers.repro.official_runs --official "
          "CHECKOUT --epochs 5000 --models 1 --work NEW_FOLDER --store book/artifacts/official_modadd")
else:
    display(Markdown(chapter.official.summary(release)))

# %% [markdown]
# ```{fold} Show the release's checkpoints: necessary dimension and mode bins of both arms
# ```

# %% tags=["hide-input"]
if release is not None:
    display(Markdown(chapter.official.trajectory_table(release)))

# %% [markdown]
# ## Weight decay as redistribution
#
# **Paper:** weight decay redistributes weight across all functionally equivalent harmonics, up to
# $\lfloor p/2 \rfloor$ (§ inflation). At every checkpoint we store the Fourier spectrum of the
# embedding and of the unembedding over the $p$ number tokens: the share of their power held by each
# frequency $k = 1..\lfloor p/2 \rfloor$ (frequencies $k$ and $p-k$ folded). Its participation ratio
# $1/\sum_k s_k^2$ counts how many frequencies carry the weight, and how evenly: $\lfloor p/2 \rfloor$
# when all share it equally, 1 when one holds it all.
#
# ```{fold} Show the harmonics of the embedding and unembedding, both arms
# ```

# %% tags=["hide-input"]
spectra_runs = [(f"{cfg.PRESET} run", wd, nowd)] + ([("paper run, fork 900", frun.wd, frun.nowd)] if pair is not None else [])
for label, a_wd, a_off in spectra_runs:
    if not (chapter.has_spectra(a_wd) and chapter.has_spectra(a_off)):
        print(f"{label}: stored without spectra (trained before they were measured)")
        continue
    for field in ("emb_spectrum", "unemb_spectrum"):
        plots.plot_harmonics([(f"WD = 1 ({label})", a_wd, plots.COLORS["wd"]), (f"WD 1 → 0 ({label})", a_off, plots.COLORS["nowd"])], field)
        plt.show()
    h = {name: chapter.effective_harmonics(arm["emb_spectrum"][:, -1]).round(1).tolist() for name, arm in (("WD = 1", a_wd), ("WD 1 → 0", a_off))}
    print(f"{label}: effective harmonics of the embedding at each arm's last epoch {h} (of ⌊p/2⌋ = {a_wd['emb_spectrum'].shape[-1]})")
display(Markdown("**Harmonics of the embedding and unembedding (ours; the paper states the redistribution in words).** "
                 "Left: the effective number of frequencies carrying the weight, per epoch, with and without weight decay, "
                 "against ⌊p/2⌋ (dotted); right: the spectrum at the last epoch. Look at whether weight decay spreads "
                 "the weight over more frequencies than the arm without it, in the embedding and in the unembedding."))

# %% [markdown]
# ## How many modes can a core of dimension d hold?
#
# The shift operator fitted on a $d$-dimensional core has $d$ eigenvalues. Complex ones come in
# conjugate pairs that share one folded bin, so at most $\lfloor d/2 \rfloor + 1$ bins can be
# filled (and never more than the $\lfloor p/2 \rfloor + 1$ there are; the fit uses at most $p - 1$
# dimensions). The paper's ~60-dimensional cores therefore leave room for all 27 bins; a core of
# fewer than 52 dimensions does not (the cap row of the long run's claims gives each model's).
# Whether "modes → 27" says more than "the core grew" depends on whether a subspace of the same
# dimension that is *not* the core would fill as many bins. The stored runs keep no activations,
# so we retrained model 0 of the first paper run (each model alone, fp32; the weight decay arm,
# same seeds and code; `python -m ace_helpers.chapters.core_inflation`) and kept its activations
# at that run's grok epoch and after the inflation. On them we count the modes of the same OLS fit on
# the first $d$ ACE directions, on random $d$-dimensional subspaces of the activation space
# (orthonormal bases from the QR of a Gaussian matrix) and, without any model, on Gaussian class
# means, for every $d$.
#
# ```{fold} Show the shift operator's modes against the core's dimension
# ```

# %%
ref_cfg, ref_run = chapter.reference_source(cfg, run)  # the run whose model 0 the reference retrains
ref = chapter.stored_reference(ref_cfg)
if ref is None:
    print("no stored reference activations for this run (make them with `python -m ace_helpers.chapters.core_inflation`)")
else:
    ref_epochs = ref.data["epochs"]
    print(f"reference: model 0 retrained to epochs {ref_epochs} ({ref.manifest['wall_s'] / 60:.0f} min on "
          f"{ref.manifest['machine']['cpus']} CPUs); {chapter.REFERENCE_DRAWS} random subspaces per dimension")
    display(Markdown(chapter.reference_comparison(ref, ref_run)))

# %% [markdown]
# The table puts the retrained model beside the stored model 0. Its numbers differ in the last
# digits from the first epoch on (this machine's arithmetic differs from that of the machine that
# trained the stored run), and grokking amplifies such differences, so it is a sibling of the
# stored model — same setting, same seeds — not a copy.

# %% tags=["hide-input"]
if ref is not None:
    rp = ref_cfg.P
    sweep = chapter.reference_rows(ref, rp, list(range(2, 61, 2)))
    own = chapter.reference_rows(ref, rp)  # at each epoch's own core dim
    core_dims = {r["epoch"]: r["dim"] for r in own}
    rgrok = chapter.grok_epoch(ref_run.wd.epochs, ref_run.wd["test_acc"])
    after = ref_run.wd.epochs >= (rgrok if rgrok is not None else 0)  # from grokking on
    points = [("WD = 1, from grokking on", ref_run.wd["core_dim"][:, after], ref_run.wd["rotational_modes_ols"][:, after]),
              ("WD 1 → 0", ref_run.nowd["core_dim"], ref_run.nowd["rotational_modes_ols"])]
    plots.plot_mode_reference(sweep, rp, core_dims, points)
    plt.show()
    display(Markdown("**Modes of a d-dimensional subspace (ours, beside Fig. 2D).** Left panels: the retrained model at each "
                     "reference epoch; the first d ACE directions (blue), random subspaces of dimension d (orange: median "
                     "and range), Gaussian class means (grey dotted) and the cap ⌊d/2⌋ + 1 (dashed); the dash-dotted line "
                     "is the core dim. Right: the stored run's checkpoints from grokking on, OLS modes against core dim. Look at where "
                     "random subspaces catch up with the core (after the inflation, small subspaces hold no mode at all), and at "
                     "how the checkpoints line up under the cap."))
    display(Markdown(chapter.reference_table(own)))

# %% [markdown]
# The reference claims are ours (the paper has no dimension-matched reference): the retrained
# model groks with the stored one, and at each reference epoch the core is compared with random
# subspaces of its own dimension — at grokking we expect the core to hold clearly more modes
# than they do, and the question is whether that is still so after the inflation.

# %% tags=["remove-input"]
if ref is not None:
    ref_claims = chapter.reference_claims(ref, ref_run, own)
    display(ClaimsView(ref_claims))

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(ref_claims.verdict() if ref is not None else "no reference stored")

# %% [markdown]
# ## What this chapter finds
#
# The verdicts are in the claims tables above and in the summary box at the top; each paper
# claim counts once, from the run that tests it as the paper ran it: the weight-decay claims from
# the most complete 20 000-epoch run, the claims on the WD-off arm and on the harmonics from the
# run forked at 900 (this chapter's own run while the paper-preset run forked at 900 is not
# stored; once that run is finished it carries both). In words: in the book run the weight-decay cores burst soon after grokking (the
# necessary dimension jumps while the energy rank stays flat, and at that checkpoint the modes
# fill the cap) and partly fall back by epoch 1400, where the run stops; its misses of the
# 20 000-epoch targets are reported against the claims with the run's length as the cause. The
# stored 20 000-epoch run forked at 900, as in the paper (all three models, both arms), inflates with
# weight decay: over the last quarter of the run two cores stay above 48 dimensions (the paper's ~60
# within 20 %) and the smallest fluctuates around 48, so the headline is inconclusive; the seeds end
# apart and the smallest core grew least since grokking. Its sufficient dimension does not stay flat:
# it grows too, less than the necessary dimension, so their gap (redundancy) still widens. Without
# weight decay the arm bursts right after the fork — its necessary dimension grows past the
# weight-decay arm's and its modes fill nearly every bin — and it never settles: at epoch 20 000 its
# necessary dimension is still two to three times its size at grokking while its energy rank stays
# flat (the mechanism of the residue table), so judged at the end of the run, as the paper's figures
# compare the arms, "no inflation" and "no mode proliferation without weight decay" do not reproduce.
# The run forked at 1100 (shown beside it as a named variant) bursts too and then settles thousands of
# epochs later at about its size at grokking, where both claims hold: the fork does not cause the
# burst, but the end state depends on it, and the paper's own fork gives the failing one. Once the
# core has inflated, the mode count under weight decay runs along the cap ⌊d/2⌋ + 1 of the core's
# dimension and stops one bin short of 27 in the larger cores. In the dimension-matched reference,
# random subspaces of the core's dimension hold nearly as many modes as the core (at grokking they
# hold clearly fewer): the count restates the core's size rather than adding a second measurement.
# Weight decay as redistribution: random initial weights spread the embedding's Fourier power evenly
# over all ⌊p/2⌋ frequencies; training concentrates it on a few, and by the end of this chapter's run
# more so with weight decay than without. In the run forked at 900 the two weights part ways as the
# core inflates: under weight decay the unembedding's weight spreads again, to most of the ⌊p/2⌋
# harmonics, while without weight decay it stays on a few; the embedding's does not spread again by
# epoch 20 000 (far fewer than ⌊p/2⌋ effective harmonics, not clearly more than the WD-off arm's). So
# "weight decay redistributes weight across all harmonics" holds for the unembedding and not for the
# embedding (partly).

# %% [markdown]
# ## Results
#
# `results.json` keys: the weight-decay arm's per-checkpoint arrays `epochs`, `test_acc`,
# `core_dim`, `suff_dim`, `keep_acc`, `remove_acc`, `r2_holdout`, `frac_unit_circle`,
# `rotational_modes` (+ `energy_rank`, `median_abs_eig`, `r2_ols`, `frac_unit_circle_ols`,
# `rotational_modes_ols`, `emb_spectrum`, `unemb_spectrum` where stored), nested lists with one row per
# model; the same with prefix `nowd_` for
# the weight-decay-off arm (its `nowd_epochs` start at the fork); `grok_epoch`; `fork_epoch`;
# `not_tested` (claims this preset cannot test); `claims_passed`, `claims_total`;
# `models_from_artifact`; `train_wall_s`; `long_run` (the stored long run: `through_epoch`,
# `n_models`, its claim numbers and the same per-checkpoint arrays, or null); `fork_run` (the stored
# paper-preset run forked at 900, the same entries plus `fork_epoch`, or null); `mode_reference`
# (per reference epoch at its core dim: `epoch`, `dim`, `cap`, `ace`, `random`, `gaussian`, or
# null); `wall_s`.

# %% tags=["remove-cell"]
results = chapter.results(
    cfg, run, claims, long, long_claims if long is not None else None,
    wall_s=time.perf_counter() - start_time, reference=own if ref is not None else None,
    fork=shown if pair is not None else None, fork_claims=fork_claims if pair is not None else None,
)
records = chapter.chapter_records(  # each paper claim's headline on the run that tests it as the paper ran it
    cfg, claims, long, long_claims if long is not None else None, shown if pair is not None else None,
    fork_claims if pair is not None else None, (ref_claims, ref_epochs) if ref is not None else None,
)
session.finish(cfg, results, records)  # glues the verdicts shown at the top, writes results.json

# %% [markdown]
# ## The same protocol, trained again
#
# This chapter's run, trained again with the ensemble trainer (a second sample of the same
# experiment: each member draws its dropout masks from its own generator) in fp32 and in bf16, as
# in chapter 2's section of the same name. A claim whose verdict changes between samples depends
# on the sample at this run's length and number of models.

# %% tags=["remove-input", "hide-output"]
display(Markdown(variants.comparison_for(cfg, records, chapter.config.PROTOCOL_KNOBS)))
