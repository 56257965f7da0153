"""Chapter 2's rules up to the grok checkpoint, as data (:data:`SPECS`): the grok epoch, the spectrum before grokking,
the core's size and the unit-circle share at grokking, and the diagnosis of that share where it fails (timing).

Two rules have a variant off the paper's task (:func:`ace_helpers.chapters.modadd.config.paper_task`): the grok
epoch window becomes "groks by FORK_EPOCH" and the core-size window's lower bound is 4 (p = 31 has 16, not 27,
harmonics).  :func:`specs_for` picks the variants of a run; each relaxed rule says so in its text.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult, GrokRun, grok_epoch
from ace_helpers.chapters.modadd.stats import SHARE_MIN, late_arm
from ace_helpers.chapters.modadd_grokking.keep_remove import OURS
from ace_helpers.repro.params import Params
from ace_helpers.repro.rules import ONE, WITHIN, Comparison, Measured, NotTested, Rule, Spec

#: Test accuracy below which a checkpoint counts as "before grokking" (memorisation phase) for
#: the claims about the pre-grokking spectrum: 0.1 is ~5x chance at p = 53 and below every
#: transition-phase accuracy of the paper's clocks (epoch 300: chance; epoch 800: 1.0).
PRE_GROK_ACC = 0.1

#: How a relaxed claim names its rule (:func:`ace_helpers.chapters.modadd.config.paper_task`).
OFF_PAPER_TASK = "off the paper task p = 53 / 50 %"

#: Where the paper's unit-circle share comes from in the official code.
CODE_SHARE = "code release joshseth/cores, src/cores/modular_addition_analysis.py (OLS on all class means, ε = sin(π/p))"
CODE_CLOCKS = "code release joshseth/cores, src/cores/plot_mod_add.py (Fig. 1C clocks: ridge 1, block-edge holdout)"

OBSERVED = "3 models, p = 53, train fraction 0.5, weight decay 1: the grok checkpoint and the checkpoints before it"
GROK_RULE = "first checkpoint at which every model has test accuracy ≥ 0.99 (the code release's grok rule)"


@dataclass
class GrokClaimsRun:
    """What chapter 2's rules read: the ``run``, its grok epoch (None: it never groks), the grok checkpoint's index
    ``gi``, the post-grokking mask ``post`` (C,), the code release's OLS shares per epoch (``official``) and ``long``:
    the late weight-decay arm for the training-length diagnosis (``True``: look it up when needed; None: none)."""

    run: GrokRun
    cfg: Params
    long: tuple[ArmResult, str] | None | bool = None
    official: Mapping[int, Sequence[float]] = field(default_factory=dict)

    @property
    def wd(self) -> ArmResult:
        return self.run.wd

    @functools.cached_property
    def grok(self) -> int | None:
        return grok_epoch(self.wd.epochs, self.wd["test_acc"])

    @property
    def gi(self) -> int:
        assert self.grok is not None, "the run does not grok"
        return self.wd.index(self.grok)

    @property
    def post(self) -> np.ndarray:
        assert self.grok is not None, "the run does not grok"
        return self.wd.epochs >= self.grok

    @property
    def pre(self) -> np.ndarray:
        """(C,) checkpoints before grokking with every model below :data:`PRE_GROK_ACC` test accuracy."""
        wd = self.wd
        return (wd["test_acc"] < PRE_GROK_ACC).all(axis=0) & (wd.epochs < (self.grok if self.grok is not None else np.inf))

    @property
    def at_grok_share(self) -> np.ndarray:
        """(M,) OLS unit-circle share at the grok checkpoint."""
        return self.wd["frac_unit_circle_ols"][:, self.gi]

    @functools.cached_property
    def late(self) -> tuple[ArmResult, str] | None:
        """The late arm of the training-length diagnosis (:func:`~ace_helpers.chapters.modadd.stats.late_arm`)."""
        return late_arm(self.run, self.cfg) if self.long is True else (self.long or None)


def _grok_epoch(r: GrokClaimsRun, cfg: Params, metric: str) -> Measured:
    context = {"fork": cfg["FORK_EPOCH"], "relaxed": f"relaxed {OFF_PAPER_TASK}: p = {cfg['P']}"}
    if r.grok is None:
        return Measured(
            {metric: float("inf"), "FORK_EPOCH": cfg["FORK_EPOCH"]}, ours="no grokking", value=float("nan"), context=context
        )
    return Measured({metric: r.grok, "FORK_EPOCH": cfg["FORK_EPOCH"]}, ours=r.grok, context=context)


def _grok_paper(r: GrokClaimsRun, cfg: Params) -> Measured:
    return _grok_epoch(r, cfg, "grok epoch")


def _grok_off_task(r: GrokClaimsRun, cfg: Params) -> Measured:
    return _grok_epoch(r, cfg, "grok epoch (off the paper task)")


def _pre_grok(r: GrokClaimsRun, key: str, metric: str) -> Measured | NotTested:
    """Each model's largest ``key`` over the checkpoints before grokking."""
    vals = r.wd[key][:, r.pre]
    if not vals.size:
        return NotTested(
            f"no checkpoint before grokking has every model below test accuracy {PRE_GROK_ACC:g}", ours="no such checkpoint"
        )
    return Measured({metric: vals.max(axis=1).tolist()}, ours=float(np.max(vals)), value=float(np.max(vals)))


