"""Chapters 2-3 on the ensemble trainer: every model and both arms in one batched step, resumable, company-free."""

from __future__ import annotations

import numpy as np
import pytest

from ace_helpers.chapters.modadd import config, ensemble_run
from ace_helpers.chapters.modadd.ensemble_run import train_models_together
from ace_helpers.chapters.modadd.keys import run_hash
from ace_helpers.chapters.modadd.run import load_or_train
from ace_helpers.repro.thread_pools import set_threads

set_threads(1)

# p = 7: 29 train pairs, one step per epoch; segments of 50 epochs (the chapters' 500, scaled down)
SMALL = dict(P=7, TRAIN_FRACTION=0.6, EPOCHS=52, FORK_EPOCH=51, CHECKPOINT_EVERY=10, CHECKPOINT_SWITCH=52,
             CHECKPOINT_EVERY_LATE=10, HOLDOUT_FRACTION=0.0, TRAINER="ensemble")


@pytest.fixture(autouse=True)
def short_segments(monkeypatch):
    monkeypatch.setattr(ensemble_run, "SEGMENT_EPOCHS", 50)


def _cfg(**changes):
    return config.PARAMS.resolve(PRESET="ci", **(SMALL | changes))


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_stored_runs_keep_their_keys() -> None:
    """The knobs added later (TRAINER, PRECISION) at their old values leave the stored runs' keys as they were;
    the runs forked at 1100 (before the fork moved to the paper's 900) keep theirs."""
    book = config.PARAMS.resolve(PRESET="book", TRAINER="loop", FORK_EPOCH=config.OLD_FORK)
    assert run_hash(book) == "711db751d8bd"  # the name of the committed first book run's artifacts (each model alone)
    assert run_hash(book.replace(TRAINER="ensemble")) == "f2cafda7e9de"  # the ensemble fp32 book run, fork 1100
    assert run_hash(book.replace(TRAINER="ensemble", PRECISION="bf16")) == "6f9fcb090d93"
    assert run_hash(config.PARAMS.resolve(PRESET="book")) == "7c7d52a44d34"  # the book run: the ensemble, fp32, fork 900


def test_resume_falls_back_past_a_corrupt_snapshot_and_equals_the_uninterrupted_run(tmp_path) -> None:
    cfg = _cfg(N_MODELS=1, EPOCHS=102, FORK_EPOCH=101, CHECKPOINT_SWITCH=102)
    whole, _ = train_models_together(cfg, [0])

    class Stop(Exception):
        pass

    def stop_at(msg: str) -> None:
        if "epoch 100," in msg:
            raise Stop

    with pytest.raises(Stop):
        train_models_together(cfg, [0], snapshot_dir=tmp_path, log=stop_at)
    shards = sorted(p.name for p in tmp_path.glob("ensemble_*_e100_j*.npz"))
    assert len(shards) == 1 and list(tmp_path.glob("ensemble_*_e50.manifest.json"))  # two generations kept
    shard = tmp_path / shards[0]
    shard.write_bytes(shard.read_bytes()[:-100])  # the newest generation is now corrupt
    resumed_log: list[str] = []
    resumed, _ = train_models_together(cfg, [0], snapshot_dir=tmp_path, log=resumed_log.append)
    assert any("epoch 100 is incomplete or corrupt" in m for m in resumed_log)
    assert any("resumed at epoch 50" in m for m in resumed_log)
    _same(whole[0], resumed[0])
    assert whole[0]["wd/epochs"].tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 102]
    assert whole[0]["nowd/epochs"].tolist() == [101, 102]


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


def test_the_command_line_refuses_bad_epochs_before_training(tmp_path):
    """``--epochs`` reaches the knob check: an impossible value is refused by name before anything trains."""
    from ace_helpers.chapters.modadd.__main__ import main

    with pytest.raises(ValueError, match="EPOCHS"):
        main(["--preset", "ci", "--epochs", "0", "--snapshot-dir", str(tmp_path), "--artifact-dir", str(tmp_path)])
