"""Shared figure style for the book."""

from __future__ import annotations

import matplotlib

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
"""The Okabe–Ito colours, told apart also by readers with the common colour-vision deficiencies: the book's
colour cycle."""

OKABE = dict(zip(("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black"), OKABE_ITO))
"""The :data:`OKABE_ITO` colours by name."""

PALETTE = {"base": "#0072B2", "keep": "#009E73", "remove": "#D55E00", "flip": "#CC79A7", "chance": "0.5"}
"""Colours of the ablations (Okabe–Ito)."""


INLINE = "module://matplotlib_inline.backend_inline"
"""The backend of a Jupyter kernel (figures shown as cell outputs)."""


def set_style() -> None:
    """Seaborn 'whitegrid' style with the :data:`OKABE_ITO` colour cycle and text 10 % larger than seaborn's
    notebook context (legends and ticks stay legible where a wide figure is scaled to the page's column), a
    non-interactive backend safe for headless runs, 110 dpi.

    In a notebook, figures are shown as SVG with their text kept as text (sharp at any zoom; the book's browser
    tests read each text's size from it), without a date and with fixed element ids, so that the same figure gives
    the same output on every run."""
    import seaborn as sns  # load time: a heavy import, done on first use

    backend = matplotlib.get_backend()
    if backend.lower() not in ("agg", INLINE):
        matplotlib.use("Agg")
    sns.set_theme(style="whitegrid", context="notebook", font_scale=1.1, palette=list(OKABE_ITO))
    matplotlib.rcParams["figure.dpi"] = 110
    matplotlib.rcParams["savefig.bbox"] = "tight"
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "ace-book"
    if backend == INLINE:
        from matplotlib_inline.backend_inline import set_matplotlib_formats  # load time: notebook-only

        set_matplotlib_formats("svg", metadata={"Date": None})


COLUMN_INCHES = 10.5
"""The widest a figure is drawn: the page column is about 780 px, so text of 10 pt stays ≥ 10 px on screen."""


def panel_grid(n: int, *, width: float = 4.6, height: float = 3.6, max_cols: int = 2, **subplots: object):
    """A figure of ``n`` panels of about ``width`` × ``height`` inches, ``max_cols`` to a row and never wider than
    :data:`COLUMN_INCHES` (panels shrink to fit); returns ``(fig, axes)`` with the ``n`` axes in a flat list (the
    grid's unused cells removed).  ``subplots``: passed to ``plt.subplots`` (e.g. ``sharey=True``)."""
    import matplotlib.pyplot as plt  # load time: a heavy import, done on first use

    cols = max(1, min(max_cols, n))
    rows = -(-max(1, n) // cols)
    scale = min(1.0, COLUMN_INCHES / (width * cols))
    fig, grid = plt.subplots(rows, cols, figsize=(width * cols * scale, height * rows * scale), squeeze=False, **subplots)
    axes = list(grid.flat)
    for ax in axes[n:]:
        ax.remove()
    return fig, axes[:n]


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
