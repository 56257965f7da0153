"""The knobs of the toy-model stitching experiments (chapter 7), which chapter 6 shares: presets and their check."""

from __future__ import annotations

from typing import Any

from ace_helpers.chapters.modadd.config import model_config
from ace_helpers.chapters.markov_run.run import MAX_STATES
from ace_helpers.method import checks
from ace_helpers.method.devices import check_device, resolve_device
from ace_helpers.toys.precision import resolve_precision
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, validate_transition

MEMORY_LIMIT = 8 * 2**30


_COMMON = {"T": PAPER_CHAIN, "D_MODEL": 64, "SEQ_LEN": 32, "ENERGY": 0.999, "BATCH_SIZE": 64, "SEED": 0,
           "DATA_SEED": 0, "TEST_DATA_SEED": 999, "R_MAX": 8, "RIDGE": 1e-6,
           "P": 31, "TRAIN_FRACTION": 0.6, "MODADD_LR": 3e-3, "MODADD_SEED": 1031, "MODADD_ENERGY": 0.99,
           "MODADD_MAX_STEPS": 3000, "MODADD_EXTRA_STEPS": 200, "MODADD_R_MAX": 16, "PRECISION": "auto",
           "DEVICE": "auto"}


#: ``ci``: Markov as chapter 1's ci run (1000 sequences, 8 epochs, lr 1e-3), no mod-add (its
#: training takes minutes); ``book``: 3000 training sequences, 20 epochs, and mod-add at chapter
#: 2's ci setting (p = 31, 60 % of the pairs, lr 3e-3, weight decay 1), each model trained until
#: its test accuracy reaches 0.99 and 200 steps more (chapter 2's book models are p = 53).
PRESETS: dict[str, dict[str, Any]] = {
    "ci": _COMMON | {"N_TRAIN": 1000, "N_TEST": 1000, "EPOCHS": 8, "LR": 1e-3, "MODADD": False},
    "book": _COMMON | {"N_TRAIN": 3000, "N_TEST": 2000, "EPOCHS": 20, "LR": 1e-3, "MODADD": True},
}
PRESETS["paper"] = PRESETS["book"]  # the paper has no such experiment: its preset is the book's


def memory_estimate(p: dict[str, Any]) -> int:
    """Rough bytes: Markov activations of 3 models (train + test rows, float32 + float64 copies, ×3 for
    charts), plus the mod-add dataset and its activations."""
    rows = (p["N_TRAIN"] + p["N_TEST"]) * (p["SEQ_LEN"] - 1)
    return 3 * rows * p["D_MODEL"] * 12 * 3 + p["P"] ** 2 * (96 + 128 * 24)


def check(p: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it) and the memory estimate."""
    p["T"] = validate_transition(p["T"], "T").tolist()
    if len(p["T"]) > MAX_STATES:
        raise ValueError(f"T has {len(p['T'])} states: the chapter takes chains of 2..{MAX_STATES} states")
    p["D_MODEL"] = checks.check_int("D_MODEL", p["D_MODEL"], low=4, high=1024)
    if p["D_MODEL"] % 4:
        raise ValueError(f"D_MODEL={p['D_MODEL']!r} is not allowed: D_MODEL must be divisible by the 4 heads")
    if len(p["T"]) > p["D_MODEL"]:
        raise ValueError(f"T has {len(p['T'])} states but D_MODEL={p['D_MODEL']}: D_MODEL must be >= the number of states")
    p["SEQ_LEN"] = checks.check_int("SEQ_LEN", p["SEQ_LEN"], low=3, high=65)
    p["N_TRAIN"] = checks.check_int("N_TRAIN", p["N_TRAIN"], low=10)
    p["N_TEST"] = checks.check_int("N_TEST", p["N_TEST"], low=10)
    p["EPOCHS"] = checks.check_int("EPOCHS", p["EPOCHS"], low=1, high=10_000)
    p["LR"] = checks.check_range("LR", p["LR"], low=0.0, high=1.0, low_open=True)
    p["BATCH_SIZE"] = checks.check_int("BATCH_SIZE", p["BATCH_SIZE"], low=1)
    p["ENERGY"] = checks.check_range("ENERGY", p["ENERGY"], low=0.0, high=1.0, low_open=True)
    for name in ("SEED", "DATA_SEED", "TEST_DATA_SEED", "MODADD_SEED"):
        p[name] = checks.check_int(name, p[name], low=0, high=2**31)
    if not isinstance(p["MODADD"], bool):
        raise ValueError(f"MODADD={p['MODADD']!r} is not allowed: MODADD must be True or False")
    p["R_MAX"] = checks.check_int("R_MAX", p["R_MAX"], low=1, high=p["D_MODEL"])
    p["RIDGE"] = checks.check_range("RIDGE", p["RIDGE"], low=0.0, high=1e3)
    p["P"] = checks.check_prime("P", p["P"], low=5)
    if p["P"] > 211:
        raise ValueError(f"P={p['P']!r} is not allowed: P must be a prime in [5, 211] (a bigger p trains for hours here)")
    p["TRAIN_FRACTION"] = checks.check_range("TRAIN_FRACTION", p["TRAIN_FRACTION"], low=0.0, high=1.0,
                                             low_open=True, high_open=True)
    n_train = int(p["TRAIN_FRACTION"] * p["P"] ** 2)
    if n_train < p["P"] or p["P"] ** 2 - n_train < p["P"]:
        raise ValueError(f"TRAIN_FRACTION={p['TRAIN_FRACTION']!r} leaves {n_train} train and {p['P'] ** 2 - n_train} test "
                         f"pairs for P={p['P']}: each split needs at least P pairs")
    p["MODADD_LR"] = checks.check_range("MODADD_LR", p["MODADD_LR"], low=0.0, high=1.0, low_open=True)
    p["MODADD_ENERGY"] = checks.check_range("MODADD_ENERGY", p["MODADD_ENERGY"], low=0.0, high=1.0, low_open=True)
    p["MODADD_MAX_STEPS"] = checks.check_int("MODADD_MAX_STEPS", p["MODADD_MAX_STEPS"], low=1, high=200_000)
    p["MODADD_EXTRA_STEPS"] = checks.check_int("MODADD_EXTRA_STEPS", p["MODADD_EXTRA_STEPS"], low=0, high=200_000)
    p["MODADD_R_MAX"] = checks.check_int("MODADD_R_MAX", p["MODADD_R_MAX"], low=1, high=model_config(p["P"]).d_model)
    p["DEVICE"] = check_device("DEVICE", p["DEVICE"])
    p["PRECISION"] = resolve_precision("PRECISION", p["PRECISION"], resolve_device(p["DEVICE"]))
    need = memory_estimate(p)
    if need > MEMORY_LIMIT:
        raise ValueError(f"N_TRAIN={p['N_TRAIN']}, N_TEST={p['N_TEST']}, SEQ_LEN={p['SEQ_LEN']}, D_MODEL={p['D_MODEL']} "
                         f"would need ~{need / 2**30:.3g} GiB; the limit is {MEMORY_LIMIT / 2**30:.3g} GiB: lower N_TRAIN or N_TEST")
