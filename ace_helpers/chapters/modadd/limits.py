"""What a modular-addition run may ask for (chapters 2-3): its memory, its split of the p² pairs and the length of its
checkpoint schedule, each refused with a ``ValueError`` that names the knobs to change."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ace_helpers.toys.models import ToyConfig
from ace_helpers.toys.tasks.modadd import all_pairs


def model_config(p: int) -> ToyConfig:
    """The paper's two-layer model for modulus ``p`` (d_model 128, 4 heads, d_ff 512, context 2)."""
    return ToyConfig(vocab=p, d_model=128, n_layers=2, n_heads=4, d_ff=512, max_len=2)


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


def check_size(p: int, train_fraction: float, batch_size: int, copies: int, each: str, unit: str, fewer: str) -> None:
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


def check_split(p: int, train_fraction: float, data_seed: int) -> None:
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


def check_schedule(cfg: Mapping[str, Any]) -> None:
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
