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

from ace_helpers.chapters.grokking_scaling_law.claims_limits import (
    check_omega_sweep_Omega,
    check_p_limit,
    p_limit_untested,
)
from ace_helpers.chapters.grokking_scaling_law.intervals import (
    SEED_BOOTSTRAP,
    WINDOW,
    LogVsPower,
    law_r2,
    log_r2,
    log_vs_power,
    seed_bootstrap,
    step_interval,
    window_bound,
    within_error,
)
from ace_helpers.chapters.grokking_scaling_law.law_checks import (
    LARGE_P,
    LargePrimeSlope,
    OmegaFromSweep,
    large_prime_slope,
    omega_from_sweep,
)
from ace_helpers.chapters.grokking_scaling_law.runs import GrokRecord, setting_stats, uncensored
from ace_helpers.method.fits import (
    LogLawFit,
    OmegaLawFit,
    PowerLawFit,
    fit_log_law,
    fit_log_law_omega,
    fit_power_law,
    log_law_secant,
)
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import ClaimRow, Claims, KnownGaps, seed_sensitive

FIG_A = "grokking-time figure, panel A 'Grok Time vs. Weight Decay'"
FIG_B = "grokking-time figure, panel B 'Grok Time vs. Redundancy'"
CODE = "code release joshseth/cores, grok_sweep.py"
THEORY = "grokking-time theory (margin ODE dm/dt = −ω·m + c·ω·‖ψ‖²)"
OURS, DIAGNOSIS = "ours (beyond the paper)", "ours (diagnosis)"
#: The prefix of the chapter's own claim ids, and how a fitted exponent's interval is computed.
ID, T_CI = "ours.grokking_scaling_law.", "t interval of the fitted exponent (95 %)"

#: R² thresholds (ours: the paper prints R² on both panels, the values were not retrievable).
R2_MIN, R2_MIN_ONE_SEED = 0.8, 0.6

