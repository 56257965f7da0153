"""Epoch-level control of a :class:`~ace_helpers.toys.ensemble.ToyEnsemble`: the trainer of runs whose members fork.

:func:`ace_helpers.toys.ensemble_runs.train_ensemble` runs a whole sweep in one call.  Some runs need
more control between epochs: the modular-addition run (chapters 2-3) forks every model at
``FORK_EPOCH`` into a second member that continues without weight decay, with a fresh
optimizer, and reseeds every member's random streams at fixed epochs so that a run resumed
from a snapshot gives the numbers of an uninterrupted one.  :class:`EnsembleTrainer` holds the
ensemble, its :class:`~ace_helpers.toys.ensemble.EnsembleAdamW` and one data-order and one dropout
generator per member, and trains one epoch at a time:

* every member shuffles the shared training set with its own generator each epoch, in
  mini-batches of ``batch_size`` (the last one smaller), as :func:`ace_helpers.toys.train.train_lm`;
* the loss is the cross-entropy of the last position (``loss_positions="last"``) or of every
  position (``"all"``), summed over members so that their gradients do not mix;
* a member's numbers do not depend on which other members of the same age share the ensemble
  (tested); after :meth:`fork` the older members take the optimizer's per-member step, which
  rounds differently in the last bits (tested), so their numbers then depend on the fork.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch.nn import functional as F

from ace_helpers.toys.ensemble import DROPOUT_SEED_OFFSET, EnsembleAdamW, ToyEnsemble
from ace_helpers.toys.models import ToyConfig, ToyTransformer
from ace_helpers.toys.precision import autocast, check_precision


def member_losses(
    ensemble: ToyEnsemble,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    generators: Sequence[torch.Generator] | None,
    *,
    loss_positions: str,
    precision: str,
    fast: bool,
    draws: torch.Tensor | None = None,
) -> torch.Tensor:
    """Each member's mean cross-entropy on its batch, the training loss of one step.

    Args:
        inputs, targets: (M, b, T) long, member ``m``'s batch in row ``m`` (targets' last column
            is the label); inputs may also be (b, T), one batch for every member, with targets
            expanded to (M, b, T).
        generators: one dropout generator per member, or ``None`` with ``draws``.
        draws: instead of ``generators``, the step's dropout randomness drawn before it
            (:meth:`~ace_helpers.toys.ensemble.ToyEnsemble.draw_dropout`: the same masks); a step
            that takes it has no generator calls, so ``torch.compile`` traces it as one graph.
        loss_positions: ``"last"`` (the label at the last position) or ``"all"`` (every position).

    Returns:
        (M,) float32, with the graph: the step backpropagates ``.sum()`` so that members' gradients do not mix.
    """
    with autocast(precision, inputs.device.type):
        logits = ensemble(inputs, last_only=loss_positions == "last", generators=generators, fast=fast, draws=draws)
    logits = logits.float()
    M, V = logits.shape[0], logits.shape[-1]
    labels = targets[..., -1] if loss_positions == "last" else targets
    per = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), reduction="none").view(M, -1)
    return per.mean(dim=1)


class EnsembleTrainer:
    """Train ``len(seeds)`` members one epoch at a time; members can be forked and reseeded.

    Member ``j`` starts as ``build_model(config, seeds[j])`` and decays with
    ``weight_decays[j]``; its generators start seeded ``seeds[j]`` (data order) and
    ``seeds[j] + 1_000_003`` (dropout) until :meth:`reseed` says otherwise.

    Args:
        precision: ``"fp32"`` or ``"bf16"`` (forward pass under bf16 autocast).
        fast: the ensemble's fast kernels (see :meth:`ToyEnsemble.forward`).
        device: where the ensemble, its optimizer state and its generators live (default the CPU); members
            are initialised on the CPU, as ``build_model`` does, then moved.  Each epoch stays on the device:
            the permutations and dropout masks come from per-member generators there, the losses are summed
            there and read back once per epoch.
    """

    def __init__(
        self,
        config: ToyConfig,
        seeds: Sequence[int],
        weight_decays: Sequence[float],
        *,
        lr: float,
        batch_size: int,
        loss_positions: str = "last",
        precision: str = "fp32",
        fast: bool = True,
        device: str | torch.device = "cpu",
    ) -> None:
        if len(seeds) == 0 or len(seeds) != len(weight_decays):
            raise ValueError(
                f"seeds and weight_decays must be non-empty and of equal length, got {len(seeds)} and {len(weight_decays)}"
            )
        if loss_positions not in ("last", "all"):
            raise ValueError(f"loss_positions must be 'last' or 'all', got {loss_positions!r}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.precision = check_precision("precision", precision)
        self.fast = bool(fast)
        self.config = config
        self.batch_size = int(batch_size)
        self.loss_positions = loss_positions
        self.device = torch.device(device)
        self.ensemble = ToyEnsemble.from_seeds(config, [int(s) for s in seeds]).to(self.device).train()
        self.opt = EnsembleAdamW(list(self.ensemble.parameters()), lr=lr, weight_decay=[float(w) for w in weight_decays])
        self.data_gens: list[torch.Generator] = []
        self.drop_gens: list[torch.Generator] = []
        for s in seeds:
            self.data_gens.append(torch.Generator(self.device))
            self.drop_gens.append(torch.Generator(self.device))
            self.reseed(len(self.data_gens) - 1, int(s))

    @property
    def n_members(self) -> int:
        """Number of members M."""
        return self.ensemble.n_members

    def reseed(self, j: int, seed: int) -> None:
        """Seed member ``j``'s data-order generator with ``seed`` and its dropout generator with ``seed + 1_000_003``."""
        self.data_gens[j].manual_seed(int(seed))
        self.drop_gens[j].manual_seed(int(seed) + DROPOUT_SEED_OFFSET)

    def fork(self, members: Sequence[int], weight_decay: float) -> list[int]:
        """Append a copy of each member in ``members`` with weight decay ``weight_decay`` and a
        fresh optimizer state (as a new ``torch.optim.AdamW`` on a deep copy of the model).

        The copies get fresh generators seeded 0; :meth:`reseed` them before training.
        Returns the new members' indices.
        """
        first = self.n_members
        self.ensemble.extend(list(members))
        self.opt.extend([float(weight_decay)] * len(members), list(self.ensemble.parameters()))
        for _ in members:
            self.data_gens.append(torch.Generator(self.device).manual_seed(0))
            self.drop_gens.append(torch.Generator(self.device).manual_seed(DROPOUT_SEED_OFFSET))
        return list(range(first, self.n_members))

    def train_epoch(self, inputs: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
        """One epoch of every member over the shared data: inputs, targets (N, T) long (moved to the device).

        Returns:
            (M,) float64: each member's mean training loss over the epoch.
        """
        if inputs.dim() != 2 or inputs.shape != targets.shape:
            raise ValueError(f"inputs and targets must both be (N, T); got {tuple(inputs.shape)} and {tuple(targets.shape)}")
        n = inputs.shape[0]
        M = self.n_members
        inputs, targets = inputs.to(self.device), targets.to(self.device)
        order = torch.stack([torch.randperm(n, generator=g, device=self.device) for g in self.data_gens])  # (M, N)
        total = torch.zeros(M, dtype=torch.float64, device=self.device)
        self.ensemble.train()
        for start in range(0, n, self.batch_size):
            idx = order[:, start : start + self.batch_size]  # (M, b)
            b = idx.shape[1]
            member_loss = member_losses(
                self.ensemble,
                inputs[idx],
                targets[idx],
                self.drop_gens,
                loss_positions=self.loss_positions,
                precision=self.precision,
                fast=self.fast,
            )
            self.opt.zero_grad()
            member_loss.sum().backward()
            self.opt.step()
            total += member_loss.detach().double() * b
        self.ensemble.eval()
        return (total / n).cpu().numpy()

    def member(self, j: int) -> ToyTransformer:
        """Member ``j``'s current weights as a plain :class:`ToyTransformer` (eval mode, fp32)."""
        return self.ensemble.member(j)

    def state_arrays(self) -> dict[str, np.ndarray]:
        """Weights and optimizer state of every member (``model/<name>``, ``opt/<key>``).

        The generators are not stored: a caller that resumes reseeds every member first.
        """
        out = {f"model/{k}": v.detach().cpu().numpy().copy() for k, v in self.ensemble.state_dict().items()}
        return out | {f"opt/{k}": v for k, v in self.opt.state_arrays().items()}

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Load what :meth:`state_arrays` stored; the member count follows the stored state."""
        weights = {k[6:]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith("model/")}
        M = weights["tok_emb"].shape[0]
        grow = M - self.n_members
        if grow < 0:
            raise ValueError(f"stored state holds {M} members, fewer than the trainer's {self.n_members}")
        if grow:
            self.fork([0] * grow, 0.0)
        self.ensemble.load_state_dict(weights)  # copies into the parameters, on their device
        self.opt.params = list(self.ensemble.parameters())
        self.opt.load_state_arrays({k[4:]: v for k, v in arrays.items() if k.startswith("opt/")})
