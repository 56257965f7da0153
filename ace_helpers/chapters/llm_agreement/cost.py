"""Chapter 5's cost, estimated from its knobs and each model's ``config.json`` before anything is loaded.

Each stage of :func:`~ace_helpers.chapters.llm_agreement.pipeline.analyse_model` costs a number of *units*
(prompts × tokens × weights multiplied per token, see :func:`stage_units`); a stage costs a fixed time plus a
rate per unit, both fitted to timed runs of the chapter (:data:`CALIBRATION`: the stage times they logged).
The estimate is for one CPU thread of the kind that run used; on another CPU, or with other programs
running, expect up to about a factor of two either way, and far less on a GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ace_helpers import llm
from ace_helpers.llm import offline
from ace_helpers.llm.agreement import DEMO_PROMPTS, GENERATION_PROMPTS, synthetic_prompts
from ace_helpers.llm.agreement_states import layer_list
from ace_helpers.llm.size import depth_and_width, matmul_weights

STAGES = ("train states", "test states", "cores", "sweep", "controls", "demo", "generation")
"""The stages of one model's analysis, in the order the pipeline logs them."""

_BOOK_RUN = {"N_PROMPTS": 400, "LAYERS": "all", "GEN_TOKENS": 40, "GEN_SAMPLES": 8, "GEN_REFINE": 2, "N_RANDOM": 16}
_CI_RUN = {"N_PROMPTS": 300, "LAYERS": "every:2", "GEN_TOKENS": 30, "GEN_SAMPLES": 6, "GEN_REFINE": 2, "N_RANDOM": 8}

CALIBRATION: tuple[tuple[str, dict[str, Any], dict[str, float]], ...] = (
    ("smollm2-135m", _BOOK_RUN, {"train states": 18, "test states": 8, "cores": 7, "sweep": 41, "controls": 16,
                                 "demo": 1, "generation": 40}),
    ("gemma3-270m", _BOOK_RUN, {"train states": 18, "test states": 9, "cores": 5, "sweep": 28, "controls": 15,
                                "demo": 2, "generation": 64}),
    ("qwen2.5-0.5b", _BOOK_RUN, {"train states": 58, "test states": 26, "cores": 19, "sweep": 96, "controls": 39,
                                 "demo": 3, "generation": 111}),
    ("smollm2-135m", _CI_RUN, {"train states": 17, "test states": 8, "cores": 4, "sweep": 23, "controls": 12,
                               "demo": 1, "generation": 32}),
    ("qwen2.5-0.5b", _CI_RUN, {"train states": 46, "test states": 24, "cores": 10, "sweep": 52, "controls": 33,
                               "demo": 4, "generation": 83}),
)
"""Timed runs: (bundled model, knobs, seconds per stage as the pipeline logged them).  The ``book`` runs are the
chapter's book run of 2026-12-05 (commit c1aecb3: two notebooks at once); the ``ci`` runs were timed alone on
2026-12-06 (commit 106fbf4).  All on a 2-core Intel Xeon, one torch thread, under the reproducible kernels."""

CACHE_BUILD_SECONDS_PER_WEIGHT = 60e-9
"""Seconds per weight to turn a bundled GGUF into its float32 cache on first use (measured: 46 s for
Qwen2.5-Coder 0.5B, 94 s for 1.5B; rounded)."""


def prompt_tokens(prompts: list[str] | None) -> float:
    """Mean tokens per prompt, estimated from characters (about 4 per token in English BPE, plus 2 for splits).

    ``prompts``: the run's prompts; None: the chapter's synthetic set."""
    texts = prompts if prompts is not None else synthetic_prompts(200, 0)[0]
    return sum(len(t) for t in texts) / len(texts) / 4 + 2


def stage_units(config: Mapping[str, Any], knobs: Mapping[str, Any]) -> dict[str, float] | None:
    """Work of each stage (:data:`STAGES`) for one model: prompts × tokens × 10⁹ weights per token (the blocks'
    only, as these passes read a few logits; generation adds the unembedding), and for the cores layers × (d/1000)³.

    Args:
        config: the model's ``config.json`` (:func:`ace_helpers.llm.loading.model_config`).
        knobs: the chapter's knobs (N_PROMPTS, PROMPTS_FILE, LAYERS, GEN_TOKENS, GEN_SAMPLES, GEN_REFINE,
            N_RANDOM, REMOTE; a missing PROMPTS_FILE or REMOTE counts as None / False).

    Returns:
        units per stage, or None when the config lacks the entries the count needs.
    """
    blocks, full, shape = matmul_weights(config, unembedding=False), matmul_weights(config), depth_and_width(config)
    if blocks is None or full is None or shape is None:
        return None
    depth, width = shape
    w, d = blocks / 1e9, width / 1000
    prompts = list(knobs["PROMPTS_FILE"].prompts) if knobs.get("PROMPTS_FILE") is not None else None
    n = len(prompts) if prompts is not None else knobs["N_PROMPTS"]
    n_train, n_test = n // 2, n - n // 2
    t = prompt_tokens(prompts)
    ells = layer_list(knobs["LAYERS"], depth)
    tails = sum((depth - ell + 1) / depth for ell in ells)  # an edit at layer ℓ runs blocks ℓ+1..n again
    gen_t = prompt_tokens(list(GENERATION_PROMPTS)) + knobs["GEN_TOKENS"] / 2
    return {
        "train states": n_train * t * w,
        "test states": n_test * t * w,
        "cores": len(ells) * d**3,
        "sweep": 3 * n_test * t * w * tails,
        "controls": (knobs["N_RANDOM"] + 2) * n_test * t * w if knobs["N_RANDOM"] > 0 else 0.0,
        "demo": 4 * len(DEMO_PROMPTS) * w,
        "generation": 0.0 if knobs.get("REMOTE") else (
            knobs["GEN_SAMPLES"] * len(GENERATION_PROMPTS) * knobs["GEN_TOKENS"] * (knobs["GEN_REFINE"] + 3) * gen_t
            * full / 1e9),
    }


