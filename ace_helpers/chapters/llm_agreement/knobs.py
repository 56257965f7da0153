"""Chapter 5's knobs, declared once (:data:`KNOBS`): the presets, the validation and the notebook's parameters cell
derive from this table (:mod:`ace_helpers.repro.knobs`).

MODELS: a name or a list of distinct names, each loadable here without network
(:func:`ace_helpers.llm.loading.unavailable_reason`: a bundled offline model, a local folder, or a Hub id whose weights
are in the local Hugging Face cache; with REMOTE any Hub id); REMOTE: bool (True needs ``$NDIF_API_KEY``); N_PROMPTS: even, 20..100 000;
PROMPTS_FILE: None or a UTF-8 .csv / .json file, read here once (the run uses what was read), with at least 4 prompts
of each number and both numbers in both halves of the seeded split; LAYERS: ``"all"``, ``"every:k"`` (layers k, 2k, …
of each model, whatever its depth) or 1-based layers (sorted, deduplicated; at most each model's depth); SEED >= 0;
BATCH_SIZE; GEN_TOKENS (prompt + new tokens within each model's context); GEN_SAMPLES; GEN_REFINE (extra secant steps
of the generation calibration, 0 = one step); GEN_EPS (target copula margin on the other side, nats); N_PERMUTATIONS
(the alignment and within-class knob p-values); N_RANDOM (random directions of the controls at the chosen layer,
0..256; 0: no controls); DEVICE (:mod:`ace_helpers.method.devices`: an absent device is refused; ignored with REMOTE,
where the server decides); DTYPE (:mod:`ace_helpers.llm.precision`: ``auto`` = the paper's bf16 / fp16 per model
family on a GPU, float32 on the CPU).  Memory estimates of the states (prompts × layers × width) and of one backward
batch must stay under half this machine's memory (:func:`check_sizes`).

The ``paper`` preset uses the paper's GPT-2 models: their weights must be in the local Hugging Face cache
(``huggingface-cli download gpt2`` etc. once, with network access), else resolving it is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ace_helpers import llm
from ace_helpers.llm.agreement import GENERATION_PROMPTS, PromptsFile, read_prompts_file, split, synthetic_prompts
from ace_helpers.llm.agreement_states import every_step, layer_list
from ace_helpers.llm.precision import check_dtype
from ace_helpers.method import checks
from ace_helpers.method.devices import check_device
from ace_helpers.repro.knobs import Knob, checker, knob, parameters_cell, plain, presets
from ace_helpers.repro.params import ChapterParams

NOTEBOOK = "05_llm_agreement"
BUNDLED = ["smollm2-135m", "gemma3-270m", "qwen2.5-0.5b", "qwen2.5-1.5b"]

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


def check_sizes(cfg: dict[str, Any]) -> None:
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


def _remote(name: str, value: Any, knobs: Mapping[str, Any] | None = None) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be True or False")
    if value and not os.environ.get("NDIF_API_KEY"):
        raise ValueError(f"{name}=True is not allowed here: it needs an NDIF API key in $NDIF_API_KEY "
                         "(get one at https://login.ndif.us)")
    return value


def _models(name: str, value: Any, knobs: Mapping[str, Any]) -> list[str]:
    models = [value] if isinstance(value, str) else value
    models = checks.check_list(name, models, _check_model(_remote("REMOTE", knobs["REMOTE"])))
    if len(set(models)) != len(models):
        raise ValueError(f"{name}={models!r} is not allowed: {name} must not repeat a model")
    return models


def _n_prompts(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    n = checks.check_int(name, value, low=20, high=MAX_PROMPTS)
    if n % 2:
        raise ValueError(f"{name}={n!r} is not allowed: {name} must be even (half singular)")
    return n


def _prompts_file(name: str, value: Any, knobs: Mapping[str, Any]) -> PromptsFile | None:
    return None if value is None else _check_prompts_file(value, checks.check_int("SEED", knobs["SEED"], low=0))


def _layers(name: str, value: Any, knobs: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value != "all":
        every_step(value)
        return value
    if value == "all":
        return value
    return sorted(set(checks.check_list(name, value, lambda n, v: checks.check_int(n, v, low=1))))


def _plain_int(low: int, high: int | None = None) -> Any:
    return plain(checks.check_int, low=low, high=high)


KNOBS: tuple[Knob, ...] = (
    knob("MODELS", '"smollm2-135m", "gemma3-270m", "qwen2.5-0.5b", "qwen2.5-1.5b", a local folder, or a Hub id ("gpt2", ...)',
         _models, ci=["smollm2-135m"], book=BUNDLED, paper=["gpt2", "gpt2-medium", "gpt2-large"]),
    knob("REMOTE", "True: run the traces on NDIF (needs NDIF_API_KEY; no generation section)", _remote, ci=False,
         book=False),
    knob("N_PROMPTS", "synthetic prompts (half singular); split 50/50 into train (core) and test (evaluation)", _n_prompts,
         ci=300, book=400, paper=1200),
    knob("PROMPTS_FILE", "your own prompts (CSV prompt,number or JSON list); replaces the synthetic set", _prompts_file,
         ci=None, book=None),
    knob("LAYERS", '"all", "every:k" (layers k, 2k, … of each model), or a list of layers ℓ (output of block ℓ−1)', _layers,
         ci="every:2", book="all"),
    knob("SEED", "seed of the prompt generator, the split and the sampled generations", _plain_int(0), ci=0, book=0),
    knob("BATCH_SIZE", "prompts per forward/backward batch", _plain_int(1, 4096), ci=50, book=50),
    knob("GEN_TOKENS", "new tokens per steered generation (paper: 50)", _plain_int(1, 512), ci=30, book=40, paper=50),
    knob("GEN_SAMPLES", "sampled generations per generation prompt", _plain_int(1, 64), ci=6, book=8, paper=4),
    knob("GEN_REFINE", "extra secant steps in the per-step flip calibration (0: a single secant step)", _plain_int(0, 10),
         ci=2, book=2, paper=0),
    knob("GEN_EPS", "target copula margin on the other side at every step, in nats (official code: 1.0)",
         plain(checks.check_range, low=0.0, high=50.0, low_open=True), ci=3.0, book=3.0, paper=1.0),
    knob("N_PERMUTATIONS", "permutations for the alignment and within-class knob p-values", _plain_int(100, 10**6),
         ci=2000, book=10000),
    knob("N_RANDOM", "random directions of the controls at the chosen layer (0 for no controls)", _plain_int(0, 256),
         ci=8, book=16),
    knob("DEVICE", 'where the models run: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"',
         plain(check_device), ci="auto", book="auto"),
    knob("DTYPE", '"auto" (the paper\'s bf16 / fp16 per model family on a GPU, float32 on the CPU), "family" (that on any '
         'device), "float32", "bfloat16", "float16"', plain(check_dtype), ci="auto", book="auto"),
)

PRESETS = presets(KNOBS)
_CHECK = checker(KNOBS, check_sizes)


def check(values: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming the knob) and normalise in place, then the size estimates.  (A
    module-level function, so that resolved settings pickle for worker processes.)"""
    _CHECK(values)
#: The chapter's knobs: ``cfg = PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)
#: The lines of the notebook's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOBS, NOTEBOOK)
