"""Chapter 0: ACE on a planted system with known ground truth.

Results keys (``results.json``):
    overlap: {method: {block: projector overlap}} for methods ace/pca/jacobian and blocks
        core/active_only/relevant_only.
    ace_rank: rank chosen by the energy rule.  weights_top: leading balanced weights.
    acc_base, acc_keep, acc_remove: {method: readout accuracy} (keep/remove the method's subspace).
    chance_acc: 1 / n_classes.  wall_s: seconds.
"""

from __future__ import annotations

import time
from typing import Any

import nnsight
import numpy as np
import torch
from torch import nn

from ace_helpers import params
from ace_helpers.baselines import jacobian_directions, pca_directions
from ace_helpers.compare import projector_overlap
from ace_helpers.core import Core, extract_core
from ace_helpers.interventions import accuracy_under
from ace_helpers.tasks.planted import PlantedSystem, planted_system

PRESETS: dict[str, dict[str, Any]] = {
    "ci": {"N_SAMPLES": 2000, "DIM": 32, "R_CORE": 3, "ACTIVE_STD": 6.0, "RELEVANT_WEIGHT": 20.0, "ENERGY": 0.99, "SEED": 0},
    "book": {"N_SAMPLES": 8000, "DIM": 32, "R_CORE": 3, "ACTIVE_STD": 6.0, "RELEVANT_WEIGHT": 20.0, "ENERGY": 0.99, "SEED": 0},
    "paper": {"N_SAMPLES": 8000, "DIM": 32, "R_CORE": 3, "ACTIVE_STD": 6.0, "RELEVANT_WEIGHT": 20.0, "ENERGY": 0.99, "SEED": 0},
}
N_CLASSES = 4
METHODS = ("ace", "pca", "jacobian")
BLOCKS = ("core", "active_only", "relevant_only")


def resolve_params(**knobs: Any) -> dict[str, Any]:
    """Fill knobs from the preset and validate them (ValueError naming the knob)."""
    preset = knobs.pop("PRESET") or params.preset_from_env()
    cfg = params.resolve(preset, knobs, PRESETS)
    params.check_int("N_SAMPLES", cfg["N_SAMPLES"], low=100)
    params.check_int("DIM", cfg["DIM"], low=12)
    params.check_int("R_CORE", cfg["R_CORE"], low=1, high=cfg["DIM"] // 3)
    params.check_range("ACTIVE_STD", cfg["ACTIVE_STD"], low=1.0)
    params.check_range("RELEVANT_WEIGHT", cfg["RELEVANT_WEIGHT"], low=1.0)
    params.check_range("ENERGY", cfg["ENERGY"], low=0.0, high=1.0, low_open=True)
    params.check_int("SEED", cfg["SEED"], low=0)
    return cfg


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


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    """The whole chapter: planted system -> three subspaces -> overlaps and ablations."""
    start = time.perf_counter()
    system = planted_system(
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
