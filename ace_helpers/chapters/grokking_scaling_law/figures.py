"""Chapter 4 figures (notebooks/04_grokking_scaling_law): grokking delay vs weight decay ω and vs modulus p; margin traces."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

from ace_helpers.chapters.grokking_scaling_law import GrokRecord, setting_stats
from ace_helpers.chapters.grokking_scaling_law.margin_ode import MarginTrace, OdeFit
from ace_helpers.chapters.grokking_scaling_law.redundancy import RedundancyRun
from ace_helpers.method.fits import LogLawFit, OmegaLawFit, PowerLawFit, log_law
from ace_helpers.repro.style import OKABE, step_axis
from ace_helpers.repro.tables import markdown_table


def _runs(records: Sequence[GrokRecord], sweep: str, key: str):
    rows = [r for r in records if r.sweep == sweep and r.tau_grok is not None]
    x = np.array([getattr(r, key) for r in rows], float)
    tau = np.array([r.tau_grok for r in rows], float)
    cens = np.array([r.censored for r in rows], bool)
    return x, tau, cens


def setting_table(records: Sequence[GrokRecord], key: str) -> str:
    """Markdown table of one sweep (``key`` "omega" or "p"): runs fitted, censored, mean/sd τ_grok, mean τ_mem;
    the p sweep has one block of rows per weight decay ω."""
    label = "ω" if key == "omega" else "p"
    omegas = [None] if key == "omega" else sorted({r.omega for r in records if r.sweep == "p"})
    lead = () if key == "omega" else ("ω",)
    rows = []
    for w in omegas:
        st = setting_stats(records, key, key, w)
        for x, n, c, m, s in zip(st["x"], st["n"], st["n_censored"], st["mean"], st["sd"]):
            mem = np.mean(
                [
                    r.tau_mem
                    for r in records
                    if r.sweep == key and getattr(r, key) == x and (w is None or r.omega == w) and r.tau_mem is not None
                ]
            )
            first = () if w is None else (f"{w:g}",)
            rows.append((*first, f"{x:g}", f"{int(n)}", f"{int(c)}", f"{m:.0f}", f"{s:.0f}", f"{mem:.0f}"))
    return markdown_table((*lead, label, "runs fitted", "censored", "mean τ_grok", "sd", "mean τ_mem"), rows)


def _num(v, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def omega_table(rows: Sequence[dict]) -> str:
    """Markdown table of the ω sweep's per-ω rows (:func:`ace_helpers.chapters.grokking_scaling_law.setting_rows`):
    mean τ_grok, its change from the previous ω, and ω·mean τ (constant when τ ∝ 1/ω)."""
    header = ("ω", "runs fitted", "censored", "mean τ_grok", "change from previous ω", "ω · mean τ_grok")
    return markdown_table(
        header,
        [
            (
                f"{r['omega']:g}",
                f"{r['n']}",
                f"{r['n_censored']}",
                _num(r["mean"], ".0f"),
                _num(r["change"], "+.0f"),
                _num(r["omega_tau"], ".0f"),
            )
            for r in rows
        ],
    )


def p_omega_table(rows: Sequence[dict]) -> str:
    """Markdown table of the log law fitted at each weight decay of the p sweep
    (:func:`ace_helpers.chapters.grokking_scaling_law.p_sweep_rows`): Ω and p_crit ± se, R², ω·Ω, power of p."""
    header = ("ω", "runs fitted", "Ω ± se", "p_crit ± se", "R²", "ω · Ω", "power of p")
    return markdown_table(
        header,
        [
            (
                f"{r['omega']:g}",
                f"{r['n']}",
                f"{_num(r['Omega'], '.0f')} ± {_num(r['Omega_se'], '.0f')}",
                f"{_num(r['p_crit'], '.1f')} ± {_num(r['p_crit_se'], '.1f')}",
                _num(r["r2"], ".2f"),
                _num(r["omega_Omega"], ".0f"),
                _num(r["p_exponent"], ".2f"),
            )
            for r in rows
        ],
    )


def plot_omega_sweep(records: Sequence[GrokRecord], fit: PowerLawFit | None, ax=None):
    """Panel A of the paper's grokking-time figure: τ_grok vs ω on log-log axes, seeds as points,
    mean ± sd, the fitted power law and ω⁻¹.

    Censored runs (lower bounds) are drawn as open triangles and are not in the fit.
    Returns the Axes.
    """
    import matplotlib.pyplot as plt  # load time: a heavy import, done on first use

    ax = ax or plt.subplots(figsize=(5.2, 4))[1]
    x, tau, cens = _runs(records, "omega", "omega")
    ok = (tau > 0) & ~cens
    rng = np.random.default_rng(0)
    jitter = np.exp(rng.uniform(-0.03, 0.03, len(x)))
    ax.scatter(x[ok] * jitter[ok], tau[ok], s=14, alpha=0.5, color=OKABE["blue"], label="runs (seeds)")
    if cens.any():
        ax.scatter(
            x[cens] * jitter[cens],
            tau[cens],
            s=30,
            marker="^",
            facecolors="none",
            edgecolors=OKABE["vermillion"],
            label="censored (lower bound)",
        )
    st = setting_stats(records, "omega", "omega")
    good = st["n"] > 0
    ax.errorbar(
        st["x"][good],
        st["mean"][good],
        yerr=np.nan_to_num(st["sd"][good]),
        fmt="o",
        color="k",
        ms=5,
        capsize=3,
        label="mean ± sd",
    )
    grid = np.geomspace(min(x) * 0.9, max(x) * 1.1, 50)
    if fit is not None:
        ax.plot(
            grid,
            fit.predict(grid),
            color=OKABE["vermillion"],
            label=f"fit: τ ∝ ω^{fit.exponent:.2f} [{fit.ci[0]:.2f}, {fit.ci[1]:.2f}], R²={fit.r2:.2f}",
        )
        # theory line ω⁻¹ through the geometric mean of the data
        anchor = np.exp(np.mean(np.log(tau[ok]))) * np.exp(np.mean(np.log(x[ok])))
        ax.plot(grid, anchor / grid, "--", color="0.4", label="theory ω⁻¹")
    ax.set_xscale("log")
    ax.set_yscale("log")
    omegas = sorted({r.omega for r in records if r.sweep == "omega"})
    ax.set_xticks(omegas, [f"{w:g}" for w in omegas])
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    step_axis(ax.yaxis, log=True)
    ax.set_xlabel("weight decay ω (AdamW, decoupled)")
    ax.set_ylabel("τ_grok (optimizer steps)")
    primes = sorted({r.p for r in records if r.sweep == "omega"})
    ax.set_title("A  Grok Time vs. Weight Decay" + (f" (p = {primes[0]})" if len(primes) == 1 else ""))
    ax.legend(fontsize=10)
    return ax


def plot_p_sweep(records: Sequence[GrokRecord], fit: LogLawFit | None, ax=None, omega_law: OmegaLawFit | None = None):
    """Panel B of the paper's grokking-time figure: τ_grok vs modulus p, seeds as points, mean ± sd,
    the −Ω·log(1 − p_crit/p) fit at the main ω and its 1/p asymptote Ω·p_crit/p.

    The main ω is the first of the p runs (runs are stored ω-major); further weight decays are
    drawn in their own colours with the joint law ``omega_law`` (Ω = A·ω^b, one p_crit), dotted.
    Returns the Axes.
    """
    import matplotlib.pyplot as plt  # load time: a heavy import, done on first use

    ax = ax or plt.subplots(figsize=(5.2, 4))[1]
    omegas = list(dict.fromkeys(r.omega for r in records if r.sweep == "p"))
    colors = [OKABE[c] for c in ("blue", "green", "purple", "orange")]
    grid = None
    for i, w in enumerate(omegas):
        x, tau, cens = _runs([r for r in records if r.omega == w], "p", "p")
        ok, col = (tau > 0) & ~cens, colors[i % len(colors)]
        ax.scatter(x[ok], tau[ok], s=14, alpha=0.5, color=col, label=f"runs (seeds), ω = {w:g}")
        if cens.any():
            ax.scatter(
                x[cens],
                tau[cens],
                s=30,
                marker="^",
                facecolors="none",
                edgecolors=OKABE["vermillion"],
                label="censored (lower bound)" if i == 0 else None,
            )
        st = setting_stats(records, "p", "p", w)
        good = st["n"] > 0
        ax.errorbar(
            st["x"][good],
            st["mean"][good],
            yerr=np.nan_to_num(st["sd"][good]),
            fmt="o",
            color="k" if i == 0 else col,
            ms=5,
            capsize=3,
            label="mean ± sd" if i == 0 else None,
        )
        if len(x):
            lo = max(min(x) * 0.9, 1.02 * max(fit.p_crit if fit else 0, omega_law.p_crit if omega_law else 0))
            grid = np.linspace(lo, max(x) * 1.1, 200)
        if omega_law is not None and grid is not None:
            ax.plot(
                grid,
                log_law(grid, omega_law.Omega(w), omega_law.p_crit),
                ":",
                color=col,
                label=f"Ω = A·ω^b, b = {omega_law.b:.2f}, p_crit = {omega_law.p_crit:.3g}" if i == 0 else None,
            )
    if fit is not None and grid is not None:
        ax.plot(
            grid,
            fit.predict(grid),
            color=OKABE["vermillion"],
            label=f"−Ω·log(1 − p_crit/p) at ω = {omegas[0]:g}: Ω={fit.Omega:.3g}, p_crit={fit.p_crit:.3g}, R²={fit.r2:.2f}",
        )
        ax.plot(grid, fit.Omega * fit.p_crit / grid, "--", color="0.4", label="asymptote Ω·p_crit/p")
    step_axis(ax.yaxis)
    ax.set_xlabel("modulus p (≈ p/2 equivalent Fourier modes)")
    ax.set_ylabel("τ_grok (optimizer steps)")
    ax.set_title("B  Grok Time vs. Redundancy" + (f" (ω = {omegas[0]:g}, full batch)" if len(omegas) == 1 else " (full batch)"))
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)  # below: the curves stay visible
    return ax


def plot_margin_traces(traces: Sequence[MarginTrace], fits: Sequence[OdeFit]):
    """Two panels over optimizer steps: the mean test margin m(t) (solid) with the fitted ODE's integral from
    τ_mem (dashed), and the ‖ψ‖² proxy; one colour per run.  Returns the figure."""
    fig, (ax_m, ax_p) = plt.subplots(1, 2, figsize=(10, 3.6))
    for k, (tr, f) in enumerate(zip(traces, fits)):
        color = f"C{k}"
        label = f"ω = {tr.omega:g}, seed {tr.seed}: ω̂ = {f.omega_fit:.2g}"
        ax_m.plot(tr.steps, tr.margin, color=color, lw=1.2, label=label)
        keep = tr.steps >= (tr.tau_mem or 0)
        t, psi2 = tr.lr * tr.steps[keep], tr.psi2[keep]
        m = [tr.margin[keep][0]]
        for i in range(1, len(t)):  # Euler integral of the fitted ODE from the measured m(τ_mem)
            m.append(m[-1] + (t[i] - t[i - 1]) * (-f.omega_fit * m[-1] + f.omega_fit * f.c * psi2[i - 1]))
        if np.isfinite(f.c):
            ax_m.plot(tr.steps[keep], m, color=color, ls="--", lw=1)
        ax_p.plot(tr.steps, tr.psi2, color=color, lw=1.2)
    ax_m.axhline(0, color="0.6", lw=0.8)
    ax_m.set(xlabel="optimizer step", ylabel="mean test margin m", title="margin (dashed: fitted ODE from τ_mem)")
    ax_p.set(xlabel="optimizer step", ylabel="‖ψ‖² proxy", title="power of the (a + b − c) logit component")
    ax_m.legend(fontsize=10)
    fig.tight_layout()
    return fig


def plot_redundancy(runs: Sequence[RedundancyRun]):
    """τ_grok (log scale) against the frequencies k each member's embedding may use (log scale): one dot per run
    (open: censored, a lower bound), the mean per k joined by a line.  Returns the figure."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ks = sorted({r.k for r in runs})
    for r in runs:
        ax.scatter(r.k, max(r.tau_grok or 1, 1), s=22, color="C0", facecolors="none" if r.censored else "C0", zorder=3)
    means = [np.mean([max(r.tau_grok or 1, 1) for r in runs if r.k == k]) for k in ks]
    ax.plot(ks, means, color="C1", lw=1.5, marker="s", label="mean over seeds")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="frequencies k the embedding may use (right: unconstrained)",
        ylabel="τ_grok (steps)",
        title="grokking time against usable Fourier modes, one p",
    )
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())  # only the k values are labelled
    step_axis(ax.yaxis, log=True)
    ax.legend(fontsize=10)
    fig.tight_layout()
    return fig
