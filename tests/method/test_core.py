"""ACE core extraction against ground truth: planted subspaces, identities, invariances."""

import numpy as np
import pytest
import torch
from scipy.stats import special_ortho_group

from ace_helpers import GramianAccumulator, extract_core, extract_core_from_gramians, projector_overlap
from ace_helpers.method.baselines import jacobian_directions, pca_directions
from ace_helpers.toys.tasks.planted import planted_system


@pytest.fixture(scope="module")
def planted():
    return planted_system(n=4000, dim=32, seed=0)


def test_ace_finds_active_and_relevant_directions_only(planted):
    core = extract_core(planted.H, planted.W, rank=3)
    assert projector_overlap(core.basis, planted.core) >= 0.99
    assert projector_overlap(core.basis, planted.active_only) <= 0.01
    assert projector_overlap(core.basis, planted.relevant_only) <= 0.01
    # the naive alternatives each pick the wrong block
    assert projector_overlap(pca_directions(planted.H, 3), planted.active_only) >= 0.99
    assert projector_overlap(pca_directions(planted.H, 3), planted.core) <= 0.05
    assert projector_overlap(jacobian_directions(planted.W, 32, 3), planted.relevant_only) >= 0.95
    assert projector_overlap(jacobian_directions(planted.W, 32, 3), planted.core) <= 0.05


def test_energy_rule_recovers_planted_rank(planted):
    core = extract_core(planted.H, planted.W, energy=0.99)
    assert core.rank == 3
    assert core.energy_rank(0.99) == 3
    assert core.energy_fraction()[2] >= 0.99 > core.energy_fraction()[1]


def test_basis_is_orthonormal_and_weights_descending(planted):
    core = extract_core(planted.H, planted.W, energy=0.99)
    q = core.full_basis
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-10)
    assert np.all(np.diff(core.weights) <= 1e-12)
    assert core.basis.shape == (32, core.rank)


def test_weights_are_eigenvalues_of_cov_times_obs():
    rng = np.random.default_rng(1)
    h = rng.standard_normal((500, 8)) @ rng.standard_normal((8, 8))
    j = rng.standard_normal((500, 3, 8))
    core = extract_core(h, j, rank=2)
    cov = np.cov(h, rowvar=False)
    obs = np.einsum("nkd,nke->de", j, j) / 500
    eig = np.sort(np.linalg.eigvals(cov @ obs).real)[::-1]
    np.testing.assert_allclose(core.weights, eig, rtol=1e-5)


def test_core_is_rotation_equivariant(planted):
    rot = special_ortho_group.rvs(32, random_state=np.random.default_rng(2))
    a = extract_core(planted.H, planted.W, rank=3)
    b = extract_core(planted.H @ rot.T, planted.W @ rot.T, rank=3)
    np.testing.assert_allclose(b.projector(), rot @ a.projector() @ rot.T, atol=1e-8)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-8, atol=1e-12)


