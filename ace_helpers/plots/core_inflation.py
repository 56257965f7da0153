"""Panels of chapter 3, core inflation under weight decay (paper Fig. 2A-D; 2C reuses chapter 2's clock panels).

Every function takes plain arrays — per-checkpoint values stacked over models, shape
(M, C) for M models and C checkpoints — draws the mean over models with a min–max band,
and returns the matplotlib ``Axes`` (or ``Figure``) it drew.  Titles carry the paper's panel
names; epoch axes and legends as in :mod:`ace_helpers.plots.modadd_grokking`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ace_helpers.plots.modadd_grokking import COLORS, _band, _grok_line, epoch_axis, legend_below
from ace_helpers.plots.modadd_grokking import plot_clocks as _plot_clocks

#: Title of chapter 3's clock figure.
CLOCKS_TITLE = "Fig. 2C: shift-operator eigenvalues on the core, with and without weight decay"


def plot_clocks(eigenvalues: Sequence[np.ndarray], titles: Sequence[str], p: int, notes: Sequence[str] | None = None) -> Figure:
    """Fig. 2C: chapter 2's clock panels (:func:`ace_helpers.plots.modadd_grokking.plot_clocks`) under this figure's title."""
    return _plot_clocks(eigenvalues, titles, p, notes, title=CLOCKS_TITLE)


def plot_core_inflation(
    epochs_wd: Sequence[int],
    core_wd: np.ndarray,
    epochs_nowd: Sequence[int],
    core_nowd: np.ndarray,
    fork_epoch: int,
    grok: int | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Fig. 2A: core dimension vs epoch for weight decay on vs the arm forked without it."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    _band(ax, np.asarray(epochs_wd), core_wd, COLORS["wd"], "WD = 1", marker="o", markersize=3)
    _band(ax, np.asarray(epochs_nowd), core_nowd, COLORS["nowd"], "WD 1 → 0", marker="s", markersize=3)
    ax.axvline(fork_epoch, color=COLORS["nowd"], linestyle="--", linewidth=1, label=f"fork (epoch {fork_epoch})")
    _grok_line(ax, grok)
    epoch_axis(ax)
    ax.set_ylabel("core size (dimension)")
    ax.set_title("Fig. 2A: the core inflates under weight decay")
    legend_below(ax)
    return ax


def plot_redundancy(
    epochs: Sequence[int], suff_dim: np.ndarray, core_dim: np.ndarray, grok: int | None = None, ax: Axes | None = None
) -> Axes:
    """Fig. 2B: sufficient vs necessary dimension, the gap shaded as redundancy (model means)."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    x = np.asarray(epochs)
    s = np.atleast_2d(suff_dim).mean(0)
    c = np.atleast_2d(core_dim).mean(0)
    ax.plot(x, c, color=COLORS["core"], marker="o", markersize=3, label="necessary (remove → ≤ 2/p)")
    ax.plot(x, s, color=COLORS["suff"], marker="s", markersize=3, label="sufficient (keep → base)")
    ax.fill_between(x, s, c, where=c >= s, interpolate=True, color="0.6", alpha=0.3, label="redundancy")
    _grok_line(ax, grok)
    epoch_axis(ax)
    ax.set_ylabel("dimension")
    ax.set_title("Fig. 2B: inflation is redundancy")
    legend_below(ax)
    return ax


def plot_rotational_modes(
    epochs_wd: Sequence[int],
    modes_wd: np.ndarray,
    epochs_nowd: Sequence[int],
    modes_nowd: np.ndarray,
    p: int,
    ax: Axes | None = None,
) -> Axes:
    """Fig. 2D: rotational modes (folded frequency bins with a near-unit eigenvalue) vs epoch."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    _band(ax, np.asarray(epochs_wd), modes_wd, COLORS["wd"], "WD = 1", marker="o", markersize=3)
    _band(ax, np.asarray(epochs_nowd), modes_nowd, COLORS["nowd"], "WD 1 → 0", marker="s", markersize=3)
    top = p // 2 + 1
    ax.axhline(top, color="0.5", linestyle=":", label=f"⌊p/2⌋ + 1 = {top}")
    ax.set_ylim(0, top + 1)
    epoch_axis(ax)
    ax.set_ylabel("rotational modes (frequency bins)")
    ax.set_title("Fig. 2D: the cyclic operator saturates")
    legend_below(ax)
    return ax


def plot_inflation_overview(
    epochs_wd: Sequence[int],
    core_wd: np.ndarray,
    suff_wd: np.ndarray,
    modes_wd: np.ndarray,
    epochs_nowd: Sequence[int],
    core_nowd: np.ndarray,
    modes_nowd: np.ndarray,
    fork_epoch: int,
    p: int,
    grok: int | None = None,
) -> Figure:
    """Fig. 2A, 2B and 2D side by side for one run (arrays (M, C) per arm, as the single panels)."""
    fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
    plot_core_inflation(epochs_wd, core_wd, epochs_nowd, core_nowd, fork_epoch, grok, ax=axes[0])
    plot_redundancy(epochs_wd, suff_wd, core_wd, grok, ax=axes[1])
    plot_rotational_modes(epochs_wd, modes_wd, epochs_nowd, modes_nowd, p, ax=axes[2])
    fig.tight_layout()
    return fig
