"""Subject-verb agreement states: last-token block outputs and margin gradients of every layer, and one core per layer.

Layer ℓ (1-based) is the residual stream at the **output of block ℓ−1**, read with a hook on the
block, so that the core is estimated exactly where it is applied — also at the last layer, where
HF's ``hidden_states[-1]`` would be after the final norm.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ace_helpers import llm
from ace_helpers.llm.agreement import VERBS, margin_metric, verb_token_ids
from ace_helpers.llm.readout import metric_gradients
from ace_helpers.method.core import Core, GramianAccumulator


def layer_list(layers: str | Sequence[int], n_layers: int) -> list[int]:
    """The 1-based layers ℓ to sweep in a model of ``n_layers`` blocks: ``"all"`` -> 1..n_layers; ``"every:k"`` ->
    k, 2k, … up to n_layers (the same rule at any depth); a list is checked against n_layers."""
    if layers == "all":
        return list(range(1, n_layers + 1))
    if isinstance(layers, str):
        step = every_step(layers)
        return list(range(step, n_layers + 1, step)) or [n_layers]
    out = sorted({int(v) for v in layers})
    bad = [v for v in out if not 1 <= v <= n_layers]
    if bad:
        raise ValueError(f"LAYERS={list(layers)!r} is not allowed: this model has layers 1..{n_layers}; bad: {bad}")
    return out


def every_step(layers: str) -> int:
    """k of ``"every:k"`` (1..64); ``ValueError`` naming the allowed forms otherwise."""
    head, _, tail = layers.partition(":")
    if head != "every" or not tail.isdigit() or not 1 <= int(tail) <= 64:
        raise ValueError(
            f"LAYERS={layers!r} is not allowed: LAYERS is 'all', 'every:k' (k in 1..64: layers k, 2k, … of "
            "each model) or a list of layers ℓ (layer ℓ = output of block ℓ−1)"
        )
    return int(tail)


@contextlib.contextmanager
def verb_head(lm, tokenizer):
    """Temporarily cut the unembedding to the four verb rows, so logits are (..., 4).

    Yields the verb -> column map ``{"is": 0, "are": 1, "was": 2, "were": 3}`` (see
    :func:`ace_helpers.llm.batching.restricted_head`).
    """
    ids = verb_token_ids(tokenizer)
    with llm.restricted_head(lm, [ids[v] for v in VERBS]):
        yield {v: i for i, v in enumerate(VERBS)}


@contextlib.contextmanager
def verb_columns(lm, tokenizer, remote: bool | str = False):
    """The verb -> logit-column map of the agreement margin: the four-row head locally (:func:`verb_head`), the
    full vocabulary remotely (a remote model's head cannot be cut from here)."""
    if remote is not False:
        yield verb_token_ids(tokenizer)
    else:
        with verb_head(lm, tokenizer) as ids:
            yield ids


@dataclass
class States:
    """Last-token residual states of N prompts at L layers.

    Attributes:
        layers: the L layers ℓ (1-based; output of block ℓ−1).
        H: (L, N, D) float32 block outputs at the last token.
        G: (L, N, D) float32 gradients ∂m/∂h at the last token (None without gradients).
        margin: (N,) clean margins.
    """

    layers: list[int]
    H: np.ndarray
    G: np.ndarray | None
    margin: np.ndarray


def collect_states(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layers: Sequence[int],
    *,
    gradients: bool = True,
    batch_size: int = 25,
    remote: bool | str = False,
) -> States:
    """Block outputs (and margin gradients) at the last token for every layer in ``layers``.

    The margin's readout through the public :func:`ace_helpers.llm.readout.metric_gradients` (one forward and
    one backward per batch, in one nnsight trace). ``remote`` is passed to ``lm.trace`` (``True`` = NDIF,
    ``"local"`` = nnsight's offline dry run of the remote protocol); only saved values leave the trace.
    """
    with verb_columns(lm, tokenizer, remote) as ids:
        r = metric_gradients(
            lm, tokenizer, prompts, margin_metric(ids), list(layers), gradients=gradients, batch_size=batch_size, remote=remote
        )
    order = [r.layers.index(ell) for ell in layers]  # read in forward order; given in the caller's order
    return States(layers=list(layers), H=r.H[order], G=None if r.G is None else r.G[order], margin=r.values)


def layer_cores(states: States, *, rank: int = 1) -> list[Core]:
    """One ACE core per layer (fixed ``rank``, 1 as in the paper) from Cov(H), mean(H), Obs = mean g gᵀ."""
    if states.G is None:
        raise ValueError("layer_cores needs gradients: collect the training states with gradients=True")
    cores = []
    for li in range(len(states.layers)):
        acc = GramianAccumulator(states.H.shape[2])
        acc.add_activations(states.H[li]).add_jacobians(states.G[li])
        cores.append(acc.core(rank=rank))
    return cores


def spectral_gap(core: Core) -> float:
    """w1 / w2, the ratio of the two largest balanced weights (large = one dominant axis)."""
    w = core.weights
    return float(w[0] / w[1]) if w[1] > 0 else math.inf
