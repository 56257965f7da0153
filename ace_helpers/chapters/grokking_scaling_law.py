"""Chapter 4 (notebooks/04_grokking_scaling_law): grokking time and its inverse scaling law τ ∝ 1/(ω·p).

The chapter's knobs (:data:`PARAMS`), its sweeps, the artifact cache of the paper-preset
sweeps, its fits and its claims.  Pieces, each small:

* :func:`grok_times` — τ_mem, τ_grok and censoring from an accuracy history;
* :func:`run_grok_sweep` — trains every (ω, seed) of one modulus p as one vectorised ensemble
  (:mod:`ace_helpers.ensemble`) and returns one :class:`GrokRecord` per run;
* :class:`Sweeps` — the ω and p sweeps of one run, read from the stored paper-preset artifact
  ``book/artifacts/04_grokking_scaling_law/sweeps`` when its knobs match, trained otherwise
  (a paper-preset run stores what it trained);
* :func:`fit_sweeps` — the power law in ω and the log law in p (:mod:`ace_helpers.fits`);
* :func:`build_claims`, :func:`results`.

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

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ace_helpers.artifacts import load_artifact, project_root, save_artifact
from ace_helpers.ensemble import train_ensemble
from ace_helpers.fits import LogLawFit, PowerLawFit, fit_log_law, fit_power_law
from ace_helpers.models import ToyConfig
from ace_helpers.params import ChapterParams, Params, check_choice, check_int, check_list, check_prime, check_range
from ace_helpers.report import Claims
from ace_helpers.tasks.modadd import modadd_dataset

NOTEBOOK = "04_grokking_scaling_law"

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

PRESETS["book"] = PRESETS["ci"] | {"OMEGAS": [0.3, 0.5, 1.0, 1.5, 2.0, 3.0], "PRIMES": [31, 43, 53, 61], "N_SEEDS": 2,
                                   "MAX_STEPS": 6000}  # fmt: skip

#: First seed of every setting (the paper uses seeds 42..53).
SEED0 = 42


def sweep_config(p: int) -> ToyConfig:
    """The paper's one-layer sweep model for modulus ``p`` (d_model 128, 4 heads, d_ff 512, dropout 0.1)."""
    return ToyConfig(vocab=p, d_model=128, n_layers=1, n_heads=4, d_ff=512, max_len=2, dropout=0.1)


#: Ours: MEMORY_LIMIT, a quarter of a 32 GiB laptop or CI runner; MAX_STEP_CAP, ~17x the paper's longest cap (60,000).
MEMORY_LIMIT, MAX_STEP_CAP = 8 * 2**30, 1_000_000


def sweep_memory(p: int, members: int, batch: int) -> int:
    """Rough bytes of one sweep at modulus ``p``, ``members`` models trained together on ``batch`` pairs:
    the p² pairs' tables (72 B per pair); per member the (batch, p) float32 logits with softmax and
    gradient (12 B per entry), the 4096-row evaluation logits, and 2·128·p + 200,000 parameters with
    gradients and two AdamW moments (16 B each)."""
    return 72 * p * p + members * (12 * batch * p + 4 * min(4096, p * p) * p + 16 * (256 * p + 200_000))


