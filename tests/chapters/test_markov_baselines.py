"""Tests of chapter 1's baselines: the one-hot-state oracle subspace, the consensus (GCCA) subspace, and the
claim rows and tables that read them (ace_helpers.chapters.markov_cores.baselines / markov_consensus,
ace_helpers.chapters.markov_cores.baseline_claims / baseline_tables).  Tiny synthetic data: seconds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers.chapters.markov_cores import baseline_claims as bc
from ace_helpers.chapters.markov_cores import baseline_tables as bt
from ace_helpers.chapters.markov_cores import baselines as mb
from ace_helpers.chapters.markov_cores import consensus as mc
from ace_helpers.chapters.markov_run.run import toy_config
from ace_helpers.method import compare
from ace_helpers.repro.rules import judge_all
from ace_helpers.repro.report import Claims
from ace_helpers.toys.models import build_model
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset

torch.set_num_threads(1)


def _seed_views(n_rows: int = 3000, dim: int = 24, n_states: int = 4, noise: float = 0.05, seeds=(1, 2)):
    """Two "seeds" that hold the same one-hot state in different random directions (plus an off-state
    high-variance nuisance direction and small noise): rows (N, D) per seed, the states (N,), and each
    seed's true state subspace (D, n − 1)."""
    rng = np.random.default_rng(0)
    states = rng.integers(0, n_states, n_rows)
    onehot = np.eye(n_states)[states] - 1.0 / n_states  # (N, n), rank n − 1
    hs, spans = [], []
    for s in seeds:
        r = np.random.default_rng(s)
        embed = r.standard_normal((n_states, dim))
        span = np.linalg.svd(onehot @ embed, full_matrices=False)[2][: n_states - 1].T  # (D, n − 1)
        off = r.standard_normal(dim)
        off -= span @ (span.T @ off)  # a high-variance direction outside the state subspace, not linear in the state
        nuisance = 3.0 * r.standard_normal((n_rows, 1)) * off / np.linalg.norm(off)
        hs.append(onehot @ embed + nuisance + noise * r.standard_normal((n_rows, dim)) + r.standard_normal(dim))
        spans.append(span)
    return hs, states, spans


# ---------------------------------------------------------------- the one-hot-state oracle subspace
def test_state_oracle_basis_recovers_the_planted_state_subspace():
    hs, states, spans = _seed_views()
    q = mb.state_oracle_basis(hs[0], states, 3)
    assert q.shape == (24, 3)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-10)
    assert compare.projector_overlap(q, spans[0]) > 0.99
    # the top PCA subspace holds the nuisance direction instead: the oracle is not PCA
    assert compare.projector_overlap(mb._pca_basis(hs[0], 3), spans[0]) < 0.9
    # fewer directions: the top ones, inside the state subspace
    assert compare.projector_overlap(mb.state_oracle_basis(hs[0], states, 1), spans[0]) > 0.3


@pytest.mark.parametrize(
    ("h", "states", "rank", "message"),
    [
        (np.zeros(10), np.zeros(10, int), 1, r"h has shape \(10,\)"),
        (np.ones((10, 4)), np.zeros(9, int), 1, r"states has shape \(9,\)"),
        (np.ones((10, 4)), np.linspace(0, 1, 10), 1, "integer state indices"),
        (np.ones((10, 4)), -np.ones(10, int), 1, "non-negative"),
        (np.ones((10, 4)), np.arange(10) % 2, 0, r"rank=0 is not allowed"),
        (np.ones((10, 4)), np.arange(10) % 2, 5, r"rank=5 is not allowed"),
    ],
)
def test_state_oracle_basis_rejects_bad_input(h, states, rank, message):
    with pytest.raises(ValueError, match=message):
        mb.state_oracle_basis(h, states, rank)


def test_state_oracle_basis_has_at_most_n_minus_1_directions():
    hs, states, _ = _seed_views()
    with pytest.raises(ValueError, match=r"rank=4 is not allowed: the 4 states present explain 3 direction"):
        mb.state_oracle_basis(hs[0], states, 4)


