"""Comparison metrics and operator fits against known answers."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import special_ortho_group

from ace_helpers import (
    aligned_correlations,
    cca,
    fit_dynamics,
    fit_shift_operator,
    match_eigenvalues,
    near_unit_circle,
    principal_angles,
    projector_overlap,
    rotational_modes,
    weight_cosine,
)


def _basis(d, r, seed):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((d, r)))[0]


def test_overlap_identity_orthogonal_and_random_level():
    q = _basis(64, 3, 0)
    assert projector_overlap(q, q) == pytest.approx(1.0)
    assert projector_overlap(q, q @ special_ortho_group.rvs(3, random_state=1)) == pytest.approx(1.0)
    e = np.eye(64)
    assert projector_overlap(e[:, :3], e[:, 3:6]) == pytest.approx(0.0, abs=1e-15)
    rand = [projector_overlap(_basis(64, 3, s), _basis(64, 3, s + 1000)) for s in range(200)]
    assert np.mean(rand) == pytest.approx(3 / 64, rel=0.15)  # random level r/D


def test_principal_angles():
    e = np.eye(5)
    np.testing.assert_allclose(principal_angles(e[:, :2], e[:, 2:4]), [90.0, 90.0])
    np.testing.assert_allclose(principal_angles(e[:, :2], e[:, :2]), [0.0, 0.0], atol=1e-6)
    tilted = np.stack([e[:, 0], np.cos(0.3) * e[:, 1] + np.sin(0.3) * e[:, 2]], axis=1)
    np.testing.assert_allclose(principal_angles(e[:, :2], tilted), [0.0, np.degrees(0.3)], atol=1e-6)


def test_overlap_refuses_bases_without_orthonormal_columns():
    """Regression: a zero basis against [e1, e2] gave 1.0 and [e1, e1] against [e2, e3] gave 0.5."""
    e = np.eye(4)
    with pytest.raises(ValueError, match="Qa does not have orthonormal columns"):
        projector_overlap(np.zeros((4, 2)), e[:, :2])
    with pytest.raises(ValueError, match="Qa does not have orthonormal columns"):
        projector_overlap(np.stack([e[:, 0], e[:, 0]], axis=1), e[:, 1:3])
    with pytest.raises(ValueError, match="Qb does not have orthonormal columns"):
        projector_overlap(e[:, :2], 2 * e[:, :2])  # unnormalised
    with pytest.raises(ValueError, match="orthonormal"):
        principal_angles(e[:, :2], np.stack([e[:, 0], e[:, 0] + 1e-3 * e[:, 1]], axis=1))
    assert projector_overlap(e[:, :2], e[:, :2].astype(np.float32)) == pytest.approx(1.0)


@st.composite
def _basis_pairs(draw):
    d = draw(st.integers(2, 8))
    ra, rb = draw(st.integers(1, d)), draw(st.integers(1, d))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    a = _basis(d, ra, seed)
    same = draw(st.booleans())
    if same:  # the same span, another basis of it
        rb = ra
        b = a @ np.linalg.qr(rng.standard_normal((ra, ra)))[0]
    else:
        b = np.linalg.qr(rng.standard_normal((d, rb)))[0]
    return a, b, same


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(pair=_basis_pairs())
def test_overlap_lies_in_unit_interval_and_is_one_only_for_equal_spans(pair):
    a, b, same = pair
    ov = projector_overlap(a, b)
    assert -1e-12 <= ov <= 1 + 1e-12
    assert ov == pytest.approx(projector_overlap(b, a), abs=1e-12)  # symmetric
    # equal spans <=> equal ranks and the projectors agree
    equal_spans = a.shape[1] == b.shape[1] and np.allclose(a @ a.T, b @ b.T, atol=1e-8)
    assert equal_spans or not same
    if equal_spans:
        assert ov == pytest.approx(1.0, abs=1e-9)
    else:
        assert ov < 1 - 1e-9


def test_cca_identities():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((5000, 3))
    np.testing.assert_allclose(cca(z, z), 1.0, atol=1e-6)
    mixed = z @ rng.standard_normal((3, 3)) + 5.0  # invertible linear map + shift: still 1
    np.testing.assert_allclose(cca(z, mixed), 1.0, atol=1e-6)
    noise = cca(z, rng.standard_normal((5000, 3)))
    assert noise.max() < 0.08
    partial = cca(z, np.c_[z[:, 0] + 0.01 * rng.standard_normal(5000), rng.standard_normal((5000, 2))])
    assert partial[0] > 0.99 and partial[1] < 0.08
    assert np.all(np.diff(partial) <= 0)
    assert len(cca(z, mixed, k=2)) == 2


def test_aligned_correlations_fix_sign():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(300)
    s, p = aligned_correlations(x, -3 * x + 0.1 * rng.standard_normal(300))
    assert s > 0.99 and p > 0.99
    s0, _ = aligned_correlations(x, rng.standard_normal(300))
    assert abs(s0) < 0.2


def test_aligned_correlations_refuse_a_constant_vector():
    """Regression: a constant coordinate returned (nan, nan)."""
    x = np.arange(10.0)
    with pytest.raises(ValueError, match="zb is constant"):
        aligned_correlations(x, np.full(10, 2.5))
    with pytest.raises(ValueError, match="za is constant"):
        aligned_correlations(np.zeros(10), x)
    with pytest.raises(ValueError, match="zb contains NaN"):
        aligned_correlations(x, np.r_[x[:-1], np.nan])


def test_weight_cosine():
    a, b = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    assert weight_cosine(a, a) == pytest.approx(1.0)
    with torch.no_grad():
        for pa, pb in zip(a.parameters(), b.parameters()):
            pb.copy_(-pa)
    assert weight_cosine(a, b) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="architecture"):
        weight_cosine(a, torch.nn.Linear(5, 3))


def test_fit_dynamics_recovers_known_eigenvalues_from_noisy_trajectories():
    rng = np.random.default_rng(2)
    true = np.array([0.75 + 0.25j, 0.75 - 0.25j, 0.5])
    a = np.array([[0.75, -0.25, 0.0], [0.25, 0.75, 0.0], [0.0, 0.0, 0.5]])
    basis = special_ortho_group.rvs(3, random_state=3)
    a = basis @ a @ basis.T
    z = np.zeros((20000, 3))
    z[0] = rng.standard_normal(3)
    for t in range(1, len(z)):
        z[t] = a @ z[t - 1] + rng.standard_normal(3)
    fit = fit_dynamics(z[:-1] + 2.0, z[1:] + 2.0)  # offsets are removed by centring
    _, err = match_eigenvalues(true, fit.eigenvalues)
    assert err < 0.02
    assert 0.3 < fit.r2 < 0.7  # unit noise on a contraction: R² well below 1


def test_match_eigenvalues_ignores_spurious_extra():
    pairs, err = match_eigenvalues([1.0, 0.5], [0.49, 0.02, 1.01])
    assert err == pytest.approx(0.01)
    assert sorted(p[1].real for p in pairs) == [0.49, 1.01]


def test_shift_operator_on_a_perfect_clock():
    p = 13
    angles = 2 * np.pi * np.arange(p) / p
    means = np.stack([np.cos(angles), np.sin(angles), np.cos(3 * angles), np.sin(3 * angles)], axis=1)
    means = means @ np.random.default_rng(4).standard_normal((4, 6))  # embed in 6-D
    fit = fit_shift_operator(means, ridge=0.0, holdout=2)
    assert fit.k == 4
    assert fit.r2 == pytest.approx(1.0) and fit.r2_holdout == pytest.approx(1.0)
    assert near_unit_circle(fit.eigenvalues, np.sin(np.pi / p)).all()
    assert rotational_modes(fit.eigenvalues, p) == 2  # frequencies 1 and 3
    noise = fit_shift_operator(np.random.default_rng(5).standard_normal((p, 4)), holdout=2)
    assert noise.r2_holdout < 0.5


def test_rotational_modes_bins_and_radius():
    p = 53
    lam = np.exp(2j * np.pi * np.array([1, -1, 5, 52]) / p)
    assert rotational_modes(lam, p) == 2  # 1, -1 and 52 fold to bin 1; 5 is bin 5
    assert rotational_modes(0.5 * lam, p) == 0
    assert rotational_modes([1.0], p) == 1  # bin 0


def test_operator_inputs_validated():
    with pytest.raises(ValueError, match="holdout"):
        fit_shift_operator(np.ones((5, 2)), holdout=4)
    with pytest.raises(ValueError, match="N > r"):
        fit_dynamics(np.ones((2, 3)), np.ones((2, 3)))
