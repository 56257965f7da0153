"""Tests of ace_helpers.method.scans (rank scans, necessary / sufficient dims) and operators.class_means."""

from __future__ import annotations

import numpy as np
import pytest
from reference import naive_rank_scan

from ace_helpers.method.operators import class_means
from ace_helpers.method.scans import necessary_dim, rank_scan, sufficient_dim


def test_batched_rank_scan_equals_one_projection_per_rank():
    rng = np.random.default_rng(0)
    n, d, k = 300, 24, 7
    H = rng.normal(size=(n, d))
    W = rng.normal(size=(k, d))
    b = rng.normal(size=k)
    y = ((H @ W.T + b) + 0.5 * rng.normal(size=(n, k))).argmax(1)  # partly predictable labels
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    keep, remove = rank_scan(H, W, b, Q, y, chunk=5)
    ref_keep, ref_remove = naive_rank_scan(H, W, b, Q, y)
    np.testing.assert_array_equal(keep, ref_keep)
    np.testing.assert_array_equal(remove, ref_remove)
    assert keep[-1] == remove[0] > 0.3  # keep-all = remove-none = the base accuracy


def test_necessary_and_sufficient_dims_from_curves():
    remove = np.array([1.0, 0.9, 0.5, 0.05, 0.03, 0.01, 0.02])
    keep = np.array([0.02, 0.4, 0.9995, 1.0, 1.0, 1.0, 1.0])
    assert necessary_dim(remove, energy_rank=2, floor=0.04) == 4
    assert necessary_dim(remove, energy_rank=5, floor=0.04) == 5  # never below the energy rank
    assert necessary_dim(remove, energy_rank=1, floor=0.001) == 6  # never reached -> D
    assert sufficient_dim(keep, base_acc=1.0) == 2  # within 1e-3 of base
    assert sufficient_dim(keep, base_acc=1.0, tol=1e-5) == 3


def test_class_means_requires_every_class():
    with pytest.raises(ValueError, match="no test example"):
        class_means(np.ones((4, 2)), np.array([0, 1, 1, 0]), 3)
