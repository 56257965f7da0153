"""Modular addition a + b = c (mod p): all p^2 pairs, inputs [a, b], target c at the last position.

There is no "=" token: vocabulary = p, context length 2 (as in the official code release's `modadd.py`).  The split is a fixed
permutation of the p^2 pairs drawn from ``numpy.random.RandomState(seed)`` (paper: seed 42,
train fraction 0.5 -> 1404 train / 1405 test for p = 53).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ace_helpers.method.checks import check_prime, check_range


@dataclass(frozen=True)
class ModAddData:
    """Train/test split of modular addition.

    Attributes:
        p: the modulus.
        train_inputs, test_inputs: (N, 2) long, rows [a, b].
        train_targets, test_targets: (N, 2) long, rows [b, c] (loss only on the last column).
    """

    p: int
    train_inputs: torch.Tensor
    train_targets: torch.Tensor
    test_inputs: torch.Tensor
    test_targets: torch.Tensor

    @property
    def test_answers(self) -> torch.Tensor:
        """(N_test,) long: c for every test pair."""
        return self.test_targets[:, -1]


def all_pairs(p: int) -> np.ndarray:
    """(p*p, 3) int64 array of every triple [a, b, (a + b) mod p], a-major order."""
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    return np.stack([a, b, (a + b) % p], axis=1).astype(np.int64)


def modadd_dataset(p: int, train_fraction: float = 0.5, seed: int = 42) -> ModAddData:
    """Split all p^2 triples into train/test with a fixed ``RandomState(seed)`` permutation.

    The train set gets ``int(train_fraction * p * p)`` pairs (1404 for p = 53, fraction 0.5).
    """
    check_prime("P", p)
    check_range("TRAIN_FRACTION", train_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
    triples = all_pairs(p)
    order = np.random.RandomState(seed).permutation(len(triples))
    n_train = int(train_fraction * len(triples))
    if n_train < 1 or n_train >= len(triples):
        raise ValueError(f"TRAIN_FRACTION={train_fraction} leaves an empty train or test split for p={p}")
    t = torch.from_numpy(triples[order])
    inputs, targets = t[:, :2], t[:, 1:]
    return ModAddData(
        p=p,
        train_inputs=inputs[:n_train].contiguous(),
        train_targets=targets[:n_train].contiguous(),
        test_inputs=inputs[n_train:].contiguous(),
        test_targets=targets[n_train:].contiguous(),
    )
