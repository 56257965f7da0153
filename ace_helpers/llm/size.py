"""A language model's size from its ``config.json`` alone, before any weights are read.

:func:`matmul_weights` counts the weights one token's forward pass multiplies by (attention and MLP
projections of every block, plus the unembedding); a forward pass costs about twice that many
floating-point operations per token.  Cost estimates use it before a model is loaded
(:mod:`ace_helpers.chapters.llm_agreement.cost`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GPT2_TYPES = ("gpt2", "gpt_neo", "gpt_neox", "gptj")
"""``model_type`` values whose MLP has two projections (up and down); every other family counted here
(Llama, Gemma, Qwen, Mistral, SmolLM) has a gated MLP with three."""


def depth_and_width(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """(blocks, residual width) from a ``config.json`` (GPT-2's ``n_layer`` / ``n_embd`` understood), or None."""
    depth = _int(config, "num_hidden_layers", "n_layer", "num_layers")
    d = _int(config, "hidden_size", "n_embd", "d_model")
    return None if depth is None or d is None else (depth, d)


def _int(config: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def matmul_weights(config: Mapping[str, Any], *, unembedding: bool = True) -> int | None:
    """Weights that one token's forward pass multiplies by, from a Hugging Face ``config.json``.

    Per block: the query and output projections (d × heads·head_dim each), the key and value projections
    (d × kv_heads·head_dim each) and the MLP (2 or 3 matrices of d × ff, see :data:`GPT2_TYPES`); times the
    depth, plus the unembedding (vocab × d) when ``unembedding`` (a pass that reads the logits of a few tokens
    only skips most of it).  Embedding look-ups, norms and biases are not counted.

    Args:
        config: the model's ``config.json`` as a dict (GPT-2 names ``n_embd``, ``n_layer``, ``n_head``,
            ``n_inner`` are understood).

    Returns:
        the count, or None when a needed entry (depth, width, vocabulary) is missing.
    """
    shape, vocab = depth_and_width(config), _int(config, "vocab_size")
    if shape is None or (unembedding and vocab is None):
        return None
    depth, d = shape
    heads = _int(config, "num_attention_heads", "n_head") or 1
    head_dim = _int(config, "head_dim") or d // heads
    kv_heads = _int(config, "num_key_value_heads") or heads
    gpt2_like = str(config.get("model_type", "")) in GPT2_TYPES
    ff = _int(config, "intermediate_size", "n_inner") or 4 * d
    attention = 2 * d * heads * head_dim + 2 * d * kv_heads * head_dim
    mlp = (2 if gpt2_like else 3) * d * ff
    return depth * (attention + mlp) + (vocab * d if unembedding else 0)
