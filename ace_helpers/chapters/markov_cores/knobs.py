"""Chapter 1's knobs, declared once (:data:`KNOBS`): the presets, the validation and the notebook's parameters cell
derive from this table (:mod:`ace_helpers.repro.knobs`).

Presets: ``book`` = the paper's settings (3 seeds, 3000/3000 sequences, 40 epochs, lr 1e-4); ``ci`` = 2 seeds,
1000/1000 sequences, 8 epochs (1/15 of the optimizer steps) at 10x the learning rate; the extra chains get 1 seed each
(3 at ``paper``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.chapters.markov_run.run import ABLATIONS, MAX_STATES, TAILS
from ace_helpers.chapters.training_knobs import device_knob, precision_knob
from ace_helpers.method.checks import check_choice, check_int, check_list, check_range
from ace_helpers.repro.knobs import Knob, checker, knob, parameters_cell, plain, presets
from ace_helpers.repro.params import ChapterParams
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, validate_transition

NOTEBOOK = "01_markov_cores"
#: The PRESET line's comment in this chapter's parameters cell.
PRESET_DOC = '"ci" | "book" | "paper"; None: $ACE_PRESET, else "book" (the paper settings)'

#: "Try your own chain" examples (book preset): different sizes and spectra.
#: 3 states, non-circulant, reversible (real spectrum 0.779, 0.321).
CHAIN_3_NONCIRCULANT: list[list[float]] = [
    [0.8, 0.2, 0.0],
    [0.1, 0.6, 0.3],
    [0.0, 0.3, 0.7],
]
#: 5 states, non-circulant, with complex eigenvalue pairs (a lopsided cycle).
CHAIN_5_COMPLEX: list[list[float]] = [
    [0.70, 0.25, 0.00, 0.00, 0.05],
    [0.00, 0.60, 0.40, 0.00, 0.00],
    [0.05, 0.00, 0.75, 0.20, 0.00],
    [0.00, 0.00, 0.00, 0.65, 0.35],
    [0.30, 0.00, 0.10, 0.00, 0.60],
]
EXTRA = [CHAIN_3_NONCIRCULANT, CHAIN_5_COMPLEX]

#: Largest chain (ours): at the paper's sizes (3000 sequences of 31 steps) a 64-state chain sees
#: ~23 transitions per entry of T.  MEMORY_LIMIT (ours): a quarter of a 32 GiB laptop or CI runner.
MEMORY_LIMIT = 8 * 2**30


def _chain(name: str, value: Any, knobs: Mapping[str, Any] | None = None) -> list[list[float]]:
    T = validate_transition(value, name)
    if T.shape[0] > MAX_STATES:
        raise ValueError(f"{name} has {T.shape[0]} states: the chapter takes chains of 2..{MAX_STATES} states")
    return T.tolist()


def _d_model(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    d = check_int(name, value, low=4, high=4096)
    if d % 4:
        raise ValueError(f"{name}={d!r} is not allowed: {name} must be divisible by the 4 heads")
    return d


def _extra_chains(name: str, value: Any, knobs: Mapping[str, Any]) -> list[list[list[float]]]:
    return check_list(name, value, _chain, min_len=0)


KNOBS: tuple[Knob, ...] = (
    knob(
        "T",
        "transition matrix as a list of rows (row: current state); None: the 4-state paper chain",
        _chain,
        ci=PAPER_CHAIN,
        book=PAPER_CHAIN,
    ),
    knob(
        "N_SEEDS", "number of models; model m uses seed SEED + 100·m (paper: 3)", plain(check_int, low=2, high=16), ci=2, book=3
    ),
    knob("EPOCHS", "training epochs (paper: 40)", plain(check_int, low=1), ci=8, book=40),
    knob("D_MODEL", "residual width of the one-layer transformer (paper: 64)", _d_model, ci=64, book=64),
    knob("N_TRAIN", "training sequences (paper: 3000)", plain(check_int, low=1), ci=1000, book=3000),
    knob(
        "N_TEST",
        "test sequences; ACE uses all positions of all of them (paper: 3000)",
        plain(check_int, low=2),
        ci=1000,
        book=3000,
    ),
    knob(
        "SEQ_LEN",
        "sequence length; the model sees SEQ_LEN − 1 tokens (paper: 32)",
        plain(check_int, low=3, high=65),
        ci=32,
        book=32,
    ),
    knob(
        "ENERGY",
        "cumulative-energy threshold of the ACE rank rule (paper: 0.999)",
        plain(check_range, low=0.0, high=1.0, low_open=True),
        ci=0.999,
        book=0.999,
    ),
    knob(
        "TAIL",
        '"centered" (logits minus their mean) | "logits" (the paper\'s raw logits)',
        plain(check_choice, choices=TAILS),
        ci="centered",
        book="centered",
    ),
    knob(
        "ABLATION",
        '"mean" (project about the activation mean) | "zero" (the paper\'s raw projection)',
        plain(check_choice, choices=ABLATIONS),
        ci="mean",
        book="mean",
    ),
    knob("SEED", "base seed of model initialisation, data order and dropout", plain(check_int, low=0), ci=0, book=0),
    knob(
        "LR",
        "AdamW learning rate (paper: 1e-4, no weight decay)",
        plain(check_range, low=0.0, high=1.0, low_open=True),
        ci=1e-3,
        book=1e-4,
    ),
    knob("BATCH_SIZE", "mini-batch size (paper: 64)", plain(check_int, low=1), ci=64, book=64),
    precision_knob('"auto" (bf16 on a GPU with native bf16, else fp32: the stored results), "fp32", "bf16" (bf16 matmuls)'),
    device_knob('where the models train: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"'),
    knob("DATA_SEED", "numpy RandomState seed of the training sequences (paper: 0)", plain(check_int, low=0), ci=0, book=0),
    knob(
        "TEST_DATA_SEED", "numpy RandomState seed of the test sequences (paper: 999)", plain(check_int, low=0), ci=999, book=999
    ),
    knob(
        "EXTRA_CHAINS",
        '"try your own chain": more transition matrices, analysed the same way',
        _extra_chains,
        ci=EXTRA,
        book=EXTRA,
    ),
    knob("EXTRA_SEEDS", "models trained per extra chain", plain(check_int, low=1, high=16), ci=1, book=1, paper=3),
    knob("EXTRA_EPOCHS", "training epochs for the extra chains", plain(check_int, low=1), ci=8, book=40),
)


def memory_estimate(p: Mapping[str, Any]) -> dict[str, int]:
    """Rough bytes of a run's largest parts, from checked knobs: ``tokens`` (N_TRAIN + N_TEST)·SEQ_LEN
    × 24 (int64 sequences, inputs, targets); ``activations`` N_TEST·(SEQ_LEN − 1)·D_MODEL × 28
    (float32 capture + 3 float64 copies); ``models`` seeds × (12·D² + 2·n·D + 64·D) parameters × 16
    (weights, gradients, two AdamW moments)."""
    n_max, d = max(len(t) for t in [p["T"], *p["EXTRA_CHAINS"]]), p["D_MODEL"]
    return {
        "tokens": (p["N_TRAIN"] + p["N_TEST"]) * p["SEQ_LEN"] * 24,
        "activations": p["N_TEST"] * (p["SEQ_LEN"] - 1) * d * 28,
        "models": max(p["N_SEEDS"], p["EXTRA_SEEDS"]) * (12 * d * d + 2 * n_max * d + 64 * d) * 16,
    }


def across(p: dict[str, Any]) -> None:
    """The checks across knobs: every chain has at most D_MODEL states (the core has n − 1 dimensions, the softmax
    check reads the n-th), and :func:`memory_estimate` stays under MEMORY_LIMIT."""
    for name, T in [("T", p["T"])] + [(f"EXTRA_CHAINS[{i}]", t) for i, t in enumerate(p["EXTRA_CHAINS"])]:
        if len(T) > p["D_MODEL"]:
            raise ValueError(f"{name} has {len(T)} states but D_MODEL={p['D_MODEL']}: D_MODEL must be >= the number of states")
    need, gib = memory_estimate(p), lambda b: f"{b / 2**30:.3g}"
    if sum(need.values()) > MEMORY_LIMIT:
        lower = {
            "tokens": "N_TRAIN, N_TEST, SEQ_LEN",
            "activations": "N_TEST, SEQ_LEN, D_MODEL",
            "models": "D_MODEL, N_SEEDS, EXTRA_SEEDS",
        }[max(need, key=need.get)]
        raise ValueError(
            f"N_TRAIN={p['N_TRAIN']}, N_TEST={p['N_TEST']}, SEQ_LEN={p['SEQ_LEN']}, D_MODEL={p['D_MODEL']} "
            f"would need ~{gib(sum(need.values()))} GiB ("
            + ", ".join(f"{gib(v)} GiB for the {k}" for k, v in need.items())
            + f"); the limit is {gib(MEMORY_LIMIT)} GiB: lower {lower}"
        )


PRESETS = presets(KNOBS)
_CHECK = checker(KNOBS, across)


def check(values: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it); ``T`` and ``EXTRA_CHAINS`` become lists of float rows.  (A
    module-level function, so that resolved settings pickle for worker processes.)"""
    _CHECK(values)


#: The chapter's knobs: ``PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(N_SEEDS=3)`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)
#: The lines of the notebook's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOBS, NOTEBOOK, PRESET_DOC)
