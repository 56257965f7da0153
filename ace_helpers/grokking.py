"""Chapter 4: grokking time and its inverse scaling law τ ∝ 1/(ω·p) (spec §3.4).

Pieces, each small:

* :data:`PRESETS` / :func:`resolve_params` — the chapter's knobs, validated;
* :func:`grok_times` — τ_mem, τ_grok and censoring from an accuracy history;
* :func:`run_grok_sweep` — trains every (ω, seed) of one modulus p as one vectorised ensemble
  (:mod:`ace_helpers.ensemble`) and returns one :class:`GrokRecord` per run;
* :func:`fit_power_law` — log-log OLS with a t confidence interval for the exponent and R²;
* :func:`fit_log_law` — τ(p) = −Ω·log(1 − p_crit/p) by ``scipy.optimize.curve_fit``, with
  standard errors, R², and the comparison against a constant (and against A/p).

Definitions (in optimizer steps, accuracies in eval mode on the last token):
``tau_mem`` = first evaluated step with train accuracy ≥ 0.99; ``tau_test`` = first evaluated
step with test accuracy ≥ 0.99; ``tau_grok = tau_test − tau_mem``.  With an evaluation every
``EVAL_EVERY`` steps each first-crossing step is known to within ``EVAL_EVERY`` (it lies in
``(s − EVAL_EVERY, s]``), so τ_grok is resolved to ± ``EVAL_EVERY``.  A run that has not grokked
at ``MAX_STEPS`` is *censored*: its ``tau_grok`` is the lower bound ``MAX_STEPS − tau_mem``
(``None`` if it never memorised) and it is reported, not dropped; fits use uncensored runs.

``results.json`` keys written by the chapter (flat):

* ``runs``: list of ``{"sweep", "omega", "p", "seed", "tau_mem", "tau_test", "tau_grok",
  "censored", "steps_trained"}`` (τ in optimizer steps);
* ω fit: ``omega_exponent``, ``omega_exponent_ci`` ([lo, hi], 95 %), ``omega_r2``,
  ``omega_prefactor``, ``omega_n_fit``;
* p fit: ``Omega``, ``Omega_se``, ``p_crit``, ``p_crit_se``, ``p_r2``, ``p_sse``, ``p_sse_const``,
  ``p_sse_inv`` (1/p asymptote), ``p_aic``, ``p_aic_const``, ``p_n_fit``, ``p_exponent``,
  ``p_exponent_ci`` (plain power law in p);
* ``n_censored``, ``eval_every``, ``from_artifact``, ``omega_sweep_wall_s``, ``p_sweep_wall_s``,
  ``claims_passed``, ``claims_total``, ``wall_s``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ace_helpers.ensemble import train_ensemble
from ace_helpers.models import ToyConfig
from ace_helpers.params import check_choice, check_int, check_list, check_prime, check_range, resolve
from ace_helpers.tasks.modadd import modadd_dataset

ACC_THRESHOLD = 0.99

#: Knobs of notebooks/04_grokking_scaling_law.  ``BATCH_SIZE_OMEGA`` is the ω sweep's
#: mini-batch; the p sweep is always full batch.  ``TRAIN_FRACTION`` / ``TRAIN_FRACTION_P`` are
#: the train shares of the p² pairs in the ω / p sweep (paper: 0.5 for both).  ``STOP_MARGIN`` =
#: steps a run continues after grokking.  The ``ci`` and ``book`` presets use larger train
#: fractions than the paper so that every run groks within a CPU budget (measured on the shared
#: 2-core machine: at p = 53, ω = 1, batch 512 the delay is ~1900 steps at 0.5, ~600 at 0.7;
#: full batch at p = 31, 0.5 did not grok within 2500 steps, 0.8 grokked after ~630).
PRESETS: dict[str, dict] = {
    "ci": {
        "OMEGAS": [0.5, 1.0, 3.0],
        "PRIMES": [31, 43, 53],
        "N_SEEDS": 1,
        "MAX_STEPS": 5000,
        "EVAL_EVERY": 10,
        "TRAIN_FRACTION": 0.7,
        "TRAIN_FRACTION_P": 0.8,
        "BATCH_SIZE_OMEGA": 512,
        "STOP_MARGIN": 0,
        "P_OMEGA": 53,
        "OMEGA_P": 1.0,
        "LR": 1e-3,
    },
    "book": {
        "OMEGAS": [0.3, 0.5, 1.0, 1.5, 2.0, 3.0],
        "PRIMES": [31, 43, 53, 61],
        "N_SEEDS": 2,
        "MAX_STEPS": 6000,
        "EVAL_EVERY": 10,
        "TRAIN_FRACTION": 0.7,
        "TRAIN_FRACTION_P": 0.8,
        "BATCH_SIZE_OMEGA": 512,
        "STOP_MARGIN": 0,
        "P_OMEGA": 53,
        "OMEGA_P": 1.0,
        "LR": 1e-3,
    },
    "paper": {
        "OMEGAS": [0.3, 0.5, 1.0, 1.5, 2.0, 3.0],
        "PRIMES": [31, 43, 53, 61, 79, 89, 101],
        "N_SEEDS": 12,
        # the paper caps the ω sweep at 20,000 epochs (x 3 steps) and the p sweep at 30,000
        # full-batch epochs; one cap for both here, the larger one
        "MAX_STEPS": 60000,
        "EVAL_EVERY": 1,
        "TRAIN_FRACTION": 0.5,
        "TRAIN_FRACTION_P": 0.5,
        "BATCH_SIZE_OMEGA": 512,
        "STOP_MARGIN": 100,
        "P_OMEGA": 53,
        "OMEGA_P": 1.0,
        "LR": 1e-3,
    },
}

#: First seed of every setting (the paper uses seeds 42..53).
SEED0 = 42


def sweep_config(p: int) -> ToyConfig:
    """The one-layer sweep model of spec §3.4 for modulus ``p``."""
    return ToyConfig(vocab=p, d_model=128, n_layers=1, n_heads=4, d_ff=512, max_len=2, dropout=0.1)


def resolve_params(**knobs) -> dict:
    """Resolve the chapter's knobs against :data:`PRESETS` and validate every one.

    Pass every notebook knob (``PRESET``, ``OMEGAS``, ``PRIMES``, ``N_SEEDS``, ``MAX_STEPS``,
    ``EVAL_EVERY``, ``TRAIN_FRACTION``, ``TRAIN_FRACTION_P``, ``BATCH_SIZE_OMEGA``, ``STOP_MARGIN``, ``P_OMEGA``,
    ``OMEGA_P``, ``LR``); ``None`` takes the preset's value.  ``OUTPUT_DIR`` is not handled here.
    Raises ``ValueError`` naming the bad knob.
    """
    from ace_helpers.params import preset_from_env

    knobs = dict(knobs)
    preset = knobs.pop("PRESET", None) or preset_from_env("book")
    check_choice("PRESET", preset, PRESETS)
    unknown = sorted(set(knobs) - set(PRESETS["paper"]))
    if unknown:
        raise ValueError(f"unknown knobs {unknown}: allowed are {sorted(PRESETS['paper'])} and PRESET")
    knobs = {name: knobs.get(name) for name in PRESETS["paper"]}
    p = resolve(preset, knobs, PRESETS)
    p["OMEGAS"] = check_list("OMEGAS", p["OMEGAS"], lambda n, v: check_range(n, v, low=0.0, low_open=True, high=100.0))
    p["PRIMES"] = check_list("PRIMES", p["PRIMES"], lambda n, v: check_prime(n, v, low=5))
    for name in ("OMEGAS", "PRIMES"):
        if len(set(p[name])) != len(p[name]):
            raise ValueError(f"{name}={p[name]!r} is not allowed: {name} must not repeat values")
    p["N_SEEDS"] = check_int("N_SEEDS", p["N_SEEDS"], low=1, high=100)
    p["MAX_STEPS"] = check_int("MAX_STEPS", p["MAX_STEPS"], low=1)
    p["EVAL_EVERY"] = check_int("EVAL_EVERY", p["EVAL_EVERY"], low=1)
    if p["EVAL_EVERY"] > p["MAX_STEPS"]:
        raise ValueError(f"EVAL_EVERY={p['EVAL_EVERY']} is not allowed: EVAL_EVERY must be <= MAX_STEPS ({p['MAX_STEPS']})")
    for name in ("TRAIN_FRACTION", "TRAIN_FRACTION_P"):
        p[name] = check_range(name, p[name], low=0.0, high=1.0, low_open=True, high_open=True)
    p["BATCH_SIZE_OMEGA"] = check_int("BATCH_SIZE_OMEGA", p["BATCH_SIZE_OMEGA"], low=1)
    p["STOP_MARGIN"] = check_int("STOP_MARGIN", p["STOP_MARGIN"], low=0)
    p["P_OMEGA"] = check_prime("P_OMEGA", p["P_OMEGA"], low=5)
    p["OMEGA_P"] = check_range("OMEGA_P", p["OMEGA_P"], low=0.0, low_open=True, high=100.0)
    p["LR"] = check_range("LR", p["LR"], low=0.0, low_open=True, high=1.0)
    return p


@dataclass(frozen=True)
class GrokTimes:
    """First-crossing steps of one run (``None`` = never crossed within the run).

    ``tau_grok`` is ``tau_test − tau_mem``, or for a censored run the lower bound
    ``last_step − tau_mem``.
    """

    tau_mem: int | None
    tau_test: int | None
    tau_grok: int | None
    censored: bool


def grok_times(
    steps: Sequence[int], train_acc: Sequence[float], test_acc: Sequence[float], threshold: float = ACC_THRESHOLD
) -> GrokTimes:
    """τ_mem, τ_test and τ_grok from an evaluation history.

    Args:
        steps: (E,) increasing evaluated optimizer steps.  train_acc, test_acc: (E,) accuracies.
        threshold: accuracy that counts as reached (paper: 0.99).

    Returns:
        :class:`GrokTimes`; ``censored`` when test accuracy never reached ``threshold``.
    """
    steps = np.asarray(steps, dtype=np.int64)
    train_acc, test_acc = np.asarray(train_acc, float), np.asarray(test_acc, float)
    if not (steps.shape == train_acc.shape == test_acc.shape) or steps.ndim != 1:
        raise ValueError(f"steps, train_acc, test_acc must be 1-D of one length, got {steps.shape}, {train_acc.shape}, {test_acc.shape}")
    if len(steps) == 0:
        return GrokTimes(None, None, None, True)
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    mem = np.flatnonzero(train_acc >= threshold)
    gen = np.flatnonzero(test_acc >= threshold)
    tau_mem = int(steps[mem[0]]) if len(mem) else None
    tau_test = int(steps[gen[0]]) if len(gen) else None
    if tau_test is not None and tau_mem is not None:
        return GrokTimes(tau_mem, tau_test, tau_test - tau_mem, False)
    if tau_test is not None:  # generalised before memorising (only possible between evaluations)
        return GrokTimes(tau_test, tau_test, 0, False)
    bound = int(steps[-1]) - tau_mem if tau_mem is not None else None
    return GrokTimes(tau_mem, None, bound, True)


@dataclass(frozen=True)
class GrokRecord:
    """One run of a sweep (the row stored in ``results.json['runs']``)."""

    sweep: str
    omega: float
    p: int
    seed: int
    tau_mem: int | None
    tau_test: int | None
    tau_grok: int | None
    censored: bool
    steps_trained: int

    def to_dict(self) -> dict:
        """Plain dict."""
        return asdict(self)


def run_grok_sweep(
    p: int,
    omegas: Sequence[float],
    seeds: Sequence[int],
    *,
    batch_size: int | None,
    max_steps: int,
    eval_every: int,
    train_fraction: float = 0.5,
    split_seed: int = 42,
    stop_margin: int = 0,
    lr: float = 1e-3,
    sweep: str = "omega",
    progress: bool = True,
) -> list[GrokRecord]:
    """Train every (ω, seed) pair for modulus ``p`` as one ensemble and time its grokking.

    Args:
        p: prime modulus.  omegas: AdamW weight decays.  seeds: model/data-order seeds
            (the same seeds for every ω, so ω is compared on common random numbers).
        batch_size: mini-batch size; ``None`` = full batch (one step per epoch).
        max_steps: step cap (censoring).  eval_every: steps between evaluations.
        train_fraction, split_seed: the ``modadd_dataset`` split.
        stop_margin: steps a run keeps training after it grokked.

    Returns:
        One :class:`GrokRecord` per (ω, seed), ω-major.
    """
    check_prime("p", p, low=5)
    data = modadd_dataset(p, train_fraction, split_seed)
    n_train = data.train_inputs.shape[0]
    members = [(float(w), int(s)) for w in omegas for s in seeds]
    all_inputs = torch.cat([data.train_inputs, data.test_inputs])
    all_answers = torch.cat([data.train_targets[:, -1], data.test_targets[:, -1]])
    history: dict[int, list[tuple[int, float, float]]] = {m: [] for m in range(len(members))}
    grok_step: dict[int, int] = {}

    def evaluate(step: int, ensemble, ids: np.ndarray) -> np.ndarray:
        logits_ok = _correct(ensemble, all_inputs, all_answers)  # (A, N) bool
        train = logits_ok[:, :n_train].double().mean(1).numpy()
        test = logits_ok[:, n_train:].double().mean(1).numpy()
        done = np.zeros(len(ids), dtype=bool)
        for j, m in enumerate(ids):
            history[int(m)].append((step, float(train[j]), float(test[j])))
            if test[j] >= ACC_THRESHOLD and int(m) not in grok_step:
                grok_step[int(m)] = step
            if int(m) in grok_step and step >= grok_step[int(m)] + stop_margin:
                done[j] = True
        return done

    run = train_ensemble(
        sweep_config(p),
        data.train_inputs,
        data.train_targets,
        seeds=[s for _, s in members],
        weight_decays=[w for w, _ in members],
        batch_size=batch_size if batch_size is not None else n_train,
        lr=lr,
        max_steps=max_steps,
        eval_every=eval_every,
        evaluate=evaluate,
        progress=progress,
        desc=f"{sweep} sweep p={p}",
    )
    records = []
    for m, (w, s) in enumerate(members):
        h = np.asarray(history[m], dtype=float).reshape(-1, 3)
        t = grok_times(h[:, 0].astype(np.int64), h[:, 1], h[:, 2])
        records.append(GrokRecord(sweep, w, p, s, t.tau_mem, t.tau_test, t.tau_grok, t.censored, int(run.steps[m])))
    return records


@torch.no_grad()
def _correct(ensemble, inputs: torch.Tensor, answers: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """(M, N) bool: member m's argmax on input n is right (last position, eval mode)."""
    out = []
    for start in range(0, inputs.shape[0], chunk):
        logits = ensemble(inputs[start : start + chunk], last_only=True)
        out.append(logits.argmax(-1) == answers[start : start + chunk])
    return torch.cat(out, dim=1)


