"""Knobs of the modular-addition run (chapters 2-3): presets, their check, the checkpoint schedule, the model.

Models are the two-layer toy transformer trained on a + b (mod p) with AdamW (weight decay
``WEIGHT_DECAY``); a second arm forks every model at ``FORK_EPOCH`` and continues with a fresh
AdamW without weight decay.  Chapters 2 and 3 share these knobs (each with its own notebook
name, :data:`ace_helpers.chapters.modadd_grokking.PARAMS` and
:data:`ace_helpers.chapters.core_inflation.PARAMS`) and so share one training run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ace_helpers.method import checks
from ace_helpers.method.devices import check_device, device_key, resolve_device
from ace_helpers.repro import params as P_
from ace_helpers.toys.models import ToyConfig
from ace_helpers.toys.precision import resolve_precision
from ace_helpers.toys.tasks.modadd import all_pairs

PRESETS: dict[str, dict[str, Any]] = {
    # p = 31, 60 % of the pairs, lr 3e-3: groks between epochs ~400 and ~600, by seed and by kind
    # of CPU (fp32 rounds differently on each; two steps per epoch, a minute).  The fork is at 600:
    # at 450, the first choice, seeds 1031, 1033 and 1035 had not grokked by the fork on an AMD EPYC
    # (1031 had on an Intel CPU), at 600 all of 1031-1033 and 1035 had.  The holdout keeps the paper's
    # block of 4 classes (0.13 · 31 = 4; the paper: 0.075 · 53 = 4).
    "ci": {
        "P": 31,
        "TRAIN_FRACTION": 0.6,
        "DATA_SEED": 42,
        "EPOCHS": 700,
        "N_MODELS": 1,
        "WEIGHT_DECAY": 1.0,
        "FORK_EPOCH": 600,
        "CHECKPOINT_EVERY": 50,
        "CHECKPOINT_SWITCH": 500,
        "CHECKPOINT_EVERY_LATE": 100,
        "SEED": 1032,
        "LR": 3e-3,
        "BATCH_SIZE": 512,
        "ENERGY": 0.99,
        "RIDGE": 1.0,
        "HOLDOUT_FRACTION": 0.13,
        "CLOCK_EPOCHS": None,
        "ARTIFACT_DIR": None,
        "WORKERS": 1,
        "TRAINER": "ensemble",
        "PRECISION": "auto",
        "DEVICE": "auto",
    },
    # The paper's task (p = 53, 50 % split) and schedule, cut to what 2 CPU cores allow.  The fork
    # is at 900, as in the paper and its code release (BRANCH_EPOCH = 900 in run_modadd.py): these
    # seeds grok at epoch 800 on the ensemble trainer, so the arm starts 100 epochs after grokking,
    # as the paper's does.  The first stored runs forked at 1100 (each model alone, TRAINER =
    # "loop", grokked at 1000); they stay as named runs (:data:`FORK_1100_RUNS`).
    "book": {
        "P": 53,
        "TRAIN_FRACTION": 0.5,
        "DATA_SEED": 42,
        "EPOCHS": 1400,
        "N_MODELS": 2,
        "WEIGHT_DECAY": 1.0,
        "FORK_EPOCH": 900,
        "CHECKPOINT_EVERY": 100,
        "CHECKPOINT_SWITCH": 2000,
        "CHECKPOINT_EVERY_LATE": 500,
        "SEED": 1031,
        "LR": 1e-3,
        "BATCH_SIZE": 512,
        "ENERGY": 0.99,
        "RIDGE": 1.0,
        "HOLDOUT_FRACTION": 0.075,
        "CLOCK_EPOCHS": None,
        "ARTIFACT_DIR": None,
        "WORKERS": 2,
        "TRAINER": "ensemble",
        "PRECISION": "auto",
        "DEVICE": "auto",
    },
}

# The paper's run (3 models x 20 000 epochs).  Hours on a CPU.  With the same seeds, TRAINER and
# PRECISION this run is the book run continued: its first 1400 epochs are the book's numbers
# (checked by chapter 3 on the stored runs).
PRESETS["paper"] = PRESETS["book"] | {"EPOCHS": 20000, "N_MODELS": 3, "WORKERS": 3}

#: The paper preset trained on the ensemble trainer in bf16 (all 3 models and both arms in one
#: process): a run of its own, whose known gaps the chapters record under this name.
PAPER_ENSEMBLE = "paper, ensemble bf16"
PAPER_ENSEMBLE_RUN: dict[str, Any] = {"PRESET": "paper", "TRAINER": "ensemble", "PRECISION": "bf16", "DEVICE": "cpu"}

#: Where the first stored runs forked the weight-decay-off arm: 200 epochs after the paper's 900.
OLD_FORK = 1100

#: The same ensemble run with the WD-off arm forked at :data:`OLD_FORK` (the first stored paper run
#: of this trainer): the chapters show it beside the run forked at 900.
PAPER_ENSEMBLE_1100 = "paper, ensemble bf16, fork 1100"

#: The first stored runs of the book and paper presets, trained each model alone in fp32 and forked
#: at :data:`OLD_FORK`: runs of their own, whose known gaps the chapters record under these names.
BOOK_LOOP, PAPER_LOOP = "book, loop fp32", "paper, loop fp32"
#: The book run on the ensemble trainer in fp32 forked at :data:`OLD_FORK` (the book preset before the fork moved).
BOOK_1100 = "book, fork 1100"
FORK_1100_RUNS: dict[str, dict[str, Any]] = {
    PAPER_ENSEMBLE_1100: PAPER_ENSEMBLE_RUN | {"FORK_EPOCH": OLD_FORK},
    BOOK_LOOP: {"PRESET": "book", "TRAINER": "loop", "PRECISION": "fp32", "FORK_EPOCH": OLD_FORK, "DEVICE": "cpu"},
    PAPER_LOOP: {"PRESET": "paper", "TRAINER": "loop", "PRECISION": "fp32", "FORK_EPOCH": OLD_FORK, "DEVICE": "cpu"},
    BOOK_1100: {"PRESET": "book", "FORK_EPOCH": OLD_FORK, "DEVICE": "cpu"},
}

KNOBS: tuple[str, ...] = tuple(PRESETS["book"])

#: Knobs that change the training run / analysis (the artifact key); the others only change plots.
RUN_KNOBS: tuple[str, ...] = tuple(k for k in KNOBS if k not in ("N_MODELS", "CLOCK_EPOCHS", "ARTIFACT_DIR", "WORKERS", "DEVICE"))

#: Run knobs added after runs were stored, with the value those runs had: a run at this value
#: leaves the knob out of its artifact key, so the stored runs keep their names and keys.
KEYED_WHEN_CHANGED: dict[str, Any] = {"TRAINER": "loop", "PRECISION": "fp32"}

#: ``TRAINER`` values: ``"ensemble"`` (the presets' default) trains every model and both arms as
#: one batched ensemble in one process (:mod:`ace_helpers.chapters.modadd.ensemble_run`);
#: ``"loop"`` trains each model alone (``torch.optim.AdamW`` on a ``ToyTransformer``, ``WORKERS``
#: processes; the first stored runs).
TRAINERS = ("loop", "ensemble")


#: The knobs that make two runs the same experiment (the protocol): how it is trained (TRAINER,
#: PRECISION) is left out, so runs that differ only there are samples of one protocol.
PROTOCOL_KNOBS: tuple[str, ...] = (*(k for k in RUN_KNOBS if k not in KEYED_WHEN_CHANGED), "N_MODELS")


def train_device(cfg: Mapping[str, Any]) -> torch.device:
    """Where the run trains: ``DEVICE`` resolved for the ensemble trainer; the loop trainer (each model alone,
    in ``WORKERS`` processes) trains on the CPU."""
    return resolve_device(cfg["DEVICE"]) if cfg["TRAINER"] == "ensemble" else torch.device("cpu")


def run_knob_values(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The run knobs that key a run's artifacts (see :data:`KEYED_WHEN_CHANGED`), plus the kind of device it trains
    on (``"DEVICE": "cuda"``) when that is not the CPU: the stored CPU runs keep their keys, and a GPU run is
    stored beside them as another sample of the same protocol."""
    out = {k: cfg[k] for k in RUN_KNOBS if k not in KEYED_WHEN_CHANGED or cfg[k] != KEYED_WHEN_CHANGED[k]}
    return out | (device_key(train_device(cfg).type) if "DEVICE" in cfg else {})


