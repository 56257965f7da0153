"""modadd.snap judged over at least 8 models of the headline trainer, on an interval over models."""

from __future__ import annotations

import copy

from ace_helpers.chapters.modadd_grokking import snap_models


def _comparison(ensemble: list[float], official: list[float]) -> dict:
    return {"epochs": 2000, "statistics": {"share_at_grok": {"values": {"ensemble": ensemble, "loop": [0.7] * 6,
                                                                        "official": official}}}}


def test_fewer_than_8_models_is_not_tested_and_the_other_runs_keep_the_headline() -> None:
    comparison = _comparison([0.7] * 6, [0.9, 0.9, 0.9])
    claims = snap_models.snap_claims(comparison)
    assert not claims.rows and "needs 8" in claims.not_tested[0].why
    records, _ = snap_models.with_snap_headline([{"id": "modadd.snap", "kind": "paper", "headline": True}], comparison)
    assert records[0]["headline"] and not records[1]["headline"]


def test_the_interval_over_models_decides_and_the_release_sets_the_cause_class() -> None:
    below = snap_models.snap_claims(_comparison([0.70, 0.72, 0.68, 0.74, 0.66, 0.71, 0.73, 0.69], [0.9, 0.93, 0.84]))
    (row,) = below.rows
    assert row.verdict == "not reproduced" and row.interval[1] < 0.8 and row.cause_class == "ours"
    assert row.official == [0.9, 0.93, 0.84] and not row.unexpected  # its cause was measured before: a known gap
    release_misses = snap_models.snap_claims(_comparison([0.70] * 8, [0.6, 0.7, 0.8]))
    assert release_misses.rows[0].cause_class == "paper"
    on = snap_models.snap_claims(_comparison([0.85, 0.9, 0.88, 0.92, 0.86, 0.9, 0.87, 0.95], [0.9] * 3))
    assert on.rows[0].verdict == "reproduced"
    split = snap_models.snap_claims(_comparison([0.6, 1.0] * 4, [0.9] * 3))
    assert split.rows[0].verdict == "inconclusive"


def test_the_many_model_row_takes_the_headline_and_names_its_departures() -> None:
    comparison = _comparison([0.70] * 12, [0.9, 0.93, 0.84])
    long = {"id": "modadd.snap", "kind": "paper", "headline": True, "section": "stored paper-preset run"}
    records, _ = snap_models.with_snap_headline([copy.deepcopy(long)], comparison)
    assert [r["headline"] for r in records] == [False, True]
    assert records[1]["section"] == "stored trainers' comparison: 12 ensemble models to epoch 2000"
    assert "N_MODELS = 12 (paper: 3)" in records[1]["departures"]
    assert not any("ARTIFACT_DIR" in d for d in records[1]["departures"])
