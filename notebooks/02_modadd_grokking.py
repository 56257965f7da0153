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
# # Chapter 2: A cyclic core crystallises at grokking
#
# A two-layer transformer learns $a + b \equiv c \pmod p$ from half of all $p^2$ pairs. It first
# memorises the training half (test accuracy at chance), then — with weight decay — suddenly
# generalises: it *groks*. The paper (§3.1–3.3, Fig. 1) reports that the algorithmic core
# of layer 2 forms at that moment: at grokking (epoch ~800) a ~15-dimensional core appears that
# is necessary (removing it drops accuracy to chance) and sufficient (keeping only it keeps
# accuracy), and a linear "shift" operator fitted on the core, which maps the representation
# of answer $c$ to that of $c + 1$, has eigenvalues that jump from inside the unit disk onto the
# unit circle: the core holds a clock.
#
# Everything below is computed at every checkpoint on the **test split**, at the last token of
# layer 2 (`ace_helpers.chapters.modadd.analysis.analyse_checkpoint`): ACE with the unembedding as the
# tail, a scan of keep-only / core-removed accuracy over *every* rank at once, and the shift
# operator (ridge 1, block-edge holdout $R_h^2$). The training run is cached and shared with
# Chapter 3.

# %% [markdown]
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **The paper:** In modular addition (p = 53) a cyclic core of about 15 dimensions forms at grokking (epoch ~800): necessary and sufficient, with a shift operator whose eigenvalues move from inside the unit disk onto the unit circle (Fig. 1).
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# ```{admonition} Run this chapter
# :class: tip
# From `notebooks/`: `papermill 02_modadd_grokking.ipynb out.ipynb -p PRESET ci -p P 31 -p TRAIN_FRACTION 0.6 -p EPOCHS 500 -p N_MODELS 1`
# trains and analyses the small run in minutes on a CPU (these are the `ci` values; change any of them for a new
# run, cached under `outputs/modadd_grokking_cache`). `-p PRESET book` loads the stored book run (p = 53, 2 models
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
WORKERS = None  # processes training the models in parallel (same numbers; book: 2)
ARTIFACT_DIR = None  # cache folder of the training run; None -> book/artifacts/modadd_grokking (ci: outputs/)
OUTPUT_DIR = None  # where results.json goes; None -> outputs/02_modadd_grokking

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from myst_nb import glue

from ace_helpers import artifacts, params, report
from ace_helpers.chapters import modadd_grokking as chapter
from ace_helpers.plots import modadd_grokking as plots
from ace_helpers.plots.style import set_style

T0 = time.perf_counter()
cfg = chapter.PARAMS.resolve(globals())  # validates every knob before any compute
params.begin(cfg)
set_style()

# %% [markdown]
# ## Training (or loading the stored run)
#
# `N_MODELS` models (initial seeds `SEED + m`) are trained with AdamW (lr `LR`, weight decay
# `WEIGHT_DECAY`, batch `BATCH_SIZE`, dropout 0.1, loss on the last token). At `FORK_EPOCH` a copy of
# each continues without weight decay (Chapter 3). Each checkpoint is analysed as soon as it is
# reached, so only the analyses are stored: one artifact per model, with a manifest (parameters,
# commit, versions, wall time). When a stored artifact matches the parameters it is loaded instead.

# %%
run = chapter.load_run(cfg)
p = cfg.P
wd = run.wd
grok = chapter.grok_epoch(wd.epochs, wd["test_acc"])
print(f"models loaded from stored artifacts: {run.cached}; training + analysis wall time per model: "
      f"{[round(w) for w in run.wall_s]} s")  # fmt: skip
print(f"grok epoch (first checkpoint with every model >= 0.99 test accuracy): {grok}")

# %% [markdown]
# ## The core forms at grokking (Fig. 1A)
#
# **Paper:** grokking at epoch ~800; the core dimension (necessary dimension: the smallest rank
# whose removal drops accuracy to $2/p$, at least the 0.99-energy rank) is ~15 at grokking.
# Before grokking the "core" is just the large energy rank of an unstructured representation.

