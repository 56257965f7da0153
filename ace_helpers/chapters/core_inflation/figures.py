"""Panels of chapter 3, core inflation under weight decay (paper Fig. 2A-D; 2C reuses chapter 2's clock panels).

Every epoch panel takes plain arrays — per-checkpoint values stacked over models, shape
(M, C) for M models and C checkpoints — draws the mean over models with a min–max band,
and returns the matplotlib ``Axes`` (or ``Figure``) it drew.  Titles carry the paper's panel
names; epoch axes and legends as in :mod:`ace_helpers.chapters.modadd.figures`.  Fig. 2D comes
as the code release fits it (OLS on all class means) beside our ridge variant, each with the
cap ⌊d/2⌋ + 1 of the core's dimension (:func:`plot_modes_fits`), and with the
dimension-matched reference (:func:`plot_mode_reference`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ace_helpers.chapters.core_inflation import mode_cap
from ace_helpers.chapters.core_inflation.fork import effective_harmonics
from ace_helpers.chapters.modadd.figures import COLORS, band, epoch_axis, grok_line, legend_below
from ace_helpers.chapters.modadd.figures import plot_clocks as _plot_clocks
from ace_helpers.repro.style import COLUMN_INCHES, panel_grid, thousands

#: Title of chapter 3's clock figure.
CLOCKS_TITLE = "Fig. 2C: shift-operator eigenvalues on the core, with and without weight decay"


def plot_clocks(eigenvalues: Sequence[np.ndarray], titles: Sequence[str], p: int, notes: Sequence[str] | None = None) -> Figure:
    """Fig. 2C: chapter 2's clock panels (:func:`ace_helpers.chapters.modadd.figures.plot_clocks`) under this figure's title."""
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
    band(ax, np.asarray(epochs_wd), core_wd, COLORS["wd"], "WD = 1", marker="o", markersize=3)
    band(ax, np.asarray(epochs_nowd), core_nowd, COLORS["nowd"], "WD 1 → 0", marker="s", markersize=3)
    ax.axvline(fork_epoch, color=COLORS["nowd"], linestyle="--", linewidth=1, label=f"fork (epoch {fork_epoch})")
    grok_line(ax, grok)
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
    grok_line(ax, grok)
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
    caps: tuple[np.ndarray, np.ndarray] | None = None,
    title: str = "Fig. 2D: the cyclic operator saturates (OLS fit)",
    legend: bool = True,
) -> Axes:
    """Fig. 2D: rotational modes (folded frequency bins with a near-unit eigenvalue) vs epoch.

    ``caps``: the (M, C) cap ⌊d/2⌋ + 1 of each checkpoint's core dim d per arm (WD, WD-off),
    drawn as thin dashed lines (model means): the most bins a core of that size can hold.
    """
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    band(ax, np.asarray(epochs_wd), modes_wd, COLORS["wd"], "WD = 1", marker="o", markersize=3)
    band(ax, np.asarray(epochs_nowd), modes_nowd, COLORS["nowd"], "WD 1 → 0", marker="s", markersize=3)
    if caps is not None:
        for x, cap, arm in ((epochs_wd, caps[0], "WD = 1"), (epochs_nowd, caps[1], "WD 1 → 0")):
            color = COLORS["wd" if arm == "WD = 1" else "nowd"]
            ax.plot(
                np.asarray(x),
                np.atleast_2d(cap).mean(0),
                color=color,
                linestyle="--",
                linewidth=1,
                label=f"cap ⌊d/2⌋ + 1 (d: core dim), {arm}",
            )
    top = p // 2 + 1
    ax.axhline(top, color="0.5", linestyle=":", label=f"⌊p/2⌋ + 1 = {top}")
    ax.set_ylim(0, top + 1)
    epoch_axis(ax)
    ax.set_ylabel("rotational modes (frequency bins)")
    ax.set_title(title)
    if legend:  # else the caller draws one legend for several panels
        legend_below(ax)
    return ax


def plot_modes_fits(
    epochs_wd: Sequence[int],
    modes_ols_wd: np.ndarray,
    modes_ridge_wd: np.ndarray,
    caps_wd: np.ndarray,
    epochs_nowd: Sequence[int],
    modes_ols_nowd: np.ndarray,
    modes_ridge_nowd: np.ndarray,
    caps_nowd: np.ndarray,
    p: int,
) -> Figure:
    """Fig. 2D twice: the code release's OLS fit on all class means (left, the paper's panel) and our
    ridge variant with a held-out block (right); both with the caps ⌊d/2⌋ + 1 (arrays (M, C) per arm)."""
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_INCHES, 4.6), sharey=True)
    caps = (caps_wd, caps_nowd)
    plot_rotational_modes(
        epochs_wd,
        modes_ols_wd,
        epochs_nowd,
        modes_ols_nowd,
        p,
        ax=axes[0],
        caps=caps,
        title="2D: OLS on all class means",
        legend=False,
    )
    plot_rotational_modes(
        epochs_wd,
        modes_ridge_wd,
        epochs_nowd,
        modes_ridge_nowd,
        p,
        ax=axes[1],
        caps=caps,
        title="2D, our variant: ridge, held-out block",
        legend=False,
    )
    axes[1].set_ylabel("")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.2, 1, 1))  # room for the legend below both panels
    return fig


def plot_mode_reference(
    rows: Sequence[Mapping[str, Any]],
    p: int,
    core_dims: Mapping[int, int],
    points: Sequence[tuple[str, np.ndarray, np.ndarray]] = (),
) -> Figure:
    """Modes vs subspace dimension d: one panel per reference epoch, plus one of the run's checkpoints.

    ``rows``: :func:`ace_helpers.chapters.core_inflation.reference_rows` over a range of d
    (keys ``epoch``, ``dim``, ``cap``, ``ace``, ``random`` (draws,), ``gaussian`` (draws,));
    ``core_dims``: each epoch's core dim (a vertical line); ``points``: ``(label, core dims,
    modes)`` per arm of a run (any shape, flattened; coloured WD, WD-off in that order), drawn
    against the same cap in a last panel.
    """
    epochs = sorted({int(r["epoch"]) for r in rows})
    n = len(epochs) + bool(points)
    fig, axes = panel_grid(n, width=5.2, height=4.4, max_cols=2, sharey=True)
    top = p // 2 + 1
    for ax, e in zip(axes, epochs):
        rs = sorted((r for r in rows if int(r["epoch"]) == e), key=lambda r: r["dim"])
        d = np.asarray([r["dim"] for r in rs])
        rnd = np.stack([np.asarray(r["random"]) for r in rs])
        ax.plot(d, [r["cap"] for r in rs], color="0.2", linestyle="--", linewidth=1, label="cap ⌊d/2⌋ + 1")
        ax.plot(
            d, np.median(rnd, axis=1), color=COLORS["nowd"], marker="s", markersize=3, label="random subspaces of dim d (median)"
        )
        ax.fill_between(d, rnd.min(axis=1), rnd.max(axis=1), color=COLORS["nowd"], alpha=0.2, linewidth=0)
        ax.plot(d, [np.median(r["gaussian"]) for r in rs], color="0.5", linestyle=":", label="random class means (median)")
        ax.plot(d, [r["ace"] for r in rs], color=COLORS["wd"], marker="o", markersize=3, label="first d ACE directions")
        ax.axvline(core_dims[e], color=COLORS["core"], linestyle="-.", linewidth=1, label=f"core dim ({core_dims[e]})")
        ax.set_title(f"epoch {e}: modes of a d-dimensional subspace")
        ax.set_xlabel("subspace dimension d")
        legend_below(ax)
    if points:
        ax = axes[-1]
        for (label, dims, modes), color in zip(points, (COLORS["wd"], COLORS["nowd"], COLORS["core"], COLORS["suff"])):
            ax.scatter(np.ravel(dims), np.ravel(modes), s=10, alpha=0.6, color=color, label=label)
        dd = np.arange(1, max(int(np.max(np.ravel(pt[1]))) for pt in points) + 1)
        ax.plot(dd, [mode_cap(int(x), p) for x in dd], color="0.2", linestyle="--", linewidth=1, label="cap ⌊d/2⌋ + 1")
        ax.set_title("the run's checkpoints: modes (OLS) vs core dim")
        ax.set_xlabel("core dim d")
        legend_below(ax)
    for ax in axes[::2]:  # the first panel of each row
        ax.set_ylabel("rotational modes (OLS)")
    axes[0].set_ylim(0, top + 1)
    fig.tight_layout()
    return fig


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
    """Fig. 2A, 2B and 2D for one run, two to a row (arrays (M, C) per arm, as the single panels;
    pass the OLS modes for the paper's Fig. 2D)."""
    fig, axes = panel_grid(3, width=5.2, height=4.6, max_cols=2)
    plot_core_inflation(epochs_wd, core_wd, epochs_nowd, core_nowd, fork_epoch, grok, ax=axes[0])
    plot_redundancy(epochs_wd, suff_wd, core_wd, grok, ax=axes[1])
    plot_rotational_modes(epochs_wd, modes_wd, epochs_nowd, modes_nowd, p, ax=axes[2])
    fig.tight_layout()
    return fig


def plot_fork_comparison(runs: Sequence[tuple[str, Any, Any, int]], ax: Sequence[Axes] | None = None) -> Figure:
    """The WD-off transient in two runs: core dim (left) and OLS modes (right) of the WD-off arm
    against epochs after the fork, one band (mean over models, min–max) per run.

    ``runs``: ``(label, wd ArmResult, nowd ArmResult, fork epoch)`` per run; the weight-decay arm
    of the first run is drawn in grey over the same epochs for reference.
    """
    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(COLUMN_INCHES, 4.2))
    else:
        fig = ax[0].figure
    styles = ("-", "--", ":")
    for (label, wd, nowd, fork), style in zip(runs, styles):
        for a, field in zip(ax, ("core_dim", "rotational_modes_ols")):
            after = np.asarray(nowd.epochs) - fork
            band(
                a,
                after,
                nowd[field],
                COLORS["nowd"],
                f"WD 1 → 0, {label}",
                linestyle=style,
                marker="s" if style == "-" else None,
                markersize=2,
            )
    label, wd, _, fork = runs[0]
    keep = np.asarray(wd.epochs) >= fork
    for a, field in zip(ax, ("core_dim", "rotational_modes_ols")):
        band(a, np.asarray(wd.epochs)[keep] - fork, wd[field][:, keep], "grey", f"WD = 1, {label}", linestyle="-")
        a.set_xscale("symlog", linthresh=1000)
        a.set_xticks([0, 500, 1000, 10000])  # linear to 1 000 epochs, then logarithmic: no crowded ticks at 0
        a.xaxis.set_major_formatter(ticker.FuncFormatter(thousands))
        a.xaxis.set_minor_formatter(ticker.NullFormatter())
        a.set_xlabel("epochs after the fork")
    ax[0].set_ylabel("core size (dimension)")
    ax[1].set_ylabel("rotational modes (OLS)")
    ax[0].set_title("2A beside the paper: WD-off core")
    ax[1].set_title("2D beside the paper: WD-off modes")
    handles, labels = ax[0].get_legend_handles_labels()  # the same runs in both panels: one legend below them
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig


