"""Chapter 5's flip-demo significance (``sva.flip_demo_tests``): the results entries, the claim rule and where it fails."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ace_helpers.chapters import llm_agreement as A
from ace_helpers.chapters.llm_agreement import flip_demo as F
from ace_helpers.repro.report import Claims

MODELS = ["m1", "m2"]


def _scores(removal: float, flip: float, seed: int, noise: float = 0.3) -> dict[str, np.ndarray]:
    """Six prompts' scores: base, then removal and flip each shift them by a mean effect (+ noise)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0.5, 0.3, size=6)
    removed = base + removal + noise * rng.normal(size=6)
    return {"base": base, "removed": removed, "flipped": removed + flip + noise * rng.normal(size=6)}


def _row(scores: dict[str, dict[str, np.ndarray]], known_gap: str | None = None):
    results = json.loads(json.dumps(F.demo_test_entries(scores)))  # as results.json stores them
    claims = Claims()
    assert F.flip_demo_claim(claims, results, list(scores), known_gap)
    (row,) = claims.rows
    return row, results


def test_the_entries_hold_both_alternatives_per_model_and_combined():
    scores = {m: _scores(-3.0, -3.0, seed=i) for i, m in enumerate(MODELS)}
    out = F.demo_test_entries(scores)
    for k in ("base_vs_removed", "base_vs_flipped", "removed_vs_flipped"):
        assert out[f"demo_fisher_p_{k}"] == pytest.approx(A.combined_demo_tests(scores).combined[k])
        assert out[f"demo_fisher_p_two_sided_{k}"] == pytest.approx(A.combined_demo_tests(scores, "two-sided").combined[k])
        assert out[f"m1.demo_p_{k}"] == pytest.approx(A.demo_tests(scores["m1"])[k])
        assert f"m2.demo_p_two_sided_{k}" in out
    assert out["m2.demo_score_flipped"] == pytest.approx(scores["m2"]["flipped"].tolist())
    empty = F.demo_test_entries({})
    assert set(empty) == {f"demo_fisher_p{s}_{k}" for s in ("", "_two_sided") for k in A.demo_tests(scores["m1"])}
    assert all(v is None for v in empty.values())


def test_removal_then_a_further_flip_reproduces():
    row, results = _row({m: _scores(-3.0, -3.0, seed=i) for i, m in enumerate(MODELS)})
    assert row.verdict == "reproduced" and row.id == "sva.flip_demo_tests" and row.kind == "paper" and row.headline
    assert row.threshold == F.DEMO_P and row.op == "<"
    assert row.value == pytest.approx([(1 / 64) ** 2 * (1 - 2 * np.log(1 / 64))] * 3)  # Fisher of two p = 1/64
    assert np.array(row.per_seed).shape == (2, 3)  # per model, the three comparisons
    assert "two-sided as the code release" in row.ours and "per model: m1" in row.ours
    assert "one-sided" in row.rule and "1/64" in row.rule and "two-sided" in row.rule


def test_scores_the_edits_leave_unchanged_do_not_reproduce():
    """The plausible wrong input: removing and flipping the core do nothing to the score (noise only)."""
    row, _ = _row({m: _scores(0.0, 0.0, seed=10 + i, noise=0.2) for i, m in enumerate(MODELS)})
    assert all(p > 0.1 for p in row.value), row.value
    assert row.verdict == "not reproduced" and row.unexpected


def test_a_flip_that_raises_the_score_does_not_reproduce_though_two_sided_it_would():
    """The one-sided rule: a flip that makes agreement better is no support, though scipy's default
    two-sided test (the code release's) calls it significant."""
    row, results = _row({m: _scores(3.0, 3.0, seed=20 + i) for i, m in enumerate(MODELS)})
    assert row.verdict == "not reproduced"
    assert all(results[f"demo_fisher_p_two_sided_{k}"] < F.DEMO_P for k in ("base_vs_removed", "removed_vs_flipped"))


def test_removal_that_does_nothing_is_partly():
    """Mixed: the flip lowers the score, removal does not (base vs removed not significant)."""
    row, _ = _row({m: _scores(0.0, -3.0, seed=30 + i, noise=0.2) for i, m in enumerate(MODELS)})
    p_removed, p_flipped, p_further = row.value
    assert p_removed > F.DEMO_P and p_flipped < F.DEMO_P and p_further < F.DEMO_P
    assert row.verdict == "partly"


def test_a_known_gap_a_run_without_the_demo_and_half_written_results():
    row, _ = _row({m: _scores(0.0, 0.0, seed=10 + i, noise=0.2) for i, m in enumerate(MODELS)}, known_gap="measured")
    assert row.verdict == "not reproduced" and not row.unexpected and row.known_gap == "measured"
    claims = Claims()
    assert not F.flip_demo_claim(claims, F.demo_test_entries({}), MODELS) and not claims.rows
    half = {**F.demo_test_entries({"m1": _scores(-3.0, -3.0, seed=0)}), "demo_fisher_p_base_vs_removed": None}
    with pytest.raises(ValueError, match="only some"):
        F.flip_demo_claim(Claims(), half, ["m1"])


def test_table_and_reading():
    scores = {m: _scores(-3.0, -3.0, seed=i) for i, m in enumerate(MODELS)}
    results = F.demo_test_entries(scores)
    table = A.demo_tests_table(results, MODELS)
    assert table.count("\n") == 4 and "Fisher-combined" in table and "base > removed (two-sided)" in table
    assert A.demo_tests_reading(results).count("below 0.05") == 3
    assert A.demo_tests_reading(F.demo_test_entries({})).startswith("n/a")
    assert "n/a" in A.demo_tests_table({k: v for k, v in results.items() if "two_sided" not in k}, MODELS)


def test_the_ci_presets_seed_sensitivity_is_a_known_gap_of_that_run_only():
    ci = A.PARAMS.resolve(PRESET="ci")
    assert "seed-sensitive" in A.KNOWN_GAPS.reason(ci, "demo_tests")
    assert A.KNOWN_GAPS.reason(ci.replace(SEED=1), "demo_tests") is None
    assert A.KNOWN_GAPS.reason(A.PARAMS.resolve(PRESET="book"), "demo_tests") is None
