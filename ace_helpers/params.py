"""Parameter validation and preset resolution for the chapters.

Every checker raises ``ValueError`` naming the parameter, the bad value and what is allowed,
so that a notebook fails in its second cell, before any compute.

Presets: each chapter module defines ``PRESETS = {"ci": {...}, "book": {...}, "paper": {...}}``.
A knob left at ``None`` takes its preset's value; anything else (e.g. a value passed through
papermill ``-p NAME VALUE``) wins.  :func:`resolve` does exactly that.
"""

from __future__ import annotations

import math
import os
import platform
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

PRESET_NAMES = ("ci", "book", "paper")


def preset_from_env(default: str = "book") -> str:
    """The preset named by ``$ACE_PRESET``, else ``default``."""
    return os.environ.get("ACE_PRESET", default)


def resolve(preset: str, knobs: Mapping[str, Any], presets: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Fill the ``None`` knobs from ``presets[preset]``; explicit values win.

    Args:
        preset: one of ``"ci"``, ``"book"``, ``"paper"``.
        knobs: the notebook's UPPER_CASE parameters (``None`` = take the preset's value).
        presets: ``{preset name: {KNOB: value}}``.

    Returns:
        A new dict with every knob set, plus ``"PRESET"``.
    """
    check_choice("PRESET", preset, PRESET_NAMES)
    table = presets[preset]
    unknown = sorted(set(table) - set(knobs))
    if unknown:
        raise ValueError(f"preset {preset!r} sets knobs the notebook does not declare: {unknown}")
    out: dict[str, Any] = {}
    for name, value in knobs.items():
        out[name] = table.get(name) if value is None else value
    out["PRESET"] = preset
    return out


def _fail(name: str, value: Any, allowed: str) -> None:
    raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        _fail(name, value, f"one of {list(choices)}")
    return value


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` must be an int (not bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        _fail(name, value, "an integer")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        _fail(name, value, f"an integer in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]")
    return value


def check_range(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` must be a finite real number within the given (open or closed) bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        _fail(name, value, "a real number")
    value = float(value)
    ok = math.isfinite(value)
    if low is not None:
        ok = ok and (value > low if low_open else value >= low)
    if high is not None:
        ok = ok and (value < high if high_open else value <= high)
    if not ok:
        lo = "-inf" if low is None else f"{low}"
        hi = "inf" if high is None else f"{high}"
        _fail(name, value, f"a finite number in {'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}")
    return value


def is_prime(n: int) -> bool:
    """Deterministic primality by trial division (moduli here are small)."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    return all(n % k for k in range(3, math.isqrt(n) + 1, 2))


def check_prime(name: str, value: Any, *, low: int = 3) -> int:
    """``value`` must be a prime integer >= ``low``."""
    value = check_int(name, value, low=low)
    if not is_prime(value):
        _fail(name, value, f"a prime >= {low} (e.g. 31, 53, 97)")
    return value


def check_list(name: str, value: Any, item_check, *, min_len: int = 1) -> list:
    """``value`` must be a list/tuple of at least ``min_len`` items, each passing ``item_check(name[i], item)``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        _fail(name, value, f"a list of at least {min_len} items")
    if len(value) < min_len:
        _fail(name, value, f"a list of at least {min_len} items")
    return [item_check(f"{name}[{i}]", v) for i, v in enumerate(value)]


def set_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads from ``threads`` or ``$TORCH_THREADS`` (unset: leave as is).

    On a 2-core machine anything else running makes 2 torch threads ~16x slower, so tests and
    CI set ``TORCH_THREADS=1``.  Returns the thread count in force.
    """
    import torch

    if threads is None and os.environ.get("TORCH_THREADS"):
        threads = check_int("TORCH_THREADS", int(os.environ["TORCH_THREADS"]), low=1)
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads, low=1))
    return torch.get_num_threads()


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch global RNGs (the library itself uses explicit generators)."""
    import torch

    seed = check_int("SEED", seed, low=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def versions() -> dict[str, str]:
    """Versions of python and the libraries the book depends on (for manifests and cell 2)."""
    from importlib import metadata

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("torch", "numpy", "scipy", "nnsight", "transformers", "seaborn", "matplotlib"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out
