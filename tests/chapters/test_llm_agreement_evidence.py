"""Chapter 5 evidence: controls, within-class statistics with label-preserving nulls, and claims that can fail."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from ace_helpers import llm
from ace_helpers.chapters import llm_agreement as A
from ace_helpers.llm import agreement as ag
from ace_helpers.method import interventions, stats

# ----------------------------------------------------------------------------- label-preserving nulls


def test_stratified_permutations_stay_within_each_stratum():
    strata = np.array([0, 0, 1, 1, 1, 2, 0])
    perms = stats.stratified_permutations(strata, 50, seed=1)
    assert perms.shape == (50, 7)
    assert all(sorted(row) == list(range(7)) for row in perms)
    assert (strata[perms] == strata).all()  # every position maps to one of its own stratum
    assert len({tuple(r) for r in perms}) > 5  # and they are not all the identity


def _bimodal(n: int, within: float, seed: int = 0):
    """Two coordinates that both separate the labels; ``within`` sets how much they share inside a class."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    shared = rng.normal(size=n)
    a = 4.0 * y + within * shared + rng.normal(size=n)
    b = 4.0 * y + within * shared + rng.normal(size=n)
    return a, b, y


def test_label_preserving_null_sees_through_a_shared_label():
    """Two coordinates that only share the label correlate strongly; random pairings call that
    significant, pairings within each class do not. With a real within-class relation both do."""
    a, b, y = _bimodal(200, within=0.0)
    rho, free = stats.correlation_null(a, b, rank=True, n_permutations=500, seed=0)
    _, kept = stats.correlation_null(a, b, rank=True, n_permutations=500, seed=0, strata=y)
    assert rho > 0.6 and stats.permutation_p(rho, free) < 0.01
    assert stats.permutation_p(rho, kept) > 0.05 and np.median(kept) > 0.6  # the label alone gives the correlation
    a2, b2, y2 = _bimodal(200, within=1.5)
    rho2, kept2 = stats.correlation_null(a2, b2, rank=True, n_permutations=500, seed=0, strata=y2)
    assert stats.permutation_p(rho2, kept2) < 0.01
    assert stats.permutation_p(-0.3, np.array([0.1, -0.5]), alternative="abs") == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="alternative"):
        stats.permutation_p(0.1, np.zeros(3), alternative="less")
    with pytest.raises(ValueError, match="constant"):
        stats.correlation_null(np.ones(5), np.arange(5.0))


def test_knob_tests_within_class():
    a, m, y = _bimodal(200, within=0.0, seed=3)
    only_label = A.knob_tests(a, m, y, n_permutations=400)
    assert only_label["r2"] > 0.5 and only_label["r2_label_null"] > 0.5  # the pooled R² restates the label
    assert only_label["p_label_preserving"] > 0.05 and min(only_label["p_singular"], only_label["p_plural"]) > 0.01
    a2, m2, y2 = _bimodal(200, within=2.0, seed=3)
    real = A.knob_tests(a2, -m2, y2, n_permutations=400)  # a negative slope: within-class r is signed by it
    assert real["p_label_preserving"] < 0.01 and real["p_singular"] < 0.01 and real["p_plural"] < 0.01
    assert real["r_singular"] > 0 and real["r2_singular"] == pytest.approx(real["r_singular"] ** 2)


def test_pairwise_alignment_within_class():
    a, b, y = _bimodal(160, within=0.0, seed=5)
    row = A.pairwise_alignment({"a": a, "b": -b}, y, n_permutations=400)[0]
    assert row["spearman"] > 0.6 and row["p_value"] < 0.01  # sign-aligned
    assert row["p_label_preserving"] > 0.05 and row["label_null"] > 0.6
    assert row["p_singular"] > 0.01 and row["p_plural"] > 0.01
    a2, b2, y2 = _bimodal(160, within=1.5, seed=5)
    row2 = A.pairwise_alignment({"a": a2, "b": -b2}, y2, n_permutations=400)[0]
    assert row2["p_label_preserving"] < 0.01 and row2["spearman_singular"] > 0.3 and row2["p_plural"] < 0.01
    assert "p_label_preserving" not in A.pairwise_alignment({"a": a, "b": b}, n_permutations=100)[0]


# ----------------------------------------------------------------------------- control directions and edits


