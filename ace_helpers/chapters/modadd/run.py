"""Resumable training of the modular-addition run (both arms, every model) and its per-model artifact cache.

The training + analysis run (:func:`load_or_train`) is cached as artifacts, one per model (so a
run with more models reuses the first ones, and an interrupted run resumes from the last
finished model; with ``snapshot_dir`` it also resumes inside a model, every
:data:`SEGMENT_EPOCHS` epochs).  Both chapter notebooks call it with the same knobs and so share
one training run.  Training runs on the CPU.  Functions here take the resolved
:class:`~ace_helpers.repro.params.Params` and do not validate them again.
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ace_helpers.chapters.modadd.analysis import ARMS, GrokRun, grok_run
from ace_helpers.chapters.modadd.checkpoints import (
    CheckpointAnalysis,
    analyse_checkpoint,
    row_from_plain,
    row_to_plain,
    stack_rows,
)
from ace_helpers.chapters.modadd.config import holdout_classes
from ace_helpers.chapters.modadd.ensemble_run import ensemble_snapshot_name, train_models_together
from ace_helpers.chapters.modadd.keys import (
    SEGMENT_EPOCHS,
    artifact_dir,
    model_key,
    run_hash,
    segment_seed,
    snapshot_dir_for,
    snapshot_key,
    snapshot_name,
)
from ace_helpers.chapters.modadd.limits import model_config, schedule_of
from ace_helpers.method import checks, portable
from ace_helpers.repro import thread_pools
from ace_helpers.repro.artifacts import load_artifact, save_artifact
from ace_helpers.toys.models import build_model
from ace_helpers.toys.precision import describe
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import load_state, state_arrays, train_lm


class _ArmRecorder:
    """Collects :class:`CheckpointAnalysis` rows at the schedule's epochs for one arm."""

    def __init__(self, schedule: Sequence[int], analyse: Callable[[nn.Module], CheckpointAnalysis]) -> None:
        self.schedule = set(schedule)
        self.analyse = analyse
        self.epochs: list[int] = []
        self.rows: list[CheckpointAnalysis] = []

    def record(self, epoch: int, model: nn.Module) -> None:
        if epoch in self.schedule and epoch not in self.epochs:
            self.epochs.append(epoch)
            self.rows.append(self.analyse(model))


@dataclass
class _ArmRun:
    """One arm of one model while it trains: model, optimizer, recorder and next epoch."""

    name: str
    index: int  # 0 = "wd", 1 = "nowd" (part of the segment seed)
    weight_decay: float
    first: int  # first epoch of the arm (0, or FORK_EPOCH)
    model: nn.Module
    opt: torch.optim.Optimizer
    recorder: _ArmRecorder
    start: int  # next epoch to train
    wall_s: float = 0.0  # training + analysis time spent on this arm so far (over resumes)


