"""Chapter 0 figures (notebooks/00_ace_planted_system): overlaps with the planted blocks, keep/remove accuracies."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ace_helpers.repro.style import PALETTE


def planted_summary(overlap: dict, acc_keep: dict, acc_remove: dict, chance: float):
    """Left: overlap of each method's subspace with each planted block (heat-map).
    Right: readout accuracy when each method's subspace is kept or removed (bars).
    Returns the Figure."""
    methods = list(overlap)
    blocks = list(next(iter(overlap.values())))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    grid = np.array([[overlap[m][b] for b in blocks] for m in methods])
    sns.heatmap(
        grid,
        annot=True,
        fmt=".2f",
        vmin=0,
        vmax=1,
        cmap="mako",
        ax=ax1,
        xticklabels=[b.replace("_", " ") for b in blocks],
        yticklabels=[m.upper() for m in methods],
        cbar=False,
    )
    ax1.set_title("A (ours)  Projector overlap with the planted blocks", fontsize=10)
    x = np.arange(len(methods))
    ax2.bar(x - 0.2, [acc_keep[m] for m in methods], 0.4, label="keep only", color=PALETTE["keep"])
    ax2.bar(x + 0.2, [acc_remove[m] for m in methods], 0.4, label="remove", color=PALETTE["remove"])
    ax2.axhline(chance, ls="--", color=PALETTE["chance"], label="chance")
    ax2.set_xticks(x, [m.upper() for m in methods])
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("readout accuracy (fraction correct)")
    ax2.set_title("B (ours)  Necessity and sufficiency", fontsize=10)
    ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=10, frameon=False)  # below: no bar hidden
    fig.tight_layout()
    return fig


def prose_numbers(res: dict[str, Any]) -> dict[str, str]:
    """The numbers the chapter's text quotes, formatted (the notebook glues each under its key).

    ``weight_drop``: the ratio of the last balanced weight inside the core to the first one after it.
    """
    r = res["ace_rank"]
    w = res["weights_top"]
    drop = w[r - 1] / w[r] if r < len(w) and w[r] > 0 else float("inf")
    return {
        "ace_core": f"{res['overlap']['ace']['core']:.3f}",
        "jac_core": f"{res['overlap']['jacobian']['core']:.3f}",
        "base": f"{res['acc_base']:.3f}",
        "ace_keep": f"{res['acc_keep']['ace']:.3f}",
        "ace_remove": f"{res['acc_remove']['ace']:.3f}",
        "pca_keep": f"{res['acc_keep']['pca']:.3f}",
        "jac_keep": f"{res['acc_keep']['jacobian']:.3f}",
        "jac_remove": f"{res['acc_remove']['jacobian']:.3f}",
        "weight_drop": f"{drop:.0f}",
    }
