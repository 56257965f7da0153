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
# # Chapter 4: Grokking time against weight decay and modulus — τ ∝ 1/(ω·p)?
#
# ```{admonition} The paper's claim, and what this run finds
# :class: note
# **[The paper](https://arxiv.org/abs/2602.22600):** Grokking time follows τ ∝ 1/(ω·p): against weight decay ω, τ ∝ ω^−1.02; against the modulus p, τ(p) = −Ω·log(1 − p_crit/p), with τ ∝ p^−1 at high redundancy (p ≫ p_crit) and Ω ∝ 1/ω.
#
# **This run:** {glue:md}`verdicts`
#
# Every claim of the book, with its verdict: [the scorecard](../book/scorecard.md).
# ```
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
# * **p sweep**: p ∈ {31, …, 101} at ω = 1, full batch (one step per epoch; the `book` preset
#   stops at p = 61). We repeat it at a
#   second weight decay (`EXTRA_OMEGAS_P`) to test the theory's Ω ∝ 1/ω, which the paper's sweeps
#   do not test directly.
#
# τ_mem is the first evaluated step with train accuracy ≥ 0.99, τ_test the first with test
# accuracy ≥ 0.99, and **τ_grok = τ_test − τ_mem**. All seeds and ω values of one p train together
# as one vectorised ensemble (`ace_helpers.toys.ensemble`); a run leaves the ensemble once it has
# grokked, or is *censored* at the step cap (reported, not dropped).
#
# ```{admonition} Run this chapter
# :class: tip dropdown
# From `notebooks/`: `papermill 04_grokking_scaling_law.ipynb out.ipynb -p PRESET ci -p N_SEEDS 1 -p MAX_STEPS 5000`
# (lists with `-y`, e.g. `-y "OMEGAS: [0.5, 1.0, 3.0]"`, `-y "PRIMES: [31, 43, 53]"` or `-y "EXTRA_OMEGAS_P: []"`). Each split
# of the p² pairs must hold at least p pairs, and a modulus whose models would not fit in 8 GiB is
# refused; a bad value stops the run in its second cell with a `ValueError` naming the knob.
# ```

# %% tags=["parameters", "hide-input"]
PRESET = None  # "ci" | "book" | "paper"; None: $ACE_PRESET, else "book"
OMEGAS = None  # weight decays ω of the ω sweep
PRIMES = None  # moduli p of the p sweep (primes)
N_SEEDS = None  # seeds per setting (seeds SEED, SEED + 1, ...)
SEED = None  # first seed of every setting (paper: 42)
MAX_STEPS = None  # step cap of every run; runs not grokked by then are censored
EVAL_EVERY = None  # steps between evaluations: the resolution of τ_mem and τ_test
TRAIN_FRACTION = None  # ω sweep: share of the p² pairs used for training (paper 0.5)
TRAIN_FRACTION_P = None  # p sweep: share of the p² pairs used for training (paper 0.5)
BATCH_SIZE_OMEGA = None  # mini-batch of the ω sweep (the p sweep is full batch)
STOP_MARGIN = None  # steps a run keeps training after it grokked
P_OMEGA = None  # modulus of the ω sweep
OMEGA_P = None  # weight decay of the p sweep
EXTRA_OMEGAS_P = None  # further weight decays of the p sweep (tests Omega ~ 1/omega; paper none)
LR = None  # AdamW learning rate
PRECISION = None  # "auto" (bf16 on a GPU with native bf16, else fp32: the stored results), "fp32", "bf16"
DEVICE = None  # where the sweeps train: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"
OUTPUT_DIR = None  # where results.json goes; None: outputs/04_grokking_scaling_law

# %% tags=["hide-input", "hide-output"]
import time

import matplotlib.pyplot as plt
from IPython.display import Markdown, display
from myst_nb import glue

import ace_helpers
from ace_helpers.chapters import grokking_scaling_law as chapter
from ace_helpers.chapters.grokking_scaling_law import figures as plots
from ace_helpers.repro import session
from ace_helpers.repro.claims_view import ClaimsView

start_time = time.perf_counter()
cfg = session.start(chapter, globals())  # validates every knob before any compute, then prints what runs

