"""Where the modular-addition training run is stored, and under which keys: run hash, model and snapshot keys, segment seeds."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ace_helpers.chapters.modadd.config import run_knob_values
from ace_helpers.repro.artifacts import default_output_dir, project_root, to_plain

#: Training is split into segments of this many epochs; each segment reseeds the shuffling and
#: dropout RNGs from (seed, arm, model, segment start), so a run resumed from a snapshot gives
#: the same numbers as an uninterrupted one.  Fixed: changing it changes the numbers.
SEGMENT_EPOCHS = 500


def segment_seed(seed: int, arm: int, model_index: int, start: int) -> int:
    """Seed of one training segment (shuffling and dropout), a pure function of its position."""
    digest = hashlib.sha256(f"{seed}/{arm}/{model_index}/{start}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def run_hash(cfg: Mapping[str, Any]) -> str:
    """12 hex digits naming a run's artifacts: a hash of its :data:`RUN_KNOBS` values."""
    key = json.dumps(to_plain(run_knob_values(cfg)), sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def model_key(cfg: Mapping[str, Any], model_index: int) -> dict[str, Any]:
    """Parameters the stored analyses of model ``model_index`` must match: the run knobs and the index."""
    return run_knob_values(cfg) | {"model_index": model_index}


def snapshot_key(cfg: Mapping[str, Any], model_index: int) -> dict[str, Any]:
    """Parameters a resume snapshot of model ``model_index`` must match."""
    return model_key(cfg, model_index) | {"segment_epochs": SEGMENT_EPOCHS}


def snapshot_name(cfg: Mapping[str, Any], model_index: int) -> str:
    """Artifact name stem of model ``model_index``'s snapshots (``<stem>_wd``, ``<stem>_nowd``)."""
    return f"snapshot_{run_hash(cfg)}_m{model_index}"


def snapshot_dir_for(cfg: Mapping[str, Any]) -> Path:
    """Scratch folder for resume snapshots (never committed): ``outputs/modadd_grokking_snapshots``."""
    return default_output_dir("modadd_grokking_snapshots")


def artifact_dir(cfg: Mapping[str, Any]) -> Path:
    """Where the run is cached: ``ARTIFACT_DIR``, else ``book/artifacts/modadd_grokking`` (book, paper
    presets: committed with the book) or ``outputs/modadd_grokking_cache`` (ci: never committed, so CI trains)."""
    if cfg["ARTIFACT_DIR"] is not None:
        return Path(cfg["ARTIFACT_DIR"])
    if cfg["PRESET"] == "ci":
        return default_output_dir("modadd_grokking_cache")
    return project_root() / "book" / "artifacts" / "modadd_grokking"
