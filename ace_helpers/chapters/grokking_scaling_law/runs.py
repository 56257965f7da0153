"""Chapter 4 runs: grokking times of one run, the vectorised sweeps, and per-setting statistics.

* :func:`grok_times` — τ_mem, τ_grok and censoring from an accuracy history;
* :func:`run_grok_sweep` — trains every (ω, seed) of one modulus p as one vectorised ensemble
  (:mod:`ace_helpers.toys.ensemble`) and returns one :class:`GrokRecord` per run;
* :func:`run_omega_sweep`, :func:`run_p_sweep` — the chapter's two sweeps under resolved knobs;
* :func:`uncensored`, :func:`setting_stats` — what the fits and tables read.

Definitions (in optimizer steps, accuracies in eval mode on the last token):
``tau_mem`` = first evaluated step with train accuracy ≥ 0.99; ``tau_test`` = first evaluated
step with test accuracy ≥ 0.99; ``tau_grok = tau_test − tau_mem``.  With an evaluation every
``EVAL_EVERY`` steps each first-crossing step is known to within ``EVAL_EVERY`` (it lies in
``(s − EVAL_EVERY, s]``), so τ_grok is resolved to ± ``EVAL_EVERY``.  A run that has not grokked
at ``MAX_STEPS`` is *censored*: its ``tau_grok`` is the lower bound ``MAX_STEPS − tau_mem``
(``None`` if it never memorised) and it is reported, not dropped; fits use uncensored runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ace_helpers.method.checks import check_choice, check_prime
from ace_helpers.method.devices import resolve_device
from ace_helpers.repro.params import Params
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.models import ToyConfig
from ace_helpers.toys.tasks.modadd import modadd_dataset

ACC_THRESHOLD = 0.99

#: First seed of every setting at every preset (the ``SEED`` knob; the paper uses seeds 42..53).
SEED0 = 42


def sweep_config(p: int) -> ToyConfig:
    """The paper's one-layer sweep model for modulus ``p`` (d_model 128, 4 heads, d_ff 512, dropout 0.1)."""
    return ToyConfig(vocab=p, d_model=128, n_layers=1, n_heads=4, d_ff=512, max_len=2, dropout=0.1)


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
        raise ValueError(
            f"steps, train_acc, test_acc must be 1-D of one length, got {steps.shape}, {train_acc.shape}, {test_acc.shape}"
        )
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
    precision: str = "fp32",
    device: str | torch.device = "cpu",
) -> list[GrokRecord]:
    """Train every (ω, seed) pair for modulus ``p`` as one ensemble and time its grokking.

    Args:
        p: prime modulus.  omegas: AdamW weight decays.  seeds: model/data-order seeds
            (the same seeds for every ω, so ω is compared on common random numbers).
        batch_size: mini-batch size; ``None`` = full batch (one step per epoch).
        max_steps: step cap (censoring).  eval_every: steps between evaluations.
        train_fraction, split_seed: the ``modadd_dataset`` split.
        stop_margin: steps a run keeps training after it grokked.
        precision: ``"fp32"`` (reference kernels) or ``"bf16"`` (bf16 autocast and the fast kernels).
        device: where the ensemble trains and is evaluated (the accuracies come back once per evaluation).

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
        precision=precision,
        fast=precision == "bf16",
        device=device,
    )
    records = []
    for m, (w, s) in enumerate(members):
        h = np.asarray(history[m], dtype=float).reshape(-1, 3)
        t = grok_times(h[:, 0].astype(np.int64), h[:, 1], h[:, 2])
        records.append(GrokRecord(sweep, w, p, s, t.tau_mem, t.tau_test, t.tau_grok, t.censored, int(run.steps[m])))
    return records


@torch.no_grad()
def _correct(ensemble, inputs: torch.Tensor, answers: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """(M, N) bool on the CPU: member m's argmax on input n is right (last position, eval mode; computed on the
    ensemble's device)."""
    device = ensemble.tok_emb.device
    inputs, answers = inputs.to(device), answers.to(device)
    out = []
    for start in range(0, inputs.shape[0], chunk):
        logits = ensemble(inputs[start : start + chunk], last_only=True)
        out.append(logits.argmax(-1) == answers[start : start + chunk])
    return torch.cat(out, dim=1).cpu()


