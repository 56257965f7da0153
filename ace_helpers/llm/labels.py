"""Short, machine-independent labels for models: what results, tables and figures call a model (never a path)."""

from __future__ import annotations

import re
from pathlib import Path

from ace_helpers.llm.offline import OFFLINE_MODELS


def model_label(name: str) -> str:
    """A short, machine-independent label for a model: a bundled model's name, a local folder's own name, or a
    Hub id's last part (``"meta-llama/Llama-3.1-8B"`` -> ``"Llama-3.1-8B"``); results and figures name models by it."""
    if name in OFFLINE_MODELS:
        return name
    folder = Path(name).expanduser()
    if folder.is_dir():
        return folder.resolve().name
    return name.rstrip("/").rsplit("/", 1)[-1]


def model_labels(names: list[str]) -> list[str]:
    """:func:`model_label` of each name, made distinct with ``-2``, ``-3``, … where two would collide."""
    out: list[str] = []
    for name in names:
        label, k = model_label(name), 2
        while label in out:
            label, k = f"{model_label(name)}-{k}", k + 1
        out.append(label)
    return out


def model_slug(name: str) -> str:
    """``name`` (a model's label, or a pair ``"a~b"``) as a part of a claim id: lower case, runs of other characters as
    ``_`` (``"qwen2.5-0.5b"`` -> ``"qwen2_5_0_5b"``)."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "model"