def test_control_directions():
    r = A.random_directions(16, 5, seed=0)
    assert r.shape == (5, 16) and np.allclose(np.linalg.norm(r, axis=1), 1)
    assert np.array_equal(r, A.random_directions(16, 5, seed=0)) and not np.array_equal(r, A.random_directions(16, 5, seed=1))
    h = np.zeros((4, 3))
    h[2:, 1] = 2.0
    assert np.allclose(A.mean_difference_direction(h, np.array([0, 0, 1, 1])), [0, 1, 0])
    c = A.unit_core(np.array([3.0, 4.0, 0.0]), np.ones(3))
    assert np.allclose(c.basis[:, 0], [0.6, 0.8, 0]) and c.rank == 1
    with pytest.raises(ValueError, match="zero"):
        A.unit_core(np.zeros(3), np.zeros(3))
    prompts, labels = A.attractor_free_prompts()
    assert len(prompts) == 72 and labels.sum() == 36
    words = {w for p in prompts for w in p.replace(",", "").split()}
    assert not words & (set(ag.SINGULAR_ATTRACTORS) | set(ag.PLURAL_ATTRACTORS))


def test_matched_edit_moves_each_prompt_as_far_as_the_core_edit():
    from ace_helpers.chapters.llm_agreement.controls import _matched

    rng = np.random.default_rng(0)
    core = A.unit_core(rng.normal(size=8), rng.normal(size=8))
    r = A.random_directions(8, 1, seed=2)[0]
    h = torch.tensor(rng.normal(size=(5, 8)), dtype=torch.float64)
    for factor, edit in ((1.0, lambda x: core.remove(x, centered=True)), (2.0, core.flip)):
        ace = (edit(h) - h).norm(dim=1)
        ctrl = _matched(core, r, factor)(h) - h
        np.testing.assert_allclose(ctrl.norm(dim=1), ace, rtol=1e-10)
        assert torch.allclose(ctrl / ctrl.norm(dim=1, keepdim=True), torch.tensor(r) * torch.sign(ctrl @ torch.tensor(r))[:, None])


@pytest.fixture(scope="module")
def tiny():
    lm, tok = llm.tiny_model("llama", words=ag.vocabulary(), n_layers=3, seed=2)
    return lm, tok, ag.agreement_split(24, seed=0)


def test_edit_margins_equal_plain_hooks_and_the_remote_path(tiny):
    lm, tok, data = tiny
    cores = A.layer_cores(A.collect_states(lm, tok, data.train_prompts, [2]))
    r = A.unit_core(A.random_directions(cores[0].dim, 1, seed=0)[0], cores[0].mean)
    edits = [lambda h: h, r.flip, lambda h: cores[0].remove(h, centered=False), lambda h: h * 0.5]
    fast = A.edit_margins(lm, tok, data.test_prompts, 2, edits, batch_size=5)
    ids = ag.verb_token_ids(tok)
    batch = llm.encode(tok, data.test_prompts)
    path = llm.block_paths(lm)[1]
    for k, fn in enumerate(edits):
        ref = ag.margin(interventions.run_with_edit(lm, batch, path, fn, positions=-1)[:, -1], ids).numpy()
        np.testing.assert_allclose(fast[k], ref, atol=1e-5)
    clean = A.collect_states(lm, tok, data.test_prompts, [1], gradients=False).margin
    np.testing.assert_allclose(fast[0], clean, atol=1e-5)
    assert np.abs(fast[3] - clean).max() > 1e-3  # an edit changes the margins
    remote = A.edit_margins(lm, tok, data.test_prompts[:6], 2, edits, remote="local")
    np.testing.assert_allclose(remote, fast[:, :6], atol=1e-5)


def test_generation_push_and_landing():
    g = A.Generation(["p"] * 2, ["a", "b"], ["c", "d"], np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((3, 2)),
                     [(0, 1)] * 2, [(1, 1)] * 2, np.zeros((3, 2)),
                     steered_margins=np.array([[-1.0, 2.0], [-0.5, 1.0], [0.5, -3.0]]),
                     steered_clean_margins=np.array([[2.0, -1.0], [1.0, -2.0], [1.0, 4.0]]))  # fmt: skip
    assert g.landed_share() == pytest.approx(5 / 6)
    assert g.median_push() == pytest.approx(np.median([1.0, 2.0, 0.5, 1.0, -0.5, 3.0]))
    assert A.generation_rules(0, 1.0) == {"official": A.OFFICIAL_RULE}
    assert A.generation_rules(2, 3.0) == {"official": (0, 1.0), "refined": (2, 3.0)}


# ----------------------------------------------------------------------------- claims that can fail


@pytest.fixture(scope="module")
def book():
    from pathlib import Path

    from ace_helpers.repro import runbook

    stored = runbook.stored_book_results(Path(__file__).resolve().parents[2]).get("05_llm_agreement")
    if stored is None or "smollm2-135m.auc_random_keep" not in stored:
        pytest.fail("book/results/05_llm_agreement.json is missing or predates the controls: re-run the book preset")
    knobs = {k: stored["params"][k] for k in A.PARAMS.knobs}
    return stored, A.PARAMS.resolve(PRESET=stored["params"]["PRESET"], **knobs)