def uncensored(
    records: Sequence[GrokRecord], sweep: str | None = None, omega: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(omega, p, tau_grok) float arrays of the uncensored runs with τ_grok > 0 (of one sweep, at one ω).

    Runs with τ_grok = 0 (memorised and generalised within one evaluation interval) cannot be
    placed on log axes; callers report how many were left out.
    """
    rows = [
        r
        for r in records
        if (sweep is None or r.sweep == sweep) and (omega is None or r.omega == omega) and not r.censored and r.tau_grok
    ]
    if not rows:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return (
        np.array([r.omega for r in rows], float),
        np.array([r.p for r in rows], float),
        np.array([r.tau_grok for r in rows], float),
    )


def setting_stats(records: Sequence[GrokRecord], key: str, sweep: str, omega: float | None = None) -> dict[str, np.ndarray]:
    """Per-setting mean and sd of τ_grok over uncensored runs (of the runs at weight decay ``omega``, if given).

    Args:
        key: ``"omega"`` or ``"p"`` (the swept variable).

    Returns:
        ``{"x", "mean", "sd", "n", "n_censored"}``, arrays over the sorted settings.
    """
    check_choice("key", key, ("omega", "p"))
    records = [r for r in records if r.sweep == sweep and (omega is None or r.omega == omega)]
    xs = sorted({getattr(r, key) for r in records})
    out = {k: [] for k in ("x", "mean", "sd", "n", "n_censored")}
    for x in xs:
        rows = [r for r in records if getattr(r, key) == x]
        taus = np.array([r.tau_grok for r in rows if not r.censored and r.tau_grok is not None], float)
        out["x"].append(x)
        out["mean"].append(taus.mean() if len(taus) else np.nan)
        out["sd"].append(taus.std(ddof=1) if len(taus) > 1 else np.nan)
        out["n"].append(len(taus))
        out["n_censored"].append(sum(r.censored for r in rows))
    return {k: np.asarray(v, float) for k, v in out.items()}


def run_omega_sweep(params: Params, progress: bool = False) -> list[GrokRecord]:
    """The ω sweep of resolved ``params``: all ω × seeds at p = ``P_OMEGA`` as one ensemble."""
    seeds = [params["SEED"] + i for i in range(params["N_SEEDS"])]
    return run_grok_sweep(
        params["P_OMEGA"],
        params["OMEGAS"],
        seeds,
        batch_size=params["BATCH_SIZE_OMEGA"],
        max_steps=params["MAX_STEPS"],
        eval_every=params["EVAL_EVERY"],
        train_fraction=params["TRAIN_FRACTION"],
        stop_margin=params["STOP_MARGIN"],
        lr=params["LR"],
        sweep="omega",
        progress=progress,
        precision=params["PRECISION"],
        device=resolve_device(params["DEVICE"]),
    )


def p_sweep_omegas(params: Params) -> list[float]:
    """The weight decays of the p sweep: ``OMEGA_P`` first, then ``EXTRA_OMEGAS_P``."""
    return [params["OMEGA_P"], *params["EXTRA_OMEGAS_P"]]


def run_p_sweep(params: Params, progress: bool = False) -> list[GrokRecord]:
    """The p sweep of resolved ``params``: every ω of :func:`p_sweep_omegas`, full batch, one ensemble per p."""
    seeds = [params["SEED"] + i for i in range(params["N_SEEDS"])]
    out: list[GrokRecord] = []
    for p in params["PRIMES"]:
        out += run_grok_sweep(
            p,
            p_sweep_omegas(params),
            seeds,
            batch_size=None,
            max_steps=params["MAX_STEPS"],
            eval_every=params["EVAL_EVERY"],
            train_fraction=params["TRAIN_FRACTION_P"],
            stop_margin=params["STOP_MARGIN"],
            lr=params["LR"],
            sweep="p",
            progress=progress,
            precision=params["PRECISION"],
            device=resolve_device(params["DEVICE"]),
        )
    return out


def records_from_dicts(rows: Sequence[dict]) -> list[GrokRecord]:
    """Inverse of :meth:`GrokRecord.to_dict` (for stored artifacts)."""
    return [GrokRecord(**row) for row in rows]