# %% [markdown]
# ## ACE in plain sight
#
# This chapter times grokking and does not extract cores, but what groks is a core. One stored grokked
# model (p = 31, weight decay 1): the last-token output of its second block, its ACE core against the
# unembedding (energy 0.99, chapter 2's rule), and the model run with only the core kept.
# %%
site = chapter.hook_site()
h = ace_helpers.capture(site.model, site.inputs, site.hook, positions=site.positions)
grok_core = ace_helpers.extract_core(h, site.jacobian, energy=0.99)
logits = ace_helpers.run_with_core(site.model, site.inputs, site.hook, grok_core, "keep", positions=site.positions)
print(f"the grokked model's core has rank {grok_core.rank} of {h.shape[-1]} and keeps accuracy {site.score(logits):.3f}")

# %% [markdown]
# ```{fold} Differences from the paper, stated up front: split, evaluation interval, compute, fits, Ω
# ```
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
# * *Fits.* The code release (`grok_sweep.py`) fits the per-setting mean delays; we fit every
#   uncensored run, which gives each exponent a confidence interval from the seed scatter and keeps
#   that scatter in R².
# * *Ω ∝ 1/ω.* The `ci` and `book` presets repeat the p sweep at ω = 2 (`EXTRA_OMEGAS_P`); the
#   paper preset keeps the paper's single ω = 1, where Ω(ω) comes from the ω sweep at p = 53 with the
#   p sweep's p_crit — which tests Ω ∝ 1/ω only given that p_crit does not depend on ω.

# %% tags=["hide-input"]
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
# no better than its natural rival, a power law in p; (iii) small-p runs grokking quickly (no divergence near p_crit);
# (iv) at p ≫ p_crit, a power of p far from −1; (v) p sweeps at two weight decays whose Ω do not
# scale as 1/ω (with one p_crit: the theory's p_crit = m_th/m* does not involve ω).
# A caveat we cannot remove: in the p sweep p also sets the number of training pairs (∝ p²) and of
# pairs per answer class (∝ p), so the sweep tests "τ falls with p", not redundancy in isolation.

# %% [markdown]
# ## Stored paper-preset artifact
#
# The paper preset's sweeps are stored under `book/artifacts/04_grokking_scaling_law/` when they
# have been produced; the notebook uses them when their parameters match the ones requested.
# `chapter.run` reads (or trains) both sweeps and fits them; the sections below look at each.

# %%
res = chapter.run(cfg)
sweeps, fits = res.sweeps, res.fits
print(sweeps.describe())

# %% [markdown]
# ## ω sweep: τ_grok ∝ ω^−1.02 (paper)
#
# The paper reports τ ∝ ω^−1.02 against the theory's ω^−1 at p = 53, batch 512, 12 seeds. All
# ω × seeds below train as **one** ensemble.

# %% tags=["hide-input"]
omega_runs = res.omega_runs
display(Markdown(plots.setting_table(omega_runs, "omega")))

# %% tags=["hide-input"]
omega_fit, mem_fit = fits.omega, fits.mem
if omega_fit:
    print(f"fitted exponent {omega_fit.exponent:.3f}, 95% CI [{omega_fit.ci[0]:.3f}, {omega_fit.ci[1]:.3f}], "
          f"R² = {omega_fit.r2:.3f} on {omega_fit.n} uncensored runs  (paper: -1.02; theory: -1)")
if mem_fit:
    print(f"for comparison, memorisation time tau_mem ~ omega^{mem_fit.exponent:.2f} (R² = {mem_fit.r2:.2f})")
if not omega_fit:
    print("too few uncensored runs for the power law in omega (see the table)")
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
#
# **Is the mean delay monotone in ω?** The table gives each ω's mean delay, its change from the
# previous ω, and ω · mean τ, which is constant when τ ∝ 1/ω. The change must be negative at every
# step; a change smaller than the evaluation interval (`EVAL_EVERY` steps) is within the τ
# resolution, so it decides nothing: the claims table reports such a step as "inconclusive".

# %% tags=["remove-input"]
display(Markdown(plots.omega_table(chapter.setting_rows(fits))))

# %% [markdown]
# ## p sweep: τ(p) = −Ω·log(1 − p_crit/p) (paper)
#
# At ω = 1, full batch, the paper fits τ(p) = −Ω·log(1 − p_crit/p) (Ω the "optimizer constant",
# p_crit the "architectural limit") and states τ ∝ p^−1 in the high-redundancy regime p ≫ p_crit.
# One ensemble per p holds every seed and every weight decay of the p sweep.

# %% tags=["hide-input"]
p_runs = res.p_runs
display(Markdown(plots.setting_table(p_runs, "p")))

