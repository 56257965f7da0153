"""ace_helpers.method.specificity (CCA beside random, PCA and class-mean subspaces) and ace_helpers.method.merging."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers.method import compare
from ace_helpers.method.merging import blend, interpolate_weights
from ace_helpers.method.specificity import JointCov, cca_from_cov, mean_top, specificity_table
from ace_helpers.method.subspaces import random_basis
from ace_helpers.toys.models import ToyConfig, build_model


def _planted(n: int = 600, d: int = 24, r: int = 3, seed: int = 0):
    """Two 'models' holding the same r-dim latent (a function of a label) in different r-dim subspaces, plus
    private high-variance noise directions: the planted subspaces are the cores."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    latent = np.eye(4)[y][:, :r] + 0.05 * rng.standard_normal((n, r))
    qa, qb = random_basis(d, r, 1), random_basis(d, r, 2)
    outside = lambda q: (lambda e: e - e @ q @ q.T)(rng.standard_normal((n, d)) * 0.3)  # noqa: E731 - private noise
    noise_a, noise_b = outside(qa), outside(qb)
    return latent @ qa.T + noise_a, latent @ qb.T + noise_b, qa, qb, y


def test_cca_from_the_covariance_is_the_cca_of_the_coordinates() -> None:
    ha, hb, qa, qb, _ = _planted()
    assert np.allclose(cca_from_cov(JointCov.of(ha, hb), qa, qb), compare.cca(ha @ qa, hb @ qb), atol=1e-8)
    with pytest.raises(ValueError, match="same N"):
        JointCov.of(ha, hb[:10])
    with pytest.raises(ValueError, match="D_A"):
        cca_from_cov(JointCov.of(ha, hb), qa[:5], qb)


def test_planted_cores_beat_random_subspaces_and_random_ones_do_not() -> None:
    ha, hb, qa, qb, y = _planted()
    table = specificity_table(ha, hb, qa, qb, y, draws=60, seed=0)
    assert table["k"] == 3 and table["ranks"] == [3, 3]
    assert table["core"]["cca"] > 0.95 > table["random"]["cca"]["q95"]
    assert table["oracle"]["cca"] > 0.95  # the latent is the one-hot label: the oracle finds it too
    assert table["core"]["overlap"] < 0.5  # different subspaces, same information
    low, high = table["core"]["interval"]
    assert low <= table["core"]["cca"] + 1e-3 and high >= low and high > 0.95
    wrong = specificity_table(ha, hb, random_basis(24, 3, 7), random_basis(24, 3, 8), y, draws=60, seed=0)
    assert wrong["core"]["cca"] < wrong["random"]["cca"]["q95"]  # random "cores" are not above random


@pytest.mark.parametrize(("kwargs", "match"), [({"draws": 5}, "draws"), ({"y": np.zeros(600)}, "2 classes"),
                                               ({"y": np.arange(10)}, "one label per")])
def test_specificity_table_refuses_bad_input(kwargs, match) -> None:
    ha, hb, qa, qb, y = _planted()
    args = {"y": y} | kwargs
    with pytest.raises(ValueError, match=match):
        specificity_table(ha, hb, qa, qb, args.pop("y"), **args)
    with pytest.raises(ValueError, match="k="):
        mean_top(np.ones(3), 0)


def test_interpolating_a_model_with_itself_changes_nothing_and_the_ends_are_the_models() -> None:
    cfg = ToyConfig(vocab=5, d_model=8, n_layers=1, n_heads=2, max_len=4)
    a, b = build_model(cfg, 0).eval(), build_model(cfg, 1).eval()
    x = torch.randint(0, 5, (6, 4))
    with torch.no_grad():
        assert torch.allclose(interpolate_weights(a, a, 0.5)(x), a(x), atol=1e-6)
        assert torch.allclose(interpolate_weights(a, b, 0.0)(x), a(x), atol=1e-6)
        assert torch.allclose(interpolate_weights(a, b, 1.0)(x), b(x), atol=1e-6)
        mid = interpolate_weights(a, b, 0.5)
    w = "lm_head.weight"
    assert torch.allclose(mid.state_dict()[w], 0.5 * (a.state_dict()[w] + b.state_dict()[w]))
    with pytest.raises(ValueError, match="alpha"):
        interpolate_weights(a, b, 1.5)
    with pytest.raises(ValueError, match="architecture"):
        interpolate_weights(a, build_model(ToyConfig(vocab=5, d_model=12, n_layers=1, n_heads=2, max_len=4), 0), 0.5)


def test_blend() -> None:
    za, zb = np.zeros((4, 2)), np.ones((4, 2))
    assert np.allclose(blend(za, zb, 0.25), 0.25)
    with pytest.raises(ValueError, match="same shape"):
        blend(za, zb[:, :1], 0.5)
    with pytest.raises(ValueError, match="alpha"):
        blend(za, zb, -0.1)