def holdout_classes(p: int, fraction: float) -> int:
    """Held-out block size of the shift fit: round(fraction · p), at least 1 when fraction > 0 (p=53: 4)."""
    if fraction <= 0:
        return 0
    return max(1, int(round(fraction * p)))


#: Most epochs a run may train: ten times the paper's 20 000.
MAX_EPOCHS = 200_000

#: Most models per run (each trains its own copy of both arms).  More workers than models never run.
MAX_MODELS = 16

#: Most checkpoints per arm: each is a full analysis (ACE, a rank scan over every rank, two
#: shift-operator fits; about a second at p = 53) and a row of every stored array.  The paper's
#: schedule has 57.
MAX_CHECKPOINTS = 2000

#: Bytes per (test pair × answer class) of one checkpoint's analysis: the float64 rank scan
#: (:func:`ace_helpers.method.scans.rank_scan`, 32 ranks per batched op, about four (N, 32, p) arrays
#: live at once) plus the forward pass on the test split.  Measured here: 0.60 GB at p = 101 and
#: 1.8 GB at p = 151 (50 % split) against 0.59 GB and 1.97 GB estimated.
ANALYSIS_BYTES_PER_PAIR_CLASS = 1200

#: Bytes per pair (of all p²) of building the split: the int64 triples, their permutation and the
#: train / test tensors (:func:`ace_helpers.toys.tasks.modadd.modadd_dataset`).
DATASET_BYTES_PER_PAIR = 96


