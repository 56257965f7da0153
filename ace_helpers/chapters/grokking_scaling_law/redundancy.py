"""Chapter 4: does functional redundancy speed grokking up?  An intervention at a fixed modulus.

The sweeps vary p, which changes the number of equivalent Fourier modes (⌊p/2⌋ frequencies) together with
the data per answer class and the vocabulary.  Here p, data and weight decay stay fixed and only the number
of equivalent modes the model can use changes: every member's token embedding is confined, by projected
training (:func:`~ace_helpers.toys.ensemble_runs.train_ensemble`'s ``constrain``), to the constant plus the
cosines and sines of ``k`` frequencies (drawn per seed), for several ``k``; ``k = ⌊p/2⌋`` is the unconstrained
model (the span is the whole token space).  If redundancy is what speeds grokking up, τ_grok falls as ``k``
grows: the slope of log τ_grok on log k is negative.

What this can show: whether, at one p and one data split, fewer usable equivalent modes slow grokking.
What it cannot: that redundancy is what makes τ fall with p in the sweeps (p changes more than the modes),
nor separate "fewer equivalent modes" from "a lower-rank embedding" (confining to k frequencies does both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ace_helpers.chapters.grokking_scaling_law.intervals import log_slopes, seed_bootstrap
from ace_helpers.chapters.grokking_scaling_law.runs import ACC_THRESHOLD, grok_times, sweep_config
from ace_helpers.method.checks import check_prime
from ace_helpers.toys.ensemble import ToyEnsemble
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.tasks.modadd import modadd_dataset

#: The runs (ours; a few CPU-minutes on one thread): the margin-ODE model and split (p = 53, train fraction
#: 0.7), ω = 1, frequencies allowed per member KS (26 = ⌊53/2⌋: unconstrained), four seeds each.
P, OMEGA, KS, SEEDS, TRAIN_FRACTION, BATCH, LR = 53, 1.0, (2, 6, 26), (42, 43, 44, 45), 0.7, 512, 1e-3
MAX_STEPS, EVAL_EVERY = 4000, 10


def fourier_projector(p: int, freqs: Sequence[int]) -> torch.Tensor:
    """(p, p) orthogonal projector onto the constant and cos/sin(2π·f·t/p), f in ``freqs`` (1 ≤ f ≤ ⌊p/2⌋)."""
    check_prime("p", p, low=5)
    freqs = sorted({int(f) for f in freqs})
    if not freqs or freqs[0] < 1 or freqs[-1] > p // 2:
        raise ValueError(f"freqs must be a non-empty set in [1, {p // 2}] for p = {p}, got {list(freqs)}")
    t = torch.arange(p, dtype=torch.float64)
    cols = [torch.ones(p, dtype=torch.float64)]
    for f in freqs:
        cols += [torch.cos(2 * torch.pi * f * t / p), torch.sin(2 * torch.pi * f * t / p)]
    q, _ = np.linalg.qr(torch.stack(cols, 1).numpy())  # numpy's LAPACK: the same bits on every x86-64 CPU
    return torch.from_numpy(q @ q.T)


def draw_freqs(p: int, k: int, seed: int) -> list[int]:
    """``k`` distinct frequencies in [1, ⌊p/2⌋], drawn from ``seed`` (all of them when k = ⌊p/2⌋)."""
    if not 1 <= k <= p // 2:
        raise ValueError(f"k must be in [1, {p // 2}] for p = {p}, got {k}")
    g = torch.Generator().manual_seed(int(seed) + 7_919 * k)
    return sorted((torch.randperm(p // 2, generator=g)[:k] + 1).tolist())


@dataclass(frozen=True)
class RedundancyRun:
    """One member: ``k`` frequencies allowed (``freqs``), ``seed``, its grokking times (steps; τ_grok a lower
    bound when ``censored``), ``steps_trained``."""

    k: int
    seed: int
    freqs: tuple[int, ...]
    tau_mem: int | None
    tau_test: int | None
    tau_grok: int | None
    censored: bool
    steps_trained: int

    def to_dict(self) -> dict:
        """Plain dict (``results.json``)."""
        return {**asdict(self), "freqs": list(self.freqs)}


def redundancy_runs(
    p: int = P,
    ks: Sequence[int] = KS,
    seeds: Sequence[int] = SEEDS,
    *,
    omega: float = OMEGA,
    train_fraction: float = TRAIN_FRACTION,
    batch_size: int = BATCH,
    lr: float = LR,
    max_steps: int = MAX_STEPS,
    eval_every: int = EVAL_EVERY,
    device: str | torch.device = "cpu",
) -> list[RedundancyRun]:
    """Train every (k, seed) as one ensemble of the sweep model (on ``device``), each member's embedding confined to
    its ``k`` frequencies, until it groks (test accuracy ≥ 0.99) or ``max_steps``.  Returns one run per (k, seed),
    k-major."""
    device = torch.device(device)
    check_prime("p", p, low=5)
    data = modadd_dataset(p, train_fraction, 42)
    members = [(int(k), int(s), draw_freqs(p, int(k), int(s))) for k in ks for s in seeds]
    proj = torch.stack([fourier_projector(p, f).float() for _, _, f in members]).to(device)  # (M, p, p)
    hist: dict[int, list[tuple[int, float, float]]] = {m: [] for m in range(len(members))}
    test_in, test_y = data.test_inputs.to(device), data.test_targets[:, -1].to(device)
    train_in, train_y = data.train_inputs.to(device), data.train_targets[:, -1].to(device)

    def constrain(ensemble: ToyEnsemble, ids: np.ndarray) -> None:
        emb = ensemble.tok_emb  # (A, p, D)
        emb.copy_(torch.bmm(proj[torch.as_tensor(ids, device=device)], emb))

    @torch.no_grad()
    def evaluate(step: int, ensemble: ToyEnsemble, ids: np.ndarray) -> np.ndarray:
        a = len(ids)
        train = (ensemble(train_in.expand(a, -1, -1), last_only=True).argmax(-1) == train_y).double().mean(1).cpu()
        test = (ensemble(test_in.expand(a, -1, -1), last_only=True).argmax(-1) == test_y).double().mean(1).cpu()
        for j, m in enumerate(ids):
            hist[int(m)].append((step, float(train[j]), float(test[j])))
        return test.numpy() >= ACC_THRESHOLD

    train_ensemble(
        sweep_config(p),
        data.train_inputs,
        data.train_targets,
        seeds=[s for _, s, _ in members],
        weight_decays=[omega] * len(members),
        batch_size=batch_size,
        lr=lr,
        max_steps=max_steps,
        eval_every=eval_every,
        evaluate=evaluate,
        constrain=constrain,
        progress=False,
        desc="redundancy",
        device=device,
    )
    out = []
    for m, (k, s, f) in enumerate(members):
        steps, train, test = (np.asarray(c) for c in zip(*hist[m]))
        t = grok_times(steps, train, test)
        out.append(RedundancyRun(k, s, tuple(f), t.tau_mem, t.tau_test, t.tau_grok, t.censored, int(steps[-1])))
    return out


@dataclass(frozen=True)
class RedundancySlope:
    """log τ_grok on log k over the runs: ``slope`` and its seed-bootstrap ``interval``; ``means`` (per k the mean
    τ_grok), ``n_censored`` (runs whose τ_grok is a lower bound, used as such)."""

    ks: tuple[int, ...]
    means: tuple[float, ...]
    slope: float
    interval: tuple[float, float]
    n_censored: int


def redundancy_slope(runs: Sequence[RedundancyRun]) -> RedundancySlope:
    """The slope of log τ_grok on log k (OLS), with its percentile bootstrap over the seeds within each k.

    Censored runs enter with their lower bound (which can only flatten a negative slope: conservative for
    the claim).  Raises ``ValueError`` when fewer than two k or a run that never memorised (no τ_grok)."""
    ks = np.array([r.k for r in runs], float)
    if len(np.unique(ks)) < 2:
        raise ValueError(f"need runs at two or more k, got k = {sorted(set(ks.tolist()))}")
    if any(r.tau_grok is None for r in runs):
        raise ValueError("a run never memorised: it has no grokking time (raise max_steps)")
    tau = np.array([max(r.tau_grok, 1) for r in runs], float)  # τ_grok = 0 (grokked between evaluations) as 1 step
    slope = float(log_slopes(ks, tau[None, :])[0])
    uniq = sorted({int(k) for k in ks})
    means = tuple(float(tau[ks == k].mean()) for k in uniq)
    return RedundancySlope(tuple(uniq), means, slope, seed_bootstrap(ks, tau, log_slopes), sum(r.censored for r in runs))
