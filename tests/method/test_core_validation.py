"""The method layer refuses input it would otherwise turn into a silently wrong core."""

import numpy as np
import pytest
import torch

from ace_helpers.method.core import Core, GramianAccumulator, extract_core, extract_core_from_gramians


def _core(d: int = 6, r: int = 2) -> Core:
    rng = np.random.default_rng(0)
    return extract_core(rng.normal(size=(200, d)), rng.normal(size=(3, d)), rank=r)


def test_per_sample_jacobians_must_match_the_rows():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="J has 205 per-sample Jacobians but H has 200 rows"):
        extract_core(rng.normal(size=(200, 8)), rng.normal(size=(205, 4, 8)))
    assert extract_core(rng.normal(size=(200, 8)), rng.normal(size=(200, 4, 8))).dim == 8


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_keep_and_remove_on_integer_tensors_use_floats(dtype):
    core = _core()
    h = torch.arange(12).reshape(2, 6).to(dtype)
    expected = core.keep(h.double().numpy())
    np.testing.assert_allclose(core.keep(h).double().numpy(), expected, atol=1e-5)
    assert core.keep(h).abs().sum() > 0 and core.keep(h).is_floating_point()
    np.testing.assert_allclose((core.keep(h) + core.remove(h)).double().numpy(), h.double().numpy(), atol=1e-5)


def test_array_likes_are_accepted_and_wrong_widths_named():
    core = _core()
    rows = [[1.0, 2, 3, 4, 5, 6]]
    np.testing.assert_allclose(core.keep(rows), core.keep(np.asarray(rows)))
    np.testing.assert_allclose(core.keep(np.asarray(rows, dtype=int)), core.keep(np.asarray(rows, dtype=float)))
    with pytest.raises(ValueError, match=r"shape \(1, 5\).*D=6"):
        core.keep([[1.0, 2, 3, 4, 5]])


def test_gramians_must_be_symmetric_psd_and_the_mean_the_right_length():
    d = 4
    cov, obs = np.eye(d), np.diag([1.0, 2, 3, 4])
    with pytest.raises(ValueError, match="mean has shape \\(3,\\).*D=4"):
        extract_core_from_gramians(cov, obs, mean=np.zeros(3))
    skew = cov.copy()
    skew[0, 1] = 0.5
    with pytest.raises(ValueError, match="cov is not symmetric"):
        extract_core_from_gramians(skew, obs)
    with pytest.raises(ValueError, match="obs is not positive semi-definite.*smallest eigenvalue -1"):
        extract_core_from_gramians(cov, np.diag([1.0, 1, 1, -1]))
    with pytest.raises(ValueError, match="every activation row is identical"):
        extract_core_from_gramians(np.zeros((d, d)), obs)


def test_an_empty_first_batch_adds_nothing():
    rng = np.random.default_rng(2)
    h = rng.normal(loc=5.0, size=(50, 3))
    acc = GramianAccumulator(3).add_activations(np.zeros((0, 3))).add_activations(h)
    np.testing.assert_allclose(acc.cov(), np.cov(h.T), atol=1e-12)
    np.testing.assert_allclose(acc.mean(), h.mean(0), atol=1e-12)
    assert acc.n_rows == 50
    with pytest.raises(ValueError, match="last dimension must be the accumulator's D=3"):
        acc.add_activations(np.zeros((0, 4)))
