"""Chapter 7's paper rows: modadd.invariant (cores' CCA beside random, PCA and class-mean subspaces) and
implication.merging (naive weight interpolation against the merge of aligned cores)."""

from __future__ import annotations

import copy

import matplotlib
import pytest

from ace_helpers.chapters import core_stitching as chapter
from ace_helpers.chapters.core_stitching import figures_merging, paper_rows
from ace_helpers.chapters.core_stitching.merging import ALPHAS, PATHS, accuracy
from ace_helpers.repro.report import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED

CCA_INVARIANT = paper_rows.CCA_INVARIANT

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def tiny_run():
    cfg = chapter.PARAMS.resolve(PRESET="ci", N_TRAIN=200, N_TEST=60, EPOCHS=4, R_MAX=3, MODADD=True, P=11,
                                 MODADD_MAX_STEPS=25, MODADD_R_MAX=2)
    return chapter.run(cfg), cfg


def _merge(weights: list[float], aligned: list[float], chance: float = 0.25) -> dict:
    flat = [weights[0]] * len(ALPHAS)
    return {"pair": [0, 1], "alphas": list(ALPHAS), "chance": chance,
            "acc": {"weights": weights, "activations": flat, "core_aligned": aligned, "full_aligned": flat}}


def _inv(core: float, pca: float, q95: float = 0.6, oracle: float = 0.9) -> dict:
    score = lambda c: {"cca": c, "overlap": 0.05, "rho": [c]}  # noqa: E731
    return {"pair": [0, 1], "k": 3, "ranks": [3, 3], "core": score(core), "pca": score(pca), "oracle": score(oracle),
            "random": {"cca": {"mean": q95 - 0.1, "q05": q95 - 0.2, "q95": q95}, "overlap": None, "draws": 200}}


# -------------------- the rules on plausible wrong inputs -------------------------------------------------
def test_naive_interpolation_of_identical_models_does_not_fail() -> None:
    same = _merge([0.75] * 5, [0.75] * 5)  # a model interpolated with itself: a flat path
    assert not paper_rows.naive_fails(same) and paper_rows.aligned_keeps(same)
    broken = _merge([0.75, 0.4, 0.26, 0.4, 0.75], [0.75] * 5)
    assert paper_rows.naive_fails(broken) and paper_rows.drop_line(broken) == pytest.approx(0.5)
    assert paper_rows.midpoint_loss(broken) == pytest.approx(0.98)
    assert not paper_rows.aligned_keeps(_merge([0.75] * 5, [0.75, 0.75, 0.5, 0.75, 0.75]))  # the aligned merge sags
    with pytest.raises(ValueError, match="α = 0.5"):
        paper_rows.naive_fails(dict(broken, alphas=[0.0, 0.3, 0.6, 0.8, 1.0]))


def test_the_invariance_rule_fails_on_random_level_cca_and_is_partly_below_pca() -> None:
    assert paper_rows.invariance_holds(_inv(0.95, 0.95)) == (True, True)
    assert paper_rows.invariance_holds(_inv(0.5, 0.5)) == (False, False)  # a random subspace: not above random
    assert paper_rows.invariance_holds(_inv(0.8, 0.95)) == (False, True)  # above random, below PCA: partly


def test_accuracy_checks_shapes() -> None:
    import torch

    with pytest.raises(ValueError, match="one shape"):
        accuracy(torch.zeros(3, 2), torch.zeros(3, 1), None)
    assert accuracy(torch.tensor([[1, 2]]), torch.tensor([[0, 2]]), -1) == 1.0


