"""Uniform access to a language model's residual stream: its decoder blocks' module paths, the final norm,
the torch module or nnsight envoy at a path."""

from __future__ import annotations

import torch


def torch_module(model) -> torch.nn.Module:
    """The underlying torch module of an nnsight wrapper (or ``model`` itself, if it is one)."""
    if isinstance(model, torch.nn.Module):
        return model
    inner = getattr(model, "_module", None)
    if isinstance(inner, torch.nn.Module):
        return inner
    raise ValueError(f"model of type {type(model).__name__} is neither a torch module nor an nnsight wrapper")


def input_device(model) -> torch.device:
    """Where a model's inputs must be: the device of its weights (the CPU for an NDIF wrapper, whose weights sit on
    the meta device: nnsight sends CPU inputs to the server)."""
    weight = next(torch_module(model).parameters(), None)
    return torch.device("cpu") if weight is None or weight.device.type == "meta" else weight.device


def model_dtype(model) -> torch.dtype:
    """The dtype of a model's weights (float32 when it has none)."""
    weight = next(torch_module(model).parameters(), None)
    return torch.float32 if weight is None else weight.dtype


_BLOCK_CONTAINERS = ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers", "model.language_model.layers")
_FINAL_NORMS = (
    "model.norm",
    "transformer.ln_f",
    "gpt_neox.final_layer_norm",
    "model.decoder.final_layer_norm",
    "model.language_model.norm",
)


def _get(module: torch.nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def block_paths(model) -> list[str]:
    """Dotted names of the decoder blocks, in order (their outputs are the residual stream).

    Works for GPT-2, Llama, Gemma (2/3), Qwen, Mistral, GPT-NeoX and OPT layouts; raises
    ``ValueError`` for an unknown layout.
    """
    torch_model = torch_module(model)
    for container in _BLOCK_CONTAINERS:
        blocks = _get(torch_model, container)
        if isinstance(blocks, torch.nn.ModuleList) and len(blocks) > 0:
            return [f"{container}.{i}" for i in range(len(blocks))]
    raise ValueError(
        f"model of type {type(torch_model).__name__} has no known decoder-block list: expected one of {list(_BLOCK_CONTAINERS)}"
    )


def final_norm_path(model) -> str | None:
    """Dotted name of the final norm applied after the last block (None if none is known)."""
    torch_model = torch_module(model)
    for path in _FINAL_NORMS:
        if isinstance(_get(torch_model, path), torch.nn.Module):
            return path
    return None


def n_layers(model) -> int:
    """Number of decoder blocks."""
    return len(block_paths(model))


def module(model, path: str) -> torch.nn.Module:
    """The torch module at dotted ``path`` of ``model`` (nnsight wrapper or plain module)."""
    found = _get(torch_module(model), path)
    if not isinstance(found, torch.nn.Module):
        raise ValueError(f"path={path!r} is not a module of {type(torch_module(model)).__name__}")
    return found


def envoy(lm, path: str):
    """The nnsight envoy at dotted ``path`` (integer parts index module lists), for use inside traces."""
    node = lm
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


# ----------------------------------------------------------------------------- batching


def layer_path(model, layer: int) -> str:
    """The module path of layer ``layer`` in the book's one naming convention.

    Layer ℓ (1-based, 1..n_layers) is the residual stream at the **output of block ℓ−1**: the state after ℓ
    blocks (HF's ``hidden_states[ℓ]``, except that for the last layer HF applies the final norm first).
    The library, the chapters and the figures all count layers this way.
    """
    paths = block_paths(model)
    if not isinstance(layer, int) or isinstance(layer, bool) or not 1 <= layer <= len(paths):
        raise ValueError(f"layer={layer!r} is not allowed: this model has layers 1..{len(paths)} (layer ℓ = output of block ℓ−1)")
    return paths[layer - 1]


def layer_of_path(model, path: str) -> int:
    """The layer ℓ whose state is the output of the block at ``path`` (the inverse of :func:`layer_path`)."""
    paths = block_paths(model)
    if path not in paths:
        raise ValueError(f"path={path!r} is not a decoder block of this model; blocks are {paths[0]} .. {paths[-1]}")
    return paths.index(path) + 1
