"""Training precision: the ``PRECISION`` knob (``"auto"``, ``"fp32"`` or ``"bf16"``) and what it runs on.

``"auto"`` (every training chapter's default) is resolved per device by :func:`resolve_precision`: ``"bf16"`` on
a CUDA GPU with native bf16 matrix products (compute capability 8.0 or later: A100, H100, RTX 30xx and newer),
``"fp32"`` everywhere else, the CPU included.  The CPU keeps fp32 even where it has bf16 instructions because
the book's stored results are fp32 and reproduce bit for bit across kinds of CPU only in fp32.

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
"""The precisions a training run has (what its stored key and manifest record)."""

PRECISION_KNOB = ("auto", *PRECISIONS)
"""The values a ``PRECISION`` knob may take: a precision, or ``"auto"`` (:func:`resolve_precision`)."""


def check_precision(name: str, value: Any) -> str:
    """``value`` must be one of :data:`PRECISIONS`; returns it."""
    return check_choice(name, value, PRECISIONS)


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` is a CUDA GPU whose tensor cores run bf16 matrix products (compute capability >= 8.0).

    The CPU answers ``False`` here whatever its instructions: ``"auto"`` keeps it in fp32 (see the module)."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device) >= (8, 0)


def resolve_precision(name: str, value: Any, device: torch.device, *, bf16_allowed: bool = True) -> str:
    """A ``PRECISION`` knob checked against :data:`PRECISION_KNOB` and resolved for the device a run trains on.

    Args:
        name: the knob's name, for the message.
        value: ``"auto"``, ``"fp32"`` or ``"bf16"``.
        device: where the run trains (a resolved ``torch.device``).
        bf16_allowed: whether this run's trainer has a bf16 path; ``"auto"`` gives ``"fp32"`` when it has none.

    Returns:
        ``"fp32"`` or ``"bf16"``: ``"auto"`` is ``"bf16"`` where :func:`native_bf16` holds and the trainer allows it,
        else ``"fp32"`` (so a CPU run's knobs, keys and numbers are those of an fp32 run).
    """
    value = check_choice(name, value, PRECISION_KNOB)
    if value != "auto":
        return value
    return "bf16" if bf16_allowed and native_bf16(device) else "fp32"


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


def describe(precision: str, device: torch.device | None = None) -> str:
    """One line on which kernels ``precision`` runs on ``device`` (default: this CPU), printed by the training
    chapters."""

    check_precision("PRECISION", precision)
    if device is not None and device.type != "cpu":
        if precision == "fp32":
            return f"fp32 throughout on {device} (TF32 off: torch's default for matrix products)"
        native = "native bf16 tensor cores" if native_bf16(device) else "bf16 WITHOUT native support on this device"
        return f"bf16 autocast on {device} ({native}), fp32 weights, optimizer state and analyses"
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


def precision_line(precision: str, device: torch.device | None = None) -> str:
    """The setup line of a run that trains in ``precision`` on ``device``: ``"PRECISION='fp32': <describe>"``."""
    return f"PRECISION={precision!r}: {describe(precision, device)}"


def autocast(precision: str, device_type: str = "cpu") -> contextlib.AbstractContextManager:
    """The context to run a training forward pass in: bf16 autocast on ``device_type`` (``"cpu"``, ``"cuda"``,
    ``"mps"``), or nothing for fp32."""

    check_precision("PRECISION", precision)
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=torch.bfloat16)
