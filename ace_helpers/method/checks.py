"""Checks on user input, shared by every wing: each raises ``ValueError`` naming the input, the bad value
and what is allowed, so that a bad value stops a run before any compute."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import sympy


def fail(name: str, value: Any, allowed: str) -> None:
    """Raise the ``ValueError`` every check raises: ``name=value is not allowed: name must be allowed``."""
    raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        fail(name, value, f"one of {list(choices)}")
    return value


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` must be an int (not bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        fail(name, value, "an integer")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        fail(name, value, f"an integer in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]")
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
        fail(name, value, "a real number")
    value = float(value)
    ok = math.isfinite(value)
    if low is not None:
        ok = ok and (value > low if low_open else value >= low)
    if high is not None:
        ok = ok and (value < high if high_open else value <= high)
    if not ok:
        lo = "-inf" if low is None else f"{low}"
        hi = "inf" if high is None else f"{high}"
        fail(name, value, f"a finite number in {'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}")
    return value


def check_prime(name: str, value: Any, *, low: int = 3) -> int:
    """``value`` must be a prime integer >= ``low``."""
    value = check_int(name, value, low=low)
    if not sympy.isprime(value):
        fail(name, value, f"a prime >= {low} (e.g. 31, 53, 97)")
    return value


def check_list(name: str, value: Any, item_check, *, min_len: int = 1) -> list:
    """``value`` must be a list/tuple of at least ``min_len`` items, each passing ``item_check(name[i], item)``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        fail(name, value, f"a list of at least {min_len} items")
    if len(value) < min_len:
        fail(name, value, f"a list of at least {min_len} items")
    return [item_check(f"{name}[{i}]", v) for i, v in enumerate(value)]
