"""Chapter 4 (notebooks/04_grokking_scaling_law): grokking time and its inverse scaling law τ ∝ 1/(ω·p).

The chapter protocol: :data:`PARAMS` (the knobs), :func:`run` (both sweeps and their fits, as a
:class:`ScalingRun`) and :func:`build_claims` (its claims, with those it cannot test inside);
:func:`results` gives ``results.json``.  The artifact cache of the paper-preset sweeps is
:class:`Sweeps`; the runs (:mod:`.runs`: :func:`grok_times`, :func:`run_grok_sweep`, the two
sweeps) and the fits and claims of any set of sweeps (:mod:`.claims`: :func:`fit_sweeps`,
:func:`fit_claims`, known gaps in :data:`KNOWN_GAPS`; the intervals the rules are judged on: :mod:`.intervals`)
are re-exported here.  :class:`Sweeps` reads the ω and p sweeps of one run from the stored
paper-preset artifact ``book/artifacts/04_grokking_scaling_law/sweeps`` when its knobs match,
and trains them otherwise (a paper-preset run stores what it trained).

``results.json`` keys written by the chapter (flat; τ in optimizer steps):

* ``runs``: list of ``{"sweep", "omega", "p", "seed", "tau_mem", "tau_test", "tau_grok",
  "censored", "steps_trained"}`` (the p sweep holds one entry per ω of ``OMEGA_P`` and
  ``EXTRA_OMEGAS_P``);
* ω fit: ``omega_exponent``, ``omega_exponent_ci`` ([lo, hi], 95 %), ``omega_r2``,
  ``omega_prefactor``, ``omega_n_fit``; ``omega_means`` (per-ω mean τ_grok, ``OMEGAS`` order of
  the sorted ω; ``None`` where every run is censored);
* p fit at ω = ``OMEGA_P``: ``Omega``, ``Omega_se``, ``p_crit``, ``p_crit_se``, ``p_r2``, ``p_sse``,
  ``p_sse_const``, ``p_sse_inv`` (1/p asymptote), ``p_aic``, ``p_aic_const``, ``p_n_fit``,
  ``p_exponent``, ``p_exponent_ci`` (plain power law in p), ``p_log_secant`` (the fitted law's
  mean log-log slope between the smallest and largest prime), and the law's limits
  (:func:`limit_numbers`): ``large_primes`` (p ≥ 61), ``p_exponent_large`` and ``p_exponent_large_ci``,
  ``p_large_law_secant``, ``p_large_excess``, ``p_large_excess_ci``, ``p_log_secant_all``,
  ``Omega_exponent_omega_sweep``, ``Omega_exponent_omega_sweep_ci``, ``omega_Omega_omega_sweep``;
* Ω law over every p-sweep ω (``None`` with one ω): ``omega_law_b``, ``omega_law_b_ci``,
  ``omega_law_p_crit``, ``omega_law_r2``;
* ``margin_ode``: the margin-ODE fits, one dict per run (:func:`margin_rows`), or ``None``;
* ``redundancy``: the redundancy intervention's runs (:class:`RedundancyRun` as dicts: ``k``, ``seed``, ``freqs``,
  ``tau_mem``, ``tau_test``, ``tau_grok``, ``censored``, ``steps_trained``), or ``None``;
* ``n_censored``, ``eval_every``, ``from_artifact``, ``omega_sweep_wall_s``, ``p_sweep_wall_s``,
  ``claims_passed``, ``claims_total``, ``wall_s``;
* ``paper_settings``: the stored runs at the paper's settings shown beside a shorter preset
  (:func:`paper_results`: ``n_runs``, ``seeds``, ``omega_exponent``, ``omega_exponent_ci``,
  ``omega_r2``, ``p_crit``, the keys of :func:`limit_numbers`, ``cpu_hours``, ``trained``, ``runs``), or ``None``.
"""

from __future__ import annotations

from typing import Any

