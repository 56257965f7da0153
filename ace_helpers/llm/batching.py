"""Batching prompts for a language model: left padding with explicit position ids, row slices, the KV cache
of all but the last token (and the keyword the model's forward takes it under), and a head restricted to a few
tokens."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Sequence

import torch

from ace_helpers.llm.layers import torch_module


def encode(tokenizer, prompts: Sequence[str], *, device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """Left-padded batch: ``input_ids``, ``attention_mask`` (B, T) and ``position_ids`` counting real tokens, on
    ``device`` (default the CPU; pass :func:`~ace_helpers.llm.layers.input_device` of the model).

    Explicit position ids make left padding exact for absolute-position models (GPT-2), too.
    """
    tokenizer.padding_side = "left"
    enc = tokenizer(list(prompts), return_tensors="pt", padding=True)
    mask = enc["attention_mask"]
    if bool((mask[:, -1] == 0).any()):
        raise ValueError("left padding failed: some prompt's last position is padding")
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    out = {"input_ids": enc["input_ids"], "attention_mask": mask, "position_ids": pos}
    return out if device is None else {k: v.to(device) for k, v in out.items()}


def batch_rows(enc: dict[str, torch.Tensor], start: int, stop: int) -> dict[str, torch.Tensor]:
    """Rows ``start:stop`` of a left-padded batch from :func:`encode`, without its all-padding columns."""
    sub = {k: v[start:stop] for k, v in enc.items()}
    keep = int(sub["attention_mask"].sum(-1).max())
    return {k: v[:, -keep:] for k, v in sub.items()}


#: the keywords a Hugging Face forward takes its KV cache under: ``cache`` (transformers 5.24 and later releases)
#: and ``past_key_values`` (earlier ones, 5.17 among them)
CACHE_KEYWORDS = ("cache", "past_key_values")


def with_cache(model, inputs: dict, cache) -> dict:
    """``inputs`` with ``cache`` added under the keyword this model's forward takes it under (:data:`CACHE_KEYWORDS`).

    The forwards also take ``**kwargs``, so a cache passed under the other release's keyword would be dropped
    without a word and the tokens computed without their prefix: the keyword is read off the signature.
    """
    forward = torch_module(model).forward
    params = inspect.signature(forward).parameters
    for name in CACHE_KEYWORDS:
        if name in params:
            return {**inputs, name: cache}
    raise TypeError(
        f"{type(torch_module(model)).__name__}.forward takes no KV cache: it has neither of "
        f"{list(CACHE_KEYWORDS)} among its parameters {list(params)}"
    )


def prefix_cache(model, batch: dict[str, torch.Tensor]):
    """KV cache of ``batch`` (from :func:`encode`) without its last token: one no-grad forward over T−1 positions.

    ``model``: an nnsight wrapper or the HF module (the forward runs on the torch module).
    """
    with torch.no_grad():
        out = torch_module(model)(
            input_ids=batch["input_ids"][:, :-1],
            attention_mask=batch["attention_mask"][:, :-1],
            position_ids=batch["position_ids"][:, :-1],
            use_cache=True,
            logits_to_keep=1,
        )
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


@contextlib.contextmanager
def restricted_head(model, token_ids: Sequence[int]):
    """Temporarily cut the unembedding to the rows ``token_ids``, so logits are (..., len(token_ids)).

    Column ``i`` of the logits is then the logit of ``token_ids[i]``.  Useful when a metric needs
    only a few logits: the full vocabulary head (49k-262k rows) would otherwise dominate the cost of
    single-token reruns.  Elementwise logit soft-capping, if any, is unaffected.  The original
    weights are restored on exit, also after an error.
    """
    head = torch_module(model).get_output_embeddings()
    rows = list(token_ids)
    weight, bias, out_features = head.weight, getattr(head, "bias", None), head.out_features
    try:
        head.weight = torch.nn.Parameter(weight.detach()[rows].clone(), requires_grad=False)
        if bias is not None:
            head.bias = torch.nn.Parameter(bias.detach()[rows].clone(), requires_grad=False)
        head.out_features = len(rows)
        yield
    finally:
        head.weight = weight
        if bias is not None:
            head.bias = bias
        head.out_features = out_features


# ----------------------------------------------------------------------------- tiny test models
