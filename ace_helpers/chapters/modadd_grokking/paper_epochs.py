"""Chapter 2's claims judged where the paper looks: at the clock epochs of its Fig. 1C and Fig. 2C.

The paper reads its mod-add clocks at epochs 0, 300, 800 (grokking), 900 and 2000 (Fig. 1C) and 20 000 (Fig. 2C).
:data:`SPECS` reads ``modadd.r2_jump`` and ``modadd.stays_on_circle`` there, on a run's weight-decay arm: R_h²
before grokking (the paper's epoch 300) and one checkpoint after it (its epoch 900, our grok epoch + 100), and the
OLS unit-circle share at epochs 2000 and 20 000.  The stricter every-checkpoint versions stay in
:mod:`ace_helpers.chapters.modadd_grokking.claims` as our own rows.  Where the code release's own run of this protocol is stored
(:mod:`ace_helpers.repro.official_runs`), its share at epoch 2000 is read beside ours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult, grok_epoch
from ace_helpers.chapters.modadd.stats import SHARE_MIN
from ace_helpers.chapters.modadd_grokking.known_gaps import KNOWN_GAPS
from ace_helpers.repro.artifacts import load_artifact, project_root
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import ONE, Comparison, Measured, NotTested, Rule, Spec, judge_all

#: The paper's observation points (Fig. 1C: grokking at 800, so 300 is before it and 900 one checkpoint after).
BEFORE, LATER, LATE = 300, 2000, 20_000
OBSERVED = (
    "3 models, p = 53, train fraction 0.5, weight decay 1.0; clocks at epochs 300 and grokking + 100 "
    "(Fig. 1C: 800 and 900), 2000 (Fig. 1C) and 20 000 (Fig. 2C)"
)
WHERE_R2 = "Fig. 1C (R_h² annotations at the clock epochs), §3"
WHERE_CIRCLE = "Fig. 1C (epoch 2000), Fig. 2C (epoch 20 000)"
WHERE_INVARIANT = "title and abstract; Fig. 1C (the clocks one checkpoint after grokking)"
OBSERVED_INVARIANT = (
    "independently trained models (3, p = 53, train fraction 0.5, AdamW lr 1e-3, weight decay 1.0), one "
    "checkpoint after grokking (Fig. 1C: epoch 900)"
)


#: The code release's own run of this protocol to epoch 2000 (3 models), stored by :mod:`ace_helpers.repro.official_runs`.
OFFICIAL_STORE, OFFICIAL_RUN = Path("book") / "artifacts" / "official_modadd", "official_modadd_e2000_k3"


@dataclass(frozen=True)
class EpochRun:
    """What the rules read: a run's weight-decay ``arm`` and, where stored, the code release's OLS shares per epoch."""

    arm: ArmResult
    official: Mapping[int, Sequence[float]] = field(default_factory=dict)


def _at(arm: ArmResult, key: str, epoch: int) -> list[float] | None:
    return [float(v) for v in arm[key][:, arm.index(epoch)]] if epoch in arm.epochs else None


OFF_TASK = "the paper's epochs are those of its task (p = 53, half the pairs for training); this run is another task"


def _r2_jump(run: EpochRun, cfg: Params) -> Measured | NotTested:
    if not config.paper_task(cfg):
        return NotTested(OFF_TASK)
    arm = run.arm
    grok = grok_epoch(arm.epochs, arm["test_acc"])
    if grok is None:
        return NotTested("the run does not grok")
    after = grok + int(arm.epochs[1] - arm.epochs[0]) if len(arm.epochs) > 1 else grok
    before, post = _at(arm, "r2_holdout", BEFORE), _at(arm, "r2_holdout", after)
    if before is None or post is None or BEFORE >= grok:
        return NotTested(f"no checkpoint at epoch {BEFORE} before grokking and at grokking + 100 (grok epoch {grok})")
    return Measured(
        {"R_h² before grokking": before, "R_h² one checkpoint after grokking": post},
        ours=f"epoch {BEFORE}: {_fmt(before)}; epoch {after}: {_fmt(post)}",
        context={"after": after, "post": _fmt(post)},
    )


def _on_circle(run: EpochRun, cfg: Params) -> Measured | NotTested:
    if not config.paper_task(cfg):
        return NotTested(OFF_TASK)
    arm, official = run.arm, run.official
    later, late = _at(arm, "frac_unit_circle_ols", LATER), _at(arm, "frac_unit_circle_ols", LATE)
    if later is None or late is None:
        return NotTested(f"the run stops at epoch {int(arm.epochs[-1])}, before the paper's epochs {LATER} and {LATE:,}")
    off = "" if LATER not in official else f" (official code: {_fmt(official[LATER])})"
    return Measured(
        {f"OLS share at epoch {LATER}": later, f"OLS share at epoch {LATE}": late},
        ours=f"epoch {LATER}: {_fmt(later)}; epoch {LATE:,}: {_fmt(late)}",
        context={"later": _fmt(later), "late": _fmt(late), "official": off},
        official=list(official[LATER]) if LATER in official else None,
    )


#: The invariance rule's bounds (ours): every clock's R_h², the largest over the smallest core, and the spread of the
#: models' median ``|λ|``.
INV_R2, INV_SIZE, INV_SPREAD = 0.9, 1.5, 0.1
_AGREE = (
    Comparison("largest / smallest core dim", "<=", INV_SIZE, over=ONE),
    Comparison("spread of the median |λ| (OLS)", "<=", INV_SPREAD, over=ONE),
)


def _invariant(run: EpochRun, cfg: Params) -> Measured | NotTested:
    if not config.paper_task(cfg):
        return NotTested(OFF_TASK)
    arm = run.arm
    if arm["core_dim"].shape[0] < 2:
        return NotTested("one model: invariance compares independently trained models")
    grok = grok_epoch(arm.epochs, arm["test_acc"])
    if grok is None:
        return NotTested("the run does not grok")
    after = grok + int(arm.epochs[1] - arm.epochs[0]) if len(arm.epochs) > 1 else grok
    if after not in arm.epochs:
        return NotTested(f"no checkpoint one step after grokking (grok epoch {grok})")
    r2, dims = _at(arm, "r2_holdout", after), _at(arm, "core_dim", after)
    med, modes = _at(arm, "median_abs_eig_ols", after), _at(arm, "rotational_modes_ols", after)
    assert r2 is not None and dims is not None and med is not None and modes is not None
    if not all(math.isfinite(v) for v in (*r2, *med)):
        return NotTested("R_h² or the spectrum is not measured at that checkpoint (no held-out block: HOLDOUT_FRACTION = 0)")
    why = [f"R_h² {_fmt(r2)} not all ≥ {INV_R2:g}"] if min(r2) < INV_R2 else []
    why += [f"core dims {', '.join(f'{d:.0f}' for d in dims)} differ"] if max(dims) > INV_SIZE * min(dims) else []
    why += [f"median |λ| {_fmt(med)} differ"] if max(med) - min(med) > INV_SPREAD else []
    return Measured(
        {
            "R_h² one checkpoint after grokking": r2,
            "largest / smallest core dim": max(dims) / min(dims),
            "spread of the median |λ| (OLS)": max(med) - min(med),
        },
        ours=f"epoch {after}, {len(dims)} models: R_h² {_fmt(r2)}; core dims {', '.join(f'{d:.0f}' for d in dims)}; "
        f"median |λ| {_fmt(med)}; rotational modes {', '.join(f'{m:.0f}' for m in modes)}",
        context={"after": after, "why": "; ".join(why) or "every invariant agrees"},
    )


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


SPECS: tuple[Spec, ...] = (
    Rule(
        "modadd.r2_jump",
        "R_h² jumps from ≈ 0 before grokking to ≈ 1 one checkpoint after it (the paper's epochs)",
        "R_h² jumps from ~0 to ~1 at grokking",
        WHERE_R2,
        OBSERVED,
        (Comparison("R_h² before grokking", "<=", 0.2), Comparison("R_h² one checkpoint after grokking", ">=", 0.9)),
        "every model: R_h² ≤ {t0} at epoch 300 (before grokking, as the paper's clock) and ≥ {t1} one checkpoint after "
        "grokking (the paper's epoch 900; ours for '≈ 0' and '≈ 1'); models on both sides of a bound: inconclusive; "
        "the stricter every-checkpoint version is our own row",
        _r2_jump,
        {"R_h² one checkpoint after grokking": [0.3, 0.3, 0.3]},
        cause="one checkpoint after grokking R_h² reads {post} against {t1}: the models straddle it",
        cause_class="samples",
    ),
    Rule(
        "modadd.stays_on_circle",
        "the clock stays on the circle: ≥ 80 % of the OLS eigenvalues within sin(π/p) of it at epochs 2000 and 20 000",
        "on the circle after grokking",
        WHERE_CIRCLE,
        OBSERVED,
        (Comparison(f"OLS share at epoch {LATER}", ">=", SHARE_MIN), Comparison(f"OLS share at epoch {LATE}", ">=", SHARE_MIN)),
        "every model: OLS share ≥ {t0} at epoch 2000 (Fig. 1C) and at epoch 20 000 (Fig. 2C), the paper's two later "
        "clocks; partly: at epoch 20 000 only; the stricter every-checkpoint version is our own row",
        _on_circle,
        {"OLS share at epoch 2000": [0.2, 0.2, 0.2], "OLS share at epoch 20000": [0.2, 0.2, 0.2]},
        partly=(Comparison(f"OLS share at epoch {LATE}", ">=", SHARE_MIN),),
        gap="paper_epoch_circle",
        cause="OLS shares at epoch 2000 are {later}{official}; at 20 000: {late}",
        cause_class="ours",
    ),
    Rule(
        "modadd.invariant",
        "the cores of independently trained models are invariant: each has a clock, and their sizes "
        "and operator spectra agree (one checkpoint after grokking)",
        "the cores of independently trained models are invariant (the title's claim, for this task)",
        WHERE_INVARIANT,
        OBSERVED_INVARIANT,
        (Comparison("R_h² one checkpoint after grokking", ">=", INV_R2), *_AGREE),
        "one checkpoint after grokking (the paper's epoch 900), on invariants that do not depend on which key frequencies "
        "a model picks: every model has a clock (R_h² ≥ {t0}), the largest core is at most {t1}× the smallest, and the "
        "models' median |λ| of the OLS shift operator differ by at most {t2} (ours: the paper states invariance without "
        "a rule); partly: sizes and spectra agree while some model's clock fits below {t0}",
        _invariant,
        {
            "R_h² one checkpoint after grokking": [0.2, 0.95, 0.3],
            "largest / smallest core dim": 3.0,
            "spread of the median |λ| (OLS)": 0.5,
        },
        partly=_AGREE,
        unit="model",
        cause="at epoch {after}: {why}",
        cause_class="samples",
    ),
)


#: The paper claims these rules judge where the paper looks.
IDS = ("modadd.r2_jump", "modadd.stays_on_circle", "modadd.invariant")


def paper_epoch_claims(arm: ArmResult, cfg: Params, official: Mapping[int, Sequence[float]] | None = None) -> Claims:
    """:data:`SPECS` judged on ``arm`` (a run's weight-decay arm); ``official``: the code release's OLS shares per
    epoch (:func:`official_shares`), where its run of this protocol is stored."""
    return judge_all(SPECS, EpochRun(arm, dict(official or {})), cfg, lambda key: KNOWN_GAPS.reason(cfg, key))


def official_arrays(root: Path | None = None) -> dict[str, np.ndarray] | None:
    """The arrays of the code release's stored run of this protocol (:data:`OFFICIAL_RUN`: its own analysis, both
    arms), or None where it is not stored; chapter 2's readers of the release all load it here."""
    found = load_artifact((root or project_root()) / OFFICIAL_STORE, OFFICIAL_RUN)
    return None if found is None else found.arrays


def official_shares() -> dict[int, list[float]]:
    """``{epoch: per-model OLS share}`` of the code release's stored run (its ``wd1/mode_spread`` arrays), or ``{}``
    where it is not stored."""
    arrays = official_arrays()
    if arrays is None:
        return {}
    epochs, frac = arrays["wd1/mode_spread/epochs"], arrays["wd1/mode_spread/frac_near"]
    return {int(e): [float(v) for v in frac[:, i]] for i, e in enumerate(epochs)}