def plot_harmonics(arms: Sequence[tuple[str, Any, str]], field: str = "emb_spectrum", ax: Sequence[Axes] | None = None) -> Figure:
    """Weight decay as redistribution: left, the effective number of harmonics (1 / Σ s_k², model mean
    with min–max band) of a weight's Fourier spectrum per epoch; right, the spectrum (share of power
    per frequency 1..⌊p/2⌋, model mean) at each arm's last checkpoint.

    ``arms``: ``(label, ArmResult, colour)``, all of one modulus p (the spectra's length is ⌊p/2⌋);
    ``field``: ``"emb_spectrum"`` or ``"unemb_spectrum"``.
    """
    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(COLUMN_INCHES, 3.6))
    else:
        fig = ax[0].figure
    half = int(np.asarray(arms[0][1][field]).shape[-1])
    width = 0.8 / max(len(arms), 1)
    for k, (label, arm, colour) in enumerate(arms):
        band(ax[0], np.asarray(arm.epochs), effective_harmonics(arm[field]), colour, label, marker="o", markersize=2)
        last = np.asarray(arm[field])[:, -1].mean(axis=0)
        ax[1].bar(
            np.arange(1, half + 1) + (k - (len(arms) - 1) / 2) * width,
            last,
            width=width,
            color=colour,
            label=f"{label}, epoch {int(arm.epochs[-1])}",
        )
    ax[0].axhline(half, color="black", linestyle=":", linewidth=1, label=f"⌊p/2⌋ = {half}")
    epoch_axis(ax[0])
    ax[0].set_ylabel("effective number of harmonics")
    ax[1].set_xlabel("frequency k")
    ax[1].set_ylabel("share of Fourier power")
    name = "embedding" if field == "emb_spectrum" else "unembedding"
    ax[0].set_title(f"Harmonics carrying the {name}'s weight")
    ax[1].set_title(f"The {name}'s Fourier spectrum at the last epoch")
    legend_below(ax[0], ncol=1)  # one entry a line: long labels side by side would overlap
    legend_below(ax[1], ncol=1)
    return fig
