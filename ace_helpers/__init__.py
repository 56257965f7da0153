"""ace_helpers: Algorithmic Core Extraction (ACE) for torch models and LLMs.

The public API is re-exported here: the method's entry points.  The interventions (which import nnsight)
are imported on first use, so ``import ace_helpers`` stays light.  Everything else lives in a wing and is
imported from it: ``ace_helpers.method``, ``ace_helpers.toys``, ``ace_helpers.llm``, ``ace_helpers.repro``,
and the chapters in ``ace_helpers.chapters``.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from ace_helpers.method.compare import (
    aligned_correlations,
    aligned_spearman,
    cca,
    principal_angles,
    projector_overlap,
    weight_cosine,
)
from ace_helpers.method.core import Core, GramianAccumulator, extract_core, extract_core_from_gramians
from ace_helpers.method.operators import fit_dynamics, fit_shift_operator, match_eigenvalues, near_unit_circle, rotational_modes

__version__ = "0.1.0"

# tqdm.auto (imported by nnsight/transformers) warns in notebooks without ipywidgets; the bars still work.
warnings.filterwarnings("ignore", message="IProgress not found")

_LAZY_FUNCTIONS = {
    "capture": "ace_helpers.method.interventions",
    "run_with_core": "ace_helpers.method.interventions",
    "run_with_edit": "ace_helpers.method.interventions",
    "accuracy_under": "ace_helpers.method.interventions",
}

__all__ = [
    "Core",
    "GramianAccumulator",
    "extract_core",
    "extract_core_from_gramians",
    "projector_overlap",
    "principal_angles",
    "cca",
    "aligned_correlations",
    "aligned_spearman",
    "weight_cosine",
    "fit_dynamics",
    "fit_shift_operator",
    "near_unit_circle",
    "rotational_modes",
    "match_eigenvalues",
    *_LAZY_FUNCTIONS,
]


def __getattr__(name: str) -> Any:
    """The nnsight-backed functions of :data:`_LAZY_FUNCTIONS`, imported on first use; nothing else."""
    if name in _LAZY_FUNCTIONS:
        return getattr(importlib.import_module(_LAZY_FUNCTIONS[name]), name)
    raise AttributeError(f"module 'ace_helpers' has no attribute {name!r}")
