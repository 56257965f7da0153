"""Chapter 1 figures and tables (notebooks/01_markov_cores): the paper's panels A–E, the energy cut, the result tables.

Every plot takes plain numbers/arrays and an optional ``ax`` and returns the ``Axes``; every
table reads only the flat ``results.json`` dict and returns Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes

from ace_helpers.chapters.markov_cores import ABLATIONS, TAILS, eigen_summary, r2_ratios
from ace_helpers.repro.style import PALETTE
from ace_helpers.repro.tables import markdown_table

FLOOR = 1e-5  # remaining energy below this is drawn at the floor (exact zeros included)


def _axes(ax: Axes | None, size: tuple[float, float] = (4.2, 3.4)) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def _seed_labels(n: int) -> list[str]:
    return [f"seed {i + 1}" for i in range(n)]


def _heatmap(mat: np.ndarray, ax: Axes, *, vmin: float, vmax: float, cmap: str, fmt: str = ".3f") -> Axes:
    labels = _seed_labels(mat.shape[0])
    sns.heatmap(
        mat,
        ax=ax,
        vmin=vmin,
        vmax=vmax,
        cmap=cmap,
        annot=True,
        fmt=fmt,
        square=True,
        xticklabels=labels,
        yticklabels=labels,
        cbar_kws={"shrink": 0.8},
    )
    return ax


def plot_weight_cosine(matrix: np.ndarray, ax: Axes | None = None) -> Axes:
    """Panel A: cosine similarity of the seeds' flattened weights, (S, S) heat-map."""
    ax = _axes(ax)
    _heatmap(np.asarray(matrix), ax, vmin=-1.0, vmax=1.0, cmap="vlag")
    ax.set_title("A  Model weight similarity")
    return ax


def plot_necessity_sufficiency(
    bayes: float,
    chance: float,
    base: Sequence[float],
    variants: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    ax: Axes | None = None,
) -> Axes:
    """Panel B: bars Optimal, Full model, (Core only, Core removed) per variant, Chance.

    Args:
        bayes, chance: the reference accuracies.
        base: full-model accuracy per seed.
        variants: ``{label: (keep_acc per seed, remove_acc per seed)}``, e.g. ours and the paper's.
    """
    ax = _axes(ax, (7.6, 3.6))
    names, values, colors, points = ["Optimal"], [bayes], ["0.3"], [None]
    names.append("Full model")
    values.append(float(np.mean(base)))
    colors.append(PALETTE["base"])
    points.append(base)
    for label, (keep, remove) in variants.items():
        names += [f"Core only\n({label})", f"Core removed\n({label})"]
        values += [float(np.mean(keep)), float(np.mean(remove))]
        colors += [PALETTE["keep"], PALETTE["remove"]]
        points += [keep, remove]
    names.append("Chance")
    values.append(chance)
    colors.append(PALETTE["chance"])
    points.append(None)
    x = np.arange(len(names))
    ax.bar(x, values, color=colors, width=0.7)
    for xi, pts in zip(x, points):
        if pts is not None:
            ax.scatter(np.full(len(pts), xi), pts, color="k", s=10, zorder=3)
    for xi, v in zip(x, values):
        ax.text(xi, v + 0.01, f"{v:.3f}", ha="center", va="bottom", fontsize=10)
    ax.set_xticks(x, names, fontsize=10)
    ax.set_ylim(0, 1)
    ax.set_ylabel("next-state accuracy")
    ax.set_title("B  Core necessity & sufficiency")
    return ax


def plot_projector_overlap(matrix: np.ndarray, random_level: float, ax: Axes | None = None) -> Axes:
    """Panel C: projector overlap between the seeds' cores; the random level r/D in the title."""
    ax = _axes(ax)
    _heatmap(np.asarray(matrix), ax, vmin=0.0, vmax=1.0, cmap="mako_r")
    ax.set_title(f"C  Core geometric similarity\n(random subspaces: r/D = {random_level:.3f})", fontsize=10)
    return ax


