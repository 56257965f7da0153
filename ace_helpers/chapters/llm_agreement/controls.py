"""Chapter 5 controls at the chosen layer: other directions, another removal, prompts without an attractor.

Every control edits the same position (the last prompt token) at the same layer as the core, and is
scored by the same ROC-AUC of the margin on the test prompts:

* **random directions** — ``n_random`` isotropic unit directions r (the core's norm), edited as the
  core is (keep μ + rrᵀ(h − μ), remove h − rrᵀ(h − μ), flip h − 2rrᵀ(h − μ)); and, because a random
  direction carries little variance, moved as far as the core's edit moves each prompt
  (*matched displacement*: remove h − z·r, flip h − 2z·r, with z = qᵀ(h − μ) the prompt's core
  coordinate), so that the size of the push is the same and only its direction differs;
* **difference of means** — the unit direction between the plural and singular training means, the
  supervised baseline (ACE itself never sees the labels);
* **zero ablation** — the core projected out without adding back the mean coordinate (h − qqᵀh),
  beside the mean ablation of the paper's code (h − qqᵀ(h − μ): project out, add back qqᵀμ);
* **attractor-free prompts** — the same heads with no second noun (:func:`attractor_free_prompts`),
  edited with the same core: whether removal's inversion needs the opposite-number attractor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ace_helpers.llm.agreement import PLURAL_HEADS, SINGULAR_HEADS, AgreementSplit
from ace_helpers.llm.agreement_edits import edit_margins
from ace_helpers.llm.edits import core_edits
from ace_helpers.method import stats
from ace_helpers.method.core import Core

FREE_FRAMES = ("The {head}", "In the past, the {head}", "The {head} in the old kingdom", "The {head} on most days")
"""Frames of the attractor-free prompts (the synthetic set's heads, prefix and back pads, no second noun)."""

RANDOM_MODES = ("keep", "remove", "flip", "matched_remove", "matched_flip")
"""The random-direction edits: as the core's, and with the core's per-prompt displacement (matched)."""


def attractor_free_prompts() -> tuple[list[str], np.ndarray]:
    """Prompts with a head noun and no attractor: every head of the synthetic set in every
    :data:`FREE_FRAMES` frame; labels (1 = plural). Returns (72 prompts, (72,) labels)."""
    prompts, labels = [], []
    for label, heads in ((0, SINGULAR_HEADS), (1, PLURAL_HEADS)):
        for head in heads:
            for frame in FREE_FRAMES:
                prompts.append(frame.format(head=head))
                labels.append(label)
    return prompts, np.array(labels)


def unit_core(direction: np.ndarray, mean: np.ndarray) -> Core:
    """A 1-D :class:`~ace_helpers.method.core.Core` along ``direction`` (D,) (normalised) about ``mean`` (D,)."""
    u = np.asarray(direction, float)
    norm = np.linalg.norm(u)
    if norm == 0:
        raise ValueError("a control direction must not be zero")
    return Core(full_basis=(u / norm)[:, None], weights=np.ones(1), rank=1, mean=np.asarray(mean, float))


def random_directions(dim: int, k: int, seed: int = 0) -> np.ndarray:
    """(k, dim) isotropic random unit directions (seeded)."""
    r = np.random.default_rng(seed).normal(size=(k, dim))
    return r / np.linalg.norm(r, axis=1, keepdims=True)


def mean_difference_direction(h: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(D,) unit direction from the singular to the plural mean of the states ``h`` (N, D)."""
    h, labels = np.asarray(h, float), np.asarray(labels)
    d = h[labels == 1].mean(0) - h[labels == 0].mean(0)
    return d / np.linalg.norm(d)


def _matched(core: Core, direction: np.ndarray, factor: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """h − factor · qᵀ(h − μ) · r: the core edit's per-prompt displacement, along the unit ``direction`` r."""
    core = core.compact()

    def fn(h: torch.Tensor) -> torch.Tensor:
        r = torch.as_tensor(direction, dtype=h.dtype, device=h.device)
        return h - factor * core.coords(h, centered=True) * r

    return fn


def _zero_remove(core: Core) -> Callable[[torch.Tensor], torch.Tensor]:
    core = core.compact()
    return lambda h: core.remove(h, centered=False)


@dataclass
class Controls:
    """The controls of one model at its chosen layer (AUCs of the margin on the test prompts).

    Attributes:
        auc: ``"ace.keep"``, ``"ace.remove"``, ``"ace.flip"``, ``"ace.remove_zero"`` (zero ablation),
            ``"dom.keep"``, ``"dom.remove"``, ``"dom.flip"`` (difference of means).
        auc_random: edit of :data:`RANDOM_MODES` -> (K,) AUCs over the K random directions.
        auc_free: ``"base"``, ``"keep"``, ``"remove"``, ``"flip"`` on the attractor-free prompts.
        cos_core_dom: ``|cos|`` between the core and the difference-of-means direction.
        mean_margin: ``"clean"``, ``"remove"``, ``"remove_zero"`` -> [singular, plural] mean test margins.
        coord: centred core coordinates qᵀ(x − μ): ``"singular"`` / ``"plural"`` (training class
            means) and ``"zero"`` (x = 0, where zero ablation sets every prompt).
    """

    auc: dict[str, float]
    auc_random: dict[str, np.ndarray]
    auc_free: dict[str, float]
    cos_core_dom: float
    mean_margin: dict[str, list[float]]
    coord: dict[str, float]

    def flat(self) -> dict[str, object]:
        """``results.json`` entries (unprefixed; see :mod:`~ace_helpers.chapters.llm_agreement.pipeline` for the keys)."""
        out: dict[str, object] = {f"auc_{k.replace('.', '_')}": v for k, v in self.auc.items()}
        out.update({f"auc_random_{m}": self.auc_random[m] for m in RANDOM_MODES})
        out.update({f"auc_free_{k}": v for k, v in self.auc_free.items()})
        out["cos_core_dom"] = self.cos_core_dom
        out.update({f"mean_margin_{k}": v for k, v in self.mean_margin.items()})
        out.update({f"coord_{k}": v for k, v in self.coord.items()})
        return out


def run_controls(
    lm,
    tokenizer,
    data: AgreementSplit,
    layer: int,
    core: Core,
    train_h: np.ndarray,
    test_margin: np.ndarray,
    *,
    n_random: int = 16,
    seed: int = 0,
    batch_size: int = 25,
    remote: bool | str = False,
) -> Controls:
    """Every control of :mod:`.controls` at ``layer`` (train states ``train_h`` (N, D) for the
    difference of means; ``test_margin`` (N,) the clean test margins)."""
    mu = core.mean
    dom = unit_core(mean_difference_direction(train_h, data.train_labels), mu)
    rand = random_directions(core.dim, n_random, seed)
    edits = core_edits(core) + [_zero_remove(core)] + core_edits(dom)
    for r in rand:
        edits += core_edits(unit_core(r, mu)) + [_matched(core, r, 1.0), _matched(core, r, 2.0)]
    m = edit_margins(lm, tokenizer, data.test_prompts, layer, edits, batch_size=batch_size, remote=remote)
    y = data.test_labels
    auc = [stats.roc_auc(row, y) for row in m]
    names = ["ace.keep", "ace.remove", "ace.flip", "ace.remove_zero", "dom.keep", "dom.remove", "dom.flip"]
    rand_auc = np.array(auc[len(names):]).reshape(n_random, len(RANDOM_MODES))
    free, free_y = attractor_free_prompts()
    mf = edit_margins(lm, tokenizer, free, layer, [lambda h: h, *core_edits(core)], batch_size=batch_size, remote=remote)
    q = core.basis[:, 0]
    h = np.asarray(train_h, float)
    by_class = lambda v: [float(v[y == 0].mean()), float(v[y == 1].mean())]  # noqa: E731
    return Controls(
        auc=dict(zip(names, auc[: len(names)])),
        auc_random={mode: rand_auc[:, k] for k, mode in enumerate(RANDOM_MODES)},
        auc_free={k: stats.roc_auc(row, free_y) for k, row in zip(("base", "keep", "remove", "flip"), mf)},
        cos_core_dom=float(abs(q @ dom.basis[:, 0])),
        mean_margin={"clean": by_class(test_margin), "remove": by_class(m[1]), "remove_zero": by_class(m[3])},
        coord={"singular": float((h[data.train_labels == 0].mean(0) - mu) @ q),
               "plural": float((h[data.train_labels == 1].mean(0) - mu) @ q), "zero": float(-mu @ q)},
    )


def random_summary(values: Sequence[float]) -> tuple[float, float, float]:
    """(min, median, max) of the random directions' AUCs."""
    v = np.asarray(values, float)
    return float(v.min()), float(np.median(v)), float(v.max())
