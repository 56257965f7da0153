"""Judging a claim on all its seeds: "k of N" for per-model rules, an interval for pooled statistics.

A rule compares a measured value with a threshold by one of :data:`OPS`.  Where the paper's
protocol trains several models, a per-model rule is judged on each (:func:`k_of_n`) and a pooled
statistic gets a seeded percentile-bootstrap interval over its samples (:func:`bootstrap_interval`:
seeds, prompts or checkpoints).  A verdict is ``inconclusive`` when the seeds disagree or the
interval straddles the threshold (:func:`interval_side`): no verdict rests on one number within
the measurement's own noise of its threshold.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: Comparison of a value with a threshold: the rule holds when ``OPS[op](value, threshold)``.
OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}

#: How :func:`bootstrap_interval` computes its interval (recorded beside it).
BOOTSTRAP_METHOD = "percentile bootstrap"


def check_op(op: str) -> str:
    """``op`` if it is one of :data:`OPS`, else ``ValueError`` naming the allowed ones."""
    if op not in OPS:
        raise ValueError(f"op={op!r} is not a comparison; allowed: {list(OPS)}")
    return op


def holds(value: float, op: str, threshold: float) -> bool:
    """Whether ``value op threshold`` (``op`` one of :data:`OPS`)."""
    return bool(OPS[check_op(op)](float(value), float(threshold)))


def k_of_n(values: Sequence[float], op: str, threshold: float) -> tuple[int, int]:
    """``(k, n)``: how many of the ``n`` per-seed (or per-model) ``values`` satisfy ``value op threshold``."""
    vals = _finite(values, "values")
    return sum(holds(v, op, threshold) for v in vals), len(vals)


def bootstrap_interval(
    samples: Sequence[float],
    stat: Callable[[np.ndarray], float] = np.mean,
    *,
    level: float = 0.9,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Seeded percentile-bootstrap interval ``(low, high)`` of ``stat`` over ``samples`` (shape ``(n,)``):
    resample the ``n`` samples with replacement ``n_boot`` times, take ``stat`` of each and the
    ``(1 − level)/2`` and ``(1 + level)/2`` quantiles.  One sample gives ``(x, x)``."""
    vals = np.asarray(_finite(samples, "samples"), dtype=float)
    if not 0 < level < 1:
        raise ValueError(f"level={level!r} must lie in (0, 1)")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(vals), size=(n_boot, len(vals)))
    stats = np.array([stat(vals[i]) for i in idx], dtype=float)
    low, high = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def interval_side(interval: Sequence[float], op: str, threshold: float) -> bool | None:
    """``True`` when the whole ``interval`` satisfies ``op threshold``, ``False`` when none of it does,
    ``None`` when it straddles the threshold (an inconclusive verdict)."""
    low, high = (float(v) for v in interval)
    if low > high:
        raise ValueError(f"interval {list(interval)} has low > high")
    ends = holds(low, op, threshold), holds(high, op, threshold)
    return ends[0] if ends[0] == ends[1] else None


def _finite(values: Sequence[float], name: str) -> list[float]:
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError(f"{name} is empty: a verdict needs at least one measurement")
    if not all(np.isfinite(vals)):
        raise ValueError(f"{name} holds a NaN or infinity: {vals}")
    return vals


def as_numbers(value: Any) -> Any:
    """``value`` as JSON numbers: a number, a (nested) list of numbers, or ``None`` when it is not numeric
    (a non-finite number becomes ``None``)."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and value:
        out = [as_numbers(v) for v in value]
        return out if all(v is not None or isinstance(x, float) for v, x in zip(out, value)) else None
    return None


def is_flat_numbers(values: Any) -> bool:
    """Whether ``values`` is a flat sequence of (non-boolean) numbers."""
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)
