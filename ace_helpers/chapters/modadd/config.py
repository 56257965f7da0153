"""Knobs of the modular-addition run (chapters 2-3), declared once (:data:`KNOB_TABLE`): the presets, their check and
chapter 2's parameters cell derive from it (:mod:`ace_helpers.repro.knobs`); chapter 3 restates the table with its
own comments (:mod:`ace_helpers.chapters.core_inflation.knobs`).  Also the named stored runs and the run's key.

Models are the two-layer toy transformer trained on a + b (mod p) with AdamW (weight decay
``WEIGHT_DECAY``); a second arm forks every model at ``FORK_EPOCH`` and continues with a fresh
AdamW without weight decay.  Chapters 2 and 3 share these knobs (each with its own notebook
name, :data:`ace_helpers.chapters.modadd_grokking.PARAMS` and
:data:`ace_helpers.chapters.core_inflation.PARAMS`) and so share one training run.  What a run may ask for (memory,
split, schedule) is checked by :mod:`ace_helpers.chapters.modadd.limits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ace_helpers.chapters.modadd.limits import MAX_EPOCHS, MAX_MODELS, check_schedule, check_size, check_split
from ace_helpers.method import checks
from ace_helpers.method.devices import check_device, device_key, resolve_device
from ace_helpers.repro import params as P_
from ace_helpers.repro.knobs import Knob, checker, knob, parameters_cell, presets
from ace_helpers.toys.precision import resolve_precision

#: ``TRAINER`` values: ``"ensemble"`` (the presets' default) trains every model and both arms as
#: one batched ensemble in one process (:mod:`ace_helpers.chapters.modadd.ensemble_run`);
#: ``"loop"`` trains each model alone (``torch.optim.AdamW`` on a ``ToyTransformer``, ``WORKERS``
#: processes; the first stored runs).
TRAINERS = ("loop", "ensemble")


def _as_given(fn: Any, **kwargs: Any) -> Any:
    """A knob check that validates with ``fn(name, value, **kwargs)`` and keeps the value as given (the run's key
    holds the value as the user wrote it, so stored runs keep their names)."""

    def run(name: str, value: Any, knobs: Mapping[str, Any]) -> Any:
        fn(name, value, **kwargs)
        return value

    return run


def _fork(name: str, value: Any, knobs: Mapping[str, Any]) -> Any:
    epochs = knobs["EPOCHS"]
    checks.check_int(name, value, low=1, high=max(epochs - 1, 1))
    if value >= epochs:
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be in [1, EPOCHS - 1] = [1, {epochs - 1}]")
    return value


def _holdout(name: str, value: Any, knobs: Mapping[str, Any]) -> Any:
    checks.check_range(name, value, low=0.0, high=0.5, high_open=True)
    if holdout_classes(knobs["P"], value) > knobs["P"] - 3:
        raise ValueError(f"{name}={value!r} holds out too many classes for P={knobs['P']}")
    return value


def _clock_epochs(name: str, value: Any, knobs: Mapping[str, Any]) -> Any:
    if value is not None:
        checks.check_list(name, value, lambda n, v: checks.check_int(n, v, low=0, high=knobs["EPOCHS"]))
    return value


def _precision(name: str, value: Any, knobs: Mapping[str, Any]) -> str:
    """``"auto"`` resolved for the device the run trains on (the loop trainer: the CPU); bf16 on the ensemble only."""
    ensemble = knobs["TRAINER"] == "ensemble"
    device = resolve_device(check_device("DEVICE", knobs["DEVICE"])) if ensemble else torch.device("cpu")
    out = resolve_precision(name, value, device, bf16_allowed=ensemble)
    if out != "fp32" and not ensemble:
        raise ValueError(
            f"{name}={out!r} is not allowed with TRAINER={knobs['TRAINER']!r}: only the ensemble trainer "
            "runs bf16 (set TRAINER='ensemble', or PRECISION='fp32' or 'auto')"
        )
    return out


def _device(name: str, value: Any, knobs: Mapping[str, Any]) -> str:
    """Normalised; the loop trainer trains on the CPU, so its DEVICE resolves to "cpu" (its setup lines say so)."""
    device = check_device(name, value)
    if knobs["TRAINER"] == "ensemble":
        return device
    if device not in ("auto", "cpu"):
        raise ValueError(
            f"{name}={device!r} is not allowed with TRAINER={knobs['TRAINER']!r}: the loop trainer "
            "runs on the CPU (set TRAINER='ensemble', or DEVICE='cpu' or 'auto')"
        )
    return "cpu"


def _artifact_dir(name: str, value: Any, knobs: Mapping[str, Any]) -> Any:
    if value is not None:
        P_.check_output_dir(name, value, "modadd_grokking_cache")
    return value


# ci: p = 31, 60 % of the pairs, lr 3e-3: groks between epochs ~400 and ~600, by seed and by kind of CPU (fp32 rounds
# differently on each; two steps per epoch, a minute).  The fork is at 600: at 450, the first choice, seeds 1031, 1033
# and 1035 had not grokked by the fork on an AMD EPYC (1031 had on an Intel CPU), at 600 all of 1031-1033 and 1035
# had.  The holdout keeps the paper's block of 4 classes (0.13 · 31 = 4; the paper: 0.075 · 53 = 4).
# book: the paper's task (p = 53, 50 % split) and schedule, cut to what 2 CPU cores allow.  The fork is at 900, as in
# the paper and its code release (BRANCH_EPOCH = 900 in run_modadd.py): these seeds grok at epoch 800 on the ensemble
# trainer, so the arm starts 100 epochs after grokking, as the paper's does.  The first stored runs forked at 1100
# (each model alone, TRAINER = "loop", grokked at 1000); they stay as named runs (:data:`FORK_1100_RUNS`).
# paper: the paper's run (3 models x 20 000 epochs), hours on a CPU.  With the same seeds, TRAINER and PRECISION this
# run is the book run continued: its first 1400 epochs are the book's numbers (checked by chapter 3 on the stored runs).
KNOB_TABLE: tuple[Knob, ...] = (
    knob("P", "modulus, a prime (paper: 53)", _as_given(checks.check_prime, low=5), ci=31, book=53),
    knob(
        "TRAIN_FRACTION",
        "fraction of the p^2 pairs used for training (paper: 0.5)",
        _as_given(checks.check_range, low=0.0, high=1.0, low_open=True, high_open=True),
        ci=0.6,
        book=0.5,
    ),
    knob(
        "DATA_SEED",
        "seed of the fixed train/test permutation (paper: 42)",
        _as_given(checks.check_int, low=0, high=2**32 - 1),
        ci=42,
        book=42,
    ),  # numpy RandomState's range
    knob(
        "EPOCHS",
        "training epochs of the weight-decay arm (paper: 20000)",
        _as_given(checks.check_int, low=1, high=MAX_EPOCHS),
        ci=700,
        book=1400,
        paper=20000,
    ),
    knob(
        "N_MODELS",
        "number of independently initialised models (paper: 3)",
        _as_given(checks.check_int, low=1, high=MAX_MODELS),
        ci=1,
        book=2,
        paper=3,
    ),
    knob(
        "WEIGHT_DECAY",
        "AdamW weight decay of the main arm (paper: 1.0)",
        _as_given(checks.check_range, low=0.0),
        ci=1.0,
        book=1.0,
    ),
    knob("FORK_EPOCH", "epoch at which the weight-decay-off arm forks (paper: 900)", _fork, ci=600, book=900),
    knob(
        "CHECKPOINT_EVERY", "analyse every this many epochs ... (paper: 100)", _as_given(checks.check_int, low=1), ci=50, book=100
    ),
    knob("CHECKPOINT_SWITCH", "... up to this epoch (paper: 2000) ...", _as_given(checks.check_int, low=0), ci=500, book=2000),
    knob("CHECKPOINT_EVERY_LATE", "... then every this many (paper: 500)", _as_given(checks.check_int, low=1), ci=100, book=500),
    knob(
        "SEED",
        "base seed: model m is initialised with SEED + m (paper: 1031)",
        _as_given(checks.check_int, low=0, high=2**32 - 1),
        ci=1032,
        book=1031,
    ),
    knob("LR", "AdamW learning rate (paper: 1e-3)", _as_given(checks.check_range, low=0.0, low_open=True), ci=3e-3, book=1e-3),
    knob("BATCH_SIZE", "mini-batch size (paper: 512)", _as_given(checks.check_int, low=1), ci=512, book=512),
    knob(
        "ENERGY",
        "ACE energy threshold (paper: 0.99)",
        _as_given(checks.check_range, low=0.0, high=1.0, low_open=True),
        ci=0.99,
        book=0.99,
    ),
    knob(
        "RIDGE",
        "ridge of the shift-operator fit for R_h^2 and the clocks (paper: 1.0)",
        _as_given(checks.check_range, low=0.0),
        ci=1.0,
        book=1.0,
    ),
    knob(
        "HOLDOUT_FRACTION",
        "fraction of classes held out (a block at the cycle's edge) for R_h^2 (paper: 0.075)",
        _holdout,
        ci=0.13,
        book=0.075,
    ),
    knob(
        "CLOCK_EPOCHS",
        "epochs of the clock panels; None -> start, before, at, after grokking, last",
        _clock_epochs,
        ci=None,
        book=None,
    ),
    knob(
        "WORKERS",
        'processes training the models in parallel, "loop" trainer only (same numbers; book: 2); the ensemble trains in one',
        _as_given(checks.check_int, low=1, high=MAX_MODELS),
        ci=1,
        book=2,
        paper=3,
    ),
    knob(
        "TRAINER",
        '"ensemble" (default): every model and both arms in one batched step; "loop": each model alone (the first stored runs)',
        _as_given(checks.check_choice, choices=TRAINERS),
        ci="ensemble",
        book="ensemble",
    ),
    knob(
        "PRECISION",
        '"auto" (bf16 on a GPU with native bf16, else fp32), "fp32", "bf16" (ensemble trainer only)',
        _precision,
        ci="auto",
        book="auto",
    ),
    knob(
        "DEVICE",
        'where the ensemble trainer runs: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"',
        _device,
        ci="auto",
        book="auto",
    ),
    knob(
        "ARTIFACT_DIR",
        "cache folder of the training run; None -> book/artifacts/modadd_grokking (ci: outputs/)",
        _artifact_dir,
        ci=None,
        book=None,
    ),
)
PRESETS: dict[str, dict[str, Any]] = presets(KNOB_TABLE)
#: The PRESET line's comment in chapters 2 and 3's parameters cells.
PRESET_DOC = '"ci" | "book" | "paper"; None -> $ACE_PRESET or "book"'
#: The lines of chapter 2's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOB_TABLE, "02_modadd_grokking", PRESET_DOC)

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

KNOBS: tuple[str, ...] = tuple(k.name for k in KNOB_TABLE)

#: Knobs that change the training run / analysis (the artifact key); the others only change plots.
RUN_KNOBS: tuple[str, ...] = tuple(k for k in KNOBS if k not in ("N_MODELS", "CLOCK_EPOCHS", "ARTIFACT_DIR", "WORKERS", "DEVICE"))

#: Run knobs added after runs were stored, with the value those runs had: a run at this value
#: leaves the knob out of its artifact key, so the stored runs keep their names and keys.
KEYED_WHEN_CHANGED: dict[str, Any] = {"TRAINER": "loop", "PRECISION": "fp32"}


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
    return max(1, round(fraction * p))


def across(cfg: dict[str, Any]) -> None:
    """The rules that tie knobs together: the run must fit in memory (:func:`~ace_helpers.chapters.modadd.limits.check_size`,
    P / TRAIN_FRACTION / BATCH_SIZE / WORKERS named), the split must leave at least p train pairs and every answer class
    in the test split (the shift operator is fitted on the test split's class means), the schedule must have at most
    :data:`~ace_helpers.chapters.modadd.limits.MAX_CHECKPOINTS` checkpoints, and every CLOCK_EPOCHS entry must be one."""
    # the ensemble trains every model's two arms in one process: its batch memory is 2 N_MODELS batches
    if cfg["TRAINER"] == "ensemble":
        check_size(
            cfg["P"],
            cfg["TRAIN_FRACTION"],
            cfg["BATCH_SIZE"],
            2 * cfg["N_MODELS"],
            "member",
            "members (both arms of N_MODELS models, in one process)",
            "fewer N_MODELS",
        )
    else:
        check_size(
            cfg["P"],
            cfg["TRAIN_FRACTION"],
            cfg["BATCH_SIZE"],
            min(cfg["WORKERS"], cfg["N_MODELS"]),
            "process",
            "processes (WORKERS)",
            "fewer WORKERS",
        )
    check_split(cfg["P"], cfg["TRAIN_FRACTION"], cfg["DATA_SEED"])
    check_schedule(cfg)


_CHECK = checker(KNOB_TABLE, across)


def check(cfg: dict[str, Any]) -> None:
    """Check every knob of the run (raises ``ValueError`` naming the knob): each on its own in table order, then
    :func:`across`.  Values are left as given, but for ``DEVICE`` (normalised) and ``PRECISION`` (``"auto"`` resolved
    for the device the run trains on).  (A module-level function, so that resolved settings pickle.)"""
    _CHECK(cfg)


#: The run's knobs on their own (the command line and the stored long run resolve against it);
#: the chapters resolve the same presets and check under their notebook names.
PARAMS = P_.ChapterParams("modadd_grokking", PRESETS, check)


def paper_task(cfg: Mapping[str, Any]) -> bool:
    """The one rule by which the chapters' thresholds depend on the run: the paper's task, p = 53 at a 50 % split.

    Off it (e.g. p = 31 with 60 % of the pairs) some of the paper's windows do not apply and
    are relaxed; each relaxed claim says so in its text.
    """
    return cfg["P"] == 53 and cfg["TRAIN_FRACTION"] == 0.5
