"""The dtype a language model runs in: the ``DTYPE`` knob of chapter 5, checked and resolved per model family.

The paper ran its LLMs on a GPU in half precision: bf16 for Llama, Mistral and Gemma, fp16 for GPT-2 and Qwen
(:data:`PAPER_DTYPES`).  On a CPU the book runs every model in float32 (exact gradients; half-precision matrix
products are slow on most CPUs).  ``"auto"`` gives both: the paper's dtype on CUDA or MPS, float32 on the CPU.

Gradients.  The backward pass runs in the model's dtype.  Under fp16, ∂m/∂h of a single prompt can fall below
fp16's smallest normal number (6·10⁻⁵), so :func:`grad_scale` multiplies the metric by 2¹⁰ before the backward
pass (loss scaling) and the readout divides the float32 copy of the gradient by it.  bf16 has float32's exponent
range and needs no scaling; its gradients carry bf16's 8-bit mantissa (relative error ≲ 0.4 % per entry).
ACE then accumulates the Gram matrices in float64 whatever the model's dtype.
"""

from __future__ import annotations

from typing import Any

import torch

from ace_helpers.method.checks import fail
from ace_helpers.method.devices import resolve_device

DTYPE_FORMS = ("auto", "family", "float32", "bfloat16", "float16")
"""The forms of the dtype knob: ``auto`` (the paper's dtype on a GPU, float32 on the CPU), ``family`` (the paper's
dtype on any device), or one dtype for every model."""

PAPER_DTYPES: dict[str, torch.dtype] = {
    "gpt2": torch.float16,
    "qwen2": torch.float16,
    "llama": torch.bfloat16,
    "mistral": torch.bfloat16,
    "gemma": torch.bfloat16,
    "gemma2": torch.bfloat16,
    "gemma3": torch.bfloat16,
    "gemma3_text": torch.bfloat16,
}
"""The paper's dtype per ``config.model_type`` (its code: bf16 for Llama / Mistral / Gemma, fp16 for GPT-2 and
Qwen).  A family the paper did not run gets bf16 (:data:`OTHER_FAMILIES`)."""

OTHER_FAMILIES = torch.bfloat16
"""The ``family`` dtype of a model family outside :data:`PAPER_DTYPES` (bf16: float32's range, no loss scaling)."""

FP16_GRAD_SCALE = 2.0**10
"""Loss scale of the backward pass of an fp16 model (:func:`grad_scale`)."""


def check_dtype(name: str, value: Any) -> str:
    """A dtype knob's value, normalised (lower case); refused with the allowed forms when it is none of them."""
    if isinstance(value, torch.dtype):
        value = str(value).removeprefix("torch.")
    if not isinstance(value, str) or value.strip().lower() not in DTYPE_FORMS:
        fail(name, value, f"one of {list(DTYPE_FORMS)}")
    return value.strip().lower()


def dtype_knob(value: Any, device: torch.device | str) -> str:
    """The knob with ``auto`` resolved for ``device``: ``"float32"`` on the CPU, ``"family"`` on CUDA / MPS; any other
    form as it is."""
    value = check_dtype("DTYPE", value)
    if value == "auto":
        return "float32" if torch.device(device).type == "cpu" else "family"
    return value


def resolve_dtype(value: Any, model_type: str | None, device: torch.device | str) -> torch.dtype:
    """The dtype a model of family ``model_type`` (its ``config.model_type``) runs in on ``device``.

    ``auto``: :data:`PAPER_DTYPES` on CUDA / MPS, float32 on the CPU; ``family``: :data:`PAPER_DTYPES` anywhere
    (:data:`OTHER_FAMILIES` for a family not listed); ``float32`` / ``bfloat16`` / ``float16``: that dtype.
    """
    value = dtype_knob(value, device)
    if value == "family":
        return PAPER_DTYPES.get(str(model_type), OTHER_FAMILIES)
    return getattr(torch, value)


def cast(model: torch.nn.Module, value: Any, device: torch.device | str) -> torch.nn.Module:
    """``model`` (a Hugging Face model, loaded in float32) cast in place to the dtype knob ``value`` for its family
    (``model.config.model_type``) on ``device`` (:func:`resolve_dtype`); returns it."""
    return model.to(resolve_dtype(value, getattr(getattr(model, "config", None), "model_type", None), device))


def describe_dtype(value: Any, device: Any = "cpu") -> str:
    """What a dtype knob means on ``device`` (a device knob), for a chapter's setup cell."""
    where = resolve_device(device)
    value = dtype_knob(value, where)
    if value == "family":
        return (
            f"on {where.type}: the paper's dtype per model family (fp16 for GPT-2 and Qwen, bf16 for Llama, "
            f"Mistral, Gemma and other families; fp16 gradients are loss-scaled by {FP16_GRAD_SCALE:g})"
        )
    return f"on {where.type}: every model in {value}"


def grad_scale(dtype: torch.dtype) -> float:
    """The factor the metric is multiplied by before the backward pass of a model in ``dtype``:
    :data:`FP16_GRAD_SCALE` for fp16, 1 otherwise."""
    return FP16_GRAD_SCALE if dtype == torch.float16 else 1.0


__all__ = [
    "DTYPE_FORMS",
    "FP16_GRAD_SCALE",
    "OTHER_FAMILIES",
    "PAPER_DTYPES",
    "cast",
    "check_dtype",
    "describe_dtype",
    "dtype_knob",
    "grad_scale",
    "resolve_dtype",
]