# %% tags=["hide-input"]
p_fit, p_pow = fits.p_log, fits.p_pow
if p_fit:
    print(f"at omega = {cfg['OMEGA_P']:g}: Omega = {p_fit.Omega:.4g} ± {p_fit.Omega_se:.2g}, "
          f"p_crit = {p_fit.p_crit:.4g} ± {p_fit.p_crit_se:.2g}, R² = {p_fit.r2:.3f} on {p_fit.n} uncensored runs")
    print(f"SSE: log law {p_fit.sse:.4g}, constant {p_fit.sse_const:.4g}, 1/p asymptote {p_fit.sse_inv:.4g}")
lv = fits.log_vs_power
if lv:
    print(f"log law against a free power law p^{lv.b:.2f} (least squares in tau, 2 parameters each): "
          f"ΔAIC = {lv.delta_aic:.2f} [{lv.interval[0]:.2f}, {lv.interval[1]:.2f}] (> 0: the log law fits better)")
if p_pow:
    print(f"plain power law in p: exponent {p_pow.exponent:.2f} [{p_pow.ci[0]:.2f}, {p_pow.ci[1]:.2f}] (paper: -1 for p >> p_crit)")
if not (p_fit and p_pow):
    print("too few uncensored runs for the fits in p (see the table)")
ax = plots.plot_p_sweep(p_runs, p_fit, omega_law=fits.omega_law)
plt.show()

# %% [markdown]
# *Panel B of the paper's grokking-time figure: τ_grok against the modulus p (dots: seeds; black:
# mean ± sd at ω = 1; red: the −Ω·log(1 − p_crit/p) fit; dashed: its 1/p asymptote; green: the runs
# at the second weight decay, dotted: the joint law with Ω = A·ω^b) — look at τ falling with p, and
# at whether the green points sit below the blue ones by the ratio of the weight decays (Ω ∝ 1/ω).*
#
# Larger moduli — more equivalent Fourier modes, more pairs per answer — grok sooner. The paper's
# τ ∝ p^−1 is a statement about p ≫ p_crit, so the claim `scaling.p` is tested on the large primes only,
# p ≥ 61: the slope of log τ on log p over their runs, with a bootstrap interval over the seeds,
# against −1 (within the chapter's exponent window). Beside it stands the slope the fitted log law
# itself has over the same primes (its secant): the law's curvature makes it steeper than −1 at any
# finite p/p_crit, so a measured slope *flatter* than the law's secant is something the law does not
# allow. A run whose primes hold fewer than two ≥ 61 (the `ci` and `book` presets) leaves `scaling.p`
# untested; the paper-settings runs below test it.

# %%
numbers = chapter.gap_numbers(fits)
if numbers:
    print(f"primes {numbers['p_lo']}–{numbers['p_hi']} sit at p/p_crit = {numbers['r_lo']:.2f}–{numbers['r_hi']:.2f} "
          f"(p_crit = {numbers['p_crit']:.3g}); the fitted law's own log-log slope across them: {numbers['secant']:.2f}")
    print(f"SSE of tau: log law {p_fit.sse:.4g}, pure power law {fits.p_sse_pow:.4g} (two parameters each)")
else:
    print("too few uncensored runs for the fits in p")
large = fits.large
if large:
    print(f"slope over the primes >= {large.p_min} {list(large.primes)}: {large.slope:.2f} [{large.interval[0]:.2f}, "
          f"{large.interval[1]:.2f}] (theory for p >> p_crit: -1); the fitted law's secant there {large.secant:.2f}")
else:
    print(f"fewer than two primes >= 61 in this run: the slope for p >> p_crit is not tested here (see the paper settings)")
glue("p_exponent", Markdown(f"{p_pow.exponent:.2f}" if p_pow else "n/a"), display=False)
glue("p_exponent_large", Markdown(f"{large.slope:.2f}" if large else "not measured (fewer than two primes ≥ 61)"), display=False)

# %% [markdown]
# In this run the power of p over all primes is {glue:md}`p_exponent`, and over the primes ≥ 61
# {glue:md}`p_exponent_large`. A caveat the design cannot remove: in the p sweep p also sets the number of training pairs per
# answer (`TRAIN_FRACTION_P`·p), so a steeper fall than 1/p may come from the data as well as from
# redundancy; the paper's larger primes (79–101) and its 0.5 split are beyond the `book` preset's
# CPU budget.

