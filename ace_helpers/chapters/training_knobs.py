"""The knobs every training chapter declares the same way: where it trains (``DEVICE``) and in what precision
(``PRECISION``), each with the chapter's own comment.  A chapter's knob table (:mod:`ace_helpers.repro.knobs`) lists
them, so they are checked, and refused, alike everywhere; ``PRECISION`` is resolved for the device ``DEVICE``
names, which the table checks after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.method.devices import check_device, resolve_device
from ace_helpers.repro.knobs import Knob, knob, plain
from ace_helpers.toys.precision import resolve_precision


def resolved_precision(name: str, value: Any, knobs: Mapping[str, Any]) -> str:
    """``PRECISION`` checked, with ``"auto"`` resolved for the device of ``knobs["DEVICE"]`` (checked here too)."""
    return resolve_precision(name, value, resolve_device(check_device("DEVICE", knobs["DEVICE"])))


def precision_knob(doc: str) -> Knob:
    """``PRECISION``: "auto" at every preset, resolved for the run's device (:func:`resolved_precision`)."""
    return knob("PRECISION", doc, resolved_precision, ci="auto", book="auto")


def device_knob(doc: str) -> Knob:
    """``DEVICE``: "auto" at every preset, checked by :func:`~ace_helpers.method.devices.check_device`."""
    return knob("DEVICE", doc, plain(check_device), ci="auto", book="auto")