#: Measured at each preset's own run; formatted with the run's numbers (:func:`gap_numbers`).
KNOWN_GAPS = KnownGaps({
    # one seed per prime and three primes: the p sweep's claims change with the seed (the ω sweep's do not)
    "ci": {
        "p_decreasing": seed_sensitive(4, 5, "per-p means [620, 400, 320], [740, 440, 290], [370, 310, 380], "
                                             "[720, 480, 350], [610, 570, 240] over p = 31, 43, 53"),
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
})  # fmt: skip


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


def _means(stats: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(settings, mean τ_grok) over the settings with at least one uncensored run."""
    if not stats:
        return np.zeros(0), np.zeros(0)
    ok = stats["n"] > 0
    return stats["x"][ok], stats["mean"][ok]


def _secant(fits: SweepFits) -> float | None:
    """The fitted log law's mean log-log slope between the smallest and the largest prime."""
    xs, _ = _means(fits.p_stats.get(fits.omega_p, {}))
    lf = fits.p_log
    return _try(log_law_secant, float(xs.min()), float(xs.max()), lf.p_crit) if lf is not None and len(xs) > 1 else None


def gap_numbers(fits: SweepFits) -> dict[str, Any]:
    """The measured numbers a known gap's text quotes (``{}`` where a fit is missing)."""
    xs, _ = _means(fits.p_stats.get(fits.omega_p, {}))
    lf, secant, lv = fits.p_log, _secant(fits), fits.log_vs_power
    if lf is None or secant is None or len(xs) < 2:
        return {}
    out = {"p_lo": int(xs.min()), "p_hi": int(xs.max()), "p_crit": lf.p_crit, "r_lo": float(xs.min() / lf.p_crit),
           "r_hi": float(xs.max() / lf.p_crit), "secant": secant}  # fmt: skip
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


def _in(b: float | None, window: tuple[float, float] = WINDOW) -> bool:
    return b is not None and window[0] <= b <= window[1]


def _exp(fit: PowerLawFit | None) -> str:
    return f"{fit.exponent:.3g} [{fit.ci[0]:.3g}, {fit.ci[1]:.3g}]" if fit else "n/a (too few uncensored runs)"


def _fewer(cfg: Params, fraction: str) -> str:
    """The run's seeds per setting and train fraction (knob ``fraction``) against the paper's."""
    return f"{cfg['N_SEEDS']} seed{'s' if cfg['N_SEEDS'] > 1 else ''} per setting (paper 12), train fraction {cfg[fraction]} (paper 0.5)"


def _exponent(fit: PowerLawFit | OmegaLawFit | None, one: bool) -> dict[str, Any]:
    """The verdict keywords of a fitted exponent (a power law's, or b of the Ω law) and its 95 % interval:
    in :data:`WINDOW` (one seed per setting, ``one``: below 0), judged on the interval (:func:`~.intervals.window_bound`)."""
    if fit is None:
        return {}
    b, ci = (fit.exponent, fit.ci) if isinstance(fit, PowerLawFit) else (fit.b, fit.b_ci)
    threshold, op = (0.0, "<") if one else window_bound(ci, WINDOW)
    return {"value": b, "interval": list(ci), "threshold": threshold, "op": op, "method": T_CI}


SWEEPS = ("omega", "p")


def _omega_claims(claims: Claims, fits: SweepFits, cfg: Params, win: str, loose: str, r2_rule: str) -> None:
    """The ω sweep's rows: the exponent (headline of scaling.omega), its R² and the monotone fall of the means."""
    one, numbers = cfg["N_SEEDS"] == 1, gap_numbers(fits)
    r2_min = R2_MIN_ONE_SEED if one else R2_MIN
    w = fits.omega
    claims.check("ω exponent b of τ_grok ∝ ω^b", "τ ∝ ω^−1.02 (theory ω^−1)", _exp(w),
                 w is not None and (w.exponent < 0 if one else _in(w.exponent)), where=f"{FIG_A}; fit as in {CODE}",
                 rule=f"OLS slope of log τ_grok on log ω over every uncensored run (the code fits per-ω means; runs give "
                      f"a CI from the seeds) {win}; {_fewer(cfg, 'TRAIN_FRACTION')}{loose}; judged on the exponent's 95 % CI: inconclusive "
                      f"where it straddles a bound", id="scaling.omega",
                 short="ω exponent's 95 % CI below 0" if one else f"ω exponent's 95 % CI inside {list(WINDOW)}",
                 **_exponent(w, one))  # fmt: skip
    r2_ci = fits.omega_r2_ci
    claims.check("R² of the ω power law", "printed on panel A (value not retrievable)", w.r2 if w else "n/a",
                 w is not None and w.r2 >= r2_min, where=f"{FIG_A}; {CODE}", rule=r2_rule, id="scaling.omega",
                 headline=False, short=f"R² (log space) ≥ {r2_min} over its bootstrap interval",
                 **({"interval": r2_ci, "threshold": r2_min, "op": ">=", "method": SEED_BOOTSTRAP} if w and r2_ci else {}))
    _, means = _means(fits.omega_stats)
    steps = step_interval(means, cfg["EVAL_EVERY"])
    strict = len(means) >= 2 and bool(np.all(np.diff(means) < 0))
    claims.check("mean delay falls monotonically with ω", "τ_grok falls over ω = 0.3 … 3 (means ± sd on panel A)",
                 [round(float(m)) for m in means], strict, None if strict else _gap(cfg, "omega_monotone", numbers),
                 where=FIG_A, id="scaling.omega", headline=False, value=[float(m) for m in means],
                 short=f"every next per-ω mean lower by ≥ EVAL_EVERY = {cfg['EVAL_EVERY']} steps; a smaller step is a tie",
                 rule=f"per-ω mean τ_grok (uncensored runs) lower at every next ω; a step smaller than the τ resolution "
                      f"EVAL_EVERY = {cfg['EVAL_EVERY']} steps is a tie: inconclusive where the decisive (largest) step d "
                      f"is one, |d| < EVAL_EVERY; not reproduced where some mean rises by EVAL_EVERY or more",
                 **({"interval": steps, "threshold": 0.0, "op": "<",
                     "method": "largest step d between consecutive means as (d − EVAL_EVERY, d + EVAL_EVERY)"} if steps else {}))  # fmt: skip


def _p_claims(claims: Claims, fits: SweepFits, cfg: Params, win: str, r2_rule: str) -> None:
    """The p sweep's rows: τ falls with p, the log law's R² (headline of scaling.log_law), the log law
    against a power law (ours), the p exponent over the large primes (headline of scaling.p) and its diagnosis."""
    one, numbers = cfg["N_SEEDS"] == 1, gap_numbers(fits)
    r2_min = R2_MIN_ONE_SEED if one else R2_MIN
    xs, means = _means(fits.p_stats.get(fits.omega_p, {}))
    pp = fits.p_pow
    falls = pp is not None and pp.exponent < 0
    claims.check("τ_grok decreases with p (means over seeds)", "τ falls with the modulus p (panel B)",
                 [round(float(m)) for m in means], len(means) >= 2 and bool(np.all(np.diff(means) < 0)) and falls,
                 _gap(cfg, "p_decreasing", numbers), where=FIG_B, id="scaling.log_law", headline=False,
                 partly=falls and within_error(fits.p_stats.get(fits.omega_p, {})), value=[float(m) for m in means],
                 short="every next per-p mean lower, and the fitted power of p < 0",
                 rule="per-p mean τ_grok at ω = OMEGA_P lower at every next prime, and the fitted power of p < 0; "
                      "partly: every rise of the mean smaller than its standard error over the seeds (not resolved)")  # fmt: skip
    lf, r2_ci = fits.p_log, fits.p_r2_ci
    ok = lf is not None and lf.r2 >= r2_min
    claims.check("R² of −Ω·log(1 − p_crit/p)", "printed on panel B (value not retrievable)", lf.r2 if lf else "n/a",
                 ok, None if ok else _gap(cfg, "p_log_r2", numbers), where=f"{FIG_B}; curve_fit with 0 < p_crit < min p as in {CODE}",
                 rule=r2_rule.replace("in log space ", ""), id="scaling.log_law", short=f"R² ≥ {r2_min} over its bootstrap interval",
                 **({"interval": r2_ci, "threshold": r2_min, "op": ">=", "method": SEED_BOOTSTRAP} if lf and r2_ci else {}))  # fmt: skip
    lv = fits.log_vs_power
    claims.check("the log law fits τ(p) better than a power law (ΔAIC)", "τ(p) = −Ω·log(1 − p_crit/p) describes panel B",
                 f"ΔAIC = AIC(power) − AIC(log law) = {lv.delta_aic:.2f} [{lv.interval[0]:.2f}, {lv.interval[1]:.2f}]: "
                 f"{'the log law' if lv.delta_aic > 0 else f'the power law p^{lv.b:.2f}'} wins" if lv else "n/a",
                 lv is not None and lv.delta_aic > 0, None if lv is not None and lv.delta_aic > 0 else _gap(cfg, "log_vs_power", numbers),
                 where=OURS, id=ID + "log_vs_power", short="ΔAIC(power − log law) > 0 over its bootstrap interval",
                 rule="Gaussian AIC of the log law against its rival, a power law τ = a·p^b, both least squares in τ over "
                      "the uncensored runs at ω = OMEGA_P with two parameters (so ΔAIC = ΔBIC = n·log(SSE_power/SSE_log)); "
                      "the log law wins when ΔAIC > 0; inconclusive where the interval straddles 0",
                 **({"value": lv.delta_aic, "interval": lv.interval, "threshold": 0.0, "op": ">", "method": SEED_BOOTSTRAP} if lv else {}))  # fmt: skip
    if fits.large is not None:  # else not tested (:func:`not_tested`)
        check_p_limit(claims, fits.large, _fewer(cfg, "TRAIN_FRACTION_P"))


def fit_claims(fits: SweepFits, cfg: Params, sweeps: Sequence[str] = SWEEPS) -> Claims:
    """The claims of one set of sweep fits (the chapter's run, or the stored paper-settings runs).

    With one seed per setting (``N_SEEDS = 1``) the seed scatter dominates: the exponent windows
    of the ω sweep and of Ω become "exponent < 0" and the R² thresholds fall from 0.8 to 0.6,
    as each rule says.  Each pooled estimate is judged on its interval (an exponent's t interval,
    an R² or ΔAIC's :func:`~.intervals.seed_bootstrap` interval), and is inconclusive where the
    interval straddles its threshold.  A fit that could not be made fails its claims.  ``sweeps``:
    the sweeps whose claims are checked (``"omega"``, ``"p"``; default both).
    """
    one = cfg["N_SEEDS"] == 1
    win = f"in [{WINDOW[0]}, {WINDOW[1]}] (the theory's −1 within a factor 1.25; the paper's −1.02 is inside)"
    loose = "; with one seed per setting only b < 0 (one run per setting: the seed scatter swamps the window)"
    r2_rule = (f"R² in log space over the uncensored runs ≥ {R2_MIN} (ours: the paper's value was not retrievable; the code's R² "
               f"is of the per-setting means, which average the seed scatter away); {R2_MIN_ONE_SEED} with one seed per "
               "setting, where nothing is averaged; judged on the percentile-bootstrap interval over the seeds within "
               "each setting: inconclusive where it straddles the threshold")  # fmt: skip
    claims = Claims()
    if "omega" in sweeps:
        _omega_claims(claims, fits, cfg, win, loose, r2_rule)
    if "p" in sweeps:
        _p_claims(claims, fits, cfg, win, r2_rule)
        if len(fits.p_stats) > 1:
            ol = fits.omega_law
            claims.check("Ω ∝ ω^b in the log law, b near −1", "Ω ∝ 1/ω, hence τ ∝ 1/(ω·p)",
                         f"{ol.b:.3g} [{ol.b_ci[0]:.3g}, {ol.b_ci[1]:.3g}] (p_crit = {ol.p_crit:.3g}, ω = "
                         f"{sorted(fits.p_stats)})" if ol else "n/a (too few uncensored runs)",
                         ol is not None and (ol.b < 0 if one else _in(ol.b)), where=THEORY, id="scaling.Omega",
                         short="Ω exponent's 95 % CI below 0" if one else f"Ω exponent's 95 % CI inside {list(WINDOW)}",
                         rule=f"fit of log τ = log A + b·log ω + log(−log(1 − p_crit/p)) over every uncensored p-sweep run "
                              f"(ω = OMEGA_P and EXTRA_OMEGAS_P; one p_crit, as the theory's p_crit does not depend on ω): b "
                              f"{win}; ours: the paper's p sweep is at ω = 1 only; {_fewer(cfg, 'TRAIN_FRACTION_P')}{loose}; judged on b's 95 % "
                              f"CI: inconclusive where it straddles a bound",
                         **_exponent(ol, one))  # fmt: skip
        elif fits.omega_Omega is not None:  # one p-sweep ω: Ω from the ω sweep, with the p sweep's p_crit
            check_omega_sweep_Omega(claims, fits.omega_Omega, _fewer(cfg, "TRAIN_FRACTION"))
    return claims


def not_tested(fits: SweepFits) -> list[ClaimRow]:
    """The claims a run cannot test: τ ∝ 1/p for p ≫ p_crit needs two primes ≥ :data:`~.law_checks.LARGE_P`;
    Ω ∝ 1/ω needs the p sweep at two weight decays or more, or an ω sweep beside a p sweep's p_crit."""
    rows = []
    if fits.large is None:
        primes = [int(x) for x in _means(fits.p_stats.get(fits.omega_p, {}))[0]]
        rows.append(p_limit_untested(primes, LARGE_P))
    if len(fits.p_stats) <= 1 and fits.omega_Omega is None:
        rows.append(ClaimRow("Ω ∝ ω^b in the log law, b near −1", "Ω ∝ 1/ω, hence τ ∝ 1/(ω·p)", "—",
                             "the p sweep runs at one weight decay (EXTRA_OMEGAS_P is empty) and no ω sweep beside it "
                             "can be fitted", THEORY, "needs the p sweep at ≥ 2 weight decays (EXTRA_OMEGAS_P), or an ω "
                             "sweep and the p sweep's p_crit", id="scaling.Omega"))  # fmt: skip
    return rows


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
        rows.append({"omega": float(x), "mean": m, "sd": None if np.isnan(s) else float(s), "n": int(n),
                     "n_censored": int(c), "omega_tau": None if m is None else float(x) * m,
                     "change": None if m is None or prev is None else m - prev})  # fmt: skip
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
        rows.append({"omega": float(x), "n": len(tau), **law, "omega_Omega": float(x) * lf.Omega if lf else None,
                     "p_exponent": pf.exponent if pf else None})  # fmt: skip
    return rows