# %% [markdown]
# ## Ω ∝ 1/ω: the p sweep at a second weight decay
#
# The theory puts all of the weight decay into the optimizer constant, Ω ∝ 1/ω, and none into
# p_crit. The paper's p sweep is at ω = 1 only, so we repeat it at `EXTRA_OMEGAS_P` and fit
# log τ = log A + b·log ω + log(−log(1 − p_crit/p)) with one p_crit over every run; b is the
# exponent of Ω (theory −1). The table fits the law at each ω on its own: ω·Ω is constant when
# Ω ∝ 1/ω, and the p_crit should agree within their errors. Ω and p_crit trade off against each
# other over a short range of primes (their standard errors show by how much), which is why the
# claim rests on the joint fit with one p_crit.

# %% tags=["hide-input"]
display(Markdown(plots.p_omega_table(chapter.p_sweep_rows(p_runs))))
ol = fits.omega_law
print(f"joint fit: Omega ~ omega^{ol.b:.2f} [{ol.b_ci[0]:.2f}, {ol.b_ci[1]:.2f}] (theory -1), p_crit = {ol.p_crit:.3g} "
      f"± {ol.p_crit_se:.2g}, R² (log tau) = {ol.r2:.3f} on {ol.n} runs at {ol.n_omega} weight decays"
      if ol else "the p sweep has one weight decay, or too few uncensored runs: Omega ~ 1/omega is not tested")

# %% [markdown]
# ## The margin ODE, fitted to measured margins
#
# The theory's dm/dt = −ω·m + c·ω·‖ψ‖² makes a prediction we can measure directly: after memorisation
# the margin relaxes at a rate set by the weight decay. Four small runs of the sweep model (p = 53, the
# `ci` split and batch, ω = 1 and 3, two seeds; the same at every preset, about two minutes on one CPU
# thread) record every 10 steps the mean test margin m (true logit minus the best other) and a proxy
# for ‖ψ‖²: the power of the logits' component that depends on (a + b − c) mod p only, which is the part
# of the logit table the Fourier algorithm writes. A least-squares fit of the finite-difference dm/dt on
# [−m, ‖ψ‖²] from τ_mem on (time in units of lr·step, in which AdamW decays the weights at rate ω) gives
# each run's ω̂, to be compared with its weight decay. This can show whether the margin's dynamics have the
# ODE's form with the weight decay as its rate; it cannot show the ODE's derivation, nor that our proxy is
# the paper's ψ: the paper's grokking-time theory states the ODE without defining ψ or c. So the paper's
# claim is recorded as *not tested as stated*, and this fit is our own row beside it.
#
# ```{fold} Show the margin fits per run
# ```

# %% tags=["hide-input"]
margin_traces, margin_fits = res.margin_traces, res.margin  # trained by chapter.run
for f in margin_fits:
    print(f"omega = {f.omega:g}, seed {f.seed}: fitted decay rate {f.omega_fit:.3g} (ratio {f.omega_fit / f.omega:.2f}), "
          f"c = {f.c:.3g}, R² of dm/dt = {f.r2:.2f} on {f.n} evaluations")
plots.plot_margin_traces(margin_traces, margin_fits)
plt.show()

# %% [markdown]
# *Left: the mean test margin of each run (solid) and the fitted ODE integrated from the measured margin
# at memorisation (dashed); right: the ‖ψ‖² proxy — look at whether the dashed curves follow the solid
# ones, and whether the runs at ω = 3 relax three times faster than those at ω = 1.*

# %% [markdown]
# ## Redundancy as a cause: fewer usable modes at one modulus
#
# The sweeps read p as the redundancy axis, but a larger p also brings more training pairs per answer and a
# larger vocabulary, so τ falling with p does not by itself show that *redundancy* is what speeds grokking up
# (the paper's causal reading of Fig. 2's redundancy panel). Here is an intervention that changes the number of
# equivalent modes and nothing else we can name at once: the same sweep model at p = 53, the margin runs' split,
# ω = 1, four seeds per arm, with every member's token embedding confined by projected training to the constant
# and the cosines and sines of k frequencies drawn per seed, for k = 2, 6 and 26 (26 = ⌊53/2⌋ is the
# unconstrained model: those frequencies span every function of the token). If redundancy is the cause, τ_grok
# falls as k grows. The price of the design: confining the embedding to k frequencies also lowers its rank to
# 2k + 1 and so its room to memorise, which can speed generalisation up on its own. Between the two confined arms
# that confound runs against the claim (more modes also means more rank); against the unconstrained arm it runs
# with it. So the test can refute "more modes, faster grokking" only where rank cannot explain the result, and it
# says nothing about why τ falls with p in the sweeps. Twelve small runs, about two minutes on one CPU thread, the
# same at every preset.
#
# ```{fold} Show the confined-embedding runs and their fit
# ```

