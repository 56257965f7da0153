"""Chapter 0 (notebooks/00_ace_planted_system): ACE on a planted system with known ground truth.

The chapter's knobs (:data:`PARAMS`), its pipeline (:func:`run`) and its claims
(:func:`build_claims`, a table of rule specs in :mod:`ace_helpers.chapters.ace_planted_system.claims`).

Results keys (``results.json``):

* ``overlap``: {method: {block: projector overlap}} for methods ace/pca/jacobian and blocks
  core/active_only/relevant_only;
* ``ace_rank``: rank chosen by the energy rule; ``weights_top``: leading balanced weights;
* ``acc_base``, ``acc_keep``, ``acc_remove``: {method: readout accuracy} (keep/remove the method's subspace);
* ``chance_acc``: 1 / n_classes; ``wall_s``: seconds.
"""

from __future__ import annotations

import time
from typing import Any

import nnsight
import numpy as np
import torch
from torch import nn

from ace_helpers.chapters.ace_planted_system.claims import build_claims  # noqa: F401  (the chapter's face)
from ace_helpers.chapters.ace_planted_system.knobs import (  # noqa: F401 - the chapter's knobs, declared once there
    KNOBS,
    MEMORY_LIMIT,
    PARAMS,
    PRESETS,
    check,
    memory_estimate,
)
from ace_helpers.method.baselines import jacobian_directions, pca_directions
from ace_helpers.method.compare import projector_overlap
from ace_helpers.method.core import Core, extract_core
from ace_helpers.method.interventions import HookSite, accuracy_under
from ace_helpers.repro.params import Params
from ace_helpers.toys.tasks.planted import PlantedSystem, planted_system

N_CLASSES = 4
METHODS = ("ace", "pca", "jacobian")
BLOCKS = ("core", "active_only", "relevant_only")


class PlantedReadout(nn.Module):
    """A 'layer' (identity, the hook point ``hidden``) followed by the planted linear readout W."""

    def __init__(self, w: np.ndarray) -> None:
        super().__init__()
        self.hidden = nn.Identity()
        self.readout = nn.Linear(w.shape[1], w.shape[0], bias=False)
        with torch.no_grad():
            self.readout.weight.copy_(torch.as_tensor(w, dtype=torch.float32))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """(N, D) activations -> (N, K) logits."""
        return self.readout(self.hidden(h))


def subspaces(system: PlantedSystem, rank: int, energy: float) -> tuple[Core, dict[str, np.ndarray]]:
    """ACE core (energy rule) and the rank-matched bases of each method, (D, r) each."""
    core = extract_core(system.H, system.W, energy=energy)
    r = core.rank if rank is None else rank
    dim = system.H.shape[1]
    return core, {
        "ace": core.basis,
        "pca": pca_directions(system.H, r),
        "jacobian": jacobian_directions(system.W, dim, r),
    }


def sample(cfg: Params) -> PlantedSystem:
    """The chapter's planted system under ``cfg`` (three blocks of ``R_CORE`` directions each)."""
    return planted_system(
        n=cfg["N_SAMPLES"],
        dim=cfg["DIM"],
        r_core=cfg["R_CORE"],
        r_active=cfg["R_CORE"],
        r_relevant=cfg["R_CORE"],
        n_classes=N_CLASSES,
        active_std=cfg["ACTIVE_STD"],
        relevant_weight=cfg["RELEVANT_WEIGHT"],
        seed=cfg["SEED"],
    )


def hook_site(cfg: Params) -> HookSite:
    """The planted system as a model for ACE: its activations (N, 1, D) pass the identity hook ``hidden``
    into the planted readout, whose weights W (K, D) are the task's Jacobian; scored against the planted labels."""
    system = sample(cfg)
    labels = torch.as_tensor(system.labels)
    return HookSite(
        nnsight.NNsight(PlantedReadout(system.W).eval()),
        torch.as_tensor(system.H, dtype=torch.float32)[:, None, :],
        "hidden",
        system.W,
        lambda logits: float((logits[:, 0].argmax(-1) == labels).double().mean()),
    )


def run(cfg: Params) -> dict[str, Any]:
    """The whole chapter: planted system -> three subspaces -> overlaps and ablations."""
    start = time.perf_counter()
    system = sample(cfg)
    core, bases = subspaces(system, None, cfg["ENERGY"])
    truth = {"core": system.core, "active_only": system.active_only, "relevant_only": system.relevant_only}
    overlap = {m: {b: projector_overlap(q, truth[b]) for b in BLOCKS} for m, q in bases.items()}
    model = nnsight.NNsight(PlantedReadout(system.W).eval())
    h = torch.as_tensor(system.H, dtype=torch.float32)
    y = torch.as_tensor(system.labels)[:, None]
    # accuracy_under scores (N, T) targets: view the N samples as N sequences of length 1
    acc = {"keep": {}, "remove": {}}
    for m, q in bases.items():
        sub = Core(full_basis=np.linalg.qr(q)[0], weights=np.ones(q.shape[1]), rank=q.shape[1], mean=np.zeros(q.shape[0]))
        for mode in ("keep", "remove"):
            acc[mode][m] = accuracy_under(model, h[:, None, :], y, "hidden", sub, mode)
    base = accuracy_under(model, h[:, None, :], y, "hidden", None, None)
    return {
        "overlap": overlap,
        "ace_rank": core.rank,
        "weights_top": core.weights[: 2 * cfg["R_CORE"] + 1].tolist(),
        "energy_fraction": core.energy_fraction()[: 2 * cfg["R_CORE"] + 1].tolist(),
        "acc_base": base,
        "acc_keep": acc["keep"],
        "acc_remove": acc["remove"],
        "chance_acc": 1.0 / N_CLASSES,
        "wall_s": time.perf_counter() - start,
    }
