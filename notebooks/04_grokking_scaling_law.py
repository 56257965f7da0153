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
# with the amount of functional redundancy, τ ∝ 1/(ω·p) (spec §3.4).
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

# %% tags=["parameters"]
PRESET = None  # "ci" | "book" | "paper"; None: $ACE_PRESET, else "book"
OMEGAS = None  # weight decays ω of the ω sweep
PRIMES = None  # moduli p of the p sweep (primes)
N_SEEDS = None  # seeds per setting (seeds 42, 43, ...)
MAX_STEPS = None  # step cap of every run; runs not grokked by then are censored
EVAL_EVERY = None  # steps between evaluations = resolution of τ_mem and τ_test
TRAIN_FRACTION = None  # ω sweep: share of the p² pairs used for training (paper 0.5)
TRAIN_FRACTION_P = None  # p sweep: share of the p² pairs used for training (paper 0.5)
BATCH_SIZE_OMEGA = None  # mini-batch of the ω sweep (the p sweep is full batch)
STOP_MARGIN = None  # steps a run keeps training after it grokked
P_OMEGA = None  # modulus of the ω sweep
OMEGA_P = None  # weight decay of the p sweep
LR = None  # AdamW learning rate
OUTPUT_DIR = None  # where results.json goes; None: outputs/04_grokking_scaling_law

# %%
import json
import time

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from ace_helpers import grokking as gk
from ace_helpers import params
from ace_helpers.artifacts import default_output_dir, load_artifact, project_root, save_artifact, write_results
from ace_helpers.plots.scaling import plot_omega_sweep, plot_p_sweep
from ace_helpers.plots.style import set_style
from ace_helpers.report import Claims

T0 = time.perf_counter()
params.set_threads()
set_style()
cfg = gk.resolve_params(
    PRESET=PRESET, OMEGAS=OMEGAS, PRIMES=PRIMES, N_SEEDS=N_SEEDS, MAX_STEPS=MAX_STEPS, EVAL_EVERY=EVAL_EVERY,
    TRAIN_FRACTION=TRAIN_FRACTION, TRAIN_FRACTION_P=TRAIN_FRACTION_P, BATCH_SIZE_OMEGA=BATCH_SIZE_OMEGA, STOP_MARGIN=STOP_MARGIN,
    P_OMEGA=P_OMEGA, OMEGA_P=OMEGA_P, LR=LR,
)
OUTPUT_DIR = OUTPUT_DIR or default_output_dir("04_grokking_scaling_law")
print(cfg)
print(params.versions())

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
ARTIFACT_DIR = project_root() / "book" / "artifacts" / "04_grokking_scaling_law"
key = {k: v for k, v in cfg.items() if k != "PRESET"}
stored = load_artifact(ARTIFACT_DIR, "sweeps", key)
print("using the stored artifact (params match)" if stored else "no matching stored artifact: training now")

# %% [markdown]
# ## ω sweep: τ_grok ∝ ω^−1.02 (paper)
#
# The paper reports τ ∝ ω^−1.02 against the theory's ω^−1 at p = 53, batch 512, 12 seeds. All
# ω × seeds below train as **one** ensemble; the progress bar counts the steps of the slowest run.

# %%
t_omega = time.perf_counter()
if stored:
    omega_runs = [r for r in gk.records_from_dicts(stored.data["runs"]) if r.sweep == "omega"]
else:
    omega_runs = gk.run_omega_sweep(cfg)
t_omega = time.perf_counter() - t_omega
st = gk.setting_stats(omega_runs, "omega", "omega")
display(Markdown("| ω | runs fitted | censored | mean τ_grok | sd | mean τ_mem |\n|---|---|---|---|---|---|\n" + "\n".join(
    f"| {w:g} | {int(n)} | {int(c)} | {m:.0f} | {s:.0f} | "
    f"{np.mean([r.tau_mem for r in omega_runs if r.omega == w and r.tau_mem is not None]):.0f} |"
    for w, n, c, m, s in zip(st["x"], st["n"], st["n_censored"], st["mean"], st["sd"]))))

