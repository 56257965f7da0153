"""How a verdict looks on a page: a coloured badge with an icon (colour is never the only cue), and table cells
written as HTML from the short markdown the claims carry (``code``, **bold**)."""

from __future__ import annotations

import ast
import html
import re
from typing import Any

from ace_helpers.repro.report import format_value

ICONS = {"reproduced": "✓", "partly": "◐", "not reproduced": "✗", "inconclusive": "?", "not tested": "–"}
"""The icon of each verdict (:data:`~ace_helpers.repro.report.VERDICTS`)."""

ORDER = ("not reproduced", "inconclusive", "partly", "not tested", "reproduced")
"""Verdicts in the order a reader should see them: failures and open questions first."""


def badge(verdict: str, *, unexpected: bool = False) -> str:
    """An HTML badge for ``verdict`` (one of :data:`ICONS`): ``<span class="ace-verdict ace-v-…">✓ reproduced</span>``;
    an unexpected failure says so in the badge."""
    if verdict not in ICONS:
        raise ValueError(f"verdict={verdict!r} is not allowed: verdict must be one of {list(ICONS)}")
    slug = verdict.replace(" ", "-")
    label = f"{verdict} (unexpected)" if unexpected else verdict
    return f'<span class="ace-verdict ace-v-{slug}">{ICONS[verdict]} {html.escape(label)}</span>'


def counts_badges(counts: dict[str, int]) -> str:
    """One badge per verdict with its count (verdicts with no claim left out), failures first:
    ``✗ 2 not reproduced · ✓ 9 reproduced``."""
    parts = [badge(v).replace(f"{ICONS[v]} ", f"{ICONS[v]} {counts[v]} ", 1) for v in ORDER if counts.get(v)]
    return " ".join(parts)


def cell(text: Any) -> str:
    """``text`` as the inside of an HTML table cell: escaped, with ``code`` and **bold** kept, and a dict or list
    written as Python prints it shown as ``key: value`` lines instead."""
    text = str(text)
    pretty = _pretty(text)
    if pretty is not None:
        return pretty
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def _pretty(text: str) -> str | None:
    """A printed dict as ``key: value`` lines (values kept as printed), else None."""
    if not text.startswith("{") or not text.endswith("}"):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, dict):
        return None
    return "<br>".join(f"{html.escape(str(k))}: {html.escape(format_value(v))}" for k, v in value.items())


__all__ = ["ICONS", "ORDER", "badge", "cell", "counts_badges"]
