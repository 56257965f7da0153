"""Whole training runs of a :class:`~ace_helpers.toys.ensemble.ToyEnsemble` in one call.

:func:`train_ensemble` is one training loop for many members, with the loss at the last position
(modular addition) or at every position (a language model, e.g. a Markov chain); members leave
the ensemble when the caller's ``evaluate`` callback says they are done (e.g. grokked), so the
remaining ones run faster.  :func:`train_seeds` trains one language model per seed, as an
ensemble or one by one for comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from ace_helpers.toys.ensemble import DROPOUT_SEED_OFFSET, ToyEnsemble
from ace_helpers.toys.ensemble_optim import EnsembleAdamW
from ace_helpers.toys.models import ToyConfig, ToyTransformer, build_model
from ace_helpers.toys.precision import autocast, check_precision
from ace_helpers.toys.train import train_lm


@dataclass
class EnsembleRun:
    """What :func:`train_ensemble` did for each member (in the original member order).

    Attributes:
        steps: (M,) optimizer steps each member was trained for.
        models: the members' final weights as plain ToyTransformers (if ``keep_models``).
        loss: per member, the mean training loss of every completed epoch (if ``track_loss``).
    """

    steps: np.ndarray
    models: list[ToyTransformer] = field(default_factory=list)
    loss: list[list[float]] = field(default_factory=list)


def train_ensemble(
    config: ToyConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    seeds: Sequence[int],
    weight_decays: Sequence[float],
    batch_size: int,
    lr: float,
    max_steps: int,
    eval_every: int,
    evaluate: Callable[[int, ToyEnsemble, np.ndarray], np.ndarray] | None = None,
    keep_models: bool = False,
    progress: bool = True,
    desc: str = "ensemble",
    loss_positions: str = "last",
    track_loss: bool = False,
    precision: str = "fp32",
    fast: bool = False,
    constrain: Callable[[ToyEnsemble, np.ndarray], None] | None = None,
    device: str | torch.device = "cpu",
) -> EnsembleRun:
    """Train ``len(seeds)`` ToyTransformers together (cross-entropy at the last or at every position).

    Member ``m`` is initialised as ``build_model(config, seeds[m])``, draws its shuffled
    mini-batches from ``torch.Generator().manual_seed(seeds[m])`` (as
    :func:`ace_helpers.toys.train.train_lm` does) and its dropout masks from a generator seeded
    ``seeds[m] + 1_000_003``; it decays with ``weight_decays[m]`` (AdamW, ``lr`` shared).

    Args:
        inputs, targets: (N, T) long training data shared by all members (targets' last column
            is the label).
        batch_size: mini-batch size (``>= N``: full batch, one step per epoch).
        max_steps: step cap for every member.
        eval_every: ``evaluate`` is called after every ``eval_every`` optimizer steps.
        evaluate: ``evaluate(step, ensemble, member_ids) -> done`` with ``member_ids`` (A,)
            the original indices of the members still training and ``done`` (A,) bool:
            members marked done leave the ensemble.  The ensemble is in eval mode during
            the call.
        keep_models: return every member's final weights.
        progress: show a tqdm bar (steps of the longest-running member).
        loss_positions: ``"last"``: the loss is the cross-entropy of the last position (the
            label ``targets[:, -1]``), as for modular addition; the forward pass computes only
            that position.  ``"all"``: every member's loss is its own mean cross-entropy over
            every position of its batch (a language-model loss, as for the Markov chains).
            Either way the summed loss of the members is minimised, so the members'
            gradients do not mix.
        track_loss: record each member's mean training loss per completed epoch
            (``EnsembleRun.loss``); always on for ``loss_positions="all"``, where it is free.
        precision: ``"fp32"`` or ``"bf16"`` (the forward pass under bf16 autocast, see
            :mod:`ace_helpers.toys.precision`; weights, optimizer state and loss stay fp32).
        fast: the fast kernels (see :meth:`ToyEnsemble.forward`): same maths, other rounding
            and another dropout random stream than the reference kernels.
        constrain: ``constrain(ensemble, member_ids)`` (``member_ids`` as for ``evaluate``),
            called without gradients once before the first step and after every optimizer step:
            projected training (e.g. confine each member's embedding to a subspace, edited in
            place on the stacked weights).
        device: where the ensemble, its optimizer state, the data and the per-member generators live
            (default the CPU; members are initialised on the CPU, as ``build_model`` does, then moved).
            ``evaluate`` and ``constrain`` get the ensemble on that device; kept models come back on the CPU.

    Returns:
        :class:`EnsembleRun`.
    """
    from tqdm.std import tqdm  # load time (tqdm.std: a plain text bar: no ipywidgets needed in notebooks)

    check_precision("precision", precision)
    seeds = [int(s) for s in seeds]
    wds = [float(w) for w in weight_decays]
    if len(seeds) == 0 or len(seeds) != len(wds):
        raise ValueError(f"seeds and weight_decays must be non-empty and of equal length, got {len(seeds)} and {len(wds)}")
    if inputs.dim() != 2 or inputs.shape != targets.shape:
        raise ValueError(f"inputs and targets must both be (N, T); got {tuple(inputs.shape)} and {tuple(targets.shape)}")
    for name, value in (("batch_size", batch_size), ("max_steps", max_steps), ("eval_every", eval_every)):
        if int(value) < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if loss_positions not in ("last", "all"):
        raise ValueError(f"loss_positions must be 'last' or 'all', got {loss_positions!r}")
    all_positions = loss_positions == "all"
    track_loss = track_loss or all_positions
    n = inputs.shape[0]
    batch_size = min(int(batch_size), n)
    device = torch.device(device)
    inputs, targets = inputs.to(device), targets.to(device)
    ensemble = ToyEnsemble.from_seeds(config, seeds).to(device).train()
    opt = EnsembleAdamW(list(ensemble.parameters()), lr=lr, weight_decay=wds)
    data_gens = [torch.Generator(device).manual_seed(s) for s in seeds]
    drop_gens = [torch.Generator(device).manual_seed(s + DROPOUT_SEED_OFFSET) for s in seeds]
    active = np.arange(len(seeds))
    steps = np.zeros(len(seeds), dtype=np.int64)
    finals: dict[int, ToyTransformer] = {}
    labels = targets[:, -1]
    losses: list[list[float]] = [[] for _ in seeds]
    epoch_total = torch.zeros(len(seeds), dtype=torch.float64, device=device)  # summed batch losses x batch sizes
    order = None
    pos = n  # position in the current epoch's permutation (n: start a new epoch)
    bar = tqdm(total=max_steps, desc=desc, disable=not progress, mininterval=10.0)
    step = 0
    if constrain is not None:
        with torch.no_grad():
            constrain(ensemble, active.copy())
    while step < max_steps and len(active):
        if pos >= n:
            order = torch.stack([torch.randperm(n, generator=data_gens[m], device=device) for m in active])
            pos = 0
        idx = order[:, pos : pos + batch_size]  # (A, b)
        pos += batch_size
        gens = [drop_gens[m] for m in active]
        if all_positions:
            with autocast(precision, device.type):
                logits = ensemble(inputs[idx], generators=gens, fast=fast).float()  # (A, b, T, V)
            A, b = idx.shape
            per_token = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[idx].reshape(-1), reduction="none")
            member_loss = per_token.view(A, -1).mean(dim=1)  # (A,) each member's own mean
            loss = member_loss.sum()
        else:
            with autocast(precision, device.type):
                logits = ensemble(inputs[idx], last_only=True, generators=gens, fast=fast).float()
            A, b, V = logits.shape
            loss = F.cross_entropy(logits.reshape(A * b, V), labels[idx].reshape(-1), reduction="sum") / b
            if track_loss:
                with torch.no_grad():
                    flat = F.cross_entropy(logits.detach().reshape(A * b, V), labels[idx].reshape(-1), reduction="none")
                    member_loss = flat.view(A, b).mean(dim=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if constrain is not None:
            with torch.no_grad():
                constrain(ensemble, active.copy())
        if track_loss:
            epoch_total[torch.as_tensor(active, device=device)] += member_loss.detach().double() * b
            if pos >= n:  # the epoch is complete: its losses come back to the host once
                totals = (epoch_total / n).cpu().tolist()
                for m in active:
                    losses[int(m)].append(totals[int(m)])
                epoch_total.zero_()
        step += 1
        steps[active] = step
        bar.update(1)
        if step % eval_every == 0 or step == max_steps:
            done = np.zeros(len(active), dtype=bool)
            if evaluate is not None:
                ensemble.eval()
                done = np.asarray(evaluate(step, ensemble, active.copy()), dtype=bool)
                ensemble.train()
            if step == max_steps:
                done[:] = True
            if done.any():
                if keep_models:
                    for j in np.flatnonzero(done):
                        finals[int(active[j])] = ensemble.member(int(j))
                keep = np.flatnonzero(~done)
                active = active[keep]
                if len(active):
                    ensemble.select(keep)
                    opt.select(keep, list(ensemble.parameters()))
                    order = order[torch.as_tensor(keep, device=device)]
                bar.set_postfix(active=len(active))
    bar.close()
    models = [finals[m] for m in range(len(seeds))] if keep_models else []
    return EnsembleRun(steps=steps, models=models, loss=losses if track_loss else [])


@dataclass
class TrainResult:
    """Trained models (eval mode) and each one's per-epoch mean training loss."""

    models: list[ToyTransformer]
    loss: list[list[float]]
    seconds: float
    cpu_seconds: float = 0.0  # CPU time of this process (what training costs on a shared machine)


