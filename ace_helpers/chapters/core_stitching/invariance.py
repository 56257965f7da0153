"""Chapter 7's invariance comparison: for each pair of models of one setting, the cores' projector overlap and
mean CCA on the same test inputs, beside random, PCA and class-mean-oracle subspaces of the same ranks
(:func:`ace_helpers.method.specificity.specificity_table`).

The activations are the ones the chapter stitches: the Markov layer output at every test position, the
mod-add last token of layer 2.  The oracle's labels: the current state (Markov: it fixes the Bayes answer, so
the one-hot-state subspace is what any model of the chain has) and the answer c (mod-add).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import torch

from ace_helpers.chapters.toy_views.views import View
from ace_helpers.method.specificity import specificity_table

#: Random subspace pairs per model pair (the 95th percentile of their mean CCA is read).
DRAWS = 200


def invariance_pairs(views: list[View], labels: torch.Tensor | np.ndarray, seed: int, draws: int = DRAWS) -> list[dict[str, Any]]:
    """One :func:`specificity_table` per pair (i < j) of ``views``, each with its ``"pair"``.

    Args:
        views: the models at the hook; their ``h_test`` (N, T, D) or (N, D) rows follow the same inputs.
        labels: the oracle's label of every test row, shaped like ``h_test`` without its last axis.
        seed: seeds the random subspaces (pair (i, j) uses ``seed + 10·i + j``).
    """
    if len(views) < 2:
        raise ValueError(f"an invariance comparison needs at least 2 models, got {len(views)}")
    y = labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    if y.shape != views[0].h_test.shape[:-1]:
        raise ValueError(f"labels have shape {y.shape}; expected one per test row, {views[0].h_test.shape[:-1]}")
    out = []
    for i, j in combinations(range(len(views)), 2):
        hi, hj = (v.h_test.reshape(-1, v.h_test.shape[-1]) for v in (views[i], views[j]))
        table = specificity_table(hi, hj, views[i].core.basis, views[j].core.basis, y.reshape(-1), draws=draws,
                                  seed=seed + 10 * i + j)
        out.append({"pair": [i, j], **table})
    return out
