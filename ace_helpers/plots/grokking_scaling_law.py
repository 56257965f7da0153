"""Chapter 4 figures (notebooks/04_grokking_scaling_law): grokking delay vs weight decay ω and vs modulus p."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ace_helpers.chapters.grokking_scaling_law import GrokRecord, setting_stats
from ace_helpers.fits import LogLawFit, PowerLawFit


def _runs(records: Sequence[GrokRecord], sweep: str, key: str):
    rows = [r for r in records if r.sweep == sweep and r.tau_grok is not None]
    x = np.array([getattr(r, key) for r in rows], float)
    tau = np.array([r.tau_grok for r in rows], float)
    cens = np.array([r.censored for r in rows], bool)
    return x, tau, cens


def plot_omega_sweep(records: Sequence[GrokRecord], fit: PowerLawFit | None, ax=None):
    """τ_grok vs ω on log-log axes: seeds as points, mean ± sd, the fitted power law and ω⁻¹.

    Censored runs (lower bounds) are drawn as open triangles and are not in the fit.
    Returns the Axes.
    """
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(5.2, 4))[1]
    x, tau, cens = _runs(records, "omega", "omega")
    ok = (tau > 0) & ~cens
    rng = np.random.default_rng(0)
    jitter = np.exp(rng.uniform(-0.03, 0.03, len(x)))
    ax.scatter(x[ok] * jitter[ok], tau[ok], s=14, alpha=0.5, color="#4C72B0", label="runs (seeds)")
    if cens.any():
        ax.scatter(x[cens] * jitter[cens], tau[cens], s=30, marker="^", facecolors="none",
                   edgecolors="#C44E52", label="censored (lower bound)")
    st = setting_stats(records, "omega", "omega")
    good = st["n"] > 0
    ax.errorbar(st["x"][good], st["mean"][good], yerr=np.nan_to_num(st["sd"][good]), fmt="o", color="k",
                ms=5, capsize=3, label="mean ± sd")
    grid = np.geomspace(min(x) * 0.9, max(x) * 1.1, 50)
    if fit is not None:
        ax.plot(grid, fit.predict(grid), color="#C44E52",
                label=f"fit: τ ∝ ω^{fit.exponent:.2f} [{fit.ci[0]:.2f}, {fit.ci[1]:.2f}], R²={fit.r2:.2f}")
        # theory line ω⁻¹ through the geometric mean of the data
        anchor = np.exp(np.mean(np.log(tau[ok]))) * np.exp(np.mean(np.log(x[ok])))
        ax.plot(grid, anchor / grid, "--", color="0.4", label="theory ω⁻¹")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("weight decay ω")
    ax.set_ylabel("τ_grok (optimizer steps)")
    ax.set_title("Grok delay vs weight decay (p = 53, batch 512)")
    ax.legend(fontsize=7)
    return ax


def plot_p_sweep(records: Sequence[GrokRecord], fit: LogLawFit | None, ax=None):
    """τ_grok vs modulus p: seeds as points, mean ± sd, the −Ω·log(1 − p_crit/p) fit and its
    1/p asymptote Ω·p_crit/p.  Returns the Axes."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(5.2, 4))[1]
    x, tau, cens = _runs(records, "p", "p")
    ok = (tau > 0) & ~cens
    ax.scatter(x[ok], tau[ok], s=14, alpha=0.5, color="#4C72B0", label="runs (seeds)")
    if cens.any():
        ax.scatter(x[cens], tau[cens], s=30, marker="^", facecolors="none", edgecolors="#C44E52",
                   label="censored (lower bound)")
    st = setting_stats(records, "p", "p")
    good = st["n"] > 0
    ax.errorbar(st["x"][good], st["mean"][good], yerr=np.nan_to_num(st["sd"][good]), fmt="o", color="k",
                ms=5, capsize=3, label="mean ± sd")
    if fit is not None:
        grid = np.linspace(max(fit.p_crit * 1.02, min(x) * 0.9), max(x) * 1.1, 200)
        ax.plot(grid, fit.predict(grid), color="#C44E52",
                label=f"−Ω·log(1 − p_crit/p): Ω={fit.Omega:.3g}, p_crit={fit.p_crit:.3g}, R²={fit.r2:.2f}")
        ax.plot(grid, fit.Omega * fit.p_crit / grid, "--", color="0.4", label="asymptote Ω·p_crit/p")
    ax.set_xlabel("Modulus p")
    ax.set_ylabel("τ_grok (optimizer steps)")
    ax.set_title("Grok Time vs. Redundancy (ω = 1, full batch)")
    ax.legend(fontsize=7)
    return ax