def split_sizes(p: int, train_fraction: float) -> tuple[int, int]:
    """(train pairs, test pairs) of the split: int(train_fraction · p²) and the rest."""
    n_train = int(train_fraction * p * p)
    return n_train, p * p - n_train


def memory_estimate(p: int, train_fraction: float, batch_size: int) -> dict[str, int]:
    """Estimated peak memory (bytes) of one training process, by part, and their ``"total"``.

    ``dataset`` (all p² pairs, :data:`DATASET_BYTES_PER_PAIR` each), ``analysis`` (one
    checkpoint on the test split, :data:`ANALYSIS_BYTES_PER_PAIR_CLASS` per test pair and
    class), ``batch`` (activations and gradients of one mini-batch of min(BATCH_SIZE, train
    pairs) examples), ``model`` (weights + AdamW state).  ``total`` = dataset + model +
    max(analysis, batch): the analysis runs between training steps.
    """
    model = model_config(p)
    n_train, n_test = split_sizes(p, train_fraction)
    n_params = 2 * p * model.d_model + model.n_layers * (4 * model.d_model**2 + 2 * model.d_model * model.d_ff)
    parts = {
        "dataset": DATASET_BYTES_PER_PAIR * p * p,
        "analysis": ANALYSIS_BYTES_PER_PAIR_CLASS * n_test * p,
        "batch": min(batch_size, max(n_train, 1)) * model.max_len * (4 * p + 8 * model.d_model + 4 * model.d_ff) * 4 * 3,
        "model": n_params * 4 * 4,
    }
    parts["total"] = parts["dataset"] + parts["model"] + max(parts["analysis"], parts["batch"])
    return parts


