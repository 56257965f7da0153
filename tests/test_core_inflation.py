"""Tests of chapter 3's claims (inflation by horizon, WD-off inflation) and its stored redundancy gap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ace_helpers.chapters import core_inflation as chapter
from ace_helpers.chapters.modadd import analysis

PARAMS = chapter.PARAMS


def _synthetic_run(core_wd, suff_wd, modes_wd, core_nowd, epochs, fork):
    """A two-model GrokRun that groks at epochs[1] (test acc 1 from there on)."""
    n = len(epochs)
    acc = np.tile(np.r_[0.1, np.ones(n - 1)], (2, 1))
    wd = analysis.ArmResult(
        epochs=np.asarray(epochs),
        arrays={"test_acc": acc, "core_dim": np.asarray(core_wd), "suff_dim": np.asarray(suff_wd), "rotational_modes": np.asarray(modes_wd)},
    )
    post = np.asarray(epochs) >= fork
    nowd = analysis.ArmResult(
        epochs=np.asarray(epochs)[post],
        arrays={"core_dim": np.asarray(core_nowd), "rotational_modes": np.full((2, post.sum()), 5)},
    )
    return analysis.GrokRun(wd=wd, nowd=nowd, n_models=2, cached=[True, True], wall_s=[0.0, 0.0], directory=Path("."))


@pytest.mark.parametrize(
    "epochs_run, last_epoch, final_dim, expect_checked, expect_pass",
    [
        (20000, None, 45, 6, True),  # the full run: every target is checked
        (20000, None, 30, 6, False),  # ... and can fail
        (20000, 8000, 45, 6, True),  # an unfinished run that already reaches the targets
        (20000, 8000, 30, 4, True),  # ... or not yet: dim and modes are not tested (growth 15 and gap growth 14 are)
        (1400, None, 30, 4, True),  # a short preset
    ],
)
def test_inflation_claims_by_horizon(epochs_run, last_epoch, final_dim, expect_checked, expect_pass):
    epochs = [0, 1000, 2000, 4000]
    core = [[40, 15, 25, final_dim], [40, 16, 26, final_dim]]
    modes = [[0, 10, 15, 22 if final_dim >= 40 else 12]] * 2
    run = _synthetic_run(core, [[1, 8, 8, 9], [1, 9, 9, 9]], modes, [[15, 16], [16, 17]], epochs, fork=2000)
    cfg = PARAMS.resolve(PRESET="paper", EPOCHS=epochs_run)
    claims, not_tested, nums = chapter.inflation_claims(run, cfg, last_epoch=last_epoch)
    assert len(claims.rows) == expect_checked and len(claims.rows) + len(not_tested) == 6
    assert all(r.passed for r in claims.rows) == expect_pass
    assert nums["core_dim_growth_since_grok"] == [final_dim - 15, final_dim - 16]
    assert nums["redundancy_gap_growth_since_grok"] == [final_dim - 9 - 7, final_dim - 9 - 7]


def test_inflation_claims_flag_wd_off_inflation():
    epochs = [0, 1000, 2000, 4000]
    run = _synthetic_run([[40, 15, 30, 45]] * 2, [[1, 8, 8, 9]] * 2, [[0, 10, 15, 22]] * 2, [[15, 40], [16, 17]], epochs, fork=2000)
    claims, _, nums = chapter.inflation_claims(run, PARAMS.resolve(PRESET="paper"))
    row = next(r for r in claims.rows if r.claim.startswith("WD-off"))
    assert not row.passed and nums["nowd_max_ratio_to_grok_dim"][0] == pytest.approx(40 / 15)


def test_stored_redundancy_gap_reads_the_book_run():
    gap = chapter.stored_redundancy_gap()
    assert gap is not None and gap["preset"] == "book" and gap["epoch"] == 1400
    cfg = PARAMS.resolve(PRESET="book")
    run = chapter.load_run(cfg, log=None)
    assert run.cached == [True, True]
    assert gap["mean_gap"] == float((run.wd["core_dim"][:, -1] - run.wd["suff_dim"][:, -1]).mean())


def test_chapter_3_refuses_what_chapter_2_refuses():
    # one check for both chapters (they share one run)
    with pytest.raises(ValueError, match=r"P=1000003.*would need"):
        PARAMS.resolve(PRESET="ci", P=1000003)
    with pytest.raises(ValueError, match=r"TRAIN_FRACTION=0.001 .*leaves 2 train pairs"):
        PARAMS.resolve(PRESET="book", TRAIN_FRACTION=0.001)


def test_long_epoch_axes_have_few_thousands_ticks_and_panel_names():
    # a 20 000-epoch axis used to print nine run-together labels ("1000012500")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ace_helpers.plots import core_inflation as plots

    epochs = np.r_[np.arange(0, 2001, 100), np.arange(2500, 20001, 500)]
    core = np.tile(np.linspace(40, 60, len(epochs)), (2, 1))
    fig = plots.plot_inflation_overview(epochs, core, core / 2, core / 3, epochs[11:], core[:, 11:], core[:, 11:] / 3, 1100, 53, 1000)
    fig.canvas.draw()
    for ax, panel in zip(fig.axes, ("Fig. 2A", "Fig. 2B", "Fig. 2D")):
        assert ax.get_title().startswith(panel)
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        lo, hi = ax.get_xlim()
        shown = [t for t, x in zip(ax.get_xticklabels(), ax.get_xticks()) if lo <= x <= hi]
        assert len(shown) <= 7, labels
        assert all(s.get_text() == "0" or s.get_text().endswith("k") for s in shown), labels
        assert ax.get_legend() is not None and ax.get_xlabel() == "epoch"
    short = plots.plot_core_inflation(epochs[:15], core[:, :15], epochs[11:15], core[:, 11:15], 1100, 1000)
    short.figure.canvas.draw()
    assert [t.get_text() for t in short.get_xticklabels()][1:-1] and not any(
        t.get_text().endswith("k") for t in short.get_xticklabels()
    )  # under 5000 epochs: plain numbers
    plt.close("all")