# %%
w_fit_x, _, w_fit_tau = gk.uncensored(omega_runs, "omega")
omega_fit = gk.fit_power_law(w_fit_x, w_fit_tau)
print(f"fitted exponent {omega_fit.exponent:.3f}, 95% CI [{omega_fit.ci[0]:.3f}, {omega_fit.ci[1]:.3f}], "
      f"R² = {omega_fit.r2:.3f} on {omega_fit.n} uncensored runs  (paper: -1.02; theory: -1)")
mem = [(r.omega, r.tau_mem) for r in omega_runs if r.tau_mem]
mem_fit = gk.fit_power_law([w for w, _ in mem], [t for _, t in mem])
print(f"for comparison, memorisation time tau_mem ~ omega^{mem_fit.exponent:.2f} (R² = {mem_fit.r2:.2f})")
ax = plot_omega_sweep(omega_runs, omega_fit)
plt.show()

# %% [markdown]
# The delay falls as a power of ω, to be compared with the theory's −1 (doubling the weight decay
# halves the delay); memorisation itself, τ_mem, depends on ω far more weakly — it is the *delay*
# between memorising and generalising that weight decay controls.

# %% [markdown]
# ## p sweep: τ(p) = −Ω·log(1 − p_crit/p) (paper)
#
# At ω = 1, full batch, the paper fits τ(p) = −Ω·log(1 − p_crit/p) (Ω the "optimizer constant",
# p_crit the "architectural limit") and reports τ ∝ p^−1 for large p. One ensemble per p.

# %%
t_p = time.perf_counter()
if stored:
    p_runs = [r for r in gk.records_from_dicts(stored.data["runs"]) if r.sweep == "p"]
else:
    p_runs = gk.run_p_sweep(cfg)
t_p = time.perf_counter() - t_p
sp = gk.setting_stats(p_runs, "p", "p")
display(Markdown("| p | runs fitted | censored | mean τ_grok | sd | mean τ_mem |\n|---|---|---|---|---|---|\n" + "\n".join(
    f"| {int(p)} | {int(n)} | {int(c)} | {m:.0f} | {s:.0f} | "
    f"{np.mean([r.tau_mem for r in p_runs if r.p == p and r.tau_mem is not None]):.0f} |"
    for p, n, c, m, s in zip(sp["x"], sp["n"], sp["n_censored"], sp["mean"], sp["sd"]))))

# %%
_, p_fit_x, p_fit_tau = gk.uncensored(p_runs, "p")
p_fit = gk.fit_log_law(p_fit_x, p_fit_tau)
p_pow = gk.fit_power_law(p_fit_x, p_fit_tau)
print(f"Omega = {p_fit.Omega:.4g} ± {p_fit.Omega_se:.2g}, p_crit = {p_fit.p_crit:.4g} ± {p_fit.p_crit_se:.2g}, "
      f"R² = {p_fit.r2:.3f} on {p_fit.n} uncensored runs")
print(f"SSE: log law {p_fit.sse:.4g}, constant {p_fit.sse_const:.4g}, 1/p asymptote {p_fit.sse_inv:.4g}; "
      f"AIC law {p_fit.aic:.1f} vs constant {p_fit.aic_const:.1f}")
print(f"plain power law in p: exponent {p_pow.exponent:.2f} [{p_pow.ci[0]:.2f}, {p_pow.ci[1]:.2f}] (paper: -1 for large p)")
ax = plot_p_sweep(p_runs, p_fit)
plt.show()

# %% [markdown]
# Larger moduli — more equivalent Fourier modes, more pairs per answer — grok sooner. Compare the
# plain power in p printed above with the asymptotic −1: where p is not ≫ p_crit the log law is
# locally steeper than its 1/p asymptote, so a power fit over a short range of primes overshoots −1.