def test_compare_views_oracle_aligns_across_seeds_in_orthogonal_subspaces():
    hs, states, spans = _seed_views(dim=48)
    out = mb._compare_views(hs, states, 3, [(0, 1)], seed=0, cores=spans)
    assert set(out) == {"pca_overlap", "oracle_overlap", "pca_cca", "random_cca", "oracle_cca", "core_oracle_overlap"}
    assert min(out["oracle_cca"][0]) > 0.99  # both seeds hold the state linearly: CCA ≈ 1
    assert out["oracle_overlap"][0] < 0.3  # ... in unrelated directions
    assert min(out["random_cca"][0]) < 0.9
    assert min(out["core_oracle_overlap"]) > 0.99  # the planted state subspace is the oracle
    assert len(out["pca_cca"][0]) == 3


# ---------------------------------------------------------------- the consensus (GCCA) subspace
def test_gcca_consensus_recovers_the_shared_latent():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((500, 2))  # shared by both views
    hs = [z @ rng.standard_normal((2, 8)) + 0.01 * rng.standard_normal((500, 8)) for _ in range(2)]
    cons = mc.gcca_consensus(hs, energy=0.99)
    assert cons.cap == 6 and cons.energy_rank == 2 and cons.rank == 2
    assert cons.cut_ratio > 100  # the shared latent stands far above the noise
    assert cons.variates.shape == (500, 2)
    np.testing.assert_allclose(cons.variates.T @ cons.variates, np.eye(2), atol=1e-8)
    assert min(compare.cca(cons.variates, z)) > 0.999
    for h, b in zip(hs, cons.bases):
        assert b.shape == (8, 2)
        np.testing.assert_allclose(b.T @ b, np.eye(2), atol=1e-10)
        assert min(compare.cca(h @ b, z)) > 0.999  # each view's basis reads the consensus out


def test_gcca_consensus_rank_is_capped_at_the_fraction_of_d():
    rng = np.random.default_rng(1)
    hs = [rng.standard_normal((300, 8)) for _ in range(3)]  # no shared structure: energy spreads over 24 dims
    cons = mc.gcca_consensus(hs)
    assert cons.cap == 6 and cons.energy_rank > 6 and cons.rank == 6
    assert 1 <= cons.cut_ratio < 1.5  # no gap at the cap: white noise
    assert [b.shape for b in cons.bases] == [(8, 6)] * 3
    assert mc.gcca_consensus(hs, max_fraction=0.25).rank == 2


@pytest.mark.parametrize(
    ("hs", "kwargs", "message"),
    [
        ([np.ones((5, 3))], {}, "at least 2 activation arrays"),
        (np.ones((2, 5, 3)), {}, "at least 2 activation arrays"),
        ([np.ones((5, 3)), np.ones((4, 3))], {}, r"hs\[1\] has 4 rows but hs\[0\] has 5"),
        ([np.ones(5), np.ones(5)], {}, r"hs\[0\] has shape \(5,\)"),
        ([np.ones((5, 3)), np.full((5, 3), np.nan)], {}, r"hs\[1\] holds a NaN"),
        ([np.ones((5, 3)), np.ones((5, 3))], {}, "every view is constant"),
        ([np.eye(5, 3), np.eye(5, 3)], {"max_fraction": 0.0}, "max_fraction=0.0 is not allowed"),
        ([np.eye(5, 3), np.eye(5, 3)], {"energy": 1.5}, "energy=1.5 is not allowed"),
    ],
)
def test_gcca_consensus_rejects_bad_input(hs, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mc.gcca_consensus(hs, **kwargs)


def test_orth_and_basis_core():
    a = np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]])  # rank 1
    q = mc.orth(a)
    assert q.shape == (3, 1) and np.isclose(abs(q[0, 0]), np.sqrt(0.5))
    with pytest.raises(ValueError, match="is zero"):
        mc.orth(np.zeros((3, 2)))
    core = mc.basis_core(np.eye(4)[:, :2], np.ones(4))
    h = np.arange(8.0).reshape(2, 4)
    np.testing.assert_allclose(core.keep(h), h * [1, 1, 0, 0])
    np.testing.assert_allclose(core.remove(h, centered=True), h - (h - 1) * [1, 1, 0, 0])
    with pytest.raises(ValueError, match=r"basis has shape \(4, 2\) and mean \(3,\)"):
        mc.basis_core(np.eye(4)[:, :2], np.ones(3))