def test_streaming_equals_one_shot():
    rng = np.random.default_rng(3)
    h = 100.0 + rng.standard_normal((3000, 10)) @ rng.standard_normal((10, 10))  # large offset
    j = rng.standard_normal((3000, 2, 10))
    acc = GramianAccumulator(10)
    for start in range(0, 3000, 257):
        acc.add_activations(torch.as_tensor(h[start : start + 257]))
        acc.add_jacobians(j[start : start + 257])
    np.testing.assert_allclose(acc.cov(), np.cov(h, rowvar=False), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(acc.mean(), h.mean(axis=0), rtol=1e-12)
    streamed, direct = acc.core(rank=3), extract_core(h, j, rank=3)
    np.testing.assert_allclose(streamed.weights, direct.weights, rtol=1e-8)
    np.testing.assert_allclose(streamed.projector(), direct.projector(), atol=1e-8)


def test_jacobian_shapes_agree():
    rng = np.random.default_rng(4)
    h = rng.standard_normal((200, 6))
    w = rng.standard_normal((3, 6))
    per_sample = np.broadcast_to(w, (200, 3, 6))
    a, b = extract_core(h, w, rank=2), extract_core(h, per_sample, rank=2)
    np.testing.assert_allclose(a.projector(), b.projector(), atol=1e-10)
    g = rng.standard_normal((200, 6))  # scalar output: (N, D) gradients
    c = extract_core(h, g, rank=1)
    d = extract_core(h, g[:, None, :], rank=1)
    np.testing.assert_allclose(c.weights, d.weights, rtol=1e-10)


def test_fixed_rank_overrides_energy(planted):
    assert extract_core(planted.H, planted.W, energy=0.5, rank=5).rank == 5
    core = extract_core(planted.H, planted.W, energy=0.99)
    assert core.truncate(7).rank == 7
    np.testing.assert_array_equal(core.truncate(7).full_basis, core.full_basis)


def test_ablations_numpy_and_torch_agree(planted):
    core = extract_core(planted.H, planted.W, rank=3)
    h = planted.H[:5].reshape(5, 1, 32)  # extra leading dim
    ht = torch.as_tensor(h, dtype=torch.float32)
    for name in ("keep", "remove"):
        for centered in (False, True):
            a = getattr(core, name)(h, centered=centered)
            b = getattr(core, name)(ht, centered=centered)
            assert isinstance(b, torch.Tensor) and b.dtype == torch.float32 and b.shape == ht.shape
            np.testing.assert_allclose(a, b.numpy(), atol=1e-4)
    np.testing.assert_allclose(core.keep(h) + core.remove(h), h, atol=1e-12)
    z = core.coords(h, centered=True)
    np.testing.assert_allclose(core.coords(core.flip(h), centered=True), -z, atol=1e-10)
    np.testing.assert_allclose(core.flip(core.flip(h)), h, atol=1e-10)
    np.testing.assert_allclose(core.flip(h, scale=0.5), core.remove(h, centered=True), atol=1e-10)


@pytest.mark.parametrize(
    "h, j, match",
    [
        (np.full((10, 4), np.nan), np.ones((2, 4)), "NaN"),
        (np.ones((10, 4)), np.ones((2, 4)), "identical"),
        (np.random.default_rng(0).standard_normal((10, 4)), np.zeros((2, 4)), "identically zero"),
        (np.ones((1, 4)), np.ones((2, 4)), "at least 2"),
        (np.random.default_rng(0).standard_normal((10, 4)), np.ones((2, 5)), "last dimension"),
    ],
)
def test_degenerate_inputs_raise(h, j, match):
    with pytest.raises(ValueError, match=match):
        extract_core(h, j)


def test_rank_beyond_rank_deficient_input_raises():
    rng = np.random.default_rng(5)
    h = rng.standard_normal((100, 2)) @ rng.standard_normal((2, 6))  # rank 2 in D = 6
    core = extract_core(h, np.eye(6), rank=2)
    assert core.rank == 2
    with pytest.raises(ValueError, match="only 2 directions"):
        extract_core(h, np.eye(6), rank=3)


@pytest.mark.parametrize("kwargs", [{"energy": 0.0}, {"energy": 1.5}, {"rank": 0}, {"rank": 99}, {"energy": True}])
def test_bad_rank_rules_raise(planted, kwargs):
    with pytest.raises(ValueError, match="energy|rank"):
        extract_core(planted.H, planted.W, **kwargs)


def test_gramian_inputs_validated():
    with pytest.raises(ValueError, match="square"):
        extract_core_from_gramians(np.eye(3), np.eye(4))
    with pytest.raises(ValueError, match="NaN"):
        extract_core_from_gramians(np.eye(3) * np.nan, np.eye(3))


def test_the_compact_core_edits_like_the_full_one_with_d_times_r_numbers():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(50, 12))
    core = extract_core(h, rng.normal(size=(50, 3, 12)), rank=2)
    small = core.compact()
    assert small.full_basis.shape == (12, 2) and small.weights.shape == (2,) and small.dim == 12
    for edit in ("keep", "remove"):
        np.testing.assert_array_equal(getattr(small, edit)(h, centered=True), getattr(core, edit)(h, centered=True))
    np.testing.assert_array_equal(small.flip(h), core.flip(h))
    np.testing.assert_array_equal(small.coords(h), core.coords(h))
