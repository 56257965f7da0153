"""Chapter 5's stored model runs: a model too slow for a cold book (:data:`STORED_MODELS`) is analysed once by
``python -m ace_helpers.chapters.llm_agreement --preset book --store qwen2.5-1.5b`` and its analysis is stored as an
artifact (``book/artifacts/llm_agreement``); the chapter reads it whenever the knobs that shape the analysis match.

A :class:`~.pipeline.ModelResult` is stored as plain JSON plus its arrays (npz, no pickle), without its per-layer
cores (D × D bases; the chapter's tables and figures do not read them).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ace_helpers.chapters.llm_agreement.controls import Controls
from ace_helpers.chapters.llm_agreement.generation import Generation
from ace_helpers.chapters.llm_agreement import pipeline
from ace_helpers.chapters.llm_agreement.pipeline import AgreementRun, ModelResult
from ace_helpers.llm.precision import dtype_knob
from ace_helpers.method.devices import device_key, device_kind
from ace_helpers.method.stats import KnobFit
from ace_helpers.repro.artifacts import display_path, load_artifact, project_root, save_artifact
from ace_helpers.repro.params import Params

#: Models whose book-preset analysis the chapter reads from a stored run when one matches (the 1.5B: about half
#: an hour on one CPU thread, beyond the cold book's budget).
STORED_MODELS = ("qwen2.5-1.5b",)

#: The knobs that shape one model's analysis (the key of its stored run, with the model's label).
KEY_KNOBS = ("N_PROMPTS", "PROMPTS_FILE", "LAYERS", "SEED", "BATCH_SIZE", "GEN_TOKENS", "GEN_SAMPLES", "GEN_REFINE",
             "GEN_EPS", "N_PERMUTATIONS", "N_RANDOM", "REMOTE")  # fmt: skip

_TYPES = {cls.__name__: cls for cls in (ModelResult, Controls, Generation, KnobFit)}


def store_dir() -> Path:
    """``book/artifacts/llm_agreement`` of this checkout."""
    return project_root() / "book" / "artifacts" / "llm_agreement"


def store_key(cfg: Params, label: str) -> dict[str, Any]:
    """The stored run's key: the model's label, :data:`KEY_KNOBS` (a prompts file by its path), and where and in
    which dtype the model ran when that is not the CPU in float32 (:func:`precision_key`)."""
    knobs = {k: (str(cfg[k]) if k == "PROMPTS_FILE" and cfg[k] is not None else cfg[k]) for k in KEY_KNOBS}
    return {"model": label, **knobs, **precision_key(cfg)}


def precision_key(cfg: Params) -> dict[str, str]:
    """``DEVICE`` (its kind) and ``DTYPE`` entries of a stored run's key, each only when it is not the default
    computation (the CPU; float32), so that the runs stored before these knobs existed keep their keys.  ``DTYPE``
    ``"auto"`` is recorded as what it means on that device (``"float32"`` on the CPU, ``"family"`` elsewhere)."""
    if cfg["REMOTE"]:
        return {}
    kind = device_kind(cfg["DEVICE"])
    dtype = dtype_knob(cfg["DTYPE"], kind)
    return {**device_key(kind), **({} if dtype == "float32" else {"DTYPE": dtype})}


def _encode(obj: Any, arrays: dict[str, np.ndarray], path: str) -> Any:
    if isinstance(obj, np.ndarray):
        arrays[path] = obj
        return {"__array__": path}
    if dataclasses.is_dataclass(obj):
        fields = {f.name: _encode(getattr(obj, f.name), arrays, f"{path}.{f.name}") for f in dataclasses.fields(obj)
                  if not (type(obj) is ModelResult and f.name == "cores")}  # fmt: skip
        return {"__type__": type(obj).__name__, **fields}
    if isinstance(obj, dict):
        return {str(k): _encode(v, arrays, f"{path}.{k}") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_encode(v, arrays, f"{path}.{i}") for i, v in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _decode(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, dict) and "__array__" in obj:
        return arrays[obj["__array__"]]
    if isinstance(obj, dict) and "__type__" in obj:
        cls = _TYPES[obj["__type__"]]
        hints = typing.get_type_hints(cls)
        values = {k: _decode(v, arrays) for k, v in obj.items() if k != "__type__"}
        for k, v in values.items():  # list[tuple[int, int]] fields come back as tuples
            hint = hints.get(k)
            if typing.get_origin(hint) is list and typing.get_args(hint) and typing.get_origin(typing.get_args(hint)[0]) is tuple:
                values[k] = [tuple(x) for x in v]
        return cls(**values)
    if isinstance(obj, dict):
        return {k: _decode(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v, arrays) for v in obj]
    return obj


def save_model_result(cfg: Params, res: ModelResult, wall_s: float, directory: Path | None = None) -> Path:
    """Store ``res`` (analysed under ``cfg``) as the artifact ``<label>``; returns its manifest path."""
    arrays: dict[str, np.ndarray] = {}
    data = _encode(res, arrays, "r")
    return save_artifact(directory or store_dir(), res.name, params=store_key(cfg, res.name), data=data, arrays=arrays,
                         wall_s=wall_s)  # fmt: skip


def load_model_result(cfg: Params, label: str, directory: Path | None = None) -> tuple[ModelResult, dict] | None:
    """The stored analysis of model ``label`` made with ``cfg``'s :data:`KEY_KNOBS`, with its manifest; None if none
    matches (or the files are corrupt)."""
    found = load_artifact(directory or store_dir(), label, params=store_key(cfg, label))
    if found is None:
        return None
    return _decode(found.data, found.arrays), found.manifest


def run(cfg: Params, *, log: Callable[[str], None] = print) -> AgreementRun:
    """The chapter's run (:func:`~.pipeline.run`), reading the stored analysis of each model of :data:`STORED_MODELS`
    whose stored run matches ``cfg`` (and saying so), computing every other model."""

    def read(label: str) -> ModelResult | None:
        if label not in STORED_MODELS:
            return None
        found = load_model_result(cfg, label)
        if found is None:
            log(f"{label}: no stored run matches these knobs: analysing it now")
            return None
        res, manifest = found
        log(f"{label}: read its stored run ({display_path(store_dir() / label)}.*; made {manifest['created']} at commit "
            f"{manifest['git_commit'][:7]} in {manifest['wall_s']:.0f} s)")
        return res

    return pipeline.run(cfg, log=log, read_stored=read)


__all__ = ["STORED_MODELS", "KEY_KNOBS", "store_dir", "store_key", "precision_key", "save_model_result", "load_model_result", "run"]
