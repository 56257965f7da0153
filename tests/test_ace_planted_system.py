"""Chapter 0 (ace_helpers.chapters.ace_planted_system): knobs, pipeline and claims on the planted system."""

from __future__ import annotations

import pytest

from ace_helpers.chapters import ace_planted_system as chapter


def test_knobs_are_validated() -> None:
    cfg = chapter.PARAMS.resolve(PRESET="ci")
    assert cfg.N_SAMPLES == 2000 and cfg.R_CORE == 3
    with pytest.raises(ValueError, match="R_CORE"):
        chapter.PARAMS.resolve(PRESET="ci", R_CORE=11)  # > DIM // 3
    with pytest.raises(ValueError, match="ENERGY"):
        chapter.PARAMS.resolve(PRESET="ci", ENERGY=0.0)


def test_ace_finds_the_planted_core_and_claims_hold() -> None:
    cfg = chapter.PARAMS.resolve(PRESET="ci", N_SAMPLES=800)
    res = chapter.run(cfg)
    claims = chapter.build_claims(res, cfg)
    assert res["ace_rank"] == 3 and len(claims.rows) == 6
    claims.assert_all()
    broken = dict(res, ace_rank=4, acc_remove={**res["acc_remove"], "ace": 0.9})
    bad = chapter.build_claims(broken, cfg)
    assert sum(not r.passed for r in bad.rows) == 2
