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
# # Chapter 4: the inverse scaling law of grokking time, τ ∝ 1/(ω·p)
#
# Chapters 2 and 3 showed that a modular-addition transformer groks when a cyclic core forms, and
# that under weight decay the core keeps inflating with *redundant* copies of its Fourier
# harmonics. The paper turns this into a quantitative prediction: the delay between memorising
# the training set and generalising, τ_grok, should fall inversely with the weight decay ω and
# with the amount of functional redundancy, τ ∝ 1/(ω·p).
#
# We time grokking in optimizer steps on the sweep model of the paper — **one** post-LN encoder
# layer (d_model 128, 4 heads, d_ff 512, ReLU, dropout 0.1, learned positions, causal mask),
# AdamW with lr 1e-3 — in two sweeps:
#
# * **ω sweep**: ω ∈ {0.3, 0.5, 1, 1.5, 2, 3} at p = 53, mini-batch 512;
# * **p sweep**: p ∈ {31, …, 101} at ω = 1, full batch (one step per epoch).
#
# τ_mem is the first evaluated step with train accuracy ≥ 0.99, τ_test the first with test
# accuracy ≥ 0.99, and **τ_grok = τ_test − τ_mem**. All seeds and ω values of one p train together
# as one vectorised ensemble (`ace_helpers.ensemble`); a run leaves the ensemble once it has
# grokked, or is *censored* at the step cap (reported, not dropped).
#
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **The paper:** Grokking time follows τ ∝ 1/(ω·p): against weight decay ω, τ ∝ ω^−1.02; against the modulus p, τ(p) = −Ω·log(1 − p_crit/p), with τ ∝ p^−1 at high redundancy.
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
#
# ```{admonition} Run this chapter
# :class: tip
# From `notebooks/`: `papermill 04_grokking_scaling_law.ipynb out.ipynb -p PRESET ci -p N_SEEDS 1 -p MAX_STEPS 5000`
# (lists with `-y`, e.g. `-y "OMEGAS: [0.5, 1.0, 3.0]"` or `-y "PRIMES: [31, 43, 53]"`). Each split
# of the p² pairs must hold at least p pairs, and a modulus whose models would not fit in 8 GiB is
# refused; a bad value stops the run in its second cell with a `ValueError` naming the knob.
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None: $ACE_PRESET, else "book"
OMEGAS = None  # weight decays ω of the ω sweep
PRIMES = None  # moduli p of the p sweep (primes)
N_SEEDS = None  # seeds per setting (seeds 42, 43, ...)
MAX_STEPS = None  # step cap of every run; runs not grokked by then are censored
EVAL_EVERY = None  # steps between evaluations: the resolution of τ_mem and τ_test
TRAIN_FRACTION = None  # ω sweep: share of the p² pairs used for training (paper 0.5)
TRAIN_FRACTION_P = None  # p sweep: share of the p² pairs used for training (paper 0.5)
BATCH_SIZE_OMEGA = None  # mini-batch of the ω sweep (the p sweep is full batch)
STOP_MARGIN = None  # steps a run keeps training after it grokked
P_OMEGA = None  # modulus of the ω sweep
OMEGA_P = None  # weight decay of the p sweep
LR = None  # AdamW learning rate
OUTPUT_DIR = None  # where results.json goes; None: outputs/04_grokking_scaling_law

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from myst_nb import glue

from ace_helpers import artifacts, params, report
from ace_helpers.chapters import grokking_scaling_law as chapter
from ace_helpers.plots import grokking_scaling_law as plots
from ace_helpers.plots.style import set_style

T0 = time.perf_counter()
cfg = chapter.PARAMS.resolve(globals())  # validates every knob before any compute
params.begin(cfg)
set_style()

# %% [markdown]
# **Differences from the paper, stated up front.**
#
# * *Split.* Our train/test split is a `numpy.random.RandomState(42)` permutation of the p² pairs
#   (`modadd_dataset`). The paper's sweep split came from a `torch.randperm` seeded 42 *on the
#   device*, which differs between CPU and CUDA, so it is not reproducible across devices anyway.
# * *Evaluation interval.* The paper evaluates every step; we evaluate every `EVAL_EVERY` steps, so
#   τ_mem and τ_test are each known to within `EVAL_EVERY` steps and τ_grok to ± `EVAL_EVERY`.
# * *Compute.* The paper preset (12 seeds × 13 settings, up to 20,000–30,000 epochs, evaluation
#   every step) is far beyond a shared 2-core CPU; it is runnable (`PRESET="paper"`, ideally on a
#   GPU) and its result is shown from a stored artifact when one exists. The `book` and `ci` presets
#   use fewer seeds, a step cap and — where printed below — a larger train fraction, which makes
#   every run grok in fewer steps (the architecture and optimizer are the paper's).

# %%
print(f"preset {cfg['PRESET']}: {cfg['N_SEEDS']} seeds per setting (paper: 12); "
      f"train fraction {cfg['TRAIN_FRACTION']} (ω sweep) / {cfg['TRAIN_FRACTION_P']} (p sweep) (paper 0.5 / 0.5); step cap {cfg['MAX_STEPS']}; "
      f"evaluation every {cfg['EVAL_EVERY']} steps -> tau resolution ±{cfg['EVAL_EVERY']} steps")