def plot_cca(matrix: np.ndarray, top: Sequence[Sequence[float]], ax: Axes | None = None) -> Axes:
    """Panel D: mean of the top canonical correlations between seeds' core coordinates.

    Args:
        matrix: (S, S) mean top-k CCA (diagonal 1).
        top: per seed pair, the k correlations (shown under the title).
    """
    ax = _axes(ax)
    _heatmap(np.asarray(matrix), ax, vmin=0.0, vmax=1.0, cmap="mako_r")
    text = "; ".join("[" + ", ".join(f"{v:.3f}" for v in pair) + "]" for pair in top)
    ax.set_title("D  Core statistical similarity (mean CCA)", fontsize=10)
    ax.set_xlabel(text, fontsize=10)
    return ax


def plot_spectrum(
    true_eigs: Sequence[Sequence[float]],
    core_eigs: Sequence[Sequence[Sequence[float]]],
    r2_ratio: Sequence[float],
    ax: Axes | None = None,
    title: str = "E  Core recovers the Markov spectrum",
) -> Axes:
    """Panel E: the chain's non-unit eigenvalues and each seed's core-operator eigenvalues.

    Args:
        true_eigs: [[re, im], ...] of the chain.
        core_eigs: per seed, [[re, im], ...] of the fitted operator.
        r2_ratio: per seed, R² / R²_oracle (shown in the legend).
    """
    ax = _axes(ax, (4.0, 4.0))
    t = np.linspace(0, 2 * np.pi, 400)
    ax.plot(np.cos(t), np.sin(t), color="0.6", lw=1)
    ax.axhline(0, color="0.85", lw=0.8)
    ax.axvline(0, color="0.85", lw=0.8)
    tr = np.asarray(true_eigs, dtype=float).reshape(-1, 2)
    ax.scatter(tr[:, 0], tr[:, 1], s=160, facecolors="none", edgecolors="k", lw=1.5, label="chain T", zorder=3)
    markers = ["x", "+", "1", "2", "3", "4"]
    for i, (eigs, ratio) in enumerate(zip(core_eigs, r2_ratio)):
        e = np.asarray(eigs, dtype=float).reshape(-1, 2)
        ax.scatter(
            e[:, 0], e[:, 1], marker=markers[i % len(markers)], s=60, zorder=4, label=f"seed {i + 1} (R²/R²$_o$ = {ratio:.3f})"
        )
    ax.set_xlim(-1.1, 1.1)
    ax.set_ylim(-1.1, 1.1)
    ax.set_aspect("equal")
    ax.set_xlabel("Re λ")
    ax.set_ylabel("Im λ")
    ax.legend(fontsize=10, loc="lower left")
    ax.set_title(title, fontsize=10)
    return ax


def plot_energy_cut(shares: Mapping[str, Sequence[Sequence[float]]], energy: float, ax: Axes | None = None) -> Axes:
    """Energy left after the first k balanced directions, 1 − cumsum(w)/Σw, per tail and seed (log y).

    The rank rule stops at the first k whose remaining energy is <= 1 − ``energy`` (dashed line).

    Args:
        shares: ``{tail: per seed, the shares w_i / Σw of the first few directions}``.
    """
    ax = _axes(ax, (4.8, 3.4))
    styles = {"logits": ("o-", PALETTE["remove"]), "centered": ("s-", PALETTE["keep"])}
    for tail, per_seed in shares.items():
        fmt, color = styles.get(tail, ("^-", "k"))
        for i, s in enumerate(per_seed):
            left = np.clip(1.0 - np.cumsum(s), FLOOR, None)
            k = np.arange(1, len(left) + 1)
            ax.semilogy(k, left, fmt, color=color, alpha=0.8, ms=4, label=f"{tail} tail" if i == 0 else None)
    ax.axhline(1.0 - energy, color="k", ls="--", lw=1, label=f"cut (energy {energy})")
    ax.set_ylim(FLOOR / 2, 1.5)
    ax.text(1, FLOOR * 1.4, "(≈ 0: at or below this line)", fontsize=10, color="0.4")
    ax.set_xlabel("k (balanced directions kept)")
    ax.set_ylabel("energy left, 1 − Σ$_{i≤k}$ w$_i$ / Σ w")
    ax.legend(fontsize=10)
    ax.set_title("Where the rank rule cuts (ours)", fontsize=10)
    return ax


# ----------------------------------------------------------------------------------- tables
def seed_pairs(n_seeds: int) -> list[tuple[int, int]]:
    """Seed pairs (i < j) in the order of the pairwise result lists."""
    return list(combinations(range(int(n_seeds)), 2))