def test_consensus_results_on_tiny_models():
    data = markov_dataset(PAPER_CHAIN, 4, 12, 9)
    models = [build_model(toy_config(4, 16), s).eval() for s in (0, 100)]
    hs = mb.layer_states(models, data.test_inputs)
    assert [h.shape for h in hs] == [(12 * 8, 16)] * 2
    out = mc.consensus_results(models, hs, data)
    assert out["consensus_dim"] == min(12, out["consensus_energy_rank"]) and len(out["consensus_ranks"]) == 2
    keys = [f"consensus_{m}_acc_{a}" for m in ("keep", "remove") for a in ("zero", "mean")]
    assert all(len(out[k]) == 2 and all(0 <= v <= 1 for v in out[k]) for k in keys)
    # a consensus of every direction keeps the whole model: keep = the clean accuracy
    full = mc.consensus_results(models, hs, data, max_fraction=1.0, energy=1.0)
    clean = [float((m(data.test_inputs).argmax(-1) == data.test_targets).double().mean()) for m in models]
    assert full["consensus_ranks"] == [16, 16] and full["consensus_cut_ratio"] > 1
    np.testing.assert_allclose(full["consensus_keep_acc_zero"], clean)
    with pytest.raises(ValueError, match="2 models but 1 activation arrays"):
        mc.consensus_results(models, hs[:1], data)


# ---------------------------------------------------------------- the claim rows
def _consensus_results(keep, remove, base=(0.7484, 0.7484, 0.7484), chance=0.2489):
    return {"base_acc": list(base), "chance_acc": chance, "consensus_dim": 48, "consensus_keep_acc_zero": list(keep),
            "consensus_remove_acc_zero": list(remove)}


def _consensus_row(results):
    return judge_all([bc.CONSENSUS], results, None, lambda key: None)


def test_consensus_claim_holds_on_the_code_release_numbers():
    claims = _consensus_row(_consensus_results([0.7484] * 3, [0.532, 0.549, 0.54]))
    row = claims.rows[0]
    assert row.id == "markov.consensus" and row.kind == "paper" and row.verdict == "reproduced"
    assert row.per_seed == pytest.approx([0.005, 0.005, 0.005])  # the keep margin binds


@pytest.mark.parametrize(
    ("keep", "remove", "verdict"),
    [
        ([0.25, 0.26, 0.25], [0.74, 0.74, 0.74], "not reproduced"),  # a random subspace: keeps nothing, removes nothing
        ([0.7484] * 3, [0.25, 0.24, 0.26], "not reproduced"),  # a core-like subspace: necessary after all
        ([0.70, 0.70, 0.70], [0.54] * 3, "not reproduced"),  # loses accuracy when kept alone
        ([0.7484] * 3, [0.54, 0.30, 0.54], "inconclusive"),  # the seeds disagree: 2 of 3
    ],
)
def test_consensus_claim_fails_on_plausible_wrong_inputs(keep, remove, verdict):
    assert _consensus_row(_consensus_results(keep, remove)).rows[0].verdict == verdict


def test_consensus_claim_not_tested_without_the_baseline_and_checks_lengths():
    claims = _consensus_row({"base_acc": [0.75], "chance_acc": 0.25})
    assert not claims.rows and claims.headline_verdict("markov.consensus") == "not tested"
    with pytest.raises(ValueError, match="consensus accuracies for 2 and 2 seeds but 3"):
        bc.consensus_margins(_consensus_results([0.75] * 2, [0.5] * 2))


def _oracle_results(core_cca, oracle_cca, same=(0.997, 0.996)):
    return {"n_states": 4, "cca": [[0.999, 0.998, c] for c in core_cca],
            "oracle_cca": [[0.999, 0.998, c] for c in oracle_cca], "core_oracle_overlap": list(same)}


def _oracle_rows(results):
    claims = judge_all(bc.ORACLE, results, None, lambda key: None)
    return {r.id.split(".")[-1]: r for r in claims.rows}


