"""Chapter 5 panels (subject–verb agreement in LLMs). Each function returns the Figure it drew.

Panel names follow the paper's subject–verb agreement figure (Schiffman 2026, arXiv 2602.22600):
A the layer sweep, B the knob, C the flip demo; D (steered generation), E (cross-model
alignment) and F (controls at the chosen layer) are ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ace_helpers.repro.style import COLUMN_INCHES, OKABE, panel_grid, set_style
from ace_helpers.repro.tables import markdown_table

_MODE_STYLE = {
    "base": ("Base", "0.3", "-"),
    "keep": ("Core only (+)", OKABE["green"], "-"),
    "remove": ("Core removed (−)", OKABE["orange"], "-"),
    "flip": ("Core flipped (↔)", OKABE["purple"], "-"),
}
NUMBERS = ((0, OKABE["blue"], "singular"), (1, OKABE["vermillion"], "plural"))  # label value, colour, name
TITLES = {"base": "clean", "removed": "core removed", "flipped": "core flipped"}  # the flip demo's conditions, titled


def plot_auc_depth(curves: Sequence[Mapping], *, chosen: Mapping[str, int] | None = None):
    """Panel A (paper): test ROC-AUC vs normalised depth ℓ/n_layers, one axes per model.

    Args:
        curves: per model ``{"name", "layers" (L,), "n_layers", "base" (float), "keep"/"remove"/"flip" (L,)}``.
        chosen: model name -> chosen layer (marked with a vertical line).
    """
    set_style()
    fig, axes = panel_grid(len(curves), width=5.2, height=3.8, sharey=True)
    for ax, c in zip(axes, curves):
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
    for ax in axes[:: min(2, len(axes))]:
        ax.set_ylabel("ROC-AUC of margin (plural = 1)")
    for ax in axes:
        ax.legend(loc="lower left", fontsize=10)
    fig.tight_layout()
    return fig


def _z(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, float)
    return (x - x.mean()) / (x.std() or 1.0)


def plot_knob(knobs: Mapping[str, Mapping]):
    """Panel B (paper): z-scored core coordinate vs z-scored margin, plural above singular, affine fit and R².

    Args:
        knobs: model name -> ``{"z" (N,), "m" (N,), "labels" (N,), "r2"}``, optionally ``"r2_singular"``
            and ``"r2_plural"`` (within-class R², shown in the legend).
    """
    set_style()
    fig, axes = panel_grid(len(knobs), width=5.0, height=4.0)
    for ax, (name, k) in zip(axes, knobs.items()):
        z, m, lab = _z(k["z"]), _z(k["m"]), np.asarray(k["labels"])
        if z[lab == 1].mean() < z[lab == 0].mean():  # the axis sign is arbitrary: plural to the right
            z = -z
        for value, color, text in NUMBERS:
            within = k.get(f"r2_{text}")
            label = text if within is None else f"{text} (within-class R² = {within:.2f})"
            ax.scatter(z[lab == value], m[lab == value], s=10, alpha=0.6, color=color, label=label)
        slope, intercept = np.polyfit(z, m, 1)
        grid = np.linspace(z.min(), z.max(), 50)
        ax.plot(grid, slope * grid + intercept, color="k", lw=1.2, label=f"affine fit, pooled R² = {k['r2']:.2f}")
        ax.set(title=f"B (paper): the knob, {name}", xlabel="core coordinate z (z-scored, SD units)",
               ylabel="margin m (z-scored, SD units)")
        ax.legend(fontsize=10)
    fig.tight_layout()
    return fig


def plot_flip_demo(probs: Mapping[str, Mapping[str, np.ndarray]], prompts: Sequence[str]):
    """Panel C (paper): P(is/are/was/were) per demo prompt under clean / removed / flipped, per model.

    Args:
        probs: model name -> condition (``base``, ``removed``, ``flipped``) -> (P, 4) probabilities.
        prompts: the P prompt texts.
    """
    set_style()
    conds = tuple(TITLES)
    fig, axes = plt.subplots(len(probs), 3, figsize=(10.5, 0.45 * len(prompts) * len(probs) + 1.4), squeeze=False, sharex=True)
    colors = (OKABE["blue"], OKABE["vermillion"], OKABE["sky"], "#F4B183")  # is, are; was, were in lighter tints
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
            ax.set_yticklabels(prompts if col == 0 else [""] * len(prompts), fontsize=10)
            ax.invert_yaxis()
            ax.set_title(f"{name}: {TITLES[cond]}", fontsize=10)
    axes[-1][1].set_xlabel("share of the four verbs' probability")
    fig.suptitle("C (paper): flip demo", fontsize=11)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", fontsize=10, ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.4 / fig.get_figheight(), 1, 1))  # room for the legend below the panels
    return fig


def plot_generation(rates: Mapping[str, Mapping[str, float]]):
    """Panel D (ours): fraction of generations whose copulas mostly disagree with the clean model's number.

    Args:
        rates: model name -> ``{"clean": rate, "official": rate}`` and optionally ``"refined"`` (None or
            NaN: not run).
    """
    set_style()
    fig, ax = plt.subplots(figsize=(min(COLUMN_INCHES, 3.0 + 1.8 * len(rates)), 3.4))
    names = list(rates)
    x = np.arange(len(names))
    bars = (("clean", "0.6", "clean texts"), ("official", OKABE["orange"], "official calibration (1 nat, one step)"),
            ("refined", OKABE["blue"], "refined calibration (ours)"))  # fmt: skip
    width = 0.8 / len(bars)
    for k, (key, color, label) in enumerate(bars):
        values = [rates[n].get(key) for n in names]
        values = [np.nan if v is None else v for v in values]
        ax.bar(x + (k - 1) * width, values, width=width, color=color, label=label)
    ax.axhline(0.7, color="k", lw=1, ls=":", label="our acceptance line (0.7)")
    ax.set_xticks(x)
    ax.set_xticklabels(names)
    ax.set(ylim=(0, 1.05), ylabel="share of generations\nwith verb number changed", title="D (ours): steered generation")
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)  # below the bars, never over them
    fig.tight_layout()
    return fig


def plot_controls(controls: Mapping[str, Mapping[str, object]]):
    """Panel F (ours): AUC under keep / remove / flip at the chosen layer for the core, the difference of
    means and random directions (each dot one direction), one axes per model.

    Args:
        controls: model name -> ``{"base": float, "ace": {mode: auc}, "dom": {mode: auc},
            "random": {mode: (K,) aucs}, "matched": {"remove": (K,), "flip": (K,)}}``.
    """
    set_style()
    modes = ("keep", "remove", "flip")
    fig, axes = panel_grid(len(controls), width=5.2, height=3.8, sharey=True)
    for ax, (name, c) in zip(axes, controls.items()):
        x = np.arange(len(modes))
        for k, mode in enumerate(modes):
            r = np.asarray(c["random"][mode])
            ax.scatter(np.full(r.shape, k - 0.2), r, s=12, color="0.65", label="random direction (edited as the core)" if k == 0 else None)
            if mode in c["matched"]:
                rm = np.asarray(c["matched"][mode])
                ax.scatter(np.full(rm.shape, k), rm, s=12, marker="x", color="0.35",
                           label="random direction, the core's displacement" if k == 1 else None)
        ax.scatter(x + 0.2, [c["dom"][m] for m in modes], s=40, marker="s", color=OKABE["blue"], label="difference of means")
        ax.scatter(x + 0.2, [c["ace"][m] for m in modes], s=50, marker="D", color=OKABE["vermillion"], label="ACE core")
        ax.axhline(c["base"], color="0.3", ls="--", lw=1, label="base")
        ax.axhline(0.5, color="0.8", lw=1, label="chance (0.5)")
        ax.set_xticks(x)
        ax.set_xticklabels(["core only (+)", "core removed (−)", "core flipped (↔)"])
        ax.set(title=f"F (ours): controls, {name}", ylim=(-0.02, 1.02))
    for ax in axes[:: min(2, len(axes))]:
        ax.set_ylabel("ROC-AUC of margin (plural = 1)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", fontsize=10, ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 1.0 / fig.get_figheight(), 1, 1))  # room for the legend below the panels
    return fig


def plot_alignment(coords: Mapping[str, np.ndarray], labels: np.ndarray):
    """Panel E (ours): per-prompt core coordinates of one model against another (sign-aligned), per pair."""
    set_style()
    names = list(coords)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    fig, axes = panel_grid(len(pairs), width=4.6, height=4.2, max_cols=2)
    labels = np.asarray(labels)
    for ax, (a, b) in zip(axes, pairs):
        za, zb = _z(coords[a]), _z(coords[b])
        if np.corrcoef(za, zb)[0, 1] < 0:
            zb = -zb
        for value, color, text in NUMBERS:
            ax.scatter(za[labels == value], zb[labels == value], s=10, alpha=0.6, color=color, label=text)
        ax.set(title=f"E (ours): {a} vs {b}", xlabel=f"{a}: core coordinate (z)", ylabel=f"{b}: core coordinate (z)")
        ax.legend(fontsize=10)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- tables (markdown, from the flat results)


def _f(x, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _range(values) -> str:
    v = np.asarray(values, float)
    return f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]"


def sweep_table(flat: Mapping[str, object], models: Sequence[str]) -> str:
    """Markdown: per model the chosen layer, base / keep / remove / flip AUC and the spectral gap."""
    rows = []
    for n in models:
        g = lambda k: flat[f"{n}.{k}"]  # noqa: E731
        rows.append((n, f"{g('chosen_layer')} / {g('n_layers')}", _f(g("auc_base")), _f(g("auc_keep")), _f(g("auc_remove")),
                     _f(g("auc_flip")), f"{g('spectral_gap'):.1f}"))  # fmt: skip
    header = ("model", "chosen layer ℓ", "base AUC", "core only (+)", "core removed (−)", "core flipped (↔)", "gap w1/w2")
    return markdown_table(header, rows)


def controls_table(flat: Mapping[str, object], models: Sequence[str]) -> str:
    """Markdown: AUC under keep / remove / flip at the chosen layer for the core, the difference of means
    and the random directions (median [min, max]), edited as the core is and with its displacement."""
    rows = []
    for n in models:
        g = lambda k: flat[f"{n}.{k}"]  # noqa: E731
        k = len(g("auc_random_keep"))
        rows += [
            (n, "ACE core", _f(g("auc_keep")), _f(g("auc_remove")), _f(g("auc_flip"))),
            (n, f"difference of means (|cos| with the core {_f(g('cos_core_dom'), 2)})", _f(g("auc_dom_keep")),
             _f(g("auc_dom_remove")), _f(g("auc_dom_flip"))),
            (n, f"{k} random directions, edited as the core", _range(g("auc_random_keep")), _range(g("auc_random_remove")),
             _range(g("auc_random_flip"))),
            (n, f"{k} random directions, the core's displacement", "—", _range(g("auc_random_matched_remove")),
             _range(g("auc_random_matched_flip"))),
        ]  # fmt: skip
    return markdown_table(("model", "direction", "core only (+)", "core removed (−)", "core flipped (↔)"), rows)


def removal_table(flat: Mapping[str, object], models: Sequence[str]) -> str:
    """Markdown: mean vs zero ablation of the core (AUC, mean margins per class, where the coordinate
    is set) and the attractor-free prompts."""
    rows, free = [], []
    for n in models:
        g = lambda k: flat[f"{n}.{k}"]  # noqa: E731
        mc, mm, mz = g("mean_margin_clean"), g("mean_margin_remove"), g("mean_margin_remove_zero")
        cs, cp = g("coord_singular"), g("coord_plural")
        rows += [
            (n, "none (clean)", f"its own value (class means {cs:.3g}, {cp:.3g})", _f(g("auc_base")), f"{mc[0]:.2f}, {mc[1]:.2f}"),
            (n, "mean ablation h − qqᵀ(h − μ)", "the mean's, 0", _f(g("auc_remove")), f"{mm[0]:.2f}, {mm[1]:.2f}"),
            (n, "zero ablation h − qqᵀh", f"the zero vector's, {g('coord_zero'):.3g}", _f(g("auc_ace_remove_zero")),
             f"{mz[0]:.2f}, {mz[1]:.2f}"),
        ]  # fmt: skip
        free.append((n, _f(g("auc_free_base")), _f(g("auc_free_keep")), _f(g("auc_free_remove")), _f(g("auc_free_flip"))))
    header = ("model", "removal", "sets the core coordinate to", "AUC", "mean margin: singular, plural")
    free_header = ("model", "attractor-free prompts: base", "core only (+)", "core removed (−)", "core flipped (↔)")
    return markdown_table(header, rows) + "\n\n" + markdown_table(free_header, free)


def knob_table(flat: Mapping[str, object], models: Sequence[str]) -> str:
    """Markdown: knob R² pooled (with the label-only null) and within each class, with permutation p."""
    rows = []
    for n in models:
        g = lambda k: flat[f"{n}.{k}"]  # noqa: E731
        rows.append((n, _f(g("knob_r2")), _f(g("knob_r2_label_null")), f"{g('knob_p_label_preserving'):.2g}",
                     f"{_f(g('knob_r2_singular'))} ({g('knob_p_singular'):.2g})",
                     f"{_f(g('knob_r2_plural'))} ({g('knob_p_plural'):.2g})"))  # fmt: skip
    header = ("model", "pooled R²", "label-only null (median R²)", "p (label-preserving)", "singular R² (p)", "plural R² (p)")
    return markdown_table(header, rows)


def demo_table(flat: Mapping[str, object], models: Sequence[str], prompts: Sequence[str], shifts: Mapping[str, Sequence[float]]) -> str:
    """Markdown: per model and demo prompt, the core coordinate, the own-number share of the four verbs'
    probability (clean / removed / flipped), the margin m clean and flipped, and the flip's shift towards
    the other number (``shifts``: model -> per-prompt nats)."""
    header = ("model", "prompt", "number", "z", "own-number share: clean", "removed", "flipped", "m clean", "m flipped",
              "shift (nats)")  # fmt: skip
    labels = flat["demo_labels"]
    rows = []
    for n in models:
        g = lambda k: flat[f"{n}.{k}"]  # noqa: E731
        for i, text in enumerate(prompts):
            rows.append((n, text, "plural" if labels[i] else "singular", f"{g('demo_coord')[i]:.3g}",
                         f"{g('demo_share_base')[i]:.2f}", f"{g('demo_share_removed')[i]:.2f}", f"{g('demo_share_flipped')[i]:.2f}",
                         f"{g('demo_margin_base')[i]:.2f}", f"{g('demo_margin_flipped')[i]:.2f}", f"{shifts[n][i]:+.2f}"))  # fmt: skip
    return markdown_table(header, rows)


def generation_table(flat: Mapping[str, object], models: Sequence[str]) -> str:
    """Markdown: per model and calibration rule, the share of generations changed, how many were scored,
    the share of steps landing on the other side and the median achieved push."""
    rows = []
    for n in models:
        g = lambda k: flat.get(f"{n}.{k}")  # noqa: E731
        rows.append((n, "clean texts (no edit)", _f(g("generation_baseline_rate")), "—", "—", "—"))
        for rule, text in (("official", "official: one secant step to 1 nat"), ("refined", "refined (ours)")):
            if g(f"generation_{rule}_scored") is None:
                continue
            rows.append((n, text, _f(g(f"generation_{rule}_rate")), f"{g(f'generation_{rule}_scored')}",
                         _f(g(f"generation_{rule}_landed")), _f(g(f"generation_{rule}_push"), 2)))  # fmt: skip
    header = ("model", "calibration", "generations changed", "scored", "steps on the other side", "median push (nats)")
    return markdown_table(header, rows)


def alignment_table(flat: Mapping[str, object]) -> str:
    """Markdown: per model pair, the sign-aligned Spearman pooled (random-pairing and label-preserving p,
    the label-only null's median) and within each class."""
    rows = []
    for key in flat.get("pairwise_spearman", {}):
        g = lambda f: flat[f"pairwise_{f}"][key]  # noqa: E731
        rows.append((key.replace("~", " vs "), _f(g("spearman")), _f(g("pearson")), f"{g('p_value'):.2g}", _f(g("label_null")),
                     f"{g('p_label_preserving'):.2g}", f"{_f(g('spearman_singular'))} ({g('p_singular'):.2g})",
                     f"{_f(g('spearman_plural'))} ({g('p_plural'):.2g})"))  # fmt: skip
    header = ("models", "pooled Spearman", "Pearson", "p (random pairing)", "label-only null (median)", "p (label-preserving)",
              "singular ρ (p)", "plural ρ (p)")  # fmt: skip
    return markdown_table(header, rows)


def alignment_matrix(flat: Mapping[str, object], models: Sequence[str]) -> str:
    """Markdown: the models × models matrix of the sign-aligned Spearman of the core coordinates, pooled above the
    diagonal and, below it, within class (singular / plural) beside the label-only null's median pooled value."""
    pooled = flat.get("pairwise_spearman", {})

    pair = lambda a, b: f"{a}~{b}" if f"{a}~{b}" in pooled else f"{b}~{a}" if f"{b}~{a}" in pooled else None  # noqa: E731
    rows = []
    for i, a in enumerate(models):
        cells = []
        for j, b in enumerate(models):
            key = pair(a, b)
            if i == j or key is None:
                cells.append("—")
            elif i < j:
                cells.append(f"{_f(pooled[key])} (null {_f(flat['pairwise_label_null'][key])})")
            else:
                cells.append(f"{_f(flat['pairwise_spearman_singular'][key])} / {_f(flat['pairwise_spearman_plural'][key])}")
        rows.append((a, *cells))
    return markdown_table(("", *models), rows)


def _each(flat: Mapping[str, object], models: Sequence[str], key: str, digits: int = 3) -> str:
    """``"0.296 (smollm2-135m), 0.255 (gemma3-270m)"``: one value per model."""
    return ", ".join(f"{_f(flat.get(f'{n}.{key}'), digits)} ({n})" for n in models)


def readings(flat: Mapping[str, object], models: Sequence[str], prompts: Sequence[str],
             shifts: Mapping[str, Sequence[float]]) -> dict[str, str]:  # fmt: skip
    """Sentences and number lists the chapter's prose quotes (glued), computed from the flat results, so
    that the text says what this run measured. Keys: ``remove_auc``, ``remove_verdict``, ``zero_auc``,
    ``zero_side``, ``dom_remove``,
    ``free_remove``, ``free_flip``, ``random_flip``, ``random_flip_below``, ``dom_flip``, ``knob_pooled``, ``knob_null``,
    ``knob_within``, ``demo_moved``, ``demo_stay``, ``gen_official``, ``gen_refined``, ``gen_push``,
    ``align``."""
    removes = [flat[f"{n}.auc_remove"] for n in models]
    if all(r < 0.4 for r in removes):
        verdict = "below 0.4 in every model: removing the core *inverts* agreement instead of destroying it"
    elif all(abs(r - 0.5) <= 0.1 for r in removes):
        verdict = "within 0.1 of chance in every model: removing the core destroys agreement"
    else:
        verdict = "neither at chance nor inverted in every model"
    stay = []
    for n in models:
        share = flat.get(f"{n}.demo_share_flipped") or []
        items = [f"“{prompts[i]}” ({shifts[n][i]:+.1f} nats)" for i, s in enumerate(share) if s >= 0.5]
        stay.append(f"{n}: {'; '.join(items) if items else 'none'}")
    moved = ", ".join(f"{sum(s < 0.5 for s in flat.get(f'{n}.demo_share_flipped') or [])} of "
                      f"{len(flat.get(f'{n}.demo_share_flipped') or [])} prompts ({n})" for n in models)  # fmt: skip
    within = "; ".join(f"{n}: singular {_f(flat[f'{n}.knob_r2_singular'])}, plural {_f(flat[f'{n}.knob_r2_plural'])}"
                       for n in models)  # fmt: skip
    align = "; ".join(f"{k.replace('~', ' vs ')}: pooled ρ {_f(v)} against a label-only null median of "
                      f"{_f(flat['pairwise_label_null'][k])}, within class {_f(flat['pairwise_spearman_singular'][k])} "
                      f"(singular) and {_f(flat['pairwise_spearman_plural'][k])} (plural)"
                      for k, v in flat.get("pairwise_spearman", {}).items())  # fmt: skip
    rand = ", ".join(f"{np.median(flat[f'{n}.auc_random_matched_flip']):.3f} ({n})" for n in models
                     if flat.get(f"{n}.auc_random_matched_flip"))  # fmt: skip
    below = ", ".join(f"{sum(v < 0.5 for v in flat[f'{n}.auc_random_matched_flip'])} of "
                      f"{len(flat[f'{n}.auc_random_matched_flip'])} ({n})" for n in models
                      if flat.get(f"{n}.auc_random_matched_flip"))  # fmt: skip
    sides = []
    for n in models:
        mz = flat.get(f"{n}.mean_margin_remove_zero")
        if mz is not None:
            where = ("both numbers' mean margins plural" if min(mz) > 0 else "both numbers' mean margins singular"
                     if max(mz) < 0 else "the two numbers' mean margins on either side")  # fmt: skip
            sides.append(f"zero ablation: {where} in {n}")
    return {
        "remove_auc": _each(flat, models, "auc_remove"), "remove_verdict": verdict,
        "zero_auc": _each(flat, models, "auc_ace_remove_zero"), "free_remove": _each(flat, models, "auc_free_remove"),
        "free_flip": _each(flat, models, "auc_free_flip"), "random_flip": rand or "—",
        "random_flip_below": below or "—",
        "dom_flip": _each(flat, models, "auc_dom_flip"), "dom_remove": _each(flat, models, "auc_dom_remove"),
        "zero_side": "; ".join(sides) or "—", "knob_pooled": _each(flat, models, "knob_r2"),
        "knob_null": _each(flat, models, "knob_r2_label_null"), "knob_within": within, "demo_moved": moved,
        "demo_stay": "; ".join(stay), "gen_official": _each(flat, models, "generation_official_rate", 2),
        "gen_refined": _each(flat, models, "generation_refined_rate", 2),
        "gen_push": _each(flat, models, "generation_official_push", 2), "align": align or "—",
    }  # fmt: skip