def _verdicts(results, cfg):
    return {r.claim: r.verdict for r in A.flat_claims(results, cfg).rows}


def test_stored_book_claims_fail_when_their_numbers_do(book):
    stored, cfg = book
    base = _verdicts(stored, cfg)
    m = "smollm2-135m"
    for key, value, claim, verdict in (
        (f"{m}.auc_flip", 0.45, f"{m}: flipping the core inverts agreement", "not reproduced"),
        (f"{m}.auc_remove", 0.52, f"{m}: removing the core destroys agreement (AUC at chance)", "reproduced"),
        (f"{m}.auc_remove", 0.8, f"{m}: removing the core destroys agreement (AUC at chance)", "not reproduced"),
        (f"{m}.auc_random_matched_flip", [0.03] * 16, f"{m}: control: a random direction pushed as far does not invert",
         "not reproduced"),
        (f"{m}.auc_free_remove", 0.3, f"{m}: diagnosis: removal inverts only where an opposite-number attractor is present",
         "not reproduced"),
        (f"{m}.knob_p_plural", 0.2, f"{m}: the knob within each number class", "partly"),
        (f"{m}.demo_share_flipped", [0.1] * 6, f"{m}: flip demo: the mass moves to the other number", "reproduced"),
        (f"{m}.generation_official_rate", 0.3, f"{m}: steered generation changes verb number (official calibration: "
         "one secant step to 1 nat)", "not reproduced"),
    ):  # fmt: skip
        edited = copy.deepcopy(stored)
        edited[key] = value
        assert base[claim] != verdict and _verdicts(edited, cfg)[claim] == verdict, (key, value)
    pair = "smollm2-135m~gemma3-270m"
    edited = copy.deepcopy(stored)
    edited["pairwise_p_label_preserving"][pair] = 0.3
    claim = "smollm2-135m–gemma3-270m: core coordinates aligned across models (pooled sign-aligned Spearman)"
    assert base[claim] == "reproduced" and _verdicts(edited, cfg)[claim] == "not reproduced"


def test_stored_results_rebuild_through_json(book):
    stored, cfg = book
    again = json.loads(json.dumps(stored))
    rebuilt = A.flat_claims(again, cfg).records("book preset", departures=A.run_departures(cfg))
    assert rebuilt == [r for r in stored["claims"] if r["section"] == "book preset"]


def test_known_gaps_apply_only_to_the_presets_own_run():
    book = A.PARAMS.resolve(PRESET="book")
    assert "attractor" in A.KNOWN_GAPS.reason(book, "gemma3-270m:remove")
    assert A.KNOWN_GAPS.reason(book.replace(N_PROMPTS=200), "gemma3-270m:remove") is None
    assert A.KNOWN_GAPS.reason(book, "smollm2-135m:knob_r2") is None
    ci = A.PARAMS.resolve(PRESET="ci")
    assert A.KNOWN_GAPS.reason(ci, "smollm2-135m:remove") is not None
    assert A.KNOWN_GAPS.reason(ci.replace(N_RANDOM=4), "smollm2-135m:remove") is None


# ----------------------------------------------------------------------------- claim ids, headlines, intervals
SVA_PER_MODEL = ("sva.keep", "sva.remove", "sva.flip", "sva.knob", "sva.generation")


def _headline(claims, claim_id: str):
    """The one headline row of ``claim_id``."""
    rows = [r for r in claims.rows if r.id == claim_id and r.headline]
    assert len(rows) == 1, [(r.id, r.claim, r.headline) for r in claims.rows]
    return rows[0]


def test_every_row_has_an_id_and_each_paper_claim_one_headline(book):
    from collections import Counter

    from ace_helpers.repro.paper_claims import PAPER_CLAIMS

    stored, cfg = book
    claims = A.flat_claims(stored, cfg)
    records = claims.records("book preset")
    assert all(r["id"] and r["kind"] for r in records), [r["claim"] for r in records if not r["id"]]
    heads = Counter(r["id"] for r in records if r["kind"] == "paper" and r["headline"])
    assert all(n == 1 for n in heads.values()) and set(heads) <= set(PAPER_CLAIMS), heads
    assert {r["id"] for r in records if r["kind"] == "paper"} == set(heads)
    assert all(r["explains"] in PAPER_CLAIMS for r in records if r["kind"] == "diagnosis")
    assert all(r["id"].startswith("ours.llm_agreement.") for r in records if "control" in r["claim"])
    # the per-model rows are evidence; one combined row per paper claim counts the models
    for claim_id in SVA_PER_MODEL:
        per_model = [r for r in claims.rows if r.id == claim_id and not r.headline and r.claim.startswith(tuple(cfg.MODELS))]
        assert len(per_model) >= 2 and f"of {len(cfg.MODELS)} models" in _headline(claims, claim_id).ours, claim_id
    generation = [r for r in records if r["id"] == "sva.generation" and not r["headline"]]
    assert all(r["method"].startswith("Wilson score interval") and r["threshold"] == 0.7 for r in generation)


