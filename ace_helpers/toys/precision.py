"""Training precision: the ``PRECISION`` knob (``"fp32"`` or ``"bf16"``) and what it runs on this CPU.

``"fp32"`` is the reference: every stored result of the book was trained that way unless its
manifest says otherwise.  ``"bf16"`` runs the training forward pass under
``torch.autocast("cpu", dtype=torch.bfloat16)``: the batched matrix products take bf16 inputs
(oneDNN runs them on the AMX tiles of recent Intel CPUs, or with the AVX512-BF16 dot-product
instructions of recent AMD and Intel CPUs), while the master weights, the optimizer state, the
loss and every analysis stay fp32.  On a CPU with neither, bf16 is allowed but emulated, and
usually slower than fp32: :func:`describe` says so.  bf16 sums round differently on AMX and on
AVX512-BF16, so a bf16 run is reproducible bit for bit on one kind of CPU, not across kinds.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from ace_helpers.method.checks import check_choice

PRECISIONS = ("fp32", "bf16")


def check_precision(name: str, value: Any) -> str:
    """``value`` must be one of :data:`PRECISIONS`; returns it."""
    return check_choice(name, value, PRECISIONS)


@lru_cache(maxsize=1)
def cpu_info() -> dict[str, str]:
    """The first processor's fields of ``/proc/cpuinfo`` (``"flags"``, ``"model name"``, ...); empty where
    there is none (e.g. macOS).  The one reader of that file in the library."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the end of the first processor's block
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of ``/proc/cpuinfo`` (empty where there is none)."""
    return frozenset(cpu_info().get("flags", "").split())


def has_amx_bf16() -> bool:
    """Whether this CPU has AMX bf16 tiles (the ``amx_bf16`` flag)."""
    return "amx_bf16" in cpu_flags()


def has_avx512_bf16() -> bool:
    """Whether this CPU has the AVX512-BF16 dot-product instructions (the ``avx512_bf16`` flag)."""
    return "avx512_bf16" in cpu_flags()


def bf16_kernels() -> str:
    """Which native bf16 matmul path this CPU offers: ``"amx"``, ``"avx512_bf16"`` or ``"emulated"``."""
    if has_amx_bf16():
        return "amx"
    if has_avx512_bf16():
        return "avx512_bf16"
    return "emulated"


def describe(precision: str) -> str:
    """One line on which kernels ``precision`` runs on this CPU (printed by the training chapters)."""

    check_precision("PRECISION", precision)
    capability = torch.backends.cpu.get_cpu_capability()
    if precision == "fp32":
        return f"fp32 throughout (torch CPU kernels: {capability})"
    kernels = bf16_kernels()
    if kernels == "amx":
        return f"bf16 matmuls on AMX (amx_bf16 present, oneDNN), fp32 weights, optimizer state and analyses ({capability})"
    if kernels == "avx512_bf16":
        return (
            f"bf16 matmuls with AVX512-BF16 dot products (avx512_bf16 present, no AMX; oneDNN), "
            f"fp32 weights, optimizer state and analyses ({capability})"
        )
    return (
        f"bf16 matmuls WITHOUT native bf16 instructions (neither amx_bf16 nor avx512_bf16 on this CPU): emulated, "
        f"expect it to run slower than fp32; "
        f"fp32 weights, optimizer state and analyses ({capability})"
    )


def autocast(precision: str, device_type: str = "cpu") -> contextlib.AbstractContextManager:
    """The context to run a training forward pass in: bf16 autocast on ``device_type`` (``"cpu"``, ``"cuda"``,
    ``"mps"``), or nothing for fp32."""

    check_precision("PRECISION", precision)
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=torch.bfloat16)