def test_oracle_claims_hold_when_the_state_explains_the_alignment():
    rows = _oracle_rows(_oracle_results([0.93, 0.95, 0.955], [0.935, 0.945, 0.95]))
    assert {k: r.verdict for k, r in rows.items()} == {"core_is_state_subspace": "reproduced",
                                                       "cca_not_core_specific": "reproduced"}
    assert all(r.kind == "ours" for r in rows.values())


def test_oracle_claims_fail_on_plausible_wrong_inputs():
    # random subspaces' coordinates in place of the oracle's: the cores align beyond them
    rows = _oracle_rows(_oracle_results([0.93, 0.95], [0.02, 0.08]))
    assert rows["cca_not_core_specific"].verdict == "not reproduced"
    # a core that is not the state subspace: overlap at the random level r/D
    rows = _oracle_rows(_oracle_results([0.93], [0.93], same=(0.05, 0.04)))
    assert rows["core_is_state_subspace"].verdict == "not reproduced"
    assert _oracle_rows({"n_states": 4}) == {}  # stored results without the oracle: no row


# ---------------------------------------------------------------- the tables
def _table_results():
    res = _oracle_results([0.93], [0.935]) | _consensus_results([0.7484] * 2, [0.53, 0.55], base=(0.7484, 0.7484))
    res.update(pca_cca=[[0.999, 0.998, 0.92]], random_cca=[[0.7, 0.6, 0.02]], projector_overlap=[0.03],
               oracle_overlap=[0.031], pca_overlap=[0.029], random_overlap_q05=0.017, random_overlap_q95=0.084,
               consensus_keep_acc_mean=[0.7484] * 2, consensus_remove_acc_mean=[0.3, 0.31], keep_acc_paper=[0.7484] * 2,
               remove_acc_paper=[0.26, 0.24], keep_acc=[0.7484] * 2, remove_acc=[0.25, 0.24])
    return res


def test_tables_and_the_specificity_sentence():
    res = _table_results()
    assert bt.subspace_table(res).count("\n") == 5 and "one-hot-state oracle" in bt.subspace_table(res)
    assert "not specific to the core" in bt.cca_specificity(res)
    beyond = dict(res, oracle_cca=[[0.999, 0.998, 0.5]])
    assert "beyond" in bt.cca_specificity(beyond) and "not specific" not in bt.cca_specificity(beyond)
    assert bt.consensus_table(res).count("\n") == 3 and "48-D" in bt.consensus_table(res)
    with pytest.raises(ValueError, match="oracle_cca"):
        bt.subspace_table({k: v for k, v in res.items() if k != "oracle_cca"})
    with pytest.raises(ValueError, match="consensus_keep_acc_zero"):
        bt.consensus_table({"base_acc": [0.75]})


# ---------------------------------------------------------------- the chapter's prose against the stored book run
def test_book_prose_on_the_baselines_agrees_with_the_stored_book_results():
    """What the chapter's text says in words about the baselines (panels C, D and the consensus section),
    checked on book/results once it holds them (the book run re-executed with the baselines)."""
    import json
    from pathlib import Path

    res = json.loads((Path(__file__).resolve().parents[2] / "book/results/01_markov_cores.json").read_text())
    if "oracle_cca" not in res or "consensus_cut_ratio" not in res:
        pytest.skip("the stored book results predate the oracle and consensus baselines")
    core, oracle, pca, rand = (bt._weakest(res, k) for k in ("cca", "oracle_cca", "pca_cca", "random_cca"))
    assert max(res["oracle_overlap"]) <= res["random_overlap_q95"]  # "are as unrelated"
    assert all(r < c - 0.1 for r, c in zip(rand, core))  # "random subspaces correlate far less"
    assert all(o >= c - 0.01 and p >= c - 0.02 for o, p, c in zip(oracle, pca, core))  # "align as well as the cores"
    assert min(res["core_oracle_overlap"]) >= 0.9  # "nearly coincides with its own oracle subspace"
    assert res["consensus_energy_rank"] > res["consensus_dim"] and res["consensus_cut_ratio"] < 1.2  # "the cap sets k"
    assert min(res["consensus_keep_acc_zero"]) >= min(res["base_acc"]) - 0.005  # "keeps the full accuracy"
    assert min(res["consensus_remove_acc_zero"]) >= res["chance_acc"] + 0.1  # "far above chance"