# %% tags=["hide-input"]
red_runs = res.redundancy  # trained by chapter.run
red_fit = chapter.redundancy_slope(red_runs)
for k, mean in zip(red_fit.ks, red_fit.means):
    taus = [r.tau_grok for r in red_runs if r.k == k]
    print(f"k = {k:2d} frequencies: tau_grok = {taus} steps (mean {mean:.0f})")
print(f"slope of log tau_grok on log k: {red_fit.slope:+.2f}, 90% seed bootstrap [{red_fit.interval[0]:+.2f}, "
      f"{red_fit.interval[1]:+.2f}]; {red_fit.n_censored} runs censored at {chapter.REDUNDANCY_MAX_STEPS} steps")
plots.plot_redundancy(red_runs)
plt.show()

# %% [markdown]
# *τ_grok of every run (dots) and the mean per arm (line) against the number of frequencies the embedding may
# use. Read the left pair of arms for the effect of modes with the rank confound against it, and the right pair
# for the unconstrained model; the claims table below judges the slope over all arms (the paper's claim) and over
# the confined arms alone (ours).*

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
# Each row gives the paper's statement and where it is made, our acceptance rule and why it
# departs from the paper's wording, our number and the verdict. The exponent windows are the
# theory's −1 within a factor 1.25, [−1.25, −0.8]; the R² thresholds are ours (0.8), as the paper
# prints R² without a value we could retrieve. With one seed per setting (the `ci` preset) the
# seed scatter dominates, so the ω and Ω windows become "exponent < 0" and the R² thresholds fall to
# 0.6; the p exponent keeps its window. A row that does not reproduce states its measured cause,
# and the "ours (diagnosis)" rows test that cause, so they fail if it changes.

# %% tags=["remove-input"]
claims = chapter.build_claims(res, cfg)  # with the claims this run cannot test inside
records = claims.records(f"{cfg.PRESET} preset")
display(ClaimsView(claims, claims.not_tested))
n_cens = sum(r.censored for r in sweeps.runs)
print(f"censored runs (reported, not fitted): {n_cens} of {len(sweeps.runs)}")

# %% tags=["remove-cell"]
print(claims.summary())

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(claims.verdict())  # the tests compare this line: a failure that is not a documented known gap changes it

# %% [markdown]
# ## The paper's settings: the stored runs
#
# The `paper` preset is the paper's protocol: train fraction 0.5 in both sweeps, evaluation at
# every step (so τ is exact to the step), ω ∈ {0.3, 0.5, 1, 1.5, 2, 3} at p = 53 with batch 512,
# the seven primes 31–101 at full batch, 12 seeds per setting. It is trained run by run, in the
# background or on a cluster (`python -m ace_helpers.chapters.sweep 04_grokking_scaling_law
# --preset paper`), and every finished run is stored; this section loads what is stored (nothing
# is trained) and checks the claims above on it. A sweep is tested once every one of its settings
# has enough seeds (4 for ω, 3 for p); until then its claims are listed as not tested, with how
# far the runs have got. These runs follow the paper's protocol more closely than the `book` run above, so
# every paper claim they test takes its verdict from them, and the `book` run's verdict is shown beside it as
# the replica (`scaling.p` needs primes ≥ 61, which only these runs have).
#
# ```{fold} Show the stored runs at the paper's settings: sweeps, fits and their claims table
# ```

