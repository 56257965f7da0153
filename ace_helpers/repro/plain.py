"""Measured values as a person reads them: numbers to 4 significant digits, a list's items joined by " / ", nested
lists by "; ", and no Python list, dict or ``None`` shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def plain_value(value: Any) -> str:
    """``value`` (a number, a list of numbers per seed, nested lists, a mapping or None) as one readable line.

    ``[0.7484, 0.7484, 0.7484]`` reads "0.7484 / 0.7484 / 0.7484"; ``[[0.02, 0.03], None]`` reads "0.02 / 0.03; —";
    ``{"pca": 0.1}`` reads "pca 0.1"; None reads "—".
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {plain_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        nested = any(isinstance(v, (list, tuple, Mapping)) or v is None for v in value)
        return ("; " if nested else " / ").join(plain_value(v) for v in value)
    return str(value)
