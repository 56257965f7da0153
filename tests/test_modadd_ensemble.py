"""Chapters 2-3 on the ensemble trainer: every model and both arms in one batched step, resumable, company-free."""

from __future__ import annotations

import numpy as np
import pytest

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.ensemble_run import train_models_together
from ace_helpers.chapters.modadd.run import load_or_train, run_hash
from ace_helpers.params import set_threads

set_threads(1)

# p = 7: 29 train pairs, one step per epoch; the fork at 505 and a snapshot at 500 (one segment)
SMALL = dict(P=7, TRAIN_FRACTION=0.6, EPOCHS=520, FORK_EPOCH=505, CHECKPOINT_EVERY=100, CHECKPOINT_SWITCH=520,
             CHECKPOINT_EVERY_LATE=100, HOLDOUT_FRACTION=0.0, TRAINER="ensemble")


def _cfg(**changes):
    return config.PARAMS.resolve(PRESET="ci", **(SMALL | changes))


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_stored_runs_keep_their_keys() -> None:
    """The knobs added later (TRAINER, PRECISION) at their old values leave the stored runs' keys as they were."""
    book = config.PARAMS.resolve(PRESET="book")
    assert run_hash(book) == "711db751d8bd"  # the name of the committed book run's artifacts
    assert run_hash(book.replace(TRAINER="ensemble")) != run_hash(book)
    assert run_hash(book.replace(TRAINER="ensemble", PRECISION="bf16")) != run_hash(book.replace(TRAINER="ensemble"))


def test_resumed_run_equals_uninterrupted_and_both_arms_are_stored(tmp_path) -> None:
    cfg = _cfg(N_MODELS=2)
    whole, _ = train_models_together(cfg, [0, 1])

    class Stop(Exception):
        pass

    def stop_at_segment(msg: str) -> None:
        if "epoch 500" in msg:
            raise Stop

    with pytest.raises(Stop):
        train_models_together(cfg, [0, 1], snapshot_dir=tmp_path, log=stop_at_segment)
    resumed_log: list[str] = []
    resumed, _ = train_models_together(cfg, [0, 1], snapshot_dir=tmp_path, log=resumed_log.append)
    assert any("resumed at epoch 500" in m for m in resumed_log)
    for m in (0, 1):
        _same(whole[m], resumed[m])
        assert whole[m]["wd/epochs"].tolist() == [0, 100, 200, 300, 400, 500, 520]
        assert whole[m]["nowd/epochs"].tolist() == [505, 520]
    assert not np.array_equal(whole[0]["wd/test_acc"], whole[1]["wd/test_acc"])  # two different models


def test_a_model_trains_the_same_alone_or_beside_others() -> None:
    cfg = _cfg(N_MODELS=2)
    both, _ = train_models_together(cfg, [0, 1])
    alone, _ = train_models_together(cfg, [1])
    _same(both[1], alone[1])


def test_load_or_train_stores_each_model_and_reloads(tmp_path) -> None:
    cfg = _cfg(N_MODELS=2, ARTIFACT_DIR=str(tmp_path), PRECISION="bf16")
    first = load_or_train(cfg, snapshot_dir=tmp_path / "snap", log=None)
    again = load_or_train(cfg, snapshot_dir=tmp_path / "snap", log=None)
    assert again.cached == [True, True] and first.cached == [False, False]
    np.testing.assert_array_equal(first.wd["test_acc"], again.wd["test_acc"])
    assert not list((tmp_path / "snap").glob("ensemble_*"))  # resume snapshots are removed once stored


def test_bad_trainer_knobs_raise() -> None:
    with pytest.raises(ValueError, match="TRAINER"):
        _cfg(TRAINER="batched")
    with pytest.raises(ValueError, match="PRECISION"):
        _cfg(PRECISION="fp16")
    with pytest.raises(ValueError, match="only the ensemble trainer"):
        _cfg(TRAINER="loop", PRECISION="bf16")
