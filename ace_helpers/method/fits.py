"""Curve fits with uncertainty: a power law on log-log axes (t interval for the exponent) and the log law.

* :func:`fit_power_law` — y = A·x^b by OLS on (log x, log y), with a t confidence interval for
  the exponent and the R² in log space;
* :func:`fit_log_law` — τ(p) = −Ω·log(1 − p_crit/p) by ``scipy.optimize.curve_fit``, with
  standard errors, R², and the comparison against a constant (AIC) and against A/p;
* :func:`fit_log_law_omega` — the same law over several weight decays with Ω = A·ω^b and one
  p_crit, fitted on log axes (t confidence interval for b);
* :func:`log_law_secant` — the law's mean log-log slope between two moduli (Ω cancels);
* :func:`log_slope` — the OLS slope of log y on log x (no interval; two distinct x suffice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.optimize import curve_fit

from ace_helpers.method.checks import check_range


@dataclass(frozen=True)
class PowerLawFit:
    """y = A · x^exponent fitted by OLS on (log x, log y).

    ``ci`` is the two-sided confidence interval of the exponent (t distribution, n − 2 dof),
    ``r2`` the R² in log space, ``n`` the number of points.
    """

    exponent: float
    prefactor: float
    exponent_se: float
    ci: tuple[float, float]
    r2: float
    n: int

    def predict(self, x: np.ndarray) -> np.ndarray:
        """A · x^exponent."""
        return self.prefactor * np.asarray(x, float) ** self.exponent


def fit_power_law(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> PowerLawFit:
    """Fit y = A·x^b on log-log axes (x, y: (n,) positive; at least 3 points, 2 distinct x)."""

    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of one length, got {x.shape} and {y.shape}")
    if len(x) < 3 or len(np.unique(x)) < 2:
        raise ValueError(f"a power-law fit needs >= 3 points at >= 2 distinct x, got {len(x)} points")
    if np.any(x <= 0) or np.any(y <= 0) or not np.all(np.isfinite(x) & np.isfinite(y)):
        raise ValueError("x and y must be finite and positive for a log-log fit")
    check_range("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    lx, ly = np.log(x), np.log(y)
    res = stats.linregress(lx, ly)
    n = len(x)
    t = stats.t.ppf(0.5 + level / 2, n - 2)
    resid = ly - (res.intercept + res.slope * lx)
    sst = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / sst if sst > 0 else float("nan")
    return PowerLawFit(
        exponent=float(res.slope),
        prefactor=float(math.exp(res.intercept)),
        exponent_se=float(res.stderr),
        ci=(float(res.slope - t * res.stderr), float(res.slope + t * res.stderr)),
        r2=r2,
        n=n,
    )


def log_law(p: np.ndarray, omega_const: float, p_crit: float) -> np.ndarray:
    """τ(p) = −Ω·log(1 − p_crit/p)  (→ Ω·p_crit/p for p ≫ p_crit)."""
    return -omega_const * np.log1p(-p_crit / np.asarray(p, float))


@dataclass(frozen=True)
class LogLawFit:
    """Least-squares fit of τ(p) = −Ω·log(1 − p_crit/p), with two reference models.

    Attributes:
        Omega, p_crit: fitted constants; ``Omega_se``, ``p_crit_se`` their standard errors
            (square roots of the ``curve_fit`` covariance diagonal).
        r2: 1 − SSE/SST (SST = SSE of the best constant, so r2 > 0 means it beats a constant).
        sse, sse_const, sse_inv: residual sums of squares of the law, of a constant, and of the
            1/p asymptote τ = A/p (``A_inv`` fitted).
        aic, aic_const: Gaussian AIC, n·log(SSE/n) + 2k (k = 2 and 1).
        n: points fitted.
    """

    Omega: float
    p_crit: float
    Omega_se: float
    p_crit_se: float
    r2: float
    sse: float
    sse_const: float
    sse_inv: float
    A_inv: float
    aic: float
    aic_const: float
    n: int

    def predict(self, p: np.ndarray) -> np.ndarray:
        """The fitted law at ``p``."""
        return log_law(p, self.Omega, self.p_crit)

    @property
    def beats_constant(self) -> bool:
        """Lower AIC than the constant model (the extra parameter pays for itself)."""
        return self.aic < self.aic_const


def fit_log_law(p: Sequence[float], tau: Sequence[float]) -> LogLawFit:
    """Fit τ(p) = −Ω·log(1 − p_crit/p) with ``scipy.optimize.curve_fit``, 0 < p_crit < min(p).

    Args:
        p: (n,) moduli (at least 2 distinct, n ≥ 3).  tau: (n,) positive grokking delays.
    """

    p, tau = np.asarray(p, float), np.asarray(tau, float)
    if p.shape != tau.shape or p.ndim != 1:
        raise ValueError(f"p and tau must be 1-D of one length, got {p.shape} and {tau.shape}")
    if len(p) < 3 or len(np.unique(p)) < 2:
        raise ValueError(f"the log-law fit needs >= 3 points at >= 2 distinct p, got {len(p)} points")
    if np.any(p <= 1) or np.any(tau <= 0) or not np.all(np.isfinite(p) & np.isfinite(tau)):
        raise ValueError("p must be > 1 and tau > 0, all finite")
    pmin = float(p.min())
    inv = 1.0 / p
    A_inv = float(np.sum(tau * inv) / np.sum(inv * inv))
    p_crit0 = pmin / 2
    omega0 = max(A_inv / p_crit0, 1e-6)
    popt, pcov = curve_fit(log_law, p, tau, p0=(omega0, p_crit0), bounds=([0.0, 0.0], [np.inf, pmin * (1 - 1e-9)]), maxfev=20000)
    pred = log_law(p, *popt)
    n = len(p)
    sse = float(np.sum((tau - pred) ** 2))
    sse_const = float(np.sum((tau - tau.mean()) ** 2))
    sse_inv = float(np.sum((tau - A_inv * inv) ** 2))
    tiny = 1e-300
    se = np.sqrt(np.clip(np.diag(pcov), 0, np.inf))
    return LogLawFit(
        Omega=float(popt[0]),
        p_crit=float(popt[1]),
        Omega_se=float(se[0]),
        p_crit_se=float(se[1]),
        r2=1.0 - sse / sse_const if sse_const > 0 else float("nan"),
        sse=sse,
        sse_const=sse_const,
        sse_inv=sse_inv,
        A_inv=A_inv,
        aic=n * math.log(max(sse, tiny) / n) + 4,
        aic_const=n * math.log(max(sse_const, tiny) / n) + 2,
        n=n,
    )


def log_law_secant(p_lo: float, p_hi: float, p_crit: float) -> float:
    """Mean log-log slope of −log(1 − p_crit/p) between ``p_lo`` < ``p_hi`` (both > p_crit ≥ 0).

    It tends to −1 for p ≫ p_crit and is steeper (more negative) closer to p_crit.
    """
    if not 0 <= p_crit < p_lo < p_hi:
        raise ValueError(f"need 0 <= p_crit < p_lo < p_hi, got p_crit={p_crit}, p_lo={p_lo}, p_hi={p_hi}")
    if p_crit == 0:
        return -1.0
    lo, hi = (-math.log1p(-p_crit / q) for q in (p_lo, p_hi))
    return math.log(hi / lo) / math.log(p_hi / p_lo)


def log_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """OLS slope of log y on log x (x, y: (n,) positive, at least 2 distinct x)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or len(np.unique(x)) < 2:
        raise ValueError(f"x and y must be 1-D of one length with >= 2 distinct x, got {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0) or not np.all(np.isfinite(x) & np.isfinite(y)):
        raise ValueError("x and y must be finite and positive for a log-log slope")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


@dataclass(frozen=True)
class OmegaLawFit:
    """τ(p, ω) = −A·ω^b·log(1 − p_crit/p), fitted by least squares on log τ.

    ``b`` is the weight-decay exponent of Ω = A·ω^b (theory −1), ``b_ci`` its two-sided
    confidence interval (t distribution, n − 3 dof); ``r2`` the R² of log τ; ``n`` points over
    ``n_omega`` distinct weight decays.
    """

    A: float
    b: float
    b_se: float
    b_ci: tuple[float, float]
    p_crit: float
    p_crit_se: float
    r2: float
    n: int
    n_omega: int

    def Omega(self, omega: float) -> float:
        """The fitted Ω at weight decay ``omega``: A·ω^b."""
        return self.A * float(omega) ** self.b


def fit_log_law_omega(p: Sequence[float], omega: Sequence[float], tau: Sequence[float], level: float = 0.95) -> OmegaLawFit:
    """Fit log τ = log A + b·log ω + log(−log(1 − p_crit/p)), 0 < p_crit < min(p).

    Args:
        p, omega, tau: (n,) moduli, weight decays and positive delays; at least 2 distinct ω,
            2 distinct p and n ≥ 4 points.
    """

    p, omega, tau = (np.asarray(v, float) for v in (p, omega, tau))
    if not (p.shape == omega.shape == tau.shape) or p.ndim != 1:
        raise ValueError(f"p, omega and tau must be 1-D of one length, got {p.shape}, {omega.shape}, {tau.shape}")
    if len(p) < 4 or len(np.unique(p)) < 2 or len(np.unique(omega)) < 2:
        raise ValueError(f"the fit needs >= 4 points at >= 2 distinct p and >= 2 distinct omega, got {len(p)} points")
    if np.any(p <= 1) or np.any(omega <= 0) or np.any(tau <= 0) or not np.all(np.isfinite(np.stack([p, omega, tau]))):
        raise ValueError("p must be > 1, omega and tau > 0, all finite")
    check_range("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    pmin, lw, lt = float(p.min()), np.log(omega), np.log(tau)

    def model(x, log_a, b, p_crit):
        q, w = x
        return log_a + b * w + np.log(-np.log1p(-p_crit / q))

    p0 = (float(np.mean(lt - np.log(-np.log1p(-0.5 * pmin / p)))), -1.0, pmin / 2)
    popt, pcov = curve_fit(
        model, (p, lw), lt, p0=p0, bounds=([-np.inf, -np.inf, 1e-9], [np.inf, np.inf, pmin * (1 - 1e-9)]), maxfev=20000
    )
    resid = lt - model((p, lw), *popt)
    sst = float(np.sum((lt - lt.mean()) ** 2))
    se = np.sqrt(np.clip(np.diag(pcov), 0, np.inf))
    n = len(p)
    t = stats.t.ppf(0.5 + level / 2, n - 3) if n > 3 else float("inf")
    return OmegaLawFit(
        A=float(math.exp(popt[0])),
        b=float(popt[1]),
        b_se=float(se[1]),
        b_ci=(float(popt[1] - t * se[1]), float(popt[1] + t * se[1])),
        p_crit=float(popt[2]),
        p_crit_se=float(se[2]),
        r2=1.0 - float(np.sum(resid**2)) / sst if sst > 0 else float("nan"),
        n=n,
        n_omega=len(np.unique(omega)),
    )
