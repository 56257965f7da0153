"""Tests of chapter 3's fork at the paper's epoch: the Fourier spectra of the embeddings, the effective
number of harmonics and the redistribution rule, one rule for the WD-off core dim and modes, the
headline assignment between runs, and the stored part of an unfinished ensemble run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ace_helpers.chapters import core_inflation as chapter
from ace_helpers.chapters.core_inflation import fork
from ace_helpers.chapters.modadd import analysis, checkpoints, config, long_run
from ace_helpers.chapters.modadd.ensemble_run import ensemble_snapshot_key, ensemble_snapshot_name
from ace_helpers.repro.artifacts import save_artifact

P = 53
HALF = P // 2


def _wave(freqs: list[int], p: int = P) -> np.ndarray:
    """(p, 2·len(freqs)) cos/sin columns at the given frequencies."""
    t = np.arange(p)
    return np.concatenate([np.stack([np.cos(2 * np.pi * k * t / p), np.sin(2 * np.pi * k * t / p)], 1) for k in freqs], 1)


def test_fourier_spectrum_folds_each_frequency_with_its_mirror():
    s = checkpoints.fourier_spectrum(np.vstack([_wave([5, 12]), np.zeros((3, 4))]), P)  # extra rows (other tokens) ignored
    assert s.shape == (HALF,) and s.sum() == pytest.approx(1.0)
    assert s[4] == pytest.approx(0.5) and s[11] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="≥ p"):
        checkpoints.fourier_spectrum(np.zeros((P - 1, 4)), P)


def test_effective_harmonics_counts_how_evenly_the_weight_spreads():
    flat = np.full(HALF, 1 / HALF)
    one = np.eye(HALF)[3]
    assert fork.effective_harmonics(flat) == pytest.approx(HALF)
    assert fork.effective_harmonics(one) == pytest.approx(1.0)
    spec = checkpoints.fourier_spectrum(_wave(list(range(1, 11))), P)  # 10 frequencies, equal power
    assert fork.effective_harmonics(spec) == pytest.approx(10.0)
    assert fork.effective_harmonics(np.stack([flat, one])).tolist() == pytest.approx([HALF, 1.0])


EPOCHS = [0, 1000, 2000, 4000]


def _run(core_nowd, modes_nowd, spread_wd=20.0, spread_nowd=5.0, unemb_wd=None):
    """A two-model run on the paper's task that groks at epoch 1000 (core 15, 8 modes), forked at 1100;
    the embeddings' spectra spread evenly over ``spread_*`` frequencies at the last epoch (the unembedding's
    weight-decay arm over ``unemb_wd``, default ``spread_wd``)."""
    def spectrum(n: float) -> np.ndarray:
        k = int(round(n))
        return np.r_[np.full(k, 1 / k), np.zeros(HALF - k)]

    acc = np.tile([0.1, 1.0, 1.0, 1.0], (2, 1))
    spec_wd = np.tile(spectrum(spread_wd), (2, 4, 1))
    unemb = np.tile(spectrum(spread_wd if unemb_wd is None else unemb_wd), (2, 4, 1))
    wd = analysis.ArmResult(epochs=np.asarray(EPOCHS), arrays={
        "test_acc": acc, "core_dim": np.asarray([[40, 15, 30, 60]] * 2), "suff_dim": np.asarray([[1, 8, 8, 9]] * 2),
        "rotational_modes_ols": np.asarray([[0, 8, 20, 26]] * 2), "energy_rank": np.asarray([[40, 15, 30, 60]] * 2),
        "emb_spectrum": spec_wd, "unemb_spectrum": unemb})  # fmt: skip
    nowd = analysis.ArmResult(epochs=np.asarray([2000, 4000]), arrays={
        "core_dim": np.asarray(core_nowd), "rotational_modes_ols": np.asarray(modes_nowd),
        "energy_rank": np.asarray([[15, 15]] * 2), "emb_spectrum": np.tile(spectrum(spread_nowd), (2, 2, 1)),
        "unemb_spectrum": np.tile(spectrum(spread_nowd), (2, 2, 1))})  # fmt: skip
    return analysis.GrokRun(wd=wd, nowd=nowd, n_models=2, cached=[True] * 2, wall_s=[0.0] * 2, directory=Path("."))


FULL = chapter.PARAMS.resolve(PRESET="paper", FORK_EPOCH=1100)


def _row(claims, claim_id):
    return next(r for r in claims.rows if r.id == claim_id)


def test_no_inflation_and_no_mode_proliferation_share_one_rule():
    """Both judged at the last epoch both arms reached against the value at grokking: a transient
    burst that settles passes both; an arm still large at the end fails both."""
    settles = chapter.build_claims(_run([[60, 16], [55, 18]], [[26, 8], [25, 9]]), FULL)
    assert _row(settles, "inflation.no_wd").verdict == "reproduced"
    assert _row(settles, "inflation.no_wd_modes").verdict == "reproduced"
    assert settles.numbers["nowd_dim_max_ratio_to_grok"] == [4.0, pytest.approx(55 / 15)]  # the burst, measured
    stays = chapter.build_claims(_run([[60, 40], [55, 45]], [[26, 25], [25, 24]]), FULL)
    assert _row(stays, "inflation.no_wd").verdict == "not reproduced"
    assert _row(stays, "inflation.no_wd_modes").verdict == "not reproduced"
    assert _row(settles, "inflation.no_wd").rule.split("(")[0].replace("core dim", "X") == \
        _row(settles, "inflation.no_wd_modes").rule.split("(")[0].replace("OLS modes", "X")  # fmt: skip


def test_a_short_run_that_misses_a_late_target_says_so():
    short = chapter.PARAMS.resolve(PRESET="paper", FORK_EPOCH=1100, EPOCHS=4000)
    claims = chapter.build_claims(_run([[60, 40], [55, 45]], [[26, 25], [25, 24]]), short)
    row = _row(claims, "inflation.no_wd")
    assert row.verdict == "not reproduced" and "[at epoch 4000 of 20 000]" in row.claim
    assert "training length" in row.known_gap and not row.unexpected
    assert "inflation.no_wd" not in {r.id for r in claims.not_tested}


def test_redistribution_rule_can_fail():
    spread = chapter.build_claims(_run([[16, 16], [17, 18]], [[8, 8], [9, 9]], spread_wd=20, spread_nowd=5), FULL)
    assert _row(spread, "inflation.redistribution").verdict == "reproduced"
    one = chapter.build_claims(_run([[16, 16], [17, 18]], [[8, 8], [9, 9]], spread_wd=6, spread_nowd=5, unemb_wd=20), FULL)
    assert _row(one, "inflation.redistribution").verdict == "partly"  # the unembedding spreads, the embedding does not
    few = chapter.build_claims(_run([[16, 16], [17, 18]], [[8, 8], [9, 9]], spread_wd=6, spread_nowd=5), FULL)
    assert _row(few, "inflation.redistribution").verdict == "not reproduced"  # more than WD-off, far from ⌊p/2⌋
    same = chapter.build_claims(_run([[16, 16], [17, 18]], [[8, 8], [9, 9]], spread_wd=5, spread_nowd=5), FULL)
    assert _row(same, "inflation.redistribution").verdict == "not reproduced"


def test_runs_without_spectra_leave_redistribution_out():
    run = _run([[16, 16], [17, 18]], [[8, 8], [9, 9]])
    for arm in (run.wd, run.nowd):
        arm.arrays["unemb_spectrum"][:] = np.nan
    assert "inflation.redistribution" not in {r.id for r in chapter.build_claims(run, FULL).rows}


def test_headlines_go_to_the_run_that_tests_each_claim():
    ids = fork.headline_ids({"fork_900": True, "long": True})
    assert set(ids["fork_900"]) == set(fork.FORK_IDS) and set(ids["long"]) == set(fork.LONG_IDS) and ids["own"] == ()
    assert set(fork.headline_ids({})["own"]) == set(fork.CHAPTER_IDS)
    recs = [{"kind": "paper", "id": "inflation.no_wd", "headline": True}, {"kind": "ours", "id": "ours.x", "headline": True}]
    out = fork.assign_headlines([(recs, ()), ([dict(recs[0]), dict(recs[1])], ("inflation.no_wd",))])
    assert [r["headline"] for r in out] == [False, True, True, False] and out[0]["evidence"] and not out[2]["evidence"]
    assert not out[1].get("evidence") and out[3]["evidence"]  # our own rows count with the chapter's own run only
    with pytest.raises(ValueError, match="one headline per claim"):
        fork.assign_headlines([(recs, ("inflation.no_wd",)), (recs, ("inflation.no_wd",))])


def test_fork_table_matches_epochs_after_each_fork():
    new = analysis.ArmResult(epochs=np.asarray([900, 1000, 1900]), arrays={"core_dim": np.asarray([[15, 60, 20]]),
                                                                            "rotational_modes_ols": np.asarray([[8, 26, 9]])})  # fmt: skip
    old = analysis.ArmResult(epochs=np.asarray([1100, 1200, 2100]), arrays={"core_dim": np.asarray([[57, 70, 30]]),
                                                                             "rotational_modes_ols": np.asarray([[16, 26, 10]])})  # fmt: skip
    table = fork.fork_table(new, 900, old, 1100, [0, 100, 500, 1000, 5000]).splitlines()
    assert len(table) == 2 + 4 and "| 100 | 1000 / 1200 | [60] / [70] | [26] / [26] |" in table
    assert "| 500 | 1400 / 1600 | [60] / [70] | [26] / [26] |" not in table  # nearest checkpoints: 1000 / 1200
    assert table[4].startswith("| 500 | 1000 / 1200 |") and table[5].startswith("| 1000 | 1900 / 2100 |")


def _row_of(core: int, spectrum: bool = True) -> checkpoints.CheckpointAnalysis:
    spec = np.full(HALF, 1 / HALF) if spectrum else None
    return checkpoints.CheckpointAnalysis(
        test_acc=1.0, energy_rank=core, core_dim=core, suff_dim=8, keep_acc=1.0, remove_acc=0.0, r2_holdout=1.0, r2_ols=1.0,
        frac_unit_circle=1.0, rotational_modes=8, median_abs_eig=1.0, frac_unit_circle_ols=1.0, rotational_modes_ols=8,
        median_abs_eig_ols=1.0, eigenvalues=np.ones(2, complex), keep_curve=np.ones(4), remove_curve=np.zeros(4),
        emb_spectrum=spec, unemb_spectrum=spec)  # fmt: skip


def test_rows_keep_their_spectra_through_plain_json_and_old_rows_load_without():
    row = _row_of(15)
    back = checkpoints.row_from_plain(checkpoints.row_to_plain(row))
    assert np.allclose(back.emb_spectrum, row.emb_spectrum)
    old = checkpoints.row_from_plain(checkpoints.row_to_plain(_row_of(15, spectrum=False)))
    assert old.emb_spectrum is None
    stacked = checkpoints.stack_rows([0, 100], [_row_of(15, spectrum=False), _row_of(16)], P)
    assert np.isnan(stacked["emb_spectrum"][0]).all() and stacked["emb_spectrum"].shape == (2, HALF)


def test_the_stored_part_of_an_ensemble_run_loads_as_a_long_run(tmp_path):
    cfg = config.PARAMS.resolve(PRESET="paper", TRAINER="ensemble", PRECISION="bf16", N_MODELS=2)
    models = [0, 1]
    stem, key = ensemble_snapshot_name(cfg, models), ensemble_snapshot_key(cfg, models)
    rows = [{"model": m, "arm": a, "epoch": e, "row": checkpoints.row_to_plain(_row_of(15 + e // 100))}
            for m in models for a, epochs in ((0, [0, 800, 900, 1000]), (1, [900, 1000])) for e in epochs]  # fmt: skip
    save_artifact(tmp_path / "snaps", f"{stem}_e1000", params=dict(key) | {"epoch": 1000}, arrays={"step": np.asarray(1)},
                  data={"epoch": 1000, "wall_s": 7200.0, "rows": rows, "n_members": 4})  # fmt: skip
    through = long_run.store_partial_ensemble(cfg, tmp_path / "snaps", directory=tmp_path / "art")
    assert through == {"wd": 1000, "nowd": 1000}
    run, reached = long_run.load_long_run(cfg, directory=tmp_path / "art")
    assert reached == through and run.n_models == 2 and run.nowd.epochs.tolist() == [900, 1000]
    assert run.wd["core_dim"][0].tolist() == [15, 23, 24, 25] and sum(run.wall_s) == pytest.approx(7200.0)
    with pytest.raises(FileNotFoundError, match="FORK_EPOCH"):
        long_run.store_partial_ensemble(cfg, tmp_path / "empty")


def test_the_harmonics_figure_takes_the_modulus_from_the_spectra():
    """p = 31 spectra (15 bins) beside none of another modulus: the bars and the ⌊p/2⌋ line follow the spectra."""
    from ace_helpers.chapters.core_inflation import figures

    spec = np.tile(np.full(15, 1 / 15), (2, 3, 1))
    arm = analysis.ArmResult(epochs=np.asarray([0, 100, 200]), arrays={"emb_spectrum": spec, "unemb_spectrum": spec})
    fig = figures.plot_harmonics([("WD = 1", arm, "tab:blue"), ("WD 1 → 0", arm, "tab:orange")], "unemb_spectrum")
    assert len(fig.axes[1].patches) == 2 * 15 and fig.axes[0].get_lines()[-1].get_ydata()[0] == 15
