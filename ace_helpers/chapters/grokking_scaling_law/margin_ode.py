"""Chapter 4: the theory's margin ODE dm/dt = −ω·m + c·ω·‖ψ‖², fitted to measured margins.

A few small runs of the chapter's sweep model (:func:`~.runs.sweep_config`, the ensemble trainer) record,
every ``eval_every`` steps:

* the **test margin** m(t): the mean over the held-out pairs of (true logit − best other logit);
* a **‖ψ‖² proxy**: the power of the logits' component that depends on (a + b − c) mod p only — the part of
  the logit table the Fourier algorithm produces (Σ_k A_k·cos(2πk(a + b − c)/p) is such a function) — as
  the mean square over d of g(d) − ḡ, where g(d) is the mean logit of class c over all p² pairs (a, b) with
  a + b − c ≡ d (:func:`harmonic_power`).

:func:`fit_margin_ode` fits dm/dt = −ω̂·m + b·‖ψ‖² by least squares (no intercept) on central finite
differences from memorisation (τ_mem) on, time t = lr·step (AdamW's decoupled decay shrinks every weight
by lr·ω per step, so in these units the weights decay at rate ω); ĉ = b/ω̂.  The fitted ω̂ is compared with
the run's weight decay.  What this can show: whether the margin's measured dynamics have the ODE's linear
form with a decay rate set by the weight decay.  What it cannot: the ODE's derivation, or that the proxy is
the paper's ψ (its definition was not retrievable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ace_helpers.chapters.grokking_scaling_law.runs import ACC_THRESHOLD, sweep_config
from ace_helpers.method.checks import check_prime
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.tasks.modadd import modadd_dataset

#: The runs (ours; ci-sized, about a minute on one CPU thread): the ω sweep's p, split and batch at the ci
#: preset, two weight decays a factor 3 apart, two seeds each, stopped STOP steps after grokking.
P, OMEGAS, SEEDS, TRAIN_FRACTION, BATCH, LR = 53, (1.0, 3.0), (42, 43), 0.7, 512, 1e-3
MAX_STEPS, EVAL_EVERY, STOP = 2500, 10, 300


@dataclass(frozen=True)
class MarginTrace:
    """One run's record: ``steps`` (E,), ``margin`` (E,) mean test margin, ``psi2`` (E,) the ‖ψ‖² proxy,
    ``train_acc``, ``test_acc`` (E,); ``omega``, ``seed``, ``lr``; ``tau_mem`` (first step with train
    accuracy ≥ 0.99, ``None`` if never)."""

    omega: float
    seed: int
    lr: float
    steps: np.ndarray
    margin: np.ndarray
    psi2: np.ndarray
    train_acc: np.ndarray
    test_acc: np.ndarray
    tau_mem: int | None


def harmonic_power(logits: torch.Tensor, a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    """Power of the (a + b − c)-only component of logit tables, per member.

    Args:
        logits: (M, p², p) logits of M members on every pair (a, b) (each pair once).
        a, b: (p²,) long operands of the pairs.  p: the modulus.

    Returns:
        (M,) mean over d of (g(d) − ḡ)², g(d) the mean of logits[·, (a, b), c] over a + b − c ≡ d (mod p).
    """
    if logits.ndim != 3 or logits.shape[1:] != (p * p, p) or a.shape != (p * p,) or b.shape != (p * p,):
        raise ValueError(f"need logits (M, p², p) and a, b (p²,) with p = {p}; got {tuple(logits.shape)}, {tuple(a.shape)}")
    c = torch.arange(p)
    d = ((a + b)[:, None] - c[None, :]) % p  # (p², p)
    g = torch.zeros(logits.shape[0], p, dtype=torch.float64)
    g.index_add_(1, d.reshape(-1), logits.reshape(logits.shape[0], -1).double())
    g /= p * p  # every d is hit by p² of the p³ (pair, class) entries
    return ((g - g.mean(1, keepdim=True)) ** 2).mean(1)


def mean_margin(logits: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """(M,) mean over pairs of true logit − best other logit; ``logits`` (M, N, p), ``answers`` (N,)."""
    true = logits.gather(2, answers[None, :, None].expand(logits.shape[0], -1, 1)).squeeze(2)
    other = logits.scatter(2, answers[None, :, None].expand(logits.shape[0], -1, 1), float("-inf")).amax(2)
    return (true - other).mean(1)


def trace_margins(
    p: int = P,
    omegas: Sequence[float] = OMEGAS,
    seeds: Sequence[int] = SEEDS,
    *,
    train_fraction: float = TRAIN_FRACTION,
    batch_size: int = BATCH,
    lr: float = LR,
    max_steps: int = MAX_STEPS,
    eval_every: int = EVAL_EVERY,
    stop: int = STOP,
    device: str | torch.device = "cpu",
) -> list[MarginTrace]:
    """Train every (ω, seed) as one ensemble of the sweep model (on ``device``) and record m(t) and the ‖ψ‖² proxy
    (from the logits, brought to the CPU at each evaluation).

    A member leaves ``stop`` steps after its test accuracy reaches 0.99.  Returns one trace per (ω, seed), ω-major.
    """
    check_prime("p", p, low=5)
    data = modadd_dataset(p, train_fraction, 42)
    pairs = torch.cat([data.train_inputs, data.test_inputs])
    order = torch.argsort(pairs[:, 0] * p + pairs[:, 1])  # every pair once, in (a, b) order
    pairs, n_train = pairs[order], data.train_inputs.shape[0]
    is_test = (order >= n_train).numpy()
    answers = (pairs[:, 0] + pairs[:, 1]) % p
    members = [(float(w), int(s)) for w in omegas for s in seeds]
    rec: dict[int, list[tuple[float, ...]]] = {m: [] for m in range(len(members))}
    grokked: dict[int, int] = {}

    @torch.no_grad()
    def evaluate(step: int, ensemble, ids: np.ndarray) -> np.ndarray:
        logits = ensemble(pairs.to(ensemble.tok_emb.device), last_only=True).float().cpu()  # (A, p², p)
        ok = (logits.argmax(-1) == answers).double().numpy()
        margin = mean_margin(logits[:, torch.from_numpy(is_test)], answers[torch.from_numpy(is_test)]).numpy()
        psi2 = harmonic_power(logits, pairs[:, 0], pairs[:, 1], p).numpy()
        done = np.zeros(len(ids), dtype=bool)
        for j, m in enumerate(ids):
            train, test = ok[j, ~is_test].mean(), ok[j, is_test].mean()
            rec[int(m)].append((step, margin[j], psi2[j], train, test))
            if test >= ACC_THRESHOLD:
                grokked.setdefault(int(m), step)
            done[j] = int(m) in grokked and step >= grokked[int(m)] + stop
        return done

    train_ensemble(
        sweep_config(p),
        data.train_inputs,
        data.train_targets,
        seeds=[s for _, s in members],
        weight_decays=[w for w, _ in members],
        batch_size=batch_size,
        lr=lr,
        max_steps=max_steps,
        eval_every=eval_every,
        evaluate=evaluate,
        progress=False,
        desc="margin ODE",
        device=device,
    )
    out = []
    for m, (w, s) in enumerate(members):
        h = np.asarray(rec[m], float).reshape(-1, 5)
        mem = np.flatnonzero(h[:, 3] >= ACC_THRESHOLD)
        out.append(
            MarginTrace(
                w, s, lr, h[:, 0].astype(np.int64), h[:, 1], h[:, 2], h[:, 3], h[:, 4], int(h[mem[0], 0]) if len(mem) else None
            )
        )
    return out


@dataclass(frozen=True)
class OdeFit:
    """dm/dt = −omega_fit·m + b·‖ψ‖² fitted on one trace (t = lr·step): ``omega_fit`` (ω̂), ``c`` (= b/ω̂;
    NaN when ω̂ ≤ 0), ``r2`` of dm/dt, ``n`` points, ``omega`` the run's weight decay, ``seed``."""

    omega: float
    seed: int
    omega_fit: float
    c: float
    r2: float
    n: int

    @property
    def log2_ratio(self) -> float:
        """``|log₂(ω̂/ω)|``, capped at :data:`NO_DECAY` (also its value when ω̂ ≤ 0: no decay at all)."""
        return min(abs(float(np.log2(self.omega_fit / self.omega))), NO_DECAY) if self.omega_fit > 0 else NO_DECAY