def pair_matrix(values: Sequence[float], n_seeds: int, pairs: Sequence[tuple[int, int]], diagonal: float = 1.0) -> np.ndarray:
    """Symmetric (n_seeds, n_seeds) matrix from pairwise ``values`` (order of ``pairs``)."""
    mat = np.full((n_seeds, n_seeds), float(diagonal))
    for v, (i, j) in zip(values, pairs):
        mat[i, j] = mat[j, i] = float(v)
    return mat


def _pairs(values: Sequence[Sequence[float]]) -> list[str]:
    return ["[" + ", ".join(f"{v:.4f}" for v in pair) + "]" for pair in values]


def variant_table(results: dict[str, Any], tail: str, ablation: str) -> str:
    """Markdown table: the chosen variant beside the paper's, per seed."""
    rows = []

    def fmt(values: Any) -> str:
        if isinstance(values, list):
            return ", ".join(fmt(v) for v in values)
        return f"{values:.4f}" if isinstance(values, float) else str(values)

    ours_o, ours_s = r2_ratios(results)
    pap_o, pap_s = r2_ratios(results, "_paper")
    for label, a, b in [
        ("core rank", results["core_ranks"], results["core_ranks_paper"]),
        ("core-only accuracy", results["keep_acc"], results["keep_acc_paper"]),
        ("core-removed accuracy", results["remove_acc"], results["remove_acc_paper"]),
        ("max eigenvalue error (absolute)", results["eig_max_error"], results["eig_max_error_paper"]),
        (
            "max relative eigenvalue error",
            [max(e) for e in results["eig_rel_error"]],
            [max(e) for e in results["eig_rel_error_paper"]],
        ),
        ("R² / R²_oracle", ours_o, pap_o),
        ("R² / r2_state", ours_s, pap_s),
        ("projector overlap (pairs)", results["projector_overlap"], results["projector_overlap_paper"]),
        ("canonical correlations (pairs; ours: top n − 1, paper's: top 3)", _pairs(results["cca"]), _pairs(results["cca_paper"])),
    ]:
        rows.append((label, fmt(a), fmt(b)))
    return markdown_table(("quantity", f"ours ({tail}, {ablation})", "paper's variant (logits, zero)"), rows)


def ablation_table(results: dict[str, Any], prefix: str = "", chain: int | None = None) -> str:
    """Markdown 2×2 table of the mean core-only / core-removed accuracy for every (tail, ablation).

    ``prefix="extra_"`` with ``chain=c`` reads extra chain ``c``.
    """

    def get(key: str) -> Any:
        value = results[prefix + key]
        return value if chain is None else value[chain]

    rows = []
    for t in TAILS:
        cells = [f"{np.mean(get(f'keep_acc_{t}_{a}')):.4f} / {np.mean(get(f'remove_acc_{t}_{a}')):.4f}" for a in ABLATIONS]
        rows.append((f"{t} (rank {get(f'core_ranks_{t}')})", *cells))
    return markdown_table(("tail \\ ablation", *(f"{a}: core only / removed" for a in ABLATIONS)), rows)


def extra_table(results: dict[str, Any]) -> str:
    """Markdown table of the extra chains (one row per chain, seeds joined)."""
    header = (
        "chain",
        "n",
        "rank (centered)",
        "rank (logits)",
        "eigenvalues of T",
        "max relative eig. error (floor)",
        "R²/r2_state",
        "R²/R²_oracle",
        "full / core-only / removed / chance",
    )
    rows = []
    for c, n in enumerate(results["extra_n_states"]):
        eigs = ", ".join(f"{re:.3f}{im:+.3f}i" if abs(im) > 1e-9 else f"{re:.3f}" for re, im in results["extra_true_eigs"][c])
        r2, r2s, r2o = results["extra_r2"][c], results["extra_r2_state"][c], results["extra_r2_oracle"][c]
        acc = (
            f"{np.mean(results['extra_base_acc'][c]):.3f} / {np.mean(results['extra_keep_acc'][c]):.3f} / "
            f"{np.mean(results['extra_remove_acc'][c]):.3f} / {results['extra_chance_acc'][c]:.3f}"
        )
        rows.append(
            (
                f"{c + 1}",
                f"{n}",
                f"{results['extra_core_ranks_centered'][c]}",
                f"{results['extra_core_ranks_logits'][c]}",
                eigs,
                (
                    f"{', '.join(f'{100 * max(e):.2f} %' for e in results['extra_eig_rel_error'][c])} "
                    f"({100 * max(results['extra_eig_rel_floor'][c]):.2f} %)"
                ),
                ", ".join(f"{a / b:.3f}" for a, b in zip(r2, r2s)),
                ", ".join(f"{a / r2o:.3f}" for a in r2),
                acc,
            )
        )
    return markdown_table(header, rows)


