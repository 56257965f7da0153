"""Shared figure style for the book."""

from __future__ import annotations

import matplotlib

PALETTE = {"base": "#4C72B0", "keep": "#55A868", "remove": "#C44E52", "flip": "#8172B2", "chance": "0.5"}


def set_style() -> None:
    """Seaborn 'whitegrid' style, a non-interactive backend safe for headless runs, 110 dpi."""
    import seaborn as sns

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    sns.set_theme(style="whitegrid", context="notebook")
    matplotlib.rcParams["figure.dpi"] = 110
    matplotlib.rcParams["savefig.bbox"] = "tight"
