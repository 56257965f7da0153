"""Chapter 4's knobs: presets, the check that validates them, and the memory a sweep needs."""

from __future__ import annotations

from ace_helpers.chapters.grokking_scaling_law.runs import SEED0
from ace_helpers.method.checks import check_int, check_list, check_prime, check_range
from ace_helpers.method.devices import check_device, resolve_device
from ace_helpers.repro.params import ChapterParams
from ace_helpers.toys.precision import resolve_precision

NOTEBOOK = "04_grokking_scaling_law"

#: Knobs of notebooks/04_grokking_scaling_law.  ``BATCH_SIZE_OMEGA`` is the ω sweep's
#: mini-batch; the p sweep is always full batch.  ``TRAIN_FRACTION`` / ``TRAIN_FRACTION_P`` are
#: the train shares of the p² pairs in the ω / p sweep (paper: 0.5 for both).  ``STOP_MARGIN`` =
#: steps a run continues after grokking.  ``EXTRA_OMEGAS_P``: further weight decays at which the p
#: sweep is repeated, to test Ω ∝ 1/ω (the paper's p sweep is at ω = 1 only).  The ``ci`` and ``book`` presets use larger train
#: fractions than the paper so that every run groks within a CPU budget (measured on the shared
#: 2-core machine: at p = 53, ω = 1, batch 512 the delay is ~1900 steps at 0.5, ~600 at 0.7;
#: full batch at p = 31, 0.5 did not grok within 2500 steps, 0.8 grokked after ~630).
PRESETS: dict[str, dict] = {
    "ci": {
        "OMEGAS": [0.5, 1.0, 3.0],
        "PRIMES": [31, 43, 53],
        "N_SEEDS": 1,
        "SEED": SEED0,
        "MAX_STEPS": 5000,
        "EVAL_EVERY": 10,
        "TRAIN_FRACTION": 0.7,
        "TRAIN_FRACTION_P": 0.8,
        "BATCH_SIZE_OMEGA": 512,
        "STOP_MARGIN": 0,
        "P_OMEGA": 53,
        "OMEGA_P": 1.0,
        "EXTRA_OMEGAS_P": [2.0],
        "LR": 1e-3,
        "PRECISION": "auto",
        "DEVICE": "auto",
    },
    "paper": {
        "OMEGAS": [0.3, 0.5, 1.0, 1.5, 2.0, 3.0],
        "PRIMES": [31, 43, 53, 61, 79, 89, 101],
        "N_SEEDS": 12,
        "SEED": SEED0,
        # the paper caps the ω sweep at 20,000 epochs (x 3 steps) and the p sweep at 30,000
        # full-batch epochs; one cap for both here, the larger one
        "MAX_STEPS": 60000,
        "EVAL_EVERY": 1,
        "TRAIN_FRACTION": 0.5,
        "TRAIN_FRACTION_P": 0.5,
        "BATCH_SIZE_OMEGA": 512,
        "STOP_MARGIN": 100,
        "P_OMEGA": 53,
        "OMEGA_P": 1.0,
        "EXTRA_OMEGAS_P": [],
        "LR": 1e-3,
        "PRECISION": "auto",
        "DEVICE": "auto",
    },
}

PRESETS["book"] = PRESETS["ci"] | {"OMEGAS": [0.3, 0.5, 1.0, 1.5, 2.0, 3.0], "PRIMES": [31, 43, 53, 61], "N_SEEDS": 2,
                                   "MAX_STEPS": 6000}  # fmt: skip

#: Ours: MEMORY_LIMIT, a quarter of a 32 GiB laptop or CI runner; MAX_STEP_CAP, ~17x the paper's longest cap (60,000).
MEMORY_LIMIT, MAX_STEP_CAP = 8 * 2**30, 1_000_000


def sweep_memory(p: int, members: int, batch: int) -> int:
    """Rough bytes of one sweep at modulus ``p``, ``members`` models trained together on ``batch`` pairs:
    the p² pairs' tables (72 B per pair); per member the (batch, p) float32 logits with softmax and
    gradient (12 B per entry), the 4096-row evaluation logits, and 2·128·p + 200,000 parameters with
    gradients and two AdamW moments (16 B each)."""
    return 72 * p * p + members * (12 * batch * p + 4 * min(4096, p * p) * p + 16 * (256 * p + 200_000))


