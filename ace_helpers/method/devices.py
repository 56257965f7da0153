"""Where tensors live: the ``DEVICE`` knob of every chapter that trains or runs a model, checked and resolved.

A device is written ``"auto"`` (CUDA when torch sees a GPU, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``
or ``"mps"``.  :func:`check_device` refuses a device that this machine lacks, naming the ones it has, before any
work; :func:`resolve_device` turns the knob into a ``torch.device``; :func:`describe_device` names it for a
chapter's setup cell; :func:`device_kind` is what a stored run's key records (CPU runs and GPU runs are other
samples of the same protocol, stored side by side, never compared bit for bit).
"""

from __future__ import annotations

import re
from typing import Any

import torch

from ace_helpers.method.checks import fail

DEVICE_FORMS = ("auto", "cpu", "cuda", "cuda:N", "mps")
"""The forms a device knob may take (N: a CUDA device index)."""

_PATTERN = re.compile(r"auto|cpu|mps|cuda(?::(\d+))?")


def available_devices() -> list[str]:
    """The devices torch can use on this machine: ``"cpu"``, then ``"cuda:0"``.. and ``"mps"`` when present."""
    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append("mps")
    return out


def check_device(name: str, value: Any) -> str:
    """A device knob's value, normalised (lower case, no spaces), refused when malformed or absent here.

    Args:
        name: the knob's name, for the message (e.g. ``"DEVICE"``).
        value: one of :data:`DEVICE_FORMS` (a ``torch.device`` is accepted too).

    Raises:
        ValueError: naming the value, the allowed forms and the devices this machine has.
    """
    if isinstance(value, torch.device):
        value = str(value)
    if not isinstance(value, str) or not _PATTERN.fullmatch(value.strip().lower()):
        fail(name, value, f"one of {list(DEVICE_FORMS)} (this machine has {available_devices()})")
    value = value.strip().lower()
    if value == "auto":
        return value
    have = available_devices()
    if value == "cuda":
        if not any(d.startswith("cuda") for d in have):
            raise ValueError(
                f"{name}={value!r} is not allowed here: torch sees no CUDA device (torch {torch.__version__}"
                f"{', built without CUDA' if torch.version.cuda is None else ''}); this machine has {have}"
            )
    elif value not in have:
        raise ValueError(f"{name}={value!r} is not allowed here: this machine has {have}")
    return value


def resolve_device(value: Any = "auto") -> torch.device:
    """The ``torch.device`` a checked knob names: ``"auto"`` is ``cuda`` when torch sees a GPU, else ``cpu``."""
    value = check_device("device", value)
    if value == "auto":
        value = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(value)


def device_kind(device: Any) -> str:
    """``"cpu"``, ``"cuda"`` or ``"mps"``: the part of a device that a stored run's key records."""
    return resolve_device(device).type


def device_key(kind: str, name: str = "DEVICE") -> dict[str, str]:
    """The entry a stored run's key gets for a device of ``kind`` (:func:`device_kind`): ``{name: kind}``, or nothing
    for the CPU, so that the runs stored before devices existed (all on the CPU) keep their keys."""
    return {} if kind == "cpu" else {name: kind}


def describe_device(value: Any) -> str:
    """One line for a setup cell: the knob, the device it resolves to and what that device is."""
    device = resolve_device(value)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        what = f"{props.name}, {props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}"
    elif device.type == "mps":
        what = "Apple GPU (Metal)"
    else:
        what = f"the CPU, {torch.get_num_threads()} torch thread(s)"
    return f"DEVICE={value!r}: {device} ({what})"