def memory_limit() -> tuple[int, str]:
    """(bytes, description) a run may use: half of this machine's physical memory (8 GiB if unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not a POSIX system
        return 8 * 2**30, "8 GiB (this machine's memory is unknown)"
    return total // 2, f"half this machine's memory, {_gib(total // 2)}"


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n < 2**40 else f"{n / 2**40:.3g} TiB"


def check(cfg: dict[str, Any]) -> None:
    """Check every knob of the run (raises ``ValueError`` naming the knob); values are left as given, but for
    ``DEVICE`` (normalised) and ``PRECISION`` (``"auto"`` resolved for the device the run trains on).

    Each knob is checked on its own first, then the rules that tie knobs together: the run must
    fit in memory (:func:`memory_estimate` against :func:`memory_limit`, P / TRAIN_FRACTION /
    BATCH_SIZE / WORKERS named), the split must leave at least p train pairs and every answer
    class in the test split (the shift operator is fitted on the test split's class means), the
    schedule must have at most :data:`MAX_CHECKPOINTS` checkpoints, and every CLOCK_EPOCHS entry
    must be one of them.
    """
    checks.check_prime("P", cfg["P"], low=5)
    checks.check_range("TRAIN_FRACTION", cfg["TRAIN_FRACTION"], low=0.0, high=1.0, low_open=True, high_open=True)
    checks.check_int("DATA_SEED", cfg["DATA_SEED"], low=0, high=2**32 - 1)  # numpy RandomState's range
    epochs = checks.check_int("EPOCHS", cfg["EPOCHS"], low=1, high=MAX_EPOCHS)
    n_models = checks.check_int("N_MODELS", cfg["N_MODELS"], low=1, high=MAX_MODELS)
    checks.check_range("WEIGHT_DECAY", cfg["WEIGHT_DECAY"], low=0.0)
    checks.check_int("FORK_EPOCH", cfg["FORK_EPOCH"], low=1, high=max(epochs - 1, 1))
    if cfg["FORK_EPOCH"] >= epochs:
        raise ValueError(
            f"FORK_EPOCH={cfg['FORK_EPOCH']!r} is not allowed: FORK_EPOCH must be in [1, EPOCHS - 1] = [1, {epochs - 1}]"
        )
    checks.check_int("CHECKPOINT_EVERY", cfg["CHECKPOINT_EVERY"], low=1)
    checks.check_int("CHECKPOINT_SWITCH", cfg["CHECKPOINT_SWITCH"], low=0)
    checks.check_int("CHECKPOINT_EVERY_LATE", cfg["CHECKPOINT_EVERY_LATE"], low=1)
    checks.check_int("SEED", cfg["SEED"], low=0, high=2**32 - 1)
    checks.check_range("LR", cfg["LR"], low=0.0, low_open=True)
    checks.check_int("BATCH_SIZE", cfg["BATCH_SIZE"], low=1)
    checks.check_range("ENERGY", cfg["ENERGY"], low=0.0, high=1.0, low_open=True)
    checks.check_range("RIDGE", cfg["RIDGE"], low=0.0)
    checks.check_range("HOLDOUT_FRACTION", cfg["HOLDOUT_FRACTION"], low=0.0, high=0.5, high_open=True)
    if holdout_classes(cfg["P"], cfg["HOLDOUT_FRACTION"]) > cfg["P"] - 3:
        raise ValueError(f"HOLDOUT_FRACTION={cfg['HOLDOUT_FRACTION']!r} holds out too many classes for P={cfg['P']}")
    if cfg["CLOCK_EPOCHS"] is not None:
        checks.check_list("CLOCK_EPOCHS", cfg["CLOCK_EPOCHS"], lambda n, v: checks.check_int(n, v, low=0, high=epochs))
    workers = checks.check_int("WORKERS", cfg["WORKERS"], low=1, high=MAX_MODELS)
    checks.check_choice("TRAINER", cfg["TRAINER"], TRAINERS)
    cfg["DEVICE"] = check_device("DEVICE", cfg["DEVICE"])
    ensemble = cfg["TRAINER"] == "ensemble"
    if not ensemble:
        if cfg["DEVICE"] not in ("auto", "cpu"):
            raise ValueError(f"DEVICE={cfg['DEVICE']!r} is not allowed with TRAINER={cfg['TRAINER']!r}: the loop trainer "
                             "runs on the CPU (set TRAINER='ensemble', or DEVICE='cpu' or 'auto')")
        cfg["DEVICE"] = "cpu"  # resolved: the loop trainer trains on the CPU, and its setup lines say so on a GPU machine
    cfg["PRECISION"] = resolve_precision("PRECISION", cfg["PRECISION"], train_device(cfg), bf16_allowed=ensemble)
    if cfg["PRECISION"] != "fp32" and not ensemble:
        raise ValueError(
            f"PRECISION={cfg['PRECISION']!r} is not allowed with TRAINER={cfg['TRAINER']!r}: only the ensemble trainer "
            "runs bf16 (set TRAINER='ensemble', or PRECISION='fp32' or 'auto')"
        )
    if cfg["ARTIFACT_DIR"] is not None:
        P_.check_output_dir("ARTIFACT_DIR", cfg["ARTIFACT_DIR"], "modadd_grokking_cache")
    # the ensemble trains every model's two arms in one process: its batch memory is 2 N_MODELS batches
    if cfg["TRAINER"] == "ensemble":
        _check_size(cfg["P"], cfg["TRAIN_FRACTION"], cfg["BATCH_SIZE"], 2 * n_models, "member",
                    "members (both arms of N_MODELS models, in one process)", "fewer N_MODELS")  # fmt: skip
    else:
        _check_size(cfg["P"], cfg["TRAIN_FRACTION"], cfg["BATCH_SIZE"], min(workers, n_models), "process",
                    "processes (WORKERS)", "fewer WORKERS")  # fmt: skip
    _check_split(cfg["P"], cfg["TRAIN_FRACTION"], cfg["DATA_SEED"])
    _check_schedule(cfg)


def _check_size(p: int, train_fraction: float, batch_size: int, copies: int, each: str, unit: str, fewer: str) -> None:
    """Refuse a run whose estimated memory (:func:`memory_estimate` per copy: ``each`` is a worker
    process or an ensemble member, ``unit`` names the copies, ``fewer`` is the advice) exceeds :func:`memory_limit`."""
    est = memory_estimate(p, train_fraction, batch_size)
    need = est["total"] * copies
    limit, why = memory_limit()
    if need > limit:
        biggest = max(("dataset", "analysis", "batch"), key=lambda k: est[k])
        knobs = {"dataset": "P", "analysis": "P / TRAIN_FRACTION", "batch": "BATCH_SIZE / P"}[biggest]
        per = f" per {each} × {copies} {unit}" if copies > 1 else ""
        raise ValueError(
            f"P={p}, TRAIN_FRACTION={train_fraction}, BATCH_SIZE={batch_size} would need ~{_gib(need)}{per} "
            f"(mostly the {biggest}: ~{_gib(est[biggest])}, set by {knobs}); the limit is {why}. "
            "Use a smaller P (the paper: 53)" + (f", or {fewer}" if copies > 1 else "")
        )


def _check_split(p: int, train_fraction: float, data_seed: int) -> None:
    """The split must leave at least p train pairs and every answer class 0..p-1 in the test split."""
    n_train, n_test = split_sizes(p, train_fraction)
    if n_train < p:
        raise ValueError(
            f"TRAIN_FRACTION={train_fraction!r} is not allowed: it leaves {n_train} train pairs for P={p}; "
            f"the train split must hold at least P = {p} of the {p * p} pairs (TRAIN_FRACTION ≥ 1/P = {1 / p:.4f})"
        )

    answers = all_pairs(p)[np.random.RandomState(data_seed).permutation(p * p)[n_train:], 2]
    missing = np.setdiff1d(np.arange(p), answers)
    if missing.size:
        raise ValueError(
            f"TRAIN_FRACTION={train_fraction!r} is not allowed: with P={p} and DATA_SEED={data_seed} its {n_test} "
            f"test pairs miss answer classes {missing[:10].tolist()}{' ...' if missing.size > 10 else ''}; every class "
            "must occur in the test split (the shift operator is fitted on its class means): use a smaller TRAIN_FRACTION"
        )


def _check_schedule(cfg: Mapping[str, Any]) -> None:
    """At most :data:`MAX_CHECKPOINTS` checkpoints; every CLOCK_EPOCHS entry a checkpoint epoch."""
    epochs, every, switch, late = (cfg[k] for k in ("EPOCHS", "CHECKPOINT_EVERY", "CHECKPOINT_SWITCH", "CHECKPOINT_EVERY_LATE"))
    count = 2 + min(switch, epochs) // every + max(epochs - switch, 0) // late  # upper bound of the schedule's length
    if count > MAX_CHECKPOINTS:
        count = len(schedule_of(cfg))
    if count > MAX_CHECKPOINTS:
        raise ValueError(
            f"CHECKPOINT_EVERY={every}, CHECKPOINT_SWITCH={switch}, CHECKPOINT_EVERY_LATE={late} give {count} checkpoints "
            f"over EPOCHS={epochs}; the limit is {MAX_CHECKPOINTS} (each checkpoint is a full analysis; the paper's schedule "
            "has 57): use larger CHECKPOINT_EVERY / CHECKPOINT_EVERY_LATE"
        )
    if cfg["CLOCK_EPOCHS"] is not None:
        marks = set(schedule_of(cfg))
        for i, e in enumerate(cfg["CLOCK_EPOCHS"]):
            if int(e) not in marks:
                near = sorted(marks, key=lambda m: (abs(m - int(e)), m))[:2]
                raise ValueError(
                    f"CLOCK_EPOCHS[{i}]={e!r} is not allowed: CLOCK_EPOCHS must be checkpoint epochs (the clocks are "
                    f"drawn from the stored analyses); nearest checkpoints: {sorted(near)} (schedule: every "
                    f"CHECKPOINT_EVERY={every} up to CHECKPOINT_SWITCH={switch}, then every CHECKPOINT_EVERY_LATE={late}, and EPOCHS)"
                )


#: The run's knobs on their own (the command line and the stored long run resolve against it);
#: the chapters resolve the same presets and check under their notebook names.
PARAMS = P_.ChapterParams("modadd_grokking", PRESETS, check)


def paper_task(cfg: Mapping[str, Any]) -> bool:
    """The one rule by which the chapters' thresholds depend on the run: the paper's task, p = 53 at a 50 % split.

    Off it (e.g. p = 31 with 60 % of the pairs) some of the paper's windows do not apply and
    are relaxed; each relaxed claim says so in its text.
    """
    return cfg["P"] == 53 and cfg["TRAIN_FRACTION"] == 0.5


def checkpoint_schedule(epochs: int, every: int, switch: int, every_late: int) -> list[int]:
    """Checkpoint epochs: 0, then every ``every`` up to ``switch``, then every ``every_late``; always ``epochs``.

    Paper: ``checkpoint_schedule(20000, 100, 2000, 500)`` -> 0, 100, ..., 2000, 2500, ..., 20000.
    """
    marks = {0, epochs}
    marks.update(range(every, min(switch, epochs) + 1, every))
    if switch < epochs:
        marks.update(range(switch + every_late, epochs + 1, every_late))
    return sorted(marks)


def schedule_of(cfg: Mapping[str, Any]) -> list[int]:
    """The checkpoint schedule of a run's knobs."""
    return checkpoint_schedule(cfg["EPOCHS"], cfg["CHECKPOINT_EVERY"], cfg["CHECKPOINT_SWITCH"], cfg["CHECKPOINT_EVERY_LATE"])


def model_config(p: int) -> ToyConfig:
    """The paper's two-layer model for modulus ``p`` (d_model 128, 4 heads, d_ff 512, context 2)."""
    return ToyConfig(vocab=p, d_model=128, n_layers=2, n_heads=4, d_ff=512, max_len=2)
