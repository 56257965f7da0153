"""ace_helpers.method.stats: ROC-AUC, affine knob fit, one-sided paired Wilcoxon, Fisher combination, permutation p-values."""

from __future__ import annotations

import numpy as np
import pytest

from ace_helpers.method import stats


def test_roc_auc_matches_pair_counting():
    rng = np.random.default_rng(0)
    scores, labels = rng.normal(size=60).round(1), rng.integers(0, 2, 60)
    pos, neg = scores[labels == 1], scores[labels == 0]
    brute = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert stats.roc_auc(scores, labels) == pytest.approx(brute)
    assert stats.roc_auc([1, 2, 3, 4], [0, 0, 1, 1]) == 1.0 and stats.roc_auc([4, 3, 2, 1], [0, 0, 1, 1]) == 0.0
    with pytest.raises(ValueError, match="both classes"):
        stats.roc_auc([1, 2], [1, 1])


def test_knob_fit():
    z = np.linspace(-1, 1, 20)
    fit = stats.knob_fit(z, 3 * z - 1)
    assert fit.r2 == pytest.approx(1.0) and fit.slope == pytest.approx(3.0) and fit.intercept == pytest.approx(-1.0)
    noisy = stats.knob_fit(z, 3 * z + np.random.default_rng(0).normal(size=20))
    assert 0 < noisy.r2 < 1


def test_wilcoxon_greater_and_fisher_combine():
    a = np.arange(6.0)
    assert stats.wilcoxon_greater(a, a - 3) == pytest.approx(1 / 64)  # six positive differences: the smallest p
    assert stats.wilcoxon_greater(a - 3, a) > 0.9
    assert stats.wilcoxon_greater(a, a) == 1.0
    assert stats.fisher_combine([1 / 64, 1 / 64]) < 1 / 64
    assert stats.fisher_combine([1.0, 1.0]) == pytest.approx(1.0)


def test_permutation_p_value():
    rng = np.random.default_rng(0)
    x = rng.normal(size=80)
    assert stats.permutation_p_value(x, -2 * x + 0.01 * rng.normal(size=80), n_permutations=500) == pytest.approx(1 / 501)
    assert stats.permutation_p_value(x, rng.normal(size=80), n_permutations=500) > 0.01
