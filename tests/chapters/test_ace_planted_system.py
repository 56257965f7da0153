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
    assert res["ace_rank"] == 3 and len(claims.rows) == 7
    assert all(r.where and r.rule for r in claims.rows)
    claims.assert_all()
    broken = dict(res, ace_rank=4, acc_remove={**res["acc_remove"], "ace": 0.9})
    bad = chapter.build_claims(broken, cfg)
    assert sum(not r.passed for r in bad.rows) == 2
    baselines = dict(res, acc_keep={**res["acc_keep"], "pca": 0.9})
    failed = [r.claim for r in chapter.build_claims(baselines, cfg).rows if not r.passed]
    assert failed == ["the PCA subspace is not sufficient"]


@pytest.mark.parametrize(
    ("knobs", "named"),
    [({"N_SAMPLES": 10**9}, "N_SAMPLES"), ({"DIM": 10**6}, "DIM"), ({"N_SAMPLES": 10**9, "DIM": 10**6}, "N_SAMPLES")],
)
def test_sizes_that_cannot_fit_are_refused_before_compute(knobs, named) -> None:
    """Regression: DIM = 10**6 or N_SAMPLES = 10**9 passed the check (and failed in the middle of the run)."""
    with pytest.raises(ValueError, match=r"would need ~\S+ [KMGT]iB .*the limit is 8 GiB") as err:
        chapter.PARAMS.resolve(PRESET="ci", **knobs)
    assert named in str(err.value) and f"lower {named}" in str(err.value)
    assert chapter.memory_estimate(8000, 32) < chapter.MEMORY_LIMIT  # the book preset fits


def test_book_prose_agrees_with_the_stored_book_results() -> None:
    """What the chapter's text says in words (not glued) about the book run, checked on book/results."""
    import json
    from pathlib import Path

    res = json.loads((Path(__file__).resolve().parents[2] / "book/results/00_ace_planted_system.json").read_text())
    best = {m: max(res["overlap"][m], key=res["overlap"][m].get) for m in chapter.METHODS}
    assert best == {"ace": "core", "pca": "active_only", "jacobian": "relevant_only"}  # "the one cell near 1 in each row"
    assert all(max(res["overlap"][m].values()) > 0.99 for m in chapter.METHODS)
    chance = res["chance_acc"]
    assert res["acc_keep"]["pca"] <= chance + 0.05 and res["acc_remove"]["pca"] > 0.9  # PCA: neither
    assert res["acc_keep"]["jacobian"] > 0.8  # "kept alone it still scores" well
    assert res["weights_top"][2] / res["weights_top"][3] > 100  # the weights fall sharply after the planted rank