# %%
plots.plot_accuracy_and_core_dim(wd.epochs, wd["test_acc"], wd["core_dim"], grok)
plt.show()
display(Markdown("**Fig. 1A (paper).** Test accuracy (blue, left axis) and core size in dimensions (red, right axis) per "
                 "epoch, mean over models with a min–max band: look at the core shrinking to its smallest size where the "
                 "accuracy jumps (dotted line: grokking)."))  # fmt: skip
if grok is not None:
    i = wd.index(grok)
    print(f"ours: grok epoch {grok}; core dim at grokking per model: {wd['core_dim'][:, i].tolist()}; "
          f"0.99-energy rank there: {wd['energy_rank'][:, i].tolist()}")  # fmt: skip
print(f"core dim at epoch 0: {wd['core_dim'][:, 0].tolist()}, at the last epoch ({wd.epochs[-1]}): "
      f"{wd['core_dim'][:, -1].tolist()}")  # fmt: skip

# %% [markdown]
# While the network only memorises, the "core" is the large energy rank of an unstructured
# representation; it shrinks through the transition to a compact subspace of layer 2 when the
# test accuracy jumps — the generalising solution.

# %% [markdown]
# ## The core is necessary and sufficient (Fig. 1B)
#
# **Paper:** from grokking on, keeping only the core keeps the full accuracy and removing it drops
# accuracy to chance ($1/p$). Keep/remove are uncentred projections at layer 2, as in the paper.

# %%
plots.plot_keep_remove(wd.epochs, wd["test_acc"], wd["keep_acc"], wd["remove_acc"], p, grok)
plt.show()
display(Markdown("**Fig. 1B (paper).** Test accuracy of the full model, of the core alone and with the core removed: look "
                 "at core-only on the full model's curve and core-removed down at chance (dotted) from grokking on."))  # fmt: skip
post = wd.epochs >= (grok if grok is not None else wd.epochs[-1] + 1)
if post.any():
    print(f"ours, checkpoints from grokking on: core-only accuracy >= {wd['keep_acc'][:, post].min():.4f} "
          f"(base >= {wd['test_acc'][:, post].min():.4f}); core-removed accuracy <= {wd['remove_acc'][:, post].max():.4f} "
          f"(2/p = {2 / p:.4f})")  # fmt: skip

# %% [markdown]
# After grokking the few core directions carry the whole computation: without them the model is
# at chance, with only them it is as good as the full model.

# %% [markdown]
# ## A cyclic mechanism emerges in the core (Fig. 1C)
#
# **Paper:** clocks at epochs 0, 300, 800, 900, 2000. Before grokking the shift operator's
# eigenvalues scatter inside the unit circle and $R_h^2 \approx 0$ (the map from $c$ to $c+1$ looks
# contractive, not cyclic); at grokking they snap onto the circle and $R_h^2 \approx 1$. The grey
# ring is $||\lambda| - 1| \le \sin(\pi/p)$; grey dots are the $p$-th roots of unity. Model 0.

# %%
clock_epochs = cfg.CLOCK_EPOCHS or chapter.default_clock_epochs(wd.epochs.tolist(), grok)
eigs, titles, notes = chapter.clock_panels(wd, clock_epochs, model=0)
plots.plot_clocks(eigs, titles, p, notes)
plt.show()
display(Markdown("**Fig. 1C (paper).** Eigenvalues of the shift operator fitted on model 0's core (Re λ, Im λ) at each clock "
                 "epoch: look at them moving from inside the disk onto the unit circle (grey band) at grokking."))  # fmt: skip
for e in clock_epochs:
    i = wd.index(e)
    print(f"epoch {e:>5}: median |λ| {wd['median_abs_eig'][:, i].round(3).tolist()}, R_h² {wd['r2_holdout'][:, i].round(3).tolist()}, "
          f"fraction near the circle {wd['frac_unit_circle'][:, i].round(3).tolist()}")  # fmt: skip