def check(p: dict) -> None:
    """Validate every knob (``ValueError`` naming it); ``OMEGAS`` become floats, ``PRIMES`` ints.

    Each split of the p² pairs (TRAIN_FRACTION at P_OMEGA, TRAIN_FRACTION_P at every prime) must
    hold at least p pairs, one per answer; each sweep's :func:`sweep_memory` must be <= MEMORY_LIMIT.
    """
    p["OMEGAS"] = check_list("OMEGAS", p["OMEGAS"], lambda n, v: check_range(n, v, low=0.0, low_open=True, high=100.0))
    p["PRIMES"] = check_list("PRIMES", p["PRIMES"], lambda n, v: check_prime(n, v, low=5))
    for name in ("OMEGAS", "PRIMES"):
        if len(set(p[name])) != len(p[name]):
            raise ValueError(f"{name}={p[name]!r} is not allowed: {name} must not repeat values")
    p["N_SEEDS"] = check_int("N_SEEDS", p["N_SEEDS"], low=1, high=100)
    p["MAX_STEPS"] = check_int("MAX_STEPS", p["MAX_STEPS"], low=1, high=MAX_STEP_CAP)
    p["EVAL_EVERY"] = check_int("EVAL_EVERY", p["EVAL_EVERY"], low=1)
    if p["EVAL_EVERY"] > p["MAX_STEPS"]:
        raise ValueError(f"EVAL_EVERY={p['EVAL_EVERY']} is not allowed: EVAL_EVERY must be <= MAX_STEPS ({p['MAX_STEPS']})")
    for name in ("TRAIN_FRACTION", "TRAIN_FRACTION_P"):
        p[name] = check_range(name, p[name], low=0.0, high=1.0, low_open=True, high_open=True)
    p["BATCH_SIZE_OMEGA"] = check_int("BATCH_SIZE_OMEGA", p["BATCH_SIZE_OMEGA"], low=1)
    p["STOP_MARGIN"] = check_int("STOP_MARGIN", p["STOP_MARGIN"], low=0, high=p["MAX_STEPS"])
    p["P_OMEGA"] = check_prime("P_OMEGA", p["P_OMEGA"], low=5)
    p["OMEGA_P"] = check_range("OMEGA_P", p["OMEGA_P"], low=0.0, low_open=True, high=100.0)
    p["LR"] = check_range("LR", p["LR"], low=0.0, low_open=True, high=1.0)
    sweeps = [("TRAIN_FRACTION", "P_OMEGA", p["P_OMEGA"], len(p["OMEGAS"]) * p["N_SEEDS"], p["BATCH_SIZE_OMEGA"])]
    sweeps += [("TRAIN_FRACTION_P", "PRIMES", q, p["N_SEEDS"], None) for q in p["PRIMES"]]
    for frac_name, p_name, q, members, batch in sweeps:
        n_train = int(p[frac_name] * q * q)
        if min(n_train, q * q - n_train) < q:
            raise ValueError(
                f"{frac_name}={p[frac_name]} is not allowed at {p_name} p={q}: it leaves {n_train} train and "
                f"{q * q - n_train} test pairs of {q * q}; each split needs at least p = {q} pairs (one per answer), "
                f"i.e. {frac_name} in about [{1 / q:.3g}, {1 - 1 / q:.3g}]"
            )
        need = sweep_memory(q, members, min(batch or n_train, n_train))
        if need > MEMORY_LIMIT:
            what = "the OMEGAS × N_SEEDS models of the ω sweep" if batch else "the N_SEEDS full-batch models of the p sweep"
            raise ValueError(
                f"{p_name}: p={q} would need ~{need / 2**30:.3g} GiB for {what} ({members} models, vocabulary "
                f"and p² = {q * q} pairs); the limit is {MEMORY_LIMIT / 2**30:.3g} GiB: lower {p_name} or N_SEEDS"
            )


#: The chapter's knobs: ``PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)


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



def run_omega_sweep(params: Params, progress: bool = False) -> list[GrokRecord]:
    """The ω sweep of resolved ``params``: all ω × seeds at p = ``P_OMEGA`` as one ensemble."""
    seeds = [SEED0 + i for i in range(params["N_SEEDS"])]
    return run_grok_sweep(
        params["P_OMEGA"], params["OMEGAS"], seeds, batch_size=params["BATCH_SIZE_OMEGA"],
        max_steps=params["MAX_STEPS"], eval_every=params["EVAL_EVERY"], train_fraction=params["TRAIN_FRACTION"],
        stop_margin=params["STOP_MARGIN"], lr=params["LR"], sweep="omega", progress=progress,
    )


def run_p_sweep(params: Params, progress: bool = False) -> list[GrokRecord]:
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


# --------------------------------------------------------------------------------------------
# the sweeps of one run, with the artifact cache of the paper-preset sweeps
# --------------------------------------------------------------------------------------------
ARTIFACT_NAME = "sweeps"


