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
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import VERBS, verb_token_ids
from ace_helpers.method import interventions
from ace_helpers.method.core import Core, GramianAccumulator


def layer_list(layers: str | Sequence[int], n_layers: int) -> list[int]:
    """The 1-based layers ℓ to sweep: ``"all"`` -> 1..n_layers; a list is checked against n_layers."""
    if layers == "all":
        return list(range(1, n_layers + 1))
    out = sorted(set(int(v) for v in layers))
    bad = [v for v in out if not 1 <= v <= n_layers]
    if bad:
        raise ValueError(f"LAYERS={list(layers)!r} is not allowed: this model has layers 1..{n_layers}; bad: {bad}")
    return out


@contextlib.contextmanager
def verb_head(lm, tokenizer):
    """Temporarily cut the unembedding to the four verb rows, so logits are (..., 4).

    Yields the verb -> column map ``{"is": 0, "are": 1, "was": 2, "were": 3}`` (see
    :func:`ace_helpers.llm.batching.restricted_head`).
    """
    ids = verb_token_ids(tokenizer)
    with llm.restricted_head(lm, [ids[v] for v in VERBS]):
        yield {v: i for i, v in enumerate(VERBS)}


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

    With ``gradients``, each batch runs **one** forward and **one** backward pass in a single
    nnsight trace; the gradients of all layers are read from that backward (latest layer first,
    as nnsight requires). ``remote`` is passed to ``lm.trace`` (``True`` = NDIF, ``"local"`` =
    nnsight's offline dry run of the remote protocol); only saved values leave the trace.
    """
    paths = llm.block_paths(lm)
    mods = [paths[ell - 1] for ell in layers]
    enc = llm.encode(tokenizer, prompts)
    trace_kw = {} if remote is False else {"remote": remote}
    if remote is not False:  # the remote model's head cannot be cut from here
        return _collect(lm, enc, mods, verb_token_ids(tokenizer), layers, gradients, batch_size, trace_kw)
    with verb_head(lm, tokenizer) as ids:
        return _collect(lm, enc, mods, ids, layers, gradients, batch_size, trace_kw)


def _collect(lm, enc, mods, ids, layers, gradients, batch_size, trace_kw) -> States:
    import nnsight  # load time: a heavy import, done on first use

    hs, gs, ms = [], [], []
    for start in range(0, enc["input_ids"].shape[0], batch_size):
        batch = llm.batch_rows(enc, start, start + batch_size)
        grad_ctx = torch.enable_grad() if gradients else torch.no_grad()
        with grad_ctx:
            with lm.trace(batch, **trace_kw):
                outs = []
                for path in mods:  # requested in forward order; each access waits for that block
                    outs.append(interventions.resolve_module(lm, path).output)
                    if gradients and len(outs) == 1:
                        outs[0].requires_grad_(True)  # parameters are frozen: start the graph here
                h_last = nnsight.save([o[:, -1].detach() for o in outs])
                logits = lm.output.logits[:, -1]
                m = logits[:, ids["are"]] + logits[:, ids["were"]] - logits[:, ids["is"]] - logits[:, ids["was"]]
                m_saved = m.detach().save()
                if gradients:
                    with m.sum().backward():
                        g_rev = nnsight.save([outs[i].grad[:, -1] for i in reversed(range(len(outs)))])
        hs.append(torch.stack(list(h_last)).float().numpy())
        ms.append(m_saved.float().numpy())
        if gradients:
            gs.append(torch.stack(list(g_rev)[::-1]).float().numpy())
    return States(
        layers=list(layers),
        H=np.concatenate(hs, axis=1),
        G=np.concatenate(gs, axis=1) if gradients else None,
        margin=np.concatenate(ms),
    )


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