# %% [markdown]
# The operator on the core changes character at the transition: from a contraction that
# predicts nothing out of sample to a rotation whose eigenvalues sit on the circle at the
# frequencies $e^{\pm 2\pi i k/p}$ the network uses — the modular-addition clock.
#
# The in-sample OLS fit without holdout (the paper's sweep arrays, `r2_ols`) is already high
# before grokking because it fits ~40 dimensions to $p$ points; only the held-out $R_h^2$ separates
# the phases:

# %%
print("epoch      :", wd.epochs.tolist())
print("R² (OLS)   :", wd["r2_ols"][0].round(2).tolist())
print("R_h² (ridge):", wd["r2_holdout"][0].round(2).tolist())

# %% [markdown]
# ## Model by model
#
# The grok epoch above is the first checkpoint at which *every* model has grokked. Models grok at
# different times, and a model's clock keeps sharpening for a while after its accuracy jump, so
# here is each model from its own grok epoch on (minimum $R_h^2$ and fraction of eigenvalues near
# the circle over those checkpoints):

# %%
for row in chapter.per_model_summary(wd):
    print(row)

# %% [markdown]
# ## Claims
#
# The "paper" column gives the paper's values (Fig. 1, Sec. 3); the pass/fail thresholds are ours,
# chosen to bracket them: a window around each approximate value (grok epoch ~800 → [500, 1200],
# core dim ~15 → [10, 25]) and bounds that separate the two phases the paper shows (before grokking
# median |λ| < 0.8 and $R_h^2$ < 0.6; after it ≥ 80 % of the eigenvalues near the circle and
# $R_h^2$ ≥ 0.9, core-only within 0.01 of the full model, core-removed ≤ 2/p, twice chance). "Before grokking" means checkpoints where every
# model's test accuracy is still below 0.1 (the memorisation phase, like the paper's epoch-0 and
# epoch-300 clocks); "from grokking on" means every checkpoint at or after the grok epoch, every
# model. One rule relaxes thresholds, and each relaxed row says so: off the paper's task (p = 53,
# 50 % training pairs; e.g. the `ci` preset's p = 31 with 60 %) the paper's epoch window does
# not apply (it becomes "groks before the fork"), the core-dimension window is widened to [4, 25]
# (p = 31 has 16 harmonics, not 27) and the post-grokking $R_h^2$ threshold is lowered from 0.9 to
# 0.5 (a ~14-dimensional operator fitted on 27 class pairs and scored on 4 held-out ones is noisy);
# everything else is unchanged.

# %%
claims, not_tested, numbers = chapter.grokking_claims(run, cfg)
display(Markdown(claims.table()))
if not_tested:
    display(Markdown(chapter.not_tested_table(not_tested)))

# %%
print(claims.summary())

# %%
# NBVAL_CHECK_OUTPUT
print(claims.verdict())

# %% [markdown]
# **Rows marked "known gap"** did not reproduce at this preset's exact parameters (seeds included):
# the reason is given in the row and recorded in `chapters.modadd_grokking.KNOWN_GAPS`. Any other failure
# is marked **NO** in the table and fails the book's tests (the notebook itself always finishes). Compare with the model-by-model table above. At the `book` preset the
# failing checkpoints are not an effect of the short run: they lie inside the paper's schedule,
# and a paper-preset run with the same seeds trains exactly the same first `EPOCHS` epochs. A model
# that groks late is still sharpening its clock at its grok checkpoint, and once the core starts
# to grow after grokking the $R_h^2$ and unit-circle fraction of the grown core drift down. The
# paper's clock panels show one model. A likely contributor is the $R_h^2$ statistic itself: the
# mean over core dimensions of a per-dimension $R^2$ on only round(0.075·p) = 4 held-out classes,
# which low-variance dimensions pull down. The numbers are reported as measured.