def artifact_dir() -> Path:
    """Where the paper-preset sweeps are stored: ``book/artifacts/04_grokking_scaling_law``."""
    return project_root() / "book" / "artifacts" / NOTEBOOK


def artifact_key(cfg: Params) -> dict:
    """The artifact's parameters: every knob of the run (not ``PRESET`` or ``OUTPUT_DIR``)."""
    return cfg.knob_values()


class Sweeps:
    """The ω and p sweeps of one run: read from the stored artifact when its knobs match, else trained.

    ``Sweeps(cfg)`` looks the artifact up; :meth:`omega` and :meth:`p` return each sweep's
    records (timing what they train); :meth:`save` stores a paper-preset run's freshly trained
    sweeps as the artifact (other presets store nothing).
    """

    def __init__(self, cfg: Params, directory: str | Path | None = None) -> None:
        self.cfg = cfg
        self.directory = Path(directory) if directory is not None else artifact_dir()
        self.stored = load_artifact(self.directory, ARTIFACT_NAME, artifact_key(cfg))
        self.omega_runs: list[GrokRecord] | None = None
        self.p_runs: list[GrokRecord] | None = None
        self.omega_wall_s = 0.0
        self.p_wall_s = 0.0

    @property
    def from_artifact(self) -> bool:
        """Whether the records come from the stored artifact."""
        return self.stored is not None

    def describe(self) -> str:
        """One line: where the records come from."""
        return "using the stored artifact (params match)" if self.stored else "no matching stored artifact: training now"

    def _stored(self, sweep: str) -> list[GrokRecord]:
        return [r for r in records_from_dicts(self.stored.data["runs"]) if r.sweep == sweep]

    def omega(self, progress: bool = False) -> list[GrokRecord]:
        """The ω sweep's records (stored, or trained now)."""
        start = time.perf_counter()
        self.omega_runs = self._stored("omega") if self.stored else run_omega_sweep(self.cfg, progress)
        self.omega_wall_s = time.perf_counter() - start
        return self.omega_runs

    def p(self, progress: bool = False) -> list[GrokRecord]:
        """The p sweep's records (stored, or trained now)."""
        start = time.perf_counter()
        self.p_runs = self._stored("p") if self.stored else run_p_sweep(self.cfg, progress)
        self.p_wall_s = time.perf_counter() - start
        return self.p_runs

    @property
    def runs(self) -> list[GrokRecord]:
        """All records, ω sweep first."""
        if self.omega_runs is None or self.p_runs is None:
            raise RuntimeError("run Sweeps.omega() and Sweeps.p() first")
        return self.omega_runs + self.p_runs

    def save(self) -> Path | None:
        """Store freshly trained paper-preset sweeps as the artifact; returns its manifest path (else None)."""
        if self.cfg["PRESET"] != "paper" or self.stored:
            return None
        return save_artifact(self.directory, ARTIFACT_NAME, params=artifact_key(self.cfg),
                             data={"runs": [r.to_dict() for r in self.runs]}, wall_s=self.omega_wall_s + self.p_wall_s)


# --------------------------------------------------------------------------------------------
# fits, tables, claims, results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepFits:
    """The chapter's fits (``None`` where too few uncensored runs): τ_grok ~ ω^b, τ_mem ~ ω^b,
    the log law in p and a plain power law in p."""

    omega: PowerLawFit | None
    mem: PowerLawFit | None
    p_log: LogLawFit | None
    p_pow: PowerLawFit | None


def _try(fit, *args):
    try:
        return fit(*args)
    except (ValueError, RuntimeError):
        return None


def fit_sweeps(omega_runs: Sequence[GrokRecord], p_runs: Sequence[GrokRecord]) -> SweepFits:
    """Fit the ω sweep (power law; also τ_mem) and the p sweep (log law and power law), uncensored runs only."""
    w, _, w_tau = uncensored(omega_runs, "omega")
    mem = [(r.omega, r.tau_mem) for r in omega_runs if r.tau_mem]
    _, p, p_tau = uncensored(p_runs, "p")
    return SweepFits(
        omega=_try(fit_power_law, w, w_tau),
        mem=_try(fit_power_law, [x for x, _ in mem], [t for _, t in mem]),
        p_log=_try(fit_log_law, p, p_tau),
        p_pow=_try(fit_power_law, p, p_tau),
    )


