"""Chapter 5 panels (subject–verb agreement in LLMs). Each function returns the Figure it drew.

Panel names follow the paper's subject–verb agreement figure (Schiffman 2026, arXiv 2602.22600):
A the layer sweep, B the knob, C the flip demo; D (steered generation) and E (cross-model
alignment) are ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ace_helpers.plots.style import set_style

_MODE_STYLE = {
    "base": ("Base", "0.3", "-"),
    "keep": ("Core only (+)", "tab:green", "-"),
    "remove": ("Core removed (−)", "tab:orange", "-"),
    "flip": ("Core flipped (↔)", "tab:red", "-"),
}


def plot_auc_depth(curves: Sequence[Mapping], *, chosen: Mapping[str, int] | None = None):
    """Panel A (paper): test ROC-AUC vs normalised depth ℓ/n_layers, one axes per model.

    Args:
        curves: per model ``{"name", "layers" (L,), "n_layers", "base" (float), "keep"/"remove"/"flip" (L,)}``.
        chosen: model name -> chosen layer (marked with a vertical line).
    """
    set_style()
    fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 3.8), squeeze=False, sharey=True)
    for ax, c in zip(axes[0], curves):
        depth = np.asarray(c["layers"]) / c["n_layers"]
        label, color, ls = _MODE_STYLE["base"]
        ax.plot(depth, np.full(depth.shape, c["base"]), color=color, ls="--", label=label)
        for mode in ("keep", "remove", "flip"):
            label, color, ls = _MODE_STYLE[mode]
            ax.plot(depth, c[mode], color=color, ls=ls, marker=".", label=label)
        if chosen and c["name"] in chosen:
            ax.axvline(chosen[c["name"]] / c["n_layers"], color="0.6", lw=1, ls=":", label=f"chosen ℓ = {chosen[c['name']]}")
        ax.axhline(0.5, color="0.8", lw=1, label="chance (0.5)")
        ax.set(title=f"A (paper): layer sweep, {c['name']}", xlabel="normalised depth ℓ / n_layers", ylim=(-0.02, 1.02))
    axes[0][0].set_ylabel("ROC-AUC of margin (plural = 1)")
    for ax in axes[0]:
        ax.legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    return fig


def _z(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, float)
    return (x - x.mean()) / (x.std() or 1.0)


def plot_knob(knobs: Mapping[str, Mapping]):
    """Panel B (paper): z-scored core coordinate vs z-scored margin, plural above singular, affine fit and R².

    Args:
        knobs: model name -> ``{"z" (N,), "m" (N,), "labels" (N,), "r2"}``.
    """
    set_style()
    fig, axes = plt.subplots(1, len(knobs), figsize=(4.6 * len(knobs), 3.8), squeeze=False)
    for ax, (name, k) in zip(axes[0], knobs.items()):
        z, m, lab = _z(k["z"]), _z(k["m"]), np.asarray(k["labels"])
        if z[lab == 1].mean() < z[lab == 0].mean():  # the axis sign is arbitrary: plural to the right
            z = -z
        for value, color, text in ((0, "tab:blue", "singular"), (1, "tab:red", "plural")):
            ax.scatter(z[lab == value], m[lab == value], s=10, alpha=0.6, color=color, label=text)
        slope, intercept = np.polyfit(z, m, 1)
        grid = np.linspace(z.min(), z.max(), 50)
        ax.plot(grid, slope * grid + intercept, color="k", lw=1.2, label=f"affine fit, R² = {k['r2']:.2f}")
        ax.set(title=f"B (paper): the knob, {name}", xlabel="core coordinate z (z-scored, SD units)",
               ylabel="margin m (z-scored, SD units)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_flip_demo(probs: Mapping[str, Mapping[str, np.ndarray]], prompts: Sequence[str]):
    """Panel C (paper): P(is/are/was/were) per demo prompt under clean / removed / flipped, per model.

    Args:
        probs: model name -> condition (``base``, ``removed``, ``flipped``) -> (P, 4) probabilities.
        prompts: the P prompt texts.
    """
    set_style()
    conds = ("base", "removed", "flipped")
    fig, axes = plt.subplots(len(probs), 3, figsize=(13, 0.55 * len(prompts) * len(probs) + 1.5), squeeze=False, sharex=True)
    colors = ("tab:blue", "tab:red", "lightsteelblue", "lightsalmon")
    for row, (name, per) in enumerate(probs.items()):
        for col, cond in enumerate(conds):
            ax = axes[row][col]
            p = np.asarray(per[cond])
            p = p / p.sum(1, keepdims=True)
            left = np.zeros(len(prompts))
            for k, verb in enumerate(("is", "are", "was", "were")):
                ax.barh(np.arange(len(prompts)), p[:, k], left=left, color=colors[k], label=verb)
                left += p[:, k]
            ax.set_yticks(np.arange(len(prompts)))
            ax.set_yticklabels(prompts if col == 0 else [""] * len(prompts), fontsize=7)
            ax.invert_yaxis()
            ax.set_title(f"C (paper): flip demo, {name}, {cond}", fontsize=9)
    axes[-1][1].set_xlabel("share of the four verbs' probability")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", fontsize=8, ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.4 / fig.get_figheight(), 1, 1))  # room for the legend below the panels
    return fig


def plot_generation(rates: Mapping[str, Mapping[str, float]]):
    """Panel D (ours): fraction of generations whose copulas mostly disagree with the clean model's number.

    Args:
        rates: model name -> ``{"clean": rate, "steered": rate}``.
    """
    set_style()
    fig, ax = plt.subplots(figsize=(3.9 + 1.6 * len(rates), 3.4))
    names = list(rates)
    x = np.arange(len(names))
    ax.bar(x - 0.18, [rates[n]["clean"] for n in names], width=0.36, color="0.6", label="clean")
    ax.bar(x + 0.18, [rates[n]["steered"] for n in names], width=0.36, color="tab:red", label="calibrated flip")
    ax.axhline(0.7, color="k", lw=1, ls=":", label="our acceptance line (0.7)")
    ax.set_xticks(x)
    ax.set_xticklabels(names)
    ax.set(ylim=(0, 1.05), ylabel="share of generations\nwith verb number changed", title="D (ours): steered generation")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside the bars, never over them
    fig.tight_layout()
    return fig


def plot_alignment(coords: Mapping[str, np.ndarray], labels: np.ndarray):
    """Panel E (ours): per-prompt core coordinates of one model against another (sign-aligned), per pair."""
    set_style()
    names = list(coords)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    fig, axes = plt.subplots(1, max(1, len(pairs)), figsize=(4.4 * max(1, len(pairs)), 3.8), squeeze=False)
    labels = np.asarray(labels)
    for ax, (a, b) in zip(axes[0], pairs):
        za, zb = _z(coords[a]), _z(coords[b])
        if np.corrcoef(za, zb)[0, 1] < 0:
            zb = -zb
        for value, color, text in ((0, "tab:blue", "singular"), (1, "tab:red", "plural")):
            ax.scatter(za[labels == value], zb[labels == value], s=10, alpha=0.6, color=color, label=text)
        ax.set(title=f"E (ours): cross-model alignment, {a} vs {b}", xlabel=f"{a} core coordinate (z-scored, SD units)",
               ylabel=f"{b} core coordinate (z-scored, sign-aligned)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
