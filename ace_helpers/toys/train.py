"""Training loops for the toy transformers (one model at a time).

``train_lm`` is the loop used by the Markov and modular-addition chapters: AdamW, shuffled
mini-batches drawn from a seeded generator, cross-entropy on every position or on the last
one only, an optional callback after each epoch (checkpoint analyses hook in there).
Vectorised training of many seeds at once lives in ``ace_helpers.toys.ensemble``.
:func:`state_arrays` / :func:`load_state` store a model's and its optimizer's state as flat
numpy arrays (an artifact's ``.npz``), so training can resume from a snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import nn

from ace_helpers.method import portable

LossPositions = Literal["all", "last"]


@dataclass
class TrainLog:
    """Per-epoch mean training loss (plain floats)."""

    loss: list[float] = field(default_factory=list)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, positions: LossPositions) -> torch.Tensor:
    """Cross-entropy of logits (B, T, V) against targets (B, T) on all or the last position."""
    if positions == "last":
        return nn.functional.cross_entropy(logits[:, -1], targets[:, -1])
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def train_lm(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    seed: int,
    loss_positions: LossPositions = "all",
    optimizer: torch.optim.Optimizer | None = None,
    start_epoch: int = 0,
    callback: Callable[[int, nn.Module], None] | None = None,
    device: str | torch.device | None = None,
) -> TrainLog:
    """Train ``model`` in place with AdamW on (inputs, targets).

    Args:
        model: maps tokens (B, T) long -> logits (B, T, V).
        inputs: (N, T) long token ids.  targets: (N, T) long next tokens.
        epochs: number of passes; epochs ``start_epoch+1 .. start_epoch+epochs`` are run.
        batch_size: mini-batch size (``>= N`` means full batch).
        seed: seeds the shuffling generator (the model's init is the caller's business).
        optimizer: reuse an optimizer (e.g. to continue training); a fresh AdamW otherwise.
        callback: ``callback(epoch, model)`` after every epoch, epoch counted from 1 (the model on ``device``).
        device: train there (default: where the model is); the model and data are moved there, the shuffling
            generator lives there, and the epoch's loss is summed there (read back once per epoch).  The model
            is moved back where it was when training ends; an optimizer passed in keeps its state on ``device``.

    Returns:
        :class:`TrainLog` with the mean loss of every epoch run.
    """
    if inputs.shape != targets.shape or inputs.dim() != 2:
        raise ValueError(f"inputs and targets must both be (N, T); got {tuple(inputs.shape)} and {tuple(targets.shape)}")
    if epochs < 0 or batch_size < 1:
        raise ValueError(f"epochs must be >= 0 and batch_size >= 1, got {epochs}, {batch_size}")
    home = next(model.parameters()).device
    device = home if device is None else torch.device(device)
    model.to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    opt = optimizer or portable.adamw(model.parameters(), lr=lr, weight_decay=weight_decay)
    generator = torch.Generator(device).manual_seed(seed)
    n = inputs.shape[0]
    log = TrainLog()
    for epoch in range(start_epoch + 1, start_epoch + epochs + 1):
        model.train()
        order = torch.randperm(n, generator=generator, device=device)
        total = torch.zeros((), dtype=torch.float64, device=device)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            loss = lm_loss(model(inputs[idx]), targets[idx], loss_positions)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach().double() * len(idx)
        log.loss.append(float(total) / n)
        if callback is not None:
            model.eval()
            callback(epoch, model)
    model.eval()
    model.to(home)
    return log


@torch.no_grad()
def accuracy(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, positions: LossPositions = "all") -> float:
    """Argmax next-token accuracy of ``model`` (eval mode) on (N, T) inputs/targets."""
    model.eval()
    logits = model(inputs)
    if positions == "last":
        return (logits[:, -1].argmax(-1) == targets[:, -1]).double().mean().item()
    return (logits.argmax(-1) == targets).double().mean().item()


def state_arrays(model: nn.Module, opt: torch.optim.Optimizer | None = None, prefix: str = "") -> dict[str, np.ndarray]:
    """Model (and optimizer) state as flat arrays: ``<prefix>model/<param>``, ``<prefix>opt/<i>/<key>``."""
    arrays = {f"{prefix}model/{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    if opt is not None:
        for i, st in opt.state_dict()["state"].items():
            for key, val in st.items():
                arrays[f"{prefix}opt/{i}/{key}"] = torch.as_tensor(val).detach().cpu().numpy()
    return arrays


def load_state(model: nn.Module, opt: torch.optim.Optimizer | None, arrays: Mapping[str, np.ndarray], prefix: str = "") -> None:
    """Load what :func:`state_arrays` stored into ``model`` (and ``opt``, keeping its param groups)."""
    model.load_state_dict(
        {k[len(prefix) + 6 :]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith(prefix + "model/")}
    )
    if opt is not None:
        state: dict[int, dict[str, torch.Tensor]] = {}
        for k, v in arrays.items():
            if k.startswith(prefix + "opt/"):
                _, i, key = k[len(prefix) :].split("/")
                state.setdefault(int(i), {})[key] = torch.from_numpy(np.array(v))
        opt.load_state_dict({"state": state, "param_groups": opt.state_dict()["param_groups"]})