def build_claims(fits: SweepFits, p_runs: Sequence[GrokRecord], cfg: Params) -> Claims:
    """The chapter's claims; one rule relaxes them, stated in the claims' text.

    With one seed per setting (``N_SEEDS = 1``) the seed scatter dominates, so the ω exponent
    window [−1.25, −0.8] becomes "exponent < 0" and both R² thresholds fall from 0.8 to 0.6.
    A fit that could not be made fails its claims.
    """
    one_seed = cfg["N_SEEDS"] == 1
    r2_min = 0.6 if one_seed else 0.8
    r2_rule = " (0.8; 0.6 with one seed per setting)"
    claims = Claims()
    w = fits.omega
    if one_seed:
        claims.check("ω trend: τ_grok falls with ω (one seed per setting: exponent < 0 only)", "-1.02 (theory -1)",
                     w.exponent if w else "n/a", w is not None and w.exponent < 0)
    else:
        claims.check("ω exponent of τ_grok in [-1.25, -0.8] (≥ 2 seeds per setting)", "-1.02 (theory -1)",
                     w.exponent if w else "n/a", w is not None and -1.25 <= w.exponent <= -0.8)
    claims.check(f"R² of the ω power law ≥ {r2_min}{r2_rule}", "printed, value unknown", w.r2 if w else "n/a",
                 w is not None and w.r2 >= r2_min)
    sp = setting_stats(p_runs, "p", "p")
    means = sp["mean"][sp["n"] > 0]
    claims.check("τ_grok decreases with p (means over seeds)", "τ ∝ 1/p at large p", [round(m) for m in means],
                 len(means) >= 2 and bool(np.all(np.diff(means) < 0)) and fits.p_pow is not None
                 and fits.p_pow.exponent < 0)
    lf = fits.p_log
    claims.check(f"R² of −Ω·log(1 − p_crit/p) ≥ {r2_min}{r2_rule}", "printed, value unknown", lf.r2 if lf else "n/a",
                 lf is not None and lf.r2 >= r2_min)
    claims.check("log law beats a constant (AIC)", "—", f"AIC {lf.aic:.1f} vs {lf.aic_const:.1f}" if lf else "n/a",
                 lf is not None and lf.beats_constant)
    return claims


def linked_redundancy() -> str:
    """One line on chapter 3's measured redundancy, from its stored book-preset run (trains nothing)."""
    try:
        from ace_helpers.chapters.core_inflation import stored_redundancy_gap
    except ImportError:  # pragma: no cover - chapter 3's module is missing
        return "chapter 3's module (ace_helpers.chapters.core_inflation) is not available; nothing to link"
    gap = stored_redundancy_gap()
    if gap is None:
        return "chapter 3's book-preset run is not stored (book/artifacts/modadd_grokking); nothing to link"
    return (f"chapter 3 (preset {gap['preset']}, stored run): redundancy = necessary - sufficient core dim, "
            f"mean over models, at its last checkpoint (epoch {gap['epoch']}): {gap['mean_gap']:.1f}")


def results(sweeps: Sweeps, claims: Claims, wall_s: float) -> dict[str, Any]:
    """The chapter's flat ``results.json`` dict (keys in the module docstring)."""
    runs = sweeps.runs
    return analyse(runs) | {
        "runs": [r.to_dict() for r in runs],
        "eval_every": sweeps.cfg["EVAL_EVERY"],
        "from_artifact": sweeps.from_artifact,
        "omega_sweep_wall_s": sweeps.omega_wall_s,
        "p_sweep_wall_s": sweeps.p_wall_s,
        "claims_passed": sum(r.passed for r in claims.rows),
        "claims_total": len(claims.rows),
        "wall_s": wall_s,
    }
