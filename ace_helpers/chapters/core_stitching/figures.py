"""Chapter 7 figures and tables (notebooks/07_core_stitching): swaps per condition, the rank sweep, the result table.

Every plot reads one task's section of ``results.json`` (``res["markov"]`` or ``res["modadd"]``),
takes an optional ``ax`` and returns the ``Axes``; tables return Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from ace_helpers.chapters.core_stitching import CONDITIONS, REGIMES, halfway
from ace_helpers.repro.style import PALETTE
from ace_helpers.repro.tables import markdown_table

LABELS = {"core": "ACE core\n(mapped)", "random": "random\nsubspace", "unmapped": "ACE core\n(unmapped)",
          "full": "whole\nactivation\n(full map)"}  # three short lines: four groups side by side in a half-column panel
REGIME_COLORS = {"same": PALETTE["base"], "crossed": PALETTE["flip"]}
SWEEP_COLORS = {"core": PALETTE["keep"], "random": PALETTE["remove"], "unmapped": PALETTE["flip"]}
REGIME_LABELS = {"same": "B on the same input", "crossed": "B on another input"}


def _axes(ax: Axes | None, size: tuple[float, float] = (5.2, 3.4)) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def plot_swaps(section: Mapping[str, Any], title: str, ax: Axes | None = None) -> Axes:
    """Agreement with B's own predictions on A's input, per condition (bars) and regime (colours).

    Dashed line: B on another input without any swap (the floor); dotted: the failure line halfway to 1.
    """
    ax = _axes(ax)
    x = np.arange(len(CONDITIONS))
    width = 0.38
    for k, regime in enumerate(REGIMES):
        vals = [section["swap"][c][regime]["agree"] for c in CONDITIONS]
        bars = ax.bar(x + (k - 0.5) * width, vals, width, color=REGIME_COLORS[regime], label=REGIME_LABELS[regime])
        for bar, v in zip(bars, vals):
            ax.text(bar.get_x() + bar.get_width() / 2, v + 0.02, f"{v:.2f}", ha="center", va="bottom", fontsize=10)
    floor = section["floor"]["agree"]
    ax.axhline(floor, color="0.3", ls="--", lw=1, label=f"no swap, another input ({floor:.2f})")
    ax.axhline(halfway(floor), color="0.5", ls=":", lw=1, label="failure line (halfway to 1)")
    ax.set_xticks(x, [LABELS[c] for c in CONDITIONS], fontsize=10)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("agreement with B's own predictions")
    ax.set_title(title)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    return ax


def plot_rank_sweep(section: Mapping[str, Any], title: str, ax: Axes | None = None) -> Axes:
    """Crossed-input agreement against the swapped rank r (core, random, unmapped), B's ACE rank marked."""
    ax = _axes(ax)
    ranks = section["ranks"]
    for condition, color in SWEEP_COLORS.items():
        ax.plot(ranks, section["sweep"][condition]["agree"], marker="o", ms=3, color=color,
                label=LABELS[condition].replace("\n", " "))
    r_core = section["core_ranks"][1]
    ax.axvline(r_core, color="0.2", ls="--", lw=1, label=f"B's ACE rank ({r_core})")
    ax.axhline(section["floor"]["agree"], color="0.5", ls=":", lw=1, label="no swap, another input")
    ax.set_xlabel("swapped rank r")
    ax.set_ylabel("agreement (B on another input)")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(title)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    return ax


def stitching_figure(res: Mapping[str, Any]) -> plt.Figure:
    """Row 1: swaps per condition; row 2: the rank sweep; one column per task that ran."""
    tasks = [(k, t) for k, t in (("markov", "Markov chain (seeds 1 → 2)"), ("modadd", "mod-add (model 1 → 2)"))
             if res.get(k) is not None]
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.8 * len(tasks), 7.6), squeeze=False)
    for j, (key, name) in enumerate(tasks):
        top, bottom = "ABCD"[j], "ABCD"[len(tasks) + j]  # panels lettered row by row
        plot_swaps(res[key], f"{top}  {name}: swaps (ours)", axes[0, j])
        plot_rank_sweep(res[key], f"{bottom}  {name}: rank sweep (ours)", axes[1, j])
    fig.tight_layout()
    return fig


def swap_table(res: Mapping[str, Any]) -> str:
    """Markdown: per task and condition, accuracy and agreement on the same / another input, and the map's R²."""
    rows = []
    for key, name in (("markov", "Markov"), ("modadd", "mod-add")):
        s = res.get(key)
        if s is None:
            continue
        rows.append((name, "none (B's own)", f"{s['base_acc'][1]:.3f}", "1", f"{s['floor']['acc']:.3f}",
                     f"{s['floor']['agree']:.3f}", "—"))  # fmt: skip
        for c in CONDITIONS:
            sw = s["swap"][c]
            rows.append((name, LABELS[c], f"{sw['same']['acc']:.3f}", f"{sw['same']['agree']:.3f}", f"{sw['crossed']['acc']:.3f}",
                         f"{sw['crossed']['agree']:.3f}", f"{s['map_r2'][c]:.3f}"))  # fmt: skip
    header = ("task", "swap", "same input: acc", "agree", "another input: acc", "agree", "map R² (held out)")
    return markdown_table(header, rows)  # a label's line break becomes a space


def transfer_table(markov: Mapping[str, Any]) -> str:
    """Markdown: the held-out pair (seeds 1 → 3) with composed maps and with maps fitted on it."""
    rows = []
    for c in ("core", "random", "full"):
        for kind, label in (("transfer", "composed 1 → 2 → 3 (not fitted on 1, 3)"), ("direct", "fitted on 1 → 3")):
            sw = markov[kind][c]
            rows.append((LABELS[c], label, f"{sw['same']['acc']:.3f}", f"{sw['same']['agree']:.3f}",
                         f"{sw['crossed']['acc']:.3f}", f"{sw['crossed']['agree']:.3f}"))  # fmt: skip
    header = ("swap (seeds 1 → 3)", "maps", "same input: acc", "agree", "another input: acc", "agree")
    return markdown_table(header, rows)  # a label's line break becomes a space
