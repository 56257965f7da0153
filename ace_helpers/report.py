"""Claims tables: each chapter states the paper's claims, our numbers, and checks them.

A chapter builds a :class:`Claims`, calls :meth:`Claims.check` once per claim (the threshold
comes from the paper, loosened only as far as the preset forces), shows :meth:`Claims.table`
and ends with :meth:`Claims.assert_all`, so a chapter that no longer reproduces fails its
notebook test instead of quietly printing a worse number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Claim:
    """One checked claim: what the paper says, what we measured, whether it holds."""

    claim: str
    paper: str
    ours: str
    passed: bool


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


@dataclass
class Claims:
    """Collects :class:`Claim` rows; ``assert_all`` raises listing every failed one."""

    rows: list[Claim] = field(default_factory=list)

    def check(self, claim: str, paper: str, ours: Any, passed: bool) -> bool:
        """Record a claim; ``passed`` is the caller's comparison of ``ours`` to the threshold."""
        self.rows.append(Claim(claim, paper, _fmt(ours), bool(passed)))
        return bool(passed)

    def table(self) -> str:
        """Markdown table of all claims (render with ``IPython.display.Markdown``)."""
        lines = ["| claim | paper | ours | holds |", "|---|---|---|---|"]
        for r in self.rows:
            lines.append(f"| {r.claim} | {r.paper} | {r.ours} | {'yes' if r.passed else '**NO**'} |")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: ``"N of M claims hold"`` (stable across presets for nbval)."""
        held = sum(r.passed for r in self.rows)
        return f"{held} of {len(self.rows)} claims hold"

    def assert_all(self) -> None:
        """Raise ``AssertionError`` naming every claim that does not hold."""
        failed = [r for r in self.rows if not r.passed]
        if failed:
            raise AssertionError(
                "claims not reproduced: " + "; ".join(f"{r.claim} (ours {r.ours}, paper {r.paper})" for r in failed)
            )