# %% [markdown]
# ## Why τ should scale as 1/(ω·p): the theory in brief
#
# *The margin ODE.* Let m(t) be the generalising circuit's margin on held-out pairs: the logit of
# the right answer minus the best wrong one. With decoupled weight decay every step multiplies all
# weights by (1 − lr·ω), so whatever is not supported by the gradient decays at rate ω (time t in
# units of lr·steps). The paper summarises the post-memorisation dynamics by a linear ODE
#
# $$\frac{dm}{dt} = -\omega\, m + c\,\omega\,\lVert\psi\rVert_2^2 ,$$
#
# where ψ is the part of the weights that carries the generalising (Fourier) signal: decay pulls the
# margin down, while the same decay, by pruning the memorising weights, hands their norm to the
# structured solution, at a rate proportional to how much structured signal there is. The solution
# relaxes exponentially to the fixed point m* = c‖ψ‖²,
# m(t) = m* + (m₀ − m*) e^{−ωt}.
#
# *Redundancy.* Addition mod p can be computed with any non-zero frequency k: the features
# cos(2πka/p), sin(2πka/p) solve the task equally well for every k, and the map a ↦ k·a permutes
# them, so there are about ⌊p/2⌋ *equivalent* Fourier modes. A network that spreads its weight over
# many of them has a structured signal ‖ψ‖² that grows with their number, ∝ p: each mode is a
# redundant copy of the same computation (chapter 3 measured exactly this redundancy as the gap
# between the necessary and the sufficient core dimension).
#
# *The crossing time.* Grokking happens when m(t) reaches the threshold margin m_th at which test
# accuracy hits 99 %. Starting from m₀ ≈ 0 at memorisation, m(τ) = m_th gives
#
# $$\tau_{grok} = -\frac{1}{\omega}\log\Big(1-\frac{m_{th}}{m^*}\Big) = -\Omega \log\Big(1-\frac{p_{crit}}{p}\Big),\qquad \Omega\propto\frac{1}{\omega},\; \frac{p_{crit}}{p}=\frac{m_{th}}{m^*}.$$
#
# For p ≫ p_crit the logarithm is ≈ p_crit/p, hence **τ ∝ 1/(ω·p)**; as p falls towards p_crit
# the delay diverges (below it the fixed point never reaches the threshold).
#
# *What would falsify it.* (i) An ω exponent whose confidence interval excludes −1 by a wide
# margin, or τ_grok insensitive to ω; (ii) τ_grok flat or *increasing* in p, or the log law doing
# no better than a constant; (iii) small-p runs grokking quickly (no divergence near p_crit).
# A caveat we cannot remove: in the p sweep p also sets the number of training pairs (∝ p²) and of
# pairs per answer class (∝ p), so the sweep tests "τ falls with p", not redundancy in isolation.

# %% [markdown]
# ## Stored paper-preset artifact
#
# The paper preset's sweeps are stored under `book/artifacts/04_grokking_scaling_law/` when they
# have been produced; the notebook uses them when their parameters match the ones requested.

# %%
sweeps = chapter.Sweeps(cfg)
print(sweeps.describe())

# %% [markdown]
# ## ω sweep: τ_grok ∝ ω^−1.02 (paper)
#
# The paper reports τ ∝ ω^−1.02 against the theory's ω^−1 at p = 53, batch 512, 12 seeds. All
# ω × seeds below train as **one** ensemble.

# %%
omega_runs = sweeps.omega()
display(Markdown(plots.setting_table(omega_runs, "omega")))

# %%
fits = chapter.fit_sweeps(omega_runs, [])
omega_fit, mem_fit = fits.omega, fits.mem
print(f"fitted exponent {omega_fit.exponent:.3f}, 95% CI [{omega_fit.ci[0]:.3f}, {omega_fit.ci[1]:.3f}], "
      f"R² = {omega_fit.r2:.3f} on {omega_fit.n} uncensored runs  (paper: -1.02; theory: -1)")
print(f"for comparison, memorisation time tau_mem ~ omega^{mem_fit.exponent:.2f} (R² = {mem_fit.r2:.2f})")
ax = plots.plot_omega_sweep(omega_runs, omega_fit)
plt.show()

# %% [markdown]
# *Panel A of the paper's grokking-time figure: τ_grok against ω on log-log axes (dots: seeds; black:
# mean ± sd; red: the fitted power law; dashed: the theory's ω⁻¹) — look at the red line's slope
# against the dashed one.*
#
# The delay falls as a power of ω, to be compared with the theory's −1 (doubling the weight decay
# halves the delay); memorisation itself, τ_mem, depends on ω far more weakly — it is the *delay*
# between memorising and generalising that weight decay controls.

# %% [markdown]
# ## p sweep: τ(p) = −Ω·log(1 − p_crit/p) (paper)
#
# At ω = 1, full batch, the paper fits τ(p) = −Ω·log(1 − p_crit/p) (Ω the "optimizer constant",
# p_crit the "architectural limit") and reports τ ∝ p^−1 for large p. One ensemble per p.