def test_the_generation_rate_is_judged_on_its_wilson_interval(book):
    """Measured 0.65–0.78 over 17–23 generations: an interval straddling 0.70 is inconclusive, not a verdict."""
    from ace_helpers.chapters.llm_agreement.combined import wilson_interval

    assert wilson_interval(0.5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # the textbook 5 of 10
    assert wilson_interval(0.0, 5)[0] == 0.0 and wilson_interval(1.0, 5)[1] == 1.0
    stored, cfg = book
    assert _headline(A.flat_claims(stored, cfg), "sva.generation").verdict == "inconclusive"
    edited = copy.deepcopy(stored)
    for m in cfg.MODELS:
        edited[f"{m}.generation_official_rate"], edited[f"{m}.generation_official_scored"] = 0.9, 200
    assert _headline(A.flat_claims(edited, cfg), "sva.generation").verdict == "reproduced"
    # one model's rate moved to the threshold: its interval straddles 0.70, and the combined row cannot tell
    edited["gemma3-270m.generation_official_rate"] = 0.72
    row = _headline(A.flat_claims(edited, cfg), "sva.generation")
    assert row.verdict == "inconclusive" and f"{len(cfg.MODELS) - 1} of {len(cfg.MODELS)} models" in row.ours


@pytest.mark.parametrize(
    ("claim_id", "wrong"),
    [
        ("sva.keep", {"auc_keep": 0.55}),  # the core alone keeps no more than a random direction
        ("sva.remove", {"auc_remove": 0.92}),  # removal leaves agreement as it was
        ("sva.flip", {"auc_flip": 0.5}),  # the flip only erases
        ("sva.knob", {"knob_r2": 0.05, "knob_p_label_preserving": 0.4}),  # the coordinate predicts nothing
        ("sva.generation", {"generation_official_rate": 0.1}),  # steered texts keep their number
    ],
)  # fmt: skip
def test_each_per_model_paper_claim_fails_on_a_plausible_wrong_input(book, claim_id, wrong):
    stored, cfg = book
    edited = copy.deepcopy(stored)
    for m in cfg.MODELS:
        edited.update({f"{m}.{k}": v for k, v in wrong.items()})
    row = _headline(A.flat_claims(edited, cfg), claim_id)
    assert row.verdict not in ("reproduced", "inconclusive") and f"0 of {len(cfg.MODELS)} models" in row.ours, row


def test_the_cross_model_claims_fail_on_a_plausible_wrong_input(book):
    stored, cfg = book
    edited = copy.deepcopy(stored)
    for key in ("base_vs_removed", "base_vs_flipped", "removed_vs_flipped"):
        edited[f"demo_fisher_p_{key}"] = 0.5  # neither removal nor the flip lowers the demo score
    edited["pairwise_p_label_preserving"] = {k: 0.4 for k in stored["pairwise_p_label_preserving"]}  # the label null
    claims = A.flat_claims(edited, cfg)
    for claim_id in ("sva.flip_demo_tests", "sva.alignment"):
        assert _headline(A.flat_claims(stored, cfg), claim_id).verdict == "reproduced"
        assert _headline(claims, claim_id).verdict == "not reproduced"
    edited = copy.deepcopy(stored)
    edited["demo_fisher_p_removed_vs_flipped"] = 0.3  # the flip lowers the score no further than removal
    row = _headline(A.flat_claims(edited, cfg), "sva.flip_demo_tests")
    assert row.verdict == "partly" and row.unexpected and len(row.value) == 3 and len(row.per_seed) == len(cfg.MODELS)


def test_one_model_across_its_threshold_changes_the_combined_verdict(book):
    stored, cfg = book
    assert _headline(A.flat_claims(stored, cfg), "sva.flip").verdict == "reproduced"
    edited = copy.deepcopy(stored)
    edited["smollm2-135m.auc_flip"] = 0.40  # one model's flip no longer half way to a full inversion
    row = _headline(A.flat_claims(edited, cfg), "sva.flip")
    n = len(cfg.MODELS)
    assert row.verdict == "partly" and f"{n - 1} of {n} models" in row.ours and row.unexpected
