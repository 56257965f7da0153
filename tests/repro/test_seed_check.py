"""The seed check: which knobs it shifts, and its per-claim table over runs."""

import pytest

from ace_helpers.repro import seed_check


def test_seed_knobs_shift_every_seed_knob_of_the_preset_and_keep_the_data_seeds():
    assert seed_check.seed_knobs("02_modadd_grokking", "ci", 0) == {"SEED": 1032}
    assert seed_check.seed_knobs("02_modadd_grokking", "ci", 2) == {"SEED": 1032 + 2 * seed_check.OFFSET}
    assert seed_check.seed_knobs("07_core_stitching", "ci", 1).keys() == {"SEED", "MODADD_SEED"}
    assert seed_check.seed_knobs("04_grokking_scaling_law", "ci", 0) == {"SEED": 42}
    with pytest.raises(ValueError, match="chapter='08_x' is not allowed"):
        seed_check.seed_knobs("08_x", "ci", 0)


def test_every_seed_knob_is_a_knob_of_its_chapter():
    for stem, names in seed_check.SEED_KNOBS.items():
        knobs = seed_check.chapter_module(stem).PARAMS.knobs
        assert set(names) <= set(knobs), stem


def test_claim_table_counts_each_claim_over_runs():
    def run(verdict_a, ours_a, verdict_b="reproduced"):
        return {"knobs": {"SEED": 0}, "claims": [
            {"section": "ci preset", "claim": "a", "rule": "≥ 1", "verdict": verdict_a, "ours": ours_a},
            {"section": "ci preset", "claim": "b", "rule": "", "verdict": verdict_b, "ours": "x"},
            {"section": "stored run", "claim": "a", "rule": "≥ 1", "verdict": "not reproduced", "ours": "0"}]}
    runs = [run("reproduced", "1.2"), run("not reproduced", "0.9"), run("reproduced", "1.1", "not tested")]
    rows = seed_check.claim_table(runs, section="ci preset")
    assert [(r["claim"], r["held"], r["tested"]) for r in rows] == [("a", 2, 3), ("b", 2, 2)]
    assert rows[0]["ours"] == ["1.2", "0.9", "1.1"]
    table = seed_check.markdown("02_x", runs, rows)
    assert "| a | ≥ 1 | ✓ 1.2 | ✗ 0.9 | ✓ 1.1 | 2 of 3 |" in table and "| b |  | ✓ x | ✓ x | – x | 2 of 2 |" in table
    assert len(seed_check.claim_table(runs)) == 3  # every section
