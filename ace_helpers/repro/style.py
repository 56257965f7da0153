"""Shared figure style for the book."""

from __future__ import annotations

import matplotlib

PALETTE = {"base": "#4C72B0", "keep": "#55A868", "remove": "#C44E52", "flip": "#8172B2", "chance": "0.5"}


def set_style() -> None:
    """Seaborn 'whitegrid' style, a non-interactive backend safe for headless runs, 110 dpi."""
    import seaborn as sns  # load time: a heavy import, done on first use

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    sns.set_theme(style="whitegrid", context="notebook")
    matplotlib.rcParams["figure.dpi"] = 110
    matplotlib.rcParams["savefig.bbox"] = "tight"


def thousands(value: float, _pos: object = None) -> str:
    """Tick label with thousands as "k": 600 -> "600", 1500 -> "1.5k", 20000 -> "20k"."""
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def step_axis(axis, *, log: bool = False) -> None:
    """Label an axis of optimizer steps with :func:`thousands` (major ticks only on a log axis,
    so minor labels such as 2×10³, 3×10³ cannot overlap)."""
    from matplotlib import ticker  # load time: a heavy import, done on first use

    axis.set_major_formatter(ticker.FuncFormatter(thousands))
    if log:
        axis.set_minor_formatter(ticker.NullFormatter())
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
