"""Chapter 6 figures (notebooks/06_ace_vs_alternatives): per task, overlap / keep / remove against the rank, one line per method."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from ace_helpers.chapters.ace_vs_alternatives import METHODS

COLORS = {"ace": "#55A868", "pca": "#4C72B0", "jacobian": "#C44E52", "probe": "#8172B2", "class_means": "#CCB974",
          "random": "0.6", "das": "#DD8452"}
LABELS = {"ace": "ACE", "pca": "PCA", "jacobian": "Jacobian Gram", "probe": "linear probe", "class_means": "class means",
          "random": "random", "das": "DAS (learned)"}


def task_figure(section: Mapping[str, Any], title: str) -> plt.Figure:
    """Three panels against the rank r: overlap with the ground truth, keep accuracy, remove accuracy."""
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 3.6))
    ranks = np.asarray(section["ranks"])
    for ax, key, ylabel in zip(axes, ("overlap", "keep", "remove"),
                               ("overlap with the ground truth", "accuracy, subspace kept alone", "accuracy, subspace removed")):
        for m in METHODS:
            vals = np.array([np.nan if v is None else v for v in section[key][m]], dtype=float)
            ax.plot(ranks, vals, marker="o", ms=3, color=COLORS[m], label=LABELS[m], lw=2.2 if m == "ace" else 1.2)
        ax.axvline(section["gt_rank"], color="0.2", ls="--", lw=1)
        if key != "overlap":
            ax.axhline(section["base_acc"], color="0.3", ls=":", lw=1)
            ax.axhline(section["chance_acc"], color="0.6", ls=":", lw=1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("rank r")
        ax.set_ylabel(ylabel)
        ax.set_ylim(-0.03, 1.05)
    for ax, letter, what in zip(axes, "ABC", ("ground truth", "sufficiency", "necessity")):
        ax.set_title(f"{letter}  {title}: {what} (ours)", fontsize=10)
    axes[1].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=7, frameon=False)
    fig.tight_layout()
    return fig
