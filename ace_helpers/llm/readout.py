"""Per-example activations and gradients of any scalar metric at any module: what ACE needs from a language model.

:func:`metric_gradients` runs each batch of prompts once forward and once backward in a single nnsight trace
and returns, at the chosen token position, every requested module's output (the activations ACE balances) and
the gradient of each prompt's metric with respect to it (its Jacobian Gram's rows).  Because prompts do not
interact in a forward pass, the gradient of the batch's summed metric is each prompt's own gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ace_helpers.llm.batching import batch_rows, encode
from ace_helpers.llm.layers import block_paths, input_device, layer_path, model_dtype, module, torch_module
from ace_helpers.llm.precision import grad_scale
from ace_helpers.llm.remote_jobs import trace_options
from ace_helpers.method.interventions import resolve_module

#: ``metric(logits) -> values``: logits (B, T, V) of a batch (V: the vocabulary, or the rows of a restricted head)
#: to one number per prompt (B,); it runs inside the trace, so write it with torch operations.
Metric = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Readout:
    """What :func:`metric_gradients` read.

    Attributes:
        paths: the L module paths read (in forward order).
        layers: the layer ℓ of each path (:func:`~ace_helpers.llm.layers.layer_path`'s convention), or None for a
            module that is not a decoder block.
        H: (L, N, D) float32 module outputs at the chosen position.
        G: (L, N, D) float32 gradients ∂metric/∂H (None when ``gradients=False``).
        values: (N,) the metric of each prompt (clean model).
    """

    paths: list[str]
    layers: list[int | None]
    H: np.ndarray
    G: np.ndarray | None
    values: np.ndarray


def _forward_key(names: list[str], path: str) -> tuple[int, int]:
    """Sort key putting module outputs in the order a forward pass produces them: a module's output comes after its
    last submodule's (``names``: the model's ``named_modules`` order, which HF models register in forward order)."""
    last = max(i for i, n in enumerate(names) if n == path or n.startswith(path + "."))
    return last, -path.count(".")


def _paths(lm, at: Sequence[int | str]) -> tuple[list[str], list[int | None]]:
    if isinstance(at, (int, str)) or len(at) == 0:
        raise ValueError(f"at={at!r} is not allowed: give a non-empty list of layers ℓ (ints) or module paths (str)")
    blocks = block_paths(lm)
    paths = [layer_path(lm, a) if isinstance(a, int) else str(a) for a in at]
    if len(set(paths)) != len(paths):
        raise ValueError(f"at={list(at)!r} names a module twice")
    for p in paths:
        resolve_module(lm, p)  # raises ValueError naming the missing component
        module(lm, p)
    names = [n for n, _ in torch_module(lm).named_modules()]
    order = sorted(paths, key=lambda p: _forward_key(names, p))
    return order, [blocks.index(p) + 1 if p in blocks else None for p in order]


def metric_gradients(
    lm,
    tokenizer,
    prompts: Sequence[str],
    metric: Metric,
    at: Sequence[int | str],
    *,
    position: int = -1,
    gradients: bool = True,
    batch_size: int = 16,
    remote: bool | str = False,
) -> Readout:
    """Per-prompt outputs of the modules ``at`` and the gradients of ``metric`` there, at token ``position``.

    Args:
        lm: an nnsight ``TransformersModel`` (:func:`~ace_helpers.llm.loading.load_model`).
        prompts: N strings, left-padded together (``position=-1`` is every prompt's last token).
        metric: logits (B, T, V) -> (B,), e.g. ``lambda z: z[:, -1, are] - z[:, -1, is_]``.
        at: layers ℓ (ints, 1..n_layers: the output of block ℓ−1) and/or dotted module paths whose output is a
            (B, T, D) tensor (e.g. ``"model.layers.3.mlp"``); read in forward order whatever order is given.
        position: the token index read (negative: from the end; the same for every prompt).
        gradients: also take the backward pass.  batch_size: prompts per trace.
        remote: passed to ``lm.trace`` (``True``: NDIF).

    Returns:
        :class:`Readout` with ``H``, ``G`` of shape (L, N, D) in the order of ``Readout.paths``.
    """
    import nnsight  # load time: a heavy import, done on first use

    if not callable(metric):
        raise ValueError(f"metric must be a callable logits (B, T, V) -> (B,), got {type(metric).__name__}")
    if isinstance(prompts, str) or len(prompts) == 0:
        raise ValueError("prompts must be a non-empty list of strings")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size={batch_size!r} is not allowed: it must be a positive int")
    paths, layers = _paths(lm, at)
    enc = encode(tokenizer, prompts, device=input_device(lm))
    scale = grad_scale(model_dtype(lm)) if gradients else 1.0  # fp16: loss scaling (ace_helpers.llm.precision)
    if not -enc["input_ids"].shape[1] <= position < enc["input_ids"].shape[1]:
        raise ValueError(f"position={position} is outside the prompts' {enc['input_ids'].shape[1]} tokens")
    trace_kw = trace_options(lm, remote)
    hs, gs, vs = [], [], []
    for start in range(0, enc["input_ids"].shape[0], batch_size):
        batch = batch_rows(enc, start, start + batch_size)
        pos = position if position < 0 else position - (enc["input_ids"].shape[1] - batch["input_ids"].shape[1])
        with torch.enable_grad() if gradients else torch.no_grad(), lm.trace(batch, **trace_kw):
            outs = []
            for path in paths:  # in forward order: each access waits for that module
                out = resolve_module(lm, path).output
                outs.append(out[0] if isinstance(out, tuple) else out)
                if gradients and len(outs) == 1:
                    outs[0].requires_grad_(True)  # parameters are frozen: the graph starts here
            h = nnsight.save([o[:, pos].detach() for o in outs])
            value = metric(lm.output.logits)
            v = value.detach().save()
            if gradients:
                with (value.sum() * scale).backward():
                    g_rev = nnsight.save([outs[i].grad[:, pos] for i in reversed(range(len(outs)))])
        if v.shape != (batch["input_ids"].shape[0],):
            raise ValueError(
                f"metric must return one value per prompt, shape (B,); got shape {tuple(v.shape)} for "
                f"a batch of {batch['input_ids'].shape[0]} prompts"
            )
        hs.append(torch.stack(list(h)).float().cpu().numpy())
        vs.append(v.float().cpu().numpy())
        if gradients:
            gs.append((torch.stack(list(g_rev)[::-1]).float() / scale).cpu().numpy())
    G = np.concatenate(gs, 1) if gradients else None
    return Readout(paths, layers, np.concatenate(hs, 1), G, np.concatenate(vs))
