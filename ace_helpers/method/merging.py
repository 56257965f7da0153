"""Merging two models of one architecture: naive weight interpolation, and a merge of their aligned core coordinates.

* :func:`interpolate_weights` — the naive merge: a model whose every floating parameter and buffer is
  ``(1 − α)·θ_A + α·θ_B``.  It presumes that the two models' units correspond one to one; models trained
  from different seeds put their cores in nearly orthogonal subspaces, so nothing makes them correspond.
* :func:`blend` — the merge in core coordinates: ``(1 − α)·z_A + α·ẑ_B``, where ẑ_B are B's core coordinates
  carried into A's core by a fitted linear map (:func:`ace_helpers.method.stitching.fit_linear_map`).
  Model A then runs with its core coordinates set to the blend
  (:func:`ace_helpers.method.stitching.stitched_predictions`).  This merges *representations* at a hook
  (both models run on the input), not weights.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ace_helpers.method.core import _as_float64


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha={alpha!r} is not allowed: alpha must be a number in [0, 1]")
    return float(alpha)


def interpolate_weights(model_a: torch.nn.Module, model_b: torch.nn.Module, alpha: float) -> torch.nn.Module:
    """A copy of ``model_a`` (eval mode) with every floating tensor of its state ``(1 − α)·A + α·B``.

    Integer buffers (counters) are taken from A.  ``alpha`` ∈ [0, 1]: 0 gives A's weights, 1 B's.

    Raises:
        ValueError: ``alpha`` outside [0, 1], or state dicts with different names or shapes.
    """
    a = _check_alpha(alpha)
    sa, sb = model_a.state_dict(), model_b.state_dict()
    if list(sa) != list(sb) or any(sa[n].shape != sb[n].shape for n in sa):
        raise ValueError("the two models' state dicts differ in names or shapes: interpolation needs the same architecture")
    merged = {n: (1.0 - a) * sa[n] + a * sb[n].to(sa[n].dtype) if sa[n].is_floating_point() else sa[n] for n in sa}
    out = copy.deepcopy(model_a)
    out.load_state_dict(merged)
    return out.eval()


def blend(za: Any, zb: Any, alpha: float) -> np.ndarray:
    """``(1 − α)·Z_A + α·Z_B`` for coordinates of one shape (..., r), float64."""
    a, b, w = _as_float64("Z_A", za), _as_float64("Z_B", zb), _check_alpha(alpha)
    if a.shape != b.shape:
        raise ValueError(f"Z_A and Z_B must have the same shape; got {a.shape} and {b.shape}")
    return (1.0 - w) * a + w * b
