"""Chapter 4 intervals: how far the sweeps' seeds let a fit's R², a model comparison or a trend decide its rule.

The chapter's rules compare pooled statistics with thresholds, so each gets an interval:

* :func:`seed_bootstrap` — a percentile bootstrap over the seeds *within* each setting (each ω or
  prime keeps its number of runs, so the design stays the sweep's): the R² of the ω power law, the
  R² of the log law in p, and ΔAIC of the log law against a power law in p (:func:`log_vs_power`);
  with one seed per setting there is nothing to resample and the interval is the point;
* :func:`window_bound` — a fitted exponent's confidence interval against a two-sided window, as the
  one comparison that can decide it (:class:`~ace_helpers.repro.report.Claims` takes one threshold);
* :func:`within_error` — whether every rise of a trend's means is within its standard error;
* :func:`step_interval` — a monotone trend whose steps are measured to a resolution: the true
  largest step the measurement allows, so a step smaller than the resolution is a tie.

The fits inside the bootstrap are least squares on a fine grid of the nonlinear parameter (p_crit
of the log law, the exponent of the power law) with the linear one in closed form, so a thousand
resamples take a fraction of a second; the point values are the chapter's own fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ace_helpers.method.fits import fit_power_law

#: Exponent window: the theory's −1 within a factor 1.25 either way (the paper's −1.02 lies inside).
WINDOW = (-1.25, -0.8)
#: Bootstrap resamples and the interval's level (the two-sided central ``LEVEL`` of the resampled statistic).
N_BOOT, LEVEL = 1000, 0.9
#: How :func:`seed_bootstrap` intervals are computed (recorded beside them).
SEED_BOOTSTRAP = f"percentile bootstrap over the seeds within each setting ({LEVEL:.0%}, {N_BOOT} resamples)"
#: Grids of the nonlinear parameters: p_crit / min p (dense near the law's pole at p_crit = min p), and the power.
_U_GRID = 1.0 - np.geomspace(1e-6, 1.0, 3000)
_B_SPAN, _B_STEPS = 4.0, 3001


def _resample(x: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Index rows ``(n_boot + 1, n)``: row 0 the data itself, then resamples of each setting's runs
    (``x`` equal) with replacement, every run kept in its setting's place."""
    rng = np.random.default_rng(seed)
    idx = np.tile(np.arange(len(x)), (n_boot + 1, 1))
    for value in np.unique(x):
        members = np.flatnonzero(x == value)
        idx[1:, members] = members[rng.integers(0, len(members), size=(n_boot, len(members)))]
    return idx


