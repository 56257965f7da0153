"""The modular-addition run trained as one ensemble (``TRAINER = "ensemble"``): every model, both arms.

Member ``j < N`` is the weight-decay arm of model ``models[j]``; at ``FORK_EPOCH`` each is
forked (:meth:`~ace_helpers.toys.ensemble_trainer.EnsembleTrainer.fork`) into the WD-off arm, a
copy with a fresh AdamW without weight decay, so from then on ``2 N`` members train in one
batched step.  The protocol is the loop trainer's (:func:`ace_helpers.chapters.modadd.run.train_one_model`):
the same init, shuffled mini-batches, segments of :data:`~ace_helpers.chapters.modadd.keys.SEGMENT_EPOCHS`
epochs whose shuffling and dropout are reseeded from (seed, arm, model, segment start), the same
checkpoint analyses (in fp32 on a plain copy of each member).  The numbers are not the loop
trainer's: dropout masks come from each member's own generator (fast 16-bit masks) and the
kernels round differently.  A member's numbers do not depend on which other models train
beside it (they all fork at ``FORK_EPOCH``), so each model is still stored as its own artifact.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd.analysis import ARMS
from ace_helpers.chapters.modadd.checkpoints import (
    CheckpointAnalysis,
    analyse_checkpoint,
    row_from_plain,
    row_to_plain,
    stack_rows,
)
from ace_helpers.chapters.modadd.config import holdout_classes, train_device
from ace_helpers.chapters.modadd.keys import SEGMENT_EPOCHS, model_key, run_hash, segment_seed
from ace_helpers.chapters.modadd.limits import model_config, schedule_of
from ace_helpers.repro.artifacts import load_artifact, save_artifact
from ace_helpers.toys.ensemble_trainer import EnsembleTrainer
from ace_helpers.toys.tasks.modadd import modadd_dataset


def ensemble_snapshot_name(cfg: Mapping[str, Any], models: Sequence[int]) -> str:
    """Name stem of the ensemble's resume snapshots (one set for all its members)."""
    return f"ensemble_{run_hash(cfg)}_m{'-'.join(str(m) for m in models)}"


def ensemble_snapshot_key(cfg: Mapping[str, Any], models: Sequence[int]) -> dict[str, Any]:
    """Parameters the ensemble's snapshots must match: the run knobs, the models, the segment length."""
    return model_key(cfg, -1) | {"models": list(models), "segment_epochs": SEGMENT_EPOCHS}


#: Snapshot generations kept: the newest and the one before it (read when the newest is corrupt).
KEEP_GENERATIONS = 2


def snapshot_epochs(directory: Path, stem: str) -> list[int]:
    """Epochs of the stored snapshot indexes of ``stem``, newest first."""
    found = []
    for path in directory.glob(f"{stem}_e*.manifest.json"):
        tail = path.name[len(stem) + 2 : -len(".manifest.json")]
        if tail.isdigit():
            found.append(int(tail))
    return sorted(found, reverse=True)


def save_snapshot(
    directory: str | Path, stem: str, key: Mapping[str, Any], trainer: EnsembleTrainer, data: dict[str, Any]
) -> None:
    """Store the trainer's state at ``data["epoch"]`` as one checksummed shard per member (a few MB each)
    plus an index (written last: a generation without its index is never read), then drop older generations.
    """
    directory = Path(directory)
    epoch = int(data["epoch"])
    arrays = trainer.state_arrays()
    shared = {k: v for k, v in arrays.items() if v.ndim == 0}
    for j in range(trainer.n_members):
        shard = {k: v[j] for k, v in arrays.items() if v.ndim > 0}
        save_artifact(directory, f"{stem}_e{epoch}_j{j}", params=dict(key) | {"epoch": epoch, "member": j}, arrays=shard)
    save_artifact(
        directory,
        f"{stem}_e{epoch}",
        params=dict(key) | {"epoch": epoch},
        arrays=shared,
        data=data | {"n_members": trainer.n_members},
    )
    for old in snapshot_epochs(directory, stem)[KEEP_GENERATIONS:]:
        for path in [*directory.glob(f"{stem}_e{old}.*"), *directory.glob(f"{stem}_e{old}_j*")]:
            path.unlink()