def _lam(re: float, im: float) -> str:
    return f"{re:.3g} {'+' if im >= 0 else '−'} {abs(im):.3g}i" if abs(im) > 1e-9 else f"{re:.3g}"


def eigen_table(results: dict[str, Any]) -> str:
    """Markdown table of the relative eigenvalue errors ``|λ̂ − λ|/|λ|``: one row per true non-unit
    eigenvalue, one column per seed, then the fit on the current-state means (largest over seeds)
    and the test steps' sampling floor."""
    seeds = len(results["eig_rel_error"])
    header = ("true λ (|λ|)", *(f"seed {s + 1}" for s in range(seeds)), "fit on current-state means", "sampling floor")
    rows = []
    for i, (re, im) in enumerate(results["true_eigs"]):
        cells = [f"{100 * results['eig_rel_error'][s][i]:.2f} %" for s in range(seeds)]
        state = max(e[i] for e in results["eig_rel_error_state"])
        rows.append(
            (
                f"{_lam(re, im)} ({np.hypot(re, im):.3f})",
                *cells,
                f"{100 * state:.2f} %",
                f"{100 * results['eig_rel_floor'][i]:.2f} %",
            )
        )
    return markdown_table(header, rows)


def _range(values: Sequence[float], fmt: str = ".3f") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}–{hi:{fmt}}"


def prose_numbers(results: dict[str, Any]) -> dict[str, str]:
    """The numbers the chapter's text quotes, formatted (the notebook glues each under its key)."""
    eig = eigen_summary(results)
    real = [i for i, (_, im) in enumerate(results["true_eigs"]) if abs(im) <= 1e-9]
    cplx = [i for i in range(len(results["true_eigs"])) if i not in real]
    per_eig = np.asarray(results["eig_rel_error"])  # (seeds, eigenvalues)
    angles = [a for pair in results["principal_angles"] for a in pair]
    top2 = [v for c in results["cca"] for v in c[:2]]
    third = [c[2] for c in results["cca"] if len(c) > 2]
    out = {
        "weight_cos": _range(results["weight_cosine"]),
        "overlap_range": _range(results["projector_overlap"]),
        "random_overlap": f"{results['random_overlap']:.3f}",
        "angle_range": f"{min(angles):.0f}–{max(angles):.0f}°",
        "cca_top2": _range(top2, ".4f"),
        "cca_third": _range(third, ".3f") if third else "n/a",
        "eig_max": f"{100 * eig['max']:.1f} %",
        "eig_floor": f"{100 * eig['floor_max']:.2f} %",
        "eig_state": f"{100 * (eig['state_max'] or 0.0):.2f} %",
        "ratio_oracle": _range(r2_ratios(results)[0]),
        **dict.fromkeys(("eig_complex", "eig_real", "weak_unset", "strong_unset", "weak_energy"), "n/a"),
    }
    if cplx:
        out["eig_complex"] = _range(100 * per_eig[:, cplx].ravel(), ".1f") + " %"
    if real:
        out["eig_real"] = _range(100 * per_eig[:, real].ravel(), ".1f") + " %"
        weakest = [r2[-1] for r2 in results["coord_state_r2"]]
        out["weak_unset"] = _range([100 * (1 - v) for v in weakest], ".0f") + " %"
        others = [v for r2 in results["coord_state_r2"] for v in r2[:-1]]
        out["strong_unset"] = _range([100 * (1 - v) for v in others], ".1f") + " %" if others else "n/a"
        out["weak_energy"] = (
            _range([100 * s[len(r2) - 1] for s, r2 in zip(results["energy_shares_centered"], results["coord_state_r2"])], ".1f")
            + " %"
        )
    return out
