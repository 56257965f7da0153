"""Chapter 7's invariance table, merging figure and table, and the sentences that read them (worded from the results).

Each reads the ``invariance`` and ``merging`` entries of a task's section of ``results.json``
(:mod:`~ace_helpers.chapters.core_stitching.invariance`, :mod:`~ace_helpers.chapters.core_stitching.merging`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from ace_helpers.chapters.core_stitching.merging import PATHS
from ace_helpers.chapters.core_stitching.paper_rows import (
    CCA_TOL,
    MIDPOINT,
    aligned_keeps,
    drop_line,
    invariance_holds,
    midpoint_loss,
    naive_fails,
)
from ace_helpers.repro.style import PALETTE, panel_grid
from ace_helpers.repro.tables import markdown_table

TASKS = (("markov", "Markov", "seeds"), ("modadd", "mod-add", "models"))
PATH_LABELS = {"weights": "naive weight interpolation", "activations": "activations averaged, unaligned",
               "core_aligned": "aligned cores (ACE map B → A)", "full_aligned": "whole activation, full-rank map"}
PATH_STYLE = {"weights": (PALETTE["remove"], "-", "o"), "activations": ("0.45", ":", "s"),
              "core_aligned": (PALETTE["keep"], "-", "^"), "full_aligned": (PALETTE["flip"], "--", "v")}


def _tasks(res: Mapping[str, Any], key: str) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [(name, unit, res[k]) for k, name, unit in TASKS if res.get(k) is not None and key in res[k]]


def invariance_table(res: Mapping[str, Any]) -> str:
    """Markdown: per task and model pair, the mean CCA and projector overlap of the cores and the baselines."""
    rows = []
    for name, unit, s in _tasks(res, "invariance"):
        for inv in s["invariance"]:
            i, j = inv["pair"]
            ov = lambda d: "—" if d["overlap"] is None else f"{d['overlap']:.3f}"  # noqa: E731
            rnd = inv["random"]
            rows.append((f"{name} {unit} {i + 1}, {j + 1}", f"{inv['ranks'][0]}, {inv['ranks'][1]} (k = {inv['k']})",
                         f"{inv['core']['cca']:.3f} / {ov(inv['core'])}", f"{inv['pca']['cca']:.3f} / {ov(inv['pca'])}",
                         f"{inv['oracle']['cca']:.3f} / {ov(inv['oracle'])}",
                         f"{rnd['cca']['mean']:.3f} ({rnd['cca']['q95']:.3f}) / "
                         + ("—" if rnd["overlap"] is None else f"{rnd['overlap']['mean']:.3f}")))
    header = ("pair", "core ranks", "ACE cores: CCA / overlap", "top-r PCA", "class-mean oracle",
              "random: CCA mean (95th pct.) / overlap")
    return markdown_table(header, rows)


def invariance_text(res: Mapping[str, Any]) -> str:
    """Markdown paragraph: whether the cores' CCA beats random subspaces and whether it is specific to the cores."""
    parts = []
    for name, unit, s in _tasks(res, "invariance"):
        for inv in s["invariance"]:
            i, j = inv["pair"]
            holds, above = invariance_holds(inv)
            core, pca, orc = inv["core"]["cca"], inv["pca"]["cca"], inv["oracle"]["cca"]
            specific = core > max(pca, orc) + CCA_TOL
            q95, ci = inv["random"]["cca"]["q95"], inv["core"].get("interval")
            if ci is not None and ci[0] <= q95 < ci[1]:
                versus = (f"within its own noise of the 95th percentile of random subspaces ({q95:.3f}; its 90 % "
                          f"interval is {ci[0]:.3f}–{ci[1]:.3f})")
            else:
                versus = f"{'above' if above else 'not above'} the 95th percentile of random subspaces ({q95:.3f})"
            parts.append(
                f"{name} {unit} {i + 1} and {j + 1}: the cores' mean CCA is {core:.3f}, {versus}; "
                f"the top-r PCA subspaces give {pca:.3f} and the class-mean oracle {orc:.3f}, so the CCA "
                + ("is specific to the cores." if specific else
                   "is **not** specific to the cores: subspaces chosen without ACE, by variance or by the label alone, "
                   "align as well or better.")
                + ("" if holds or not above else " The rule fails on the PCA comparison."))
    return " ".join(parts) if parts else "No invariance comparison in this run."


def plot_merging(mg: Mapping[str, Any], title: str, ax: Axes | None = None) -> Axes:
    """Accuracy along α for every merge path of one pair; dashed: chance, dotted: the naive path's failure line."""
    if ax is None:
        _, ax = plt.subplots(figsize=(4.6, 3.4))
    for path in PATHS:
        color, ls, marker = PATH_STYLE[path]
        ax.plot(mg["alphas"], mg["acc"][path], color=color, ls=ls, marker=marker, ms=4, label=PATH_LABELS[path],
                lw=2.6 if path == "core_aligned" else 1.3, zorder=3 if path == "core_aligned" else 4)
    ax.axhline(mg["chance"], color="0.3", ls="--", lw=1, label="chance")
    ax.axhline(drop_line(mg), color="0.5", ls=":", lw=1, label="naive path fails at or below")
    ax.set_xlabel("α (0: model A, 1: model B)")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(title, fontsize=10)
    return ax


def merging_figure(res: Mapping[str, Any]) -> plt.Figure:
    """One panel per merged pair (Markov seed pairs, then the mod-add pair): accuracy along α per merge path."""
    pairs = [(name, unit, mg) for name, unit, s in _tasks(res, "merging") for mg in s["merging"]]
    if not pairs:
        raise ValueError("the results hold no merging paths (run the chapter with this version of the library)")
    fig, axes = panel_grid(len(pairs), width=4.6, height=3.6, max_cols=2)
    for k, (name, unit, mg) in enumerate(pairs):
        i, j = mg["pair"]
        plot_merging(mg, f"{'ABCDEFGH'[k]}  {name} {unit} {i + 1} → {j + 1}", axes[k])
    handles, labels = axes[0].get_legend_handles_labels()
    rows = -(-len(pairs) // 2)
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.12 / rows, 1, 1))
    return fig


def merging_text(res: Mapping[str, Any]) -> str:
    """Markdown paragraph: per pair, what naive interpolation and the aligned-core merge did."""
    parts = []
    for name, unit, s in _tasks(res, "merging"):
        for mg in s["merging"]:
            i, j = mg["pair"]
            acc = mg["acc"]
            mid = mg["alphas"].index(MIDPOINT)
            loss = ("at or below chance" if acc["weights"][mid] <= mg["chance"] else
                    f"losing {midpoint_loss(mg):.0%} of the above-chance accuracy")
            parts.append(
                f"{name} {unit} {i + 1} and {j + 1}: naive interpolation {'fails' if naive_fails(mg) else 'does not fail'} "
                f"(midpoint {acc['weights'][mid]:.3f}, {loss}), and the aligned-core merge "
                f"{'keeps' if aligned_keeps(mg) else 'does not keep'} the accuracy (lowest along the path "
                f"{min(acc['core_aligned']):.3f}; at α = {MIDPOINT} it gives {acc['core_aligned'][mid]:.3f}, where the "
                f"unaligned activations give {acc['activations'][mid]:.3f}; they reach {min(acc['activations']):.3f}).")
    return " ".join(parts) if parts else "No merging paths in this run."
