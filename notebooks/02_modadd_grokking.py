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
# # Chapter 2: Modular addition — does a cyclic core crystallise at grokking?
#
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **[The paper](https://arxiv.org/abs/2602.22600):** In modular addition (p = 53) a cyclic core of about 15 dimensions forms at grokking (epoch ~800): necessary and sufficient, with a shift operator whose eigenvalues move from inside the unit disk onto the unit circle (Fig. 1). Independently trained models converge to the same core (the title's claim).
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# A two-layer transformer learns $a + b \equiv c \pmod p$ from half of all $p^2$ pairs. It first
# memorises the training half (test accuracy at chance), then — with weight decay — suddenly
# generalises: it *groks*. The paper (§3, Fig. 1) reports that the algorithmic core of layer 2
# forms at that moment: at grokking (epoch ~800) a ~15-dimensional core appears that is necessary
# (removing it drops accuracy to chance) and sufficient (keeping only it keeps accuracy), and a
# linear "shift" operator fitted on the core, which maps the representation of answer $c$ to that
# of $c + 1$, has eigenvalues that "snap onto the unit circle": the core holds a clock.
#
# Everything below is computed at every checkpoint on the **test split**, at the last token of
# layer 2 (`ace_helpers.chapters.modadd.checkpoints.analyse_checkpoint`): ACE with the unembedding as the
# tail, a scan of keep-only / core-removed accuracy over *every* rank at once, and two fits of the
# shift operator on the class means of the core coordinates — ordinary least squares on all $p$
# class means, as the official code release computes the unit-circle share and the rotational
# modes (`joshseth/cores`, `src/cores/modular_addition_analysis.py`), and ridge 1 with a held-out
# block of 4 classes, as its Fig. 1C clocks draw them and report $R_h^2$ (`src/cores/plot_mod_add.py`).
# The training run is cached and shared with Chapter 3.

# %% [markdown]
#
# ```{admonition} Run this chapter
# :class: tip dropdown
# From `notebooks/`: `papermill 02_modadd_grokking.ipynb out.ipynb -p PRESET ci` trains and analyses the `ci` preset's
# small run (one model at a small modulus) in minutes on a CPU; add knobs for a new run, e.g.
# `papermill 02_modadd_grokking.ipynb out.ipynb -p PRESET ci -p SEED 1033` (cached under `outputs/modadd_grokking_cache`). `-p PRESET book` loads the stored book run (p = 53, 2 models
# × 1400 epochs) from `book/artifacts/modadd_grokking` instead of training.
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None -> $ACE_PRESET or "book"
P = None  # modulus, a prime (paper: 53)
TRAIN_FRACTION = None  # fraction of the p^2 pairs used for training (paper: 0.5)
DATA_SEED = None  # seed of the fixed train/test permutation (paper: 42)
EPOCHS = None  # training epochs of the weight-decay arm (paper: 20000)
N_MODELS = None  # number of independently initialised models (paper: 3)
WEIGHT_DECAY = None  # AdamW weight decay of the main arm (paper: 1.0)
FORK_EPOCH = None  # epoch at which the weight-decay-off arm forks (paper: 900)
CHECKPOINT_EVERY = None  # analyse every this many epochs ... (paper: 100)
CHECKPOINT_SWITCH = None  # ... up to this epoch (paper: 2000) ...
CHECKPOINT_EVERY_LATE = None  # ... then every this many (paper: 500)
SEED = None  # base seed: model m is initialised with SEED + m (paper: 1031)
LR = None  # AdamW learning rate (paper: 1e-3)
BATCH_SIZE = None  # mini-batch size (paper: 512)
ENERGY = None  # ACE energy threshold (paper: 0.99)
RIDGE = None  # ridge of the shift-operator fit for R_h^2 and the clocks (paper: 1.0)
HOLDOUT_FRACTION = None  # fraction of classes held out (a block at the cycle's edge) for R_h^2 (paper: 0.075)
CLOCK_EPOCHS = None  # epochs of the clock panels; None -> start, before, at, after grokking, last
WORKERS = None  # processes training the models in parallel, "loop" trainer only (same numbers; book: 2); the ensemble trains in one
TRAINER = None  # "ensemble" (default): every model and both arms in one batched step; "loop": each model alone (the first stored runs)
PRECISION = None  # "auto" (bf16 on a GPU with native bf16, else fp32), "fp32", "bf16" (ensemble trainer only)
DEVICE = None  # where the ensemble trainer runs: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"
ARTIFACT_DIR = None  # cache folder of the training run; None -> book/artifacts/modadd_grokking (ci: outputs/)
OUTPUT_DIR = None  # where results.json goes; None: outputs/02_modadd_grokking

# %% tags=["hide-input", "hide-output"]
import time

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import ace_helpers
from ace_helpers.chapters import modadd_grokking as chapter
from ace_helpers.chapters.modadd import figures as plots
from ace_helpers.repro import session, variants
from ace_helpers.repro.claims_view import ClaimsView
from ace_helpers.repro.scorecard import carry

start_time = time.perf_counter()
cfg = session.start(chapter, globals())  # validates every knob before any compute, then prints what runs

# %% [markdown]
# ## ACE in plain sight
#
# The stored runs below keep their measurements, not their weights, so the method itself is shown on
# one stored grokked model (p = 31, 60 % of the pairs, weight decay 1, trained until its test accuracy
# reached 0.99): the output of its second block at the last token, balanced against the unembedding
# (the tail after that block is linear), cut by the energy rule, and kept alone inside the model.
# %%
site = chapter.hook_site()
h_last = ace_helpers.capture(site.model, site.inputs, site.hook, positions=site.positions)  # (pairs, 128)
core = ace_helpers.extract_core(h_last, site.jacobian, energy=cfg.ENERGY)
kept = ace_helpers.run_with_core(site.model, site.inputs, site.hook, core, "keep", positions=site.positions)
print(f"grokked model: core rank {core.rank} of {h_last.shape[-1]}; test accuracy with only the core {site.score(kept):.3f}, "
      f"whole model {site.accuracy():.3f}")

# %% [markdown]
# ## Training (or loading the stored run)
#
# `N_MODELS` models (initial seeds `SEED + m`) are trained with AdamW (lr `LR`, weight decay
# `WEIGHT_DECAY`, batch `BATCH_SIZE`, dropout 0.1, loss on the last token). At `FORK_EPOCH` a copy of
# each continues without weight decay (Chapter 3). Each checkpoint is analysed as soon as it is
# reached, so only the analyses are stored: one artifact per model, with a manifest (parameters,
# commit, versions, wall time). When a stored artifact matches the parameters it is loaded instead.

# %%
run = chapter.run(cfg)
p = cfg.P
wd = run.wd
grok = chapter.grok_epoch(wd.epochs, wd["test_acc"])
print(f"models loaded from stored artifacts: {run.cached}; training + analysis wall time per model: "
      f"{[round(w) for w in run.wall_s]} s")
print(f"grok epoch (first checkpoint with every model >= 0.99 test accuracy): {grok}")

# %% [markdown]
# ## The core forms at grokking (Fig. 1A)
#
# **Paper:** grokking at epoch ~800; the core dimension is ~15 at grokking. The core dimension is
# the *necessary dimension* of the paper's rule: the smallest rank $r$, at least the 0.99-energy
# rank, whose removal drops test accuracy to $2/p$ or below. $2/p$ is the rule's necessity floor,
# twice chance ($1/p$).

# %% tags=["hide-input"]
plots.plot_accuracy_and_core_dim(wd.epochs, wd["test_acc"], wd["core_dim"], grok)
plt.show()
display(Markdown("**Fig. 1A (paper).** Test accuracy (blue, left axis) and core size in dimensions (red, right axis) per "
                 "epoch, mean over models with a min–max band: look at the core size where the accuracy jumps (dotted "
                 "line: grokking) compared with its size before and after."))
if grok is not None:
    i = wd.index(grok)
    print(f"ours: grok epoch {grok}; core dim at grokking per model: {wd['core_dim'][:, i].tolist()}; "
          f"0.99-energy rank there: {wd['energy_rank'][:, i].tolist()}")
print(f"core dim at epoch 0: {wd['core_dim'][:, 0].tolist()}, at the last epoch ({wd.epochs[-1]}): "
      f"{wd['core_dim'][:, -1].tolist()}")

# %% [markdown]
# While the network only memorises, its test accuracy is itself near chance, so removing the
# energy core already leaves accuracy at or below $2/p$ and the necessary dimension is just the
# energy rank of an unstructured representation. Compare the printed dimensions at epoch 0, at
# grokking and at the last checkpoint.

# %% [markdown]
# ## The core is necessary and sufficient (Fig. 1B)
#
# **Paper:** from grokking on, keeping only the core keeps the full accuracy and removing it drops
# accuracy to chance ($1/p$, the dotted line). Keep/remove are uncentred projections at layer 2, as
# in the paper. Removing the core *at the necessary dimension* gives at most $2/p$ by
# construction (that is how the dimension is chosen), so it tests nothing; the tests that can fail
# remove the **0.99-energy core** instead, and bound how far past the energy rank the remove curve
# has to go before it reaches the floor.

# %% tags=["hide-input"]
plots.plot_keep_remove(wd.epochs, wd["test_acc"], wd["keep_acc"], wd["remove_acc"], p, grok)
plt.show()
display(Markdown("**Fig. 1B (paper).** Test accuracy of the full model, of the core alone and with the core (necessary "
                 "dimension) removed: look at core-only against the full model's curve, and at core-removed against "
                 "chance 1/p (dotted) from grokking on."))
post = wd.epochs >= (grok if grok is not None else wd.epochs[-1] + 1)
if post.any():
    rem_e = chapter.remove_at_energy_rank(wd)
    ratio = wd["core_dim"] / wd["energy_rank"]
    print(f"ours, checkpoints from grokking on (chance 1/p = {1 / p:.4f}, necessity floor 2/p = {2 / p:.4f}):")
    print(f"  core-only accuracy >= {wd['keep_acc'][:, post].min():.4f} (base >= {wd['test_acc'][:, post].min():.4f})")
    print(f"  core removed at the necessary dim: <= {wd['remove_acc'][:, post].max():.4f} = "
          f"{wd['remove_acc'][:, post].max() * p:.2f} x chance (<= 2/p by construction)")
    print(f"  core removed at the 0.99-energy rank: at grokking {(rem_e[:, wd.index(grok)] * p).round(2).tolist()} x chance; "
          f"from grokking on up to {rem_e[:, post].max() * p:.1f} x chance")
    print(f"  necessary dim / energy rank from grokking on: max {ratio[:, post].max():.2f}")

# %% [markdown]
# ## A cyclic mechanism emerges in the core (Fig. 1C)
#
# **Paper:** clocks at epochs 0, 300, 800, 900, 2000. Before grokking the shift operator's
# eigenvalues "scatter inside the unit circle" and $R_h^2 \approx 0$ (the map from $c$ to $c+1$
# looks contractive, not cyclic); at grokking they "snap onto the unit circle" and
# $R_h^2 \approx 1$. The grey ring is $||\lambda| - 1| \le \sin(\pi/p)$, the band in which the code
# release counts an eigenvalue as on the circle; grey dots are the $p$-th roots of unity. The
# clocks show model 0's ridge + holdout fit, as the paper's Fig. 1C does.

# %% tags=["hide-input"]
clock_epochs = cfg.CLOCK_EPOCHS or chapter.default_clock_epochs(wd.epochs.tolist(), grok)
eigs, titles, notes = chapter.clock_panels(wd, clock_epochs, model=0)
plots.plot_clocks(eigs, titles, p, notes)
plt.show()
display(Markdown("**Fig. 1C (paper).** Eigenvalues of the shift operator fitted on model 0's core (Re λ, Im λ) at each clock "
                 "epoch: look at where they sit relative to the grey band before, at and after grokking."))
for e in clock_epochs:
    i = wd.index(e)
    print(f"epoch {e:>5}: median |λ| {wd['median_abs_eig'][:, i].round(3).tolist()}, R_h² {wd['r2_holdout'][:, i].round(3).tolist()}, "
          f"share near the circle: OLS {wd['frac_unit_circle_ols'][:, i].round(3).tolist()}, "
          f"ridge {wd['frac_unit_circle'][:, i].round(3).tolist()}")

# %% [markdown]
# ### The unit-circle share at every checkpoint
#
# The headline number is the share of eigenvalues within $\sin(\pi/p)$ of the circle from the
# OLS fit on all class means, as the code release computes it; the ridge + holdout fit of the
# clocks is our variant. Our acceptance line is 0.8 (the paper gives no share).
#
# ```{fold} Show the share at every checkpoint, with the fit and threshold diagnoses
# ```

# %% tags=["hide-input"]
plots.plot_unit_circle_share(wd.epochs, wd["frac_unit_circle_ols"], wd["frac_unit_circle"], wd["r2_holdout"], grok,
                             chapter.SHARE_MIN)
plt.show()
display(Markdown("**Unit-circle share (ours).** Share of eigenvalues on the circle per checkpoint, OLS (solid) and ridge + "
                 "holdout (dashed), and R_h² (dotted), mean over models with a min–max band: look at the jump at grokking "
                 "and at where the band's lower edge sits relative to the 0.8 line afterwards."))
if grok is not None:
    display(Markdown(chapter.post_grok_table(wd, grok, {
        "OLS share": (wd["frac_unit_circle_ols"], chapter.SHARE_MIN),
        "ridge share": (wd["frac_unit_circle"], chapter.SHARE_MIN),
        "R_h²": (wd["r2_holdout"], chapter.r2_threshold(cfg)),
    })))

# %% [markdown]
# The in-sample OLS fit scores well before grokking too, because it fits ~40 dimensions to $p$
# points: compare its $R^2$ and median $|\lambda|$ before grokking with the held-out $R_h^2$ and the
# ridge fit's median $|\lambda|$ (model 0, below). The clocks and the pre-grokking claims use the
# held-out ridge fit, as the code release's Fig. 1C does.

# %%
print("epoch            :", wd.epochs.tolist())
print("R² (OLS)         :", wd["r2_ols"][0].round(2).tolist())
print("R_h² (ridge)     :", wd["r2_holdout"][0].round(2).tolist())
print("median |λ| (OLS) :", wd["median_abs_eig_ols"][0].round(2).tolist())
print("median |λ| ridge :", wd["median_abs_eig"][0].round(2).tolist())

# %% [markdown]
# ## Claims
#
# The "paper" column gives the paper's statement and where it makes it (Fig. 1, §3, or the code
# release); "our rule" gives the test and why it departs from the paper's wording where it does.
# Windows bracket the paper's approximate values (grok epoch ~800 → [500, 1200], core dim ~15 →
# [10, 25]); bounds separate the two phases the paper shows (before grokking median |λ| < 0.8 and
# $R_h^2$ < 0.6; at grokking ≥ 80 % of the OLS eigenvalues on the circle). Claims over all
# post-grokking checkpoints report the share of checkpoints that meet the threshold and are
# **partly** reproduced when at least half of them do. Necessity is tested in two forms that can
# fail: removing the 0.99-energy core at grokking must drop accuracy to the floor $2/p$, and
# the necessary dimension must stay within twice the energy rank. "Before grokking" means
# checkpoints where every model's test accuracy is still below 0.1 (like the paper's epoch-0 and
# epoch-300 clocks); "at grokking" the grok checkpoint; "from grokking on" every checkpoint from
# it, every model. Rows marked *diagnosis* test the cause of a claim that does not hold at every
# checkpoint: whether the other fit, a band three times as wide or more training lifts it. Off the
# paper's task (p = 53, 50 % training pairs; e.g. the `ci` preset's p = 31 with 60 %) the epoch
# window becomes "groks before the fork", the core-dimension window [4, 25] and the post-grokking
# $R_h^2$ threshold 0.5; each relaxed row says so.

# %% tags=["remove-input"]
claims = chapter.build_claims(run, cfg)  # with the claims this run cannot test, and the numbers it measured
records = claims.records(f"{cfg.PRESET} preset", departures=chapter.run_departures(cfg))
display(ClaimsView(claims, claims.not_tested))
display(Markdown(chapter.unit_circle_sentence(claims.numbers, p)))

# %% tags=["remove-cell"]
print(claims.summary())

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(claims.verdict())

# %% [markdown]
# A row that is *partly* or *not reproduced* at this preset's exact parameters (seeds included)
# carries its measured cause, recorded in `chapters.modadd_grokking.KNOWN_GAPS` with the failing
# checkpoints appended, and the diagnosis rows above test that cause. Any other failure is marked
# in bold capitals and fails the book's tests (the notebook itself always finishes). The long run
# below has the same seeds, protocol and fork, trained to the paper's 20 000 epochs, so it shows
# what the same setting does later.

# %% [markdown]
# ## The paper's epochs: the long run
#
# The paper's Fig. 1 runs to epoch 2000, with clocks at epochs 0, 300, 800, 900 and 2000 (grokking
# at 800). This run stops at `EPOCHS`. The `paper` preset (Chapter 3) trains the same seeds to
# 20 000 epochs in the background; the most complete stored run of it is loaded here (nothing is
# trained; the line below says which run, how far it goes and how it was trained) and the
# figures and claims above are repeated on it. Its clocks are at the paper's epochs shifted by
# its own grokking: 0, 300, grok, grok + 100, 2000.
#
# The title's claim, that the cores of independently trained models are invariant, is judged here
# too: this run has the paper's three models. One checkpoint after grokking (the paper's epoch 900)
# each model must have a clock (a high $R_h^2$), and the models' core sizes and the median $|\lambda|$
# of their shift operators must agree (our bounds are in the claims table). None of these depends on
# which key frequencies a model picked; [chapter 7](07_core_stitching.ipynb) compares the cores'
# coordinates directly.
#
# ```{fold} Show the 20 000-epoch run: figures and its claims table
# ```

# %% tags=["hide-input"]
long = chapter.stored_long_run(cfg)
if long is None:
    print(chapter.NO_LONG_RUN)
else:
    long_cfg, lrun, through = long
    lp = long_cfg.P  # the long run's modulus (the paper's 53, whatever this run's P)
    print(chapter.describe_long_run(long_cfg, lrun, through))
    lwd = lrun.wd.upto(2000)
    lgrok = chapter.grok_epoch(lwd.epochs, lwd["test_acc"])
    plots.plot_grokking_overview(lwd.epochs, lwd["test_acc"], lwd["core_dim"], lwd["keep_acc"], lwd["remove_acc"], lp, lgrok)
    plt.show()
    display(Markdown("**Fig. 1A and 1B (paper), long run to epoch 2000.** As above, on the paper preset's models: look at "
                     "the core's size at grokking and afterwards, and at core-removed accuracy against chance."))
    long_clocks = chapter.long_clock_epochs(lwd, lgrok)
    eigs_l, titles_l, notes_l = chapter.clock_panels(lwd, long_clocks, model=0, label="long run, ")
    plots.plot_clocks(eigs_l, titles_l, lp, notes_l)
    plt.show()
    display(Markdown("**Fig. 1C (paper), long run.** Model 0's clocks at the paper's epochs shifted by this run's own grokking: look "
                     "at the eigenvalues relative to the band at grokking and at epoch 2000, where the core is larger."))
    plots.plot_unit_circle_share(lrun.wd.epochs, lrun.wd["frac_unit_circle_ols"], lrun.wd["frac_unit_circle"],
                                 lrun.wd["r2_holdout"], chapter.grok_epoch(lrun.wd.epochs, lrun.wd["test_acc"]),
                                 chapter.SHARE_MIN, title="Unit-circle share and R_h² per checkpoint, long run (ours)")
    plt.show()
    display(Markdown("**Unit-circle share (ours), long run to the last stored epoch.** As above: look at the dip after "
                     "grokking and at the share in the second half of the run (the training-length diagnosis)."))

# %% [markdown]
# The claims above, on every stored checkpoint of the long run (not only those up to epoch 2000). This run
# follows the paper's protocol more closely than this preset (3 models, 20 000 epochs), so every paper claim
# it tests takes its verdict from it, the jump of $R_h^2$ and the clock on the circle read at the paper's
# epochs 300, 900, 2000 and 20 000; this preset's rows of them are the replica shown beside them.

# %%
if long is not None:
    long_claims = chapter.build_claims(lrun, long_cfg)
    section = f"stored paper-preset run, through epoch {through['wd']}"
    long_records = long_claims.records(section, chapter.how_trained(long_cfg), departures=chapter.run_departures(long_cfg))
    # the paper's protocol (3 models, 20 000 epochs): every paper claim this run tests takes its verdict from it
    carried = {r["id"] for r in long_records if r["kind"] == "paper" and r["headline"]}
    records, long_records = carry(records, long_records, carried)
    records += long_records
    display(ClaimsView(long_claims, long_claims.not_tested))
    display(Markdown(chapter.unit_circle_sentence(long_claims.numbers, lp)))

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(long_claims.verdict() if long is not None else "no long run stored")

# %% [markdown]
# ## The same protocol, trained again
#
# How a run is trained is not part of the protocol: the chapter's `TRAINER` knob trains each model
# alone (`loop`) or every model and both arms in one batched step (`ensemble`, the default), and `PRECISION`
# runs the training matmuls in fp32 or bf16. The ensemble draws each member's dropout masks from
# its own generator, so an ensemble run is a second sample of the same experiment; bf16 against fp32
# on the ensemble changes only the rounding of the matrix products, which training can amplify into
# another trajectory. Runs of this protocol trained that way are stored
# (`python -m ace_helpers.variants`; the reproducibility page lists them all). Below, every claim on
# this run beside the same claim on each of them, with the measured values where the verdicts
# differ: a claim whose verdict changes from one sample to the next depends on the sample at this
# run's length and number of models.

# %% tags=["remove-input", "hide-output"]
display(Markdown(variants.comparison_for(cfg, records, chapter.config.PROTOCOL_KNOBS)))

# %% [markdown]
# ## Trainers compared
#
# The ensemble trainer is ours: does it train the models as the code release does? The chapter's book protocol
# (p = 53, half the pairs for training, AdamW lr 1e-3, weight decay 1) was trained to epoch 2000 three ways and
# stored: by the ensemble trainer (12 models, fp32), by our loop trainer, which trains each model alone with
# `torch.optim.AdamW` as the release does (6 models, fp32), and by the code release itself, run unmodified from a
# scratch copy (3 models). Each statistic is measured per model, at each model's own grok checkpoint (the first with
# test accuracy ≥ 0.99) or at the paper's clock epochs, and each pair of trainers is compared by a two-sided exact
# Mann–Whitney U test. With the release's 3 models against our 6 or 12 the smallest p-values it can give are 0.024
# and 0.004: "no difference" means that the samples cannot tell the trainers apart, not that the trainers agree. The release stores the outputs of its own
# analysis only: its unit-circle share and its necessary rank are computed as ours are, but its R² is of its own fit
# (its core basis and test split) and it stores no energy rank, so R² and the energy rank are compared between our
# two trainers only. Nothing is trained here: the table is read from the stored comparison
# (`python -m ace_helpers.chapters.modadd_grokking.trainers`).

# %% tags=["hide-input"]
comparison = chapter.trainers.load()
if comparison is None:
    print("the trainers' comparison is not stored (python -m ace_helpers.chapters.modadd_grokking.trainers)")
else:
    display(Markdown(chapter.trainers.table(comparison)))
    display(Markdown(chapter.trainers.summary(comparison)))
    display(Markdown(chapter.trainers.snap_sentence(comparison)))

# %% [markdown]
# The snap claim asks for a share at grokking; three models cannot tell a trainer whose models miss the circle now and
# then from one whose models miss it always. Below, the claim judged on every stored model of the headline (ensemble)
# trainer, at least eight, on a bootstrap interval of the mean share over them, with the code release's three models
# beside it. Where it has a verdict, this row carries the claim's headline; the rows of the runs above are evidence.

# %% tags=["hide-input"]
if comparison is not None:
    records, snap = chapter.snap_models.with_snap_headline(records, comparison)
    display(ClaimsView(snap, snap.not_tested))

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(snap.verdict() if comparison is not None else "no comparison stored")

# %% [markdown]
# The lines above are the test. The headline runs of chapters 2 and 3 were trained by the ensemble trainer, and they
# keep it unless one of these statistics tells it apart from the loop trainer or from the code release. With 12, 6 and
# 3 models the comparison can only rule out large departures, such as a core that bursts after grokking in every
# model of one trainer and in none of another. The last line bears on the snap claim above: whether our models miss
# the circle at grokking because of our batched trainer, or also when each model is trained alone. The code release
# trains its models in one process that shares one random stream between them, for dropout and batch order alike;
# our two trainers give each model its own.

# %% [markdown]
# ## Results
#
# `results.json` keys (per-checkpoint arrays are nested lists, one row per model, one column per
# checkpoint of `epochs`): `epochs`, `test_acc`, `core_dim`, `suff_dim`, `keep_acc`, `remove_acc`,
# `r2_holdout`, `frac_unit_circle`, `rotational_modes`, plus `energy_rank`, `median_abs_eig`,
# `r2_ols`, `frac_unit_circle_ols`, `rotational_modes_ols`, `median_abs_eig_ols` (definitions in the
# `ace_helpers.chapters.modadd.checkpoints` docstring) and `remove_acc_energy_rank` (core-removed
# accuracy at the 0.99-energy rank); `numbers` (the measured values the claims use); `grok_epoch`
# (None if never); `clock_epochs`; `claims_passed`, `claims_total`, `claims_failed`;
# `models_from_artifact`; `train_wall_s` (per model, from the artifact manifests); `long_run` (the
# stored long run: `through_epoch`, `n_models`, its claim numbers, or null); `wall_s` (this notebook).

# %% tags=["remove-cell"]
results = chapter.results(
    cfg, run, claims, clock_epochs, long, long_claims if long is not None else None, wall_s=time.perf_counter() - start_time
)
session.finish(cfg, results, records)  # glues the verdicts shown at the top, writes results.json
