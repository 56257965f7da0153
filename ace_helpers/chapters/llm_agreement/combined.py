"""Chapter 5's per-model helpers: :class:`ModelRun`, what the chapter's rules read (the flat results and the models);
:func:`wilson_interval`, the Wilson score interval of a share of ``n`` binary outcomes (the generation rate: the share
of scored generations whose verb number changes); and :func:`combined_cause`, the measured cause of a row combined
over the models."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats

from ace_helpers.repro.combined import numbers_only


#: The level of :func:`wilson_interval`, and how it is recorded beside the interval.
WILSON_LEVEL = 0.95
WILSON_METHOD = f"Wilson score interval ({WILSON_LEVEL:.0%}) of the share over the scored generations"


def wilson_interval(rate: float, n: int, level: float = WILSON_LEVEL) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of a binomial share ``rate`` measured on ``n`` ≥ 1 outcomes."""
    if n < 1 or not 0.0 <= rate <= 1.0:
        raise ValueError(f"need n >= 1 and 0 <= rate <= 1, got n={n}, rate={rate}")
    z = float(stats.norm.ppf(0.5 + level / 2))
    denom = 1 + z**2 / n
    centre = (rate + z**2 / (2 * n)) / denom
    half = z / denom * math.sqrt(rate * (1 - rate) / n + z**2 / (4 * n**2))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class ModelRun:
    """What the rules read: the flat ``results`` and the ``models`` (labels) they are judged on, in order."""

    results: Mapping[str, Any]
    models: tuple[str, ...]

    def getter(self, name: str) -> Callable[[str], Any]:
        """``get(field)``: model ``name``'s ``<name>.<field>`` entry (None where absent)."""
        return lambda field: self.results.get(f"{name}.{field}")


#: The prefix of the chapter's own claim ids.
OURS_PREFIX = "ours.llm_agreement."


def combined_cause(row: Any, parts: Sequence[Any], unit: str, words: int = 20) -> None:
    """The measured cause of a combined row that does not hold: how many parts hold, and the first that does not, with
    its numbers (its parenthesised asides left out).  Its class: ``samples`` where the row is inconclusive (a part
    within its own noise of the threshold), else ``ours`` (the bundled models are not the paper's)."""
    if row.passed:
        return
    first = next(p for p in parts if not p.passed)
    name = first.claim.split(":", 1)[0].strip()
    text = f"{sum(p.passed for p in parts)} of {len(parts)} {unit} hold; {name}: {numbers_only(first.ours)} ({first.verdict})"
    cut = text.split()
    row.cause = " ".join(cut[:words]) + (" …" if len(cut) > words else "")
    row.cause_class = "samples" if row.inconclusive else "ours"
