"""A chapter run's start: the validation cell's side effects (threads, old results removed, what runs printed) and seeding."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from ace_helpers.method.checks import check_int
from ace_helpers.repro.artifacts import clear_results, display_path
from ace_helpers.repro.kernels import describe as describe_kernels
from ace_helpers.repro.machine import versions
from ace_helpers.repro.params import Params
from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.precision import describe as describe_precision


def begin(cfg: Params) -> None:
    """A chapter's validation-cell side effects: set torch threads, remove the previous run's
    ``OUTPUT_DIR/results.json`` (so an interrupted run never leaves an older result looking like
    its own), print the knobs in force, the versions, whether the reproducible kernels are in force
    (:func:`ace_helpers.repro.kernels.describe`) and, in a training chapter, which kernels its ``PRECISION`` runs on this CPU."""
    set_threads()
    shown = display_path(cfg["OUTPUT_DIR"])
    if clear_results(cfg["OUTPUT_DIR"]):
        print(f"removed the previous run's {shown}/results.json (this run writes a new one at its end)")

    def short(value: Any) -> Any:
        text = repr(value)
        return value if len(text) <= 80 else text[:77] + "..."

    print({k: (shown if k == "OUTPUT_DIR" else short(v)) for k, v in cfg.items()})
    print(versions())
    print(describe_kernels())
    if "PRECISION" in cfg:
        print(f"PRECISION={cfg['PRECISION']!r}: {describe_precision(cfg['PRECISION'])}")


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch global RNGs (the library itself uses explicit generators)."""
    seed = check_int("SEED", seed, low=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
