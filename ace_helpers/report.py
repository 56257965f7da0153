"""Claims tables: each chapter states the paper's claims, our numbers, and checks them.

A chapter builds a :class:`Claims`, calls :meth:`Claims.check` once per claim (the threshold
comes from the paper, loosened only as far as the preset forces), shows :meth:`Claims.table`
and ends with :meth:`Claims.assert_all`, so a chapter that no longer reproduces fails its
notebook test instead of quietly printing a worse number.

A claim we have measured *not* to reproduce at a given preset is recorded with
``known_gap="why"``: it still shows as not holding (with the reason) in the table, but does not
fail the notebook.  Every other failure does.  Known gaps are stated per preset by the chapter
module in one :class:`KnownGaps` table, next to the evidence, never added to make a run pass;
a gap applies only to that preset's exact run (:meth:`KnownGaps.reason`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Claim:
    """One checked claim: what the paper says, what we measured, whether it holds."""

    claim: str
    paper: str
    ours: str
    passed: bool
    known_gap: str | None = None

    @property
    def unexpected(self) -> bool:
        """A failure that is not a documented known gap."""
        return not self.passed and self.known_gap is None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class KnownGaps:
    """Claims measured not to reproduce at a preset's own run, and why: ``{preset: {claim key: why}}``.

    A claim key names one claim of the chapter (``"post_grok_unit_circle"``), or one claim of one
    model (``"gemma3-270m:knob_r2"``).  ``run_knobs`` are the knobs that must equal the preset's for
    a gap to apply (``None``: every knob of the chapter); any other run is a new measurement, for
    which no gap is known.
    """

    gaps: Mapping[str, Mapping[str, str]]
    run_knobs: tuple[str, ...] | None = None

    def reason(self, cfg: Any, key: str) -> str | None:
        """Why ``key`` does not reproduce under ``cfg`` (a :class:`ace_helpers.params.Params`), or None."""
        why = self.gaps.get(cfg["PRESET"], {}).get(key)
        if why is None or not cfg.is_preset_run(self.run_knobs):
            return None
        return why


@dataclass
class Claims:
    """Collects :class:`Claim` rows; ``assert_all`` raises listing every failed one."""

    rows: list[Claim] = field(default_factory=list)

    def check(self, claim: str, paper: str, ours: Any, passed: bool, known_gap: str | None = None) -> bool:
        """Record a claim; ``passed`` is the caller's comparison of ``ours`` to the threshold.

        ``known_gap``: why this claim is known not to reproduce here (only used if it fails).
        """
        self.rows.append(Claim(claim, paper, _fmt(ours), bool(passed), known_gap))
        return bool(passed)

    def table(self) -> str:
        """Markdown table of all claims (render with ``IPython.display.Markdown``)."""
        lines = ["| claim | paper | ours | holds |", "|---|---|---|---|"]
        cell = lambda text: str(text).replace("|", "\\|")  # noqa: E731 - keep pipes inside their cell
        for r in self.rows:
            verdict = "yes" if r.passed else ("**NO**" if r.unexpected else f"no — known gap: {r.known_gap}")
            lines.append(f"| {cell(r.claim)} | {cell(r.paper)} | {cell(r.ours)} | {cell(verdict)} |")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: ``"N of M claims hold"`` (stable across presets for nbval)."""
        held = sum(r.passed for r in self.rows)
        return f"{held} of {len(self.rows)} claims hold"

    def verdict(self) -> str:
        """Preset-independent line for nbval: ``"no unexpected claim failures"`` or what failed."""
        bad = [r.claim for r in self.rows if r.unexpected]
        return "no unexpected claim failures" if not bad else f"unexpected claim failures: {bad}"

    def assert_all(self) -> None:
        """Raise ``AssertionError`` naming every failed claim that is not a documented known gap."""
        failed = [r for r in self.rows if r.unexpected]
        if failed:
            raise AssertionError(
                "claims not reproduced: " + "; ".join(f"{r.claim} (ours {r.ours}, paper {r.paper})" for r in failed)
            )
