"""Figures of the modular-addition chapters (2 and 3): accuracy and core size, keep / remove, clocks, and their shared helpers.

The clocks also serve chapter 3's Fig. 2C.

Every function takes plain arrays — per-checkpoint values stacked over models, shape
(M, C) for M models and C checkpoints — draws the mean over models with a min–max band,
and returns the matplotlib ``Axes`` (or ``Figure``) it drew.  Titles carry the paper's panel
names; epoch axes get at most six ticks, in thousands ("10k") on long runs; legends sit below
the axes so they never cover a curve.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ace_helpers.repro.style import OKABE, PALETTE, panel_grid

COLORS = {"wd": OKABE["blue"], "nowd": OKABE["orange"], "acc": OKABE["blue"], "core": OKABE["vermillion"], "suff": OKABE["green"]}
CLOCK_COLUMNS = 4
"""Clock panels to a row (more checkpoints wrap onto the next row, so the text stays legible at the column)."""


def band(ax: Axes, x: np.ndarray, y: np.ndarray, color: str, label: str, **kw) -> None:
    """Mean line over models (rows of y (M, C)) with a min–max band."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    ax.plot(x, y.mean(0), color=color, label=label, **kw)
    if y.shape[0] > 1:
        ax.fill_between(x, y.min(0), y.max(0), color=color, alpha=0.2, linewidth=0)


def grok_line(ax: Axes, grok: int | None) -> None:
    """Dotted vertical line at the grok epoch, named in the legend."""
    if grok is not None:
        ax.axvline(grok, color="0.3", linestyle=":", linewidth=1, label=f"grokking (epoch {grok})")


#: Epoch axes reaching this far are labelled in thousands ("10k").
THOUSANDS_FROM = 5000


def epoch_axis(ax: Axes) -> None:
    """At most six integer epoch ticks, labelled in thousands ("2.5k", "10k") when the axis reaches
    :data:`THOUSANDS_FROM` epochs (long runs: no run-together labels like "1000012500")."""

    def label(x: float, _pos: int) -> str:
        if x and max(abs(v) for v in ax.get_xlim()) >= THOUSANDS_FROM:
            return f"{x / 1000:g}k"
        return f"{x:g}"

    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, min_n_ticks=3))
    ax.xaxis.set_major_formatter(FuncFormatter(label))
    ax.set_xlabel("epoch")


def legend_below(ax: Axes, handles: Sequence | None = None, labels: Sequence[str] | None = None, ncol: int = 2) -> None:
    """The legend under the axes (below the x label), so that it covers no curve."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, fontsize=10, frameon=False)


def plot_accuracy_and_core_dim(
    epochs: Sequence[int], test_acc: np.ndarray, core_dim: np.ndarray, grok: int | None = None, ax: Axes | None = None
) -> Axes:
    """Fig. 1A: test accuracy (left axis) and core dimension (right axis) vs epoch."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    x = np.asarray(epochs)
    band(ax, x, test_acc, COLORS["acc"], "test accuracy", marker="o", markersize=3)
    ax.set_ylim(-0.02, 1.05)
    epoch_axis(ax)
    ax.set_ylabel("test accuracy", color=COLORS["acc"])
    twin = ax.twinx()
    band(twin, x, core_dim, COLORS["core"], "core dim", marker="s", markersize=3)
    twin.set_ylabel("core size (dimension)", color=COLORS["core"])
    twin.set_ylim(0, max(float(np.max(core_dim)) * 1.1, 1))
    twin.grid(False)
    grok_line(ax, grok)
    ax.set_title("Fig. 1A: the core forms at grokking")
    lines = ax.get_legend_handles_labels()
    lines2 = twin.get_legend_handles_labels()
    legend_below(ax, lines[0] + lines2[0], lines[1] + lines2[1], ncol=3)
    return ax


def plot_keep_remove(
    epochs: Sequence[int],
    test_acc: np.ndarray,
    keep_acc: np.ndarray,
    remove_acc: np.ndarray,
    p: int,
    grok: int | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Fig. 1B: full-model, core-only and core-removed test accuracy vs epoch, chance line 1/p."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    x = np.asarray(epochs)
    band(ax, x, test_acc, PALETTE["base"], "full model", linestyle="--")
    band(ax, x, keep_acc, PALETTE["keep"], "core only", marker="o", markersize=3)
    band(ax, x, remove_acc, PALETTE["remove"], "core removed", marker="v", markersize=3)
    ax.axhline(1.0 / p, color=PALETTE["chance"], linestyle=":", label=f"chance 1/p = {1 / p:.3f}")
    grok_line(ax, grok)
    ax.set_ylim(-0.02, 1.05)
    epoch_axis(ax)
    ax.set_ylabel("test accuracy")
    ax.set_title("Fig. 1B: the core is necessary and sufficient")
    legend_below(ax, ncol=3)
    return ax


def plot_grokking_overview(
    epochs: Sequence[int],
    test_acc: np.ndarray,
    core_dim: np.ndarray,
    keep_acc: np.ndarray,
    remove_acc: np.ndarray,
    p: int,
    grok: int | None = None,
) -> Figure:
    """Fig. 1A above 1B for one run (arrays (M, C), as the single panels)."""
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 8.4))
    plot_accuracy_and_core_dim(epochs, test_acc, core_dim, grok, ax=axes[0])
    plot_keep_remove(epochs, test_acc, keep_acc, remove_acc, p, grok, ax=axes[1])
    fig.tight_layout()
    return fig