def train_seeds(
    config: ToyConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    seeds: Sequence[int],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    method: str = "ensemble",
    precision: str = "fp32",
    device: str | torch.device = "cpu",
) -> TrainResult:
    """Train one language model per seed (AdamW, no weight decay, cross-entropy on every position).

    ``method="ensemble"`` trains all seeds as one :class:`ToyEnsemble` with :func:`train_ensemble`
    (``loss_positions="all"``): member ``m`` starts as ``build_model(config, seeds[m])``, shuffles
    with ``torch.Generator().manual_seed(seeds[m])`` and draws dropout masks from a generator
    seeded ``seeds[m] + 1_000_003``, so its run does not depend on the other members.
    ``method="ensemble1"`` runs the same code one seed at a time (identical numbers, for the
    benchmark); ``method="sequential"`` is the plain :func:`ace_helpers.toys.train.train_lm` loop on
    ``nn.Module`` s (dropout from torch's global RNG seeded with ``seed + 1_000_003``).
    ``precision="bf16"`` (ensemble methods only) trains under bf16 autocast with the fast
    kernels (``fast=True`` of :func:`train_ensemble`); ``"fp32"`` runs the reference kernels.
    ``device``: where training runs (the ``sequential`` method keeps torch's global CPU RNG for dropout, so it
    trains on the CPU only); the models come back on the CPU.

    Returns:
        :class:`TrainResult` with plain :class:`ToyTransformer` s in eval mode.
    """

    if method not in ("ensemble", "ensemble1", "sequential"):
        raise ValueError(f"method must be one of ['ensemble', 'ensemble1', 'sequential'], got {method!r}")
    if method == "sequential" and precision != "fp32":
        raise ValueError(f"precision={precision!r} needs an ensemble method; method='sequential' trains in fp32 only")
    if method == "sequential" and torch.device(device).type != "cpu":
        raise ValueError(f"device={str(device)!r} needs an ensemble method; method='sequential' trains on the CPU only")
    seeds = [int(s) for s in seeds]
    start, start_cpu = time.perf_counter(), time.process_time()
    models: list[ToyTransformer] = []
    losses: list[list[float]] = []
    if method == "sequential":
        for s in seeds:
            model = build_model(config, s)
            state = torch.random.get_rng_state()
            torch.manual_seed(s + DROPOUT_SEED_OFFSET)
            try:
                log = train_lm(model, inputs, targets, epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=0.0, seed=s)
            finally:
                torch.random.set_rng_state(state)
            models.append(model.eval())
            losses.append(log.loss)
        return TrainResult(models, losses, time.perf_counter() - start, time.process_time() - start_cpu)
    steps_per_epoch = -(-inputs.shape[0] // min(int(batch_size), inputs.shape[0]))
    for group in ([s] for s in seeds) if method == "ensemble1" else [seeds]:
        run = train_ensemble(
            config,
            inputs,
            targets,
            seeds=group,
            weight_decays=[0.0] * len(group),
            batch_size=batch_size,
            lr=lr,
            max_steps=int(epochs) * steps_per_epoch,
            eval_every=int(epochs) * steps_per_epoch,
            keep_models=True,
            progress=False,
            loss_positions="all",
            precision=precision,
            fast=precision == "bf16",
            device=device,
        )
        models += run.models
        losses += run.loss
    return TrainResult(models, losses, time.perf_counter() - start, time.process_time() - start_cpu)