# %% [markdown]
# ## Link to chapter 3: measured redundancy
#
# [Chapter 3](03_core_inflation) measured redundancy directly, as the gap between the *necessary*
# core dimension (remove → chance) and the *sufficient* one (keep → baseline) of the p = 53 model.
# If its results are present, we show the gap at its last checkpoint (before grokking the necessary
# dimension is just the energy rank, so early gaps do not measure redundancy).

# %%
ch3 = default_output_dir("03_core_inflation") / "results.json"
if ch3.is_file():
    r3 = json.loads(ch3.read_text())
    gap = np.asarray(r3["core_dim"], float) - np.asarray(r3["suff_dim"], float)  # (models, checkpoints)
    print(f"chapter 3 (preset {r3['params'].get('PRESET')}): redundancy = necessary - sufficient core dim, "
          f"mean over models, at its last checkpoint (epoch {r3['epochs'][-1]}): {gap[:, -1].mean():.1f}")
else:
    print("chapter 3 results not found (run notebooks/03_core_inflation first); nothing to link")

# %% [markdown]
# ## Claims
#
# Thresholds from the "Must reach" list: ω exponent in [−1.25, −0.8] with R² ≥ 0.8; τ
# decreasing with p (the per-p means fall monotonically and the fitted power of p is negative);
# the log-law fit with R² ≥ 0.8 that beats a constant (lower AIC).
#
# The `ci` preset (1 seed, 3 ω, 3 primes) can only show the *trends*: with one seed per setting
# the seed scatter dominates (in the book run the two seeds at ω = 3 differ several-fold), so at
# `ci` the exponent window is replaced by "exponent < 0" and the R² thresholds are loosened to 0.6.
# The quantitative windows are checked at the `book` and `paper` presets only.

# %%
ci = cfg["PRESET"] == "ci"
r2_min = 0.6 if ci else 0.8
claims = Claims()
if ci:
    claims.check("ω trend: τ_grok falls with ω (ci: 1 seed)", "-1.02 (theory -1)", omega_fit.exponent,
                 omega_fit.exponent < 0)
else:
    claims.check("ω exponent of τ_grok", "-1.02 (theory -1); must be in [-1.25, -0.8]", omega_fit.exponent,
                 -1.25 <= omega_fit.exponent <= -0.8)
claims.check(f"R² of the ω power law ≥ {r2_min}", "printed, value unknown", omega_fit.r2, omega_fit.r2 >= r2_min)
means = sp["mean"][sp["n"] > 0]
claims.check("τ_grok decreases with p (means over seeds)", "τ ∝ 1/p at large p", [round(m) for m in means],
             len(means) >= 2 and bool(np.all(np.diff(means) < 0)) and p_pow.exponent < 0)
claims.check(f"R² of −Ω·log(1 − p_crit/p) ≥ {r2_min}", "printed, value unknown", p_fit.r2, p_fit.r2 >= r2_min)
claims.check("log law beats a constant (AIC)", "—", f"AIC {p_fit.aic:.1f} vs {p_fit.aic_const:.1f}", p_fit.beats_constant)
display(Markdown(claims.table()))
n_cens = sum(r.censored for r in omega_runs + p_runs)
print(f"censored runs (reported, not fitted): {n_cens} of {len(omega_runs + p_runs)}")

# %%
# NBVAL_CHECK_OUTPUT
print(claims.summary())
claims.assert_all()

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
runs = omega_runs + p_runs
if cfg["PRESET"] == "paper" and not stored:
    save_artifact(ARTIFACT_DIR, "sweeps", params=key, data={"runs": [r.to_dict() for r in runs]},
                  wall_s=t_omega + t_p)
results = gk.analyse(runs) | {
    "runs": [r.to_dict() for r in runs],
    "eval_every": cfg["EVAL_EVERY"],
    "from_artifact": bool(stored),
    "omega_sweep_wall_s": t_omega,
    "p_sweep_wall_s": t_p,
    "claims_passed": sum(r.passed for r in claims.rows),
    "claims_total": len(claims.rows),
    "wall_s": time.perf_counter() - T0,
}
print(write_results(OUTPUT_DIR, results, cfg))