def plot_unit_circle_share(
    epochs: Sequence[int],
    share_ols: np.ndarray,
    share_ridge: np.ndarray,
    r2_holdout: np.ndarray,
    grok: int | None = None,
    threshold: float = 0.8,
    ax: Axes | None = None,
    title: str = "Unit-circle share and R_h² per checkpoint (ours; Fig. 1C in numbers)",
) -> Axes:
    """Share of the shift operator's eigenvalues within sin(π/p) of the unit circle per checkpoint,
    from the OLS fit on all class means (solid) and the ridge + holdout fit (dashed), with R_h²
    (dotted) and the acceptance line ``threshold``; arrays (M, C), mean over models with a min–max band."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    x = np.asarray(epochs)
    band(ax, x, share_ols, COLORS["core"], "share on the circle, OLS (code release)", marker="o", markersize=3)
    band(ax, x, share_ridge, COLORS["wd"], "share on the circle, ridge + holdout (ours)", linestyle="--")
    band(ax, x, np.clip(np.asarray(r2_holdout, dtype=float), -0.2, None), COLORS["suff"], "R_h² (clipped at −0.2)", linestyle=":")
    ax.axhline(threshold, color="0.4", linestyle="-.", linewidth=1, label=f"our threshold {threshold:g}")
    grok_line(ax, grok)
    ax.set_ylim(-0.22, 1.05)
    epoch_axis(ax)
    ax.set_ylabel("share / R_h²")
    ax.set_title(title)
    legend_below(ax, ncol=2)
    return ax


#: Title of the clock figure (chapter 2's Fig. 1C; chapter 3 passes its own, Fig. 2C).
CLOCKS_TITLE = "Fig. 1C: shift-operator eigenvalues on the core (on the unit circle = cyclic)"


def plot_clocks(
    eigenvalues: Sequence[np.ndarray],
    titles: Sequence[str],
    p: int,
    notes: Sequence[str] | None = None,
    title: str = CLOCKS_TITLE,
) -> Figure:
    """Fig. 1C / 2C: shift-operator eigenvalues in the complex plane, one panel per checkpoint.

    Args:
        eigenvalues: one (k,) complex array per panel.  titles: panel titles.  p: modulus
            (the p-th roots of unity are drawn faintly, the band ||λ| − 1| ≤ sin(π/p) shaded).
        notes: optional text per panel (e.g. accuracy, R_h², core dim).  title: the figure's title.
    """
    n = len(eigenvalues)
    fig, axes = panel_grid(n, width=2.6, height=3.0, max_cols=CLOCK_COLUMNS)
    t = np.linspace(0, 2 * np.pi, 400)
    eps = np.sin(np.pi / p)
    roots = np.exp(2j * np.pi * np.arange(p) / p)
    for i, (ax, lam) in enumerate(zip(axes, eigenvalues)):
        ax.fill(
            np.r_[(1 + eps) * np.cos(t), (1 - eps) * np.cos(t[::-1])],
            np.r_[(1 + eps) * np.sin(t), (1 - eps) * np.sin(t[::-1])],
            color="0.9",
            linewidth=0,
        )
        ax.plot(np.cos(t), np.sin(t), color="0.5", linewidth=0.8)
        ax.scatter(roots.real, roots.imag, s=4, color="0.75", zorder=1)
        lam = np.asarray(lam)
        ax.scatter(lam.real, lam.imag, s=14, color=COLORS["core"], zorder=2)
        ax.set_aspect("equal")
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_xticks([-1, 0, 1])
        ax.set_yticks([-1, 0, 1])
        ax.set_title(titles[i], fontsize=10)
        ax.set_xlabel("Re λ", fontsize=10)
        if i % CLOCK_COLUMNS == 0:
            ax.set_ylabel("Im λ", fontsize=10)
        if notes is not None:
            ax.text(0.02, 0.02, notes[i], transform=ax.transAxes, fontsize=10, va="bottom")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