def train_one_model(
    cfg: Mapping[str, Any],
    model_index: int,
    *,
    snapshot_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
    stop_after: int | None = None,
    wd_first: bool = False,
) -> dict[str, np.ndarray]:
    """Train model ``model_index`` (both arms) and analyse it at every checkpoint.

    Arm "wd": AdamW(lr, weight_decay=WEIGHT_DECAY) for EPOCHS epochs from a fresh init
    (``build_model(config, SEED + model_index)``).  Arm "nowd": a deep copy of that model at
    FORK_EPOCH, continued to EPOCHS with a fresh AdamW(lr, weight_decay=0).  Training runs in
    segments of :data:`SEGMENT_EPOCHS`, each seeded by its position alone, so the order in which
    segments run does not change the numbers.  The two arms advance in lockstep (the arm that is
    behind trains next), so an interrupted run holds both arms up to about the same epoch; with
    ``wd_first`` the weight-decay arm is trained to the end first (then the WD-off arm).  With
    ``snapshot_dir`` the state of an arm is saved there after each of its segments and a later
    call resumes from it (see :func:`ace_helpers.chapters.modadd.long_run.store_partial` for
    reading an unfinished run).  ``stop_after`` (epochs) ends training once both arms have
    reached it, leaving the snapshots for a later call (default: train to EPOCHS).

    Returns:
        Arrays with keys ``wd/<field>`` and ``nowd/<field>`` (see :func:`~ace_helpers.chapters.modadd.checkpoints.stack_rows`) up to
        EPOCHS (or ``stop_after``); the "nowd" arm's epochs start at FORK_EPOCH (identical to
        "wd" there; no "nowd" keys if ``stop_after`` stopped training before FORK_EPOCH).
    """
    log = log or (lambda _msg: None)
    p = cfg["P"]
    data = modadd_dataset(p, cfg["TRAIN_FRACTION"], cfg["DATA_SEED"])
    schedule = schedule_of(cfg)
    fork, epochs = cfg["FORK_EPOCH"], cfg["EPOCHS"]
    if stop_after is not None:
        checks.check_int("stop_after", stop_after, low=1)
    horizon = epochs if stop_after is None else min(epochs, stop_after)
    holdout = holdout_classes(p, cfg["HOLDOUT_FRACTION"])
    analyse = lambda m: analyse_checkpoint(m, data, energy=cfg["ENERGY"], ridge=cfg["RIDGE"], holdout=holdout)
    snap_key = snapshot_key(cfg, model_index)
    snap_name = snapshot_name(cfg, model_index)
    fork_state: dict[str, np.ndarray] | None = None

    def new_arm(index: int) -> _ArmRun:
        wd, first = (cfg["WEIGHT_DECAY"], 0) if index == 0 else (0.0, fork)
        arm_schedule = schedule if index == 0 else [fork] + [e for e in schedule if e > fork]
        model = build_model(model_config(p), cfg["SEED"] + model_index)
        opt = portable.adamw(model.parameters(), lr=cfg["LR"], weight_decay=wd)
        arm = _ArmRun(ARMS[index], index, wd, first, model, opt, _ArmRecorder(arm_schedule, analyse), first)
        nonlocal fork_state
        snap = None if snapshot_dir is None else load_artifact(snapshot_dir, f"{snap_name}_{arm.name}", snap_key)
        if snap is not None:  # resume this arm
            load_state(model, opt, snap.arrays, "")
            arm.start = int(snap.data["epoch"])
            arm.wall_s = float(snap.data.get("wall_s", 0.0))
            arm.recorder.epochs = list(snap.data["epochs"])
            arm.recorder.rows = [row_from_plain(r) for r in snap.data["rows"]]
            if index == 0 and "fork/model/tok_emb.weight" in snap.arrays:
                fork_state = {k[5:]: v for k, v in snap.arrays.items() if k.startswith("fork/")}
            log(f"model {model_index} arm {arm.name}: resumed at epoch {arm.start}")
            return arm
        if index == 1:
            assert fork_state is not None
            load_state(model, None, fork_state, "")  # fresh optimizer at the fork
        arm.recorder.record(first, model)
        return arm

    def train_segment(arm: _ArmRun) -> None:
        def callback(epoch: int, m: nn.Module) -> None:
            nonlocal fork_state
            arm.recorder.record(epoch, m)
            if arm.index == 0 and epoch == fork:
                fork_state = state_arrays(copy.deepcopy(m), None, "")  # deep copy of the model at the fork

        tic = time.perf_counter()
        seg_end = min((arm.start // SEGMENT_EPOCHS + 1) * SEGMENT_EPOCHS, epochs)
        seg_seed = segment_seed(cfg["SEED"], arm.index, model_index, arm.start)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seg_seed)  # dropout
            train_lm(
                arm.model,
                data.train_inputs,
                data.train_targets,
                epochs=seg_end - arm.start,
                batch_size=cfg["BATCH_SIZE"],
                lr=cfg["LR"],
                weight_decay=arm.weight_decay,
                seed=seg_seed,
                loss_positions="last",
                optimizer=arm.opt,
                start_epoch=arm.start,
                callback=callback,
            )
        arm.start = seg_end
        arm.wall_s += time.perf_counter() - tic
        if snapshot_dir is not None:
            arrays = state_arrays(arm.model, arm.opt, "")
            if arm.index == 0 and fork_state is not None:
                arrays.update({f"fork/{k}": v for k, v in fork_state.items()})
            save_artifact(
                snapshot_dir,
                f"{snap_name}_{arm.name}",
                params=snap_key,
                arrays=arrays,
                data={
                    "epoch": arm.start,
                    "wall_s": arm.wall_s,
                    "epochs": arm.recorder.epochs,
                    "rows": [row_to_plain(r) for r in arm.recorder.rows],
                },
            )
        last = arm.recorder.rows[-1]
        log(f"model {model_index} arm {arm.name}: epoch {arm.start}, test acc {last.test_acc:.3f}, core dim {last.core_dim}")

    wd_arm = new_arm(0)
    nowd_arm: _ArmRun | None = None
    while True:
        if nowd_arm is None and (fork_state is not None or wd_arm.start >= fork):
            nowd_arm = new_arm(1)
        behind = [a for a in (wd_arm, nowd_arm) if a is not None and a.start < horizon]
        if not behind:
            break
        train_segment(behind[0] if wd_first else min(behind, key=lambda a: (a.start, a.index)))
    results: dict[str, np.ndarray] = {}
    for arm in (wd_arm, nowd_arm):
        if arm is None:  # stopped (stop_after) before the fork
            continue
        for key, val in stack_rows(arm.recorder.epochs, arm.recorder.rows, p).items():
            results[f"{arm.name}/{key}"] = val
    return results


def _train_worker(job: tuple[Mapping[str, Any], int, str | None, bool, int]) -> tuple[dict[str, np.ndarray], float, int]:
    """Process-pool entry point: train one model, return its arrays, wall time and torch threads.

    The worker is one of ``n_workers``: it takes its share of the cores (``thread_pools.set_threads``),
    so workers × threads ≤ cores unless ``TORCH_THREADS`` says otherwise."""
    cfg, m, snapshot_dir, wd_first, n_workers = job
    threads = thread_pools.set_threads(workers=n_workers)
    start = time.perf_counter()
    arrays = train_one_model(cfg, m, snapshot_dir=snapshot_dir, log=print, wd_first=wd_first)
    return arrays, time.perf_counter() - start, threads


def load_or_train(
    cfg: Mapping[str, Any],
    *,
    snapshot_dir: str | Path | None = None,
    workers: int = 1,
    log: Callable[[str], None] | None = print,
    wd_first: bool = False,
) -> GrokRun:
    """Load each model's analyses from the artifact directory, or train and store them.

    Artifacts: ``<artifact_dir(cfg)>/run_<hash>_m<i>`` (json + npz + manifest with the run's
    parameters, commit, versions, wall time), one per model: a run with more models reuses the
    stored ones, an interrupted run keeps the finished ones.  ``snapshot_dir`` (default: none)
    also resumes inside a model (see :func:`train_one_model`).  ``workers > 1`` trains the
    missing models in that many processes (each with its share of the cores; results are identical).
    ``wd_first`` trains each model's weight-decay arm to the end before its WD-off arm (see
    :func:`train_one_model`; same numbers).
    """
    checks.check_int("workers", workers, low=1)
    directory = artifact_dir(cfg)
    tag = run_hash(cfg)
    keys = [model_key(cfg, m) for m in range(cfg["N_MODELS"])]
    names = [f"run_{tag}_m{m}" for m in range(cfg["N_MODELS"])]
    found = [load_artifact(directory, names[m], keys[m]) for m in range(cfg["N_MODELS"])]
    missing = [m for m, a in enumerate(found) if a is None]
    snap = None if snapshot_dir is None else str(snapshot_dir)
    if missing and cfg["TRAINER"] == "ensemble":
        threads = thread_pools.set_threads()
        if log is not None:
            log(
                f"models {missing}: training both arms as one ensemble of {2 * len(missing)} members in this process "
                f"with {threads} torch thread(s); {describe(cfg['PRECISION'])}"
            )
        per_model, wall = train_models_together(cfg, missing, snapshot_dir=snap, log=log)
        for m in missing:
            save_artifact(
                directory, names[m], params=keys[m], data={"model_index": m}, arrays=per_model[m], wall_s=wall / len(missing)
            )
            found[m] = load_artifact(directory, names[m], keys[m])
        if snapshot_dir is not None:
            stem = ensemble_snapshot_name(cfg, missing)
            for f in [*Path(snapshot_dir).glob(f"{stem}_e*"), *Path(snapshot_dir).glob(f".{stem}_e*")]:
                f.unlink()
    elif missing:
        n_workers = min(workers, len(missing))
        jobs = [(cfg, m, snap, wd_first, n_workers) for m in missing]
        if n_workers > 1:
            with mp.get_context("spawn").Pool(n_workers) as pool:
                outs = pool.map(_train_worker, jobs)
            if log is not None:
                for m, (_, _, threads) in zip(missing, outs):
                    log(f"model {m}: trained in one of {n_workers} worker processes with {threads} torch thread(s)")
        else:
            outs = []
            for cfg_m, m, s, first, _ in jobs:
                t = time.perf_counter()
                outs.append((train_one_model(cfg_m, m, snapshot_dir=s, log=log, wd_first=first), time.perf_counter() - t, 0))
        for m, (arrays, wall, _) in zip(missing, outs):
            save_artifact(directory, names[m], params=keys[m], data={"model_index": m}, arrays=arrays, wall_s=wall)
            if snapshot_dir is not None:  # the model is stored: its resume snapshots are no longer needed
                for f in Path(snapshot_dir).glob(f".snapshot_{tag}_m{m}_*"):
                    f.unlink()
                for f in Path(snapshot_dir).glob(f"snapshot_{tag}_m{m}_*"):
                    f.unlink()
            found[m] = load_artifact(directory, names[m], keys[m])
            if found[m] is None:  # pragma: no cover - the filesystem lost our write
                raise RuntimeError(f"artifact {names[m]} in {directory} could not be read back after writing")
    if log is not None:
        for m in range(cfg["N_MODELS"]):
            log(f"model {m}: {'trained now' if m in missing else 'loaded from artifact'} ({directory.name}/{names[m]})")
    return grok_run(found, directory, cached=[m not in missing for m in range(cfg["N_MODELS"])])


def load_run(cfg: Mapping[str, Any], log: Callable[[str], None] | None = print) -> GrokRun:
    """A chapter's run: :func:`load_or_train` with the run's ``WORKERS`` and the scratch snapshot folder."""
    return load_or_train(cfg, workers=cfg["WORKERS"], snapshot_dir=snapshot_dir_for(cfg), log=log)