from ace_helpers.chapters.grokking_scaling_law.claims import (
    KNOWN_GAPS,
    ClaimRow,
    SweepFits,
    fit_claims,
    fit_sweeps,
    gap_numbers,
    not_tested,
    p_sweep_rows,
    setting_rows,
)
from ace_helpers.chapters.grokking_scaling_law.claims_limits import MARGIN_SPECS, REDUNDANCY_SPECS, margin_as_stated
from ace_helpers.chapters.grokking_scaling_law.knobs import NOTEBOOK, PARAMS, PRESETS, check, sweep_memory  # noqa: F401 - the chapter's knobs
from ace_helpers.chapters.grokking_scaling_law.margin_ode import MarginTrace, OdeFit, fit_margin_ode, trace_margins
from ace_helpers.chapters.grokking_scaling_law.paper_store import (
    MIN_SEEDS,
    NO_PAPER_SWEEPS,
    StoredSweeps,
    own_as_evidence,
    paper_claims,
    stored_departures,
    stored_paper_sweeps,
    sweeps_from_runs,
    with_paper_evidence,
)
from ace_helpers.chapters.grokking_scaling_law.pipeline import ARTIFACT_NAME, ScalingRun, Sweeps, artifact_dir, artifact_key, run  # noqa: F401
from ace_helpers.chapters.grokking_scaling_law.redundancy import MAX_STEPS as REDUNDANCY_MAX_STEPS
from ace_helpers.chapters.grokking_scaling_law.redundancy import RedundancyRun, redundancy_runs, redundancy_slope
from ace_helpers.chapters.grokking_scaling_law.runs import (
    ACC_THRESHOLD,
    SEED0,
    GrokRecord,
    GrokTimes,
    grok_times,
    p_sweep_omegas,
    records_from_dicts,
    run_grok_sweep,
    run_omega_sweep,
    run_p_sweep,
    setting_stats,
    sweep_config,
    uncensored,
)
from ace_helpers.chapters.modadd.grokked import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.modadd.long_run import stored_redundancy_gap
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import judge_all

__all__ = [
    "ACC_THRESHOLD",
    "KNOWN_GAPS",
    "MIN_SEEDS",
    "NO_PAPER_SWEEPS",
    "PARAMS",
    "PRESETS",
    "REDUNDANCY_MAX_STEPS",
    "SEED0",
    "ClaimRow",
    "GrokRecord",
    "GrokTimes",
    "MarginTrace",
    "OdeFit",
    "RedundancyRun",
    "ScalingRun",
    "StoredSweeps",
    "SweepFits",
    "Sweeps",
    "build_claims",
    "fit_claims",
    "fit_margin_ode",
    "fit_sweeps",
    "gap_numbers",
    "grok_times",
    "limit_numbers",
    "margin_rows",
    "not_tested",
    "own_as_evidence",
    "p_sweep_omegas",
    "p_sweep_rows",
    "paper_claims",
    "records_from_dicts",
    "redundancy_from_rows",
    "redundancy_runs",
    "redundancy_slope",
    "results",
    "run",
    "run_grok_sweep",
    "run_omega_sweep",
    "run_p_sweep",
    "setting_rows",
    "setting_stats",
    "stored_departures",
    "stored_paper_sweeps",
    "sweep_config",
    "sweeps_from_runs",
    "trace_margins",
    "uncensored",
    "with_paper_evidence",
]


