"""One comparison of a rule (:class:`Comparison`): a measured quantity, an op and a threshold written once, read over
every seed, one value or an interval, with an optional noise margin; :mod:`ace_helpers.repro.rules` builds rules of
them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ace_helpers.repro.verdicts import OPS, check_op


class Quantities(Protocol):
    """What a comparison reads (:class:`ace_helpers.repro.rules.Measured`): named measured quantities."""

    def quantity(self, name: str) -> Any: ...


#: How a test reads its measured quantity: each per-seed value (k of N), one value, or the interval of an estimate.
EVERY, ONE, INTERVAL = "every", "value", "interval"
OVER = (EVERY, ONE, INTERVAL)
#: Comparisons beyond :data:`~ace_helpers.repro.verdicts.OPS`: equality (ranks, counts) and a closed band.
EQUAL, WITHIN = "==", "in"
TEST_OPS = (*OPS, EQUAL, WITHIN)
HOLD, FAIL, MIXED = "hold", "fail", "mixed"
#: A value closer to its threshold than this many standard errors cannot decide a comparison.
NOISE_Z = 2.0


@dataclass(frozen=True)
class Comparison:
    """One comparison: the measured quantity ``metric`` ``op`` the threshold.

    ``threshold``: a number, or ``(low, high)`` for ``op="in"``.  ``relative_to``: a measured quantity the
    threshold is added to (``value >= bayes + (-0.005)``), for a threshold that depends on the run.  ``over``:
    :data:`EVERY` (each per-seed value must hold; some holding is ``mixed``), :data:`ONE` (one number) or
    :data:`INTERVAL` (the ``[low, high]`` interval of the estimate must hold; straddling is ``mixed``).
    ``noise``: a measured quantity holding one standard error of each value (a number, or one per value); a value
    within :data:`NOISE_Z` standard errors of the threshold decides nothing, so the comparison is ``mixed``.
    """

    metric: str
    op: str
    threshold: float | tuple[float, float]
    relative_to: str | None = None
    over: str = EVERY
    noise: str | None = None
    #: A measured quantity the threshold is multiplied by (``value >= 0.5 × ⌊p/2⌋``), instead of added to.
    times: str | None = None

    def __post_init__(self) -> None:
        if self.relative_to is not None and self.times is not None:
            raise ValueError(f"{self.metric!r}: a threshold is added to relative_to or multiplied by times, not both")
        if self.op not in TEST_OPS:
            raise ValueError(f"op={self.op!r} is not a comparison; allowed: {list(TEST_OPS)}")
        if self.over not in OVER:
            raise ValueError(f"over={self.over!r}; allowed: {list(OVER)}")
        if (self.op == WITHIN) != isinstance(self.threshold, tuple):
            raise ValueError(f"op={self.op!r} with threshold {self.threshold!r}: 'in' takes (low, high), the others a number")

    def bound(self, m: Quantities) -> float | tuple[float, float]:
        """The threshold for this measurement (``relative_to`` added, or multiplied by ``times``)."""
        if self.times is not None:
            ref = float(m.quantity(self.times))
            return tuple(ref * t for t in self.threshold) if isinstance(self.threshold, tuple) else ref * self.threshold
        if self.relative_to is None:
            return self.threshold
        ref = float(m.quantity(self.relative_to))
        return tuple(ref + t for t in self.threshold) if isinstance(self.threshold, tuple) else ref + self.threshold

    def values(self, m: Quantities) -> list[float]:
        """The values this test compares: each per-seed value, the one value, or the interval's ends."""
        v = m.quantity(self.metric)
        vals = [float(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
        if self.over == ONE and len(vals) != 1:
            raise ValueError(f"{self.metric!r} has {len(vals)} values; this test reads one")
        if self.over == INTERVAL and len(vals) != 2:
            raise ValueError(f"{self.metric!r} is {vals}; an interval test reads [low, high]")
        return vals

    def state(self, m: Quantities) -> tuple[str, int, int]:
        """``(HOLD | FAIL | MIXED, k, n)``: how many of the ``n`` values satisfy the comparison."""
        bound, vals = self.bound(m), self.values(m)
        k, n = sum(compare(v, self.op, bound) for v in vals), len(vals)
        if self.noise is not None and self._within_noise(vals, bound, m):
            return MIXED, k, n
        if self.over == INTERVAL and self.op == WITHIN and vals[0] < bound[0] and vals[1] > bound[1]:  # type: ignore[index]
            return MIXED, k, n  # an interval wider than the band on both sides straddles both bounds: it cannot tell
        return (HOLD if k == n else FAIL if k == 0 else MIXED if self.over != ONE else FAIL), k, n

    def _within_noise(self, vals: list[float], bound: Any, m: Quantities) -> bool:
        """Whether some value lies within :data:`NOISE_Z` standard errors (``m``'s ``noise`` quantity) of the bound."""
        se = m.quantity(self.noise)
        ses = [float(x) for x in se] if isinstance(se, (list, tuple)) else [float(se)] * len(vals)
        if len(ses) != len(vals):
            raise ValueError(f"{self.noise!r} has {len(ses)} standard errors for {len(vals)} values of {self.metric!r}")
        return any(
            compare(v - NOISE_Z * e, self.op, bound) != compare(v + NOISE_Z * e, self.op, bound) for v, e in zip(vals, ses)
        )

    def text(self, unit: str) -> str:
        """The comparison in words: ``"every seed: test accuracy ≥ Bayes accuracy − 0.005"``."""
        sym = {">=": "≥", "<=": "≤", ">": ">", "<": "<", EQUAL: "=", WITHIN: "in"}[self.op]
        if isinstance(self.threshold, tuple):
            bound = f"[{', '.join(_num(t, self.relative_to, self.times) for t in self.threshold)}]"
        else:
            bound = _num(self.threshold, self.relative_to, self.times)
        who = {EVERY: f"every {unit}: ", ONE: "", INTERVAL: "interval of "}[self.over]
        noise = f" (beyond {NOISE_Z:g} s.e.)" if self.noise else ""
        return f"{who}{self.metric} {sym} {bound}{noise}"


def _num(t: float, relative_to: str | None, times: str | None = None) -> str:
    if times is not None:
        return f"{t:g} × {times}"
    if relative_to is None:
        return f"{t:g}"
    return relative_to if t == 0 else f"{relative_to} {'+' if t > 0 else '−'} {abs(t):g}"


def compare(value: float, op: str, bound: float | tuple[float, float]) -> bool:
    """Whether ``value op bound`` (``op`` one of :data:`TEST_OPS`)."""
    if op == WITHIN:
        low, high = bound  # type: ignore[misc]
        return low <= value <= high
    if op == EQUAL:
        return value == bound
    return bool(OPS[check_op(op)](value, bound))
