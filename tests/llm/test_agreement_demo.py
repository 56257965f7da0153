"""ace_helpers.llm.agreement_demo: the flip demo's scores, paired Wilcoxon tests and their Fisher combination."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from ace_helpers.llm import agreement_demo as D
from ace_helpers.method import stats

SIX = np.array([0.3, -0.2, 1.1, 0.7, -1.5, 0.05])


def test_demo_scores_follow_the_correct_number_set():
    probs = np.array([[0.5, 0.1, 0.3, 0.1], [0.5, 0.1, 0.3, 0.1], [0.05, 0.6, 0.05, 0.3]])
    s = D.demo_scores(probs, np.array([0, 1, 1]))
    np.testing.assert_allclose(s, np.log([0.8 / 0.5, 0.2 / 0.5, 0.9 / 0.6]))
    assert s[0] > 0 > s[1]  # right number on top: above 0; wrong number on top: below
    with pytest.raises(ValueError, match=r"\(N, 4\)"):
        D.demo_scores(probs[:, :3], np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="labels must be 0"):
        D.demo_scores(probs, np.array([0, 2, 1]))


def test_paired_wilcoxon_p_one_and_two_sided():
    lower = SIX - np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # six positive differences, all distinct
    assert D.paired_wilcoxon_p(SIX, lower) == pytest.approx(1 / 64)  # the smallest one-sided p of six prompts
    assert D.paired_wilcoxon_p(SIX, lower, "two-sided") == pytest.approx(1 / 32)
    assert D.paired_wilcoxon_p(lower, SIX) > 0.95  # the wrong direction: one-sided large ...
    assert D.paired_wilcoxon_p(lower, SIX, "two-sided") == pytest.approx(1 / 32)  # ... two-sided small
    one_back = SIX - np.array([-0.5, 2.0, 3.0, 4.0, 5.0, 6.0])  # the smallest difference goes the other way
    assert D.paired_wilcoxon_p(SIX, one_back) == pytest.approx(2 / 64)
    assert D.paired_wilcoxon_p(SIX, SIX) == 1.0 and D.paired_wilcoxon_p(SIX, SIX, "two-sided") == 1.0
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.normal(size=6), rng.normal(size=6)
        assert D.paired_wilcoxon_p(a, b) == pytest.approx(stats.wilcoxon_greater(a, b))


def test_paired_wilcoxon_p_refuses_bad_input():
    with pytest.raises(ValueError, match="alternative"):
        D.paired_wilcoxon_p(SIX, SIX, "less")
    with pytest.raises(ValueError, match="paired"):
        D.paired_wilcoxon_p(SIX, SIX[:5])
    with pytest.raises(ValueError, match="NaN or infinity"):
        D.paired_wilcoxon_p(SIX, np.r_[SIX[:5], -np.inf])


def test_demo_tests_name_the_three_comparisons():
    scores = {"base": SIX, "removed": SIX - np.arange(1.0, 7.0), "flipped": SIX - 10 * np.arange(1.0, 7.0)}
    p = D.demo_tests(scores)
    assert list(p) == list(D.COMPARISON_KEYS) == ["base_vs_removed", "base_vs_flipped", "removed_vs_flipped"]
    assert all(v == pytest.approx(1 / 64) for v in p.values())
    assert all(v == pytest.approx(1 / 32) for v in D.demo_tests(scores, "two-sided").values())
    with pytest.raises(ValueError, match="flipped"):
        D.demo_tests({"base": SIX, "removed": SIX})


def test_fisher_p_and_the_combination_over_models():
    assert D.fisher_p([0.2]) == pytest.approx(0.2)  # one model: its own p
    assert D.fisher_p([1 / 64, 1 / 64]) == pytest.approx(chi2.sf(-2 * 2 * np.log(1 / 64), 4))
    assert D.fisher_p([1 / 64, 1 / 64]) == pytest.approx(stats.fisher_combine([1 / 64, 1 / 64]))
    for bad in ([], [0.0], [1.2]):
        with pytest.raises(ValueError, match="p-values"):
            D.fisher_p(bad)
    down = {"base": SIX, "removed": SIX - np.arange(1.0, 7.0), "flipped": SIX - 10 * np.arange(1.0, 7.0)}
    same = {"base": SIX, "removed": SIX, "flipped": SIX}
    tests = D.combined_demo_tests({"a": down, "b": same})
    assert tests.alternative == "greater" and list(tests.per_model) == ["a", "b"]
    assert tests.table() == [[pytest.approx(1 / 64)] * 3, [1.0] * 3]
    assert tests.combined["base_vs_flipped"] == pytest.approx(D.fisher_p([1 / 64, 1.0]))
    with pytest.raises(ValueError, match="at least one model"):
        D.combined_demo_tests({})