def build_claims(
    res: ScalingRun, cfg: Params, margin: list[OdeFit] | None = None, redundancy: list[RedundancyRun] | None = None
) -> Claims:
    """The chapter's claims from its fits (:func:`fit_claims`), with those it cannot test inside; ``margin``:
    the margin-ODE fits (default: the run's own, ``ScalingRun.margin``), else our fit of the ODE is not tested
    (``scaling.margin_ode`` itself never is: the paper does not define ψ and c, :func:`margin_as_stated`);
    ``redundancy``: the redundancy runs (default: ``ScalingRun.redundancy``), else ``scaling.redundancy_cause`` is not tested."""
    claims = fit_claims(res.fits, cfg)
    claims.not_tested.append(margin_as_stated())
    for specs, runs in (
        (MARGIN_SPECS, res.margin if margin is None else margin),
        (REDUNDANCY_SPECS, res.redundancy if redundancy is None else redundancy),
    ):
        more = judge_all(specs, list(runs), cfg, lambda gap: gap or None)  # their known gaps are measured texts
        claims.rows += more.rows
        claims.not_tested += more.not_tested
    return claims


def redundancy_from_rows(rows: list[dict[str, Any]]) -> list[RedundancyRun]:
    """The redundancy runs stored in ``results.json`` (``redundancy``), back as :class:`RedundancyRun`."""
    return [RedundancyRun(**{**r, "freqs": tuple(r["freqs"])}) for r in rows]


def margin_fits_from_rows(rows: list[dict[str, Any]]) -> list[OdeFit]:
    """The margin-ODE fits stored by :func:`margin_rows` (``results.json``'s ``margin_ode``), back as :class:`OdeFit`."""
    return [OdeFit(omega=r["omega"], seed=r["seed"], omega_fit=r["omega_fit"], c=r["c"], r2=r["r2"], n=r["n"]) for r in rows]


def margin_rows(fits: list[OdeFit]) -> list[dict[str, Any]]:
    """The margin-ODE fits for ``results.json`` (``margin_ode``): per run ``omega``, ``seed``, ``omega_fit``
    (ω̂, in units of 1/(lr·step)), ``c``, ``r2`` (of dm/dt), ``n`` (evaluations fitted), ``log2_ratio``."""
    return [
        {"omega": f.omega, "seed": f.seed, "omega_fit": f.omega_fit, "c": f.c, "r2": f.r2, "n": f.n, "log2_ratio": f.log2_ratio}
        for f in fits
    ]


def linked_redundancy() -> str:
    """One line on chapter 3's measured redundancy, from its stored book-preset run (trains nothing)."""
    gap = stored_redundancy_gap()
    if gap is None:
        return "chapter 3's book-preset run is not stored (book/artifacts/modadd_grokking); nothing to link"
    return (
        f"chapter 3 (preset {gap['preset']}, stored run): redundancy = necessary - sufficient core dim, "
        f"mean over models, at its last checkpoint (epoch {gap['epoch']}): {gap['mean_gap']:.1f}"
    )


def limit_numbers(fits: SweepFits) -> dict[str, Any]:
    """The law's limits for ``results.json`` (``None`` / ``[]`` where not fitted): ``large_primes`` (p ≥ LARGE_P),
    ``p_exponent_large`` and ``p_exponent_large_ci`` (slope over them, seed bootstrap), ``p_large_law_secant``
    (the fitted log law's secant over them), ``p_large_excess`` and ``p_large_excess_ci`` (slope − secant),
    ``p_log_secant_all`` (the law's secant over every prime); ``Omega_exponent_omega_sweep`` and its ``_ci``
    (Ω's exponent from the ω sweep with the p sweep's p_crit) and ``omega_Omega_omega_sweep`` (ω·Ω per ω)."""
    lg, om = fits.large, fits.omega_Omega
    return {
        "large_primes": list(lg.primes) if lg else [],
        "p_exponent_large": lg.slope if lg else None,
        "p_exponent_large_ci": list(lg.interval) if lg else None,
        "p_large_law_secant": lg.secant if lg else None,
        "p_large_excess": lg.excess if lg else None,
        "p_large_excess_ci": list(lg.excess_interval) if lg else None,
        "p_log_secant_all": lg.secant_all if lg else None,
        "Omega_exponent_omega_sweep": om.exponent if om else None,
        "Omega_exponent_omega_sweep_ci": list(om.interval) if om else None,
        "omega_Omega_omega_sweep": list(om.omega_Omega) if om else None,
    }


