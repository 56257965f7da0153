"""Chapter 6 figures (notebooks/06_ace_vs_alternatives): per task, overlap / keep / remove against the rank, one line per method."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from ace_helpers.chapters.ace_vs_alternatives import METHODS

COLORS = {
    "ace": "#000000",
    "pca": "#0072B2",
    "jacobian": "#D55E00",
    "probe": "#E69F00",
    "class_means": "#009E73",
    "random": "0.6",
    "das": "#CC79A7",
}  # Okabe–Ito: told apart under the common colour-vision deficiencies
LABELS = {
    "ace": "ACE",
    "pca": "PCA",
    "jacobian": "Jacobian Gram",
    "probe": "linear probe",
    "class_means": "class means",
    "random": "random",
    "das": "DAS (learned)",
}


def task_figure(section: Mapping[str, Any], title: str) -> plt.Figure:
    """Three panels against the rank r: overlap with the ground truth, keep accuracy, remove accuracy."""
    fig, axes = plt.subplots(1, 3, figsize=(10.0, 3.5))  # about the page column: text stays ≥ 9 px on screen
    ranks = np.asarray(section["ranks"])
    for ax, key, ylabel in zip(
        axes, ("overlap", "keep", "remove"), ("overlap with the truth", "accuracy, kept alone", "accuracy, removed")
    ):
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
        ax.set_title(f"{letter}  {what}", fontsize=11)
    fig.suptitle(f"{title} (ours)", fontsize=12)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.17, 1, 1))  # the legend goes below the panels, clear of their axis labels
    fig.legend(handles, labels, fontsize=10, loc="lower center", ncol=4, frameon=False)
    return fig


def llm_figure(res_llm: Mapping[str, Any]) -> plt.Figure | None:
    """Subject–verb agreement: one row per model that ran, against the rank r: keep, remove and flip accuracy
    (the share of test prompts whose margin has the subject's number) and the flip's margin shift."""
    ok = {n: s for n, s in res_llm.items() if "unavailable" not in s}
    if not ok:
        return None
    fig, axes = plt.subplots(len(ok), 4, figsize=(10.5, 2.9 * len(ok) + 0.9), squeeze=False)
    for i, (row, (name, s)) in enumerate(zip(axes, ok.items())):
        ranks = np.asarray(s["ranks"])
        for ax, key, ylabel in zip(
            row,
            ("keep", "remove", "flip", "flip_shift"),
            ("accuracy, kept alone", "accuracy, removed", "accuracy, flipped", "margin shift (logits)"),
        ):
            for m in METHODS:
                vals = np.array([np.nan if v is None else v for v in s[key][m]], dtype=float)
                ax.plot(ranks, vals, marker="o", ms=4, color=COLORS[m], label=LABELS[m], lw=2.2 if m == "ace" else 1.2)
            if key != "flip_shift":
                ax.axhline(s["base_acc"], color="0.3", ls=":", lw=1)
                ax.axhline(s["chance_acc"], color="0.6", ls=":", lw=1)
                ax.set_ylim(-0.03, 1.05)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("rank r")
            ax.set_ylabel(ylabel)
        for ax, letter, what in zip(row, "ABCDEFGHIJKL"[4 * i : 4 * i + 4], ("keep", "remove", "flip", "flip size")):
            ax.set_title(f"{letter}  {name}, ℓ = {s['layer']}: {what}", fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(handles, labels, fontsize=10, loc="lower center", ncol=4, frameon=False)
    return fig