# %%
p_runs = sweeps.p()
display(Markdown(plots.setting_table(p_runs, "p")))

# %%
fits = chapter.fit_sweeps(omega_runs, p_runs)
p_fit, p_pow = fits.p_log, fits.p_pow
print(f"Omega = {p_fit.Omega:.4g} ± {p_fit.Omega_se:.2g}, p_crit = {p_fit.p_crit:.4g} ± {p_fit.p_crit_se:.2g}, "
      f"R² = {p_fit.r2:.3f} on {p_fit.n} uncensored runs")
print(f"SSE: log law {p_fit.sse:.4g}, constant {p_fit.sse_const:.4g}, 1/p asymptote {p_fit.sse_inv:.4g}; "
      f"AIC law {p_fit.aic:.1f} vs constant {p_fit.aic_const:.1f}")
print(f"plain power law in p: exponent {p_pow.exponent:.2f} [{p_pow.ci[0]:.2f}, {p_pow.ci[1]:.2f}] (paper: -1 for large p)")
ax = plots.plot_p_sweep(p_runs, p_fit)
plt.show()

# %% [markdown]
# *Panel B of the paper's grokking-time figure: τ_grok against the modulus p (dots: seeds; black:
# mean ± sd; red: the −Ω·log(1 − p_crit/p) fit; dashed: its 1/p asymptote) — look at τ falling with p
# and rising steeply towards p_crit.*
#
# Larger moduli — more equivalent Fourier modes, more pairs per answer — grok sooner. Compare the
# plain power in p printed above with the asymptotic −1: where p is not ≫ p_crit the log law is
# locally steeper than its 1/p asymptote, so a power fit over a short range of primes overshoots −1.

# %% [markdown]
# ## Link to chapter 3: measured redundancy
#
# [Chapter 3](03_core_inflation) measured redundancy directly, as the gap between the *necessary*
# core dimension (remove → chance) and the *sufficient* one (keep → baseline) of the p = 53 model.
# We show the gap of its stored book-preset run at the last checkpoint (before grokking the necessary
# dimension is just the energy rank, so early gaps do not measure redundancy); without a stored
# run there is nothing to link.

# %%
print(chapter.linked_redundancy())

# %% [markdown]
# ## Claims
#
# The thresholds: ω exponent in [−1.25, −0.8] (around the paper's −1.02) with R² ≥ 0.8; τ
# decreasing with p (the per-p means fall monotonically and the fitted power of p is negative);
# the log-law fit with R² ≥ 0.8 that beats a constant (lower AIC).
#
# One rule relaxes them, stated in the claims' text: with one seed per setting (the `ci` preset:
# 1 seed, 3 ω, 3 primes) the seed scatter dominates (in the book run the two seeds at ω = 3
# differ several-fold), so the exponent window becomes "exponent < 0" and the R² thresholds fall
# to 0.6. The quantitative windows are checked whenever there are at least two seeds per setting
# (the `book` and `paper` presets).

# %%
claims = chapter.build_claims(fits, p_runs, cfg)
records = claims.records(f"{cfg.PRESET} preset")
glue("verdicts", Markdown(report.verdict_summary(records)), display=False)  # shown in the summary box at the top
display(Markdown(claims.table()))
n_cens = sum(r.censored for r in sweeps.runs)
print(f"censored runs (reported, not fitted): {n_cens} of {len(sweeps.runs)}")

# %%
print(claims.summary())

# %%
# NBVAL_CHECK_OUTPUT
print(claims.verdict())  # the tests compare this line: a failure that is not a documented known gap changes it

# %% [markdown]
# ## Results
#
# `results.json` keys: `runs` (one entry per run: `sweep` "omega"|"p", `omega`, `p`, `seed`,
# `tau_mem`, `tau_test`, `tau_grok`, `censored`, `steps_trained`; τ in optimizer steps, a censored
# run's `tau_grok` is its lower bound); the ω fit `omega_exponent`, `omega_exponent_ci` (95 %),
# `omega_r2`, `omega_prefactor`, `omega_n_fit`; the p fit `Omega`, `Omega_se`, `p_crit`,
# `p_crit_se`, `p_r2`, `p_sse`, `p_sse_const`, `p_sse_inv`, `p_aic`, `p_aic_const`, `p_n_fit`,
# `p_exponent`, `p_exponent_ci`; `n_censored`; `eval_every` (τ resolution in steps);
# `from_artifact`; `omega_sweep_wall_s`, `p_sweep_wall_s`; `claims_passed`, `claims_total`; `wall_s`.
# A paper-preset run also stores `runs` as the artifact `book/artifacts/04_grokking_scaling_law/sweeps`.

# %%
sweeps.save()  # a paper-preset run stores its sweeps as the artifact; other presets store nothing
results = chapter.results(sweeps, claims, wall_s=time.perf_counter() - T0)
print(artifacts.write_results(cfg.OUTPUT_DIR, results, cfg, claims=records))
