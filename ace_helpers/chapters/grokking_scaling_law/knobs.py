"""Chapter 4's knobs, declared once (:data:`KNOBS`): the presets, the validation and the notebook's parameters cell
derive from this table (:mod:`ace_helpers.repro.knobs`); and the memory a sweep needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.chapters.grokking_scaling_law.runs import SEED0
from ace_helpers.chapters.training_knobs import device_knob, precision_knob
from ace_helpers.method.checks import check_int, check_list, check_prime, check_range
from ace_helpers.repro.knobs import Knob, checker, knob, parameters_cell, plain, presets
from ace_helpers.repro.params import ChapterParams

NOTEBOOK = "04_grokking_scaling_law"

#: The knobs of notebooks/04_grokking_scaling_law (:data:`KNOBS`).  ``BATCH_SIZE_OMEGA`` is the ω sweep's
#: mini-batch; the p sweep is always full batch.  ``TRAIN_FRACTION`` / ``TRAIN_FRACTION_P`` are
#: the train shares of the p² pairs in the ω / p sweep (paper: 0.5 for both).  ``STOP_MARGIN`` =
#: steps a run continues after grokking.  ``EXTRA_OMEGAS_P``: further weight decays at which the p
#: sweep is repeated, to test Ω ∝ 1/ω (the paper's p sweep is at ω = 1 only).  The ``ci`` and ``book`` presets use larger train
#: fractions than the paper so that every run groks within a CPU budget (measured on the shared
#: 2-core machine: at p = 53, ω = 1, batch 512 the delay is ~1900 steps at 0.5, ~600 at 0.7;
#: full batch at p = 31, 0.5 did not grok within 2500 steps, 0.8 grokked after ~630).
#: Ours: MEMORY_LIMIT, a quarter of a 32 GiB laptop or CI runner; MAX_STEP_CAP, ~17x the paper's longest cap (60,000).
MEMORY_LIMIT, MAX_STEP_CAP = 8 * 2**30, 1_000_000


def _weight_decay(name: str, value: Any) -> float:
    return check_range(name, value, low=0.0, low_open=True, high=100.0)


def _distinct(check: Any) -> Any:
    """A list knob's check that also refuses repeated values."""

    def run(name: str, value: Any, knobs: Mapping[str, Any]) -> list:
        out = check(name, value, knobs)
        if len(set(out)) != len(out):
            raise ValueError(f"{name}={out!r} is not allowed: {name} must not repeat values")
        return out

    return run