def paper_results(paper: StoredSweeps | None) -> dict[str, Any] | None:
    """The stored paper-settings runs for ``results.json``: per sweep the runs stored and the seeds
    per setting, the ω fit, the CPU-hours, and the runs themselves (``None`` when none is stored)."""
    if paper is None:
        return None
    fits = fit_sweeps(paper.runs["omega"], paper.runs["p"], paper.cfg["OMEGA_P"])
    w = fits.omega
    return {
        "n_runs": {k: len(v) for k, v in paper.runs.items()},
        "seeds": {k: list(paper.seeds(k)) for k in paper.runs},
        "omega_exponent": w.exponent if w else None,
        "omega_exponent_ci": list(w.ci) if w else None,
        "omega_r2": w.r2 if w else None,
        "p_crit": fits.p_log.p_crit if fits.p_log else None,
        **limit_numbers(fits),
        "cpu_hours": paper.wall_s / 3600,
        "trained": paper.trained,
        "runs": [r.to_dict() for k in paper.runs for r in paper.runs[k]],
    }


def results(
    res: ScalingRun,
    claims: Claims,
    wall_s: float,
    paper: StoredSweeps | None = None,
    margin: list[OdeFit] | None = None,
    redundancy: list[RedundancyRun] | None = None,
) -> dict[str, Any]:
    """The chapter's flat ``results.json`` dict (keys in the module docstring); ``paper``: the
    stored paper-settings runs shown beside this run (:func:`paper_results`)."""
    sweeps, fits = res.sweeps, res.fits
    runs = sweeps.runs
    w, lf, pf, ol = fits.omega, fits.p_log, fits.p_pow, fits.omega_law
    return {
        "n_censored": int(sum(r.censored for r in runs)),
        "omega_exponent": w.exponent if w else None,
        "omega_exponent_ci": list(w.ci) if w else None,
        "omega_r2": w.r2 if w else None,
        "omega_prefactor": w.prefactor if w else None,
        "omega_n_fit": len(uncensored(runs, "omega")[2]),
        "omega_means": [row["mean"] for row in setting_rows(fits)],
        "Omega": lf.Omega if lf else None,
        "Omega_se": lf.Omega_se if lf else None,
        "p_crit": lf.p_crit if lf else None,
        "p_crit_se": lf.p_crit_se if lf else None,
        "p_r2": lf.r2 if lf else None,
        "p_sse": lf.sse if lf else None,
        "p_sse_const": lf.sse_const if lf else None,
        "p_sse_inv": lf.sse_inv if lf else None,
        "p_aic": lf.aic if lf else None,
        "p_aic_const": lf.aic_const if lf else None,
        "p_n_fit": len(uncensored(runs, "p", fits.omega_p)[2]),
        "p_exponent": pf.exponent if pf else None,
        "p_exponent_ci": list(pf.ci) if pf else None,
        "p_log_secant": gap_numbers(fits).get("secant"),
        **limit_numbers(fits),
        "omega_law_b": ol.b if ol else None,
        "omega_law_b_ci": list(ol.b_ci) if ol else None,
        "omega_law_p_crit": ol.p_crit if ol else None,
        "omega_law_r2": ol.r2 if ol else None,
        "runs": [r.to_dict() for r in runs],
        "eval_every": sweeps.cfg["EVAL_EVERY"],
        "from_artifact": sweeps.from_artifact,
        "omega_sweep_wall_s": sweeps.omega_wall_s,
        "p_sweep_wall_s": sweeps.p_wall_s,
        "claims_passed": sum(r.passed for r in claims.rows),
        "claims_total": len(claims.rows),
        "paper_settings": paper_results(paper),
        "margin_ode": margin_rows(margin) if margin else None,
        "redundancy": [r.to_dict() for r in redundancy] if redundancy else None,
        "wall_s": wall_s,
    }
