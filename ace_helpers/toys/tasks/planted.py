"""A planted system with known ground truth for ACE.

Activations ``h = R s`` mix exactly uncorrelated sources through a random rotation R of R^D.  Source
coordinates come in four blocks:

* **core** (active and relevant): unit variance, read out by the task;
* **active only**: large variance, never read out (top PCA directions land here);
* **relevant only**: large readout weight but almost no variance (top Jacobian directions land here);
* the rest: small noise, not read out.

The task is a linear readout ``logits = W h`` with W supported on the core and relevant-only
blocks, so ``Obs = Wᵀ W`` and the balanced weights single out the core block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import special_ortho_group

from ace_helpers.method.checks import check_int, check_range


@dataclass(frozen=True)
class PlantedSystem:
    """Ground-truth system.

    Attributes:
        H: (N, D) activations.
        W: (K, D) readout (the task's Jacobian, constant).
        core: (D, r_core) orthonormal true core directions.
        active_only: (D, r_active) high-variance, irrelevant directions.
        relevant_only: (D, r_relevant) high-sensitivity, inactive directions.
        labels: (N,) argmax of ``H @ W.T`` (the task's answer on clean activations).
    """

    H: np.ndarray
    W: np.ndarray
    core: np.ndarray
    active_only: np.ndarray
    relevant_only: np.ndarray
    labels: np.ndarray


def planted_system(
    n: int = 4000,
    dim: int = 32,
    *,
    r_core: int = 3,
    r_active: int = 3,
    r_relevant: int = 3,
    n_classes: int = 4,
    active_std: float = 6.0,
    relevant_weight: float = 8.0,
    relevant_std: float = 0.001,
    noise_std: float = 0.05,
    seed: int = 0,
) -> PlantedSystem:
    """Sample a planted system (see module docstring); all randomness from ``seed``."""
    n = check_int("n", n, low=10)
    dim = check_int("dim", dim, low=4)
    for name, v in (("r_core", r_core), ("r_active", r_active), ("r_relevant", r_relevant)):
        check_int(name, v, low=1)
    if r_core + r_active + r_relevant > dim:
        raise ValueError(f"r_core + r_active + r_relevant = {r_core + r_active + r_relevant} must be <= dim={dim}")
    check_int("n_classes", n_classes, low=2)
    for name, v in (
        ("active_std", active_std),
        ("relevant_weight", relevant_weight),
        ("relevant_std", relevant_std),
        ("noise_std", noise_std),
    ):
        check_range(name, v, low=0.0)
    rng = np.random.default_rng(seed)
    rot = special_ortho_group.rvs(dim, random_state=rng)
    blocks = np.cumsum([0, r_core, r_active, r_relevant])
    std = np.full(dim, noise_std)
    std[blocks[0] : blocks[1]] = 1.0
    std[blocks[1] : blocks[2]] = active_std
    std[blocks[2] : blocks[3]] = relevant_std
    # exactly uncorrelated sources: the sample covariance is diag(std**2), so the planted
    # blocks are the ground truth of the sample itself, not only in expectation
    z = rng.standard_normal((n, dim))
    q, _ = np.linalg.qr(z - z.mean(axis=0))
    sources = q * np.sqrt(n - 1) * std
    readout = np.zeros((n_classes, dim))
    readout[:, blocks[0] : blocks[1]] = rng.standard_normal((n_classes, r_core))
    readout[:, blocks[2] : blocks[3]] = relevant_weight * rng.standard_normal((n_classes, r_relevant))
    h = sources @ rot.T
    w = readout @ rot.T
    return PlantedSystem(
        H=h,
        W=w,
        core=rot[:, blocks[0] : blocks[1]],
        active_only=rot[:, blocks[1] : blocks[2]],
        relevant_only=rot[:, blocks[2] : blocks[3]],
        labels=np.argmax(h @ w.T, axis=1),
    )
