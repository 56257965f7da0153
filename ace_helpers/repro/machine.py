"""Machine facts for manifests and reports: the CPU, the kernel setting, the library versions."""

from __future__ import annotations

import os
import platform
import time
from importlib import metadata
from typing import Any

import torch

from ace_helpers.repro.kernels import in_force
from ace_helpers.toys.precision import bf16_kernels, cpu_info


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else the platform's machine name (for reports)."""
    return cpu_info().get("model name") or platform.machine()


def machine_line() -> str:
    """One line for a benchmark report: the UTC date and time, the CPU model, the CPU count and torch's version."""
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {cpu_model()}, {os.cpu_count()} CPUs; torch {torch.__version__}"
    )


def machine() -> dict[str, Any]:
    """What a manifest records of the machine: ``processor``, ``cpus``, the CPU ``model`` (from
    ``/proc/cpuinfo``, ``""`` where there is none), ``bf16_kernels`` (``"amx"``,
    ``"avx512_bf16"`` or ``"emulated"``: bf16 results are bitwise reproducible per kind only) and
    ``kernels``, the fp32 kernel setting (:func:`ace_helpers.repro.kernels.in_force`)."""
    return {
        "processor": platform.machine(),
        "cpus": os.cpu_count(),
        "model": cpu_info().get("model name", ""),
        "bf16_kernels": bf16_kernels(),
        "kernels": in_force(),
    }


def versions() -> dict[str, str]:
    """Versions of python and the libraries the book depends on (for manifests and cell 2)."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("torch", "numpy", "scipy", "nnsight", "transformers", "seaborn", "matplotlib"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out
