"""Chapter 6's knobs, declared once (:data:`KNOBS`): its own (the planted system, DAS, the LLMs) and those it shares
with chapter 7's toy models, restated with this chapter's comments and presets but chapter 7's checks
(:mod:`ace_helpers.chapters.toy_views.knobs`).  The presets, the validation and the parameters cell derive from it.

``ci``: planted + Markov (chapter 1's ci training), shorter DAS training (150 steps at lr 0.05); ``book``: 3000
Markov training sequences and 20 epochs, DAS 300 steps at lr 0.02, mod-add (chapter 7's setting: p = 31, trained
until test accuracy 0.99 and 200 steps more) and subject–verb agreement in the four bundled LLMs (chapter 5's 400
synthetic prompts, ranks 1..4; off at ci, where loading the models would dominate the tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.chapters.toy_views import knobs as toy
from ace_helpers.method import checks
from ace_helpers.repro.knobs import Knob, by_name, checker, knob, parameters_cell, plain, presets, restate
from ace_helpers.repro.params import ChapterParams
from ace_helpers.toys.tasks.markov import PAPER_CHAIN

NOTEBOOK = "06_ace_vs_alternatives"
LLMS = ["smollm2-135m", "gemma3-270m", "qwen2.5-0.5b", "qwen2.5-1.5b"]


def _model_name(name: str, value: Any) -> str:
    """A non-empty model name (whether it loads here is decided at run time: an unavailable model is not tested)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name}={value!r} is not allowed: LLM_MODELS must list model names such as 'smollm2-135m'")
    return value.strip()


def _models(name: str, value: Any, knobs: Mapping[str, Any]) -> list[str]:
    models = checks.check_list(name, value, _model_name, min_len=0)
    if len(set(models)) != len(models):
        raise ValueError(f"{name}={models!r} is not allowed: {name} must list distinct names")
    return models


def _even_prompts(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    n = checks.check_int(name, value, low=20, high=20_000)
    if n % 2:
        raise ValueError(f"{name}={n!r} is not allowed: {name} must be even")
    return n


_T = by_name(toy.KNOBS)
KNOBS: tuple[Knob, ...] = (
    knob("N_SAMPLES", "planted system: activation rows", plain(checks.check_int, low=200, high=200_000), ci=4000, book=4000),
    knob("DIM", "planted system: activation dimension", plain(checks.check_int, low=12, high=512), ci=32, book=32),
    knob(
        "R_CORE",
        "planted system: dimension of each planted block",
        lambda n, v, k: checks.check_int(n, v, low=1, high=k["DIM"] // 3),
        ci=3,
        book=3,
    ),
    knob(
        "PLANTED_R_MAX",
        "planted system: ranks 1..PLANTED_R_MAX",
        lambda n, v, k: checks.check_int(n, v, low=k["R_CORE"], high=k["DIM"]),
        ci=9,
        book=9,
    ),
    restate(
        _T["T"], "Markov transition matrix as a list of rows; None: the paper's 4-state chain", ci=PAPER_CHAIN, book=PAPER_CHAIN
    ),
    restate(_T["D_MODEL"], "Markov model width", ci=64, book=64),
    restate(_T["SEQ_LEN"], "Markov sequence length", ci=32, book=32),
    restate(_T["N_TRAIN"], "Markov training sequences (the methods are fitted on them)", ci=1000, book=3000),
    restate(_T["N_TEST"], "Markov held-out sequences (every basis is scored on them)", ci=1000, book=1000),
    restate(_T["EPOCHS"], "Markov training epochs", ci=8, book=20),
    restate(_T["LR"], "Markov AdamW learning rate", ci=1e-3, book=1e-3),
    restate(_T["R_MAX"], "Markov ranks 1..R_MAX", ci=8, book=8),
    restate(_T["ENERGY"], "Markov ACE energy threshold", ci=0.999, book=0.999),
    restate(_T["SEED"], "seed of the planted system, the Markov model, the random subspaces and DAS", ci=0, book=0),
    knob("DAS_STEPS", "Adam steps of each learned (DAS) basis", plain(checks.check_int, low=1, high=100_000), ci=150, book=300),
    knob(
        "DAS_LR",
        "Adam learning rate of the learned bases",
        plain(checks.check_range, low=0.0, high=1.0, low_open=True),
        ci=0.05,
        book=0.02,
    ),
    restate(_T["MODADD"], "True: also compare on a grokked modular-addition model", ci=False, book=True),
    restate(_T["P"], "mod-add modulus (a prime)", ci=31, book=31),
    restate(_T["TRAIN_FRACTION"], "mod-add share of the pairs used for training (and for fitting the methods)", ci=0.6, book=0.6),
    restate(_T["MODADD_LR"], "mod-add AdamW learning rate (weight decay 1)", ci=3e-3, book=3e-3),
    restate(_T["MODADD_SEED"], "mod-add model seed", ci=1031, book=1031),
    restate(_T["MODADD_ENERGY"], "mod-add ACE energy threshold", ci=0.99, book=0.99),
    restate(_T["MODADD_MAX_STEPS"], "mod-add step cap", ci=3000, book=3000),
    restate(_T["MODADD_EXTRA_STEPS"], "mod-add steps after the test accuracy first reaches 0.99", ci=200, book=200),
    restate(_T["MODADD_R_MAX"], "mod-add ranks 1..MODADD_R_MAX", ci=16, book=16),
    knob("LLM_MODELS", "LLMs compared on subject–verb agreement; an empty list skips them", _models, ci=[], book=LLMS),
    knob("LLM_N_PROMPTS", "agreement prompts (half to fit the methods, half to score them)", _even_prompts, ci=400, book=400),
    knob("LLM_R_MAX", "LLM ranks 1..LLM_R_MAX", plain(checks.check_int, low=1, high=32), ci=4, book=4),
    knob(
        "LLM_BATCH_SIZE", "prompts per LLM forward and backward batch", plain(checks.check_int, low=1, high=1000), ci=50, book=50
    ),
    restate(
        _T["PRECISION"],
        'model training: "auto" (bf16 on a GPU with native bf16, else fp32), "fp32", "bf16"',
        ci="auto",
        book="auto",
    ),
    restate(
        _T["DEVICE"],
        'where the toy models train (the LLMs run on the CPU): "auto", "cpu", "cuda", "cuda:N", "mps"',
        ci="auto",
        book="auto",
    ),
)

PRESETS = presets(KNOBS)
_CHECK = checker(KNOBS, toy.across)


def check(values: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it): the shared ones with chapter 7's checks, and chapter 7's memory
    estimate (its sizes are this chapter's Markov and mod-add sizes).  (A module-level function, so that resolved
    settings pickle for worker processes.)"""
    _CHECK(values)


#: The chapter's knobs.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)
#: The lines of the notebook's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOBS, NOTEBOOK)