def uncensored(records: Sequence[GrokRecord], sweep: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(omega, p, tau_grok) float arrays of the uncensored runs with τ_grok > 0 (of one sweep).

    Runs with τ_grok = 0 (memorised and generalised within one evaluation interval) cannot be
    placed on log axes; callers report how many were left out.
    """
    rows = [r for r in records if (sweep is None or r.sweep == sweep) and not r.censored and r.tau_grok]
    if not rows:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return (
        np.array([r.omega for r in rows], float),
        np.array([r.p for r in rows], float),
        np.array([r.tau_grok for r in rows], float),
    )


def setting_stats(records: Sequence[GrokRecord], key: str, sweep: str) -> dict[str, np.ndarray]:
    """Per-setting mean and sd of τ_grok over uncensored runs.

    Args:
        key: ``"omega"`` or ``"p"`` (the swept variable).

    Returns:
        ``{"x", "mean", "sd", "n", "n_censored"}``, arrays over the sorted settings.
    """
    check_choice("key", key, ("omega", "p"))
    xs = sorted({getattr(r, key) for r in records if r.sweep == sweep})
    out = {k: [] for k in ("x", "mean", "sd", "n", "n_censored")}
    for x in xs:
        rows = [r for r in records if r.sweep == sweep and getattr(r, key) == x]
        taus = np.array([r.tau_grok for r in rows if not r.censored and r.tau_grok is not None], float)
        out["x"].append(x)
        out["mean"].append(taus.mean() if len(taus) else np.nan)
        out["sd"].append(taus.std(ddof=1) if len(taus) > 1 else np.nan)
        out["n"].append(len(taus))
        out["n_censored"].append(sum(r.censored for r in rows))
    return {k: np.asarray(v, float) for k, v in out.items()}


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
    from scipy import stats

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
    from scipy.optimize import curve_fit

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
    popt, pcov = curve_fit(
        log_law, p, tau, p0=(omega0, p_crit0), bounds=([0.0, 0.0], [np.inf, pmin * (1 - 1e-9)]), maxfev=20000
    )
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


def run_omega_sweep(params: dict, progress: bool = True) -> list[GrokRecord]:
    """The ω sweep of resolved ``params``: all ω × seeds at p = ``P_OMEGA`` as one ensemble."""
    seeds = [SEED0 + i for i in range(params["N_SEEDS"])]
    return run_grok_sweep(
        params["P_OMEGA"], params["OMEGAS"], seeds, batch_size=params["BATCH_SIZE_OMEGA"],
        max_steps=params["MAX_STEPS"], eval_every=params["EVAL_EVERY"], train_fraction=params["TRAIN_FRACTION"],
        stop_margin=params["STOP_MARGIN"], lr=params["LR"], sweep="omega", progress=progress,
    )


def run_p_sweep(params: dict, progress: bool = True) -> list[GrokRecord]:
    """The p sweep of resolved ``params``: ω = ``OMEGA_P``, full batch, one ensemble per p."""
    seeds = [SEED0 + i for i in range(params["N_SEEDS"])]
    out: list[GrokRecord] = []
    for p in params["PRIMES"]:
        out += run_grok_sweep(
            p, [params["OMEGA_P"]], seeds, batch_size=None, max_steps=params["MAX_STEPS"],
            eval_every=params["EVAL_EVERY"], train_fraction=params["TRAIN_FRACTION_P"],
            stop_margin=params["STOP_MARGIN"], lr=params["LR"], sweep="p", progress=progress,
        )
    return out


def records_from_dicts(rows: Sequence[dict]) -> list[GrokRecord]:
    """Inverse of :meth:`GrokRecord.to_dict` (for stored artifacts)."""
    return [GrokRecord(**row) for row in rows]


def analyse(records: Sequence[GrokRecord]) -> dict:
    """Both fits from a chapter's records, as the flat ``results.json`` fields.

    The ω fit is a power law on the uncensored runs of the ω sweep; the p fit is the log law on
    the uncensored runs of the p sweep.  A fit that cannot be made (too few uncensored runs)
    gives ``None`` values.
    """
    out: dict = {"n_censored": int(sum(r.censored for r in records))}
    w, _, tau = uncensored(records, "omega")
    try:
        fit = fit_power_law(w, tau)
        out.update(omega_exponent=fit.exponent, omega_exponent_ci=list(fit.ci), omega_r2=fit.r2,
                   omega_prefactor=fit.prefactor, omega_n_fit=fit.n)
    except ValueError:
        out.update(omega_exponent=None, omega_exponent_ci=None, omega_r2=None, omega_prefactor=None,
                   omega_n_fit=len(tau))
    _, p, tau = uncensored(records, "p")
    try:
        lf = fit_log_law(p, tau)
        out.update(Omega=lf.Omega, Omega_se=lf.Omega_se, p_crit=lf.p_crit, p_crit_se=lf.p_crit_se, p_r2=lf.r2,
                   p_sse=lf.sse, p_sse_const=lf.sse_const, p_sse_inv=lf.sse_inv, p_aic=lf.aic,
                   p_aic_const=lf.aic_const, p_n_fit=lf.n)
        pf = fit_power_law(p, tau)
        out.update(p_exponent=pf.exponent, p_exponent_ci=list(pf.ci))
    except (ValueError, RuntimeError):
        out.update({k: None for k in ("Omega", "Omega_se", "p_crit", "p_crit_se", "p_r2", "p_sse", "p_sse_const",
                                      "p_sse_inv", "p_aic", "p_aic_const", "p_exponent", "p_exponent_ci")})
        out["p_n_fit"] = len(tau)
    return out