def _eval_every(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    every = check_int(name, value, low=1)
    if every > knobs["MAX_STEPS"]:
        raise ValueError(f"{name}={every} is not allowed: {name} must be <= MAX_STEPS ({knobs['MAX_STEPS']})")
    return every


def _extra_omegas(name: str, value: Any, knobs: Mapping[str, Any]) -> list[float]:
    extra = check_list(name, value, _weight_decay, min_len=0)
    if len({knobs["OMEGA_P"], *extra}) != 1 + len(extra):
        raise ValueError(f"{name}={extra!r} is not allowed: it must not repeat values or OMEGA_P ({knobs['OMEGA_P']})")
    return extra


_BOOK_OMEGAS = [0.3, 0.5, 1.0, 1.5, 2.0, 3.0]
_FRACTION = plain(check_range, low=0.0, high=1.0, low_open=True, high_open=True)

KNOBS: tuple[Knob, ...] = (
    knob(
        "OMEGAS",
        "weight decays ω of the ω sweep",
        _distinct(lambda n, v, k: check_list(n, v, _weight_decay)),
        ci=[0.5, 1.0, 3.0],
        book=_BOOK_OMEGAS,
        paper=_BOOK_OMEGAS,
    ),
    knob(
        "PRIMES",
        "moduli p of the p sweep (primes)",
        _distinct(lambda n, v, k: check_list(n, v, lambda m, x: check_prime(m, x, low=5))),
        ci=[31, 43, 53],
        book=[31, 43, 53, 61],
        paper=[31, 43, 53, 61, 79, 89, 101],
    ),
    knob("N_SEEDS", "seeds per setting (seeds SEED, SEED + 1, ...)", plain(check_int, low=1, high=100), ci=1, book=2, paper=12),
    knob("SEED", "first seed of every setting (paper: 42)", plain(check_int, low=0, high=2**31 - 1 - 100), ci=SEED0, book=SEED0),
    # the paper caps the ω sweep at 20,000 epochs (x 3 steps) and the p sweep at 30,000 full-batch epochs; one cap for
    # both at the paper preset, the larger one
    knob(
        "MAX_STEPS",
        "step cap of every run; runs not grokked by then are censored",
        plain(check_int, low=1, high=MAX_STEP_CAP),
        ci=5000,
        book=6000,
        paper=60000,
    ),
    knob("EVAL_EVERY", "steps between evaluations: the resolution of τ_mem and τ_test", _eval_every, ci=10, book=10, paper=1),
    knob(
        "TRAIN_FRACTION", "ω sweep: share of the p² pairs used for training (paper 0.5)", _FRACTION, ci=0.7, book=0.7, paper=0.5
    ),
    knob(
        "TRAIN_FRACTION_P", "p sweep: share of the p² pairs used for training (paper 0.5)", _FRACTION, ci=0.8, book=0.8, paper=0.5
    ),
    knob("BATCH_SIZE_OMEGA", "mini-batch of the ω sweep (the p sweep is full batch)", plain(check_int, low=1), ci=512, book=512),
    knob(
        "STOP_MARGIN",
        "steps a run keeps training after it grokked",
        lambda n, v, k: check_int(n, v, low=0, high=k["MAX_STEPS"]),
        ci=0,
        book=0,
        paper=100,
    ),
    knob("P_OMEGA", "modulus of the ω sweep", plain(check_prime, low=5), ci=53, book=53),
    knob("OMEGA_P", "weight decay of the p sweep", lambda n, v, k: _weight_decay(n, v), ci=1.0, book=1.0),
    knob(
        "EXTRA_OMEGAS_P",
        "further weight decays of the p sweep (tests Omega ~ 1/omega; paper none)",
        _extra_omegas,
        ci=[2.0],
        book=[2.0],
        paper=[],
    ),
    knob("LR", "AdamW learning rate", plain(check_range, low=0.0, low_open=True, high=1.0), ci=1e-3, book=1e-3),
    precision_knob('"auto" (bf16 on a GPU with native bf16, else fp32: the stored results), "fp32", "bf16"'),
    device_knob('where the sweeps train: "auto" (CUDA when present, else the CPU), "cpu", "cuda", "cuda:N", "mps"'),
)


def sweep_memory(p: int, members: int, batch: int) -> int:
    """Rough bytes of one sweep at modulus ``p``, ``members`` models trained together on ``batch`` pairs:
    the p² pairs' tables (72 B per pair); per member the (batch, p) float32 logits with softmax and
    gradient (12 B per entry), the 4096-row evaluation logits, and 2·128·p + 200,000 parameters with
    gradients and two AdamW moments (16 B each)."""
    return 72 * p * p + members * (12 * batch * p + 4 * min(4096, p * p) * p + 16 * (256 * p + 200_000))


def across(p: dict[str, Any]) -> None:
    """The checks across knobs: each split of the p² pairs (TRAIN_FRACTION at P_OMEGA, TRAIN_FRACTION_P at every prime)
    must hold at least p pairs, one per answer; each sweep's :func:`sweep_memory` must be <= MEMORY_LIMIT."""
    sweeps = [("TRAIN_FRACTION", "P_OMEGA", p["P_OMEGA"], len(p["OMEGAS"]) * p["N_SEEDS"], p["BATCH_SIZE_OMEGA"])]
    members_p = p["N_SEEDS"] * (1 + len(p["EXTRA_OMEGAS_P"]))
    sweeps += [("TRAIN_FRACTION_P", "PRIMES", q, members_p, None) for q in p["PRIMES"]]
    for frac_name, p_name, q, members, batch in sweeps:
        n_train = int(p[frac_name] * q * q)
        if min(n_train, q * q - n_train) < q:
            raise ValueError(
                f"{frac_name}={p[frac_name]} is not allowed at {p_name} p={q}: it leaves {n_train} train and "
                f"{q * q - n_train} test pairs of {q * q}; each split needs at least p = {q} pairs (one per answer), "
                f"i.e. {frac_name} in about [{1 / q:.3g}, {1 - 1 / q:.3g}]"
            )
        need = sweep_memory(q, members, min(batch or n_train, n_train))
        if need > MEMORY_LIMIT:
            what = (
                "the OMEGAS × N_SEEDS models of the ω sweep"
                if batch
                else "the N_SEEDS × (1 + len(EXTRA_OMEGAS_P)) full-batch models of the p sweep"
            )
            raise ValueError(
                f"{p_name}: p={q} would need ~{need / 2**30:.3g} GiB for {what} ({members} models, vocabulary "
                f"and p² = {q * q} pairs); the limit is {MEMORY_LIMIT / 2**30:.3g} GiB: lower {p_name} or N_SEEDS"
            )


PRESETS = presets(KNOBS)
_CHECK = checker(KNOBS, across)


def check(values: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it); ``OMEGAS`` become floats, ``PRIMES`` ints.  (A module-level
    function, so that resolved settings pickle for worker processes.)"""
    _CHECK(values)


#: The chapter's knobs: ``PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)
#: The lines of the notebook's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOBS, NOTEBOOK)
