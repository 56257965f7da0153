"""Known gaps: the claims measured not to reproduce at a preset's own run, with the measured cause, stated per
chapter in one :class:`KnownGaps` table next to the evidence and applied only to that run's exact knobs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ace_helpers.repro.params import DEVICE_KNOB


@dataclass(frozen=True)
class KnownGaps:
    """Claims measured not to reproduce at a preset's own run, and why: ``{run: {claim key: why}}``.

    A run is a preset name, or a name in ``runs``: a preset run with some knobs changed
    (``{"paper, ensemble bf16": {"PRESET": "paper", "TRAINER": "ensemble", "PRECISION": "bf16"}}``),
    for a run of the same preset trained another way whose failures were measured on their own.
    A claim key names one claim of the chapter (``"post_grok_unit_circle"``), or one claim of one
    model (``"gemma3-270m:knob_r2"``).  ``run_knobs`` are the knobs that must equal the preset's for
    a gap to apply (``None``: every knob of the chapter; a named run's changed knobs excepted); any
    other run is a new measurement, for which no gap is known.
    """

    gaps: Mapping[str, Mapping[str, str]]
    run_knobs: tuple[str, ...] | None = None
    runs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def run_name(self, cfg: Any) -> str | None:
        """The run of ``gaps`` that ``cfg`` is (a name in ``runs``, else its preset), or None when it is
        neither (some knob in ``run_knobs`` differs from the preset's).  ``DEVICE`` is not compared: a run's
        known gaps are the protocol's, wherever it computed."""
        knobs = self.run_knobs if self.run_knobs is not None else tuple(cfg.knob_values())
        for name, changes in self.runs.items():
            if cfg["PRESET"] == changes["PRESET"] and all(
                cfg[k] == v for k, v in changes.items() if k not in ("PRESET", DEVICE_KNOB)
            ):
                return name if cfg.is_preset_run(tuple(k for k in knobs if k not in changes)) else None
        return cfg["PRESET"] if cfg.is_preset_run(self.run_knobs) else None

    def reason(self, cfg: Any, key: str) -> str | None:
        """Why ``key`` does not reproduce under ``cfg`` (a :class:`ace_helpers.repro.params.Params`), or None."""
        name = self.run_name(cfg)
        return None if name is None else self.gaps.get(name, {}).get(key)


def seed_sensitive(held: int, runs: int, values: str) -> str:
    """The known gap of a claim that holds at some seeds of a preset (:mod:`ace_helpers.repro.seed_check`) and fails
    at others: shown with its verdict, not asserted by the test line.  ``values``: what the check measured, per seed."""
    return (
        f"seed-sensitive at this preset, so its test line does not assert it: it held at {held} of {runs} "
        f"seeds of the seed check ({values})"
    )
