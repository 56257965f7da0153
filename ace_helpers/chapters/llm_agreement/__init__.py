"""Chapter 5 (``05_llm_agreement``): one steerable axis for subject–verb agreement in real LLMs.

The chapter's presets and knob check (:data:`PARAMS`); the pipeline lives in the submodules and
is re-exported here:

* :mod:`.states` — last-token block outputs ``H`` and margin gradients ``G = ∂m/∂h`` for all layers
  from one backward pass per batch (:func:`collect_states`), one 1-D core per layer
  (:func:`layer_cores`).
* :mod:`.sweep` — test margins under keep / remove / flip (:func:`sweep_margins`) and the flip demo.
* :mod:`.generation` — steered generation with the calibrated per-step flip (:func:`steered_generate`).
* :mod:`.pipeline` — one model end to end (:func:`analyse_model`), the chapter run
  (:func:`run_chapter`), the cross-model alignment, the claims (:func:`build_claims`, known gaps in
  :data:`KNOWN_GAPS`) and the flat ``results.json`` entries (:func:`flat_results`; keys listed in
  :mod:`.pipeline`).
"""

from __future__ import annotations

from typing import Any

from ace_helpers import params
from ace_helpers.chapters.llm_agreement.generation import (
    Generation,
    copula_disagreements,
    generate_with_flip,
    number_pair_ids,
    steered_generate,
)
from ace_helpers.chapters.llm_agreement.pipeline import (
    KNOWN_GAPS,
    ModelResult,
    analyse_model,
    build_claims,
    cross_model_alignment,
    flat_results,
    pairwise_alignment,
    run_chapter,
)
from ace_helpers.chapters.llm_agreement.states import (
    States,
    collect_states,
    layer_cores,
    layer_list,
    spectral_gap,
    verb_head,
)
from ace_helpers.chapters.llm_agreement.sweep import (
    MODES,
    demo_scores,
    demo_tests,
    last_token_probs,
    sweep_margins,
)

PRESETS: dict[str, dict[str, Any]] = {
    "ci": {
        "MODELS": ["smollm2-135m"], "REMOTE": False, "N_PROMPTS": 300, "PROMPTS_FILE": None,
        "LAYERS": list(range(2, 31, 2)),
        "SEED": 0, "BATCH_SIZE": 50, "GEN_TOKENS": 30, "GEN_SAMPLES": 6, "GEN_REFINE": 2,
        "GEN_EPS": 3.0, "N_PERMUTATIONS": 2000,
    },
    "book": {
        "MODELS": ["smollm2-135m", "gemma3-270m"], "REMOTE": False, "N_PROMPTS": 400, "PROMPTS_FILE": None,
        "LAYERS": "all", "SEED": 0, "BATCH_SIZE": 50, "GEN_TOKENS": 40, "GEN_SAMPLES": 8, "GEN_REFINE": 2,
        "GEN_EPS": 3.0, "N_PERMUTATIONS": 10000,
    },
    "paper": {
        "MODELS": ["gpt2", "gpt2-medium", "gpt2-large"], "REMOTE": False, "N_PROMPTS": 1200, "PROMPTS_FILE": None,
        "LAYERS": "all", "SEED": 0, "BATCH_SIZE": 50, "GEN_TOKENS": 50, "GEN_SAMPLES": 4, "GEN_REFINE": 0,
        "GEN_EPS": 1.0, "N_PERMUTATIONS": 10000,
    },
}
"""Knobs per preset. ``paper`` uses the paper's GPT-2 models (need downloaded weights)."""


def _check_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be a model name such as 'smollm2-135m'")
    return value.strip()


def check(cfg: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming the knob) and normalise in place.

    MODELS: a name or a list of distinct names; REMOTE: bool; N_PROMPTS: even, 8..100 000;
    PROMPTS_FILE: None or a path string; LAYERS: ``"all"`` or 1-based layers (sorted, deduplicated);
    SEED >= 0; BATCH_SIZE; GEN_TOKENS; GEN_SAMPLES; GEN_REFINE (extra secant steps of the generation
    calibration, 0 = one step); GEN_EPS (target copula margin on the other side, nats); N_PERMUTATIONS.
    """
    models = cfg["MODELS"]
    if isinstance(models, str):
        models = [models]
    cfg["MODELS"] = params.check_list("MODELS", models, _check_name)
    if len(set(cfg["MODELS"])) != len(cfg["MODELS"]):
        raise ValueError(f"MODELS={cfg['MODELS']!r} is not allowed: MODELS must not repeat a model")
    params.check_choice("REMOTE", cfg["REMOTE"], (True, False))
    cfg["N_PROMPTS"] = params.check_int("N_PROMPTS", cfg["N_PROMPTS"], low=8, high=100_000)
    if cfg["N_PROMPTS"] % 2:
        raise ValueError(f"N_PROMPTS={cfg['N_PROMPTS']!r} is not allowed: N_PROMPTS must be even (half singular)")
    if cfg["PROMPTS_FILE"] is not None and not isinstance(cfg["PROMPTS_FILE"], str):
        raise ValueError(f"PROMPTS_FILE={cfg['PROMPTS_FILE']!r} is not allowed: it must be None or a path string")
    layers = cfg["LAYERS"]
    if layers != "all":
        cfg["LAYERS"] = sorted(set(params.check_list("LAYERS", layers, lambda n, v: params.check_int(n, v, low=1))))
    cfg["SEED"] = params.check_int("SEED", cfg["SEED"], low=0)
    cfg["BATCH_SIZE"] = params.check_int("BATCH_SIZE", cfg["BATCH_SIZE"], low=1, high=4096)
    cfg["GEN_TOKENS"] = params.check_int("GEN_TOKENS", cfg["GEN_TOKENS"], low=1, high=512)
    cfg["GEN_SAMPLES"] = params.check_int("GEN_SAMPLES", cfg["GEN_SAMPLES"], low=1, high=64)
    cfg["GEN_REFINE"] = params.check_int("GEN_REFINE", cfg["GEN_REFINE"], low=0, high=10)
    cfg["GEN_EPS"] = params.check_range("GEN_EPS", cfg["GEN_EPS"], low=0.0, high=50.0, low_open=True)
    cfg["N_PERMUTATIONS"] = params.check_int("N_PERMUTATIONS", cfg["N_PERMUTATIONS"], low=100, high=10**6)


PARAMS = params.ChapterParams("05_llm_agreement", PRESETS, check)
"""The chapter's knobs: ``cfg = PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere."""

__all__ = [
    "PARAMS", "PRESETS", "check", "KNOWN_GAPS", "MODES",
    "States", "collect_states", "layer_cores", "layer_list", "spectral_gap", "verb_head",
    "sweep_margins", "last_token_probs", "demo_scores", "demo_tests",
    "Generation", "generate_with_flip", "steered_generate", "copula_disagreements", "number_pair_ids",
    "ModelResult", "analyse_model", "run_chapter", "pairwise_alignment", "cross_model_alignment",
    "build_claims", "flat_results",
]
