"""Chapter 4: the grokking law's two limits as the theory states them, each with an interval over the seeds.

* :func:`large_prime_slope` — ``scaling.p``: τ ∝ 1/p holds "for p well above p_crit", so the slope of
  log τ on log p is taken over the large primes only (p ≥ :data:`LARGE_P`), and set beside the slope the
  fitted log law τ = −Ω·log(1 − p_crit/p) itself has there (its secant, which tends to −1 as p/p_crit
  grows and is steeper nearer p_crit);
* :func:`omega_from_sweep` — ``scaling.Omega``: Ω(ω) = τ̄(ω) / (−log(1 − p_crit/p₀)) over an ω sweep at
  one modulus p₀, with p_crit from a p sweep.  With p_crit independent of ω (the theory's p_crit = m_th/m*
  has no ω in it) Ω's exponent in ω *is* τ's exponent at fixed p; this module cannot test that
  independence, which needs p sweeps at two weight decays (the chapter's joint fit, :mod:`ace_helpers.chapters.grokking_scaling_law.claims`).

Every interval is the :func:`~.intervals.seed_bootstrap` over the seeds within each setting; a bootstrap
refits p_crit on each resample (:func:`~.intervals.log_law_p_crit`), so the law's secant carries its own
uncertainty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ace_helpers.chapters.grokking_scaling_law.intervals import log_law_p_crit, log_slopes, seed_bootstrap
from ace_helpers.method.fits import fit_log_law, log_law_secant, log_slope

#: The smallest prime counted as "p well above p_crit" (the paper's primes 61–101; ours: at the
#: paper settings' fitted p_crit ≈ 19 these sit at p/p_crit ≳ 3).
LARGE_P = 61


@dataclass(frozen=True)
class LargePrimeSlope:
    """τ_grok against p over the large primes, and the fitted log law's slope there.

    ``primes``: the large primes (≥ ``p_min``) with uncensored runs; ``n``: their runs; ``slope``:
    OLS slope of log τ on log p over those runs, ``interval`` its seed bootstrap; ``p_crit``: the log
    law fitted on every prime (least squares in τ, as the paper's ``curve_fit``); ``secant``: that law's
    mean log-log slope between the smallest and largest large prime, ``secant_all`` between the smallest
    and largest of all primes (``all_primes``); ``excess`` = slope − secant, ``excess_interval`` its
    bootstrap (p_crit refitted per resample): > 0 means τ falls *more slowly* than the law predicts there.
    """

    primes: tuple[int, ...]
    n: int
    slope: float
    interval: tuple[float, float]
    p_crit: float
    secant: float
    secant_all: float
    all_primes: tuple[int, int]
    excess: float
    excess_interval: tuple[float, float]
    p_min: int = LARGE_P


def _secants(p_crit: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """:func:`~ace_helpers.method.fits.log_law_secant` per p_crit (m,) between ``lo`` < ``hi``: (m,)."""
    a, b = (-np.log1p(-p_crit / q) for q in (lo, hi))
    return np.log(b / a) / np.log(hi / lo)


def large_prime_slope(p: Sequence[float], tau: Sequence[float], p_min: int = LARGE_P, seed: int = 0) -> LargePrimeSlope:
    """The slope of log τ on log p over the runs at primes ≥ ``p_min`` and the log law's secant there.

    Args:
        p, tau: (n,) modulus and τ_grok (> 0) of the uncensored runs at one weight decay, every prime.
        p_min: the smallest large prime.  seed: the bootstrap's seed.

    Raises:
        ValueError: fewer than 2 distinct primes ≥ ``p_min``, fewer than 3 runs there, or a log law
            that cannot be fitted over every prime.
    """
    p, tau = np.asarray(p, float), np.asarray(tau, float)
    if p.shape != tau.shape or p.ndim != 1:
        raise ValueError(f"p and tau must be 1-D of one length, got {p.shape} and {tau.shape}")
    big = p >= p_min
    large = tuple(int(q) for q in np.unique(p[big]))
    if len(large) < 2 or big.sum() < 3:
        raise ValueError(
            f"the slope over p >= {p_min} needs >= 2 such primes and >= 3 runs; got primes {list(large)}, "
            f"{int(big.sum())} runs (primes of the sweep: {sorted({int(q) for q in p})})"
        )
    law = fit_log_law(p, tau)
    lo, hi = float(min(large)), float(max(large))

    def slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return log_slopes(x[big], y[:, big])

    def excess(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return log_slopes(x[big], y[:, big]) - _secants(log_law_p_crit(x, y), lo, hi)

    secant = log_law_secant(lo, hi, law.p_crit)
    b = log_slope(p[big], tau[big])
    return LargePrimeSlope(
        large,
        int(big.sum()),
        b,
        seed_bootstrap(p, tau, slope, seed=seed),
        law.p_crit,
        secant,
        log_law_secant(float(p.min()), float(p.max()), law.p_crit),
        (int(p.min()), int(p.max())),
        b - secant,
        seed_bootstrap(p, tau, excess, seed=seed),
        p_min,
    )


@dataclass(frozen=True)
class OmegaFromSweep:
    """Ω(ω) over an ω sweep at modulus ``p0``, with p_crit from the p sweep.

    ``omegas``: the sweep's weight decays; ``Omega``: per ω, mean τ_grok / (−log(1 − p_crit/p0)) (steps);
    ``exponent``: OLS slope of log Ω on log ω over every run (= τ's exponent at fixed p0), ``interval`` its
    seed bootstrap; ``omega_Omega``: ω·Ω per ω (constant when Ω ∝ 1/ω); ``p_crit``, ``p0``; ``n`` runs.
    """

    omegas: tuple[float, ...]
    Omega: tuple[float, ...]
    exponent: float
    interval: tuple[float, float]
    omega_Omega: tuple[float, ...]
    p_crit: float
    p0: int
    n: int


def omega_from_sweep(omega: Sequence[float], tau: Sequence[float], p0: int, p_crit: float, seed: int = 0) -> OmegaFromSweep:
    """Ω(ω) and its exponent from the uncensored runs ``(omega, tau)`` (n,) of an ω sweep at modulus ``p0``.

    Raises:
        ValueError: fewer than 3 distinct ω, or ``p_crit`` not in [0, p0).
    """
    w, tau = np.asarray(omega, float), np.asarray(tau, float)
    if w.shape != tau.shape or w.ndim != 1 or len(np.unique(w)) < 3:
        raise ValueError(f"omega and tau must be 1-D of one length with >= 3 distinct omega, got {w.shape}, {tau.shape}")
    if not 0 <= p_crit < p0:
        raise ValueError(f"p_crit={p_crit} must lie in [0, p0={p0})")
    g = -np.log1p(-p_crit / p0) if p_crit > 0 else 1.0 / p0  # p_crit → 0: the 1/p limit, up to a constant
    ws = tuple(float(x) for x in np.unique(w))
    om = tuple(float(tau[w == x].mean() / g) for x in ws)
    return OmegaFromSweep(
        ws,
        om,
        log_slope(w, tau),
        seed_bootstrap(w, tau, log_slopes, seed=seed),
        tuple(x * o for x, o in zip(ws, om)),
        float(p_crit),
        int(p0),
        len(tau),
    )
