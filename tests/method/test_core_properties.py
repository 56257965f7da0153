"""Properties of the method layer that must hold for any input (hypothesis draws the inputs)."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ace_helpers.method.core import GramianAccumulator, extract_core

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _system(seed: int, n: int, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Activations with a clear spectrum (so the core is well defined) and a random linear tail."""
    rng = np.random.default_rng(seed)
    scales = np.geomspace(10.0, 0.1, d)
    return rng.normal(size=(n, d)) * scales, rng.normal(size=(k, d))


def random_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random (d, d) orthogonal matrix."""
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))[None, :]


def _same_span(a: np.ndarray, b: np.ndarray, atol: float = 1e-6) -> bool:
    return np.allclose(a @ a.T, b @ b.T, atol=atol)


@SETTINGS
@given(seed=st.integers(0, 10_000), d=st.integers(3, 8), r=st.integers(1, 3))
def test_extract_core_is_rotation_equivariant(seed, d, r):
    h, j = _system(seed, 120, d, 4)
    rot = random_orthogonal(d, np.random.default_rng(seed + 1))
    base = extract_core(h, j, rank=r)
    turned = extract_core(h @ rot, j @ rot, rank=r)  # rotate activations; the tail sees the same inputs
    np.testing.assert_allclose(turned.weights, base.weights, rtol=1e-6, atol=1e-9 * base.weights[0])
    if r == d or base.weights[r - 1] > 1.001 * base.weights[r]:  # a gap: the span is unique
        assert _same_span(turned.basis, rot.T @ base.basis)


@SETTINGS
@given(seed=st.integers(0, 10_000), d=st.integers(3, 8), copies=st.integers(2, 3))
def test_extract_core_ignores_row_order_and_duplication(seed, d, copies):
    h, j = _system(seed, 80, d, 3)
    perm = np.random.default_rng(seed).permutation(len(h))
    base = extract_core(h, j, energy=0.9)
    shuffled = extract_core(h[perm], j, energy=0.9)
    np.testing.assert_allclose(shuffled.weights, base.weights, rtol=1e-9, atol=1e-12)
    assert shuffled.rank == base.rank and _same_span(shuffled.basis, base.basis)
    dup = extract_core(np.tile(h, (copies, 1)), j, energy=0.9)  # covariance changes only by (N-1)/(cN-1)
    np.testing.assert_allclose(dup.weights / dup.weights.sum(), base.weights / base.weights.sum(), atol=1e-3)
    assert _same_span(dup.basis, base.basis, atol=1e-4)


@SETTINGS
@given(seed=st.integers(0, 10_000), r=st.integers(1, 5), dtype=st.sampled_from(["float32", "float64", "torch32", "torch64"]))
def test_keep_plus_remove_is_the_identity(seed, r, dtype):
    h, j = _system(seed, 60, 6, 3)
    core = extract_core(h, j, rank=min(r, 3))
    x = np.random.default_rng(seed).normal(size=(7, 6))
    x = torch.tensor(x, dtype=torch.float32 if dtype == "torch32" else torch.float64) if dtype.startswith("torch") else x.astype(dtype)
    tol = 1e-5 if "32" in dtype else 1e-12
    for centered in (False, True):
        total = core.keep(x, centered=centered) + core.remove(x, centered=centered)  # = x (+ μ when centred)
        total = np.asarray(total.numpy() if hasattr(total, "numpy") else total, dtype=float)
        expected = np.asarray(x, dtype=float) + (core.mean if centered else 0.0)
        np.testing.assert_allclose(total, expected, atol=tol * 100)


@SETTINGS
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(0, 50), min_size=0, max_size=4))
def test_streaming_equals_one_shot_for_any_split(seed, cuts):
    h, j = _system(seed, 50, 5, 3)
    bounds = [0, *sorted(cuts), 50]
    acc = GramianAccumulator(5)
    for lo, hi in zip(bounds[:-1], bounds[1:]):  # empty batches included
        acc.add_activations(h[lo:hi])
    acc.add_jacobians(np.broadcast_to(j, (50, 3, 5)))
    one = extract_core(h, j, energy=0.95)
    streamed = acc.core(energy=0.95)
    np.testing.assert_allclose(acc.cov(), np.cov(h.T), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(streamed.weights, one.weights, rtol=1e-7, atol=1e-9)
    assert streamed.rank == one.rank