# %% tags=["hide-input"]
paper = chapter.stored_paper_sweeps(cfg)
print(chapter.NO_PAPER_SWEEPS if paper is None else paper.describe())
if paper is not None:
    paper_claims, paper_untested, paper_fits = chapter.paper_claims(paper)
    panels = {  # the paper's two panels: plot, fit, title, caption
        "omega": (plots.plot_omega_sweep, paper_fits.omega, "ω sweep at the paper's settings (stored runs)",
                  "*Panel A of the paper's grokking-time figure, at the paper's settings (train fraction 0.5, τ exact to "
                  "the step): as above — look at the red line's slope against the dashed ω⁻¹.*"),
        "p": (plots.plot_p_sweep, paper_fits.p_log, "p sweep at the paper's settings (stored runs)",
              "*Panel B of the paper's grokking-time figure, at the paper's settings (primes 31–101, full batch, train "
              "fraction 0.5): as above — look at τ falling with p and at the red law against the dashed 1/p asymptote "
              "at the larger primes.*"),
    }  # fmt: skip
    for sweep, (plot, fit, title, caption) in panels.items():
        if paper.runs[sweep]:
            display(Markdown(plots.setting_table(paper.runs[sweep], sweep)))
            plot(paper.runs[sweep], fit)
            plt.gca().set_title(title)
            plt.show()
            display(Markdown(caption))
    display(ClaimsView(paper_claims, paper_untested))
    # the law's limits at the paper settings: τ ∝ 1/p over the large primes, and Ω from the ω sweep
    lg, om = paper_fits.large, paper_fits.omega_Omega
    if lg:
        print(f"log law over every prime: p_crit = {lg.p_crit:.3g}; its secant over p = {lg.all_primes[0]}–{lg.all_primes[1]}: "
              f"{lg.secant_all:.3f}, over p = {min(lg.primes)}–{max(lg.primes)}: {lg.secant:.3f}")
        print(f"measured slope over p >= {lg.p_min} ({lg.n} runs): {lg.slope:.3f} [{lg.interval[0]:.3f}, {lg.interval[1]:.3f}]; "
              f"minus the law's secant: {lg.excess:+.3f} [{lg.excess_interval[0]:+.3f}, {lg.excess_interval[1]:+.3f}]")
    if om:
        print(f"Omega from the omega sweep at p = {om.p0}: exponent {om.exponent:.3f} [{om.interval[0]:.3f}, {om.interval[1]:.3f}]; "
              f"omega*Omega per omega {[round(x) for x in om.omega_Omega]} (constant when Omega ~ 1/omega)")
    # the headline of every paper claim these runs test; this run's verdicts of them become the replica beside it
    records = chapter.with_paper_evidence(records, paper_claims, paper_untested, "paper settings, stored runs", paper.trained,
                                          departures=chapter.stored_departures(paper))

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print(paper_claims.verdict() if paper is not None else "no paper-settings run stored")

# %% [markdown]
# ## Results
#
# `results.json` keys: `runs` (one entry per run: `sweep` "omega"|"p", `omega`, `p`, `seed`,
# `tau_mem`, `tau_test`, `tau_grok`, `censored`, `steps_trained`; τ in optimizer steps, a censored
# run's `tau_grok` is its lower bound); the ω fit `omega_exponent`, `omega_exponent_ci` (95 %),
# `omega_r2`, `omega_prefactor`, `omega_n_fit`, `omega_means`; the p fit at ω = `OMEGA_P`: `Omega`,
# `Omega_se`, `p_crit`, `p_crit_se`, `p_r2`, `p_sse`, `p_sse_const`, `p_sse_inv`, `p_aic`,
# `p_aic_const`, `p_n_fit`, `p_exponent`, `p_exponent_ci`, `p_log_secant`; the Ω law `omega_law_b`, `omega_law_b_ci`, `omega_law_p_crit`,
# `omega_law_r2`; `n_censored`; `eval_every` (τ resolution in steps); `from_artifact`;
# `omega_sweep_wall_s`, `p_sweep_wall_s`; `claims_passed`, `claims_total`; `wall_s`;
# `paper_settings` (the stored runs at the paper's settings: `n_runs` and `seeds` per sweep, the
# ω fit, `p_crit` and the law's limits, `cpu_hours`, `trained`, `runs`; null at the paper preset or when none is
# stored); the law's limits (`large_primes`, `p_exponent_large`, `p_exponent_large_ci`, `p_large_law_secant`,
# `p_large_excess`, `p_large_excess_ci`, `p_log_secant_all`, `Omega_exponent_omega_sweep`, `..._ci`,
# `omega_Omega_omega_sweep`); `margin_ode` (per margin run: `omega`, `seed`, `omega_fit`, `c`, `r2`, `n`,
# `log2_ratio`); `redundancy` (per redundancy run: `k`, `seed`, `freqs`, `tau_mem`, `tau_test`, `tau_grok`,
# `censored`, `steps_trained`). A paper-preset
# run also stores `runs` as the artifact `book/artifacts/04_grokking_scaling_law/sweeps`.

# %% tags=["remove-cell"]
results = chapter.results(res, claims, wall_s=time.perf_counter() - start_time, paper=paper, margin=margin_fits,
                          redundancy=red_runs)
session.finish(cfg, results, records)  # glues the verdicts shown at the top, writes results.json