@functools.cache
def stage_rates() -> dict[str, tuple[float, float]]:
    """Each stage's (fixed seconds, seconds per unit): a non-negative least-squares fit to :data:`CALIBRATION`."""
    from scipy.optimize import nnls  # load time: SciPy is needed only when an estimate is made

    units = [stage_units(offline.OFFLINE_MODELS[m]["config"], k) for m, k, _ in CALIBRATION]
    rates = {}
    for stage in STAGES:
        a = np.array([[1.0, u[stage]] for u in units])
        fixed, per_unit = nnls(a, np.array([seconds[stage] for _, _, seconds in CALIBRATION], dtype=float))[0]
        rates[stage] = (float(fixed), float(per_unit))
    return rates


def model_seconds(config: Mapping[str, Any], knobs: Mapping[str, Any]) -> dict[str, float] | None:
    """Estimated seconds per stage for one model (None when its config cannot be sized); a stage with no work
    (no controls, no generation) costs nothing."""
    units = stage_units(config, knobs)
    if units is None:
        return None
    rates = stage_rates()
    return {s: (rates[s][0] + rates[s][1] * units[s]) if units[s] > 0 else 0.0 for s in STAGES}


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def cost_estimate(cfg: Mapping[str, Any]) -> str:
    """One line for the setup cell: each model's estimated time and the total, before anything is loaded.

    ``cfg``: the chapter's resolved knobs.  A model read from its stored run costs nothing; a model whose
    ``config.json`` is not found here (remote runs) is named as not estimated; a bundled model whose cache is not
    built yet adds its first-use conversion.
    """
    from ace_helpers.chapters.llm_agreement.stored import STORED_MODELS, load_model_result  # load time: avoids an import cycle

    parts, total, unknown = [], 0.0, []
    for source, label in zip(cfg["MODELS"], llm.model_labels(list(cfg["MODELS"]))):
        if label in STORED_MODELS and load_model_result(cfg, label) is not None:
            parts.append(f"{label} read from its stored run")
            continue
        config = None if cfg["REMOTE"] else llm.model_config(source)
        seconds = model_seconds(config, cfg) if config else None
        if seconds is None:
            unknown.append(label)
            continue
        s = sum(seconds.values())
        build = ""
        if source in offline.OFFLINE_MODELS and not offline.offline_cache_built(source):
            extra = CACHE_BUILD_SECONDS_PER_WEIGHT * (matmul_weights(config) or 0)
            s += extra
            build = f" incl. ~{_minutes(extra)} to build its cache"
        parts.append(f"{label} ~{_minutes(s)}{build}")
        total += s
    line = f"cost estimate (one CPU thread like the book's 2-core Xeon; within about ×2): {', '.join(parts) or 'none'}"
    if parts:
        line += f"; in all ~{_minutes(total)}"
    if unknown:
        line += f"; not estimated (no local config.json): {', '.join(unknown)}"
    return line


PAPER_N_PROMPTS = 1200
"""The paper's prompt count: 600 test prompts after the 50/50 split (the ``paper`` preset's N_PROMPTS)."""


def paper_size_line(cfg) -> str | None:
    """What this run would cost at the paper's test-set size (:data:`PAPER_N_PROMPTS`), beside its own estimate;
    None when the run already has that many synthetic prompts or reads a prompts file.

    ``cfg``: the chapter's resolved :class:`~ace_helpers.repro.params.Params`."""
    if cfg["PROMPTS_FILE"] is not None or cfg["N_PROMPTS"] >= PAPER_N_PROMPTS:
        return None
    at_paper = cost_estimate(cfg.replace(N_PROMPTS=PAPER_N_PROMPTS)).split(": ", 1)[1]
    return (f"this run has {cfg['N_PROMPTS'] - cfg['N_PROMPTS'] // 2} test prompts; the paper's 600 "
            f"(N_PROMPTS={PAPER_N_PROMPTS}) would cost, by the same estimate: {at_paper}")