#: The value of :attr:`OdeFit.log2_ratio` for ω̂ ≤ 0, and its cap (a factor 2¹⁰ off).
NO_DECAY = 10.0


def fit_margin_ode(trace: MarginTrace) -> OdeFit:
    """Least squares of dm/dt (central differences, t = lr·step) on [−m, ‖ψ‖²] from τ_mem on.

    Raises:
        ValueError: the run never memorised, or fewer than 5 evaluations from τ_mem on.
    """
    if trace.tau_mem is None:
        raise ValueError(f"run ω={trace.omega}, seed={trace.seed} never memorised: no post-memorisation window")
    keep = trace.steps >= trace.tau_mem
    t, m, psi2 = trace.lr * trace.steps[keep].astype(float), trace.margin[keep], trace.psi2[keep]
    if len(t) < 5:
        raise ValueError(f"run ω={trace.omega}, seed={trace.seed}: {len(t)} evaluations after τ_mem, need >= 5")
    dm = np.gradient(m, t)
    x = np.stack([-m, psi2], axis=1)
    (w_fit, b), *_ = np.linalg.lstsq(x, dm, rcond=None)
    resid = dm - x @ np.array([w_fit, b])
    r2 = 1.0 - float(resid @ resid) / float(((dm - dm.mean()) ** 2).sum())
    return OdeFit(trace.omega, trace.seed, float(w_fit), float(b / w_fit) if w_fit > 0 else float("nan"), r2, len(t))
