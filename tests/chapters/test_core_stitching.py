"""Chapter 7 (ace_helpers.chapters.core_stitching) and the stitching method (ace_helpers.method.stitching)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ace_helpers.chapters import core_stitching as chapter
from ace_helpers.chapters.modadd import grokked
from ace_helpers.chapters.markov_run import run as markov
from ace_helpers.method import stitching as st
from ace_helpers.method.core import Core
from ace_helpers.repro.artifacts import to_plain
from ace_helpers.repro.paper_claims import PAPER_CLAIMS
from ace_helpers.repro.report import INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, claim_kind
from ace_helpers.repro.session import with_departures

ROOT = Path(__file__).resolve().parents[2]
STORED = ROOT / "book" / "results" / f"{chapter.NOTEBOOK}.json"


# -------------------- the method -----------------------------------------------------------
def test_replace_sets_the_chart_coordinates_and_keeps_the_rest() -> None:
    rng = np.random.default_rng(0)
    chart = st.random_chart(12, 3, rng.standard_normal(12), seed=1)
    h = torch.as_tensor(rng.standard_normal((5, 7, 12)))
    z = torch.as_tensor(rng.standard_normal((5, 7, 3)))
    out = chart.replace(h, z)
    assert np.allclose(chart.coords(out), z.numpy())
    q = chart.basis
    off = lambda x: x.numpy() - x.numpy() @ q @ q.T  # noqa: E731 - the part outside the chart
    assert np.allclose(off(out), off(h))
    full = st.full_chart(np.ones(12))
    assert np.allclose(full.replace(h, z.new_zeros(5, 7, 12) + 2.0).numpy(), 3.0)  # μ + z
    with pytest.raises(ValueError, match="expected"):
        chart.replace(h, z[..., :2])


def test_least_squares_recovers_a_linear_map_and_maps_compose() -> None:
    rng = np.random.default_rng(1)
    za = rng.standard_normal((400, 3))
    w, c = rng.standard_normal((3, 4)), rng.standard_normal(4)
    fit = st.fit_linear_map(za, za @ w + c)
    assert np.allclose(fit.weight, w, atol=1e-6) and np.allclose(fit.bias, c, atol=1e-6)
    assert st.map_r2(fit, za, za @ w + c) == pytest.approx(1.0)
    other = st.fit_linear_map(za @ w + c, rng.standard_normal((400, 2)))
    assert np.allclose(fit.then(other)(za), other(fit(za)))
    assert np.allclose(st.identity_map(3)(za), za)
    with pytest.raises(ValueError, match="ridge"):
        st.fit_linear_map(za, za, ridge=-1.0)
    with pytest.raises(ValueError, match="same N"):
        st.fit_linear_map(za, za[:10])


def test_charts_and_orders() -> None:
    core = Core(full_basis=np.eye(6), weights=np.arange(6.0)[::-1], rank=2, mean=np.zeros(6))
    assert st.core_chart(core).rank == 2 and st.core_chart(core, 4).rank == 4
    with pytest.raises(ValueError, match="rank"):
        st.core_chart(core, 7)
    q = st.random_chart(20, 5, np.zeros(20), seed=3).basis
    assert np.allclose(q.T @ q, np.eye(5))
    order = st.crossed_order(50, seed=0)
    assert sorted(order) == list(range(50)) and not np.any(order == np.arange(50))
    assert st.ranks_up_to(3, 10, extra=[7]) == [1, 2, 3, 7]


def test_key_frequencies_of_a_pure_rotation() -> None:
    p, k = 13, 3
    c = np.arange(p)
    w_u = np.stack([np.cos(2 * np.pi * k * c / p), np.sin(2 * np.pi * k * c / p)], axis=1)  # (p, 2)
    core = Core(full_basis=np.eye(2), weights=np.ones(2), rank=2, mean=np.zeros(2))
    assert chapter.key_frequencies(core, w_u) == [k]


# -------------------- knobs ----------------------------------------------------------------
@pytest.mark.parametrize(("knobs", "named"), [
    ({"MODADD": 1}, "MODADD"), ({"P": 33}, "P"), ({"P": 223}, "P"), ({"TRAIN_FRACTION": 0.01}, "TRAIN_FRACTION"),
    ({"R_MAX": 65}, "R_MAX"), ({"MODADD_R_MAX": 129}, "MODADD_R_MAX"), ({"D_MODEL": 6}, "D_MODEL"),
    ({"T": [[1.0, 0.0], [0.0, 1.0]]}, "T"), ({"N_TRAIN": 10**8}, "N_TRAIN"), ({"RIDGE": float("nan")}, "RIDGE"),
    ({"PRECISION": "fp16"}, "PRECISION"),
])  # fmt: skip
def test_bad_knobs_are_refused_by_name(knobs, named) -> None:
    with pytest.raises(ValueError, match=named):
        chapter.PARAMS.resolve(PRESET="ci", **knobs)


def test_presets() -> None:
    ci, book = chapter.PARAMS.resolve(PRESET="ci"), chapter.PARAMS.resolve(PRESET="book")
    assert ci.MODADD is False and book.MODADD is True
    assert chapter.memory_estimate(dict(book)) < chapter.MEMORY_LIMIT


# -------------------- the pipeline ---------------------------------------------------------
@pytest.fixture(scope="module")
def small_run():
    cfg = chapter.PARAMS.resolve(PRESET="ci", N_TRAIN=300, N_TEST=100, EPOCHS=6, R_MAX=4, MODADD=True, P=11,
                                 MODADD_MAX_STEPS=30, MODADD_R_MAX=3)
    return chapter.run(cfg), cfg


def test_bf16_trains_both_tasks_in_bf16(monkeypatch) -> None:
    """PRECISION reaches both trainers (the Markov ensemble and the mod-add ensemble, with its fast kernels) and
    the chapter runs through in bf16."""
    seen = []
    markov_train, modadd_train = markov.train_models, grokked.train_ensemble
    monkeypatch.setattr(markov, "train_models",
                        lambda *a, **k: seen.append(("markov", k["precision"])) or markov_train(*a, **k))
    monkeypatch.setattr(grokked, "train_ensemble",
                        lambda *a, **k: seen.append(("modadd", k["precision"], k["fast"])) or modadd_train(*a, **k))
    cfg = chapter.PARAMS.resolve(PRESET="ci", N_TRAIN=300, N_TEST=100, EPOCHS=2, R_MAX=2, MODADD=True, P=11,
                                 MODADD_MAX_STEPS=10, MODADD_R_MAX=2, PRECISION="bf16")
    res = chapter.run(cfg)
    assert seen == [("markov", "bf16"), ("modadd", "bf16", True)]
    assert res["markov"] is not None and res["modadd"] is not None


def test_run_gives_every_condition_regime_and_rank(small_run) -> None:
    res, cfg = small_run
    for key in ("markov", "modadd"):
        s = res[key]
        assert set(s["swap"]) == set(chapter.CONDITIONS)
        assert all(set(s["swap"][c]) == set(chapter.REGIMES) for c in chapter.CONDITIONS)
        assert all(len(v["agree"]) == len(s["ranks"]) for v in s["sweep"].values())
        assert 0.0 <= s["floor"]["agree"] <= 1.0
    assert set(res["markov"]["transfer"]) == {"core", "random", "full"}
    claims = chapter.build_claims(res, cfg)
    not_tested = claims.not_tested
    # Markov 10, mod-add 7 (the untrained models fail theirs), the stitching reading of merging, the invariance rows
    # (Markov 2, mod-add 1), one merging row per pair (3 Markov, 1 mod-add) and their headline
    assert len(claims.rows) == 10 + 7 + 1 + 3 + 4 + 1 and not not_tested
    assert "Markov chain" in chapter.finding_text(res) and "Modular addition" in chapter.finding_text(res)
    json.dumps(to_plain(res))  # results.json can hold it


def test_claims_can_fail(small_run) -> None:
    res, cfg = small_run
    res = copy.deepcopy(res)
    m = res["markov"]
    m["swap"]["core"]["crossed"] = {"acc": 0.3, "agree": 0.3}
    m["swap"]["random"]["crossed"] = {"acc": 0.75, "agree": 1.0}
    m["sweep"]["core"]["agree"] = [0.3] * len(m["ranks"])
    rows = {r.claim: r for r in chapter.build_claims(res, cfg).rows}
    assert not rows["Markov: the core-mapped swap carries A's computation into B (B on another input)"].passed
    assert not rows["Markov: a random subspace of the same rank does not carry it"].passed
    assert not rows["Markov: the core swap starts to work exactly at the core rank"].passed


def test_transfer_only_through_the_core_has_three_outcomes(small_run) -> None:
    res, cfg = small_run
    claim = next(r.claim for r in chapter.build_claims(res, cfg).rows if "only through the core" in r.claim)
    base = res["markov"]["base_acc"][2]

    def verdict(core: float, full: float) -> str:
        edited = copy.deepcopy(res)
        tr = edited["markov"]["transfer"]
        tr["core"]["crossed"] = {"acc": base if core else 0.3, "agree": core or 0.3}
        tr["full"]["crossed"] = {"acc": base, "agree": full}
        tr["random"]["crossed"] = {"acc": 0.25, "agree": 0.25}
        edited["markov"]["floor_heldout"] = {"acc": 0.25, "agree": 0.25}
        return {r.claim: r.verdict for r in chapter.build_claims(edited, cfg).rows}[claim]

    assert verdict(core=1.0, full=0.3) == REPRODUCED  # only the core carries it
    assert verdict(core=1.0, full=1.0) == "partly"  # the full-rank map transfers too
    assert verdict(core=0.0, full=1.0) == NOT_REPRODUCED  # the core does not transfer


def test_without_modadd_its_claims_are_not_tested(small_run) -> None:
    res, cfg = small_run
    claims = chapter.build_claims(dict(res, modadd=None), cfg)
    not_tested = claims.not_tested
    assert len(claims.rows) == 10 + 1 + 2 + 3 + 1 and len(not_tested) == 4  # + the mod-add CCA row, not tested
    assert "not run at this preset" in chapter.finding_text(dict(res, modadd=None))


# -------------------- the stored book run --------------------------------------------------
def _stored():
    if not STORED.exists():
        pytest.fail(f"{STORED} is missing: run the runbook at the book preset for {chapter.NOTEBOOK}")
    stored = json.loads(STORED.read_text())
    knobs = {k: stored["params"][k] for k in chapter.PARAMS.knobs}
    return stored, chapter.PARAMS.resolve(PRESET="book", **knobs)


def test_stored_verdicts_rebuild_from_the_stored_numbers() -> None:

    stored, cfg = _stored()
    claims = chapter.build_claims(stored, cfg)
    not_tested = claims.not_tested
    section = stored["claims"][0]["section"]
    assert with_departures(cfg, claims.records(section)) == stored["claims"]


def test_an_edited_stored_number_fails_the_rebuild() -> None:
    stored, cfg = _stored()
    edited = copy.deepcopy(stored)
    edited["markov"]["swap"]["core"]["crossed"]["agree"] = 0.5
    rows = {r.claim: r.verdict for r in chapter.build_claims(edited, cfg).rows}
    assert rows["Markov: the core-mapped swap carries A's computation into B (B on another input)"] == NOT_REPRODUCED
    assert rows["Markov: the core-mapped swap keeps B's accuracy (same input)"] == REPRODUCED


# -------------------- claim ids, baselines, verdicts that can fail ---------------------------
def _ids_are_valid(claims) -> None:
    """Every row (tested or not) has an id whose kind follows; our ids are unique per run (a paper id is repeated
    only by its evidence rows); each paper id has exactly one headline row."""
    recs = claims.records("run")
    assert all(r["id"] and r["kind"] == claim_kind(r["id"], r.get("explains")) for r in recs)
    ours = [r["id"] for r in recs if r["kind"] != "paper"]
    assert len(set(ours)) == len(ours)
    heads = [r["id"] for r in recs if r["kind"] == "paper" and r["headline"]]
    assert sorted(heads) == sorted({r["id"] for r in recs if r["kind"] == "paper"})
    assert set(heads) <= set(PAPER_CLAIMS)


def test_every_row_has_an_id_and_each_paper_id_one_headline(small_run) -> None:
    res, cfg = small_run
    for variant in (res, dict(res, modadd=None)):
        _ids_are_valid(chapter.build_claims(variant, cfg))
    stored, book = _stored()
    claims = chapter.build_claims(stored, book)
    _ids_are_valid(claims)
    merging = [r for r in claims.rows if r.id == "implication.merging" and r.headline]
    assert len(merging) == 1 and merging[0].verdict == PARTLY  # Markov merges, mod-add (other frequencies) does not


def test_random_jaccard_is_the_hypergeometric_distribution() -> None:
    values, probs = chapter.claims.random_jaccard(15, 6, 5)
    assert probs.sum() == pytest.approx(1.0) and np.all(np.diff(values) > 0)
    rng = np.random.default_rng(0)
    sims = [len(set(rng.choice(15, 6, replace=False)) & set(rng.choice(15, 5, replace=False))) for _ in range(20000)]
    mc = np.mean([k / (11 - k) for k in sims])
    assert values @ probs == pytest.approx(mc, abs=0.005)
    with pytest.raises(ValueError, match="set sizes"):
        chapter.claims.random_jaccard(5, 0, 3)


def test_the_frequency_row_compares_with_two_random_sets() -> None:
    """The stored book models share 3 of 9 frequencies (J = 0.33): about what two unrelated sets of 6 and 6 out of
    1..15 give on average (0.263), under the 95th percentile (0.5); identical sets fail, sets sharing
    more than chance are only "partly" different."""
    stored, cfg = _stored()
    a = stored["modadd"]
    base = chapter.jaccard_baseline(a["key_freqs"], a["p"], a["freq_jaccard"])
    assert base["mean"] == pytest.approx(0.263, abs=1e-3) and base["q95"] == pytest.approx(0.5)
    assert base["q05"] == pytest.approx(0.0909, abs=1e-3) and base["p_shared"] == pytest.approx(0.4545, abs=1e-3)

    def verdict(freqs: list[list[int]]) -> str:
        edited = copy.deepcopy(stored)
        edited["modadd"]["key_freqs"] = freqs
        edited["modadd"]["freq_jaccard"] = len(set(freqs[0]) & set(freqs[1])) / len(set(freqs[0]) | set(freqs[1]))
        rows = {r.id: r for r in chapter.build_claims(edited, cfg).rows}
        return rows["ours.core_stitching.modadd_different_key_frequencies"].verdict

    assert verdict(a["key_freqs"]) == REPRODUCED
    assert verdict([[2, 5, 6], [2, 5, 6]]) == NOT_REPRODUCED  # the same frequencies
    assert verdict([[2, 5, 6, 8, 9, 12], [2, 5, 6, 8, 10]]) == PARTLY  # 4 of 7 shared: more than chance


def test_the_merging_implication_can_fail(small_run) -> None:
    """The stitching reading of merging (evidence beside the merging paths), on the Markov task alone: an
    aligned-core swap that does not stitch, or unaligned coordinates that stitch as well, is not the paper's
    merging implication."""
    res, cfg = small_run
    good = copy.deepcopy(dict(res, modadd=None))
    m = good["markov"]
    m["swap"]["core"]["crossed"] = {"acc": m["base_acc"][1], "agree": 1.0}
    m["swap"]["unmapped"] = {g: {"acc": 0.25, "agree": 0.25} for g in chapter.REGIMES}
    m["floor"] = {"acc": 0.25, "agree": 0.25}

    def verdict(results: dict) -> str:
        return next(r.verdict for r in chapter.build_claims(results, cfg).rows if r.claim.startswith("stitching:"))

    assert verdict(good) == REPRODUCED
    broken = copy.deepcopy(good)
    broken["markov"]["swap"]["core"]["crossed"] = {"acc": 0.3, "agree": 0.3}  # an untrained pair: nothing stitches
    assert verdict(broken) == NOT_REPRODUCED
    naive = copy.deepcopy(good)
    naive["markov"]["swap"]["unmapped"] = {g: {"acc": m["base_acc"][1], "agree": 1.0} for g in chapter.REGIMES}
    assert verdict(naive) == NOT_REPRODUCED


def test_one_model_across_the_grokking_threshold_makes_the_row_inconclusive() -> None:
    stored, cfg = _stored()
    rows = {r.id: r for r in chapter.build_claims(stored, cfg).rows}
    assert rows["ours.core_stitching.modadd_grokked"].verdict == REPRODUCED
    edited = copy.deepcopy(stored)
    edited["modadd"]["grok_step"][1] = None  # the second model never reached the test accuracy
    rows = {r.id: r for r in chapter.build_claims(edited, cfg).rows}
    assert rows["ours.core_stitching.modadd_grokked"].verdict == INCONCLUSIVE
    edited["modadd"]["grok_step"][0] = None
    rows = {r.id: r for r in chapter.build_claims(edited, cfg).rows}
    assert rows["ours.core_stitching.modadd_grokked"].verdict == NOT_REPRODUCED
