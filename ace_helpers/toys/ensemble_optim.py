"""AdamW over the stacked parameters of an ensemble: one weight decay and one age per member.

:class:`EnsembleAdamW` is ``torch.optim.AdamW`` (no amsgrad) for parameters whose leading
dimension is the member dimension of :class:`ace_helpers.toys.ensemble.ToyEnsemble`: member ``m`` of
every parameter decays with its own ``weight_decay[m]``, members can leave (:meth:`~EnsembleAdamW.select`)
or join with a fresh state (:meth:`~EnsembleAdamW.extend`), and the state is stored as flat arrays
for resume snapshots.  Re-exported by :mod:`ace_helpers.toys.ensemble`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn


class EnsembleAdamW:
    """AdamW (as ``torch.optim.AdamW``, no amsgrad) over stacked parameters, with a weight
    decay per member: ``weight_decay`` is a (M,) float64 tensor, member ``m`` of every parameter decays
    with ``weight_decay[m]``.  :meth:`select` drops members together with :meth:`ToyEnsemble.select`;
    :meth:`extend` adds members with a fresh state (their own step count from 0, as a new
    ``torch.optim.AdamW`` would have), together with :meth:`ToyEnsemble.extend`.
    """

    def __init__(
        self,
        params: Sequence[nn.Parameter],
        *,
        lr: float,
        weight_decay: Sequence[float] | torch.Tensor,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = list(params)
        self.lr, self.betas, self.eps = float(lr), betas, float(eps)
        self.weight_decay = torch.as_tensor(weight_decay, dtype=torch.float64).clone().to(self.params[0].device)
        M = self.params[0].shape[0]
        if self.weight_decay.shape != (M,):
            raise ValueError(f"weight_decay must have one value per member ({M}), got shape {tuple(self.weight_decay.shape)}")
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.t = 0  # steps taken (all members, until members of another age join)
        self.member_t: torch.Tensor | None = None  # (M,) float64 per-member step counts, once ages differ

    def zero_grad(self) -> None:
        """Drop all gradients."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW update of every member: ATen's fused AdamW kernel (``torch._fused_adamw_``, the step of
        ``torch.optim.AdamW(fused=True)``) on each member's slice of every parameter, one call per distinct
        weight decay, each member with its own step count.  The fused kernel takes its square root from
        ATen (the IEEE ``sqrtps``), not from MKL's vendor-dependent vector math, so a step gives the same
        bits on every x86-64 CPU (:mod:`ace_helpers.method.portable`), and a member's update is exactly
        that of ``torch.optim.AdamW(fused=True)`` on the member alone, in any company."""
        self.t += 1
        if self.member_t is not None:
            self.member_t += 1
        b1, b2 = self.betas
        device = self.params[0].device
        ages = [float(self.t)] * len(self.weight_decay) if self.member_t is None else self.member_t.tolist()
        steps = [torch.tensor(a, dtype=torch.float32, device=device) for a in ages]
        live = [(p.detach(), p.grad, m, v) for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq) if p.grad is not None]
        decays = self.weight_decay.tolist()
        for wd in dict.fromkeys(decays):  # one fused call per distinct weight decay, over its members' slices
            members = [i for i, w in enumerate(decays) if w == wd]

            def pick(k: int, members: list[int] = members) -> list[torch.Tensor]:
                return [state[k][i] for i in members for state in live]

            torch._fused_adamw_(
                pick(0),
                pick(1),
                pick(2),
                pick(3),
                [],
                [steps[i] for i in members for _ in live],
                lr=self.lr,
                beta1=b1,
                beta2=b2,
                weight_decay=wd,
                eps=self.eps,
                amsgrad=False,
                maximize=False,
            )

    def select(self, keep: Sequence[int] | torch.Tensor, params: Sequence[nn.Parameter]) -> None:
        """Keep only the members ``keep`` of the optimizer state; ``params`` are the new
        (already selected) parameters, in the original order (``ToyEnsemble.parameters()``)."""
        idx = torch.as_tensor(keep, dtype=torch.long, device=self.weight_decay.device)
        self.params = list(params)
        self.weight_decay = self.weight_decay.index_select(0, idx)
        self.exp_avg = [s.index_select(0, idx).contiguous() for s in self.exp_avg]
        self.exp_avg_sq = [s.index_select(0, idx).contiguous() for s in self.exp_avg_sq]
        if self.member_t is not None:
            self.member_t = self.member_t.index_select(0, idx)

    def extend(self, weight_decay: Sequence[float], params: Sequence[nn.Parameter]) -> None:
        """Add ``len(weight_decay)`` members with a fresh state (zero moments, step count 0);
        ``params`` are the new (already extended) parameters (``ToyEnsemble.parameters()``)."""
        n_new = len(weight_decay)
        M = self.weight_decay.shape[0]
        device = self.weight_decay.device
        if self.member_t is None:
            self.member_t = torch.full((M,), float(self.t), dtype=torch.float64, device=device)
        self.member_t = torch.cat([self.member_t, torch.zeros(n_new, dtype=torch.float64, device=device)])
        self.weight_decay = torch.cat([self.weight_decay, torch.as_tensor(weight_decay, dtype=torch.float64, device=device)])
        self.params = list(params)
        self.exp_avg = [torch.cat([s, s.new_zeros((n_new, *s.shape[1:]))]) for s in self.exp_avg]
        self.exp_avg_sq = [torch.cat([s, s.new_zeros((n_new, *s.shape[1:]))]) for s in self.exp_avg_sq]

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The optimizer state as flat arrays (``exp_avg/<i>``, ``exp_avg_sq/<i>``, ``weight_decay``, ``t``)."""
        out = {f"exp_avg/{i}": s.cpu().numpy().copy() for i, s in enumerate(self.exp_avg)}
        out |= {f"exp_avg_sq/{i}": s.cpu().numpy().copy() for i, s in enumerate(self.exp_avg_sq)}
        t = self.member_t if self.member_t is not None else torch.full_like(self.weight_decay, self.t, dtype=torch.float64)
        return out | {
            "weight_decay": self.weight_decay.cpu().numpy().copy(),
            "t": t.cpu().numpy().copy(),
            "t_shared": np.array(self.t),
        }

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Load what :meth:`state_arrays` stored (for the same parameters, already loaded, on their device)."""
        device = self.params[0].device

        def tensor(key: str) -> torch.Tensor:
            return torch.from_numpy(np.array(arrays[key])).to(device)

        self.exp_avg = [tensor(f"exp_avg/{i}") for i in range(len(self.params))]
        self.exp_avg_sq = [tensor(f"exp_avg_sq/{i}") for i in range(len(self.params))]
        self.weight_decay = tensor("weight_decay").double()  # float32 in snapshots written before 2026-12-07
        self.t = int(arrays["t_shared"])
        t = tensor("t")
        self.member_t = None if bool((t == self.t).all()) else t
