"""Chapter 0's knobs, declared once (:data:`KNOBS`): the presets, the validation and the notebook's parameters cell
derive from this table (:mod:`ace_helpers.repro.knobs`).  The three presets are the same planted system; ``ci``
draws fewer samples."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.method import checks
from ace_helpers.repro.knobs import Knob, checker, knob, parameters_cell, plain, presets
from ace_helpers.repro.params import ChapterParams

NOTEBOOK = "00_ace_planted_system"

#: Memory a run may need, at most (ours: a quarter of the 32 GiB of a typical laptop or CI runner).
MEMORY_LIMIT = 8 * 2**30
#: (N, D) float64 arrays alive at once: sources, their QR, the activations H, their centred copy,
#: the float32 tensor and one keep/remove output (counted as float64 to round up).
ACTIVATION_COPIES = 6
#: (D, D) float64 arrays: the rotation, Cov, Obs, their product and eigendecomposition.
GRAMIAN_COPIES = 8


def memory_estimate(n_samples: int, dim: int) -> int:
    """Bytes a run needs, roughly: ``N·D·8·6`` for the activations + ``D²·8·8`` for the Gramians."""
    return n_samples * dim * 8 * ACTIVATION_COPIES + dim * dim * 8 * GRAMIAN_COPIES


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 2**10:.3g} KiB"


def _dim(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    """DIM, and the run's memory estimate (:func:`memory_estimate` must stay under :data:`MEMORY_LIMIT`)."""
    dim = checks.check_int(name, value, low=12)
    n = knobs["N_SAMPLES"]
    need = memory_estimate(n, dim)
    if need > MEMORY_LIMIT:
        acts = n * dim * 8 * ACTIVATION_COPIES
        names = "N_SAMPLES" if acts >= need - acts else "DIM"
        raise ValueError(
            f"N_SAMPLES={n}, DIM={dim} would need ~{_size(need)} ({_size(acts)} for {ACTIVATION_COPIES} copies of the "
            f"N_SAMPLES × DIM float64 activations, {_size(need - acts)} for the DIM × DIM Gramians); the limit is "
            f"{_size(MEMORY_LIMIT)}: lower {names}"
        )
    return dim


def _r_core(name: str, value: Any, knobs: Mapping[str, Any]) -> int:
    return checks.check_int(name, value, low=1, high=knobs["DIM"] // 3)


def _checked(fn: Any, **kwargs: Any) -> Any:
    """A check whose value is validated but kept as given (the chapter's numbers read it as typed)."""
    return lambda name, value, knobs: (fn(name, value, **kwargs), value)[1]


KNOBS: tuple[Knob, ...] = (
    knob("N_SAMPLES", "number of activation rows", plain(checks.check_int, low=100), ci=2000, book=8000),
    knob("DIM", "activation dimension D", _dim, ci=32, book=32),
    knob("R_CORE", "dimension of each planted block (core, active only, relevant only)", _r_core, ci=3, book=3),
    knob(
        "ACTIVE_STD",
        "standard deviation of the active-only block (the core has 1)",
        _checked(checks.check_range, low=1.0),
        ci=6.0,
        book=6.0,
    ),
    knob(
        "RELEVANT_WEIGHT",
        "readout weight scale of the relevant-only block",
        _checked(checks.check_range, low=1.0),
        ci=20.0,
        book=20.0,
    ),
    knob(
        "ENERGY",
        "cumulative-energy threshold of the ACE rank rule",
        _checked(checks.check_range, low=0.0, high=1.0, low_open=True),
        ci=0.99,
        book=0.99,
    ),
    knob("SEED", "seed of the planted system", plain(checks.check_int, low=0), ci=0, book=0),
)

PRESETS = presets(KNOBS)
_CHECK = checker(KNOBS)


def check(values: dict[str, Any]) -> None:
    """Validate every knob (``ValueError`` naming it), including the run's memory estimate.  (A module-level
    function, so that resolved settings pickle for worker processes.)"""
    _CHECK(values)


#: The chapter's knobs: ``PARAMS.resolve(globals())`` in the notebook, ``PARAMS.resolve(PRESET="ci")`` elsewhere.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)
#: The lines of the notebook's parameters cell (a test holds the notebook to them).
CELL = parameters_cell(KNOBS, NOTEBOOK)