def seed_bootstrap(
    x: Sequence[float],
    y: Sequence[float],
    stat: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval ``(low, high)`` of ``stat`` over ``n_boot`` resamples of the seeds within each
    setting: ``stat(x, Y)`` maps the settings ``x`` (n,) and resampled values ``Y`` (m, n) to (m,)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    vals = np.asarray(stat(x, y[_resample(x, n_boot, seed)[1:]]), float)
    vals = vals[np.isfinite(vals)]
    if not len(vals):
        raise ValueError("no resample gave a finite statistic")
    low, high = np.quantile(vals, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _profile_sse(y: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Least-squares SSE of ``y`` (m, n) on ``c·g`` per row, minimized over the basis rows ``g`` of
    ``basis`` (k, n) and their coefficient c ≥ 0 in closed form: (m,)."""
    dot = y @ basis.T  # (m, k)
    sse = np.sum(y**2, axis=1)[:, None] - np.clip(dot, 0, None) ** 2 / np.sum(basis**2, axis=1)[None, :]
    return np.clip(sse.min(axis=1), 0, None)


def log_law_sse(p: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """SSE of the least-squares log law −Ω·log(1 − p_crit/p), 0 < p_crit < min p, per row of ``tau`` (m, n)."""
    g = -np.log1p(-np.outer(_U_GRID * p.min(), 1.0 / p))
    return _profile_sse(tau, g[np.all(g > 0, axis=1)])


def power_law_sse(p: np.ndarray, tau: np.ndarray, b0: float) -> np.ndarray:
    """SSE of the least-squares power law a·p^b (b within ±4 of ``b0``, step 0.0027) per row of ``tau`` (m, n)."""
    b = np.linspace(b0 - _B_SPAN, b0 + _B_SPAN, _B_STEPS)
    return _profile_sse(tau, (p / p.max())[None, :] ** b[:, None])


def log_law_p_crit(p: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """p_crit of the least-squares log law −Ω·log(1 − p_crit/p), 0 < p_crit < min p, per row of ``tau`` (m, n): (m,)
    (on the grid of :func:`log_law_sse`; ``p`` (n,))."""
    p_crit = _U_GRID * p.min()
    g = -np.log1p(-np.outer(p_crit, 1.0 / p))
    ok = np.all(g > 0, axis=1)
    g, p_crit = g[ok], p_crit[ok]
    gain = np.clip(tau @ g.T, 0, None) ** 2 / np.sum(g**2, axis=1)[None, :]
    return p_crit[np.argmax(gain, axis=1)]


def log_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """OLS slope of log y on log x per row of ``y`` (m, n), the design ``x`` (n,) fixed (≥ 2 distinct values): (m,)."""
    lx = np.log(np.asarray(x, float))
    dx = lx - lx.mean()
    ly = np.log(y)
    return (ly - ly.mean(axis=1, keepdims=True)) @ dx / np.sum(dx**2)


def log_r2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """R² in log space of the OLS power law per row of ``y`` (m, n) (the design ``x`` is fixed)."""
    lx, ly = np.log(x), np.log(y)
    dx = lx - lx.mean()
    dy = ly - ly.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (dy @ dx) ** 2 / (np.sum(dx**2) * np.sum(dy**2, axis=1))


def law_r2(p: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """R² (1 − SSE/SST, in τ) of the least-squares log law per row of ``tau`` (m, n)."""
    sst = np.sum((tau - tau.mean(axis=1, keepdims=True)) ** 2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - log_law_sse(p, tau) / sst


@dataclass(frozen=True)
class LogVsPower:
    """The log law against a power law a·p^b over the same runs, both least squares in τ with two
    parameters, so ΔAIC = ΔBIC = n·log(SSE_power / SSE_log) (> 0: the log law fits better).

    ``delta_aic``: the point value; ``interval``: its :func:`seed_bootstrap` interval;
    ``sse_log``, ``sse_pow``: the two SSEs (steps²); ``b``: the power law's fitted exponent; ``n``: runs.
    """

    delta_aic: float
    interval: tuple[float, float]
    sse_log: float
    sse_pow: float
    b: float
    n: int


def log_vs_power(p: Sequence[float], tau: Sequence[float], seed: int = 0) -> LogVsPower:
    """Compare the two laws over the runs ``(p, tau)`` (ValueError with fewer than 3 runs or 2 primes)."""
    p, tau = np.asarray(p, float), np.asarray(tau, float)
    b0 = fit_power_law(p, tau).exponent  # checks the input; starts the exponent grid

    def delta(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return len(x) * np.log(power_law_sse(x, y, b0) / log_law_sse(x, y))

    sse_log, sse_pow = log_law_sse(p, tau[None])[0], power_law_sse(p, tau[None], b0)[0]
    grid = np.linspace(b0 - _B_SPAN, b0 + _B_SPAN, _B_STEPS)
    x = (p / p.max())[None, :] ** grid[:, None]
    b = float(grid[np.argmax((x @ tau) ** 2 / np.sum(x**2, axis=1))])
    return LogVsPower(
        float(len(p) * np.log(sse_pow / sse_log)),
        seed_bootstrap(p, tau, delta, seed=seed),
        float(sse_log),
        float(sse_pow),
        b,
        len(p),
    )


def window_bound(ci: Sequence[float], window: tuple[float, float]) -> tuple[float, str]:
    """The one comparison ``(threshold, op)`` of the window ``[low, high]`` that decides ``ci``: a bound
    the interval straddles (inconclusive), else the bound nearest the interval's middle (inside the
    window both hold; outside, the one crossed fails)."""
    lo, hi = window
    sides = ((lo, ">="), (hi, "<="))
    for bound, op in sides:
        if ci[0] < bound < ci[1]:
            return bound, op
    mid = (ci[0] + ci[1]) / 2
    return min(sides, key=lambda s: abs(s[0] - mid))


def within_error(stats: dict[str, np.ndarray]) -> bool:
    """Whether every rise between consecutive settings' mean τ is smaller than its standard error,
    √(sd₁²/n₁ + sd₂²/n₂) over the seeds (False with fewer than 2 settings or 2 seeds)."""
    if not stats or int((stats["n"] > 0).sum()) < 2:
        return False
    ok = stats["n"] > 0
    mean, sd, n = stats["mean"][ok], stats["sd"][ok], stats["n"][ok]
    se = np.sqrt(sd[:-1] ** 2 / n[:-1] + sd[1:] ** 2 / n[1:])
    rise = np.diff(mean)
    return bool(np.all((rise < 0) | (rise < se)))


def step_interval(means: Sequence[float], resolution: float) -> tuple[float, float] | None:
    """The largest step d between consecutive ``means`` as the open interval (d − r, d + r), r the τ
    resolution (the evaluation interval; returned with its ends pulled in by 1e-9·r): it lies wholly
    below 0 when every step falls by r or more, wholly above 0 when some step rises by r or more, and
    straddles 0 when the decisive step is a tie, ``|d| < r`` (None with fewer than 2 means)."""
    if len(means) < 2:
        return None
    d, r = float(np.max(np.diff(np.asarray(means, float)))), float(resolution) * (1 - 1e-9)
    return d - r, d + r