# %% [markdown]
# ## The paper's epochs: the long run
#
# The paper's Fig. 1 runs to epoch 2000, with clocks at epochs 0, 300, 800, 900 and 2000 (grokking
# at 800). This run stops at `EPOCHS`. The `paper` preset (Chapter 3) continues the same models
# towards 20 000 epochs in the background; whatever part of it is stored is loaded here (nothing
# is trained) and the figures and claims above are repeated on it. Its clocks are at the paper's
# epochs shifted by our later grokking: 0, 300, grok, grok + 100, 2000.

# %%
long = chapter.stored_long_run(cfg)
if long is None:
    print(chapter.NO_LONG_RUN)
else:
    long_cfg, lrun, through = long
    print(chapter.describe_long_run(long_cfg, lrun, through))
    lwd = lrun.wd.upto(2000)
    lgrok = chapter.grok_epoch(lwd.epochs, lwd["test_acc"])
    plots.plot_grokking_overview(lwd.epochs, lwd["test_acc"], lwd["core_dim"], lwd["keep_acc"], lwd["remove_acc"], p, lgrok)
    plt.show()
    display(Markdown("**Fig. 1A and 1B (paper), long run to epoch 2000.** As above, on the paper preset's models: look at "
                     "the core's minimum at grokking and its slow regrowth afterwards, with core-removed accuracy still at chance."))  # fmt: skip
    long_clocks = chapter.long_clock_epochs(lwd, lgrok)
    eigs_l, titles_l, notes_l = chapter.clock_panels(lwd, long_clocks, model=0, label="long run, ")
    plots.plot_clocks(eigs_l, titles_l, p, notes_l)
    plt.show()
    display(Markdown("**Fig. 1C (paper), long run.** Model 0's clocks at the paper's epochs shifted by our later grokking: look "
                     "at the eigenvalues on the circle from grokking on, and at those inside it as the core grows (epoch 2000)."))  # fmt: skip

# %% [markdown]
# The claims above, on every stored checkpoint of the long run (not only those up to epoch 2000):

# %%
if long is not None:
    long_claims, _, long_numbers = chapter.grokking_claims(lrun, long_cfg)
    display(Markdown(long_claims.table()))

# %%
# NBVAL_CHECK_OUTPUT
print(long_claims.verdict() if long is not None else "no long run stored")

# %% [markdown]
# ## Results
#
# `results.json` keys (per-checkpoint arrays are nested lists, one row per model, one column per
# checkpoint of `epochs`): `epochs`, `test_acc`, `core_dim`, `suff_dim`, `keep_acc`, `remove_acc`,
# `r2_holdout`, `frac_unit_circle`, `rotational_modes`, plus `energy_rank`, `median_abs_eig`,
# `r2_ols`, `frac_unit_circle_ols`, `rotational_modes_ols` (definitions in the
# `ace_helpers.chapters.modadd.analysis` docstring); `grok_epoch` (None if never); `clock_epochs`;
# `claims_passed`, `claims_total`, `claims_failed`; `models_from_artifact`; `train_wall_s` (per model, from the
# artifact manifests); `long_run` (the stored long run: `through_epoch`, `n_models`, its claim
# numbers, or null); `wall_s` (this notebook).

# %%
results = chapter.results(
    cfg, run, claims, clock_epochs, long,
    long_claims if long is not None else None, long_numbers if long is not None else None,
    wall_s=time.perf_counter() - T0,
)  # fmt: skip
records = claims.records(f"{cfg.PRESET} preset") + report.not_tested_records(not_tested, f"{cfg.PRESET} preset")
if long is not None:
    section = f"stored paper-preset run, through epoch {through['wd']}"
    records += long_claims.records(section)
glue("verdicts", Markdown(report.verdict_summary(records)), display=False)  # shown in the summary box at the top
print(artifacts.write_results(cfg.OUTPUT_DIR, results, cfg, claims=records))