def check(p: dict) -> None:
    """Validate every knob (``ValueError`` naming it); ``OMEGAS`` become floats, ``PRIMES`` ints.

    Each split of the p² pairs (TRAIN_FRACTION at P_OMEGA, TRAIN_FRACTION_P at every prime) must
    hold at least p pairs, one per answer; each sweep's :func:`sweep_memory` must be <= MEMORY_LIMIT.
    """
    p["OMEGAS"] = check_list("OMEGAS", p["OMEGAS"], lambda n, v: check_range(n, v, low=0.0, low_open=True, high=100.0))
    p["PRIMES"] = check_list("PRIMES", p["PRIMES"], lambda n, v: check_prime(n, v, low=5))
    for name in ("OMEGAS", "PRIMES"):
        if len(set(p[name])) != len(p[name]):
            raise ValueError(f"{name}={p[name]!r} is not allowed: {name} must not repeat values")
    p["N_SEEDS"] = check_int("N_SEEDS", p["N_SEEDS"], low=1, high=100)
    p["SEED"] = check_int("SEED", p["SEED"], low=0, high=2**31 - 1 - 100)
    p["MAX_STEPS"] = check_int("MAX_STEPS", p["MAX_STEPS"], low=1, high=MAX_STEP_CAP)
    p["EVAL_EVERY"] = check_int("EVAL_EVERY", p["EVAL_EVERY"], low=1)
    if p["EVAL_EVERY"] > p["MAX_STEPS"]:
        raise ValueError(f"EVAL_EVERY={p['EVAL_EVERY']} is not allowed: EVAL_EVERY must be <= MAX_STEPS ({p['MAX_STEPS']})")
    for name in ("TRAIN_FRACTION", "TRAIN_FRACTION_P"):
        p[name] = check_range(name, p[name], low=0.0, high=1.0, low_open=True, high_open=True)
    p["BATCH_SIZE_OMEGA"] = check_int("BATCH_SIZE_OMEGA", p["BATCH_SIZE_OMEGA"], low=1)
    p["STOP_MARGIN"] = check_int("STOP_MARGIN", p["STOP_MARGIN"], low=0, high=p["MAX_STEPS"])
    p["P_OMEGA"] = check_prime("P_OMEGA", p["P_OMEGA"], low=5)
    p["OMEGA_P"] = check_range("OMEGA_P", p["OMEGA_P"], low=0.0, low_open=True, high=100.0)
    p["EXTRA_OMEGAS_P"] = check_list("EXTRA_OMEGAS_P", p["EXTRA_OMEGAS_P"],
                                     lambda n, v: check_range(n, v, low=0.0, low_open=True, high=100.0), min_len=0)  # fmt: skip
    if len({p["OMEGA_P"], *p["EXTRA_OMEGAS_P"]}) != 1 + len(p["EXTRA_OMEGAS_P"]):
        raise ValueError(f"EXTRA_OMEGAS_P={p['EXTRA_OMEGAS_P']!r} is not allowed: it must not repeat values or OMEGA_P ({p['OMEGA_P']})")
    p["LR"] = check_range("LR", p["LR"], low=0.0, low_open=True, high=1.0)
    p["DEVICE"] = check_device("DEVICE", p["DEVICE"])
    p["PRECISION"] = resolve_precision("PRECISION", p["PRECISION"], resolve_device(p["DEVICE"]))
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
            what = "the OMEGAS × N_SEEDS models of the ω sweep" if batch else "the N_SEEDS × (1 + len(EXTRA_OMEGAS_P)) full-batch models of the p sweep"
            raise ValueError(
                f"{p_name}: p={q} would need ~{need / 2**30:.3g} GiB for {what} ({members} models, vocabulary "
                f"and p² = {q * q} pairs); the limit is {MEMORY_LIMIT / 2**30:.3g} GiB: lower {p_name} or N_SEEDS"
            )


#: The chapter's knobs: ``PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)
