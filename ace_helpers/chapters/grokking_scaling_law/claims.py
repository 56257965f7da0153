"""Chapter 4 claims: the grokking-time law as the paper states it, our rules, and the known gaps.

:func:`fit_sweeps` fits the stored runs (so a stored ``results.json`` rebuilds the verdicts);
:func:`fit_claims` turns the fits into claims, :func:`not_tested` lists what a run cannot test.

The paper's grokking-time figure (panel A "Grok Time vs. Weight Decay", panel B "Grok Time vs.
Redundancy") and the code release (``grok_sweep.py``) fit a power law in ω and the log law
τ(p) = −Ω·log(1 − p_crit/p) in p; the theory adds Ω ∝ 1/ω and the limit τ ∝ 1/p for p ≫ p_crit.
We fit every uncensored run where the code fits per-setting means, which keeps the seed scatter
in R² and gives the exponents a confidence interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ace_helpers.chapters.grokking_scaling_law.claims_limits import LIMIT_SPECS
from ace_helpers.chapters.grokking_scaling_law.intervals import (
    LogVsPower,
    law_r2,
    log_r2,
    log_vs_power,
    seed_bootstrap,
)
from ace_helpers.chapters.grokking_scaling_law.law_checks import (
    LARGE_P,
    LargePrimeSlope,
    OmegaFromSweep,
    large_prime_slope,
    omega_from_sweep,
)
from ace_helpers.chapters.grokking_scaling_law.runs import GrokRecord, setting_stats, uncensored
from ace_helpers.chapters.grokking_scaling_law.sweep_rules import (  # noqa: F401 - the chapter's texts
    CODE,
    FIG_A,
    FIG_B,
    ID,
    JOINT_SPECS,
    OMEGA_SPECS,
    P_SPECS,
    T_CI,
    THEORY,
    for_seeds,
    means_of,
)
from ace_helpers.method.fits import (
    LogLawFit,
    OmegaLawFit,
    PowerLawFit,
    fit_log_law,
    fit_log_law_omega,
    fit_power_law,
    log_law_secant,
)
from ace_helpers.repro.known_gaps import KnownGaps, seed_sensitive
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import Spec, judge_all
from ace_helpers.repro.untested import ClaimRow

OURS, DIAGNOSIS = "ours (beyond the paper)", "ours (diagnosis)"

#: Measured at each preset's own run; formatted with the run's numbers (:func:`gap_numbers`).
KNOWN_GAPS = KnownGaps(
    {
        # one seed per prime and three primes: the p sweep's claims change with the seed (the ω sweep's do not)
        "ci": {
            "p_decreasing": seed_sensitive(
                4,
                5,
                "per-p means [620, 400, 320], [740, 440, 290], [370, 310, 380], "
                "[720, 480, 350], [610, 570, 240] over p = 31, 43, 53",
            ),
            "p_log_r2": seed_sensitive(4, 5, "R² 0.999, 0.991, −5.97, 0.996, 0.640 against 0.6 (one seed)"),
        },
        "book": {
            # measured under the reproducible kernels (the same on every x86-64 CPU with AVX2)
            "omega_monotone": "two seeds per setting: at ω = 3 they grok after 500 and 110 steps, at ω = 2 after 360 and "
            "190, so the last mean (305) rises 30 steps above the one before (275) inside a seed scatter "
            "ten times as wide; at the paper's settings (12 seeds, τ exact to the step; the section "
            "below) the mean delay falls at every step",
            "p_log_r2": "two seeds per prime at the book's 0.8 split: the seed scatter puts R² on its 0.8 threshold; at "
            "the paper's settings (the section below: more seeds, primes 31–101) the law's R² is well above it",
            "log_vs_power": "over p = {p_lo}–{p_hi} (p/p_crit = {r_lo:.1f}–{r_hi:.1f}) a free power law p^{b_pow:.2f} fits the "
            "two seeds per prime as well or better, ΔAIC {dAIC:.1f} [{dAIC_lo:.1f}, {dAIC_hi:.1f}] (stored book "
            "runs: −0.7 on two CPUs, −3.0 in bf16); the law's curvature needs more primes: the paper's "
            "settings (primes 31–101) are judged in the section below",
        },
    }
)


@dataclass(frozen=True)
class SweepFits:
    """The chapter's fits from its runs (a fit is ``None`` where too few uncensored runs).

    ``omega``: τ_grok ~ ω^b over the ω sweep; ``mem``: τ_mem ~ ω^b; ``p_log``, ``p_pow``: the log
    law and a power law in p over the p sweep at ``omega_p``; ``omega_law``: Ω = A·ω^b with one
    p_crit over the p sweep at every ω (``None`` with one ω); ``omega_stats``: per-ω statistics
    of the ω sweep; ``p_stats``: per p-sweep ω, per-p statistics (:func:`setting_stats`);
    ``large``: the slope of τ over the primes ≥ :data:`~.law_checks.LARGE_P` at ``omega_p`` beside the
    log law's secant there (``None`` with fewer than two such primes); ``omega_Omega``: Ω(ω) from the ω
    sweep with the p sweep's p_crit (:func:`~.law_checks.omega_from_sweep`; ``None`` unless both
    sweeps can be fitted); ``p_sse_pow``: the power law's SSE of τ (steps²),
    beside the log law's ``p_log.sse`` (both two parameters); ``omega_r2_ci``, ``p_r2_ci``: the
    :func:`~.intervals.seed_bootstrap` intervals of the ω power law's and the log law's R²;
    ``log_vs_power``: the log law against a least-squares power law in p (:func:`~.intervals.log_vs_power`).
    """

    omega: PowerLawFit | None
    mem: PowerLawFit | None
    p_log: LogLawFit | None
    p_pow: PowerLawFit | None
    omega_law: OmegaLawFit | None = None
    omega_p: float | None = None
    omega_stats: dict[str, np.ndarray] = field(default_factory=dict)
    p_stats: dict[float, dict[str, np.ndarray]] = field(default_factory=dict)
    large: LargePrimeSlope | None = None
    omega_Omega: OmegaFromSweep | None = None
    p_sse_pow: float | None = None
    omega_r2_ci: tuple[float, float] | None = None
    p_r2_ci: tuple[float, float] | None = None
    log_vs_power: LogVsPower | None = None


def _try(fit, *args, **kwargs):
    try:
        return fit(*args, **kwargs)
    except (ValueError, RuntimeError):
        return None


def fit_sweeps(omega_runs: Sequence[GrokRecord], p_runs: Sequence[GrokRecord], omega_p: float | None = None) -> SweepFits:
    """Fit the ω sweep (power law; also τ_mem) and the p sweep (log law and power law at ``omega_p``,
    the joint Ω law over every ω), uncensored runs only.

    ``omega_p``: the p sweep's main weight decay; ``None`` = the first p run's (each prime's runs are stored ω-major, OMEGA_P first).
    """
    w, _, w_tau = uncensored(omega_runs, "omega")
    mem = [(r.omega, r.tau_mem) for r in omega_runs if r.tau_mem]
    omega_p = omega_p if omega_p is not None or not p_runs else p_runs[0].omega
    _, p, p_tau = uncensored(p_runs, "p", omega_p)
    pw, pp, pt = uncensored(p_runs, "p")
    pow_fit, log_fit = _try(fit_power_law, p, p_tau), _try(fit_log_law, p, p_tau)
    p0 = omega_runs[0].p if omega_runs else None
    return SweepFits(
        omega=_try(fit_power_law, w, w_tau),
        mem=_try(fit_power_law, [x for x, _ in mem], [t for _, t in mem]),
        p_log=log_fit,
        p_pow=pow_fit,
        omega_law=_try(fit_log_law_omega, pp, pw, pt) if len(set(pw)) > 1 else None,
        omega_p=omega_p,
        omega_stats=setting_stats(omega_runs, "omega", "omega"),
        p_stats={float(x): setting_stats(p_runs, "p", "p", x) for x in sorted({r.omega for r in p_runs})},
        large=_try(large_prime_slope, p, p_tau, LARGE_P),
        omega_Omega=_try(omega_from_sweep, w, w_tau, p0, log_fit.p_crit) if log_fit and p0 else None,
        p_sse_pow=float(np.sum((p_tau - pow_fit.predict(p)) ** 2)) if pow_fit else None,
        omega_r2_ci=_try(seed_bootstrap, w, w_tau, log_r2) if len(w_tau) >= 3 else None,
        p_r2_ci=_try(seed_bootstrap, p, p_tau, law_r2) if len(p_tau) >= 3 else None,
        log_vs_power=_try(log_vs_power, p, p_tau),
    )


def _secant(fits: SweepFits) -> float | None:
    """The fitted log law's mean log-log slope between the smallest and the largest prime."""
    xs, _ = means_of(fits.p_stats.get(fits.omega_p, {}))
    lf = fits.p_log
    return _try(log_law_secant, float(xs.min()), float(xs.max()), lf.p_crit) if lf is not None and len(xs) > 1 else None


def gap_numbers(fits: SweepFits) -> dict[str, Any]:
    """The measured numbers a known gap's text quotes (``{}`` where a fit is missing)."""
    xs, _ = means_of(fits.p_stats.get(fits.omega_p, {}))
    lf, secant, lv = fits.p_log, _secant(fits), fits.log_vs_power
    if lf is None or secant is None or len(xs) < 2:
        return {}
    out = {
        "p_lo": int(xs.min()),
        "p_hi": int(xs.max()),
        "p_crit": lf.p_crit,
        "r_lo": float(xs.min() / lf.p_crit),
        "r_hi": float(xs.max() / lf.p_crit),
        "secant": secant,
    }
    if lv is not None:
        out |= {"dAIC": lv.delta_aic, "dAIC_lo": lv.interval[0], "dAIC_hi": lv.interval[1], "b_pow": lv.b}
    return out


def _gap(cfg: Params, key: str, numbers: dict[str, Any]) -> str | None:
    why = KNOWN_GAPS.reason(cfg, key)
    if why is None:
        return None
    try:
        return why.format(**numbers)
    except (KeyError, IndexError):  # a missing fit: the gap's numbers do not exist, so it does not apply
        return None


SWEEPS = ("omega", "p")


def sweep_specs(cfg: Params, sweeps: Sequence[str] = SWEEPS) -> tuple[Spec, ...]:
    """The rules of ``sweeps`` (``"omega"``, ``"p"``), with the variants of ``cfg``'s seeds per setting."""
    specs = (OMEGA_SPECS if "omega" in sweeps else ()) + ((*P_SPECS, *LIMIT_SPECS, *JOINT_SPECS) if "p" in sweeps else ())
    return for_seeds(specs, cfg)


def fit_claims(fits: SweepFits, cfg: Params, sweeps: Sequence[str] = SWEEPS) -> Claims:
    """The claims of one set of sweep fits (the chapter's run, or the stored paper-settings runs): the rules of
    :mod:`.sweep_rules` and :mod:`.claims_limits` judged on ``fits``, with the claims they cannot test (``p ≫ p_crit``
    without two large primes, Ω ∝ 1/ω without a second weight decay or an ω sweep) in ``not_tested``.

    With one seed per setting (``N_SEEDS = 1``) the exponent windows of the ω sweep and of Ω become "exponent < 0" and
    the R² thresholds fall from 0.8 to 0.6, as each rule says.  ``sweeps``: the sweeps whose claims are judged.
    """
    numbers = gap_numbers(fits)
    return judge_all(sweep_specs(cfg, sweeps), fits, cfg, lambda key: _gap(cfg, key, numbers))


def not_tested(fits: SweepFits, cfg: Params) -> list[ClaimRow]:
    """The claims a run cannot test: τ ∝ 1/p for p ≫ p_crit needs two primes ≥ :data:`~.law_checks.LARGE_P`;
    Ω ∝ 1/ω needs the p sweep at two weight decays or more, or an ω sweep beside a p sweep's p_crit."""
    return fit_claims(fits, cfg).not_tested


def untested_sweep(fits: SweepFits, cfg: Params, sweep: str, why: str) -> list[ClaimRow]:
    """The claims of ``sweep`` (``"omega"`` or ``"p"``) as not tested, ``why`` the reason: the rows
    :func:`fit_claims` would check that carry their id's verdict: without the diagnosis rows (they test a
    measured cause) and without a paper claim's evidence rows (``headline=False``), so each id is listed once."""
    rows = fit_claims(fits, cfg, sweeps=(sweep,)).rows
    return [ClaimRow(r.claim, r.paper, "—", why, r.where, r.rule, id=r.id) for r in rows if r.where != DIAGNOSIS and r.headline]


def setting_rows(fits: SweepFits) -> list[dict[str, Any]]:
    """The ω sweep's per-ω rows: ``omega``, ``mean``, ``sd``, ``n``, ``n_censored``, ``omega_tau``
    (ω·mean τ, constant when τ ∝ 1/ω) and ``change`` (mean − previous mean; ``None`` first)."""
    st, rows, prev = fits.omega_stats, [], None
    for x, m, s, n, c in zip(*(st.get(k, []) for k in ("x", "mean", "sd", "n", "n_censored"))):
        m = None if np.isnan(m) else float(m)
        rows.append(
            {
                "omega": float(x),
                "mean": m,
                "sd": None if np.isnan(s) else float(s),
                "n": int(n),
                "n_censored": int(c),
                "omega_tau": None if m is None else float(x) * m,
                "change": None if m is None or prev is None else m - prev,
            }
        )
        prev = m if m is not None else prev
    return rows


def p_sweep_rows(p_runs: Sequence[GrokRecord]) -> list[dict[str, Any]]:
    """Per weight decay of the p sweep, its own fits: ``omega``, ``n`` (uncensored runs), ``Omega``
    and ``p_crit`` (each with its standard error ``*_se``), ``r2`` (the log law alone at that ω),
    ``omega_Omega`` (ω·Ω, constant when Ω ∝ 1/ω) and ``p_exponent`` (power law in p); ``None``
    where a fit cannot be made."""
    rows = []
    for x in sorted({r.omega for r in p_runs if r.sweep == "p"}):
        _, p, tau = uncensored(p_runs, "p", x)
        lf, pf = _try(fit_log_law, p, tau), _try(fit_power_law, p, tau)
        law = {k: getattr(lf, k) if lf else None for k in ("Omega", "Omega_se", "p_crit", "p_crit_se", "r2")}
        rows.append(
            {
                "omega": float(x),
                "n": len(tau),
                **law,
                "omega_Omega": float(x) * lf.Omega if lf else None,
                "p_exponent": pf.exponent if pf else None,
            }
        )
    return rows