def load_snapshot(
    directory: str | Path, stem: str, key: Mapping[str, Any], log: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """The newest intact snapshot generation: ``(index data, stacked arrays)``, or ``None``.

    A generation with a missing, partial or corrupt file (checksums) is reported and skipped,
    so training resumes from the generation before it (or from the start).
    """
    directory = Path(directory)
    for epoch in snapshot_epochs(directory, stem):
        index = load_artifact(directory, f"{stem}_e{epoch}", dict(key) | {"epoch": epoch})
        shards = (
            []
            if index is None
            else [
                load_artifact(directory, f"{stem}_e{epoch}_j{j}", dict(key) | {"epoch": epoch, "member": j})
                for j in range(int(index.data["n_members"]))
            ]
        )
        if index is None or any(s is None for s in shards):
            log(f"snapshot {stem} at epoch {epoch} is incomplete or corrupt: skipped")
            continue
        arrays = {k: np.stack([s.arrays[k] for s in shards]) for k in shards[0].arrays} | index.arrays
        return index.data, arrays
    return None


def train_models_together(
    cfg: Mapping[str, Any],
    models: Sequence[int],
    *,
    snapshot_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[dict[int, dict[str, np.ndarray]], float]:
    """Train models ``models`` (both arms) as one ensemble and analyse every checkpoint.

    With ``snapshot_dir`` the ensemble's state is stored after every segment (weights, both
    arms' optimizer states, the analyses so far) and a later call resumes from it.

    Returns:
        ``({model index: arrays with keys "wd/<field>" and "nowd/<field>"}, wall seconds)``,
        the arrays as :func:`ace_helpers.chapters.modadd.run.train_one_model` returns them.
    """
    log = log or (lambda _msg: None)
    models = [int(m) for m in models]
    p, fork, epochs = cfg["P"], cfg["FORK_EPOCH"], cfg["EPOCHS"]
    data = modadd_dataset(p, cfg["TRAIN_FRACTION"], cfg["DATA_SEED"])
    schedule = schedule_of(cfg)
    arm_schedule = {0: set(schedule), 1: {fork} | {e for e in schedule if e > fork}}
    holdout = holdout_classes(p, cfg["HOLDOUT_FRACTION"])

    def analyse(model) -> CheckpointAnalysis:
        return analyse_checkpoint(model, data, energy=cfg["ENERGY"], ridge=cfg["RIDGE"], holdout=holdout)

    trainer = EnsembleTrainer(
        model_config(p),
        [cfg["SEED"] + m for m in models],
        [cfg["WEIGHT_DECAY"]] * len(models),
        lr=cfg["LR"],
        batch_size=cfg["BATCH_SIZE"],
        loss_positions="last",
        precision=cfg["PRECISION"],
        fast=True,
        device=train_device(cfg),
    )
    members = [(m, 0) for m in models]  # (model index, arm index) of every member
    rows: dict[tuple[int, int], list[tuple[int, CheckpointAnalysis]]] = {(m, a): [] for m in models for a in (0, 1)}
    name, key = ensemble_snapshot_name(cfg, models), ensemble_snapshot_key(cfg, models)
    snap = None if snapshot_dir is None else load_snapshot(snapshot_dir, name, key, log)
    done, wall = 0, 0.0
    if snap is not None:
        snap_data, snap_arrays = snap
        trainer.load_state_arrays(snap_arrays)
        done, wall = int(snap_data["epoch"]), float(snap_data["wall_s"])
        if trainer.n_members > len(models):
            members += [(m, 1) for m in models]
        for entry in snap_data["rows"]:
            rows[(int(entry["model"]), int(entry["arm"]))].append((int(entry["epoch"]), row_from_plain(entry["row"])))
        log(f"ensemble of models {models}: resumed at epoch {done}")
    else:
        for j, (m, a) in enumerate(members):
            rows[(m, a)].append((0, analyse(trainer.member(j))))
    tic = time.perf_counter()
    while done < epochs:
        for j, (m, a) in enumerate(members):
            if done == (0 if a == 0 else fork) or done % SEGMENT_EPOCHS == 0:
                trainer.reseed(j, segment_seed(cfg["SEED"], a, m, done))
        trainer.train_epoch(data.train_inputs, data.train_targets)
        done += 1
        for j, (m, a) in enumerate(members):
            if done in arm_schedule[a]:
                rows[(m, a)].append((done, analyse(trainer.member(j))))
        if done == fork:
            trainer.fork(list(range(len(models))), 0.0)
            for m in models:
                at_fork = [r for e, r in rows[(m, 0)] if e == fork]
                start = at_fork[0] if at_fork else analyse(trainer.member(len(members) + models.index(m)))
                rows[(m, 1)].append((fork, start))
            members += [(m, 1) for m in models]
        if done % SEGMENT_EPOCHS == 0 or done == epochs:
            if snapshot_dir is not None and done < epochs:
                plain = [{"model": m, "arm": a, "epoch": e, "row": row_to_plain(r)} for (m, a), rs in rows.items() for e, r in rs]
                save_snapshot(
                    snapshot_dir, name, key, trainer, {"epoch": done, "wall_s": wall + time.perf_counter() - tic, "rows": plain}
                )
            last = rows[(models[0], 0)][-1][1]
            log(
                f"ensemble of models {models}: epoch {done}, model {models[0]} test acc {last.test_acc:.3f}, core dim {last.core_dim}"
            )
    wall += time.perf_counter() - tic
    out: dict[int, dict[str, np.ndarray]] = {}
    for m in models:
        out[m] = {}
        for a, arm in enumerate(ARMS):
            got = rows[(m, a)]
            for k, v in stack_rows([e for e, _ in got], [r for _, r in got], p).items():
                out[m][f"{arm}/{k}"] = v
    return out, wall
