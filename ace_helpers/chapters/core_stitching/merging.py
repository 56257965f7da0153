"""Chapter 7's merging paths: two models of one setting merged along α ∈ :data:`ALPHAS`, scored on the test inputs.

For a pair (A, B), merged into A:

* ``weights``: naive weight interpolation, ``(1 − α)·θ_A + α·θ_B`` (:func:`ace_helpers.method.merging.interpolate_weights`);
* ``activations``: A run with its whole activation at the hook set to ``(1 − α)·h_A + α·h_B`` (the naive merge
  of representations: nothing aligned);
* ``core_aligned``: A run with its core coordinates set to ``(1 − α)·z_A + α·ẑ_B``, ẑ_B = B's core coordinates
  carried into A's core by the least-squares map fitted on the training inputs (the chapter's stitching map,
  B → A); the rest of A's activation is kept;
* ``full_aligned``: the same with the whole activation and a full-rank map (D × D instead of r_B × r_A).

At α = 0 every path is model A; at α = 1 the weight path is model B and ``core_aligned`` is the stitch of
B's core into A on the same input.  Results: ``{"pair", "alphas", "acc": {path: [acc per α]}, "chance"}``.
"""

from __future__ import annotations

from typing import Any

import torch

from ace_helpers.chapters.toy_views.views import View
from ace_helpers.method.merging import blend, interpolate_weights
from ace_helpers.method.stitching import Chart, core_chart, fit_linear_map, full_chart, stitched_predictions

#: The interpolation weights of B (0: model A, 1: model B).
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: The merges, in the order the tables show them.
PATHS = ("weights", "activations", "core_aligned", "full_aligned")
BATCH = 512


def accuracy(preds: torch.Tensor, targets: torch.Tensor, positions: int | None) -> float:
    """Argmax accuracy of predictions (N, T) against targets (N, T), at every position or at ``positions``."""
    if preds.shape != targets.shape:
        raise ValueError(f"predictions {tuple(preds.shape)} and targets {tuple(targets.shape)} must have one shape")
    if positions is not None:
        preds, targets = preds[:, positions], targets[:, positions]
    return float((preds == targets).double().mean())


def predictions(model: torch.nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """(N, T) argmax predictions of a plain torch model on inputs (N, T), in batches, without gradients."""
    with torch.no_grad():
        return torch.cat([model(inputs[s : s + BATCH]).argmax(-1) for s in range(0, inputs.shape[0], BATCH)])


def _aligned(va: View, vb: View, ca: Chart, cb: Chart, ridge: float) -> tuple[Any, Any]:
    """(z_A, ẑ_B) on the test inputs: A's chart coordinates and B's carried into A's chart (map fitted on train)."""
    fmap = fit_linear_map(cb.coords(vb.h_train), ca.coords(va.h_train), ridge=ridge)
    return ca.coords(va.h_test), fmap(cb.coords(vb.h_test))


def merge_paths(
    models: list[torch.nn.Module], views: list[View], a: int, b: int, inputs: torch.Tensor, targets: torch.Tensor,
    hook: str, positions: int | None, ridge: float, chance: float,
) -> dict[str, Any]:  # fmt: skip
    """Accuracy of every path of :data:`PATHS` at every α of :data:`ALPHAS` for the pair (``a``, ``b``), merged into a.

    Args:
        models: the plain torch models (their weights are interpolated); ``views``: the same models at ``hook``.
        inputs, targets: (N, T) long test data; ``positions``: None (score every position) or -1 (the last token).
        ridge: relative ridge of the fitted maps; ``chance``: the task's chance accuracy (recorded).
    """
    if not (0 <= a < len(models) and 0 <= b < len(models) and a != b and len(views) == len(models)):
        raise ValueError(f"pair ({a}, {b}) must name two different models of {len(models)} (with one view each)")
    va, vb = views[a], views[b]
    charts = {"activations": (full_chart(va.core.mean * 0.0), None),
              "core_aligned": (core_chart(va.core), core_chart(vb.core)),
              "full_aligned": (full_chart(va.core.mean), full_chart(vb.core.mean))}
    acc: dict[str, list[float]] = {path: [] for path in PATHS}
    for alpha in ALPHAS:
        merged = interpolate_weights(models[a], models[b], alpha)
        acc["weights"].append(accuracy(predictions(merged, inputs), targets, positions))
    for path in PATHS[1:]:
        ca, cb = charts[path]
        za, zb = (va.h_test, vb.h_test) if cb is None else _aligned(va, vb, ca, cb, ridge)
        for alpha in ALPHAS:
            preds = stitched_predictions(va.wrapped, inputs, hook, ca, blend(za, zb, alpha), positions=positions)
            acc[path].append(accuracy(preds, targets, positions))
    return {"pair": [a, b], "alphas": list(ALPHAS), "acc": acc, "chance": float(chance)}