PRE_DISK, PRE_R2 = "largest pre-grokking median |λ| (ridge fit)", "largest pre-grokking R_h²"


def _pre_disk(r: GrokClaimsRun, cfg: Params) -> Measured | NotTested:
    return _pre_grok(r, "median_abs_eig", PRE_DISK)


def _pre_r2(r: GrokClaimsRun, cfg: Params) -> Measured | NotTested:
    return _pre_grok(r, "r2_holdout", PRE_R2)


def _core_at_grok(r: GrokClaimsRun, cfg: Params, metric: str) -> Measured:
    dims = r.wd["core_dim"][:, r.gi]
    return Measured(
        {metric: dims.tolist()},
        ours=dims.tolist(),
        context={"p": cfg["P"], "harmonics": cfg["P"] // 2, "relaxed": f"relaxed {OFF_PAPER_TASK}: p = {cfg['P']}"},
    )


def _core_paper(r: GrokClaimsRun, cfg: Params) -> Measured:
    return _core_at_grok(r, cfg, "necessary dim at grokking")


def _core_off_task(r: GrokClaimsRun, cfg: Params) -> Measured:
    return _core_at_grok(r, cfg, "necessary dim at grokking (off the paper task)")


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _snap(r: GrokClaimsRun, cfg: Params) -> Measured:
    """The OLS share at the grok checkpoint, beside the code release's own shares at that epoch (its rerun here):
    our run departs from the paper where the official models are on the circle and ours are not."""
    at = r.at_grok_share
    official = r.official.get(int(r.wd.epochs[r.gi]))
    if official is None:
        why, cause_class = ", the clocks still forming", ""
    else:
        why = f"; the official code, rerun here, reaches {_fmt(official)}"
        cause_class = "ours" if min(official) >= SHARE_MIN else "paper"
    return Measured(
        {"OLS share on the circle at grokking": at.tolist()},
        ours=[round(float(v), 3) for v in at],
        official=None if official is None else list(official),
        context={"shares": _fmt(at), "why": why, "rounded": str([round(float(v), 3) for v in at])},
        cause_class=cause_class,
    )


def forming(r: GrokClaimsRun) -> dict[str, Any] | None:
    """The timing diagnosis: in every model below the share at the grok checkpoint, ``{epoch, models, share, r2}``: the
    OLS share and the in-sample OLS R² of the shift fit there and one checkpoint later (``[[at, later], …]``); None where
    every model is on the circle or no checkpoint follows."""
    wd, gi = r.wd, r.gi
    low = np.flatnonzero(r.at_grok_share < SHARE_MIN)
    if not low.size or gi + 1 >= len(wd.epochs):
        return None
    pairs = {
        k: [[round(float(a[m, gi]), 3), round(float(a[m, gi + 1]), 3)] for m in low]
        for k, a in (("share", wd["frac_unit_circle_ols"]), ("r2", wd["r2_ols"]))
    }
    return {"epoch": int(wd.epochs[gi + 1]), "models": low.tolist(), **pairs}


def _still_forming(r: GrokClaimsRun, cfg: Params) -> Measured | None:
    f = forming(r)
    if f is None:
        return None
    flat = sum(1 for a, b in f["share"] + f["r2"] if not b > a)
    return Measured(
        {"shares and OLS R² (models below the share) not higher one checkpoint later": flat},
        ours=f"models {f['models']}: share {f['share']}, OLS R² {f['r2']} (at grokking, then at {f['epoch']})",
        value=float("nan"),
        context={"later": f["epoch"]},
    )


WHERE_CLOCKS = "Fig. 1C (clocks at epochs 0 and 300: 'eigenvalues scatter inside the unit circle')"

GROK_PAPER = Rule(
    "modadd.grok_epoch",
    "grok epoch (all models ≥ 0.99 test acc) in [500, 1200]",
    "grokking at epoch ~800",
    "§3 ('At grokking (epoch 800)'), Fig. 1A",
    OBSERVED,
    (Comparison("grok epoch", WITHIN, (500, 1200), over=ONE),),
    f"{GROK_RULE}, within {{t0}}: our window around ~800 (other seeds grok at other epochs)",
    _grok_paper,
    {"grok epoch": 3000},
)
GROK_OFF_TASK = Rule(
    "modadd.grok_epoch",
    "groks (all models ≥ 0.99) by FORK_EPOCH = {fork}, not in [500, 1200] ({relaxed})",
    "grokking at epoch ~800 (p = 53)",
    "§3, Fig. 1A",
    OBSERVED,
    (Comparison("grok epoch (off the paper task)", "<=", 0, relative_to="FORK_EPOCH", over=ONE),),
    f"{GROK_RULE}, by FORK_EPOCH: the paper's epoch window is for p = 53 at a 50 % split",
    _grok_off_task,
    {"grok epoch (off the paper task)": 3000},
)
CORE_PAPER = Rule(
    "modadd.core_at_grok",
    "core dim at grokking in [10, 25] (every model)",
    "cores ~15-D at grokking",
    "Fig. 1A, §3 results",
    OBSERVED,
    (Comparison("necessary dim at grokking", WITHIN, (10, 25)),),
    "necessary dim at the grok checkpoint, every model, in {t0}: our window around ~15",
    _core_paper,
    {"necessary dim at grokking": [60, 60]},
    unit="model",
)
CORE_OFF_TASK = Rule(
    "modadd.core_at_grok",
    "core dim at grokking in [4, 25] (every model), not [10, 25] ({relaxed})",
    "cores ~15-D at grokking",
    "Fig. 1A, §3 results",
    OBSERVED,
    (Comparison("necessary dim at grokking (off the paper task)", WITHIN, (4, 25)),),
    "necessary dim at the grok checkpoint, every model, in {t0}: our window around ~15; lower bound 4, not 10, off the "
    "paper's task (p = {p} has {harmonics} harmonics)",
    _core_off_task,
    {"necessary dim at grokking (off the paper task)": [60, 60]},
    unit="model",
)

SPECS: tuple[Spec, ...] = (
    GROK_PAPER,
    GROK_OFF_TASK,
    Rule(
        "modadd.pre_grok_disk",
        "before grokking (test acc < 0.1): median |λ| < 0.8 at every checkpoint",
        "inside the disk",
        WHERE_CLOCKS,
        OBSERVED,
        (Comparison(PRE_DISK, "<", 0.8),),
        "max over models and pre-grokking checkpoints of the median |λ| of the ridge-1, block-holdout fit (the fit the "
        "code release draws in the Fig. 1C clocks) < {t0}, our bound; the in-sample OLS fit is not used here: it fits ~40 "
        "dims to p points and pushes |λ| up (printed in the chapter)",
        _pre_disk,
        {PRE_DISK: [0.99, 0.99]},
        unit="model",
    ),
    Rule(
        "modadd.pre_grok_r2",
        "before grokking: R_h² < 0.6 at every checkpoint",
        "R_h² ≈ 0",
        "Fig. 1C (R_h² annotations), §3",
        OBSERVED,
        (Comparison(PRE_R2, "<", 0.6),),
        "max over models and pre-grokking checkpoints of the holdout R_h² (ridge 1, the last 4 classes held out, as the "
        "code release's clocks) < {t0}: our bound between '≈ 0' and the post-grokking values",
        _pre_r2,
        {PRE_R2: [0.95, 0.95]},
        unit="model",
    ),
    CORE_PAPER,
    CORE_OFF_TASK,
    Rule(
        "modadd.snap",
        "at grokking: ≥ 80 % of the shift operator's eigenvalues within sin(π/p) of the unit circle (OLS, every model)",
        "'At grokking (epoch 800), eigenvalues snap onto the unit circle'",
        f"§3, Fig. 1C; the share as computed in the {CODE_SHARE}",
        OBSERVED,
        (Comparison("OLS share on the circle at grokking", ">=", SHARE_MIN),),
        "share of the OLS eigenvalues with ||λ| − 1| ≤ sin(π/p) at the grok checkpoint ≥ {t0}, every model: the fit and "
        "band of the code release; 'snap onto' states no share, {t0} is ours",
        _snap,
        {"OLS share on the circle at grokking": [0.3, 0.3]},
        unit="model",
        gap="at_grok_unit_circle::shares {rounded}",
        cause="OLS shares at the grok checkpoint are {shares}{why}",
        cause_class="ours",
    ),
    Rule(
        OURS + "clock_still_forming_at_grok",
        "diagnosis, timing: the clock is still forming at the grok checkpoint (share and OLS R² higher at epoch {later})",
        "–",
        "ours (diagnosis)",
        OBSERVED,
        (Comparison("shares and OLS R² (models below the share) not higher one checkpoint later", "<=", 0, over=ONE),),
        f"in every model below {SHARE_MIN:g} at the grok checkpoint (the first at which every model has ≥ 0.99 test "
        "accuracy), the OLS share and the in-sample OLS R² of the shift fit are both higher one checkpoint later: the "
        "checkpoint catches the clock while it forms",
        _still_forming,
        {"shares and OLS R² (models below the share) not higher one checkpoint later": 2},
        explains="modadd.snap",
    ),
)

#: The rules judged on a run that never groks (the others are about "at / after grokking").
BEFORE_GROK = ("modadd.grok_epoch", "modadd.pre_grok_disk", "modadd.pre_grok_r2")

#: The rules that hold on the paper's task only, and their variants off it.
PAPER_TASK_ONLY, OFF_TASK_ONLY = (GROK_PAPER, CORE_PAPER), (GROK_OFF_TASK, CORE_OFF_TASK)


def pick(specs: Sequence[Spec], cfg: Params, paper: Sequence[Spec], off: Sequence[Spec]) -> tuple[Spec, ...]:
    """``specs`` without the variants that do not apply to ``cfg``'s task (``paper``: the paper task's, ``off``: theirs
    off it)."""
    drop = off if config.paper_task(cfg) else paper
    return tuple(s for s in specs if not any(s is d for d in drop))


def specs_for(cfg: Params) -> tuple[Spec, ...]:
    """:data:`SPECS` with the variants of ``cfg``'s task."""
    return pick(SPECS, cfg, PAPER_TASK_ONLY, OFF_TASK_ONLY)