# -------------------- the chapter's run ------------------------------------------------------------------
def test_run_measures_every_pair(tiny_run) -> None:
    res, _ = tiny_run
    m, a = res["markov"], res["modadd"]
    assert [inv["pair"] for inv in m["invariance"]] == [[0, 1], [0, 2], [1, 2]] and len(a["invariance"]) == 1
    assert [mg["pair"] for mg in m["merging"]] == [list(p) for p in chapter.MARKOV_PAIRS] and len(a["merging"]) == 1
    for mg in m["merging"] + a["merging"]:
        assert set(mg["acc"]) == set(PATHS) and all(len(v) == len(ALPHAS) for v in mg["acc"].values())
        ends = mg["acc"]["weights"][0]
        assert all(mg["acc"][p][0] == pytest.approx(ends, abs=0.02) for p in PATHS)  # α = 0 is model A on every path
    for inv in m["invariance"]:
        assert inv["k"] == min(inv["ranks"]) and 0 <= inv["core"]["cca"] <= 1
    assert "Markov seeds" in figures_merging.invariance_text(res) and "naive interpolation" in figures_merging.merging_text(res)
    assert "class-mean oracle" in figures_merging.invariance_table(res)
    fig = figures_merging.merging_figure(res)
    assert len(fig.axes) == 4


def test_one_headline_per_paper_id_and_untested_without_modadd(tiny_run) -> None:
    res, cfg = tiny_run
    claims = chapter.build_claims(res, cfg)
    for pid in (CCA_INVARIANT, "implication.merging"):
        assert sum(r.id == pid and r.headline for r in claims.rows) == 1
    merging = next(r for r in claims.rows if r.id == "implication.merging" and r.headline)
    assert "of 4 pairs" in merging.ours
    without = chapter.build_claims(dict(res, modadd=None), cfg)
    assert without.headline_verdict(CCA_INVARIANT) == NOT_TESTED
    assert "of 3 pairs" in next(r.ours for r in without.rows if r.id == "implication.merging" and r.headline)


def _headline(res: dict, cfg, pid: str) -> str:
    return chapter.build_claims(res, cfg).headline_verdict(pid)


def test_the_invariance_headline_can_fail(tiny_run) -> None:
    res, cfg = tiny_run
    edited = copy.deepcopy(res)
    inv = edited["modadd"]["invariance"][0]
    inv["core"]["cca"], inv["pca"]["cca"], inv["random"]["cca"]["q95"] = 0.9, 0.9, 0.6
    inv["core"]["interval"] = [0.88, 0.92]
    assert _headline(edited, cfg, CCA_INVARIANT) == REPRODUCED
    inv["core"]["cca"], inv["core"]["interval"] = 0.55, [0.5, 0.58]  # at the random level
    assert _headline(edited, cfg, CCA_INVARIANT) == NOT_REPRODUCED
    inv["core"]["cca"], inv["core"]["interval"] = 0.8, [0.78, 0.82]  # above random, below PCA
    assert _headline(edited, cfg, CCA_INVARIANT) == PARTLY
    inv["core"]["cca"], inv["core"]["interval"] = 0.9, [0.55, 0.95]  # its interval straddles the random 95th percentile
    assert _headline(edited, cfg, CCA_INVARIANT) == INCONCLUSIVE
    assert "within its own noise" in figures_merging.invariance_text(edited)
    inv["core"]["interval"] = [0.85, 0.95]
    assert _headline(edited, cfg, CCA_INVARIANT) == REPRODUCED


def test_the_merging_headline_counts_pairs(tiny_run) -> None:
    res, cfg = tiny_run
    good = copy.deepcopy(res)
    for s in (good["markov"], good["modadd"]):
        for mg in s["merging"]:
            mg["chance"] = 0.1
            mg["acc"]["weights"] = [0.9, 0.5, 0.1, 0.5, 0.9]
            mg["acc"]["core_aligned"] = [0.9] * 5
    assert _headline(good, cfg, "implication.merging") == REPRODUCED
    one_flat = copy.deepcopy(good)
    one_flat["modadd"]["merging"][0]["acc"]["weights"] = [0.9] * 5  # identical models: interpolation does not fail
    assert _headline(one_flat, cfg, "implication.merging") == PARTLY
    none = copy.deepcopy(good)
    for s in (none["markov"], none["modadd"]):
        for mg in s["merging"]:
            mg["acc"]["weights"], mg["acc"]["core_aligned"] = [0.9] * 5, [0.9, 0.5, 0.1, 0.5, 0.9]
    assert _headline(none, cfg, "implication.merging") == NOT_REPRODUCED
