"""The knobs of the toy-model stitching experiments (chapter 7), declared once (:data:`KNOBS`), which chapter 6 shares:
the presets, the validation and chapter 7's parameters cell derive from this table (:mod:`ace_helpers.repro.knobs`).

``ci``: Markov as chapter 1's ci run (1000 sequences, 8 epochs, lr 1e-3), no mod-add (its training takes minutes);
``book``: 3000 training sequences, 20 epochs, and mod-add at chapter 2's ci setting (p = 31, 60 % of the pairs, lr
3e-3, weight decay 1), each model trained until its test accuracy reaches 0.99 and 200 steps more (chapter 2's book
models are p = 53).  The paper has no such experiment: its preset is the book's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.chapters.markov_run.run import MAX_STATES
from ace_helpers.chapters.modadd.limits import model_config
from ace_helpers.chapters.training_knobs import device_knob, precision_knob
from ace_helpers.method import checks
from ace_helpers.repro.knobs import Knob, checker, knob, parameters_cell, plain, presets
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, validate_transition

NOTEBOOK = "07_core_stitching"
MEMORY_LIMIT = 8 * 2**30


def _chain(name: str, value: Any, knobs: Mapping[str, Any]) -> list[list[float]]:
    T = validate_transition(value, name).tolist()
    if len(T) > MAX_STATES:
        raise ValueError(f"{name} has {len(T)} states: the chapter takes chains of 2..{MAX_STATES} states")
    return T


def _d_model(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    d = checks.check_int(name, value, low=4, high=1024)
    if d % 4:
        raise ValueError(f"{name}={d!r} is not allowed: {name} must be divisible by the 4 heads")
    if len(knobs["T"]) > d:
        raise ValueError(f"T has {len(knobs['T'])} states but {name}={d}: {name} must be >= the number of states")
    return d


def _modadd(name: str, value: Any, knobs: Mapping[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be True or False")
    return value


def _prime(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    p = checks.check_prime(name, value, low=5)
    if p > 211:
        raise ValueError(f"{name}={p!r} is not allowed: {name} must be a prime in [5, 211] (a bigger p trains for hours here)")
    return p


def _fraction(name: str, value: Any, knobs: Mapping[str, Any]) -> float:
    f = checks.check_range(name, value, low=0.0, high=1.0, low_open=True, high_open=True)
    p = knobs["P"]
    n_train = int(f * p**2)
    if n_train < p or p**2 - n_train < p:
        raise ValueError(
            f"{name}={f!r} leaves {n_train} train and {p**2 - n_train} test pairs for P={p}: each split needs at least P pairs"
        )
    return f


def _seed(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    return checks.check_int(name, value, low=0, high=2**31)


_UNIT = plain(checks.check_range, low=0.0, high=1.0, low_open=True)
KNOBS: tuple[Knob, ...] = (
    knob(
        "T",
        "Markov transition matrix as a list of rows; None: the paper's 4-state chain",
        _chain,
        ci=PAPER_CHAIN,
        book=PAPER_CHAIN,
    ),
    knob("D_MODEL", "residual width of the one-layer Markov transformer (paper: 64)", _d_model, ci=64, book=64),
    knob(
        "SEQ_LEN",
        "Markov sequence length (the model sees SEQ_LEN − 1 tokens)",
        plain(checks.check_int, low=3, high=65),
        ci=32,
        book=32,
    ),
    knob(
        "N_TRAIN",
        "Markov training sequences (the stitching maps are fitted on them)",
        plain(checks.check_int, low=10),
        ci=1000,
        book=3000,
    ),
    knob(
        "N_TEST", "Markov held-out sequences (every swap is scored on them)", plain(checks.check_int, low=10), ci=1000, book=2000
    ),
    knob("EPOCHS", "Markov training epochs", plain(checks.check_int, low=1, high=10_000), ci=8, book=20),
    knob("LR", "Markov AdamW learning rate", _UNIT, ci=1e-3, book=1e-3),
    knob("BATCH_SIZE", "Markov mini-batch size", plain(checks.check_int, low=1), ci=64, book=64),
    knob("ENERGY", "cumulative-energy threshold of the Markov ACE rank rule", _UNIT, ci=0.999, book=0.999),
    knob(
        "SEED",
        "Markov model seeds SEED, SEED + 100, SEED + 200; also seeds the random subspaces and the crossed inputs",
        _seed,
        ci=0,
        book=0,
    ),
    knob("DATA_SEED", "numpy RandomState seed of the Markov training sequences", _seed, ci=0, book=0),
    knob("TEST_DATA_SEED", "numpy RandomState seed of the Markov held-out sequences", _seed, ci=999, book=999),
    knob(
        "R_MAX",
        "Markov rank sweep: ranks 1..R_MAX",
        lambda n, v, k: checks.check_int(n, v, low=1, high=k["D_MODEL"]),
        ci=8,
        book=8,
    ),
    knob(
        "RIDGE",
        "relative ridge of the least-squares maps (1e-6: plain least squares)",
        plain(checks.check_range, low=0.0, high=1e3),
        ci=1e-6,
        book=1e-6,
    ),
    knob("MODADD", "True: also stitch two grokked modular-addition models", _modadd, ci=False, book=True),
    knob("P", "mod-add modulus (a prime)", _prime, ci=31, book=31),
    knob(
        "TRAIN_FRACTION",
        "mod-add share of the p² pairs used for training (and for fitting the maps)",
        _fraction,
        ci=0.6,
        book=0.6,
    ),
    knob("MODADD_LR", "mod-add AdamW learning rate (weight decay 1)", _UNIT, ci=3e-3, book=3e-3),
    knob("MODADD_SEED", "mod-add model seeds MODADD_SEED and MODADD_SEED + 1000", _seed, ci=1031, book=1031),
    knob("MODADD_ENERGY", "cumulative-energy threshold of the mod-add ACE rank rule", _UNIT, ci=0.99, book=0.99),
    knob("MODADD_MAX_STEPS", "mod-add step cap per model", plain(checks.check_int, low=1, high=200_000), ci=3000, book=3000),
    knob(
        "MODADD_EXTRA_STEPS",
        "mod-add steps trained after a model's test accuracy first reaches 0.99",
        plain(checks.check_int, low=0, high=200_000),
        ci=200,
        book=200,
    ),
    knob(
        "MODADD_R_MAX",
        "mod-add rank sweep: ranks 1..MODADD_R_MAX",
        lambda n, v, k: checks.check_int(n, v, low=1, high=model_config(k["P"]).d_model),
        ci=16,
        book=16,
    ),
    precision_knob('model training: "auto" (bf16 on a GPU with native bf16, else fp32), "fp32", "bf16"'),
    device_knob('where the models train: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"'),
)


def memory_estimate(p: Mapping[str, Any]) -> int:
    """Rough bytes: Markov activations of 3 models (train + test rows, float32 + float64 copies, ×3 for
    charts), plus the mod-add dataset and its activations."""
    rows = (p["N_TRAIN"] + p["N_TEST"]) * (p["SEQ_LEN"] - 1)
    return 3 * rows * p["D_MODEL"] * 12 * 3 + p["P"] ** 2 * (96 + 128 * 24)


def across(p: dict[str, Any]) -> None:
    """The check across knobs: :func:`memory_estimate` under :data:`MEMORY_LIMIT`."""
    need = memory_estimate(p)
    if need > MEMORY_LIMIT:
        raise ValueError(
            f"N_TRAIN={p['N_TRAIN']}, N_TEST={p['N_TEST']}, SEQ_LEN={p['SEQ_LEN']}, D_MODEL={p['D_MODEL']} "
            f"would need ~{need / 2**30:.3g} GiB; the limit is {MEMORY_LIMIT / 2**30:.3g} GiB: lower N_TRAIN or N_TEST"
        )


PRESETS = presets(KNOBS)
_CHECK = checker(KNOBS, across)


def check(values: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it) and the memory estimate.  (A module-level function, so that
    resolved settings pickle for worker processes.)"""
    _CHECK(values)


#: The lines of chapter 7's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOBS, NOTEBOOK)
