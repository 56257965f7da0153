"""How chapter 3's rules read a run: :class:`InflationRun` (a run and where its checkpoints stop), its :class:`Facts`,
the wrappers that make a rule's ``measure`` (:func:`late` for a claim stated for the paper's 20 000 epochs,
:func:`always`, :func:`after_grok`), and a per-model quantity that fluctuates from checkpoint to checkpoint read over a
window of the run (:func:`window_quartiles`), not at its last checkpoint."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ace_helpers.chapters.core_inflation.fork import effective_harmonics
from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult, GrokRun, grok_epoch, per_model_at
from ace_helpers.repro.params import Params
from ace_helpers.repro.rules import Measured, NotTested

#: A per-model rule on a quantity that fluctuates from checkpoint to checkpoint reads the checkpoints of the last
#: WINDOW share of the run (in the paper's 20 000-epoch run: epochs 15 000–20 000, 11 checkpoints), not the last alone.
WINDOW = 0.25


def window_mask(epochs: np.ndarray) -> np.ndarray:
    """(C,) mask of the checkpoints in the last :data:`WINDOW` share of the run."""
    return np.asarray(epochs) >= (1 - WINDOW) * float(np.max(epochs))


def span(values: Any, digits: int = 1) -> str:
    vals = [float(v) for v in values]
    return f"{min(vals):.{digits}f}–{max(vals):.{digits}f}"


@dataclass(frozen=True)
class InflationRun:
    """What the rules read: a run (both arms) and where its checkpoints stop (``last_epoch``; None: EPOCHS)."""

    run: GrokRun
    last_epoch: int | None = None


@dataclass(frozen=True)
class Facts:
    """What several rules need: the arms, the grok epoch, the last epoch, the epoch both arms reached (``e_end``,
    ``shared``: whether they share one), whether the run is on the paper's task and runs its 20 000 epochs."""

    p: int
    wd: ArmResult
    nowd: ArmResult
    grok: int | None
    last: int
    horizon: int
    paper_task: bool
    full_run: bool
    e_end: int
    shared: bool
    fork: int

    @property
    def before_fork(self) -> bool:
        """Whether every model grokked by the fork (the WD-off comparisons need it)."""
        return self.grok is not None and self.grok <= self.fork

    # what the rules and the chapter's numbers read, per model (M,); every one needs a grok epoch
    def growth(self) -> np.ndarray:
        """The core dim's growth from grokking to the last checkpoint."""
        return self.wd["core_dim"][:, -1] - per_model_at(self.wd, "core_dim", self.grok)

    def nowd_ratio(self, field: str) -> np.ndarray:
        """The WD-off arm's ``field`` at the last shared epoch ÷ the WD arm's at grokking (at least 1)."""
        return per_model_at(self.nowd, field, self.e_end) / np.maximum(per_model_at(self.wd, field, self.grok), 1)

    def contrast(self, field: str) -> np.ndarray:
        """The WD arm's ``field`` minus the WD-off arm's, at the last shared epoch."""
        return per_model_at(self.wd, field, self.e_end) - per_model_at(self.nowd, field, self.e_end)

    def harmonics(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        """The effective number of harmonics of a weight's spectrum ``field``, with and without weight decay, at the last
        shared epoch."""
        return (
            effective_harmonics(self.wd[field][:, self.wd.index(self.e_end)]),
            effective_harmonics(self.nowd[field][:, self.nowd.index(self.e_end)]),
        )

    def suff_spread(self) -> np.ndarray:
        """Max ÷ min of the sufficient dim over the post-grokking checkpoints."""
        suff = self.wd["suff_dim"][:, self.wd.epochs >= self.grok]
        return suff.max(axis=1) / np.maximum(suff.min(axis=1), 1)

    def gap_growth(self) -> np.ndarray:
        """The growth of (necessary − sufficient dim) from grokking to the last checkpoint."""
        at_grok = per_model_at(self.wd, "core_dim", self.grok) - per_model_at(self.wd, "suff_dim", self.grok)
        return (self.wd["core_dim"] - self.wd["suff_dim"])[:, -1] - at_grok


def facts(r: InflationRun, cfg: Params) -> Facts:
    """The :class:`Facts` of ``r``."""
    wd, nowd = r.run.wd, r.run.nowd
    horizon = int(cfg["EPOCHS"] if r.last_epoch is None else r.last_epoch)
    shared = np.intersect1d(wd.epochs, nowd.epochs)
    paper_task = config.paper_task(cfg)
    return Facts(
        cfg["P"],
        wd,
        nowd,
        grok_epoch(wd.epochs, wd["test_acc"]),
        int(wd.epochs[-1]),
        horizon,
        paper_task,
        paper_task and horizon >= 20000,
        int(shared[-1]) if shared.size else int(nowd.epochs[-1]),
        bool(shared.size),
        int(cfg["FORK_EPOCH"]),
    )


Fn = Callable[[Facts, Params], "Measured | None"]


def late(fn: Fn) -> Callable[[InflationRun, Params], Measured | NotTested | None]:
    """A rule stated for the paper's 20 000 epochs: judged on the paper's task (``{at}`` in its claim says where a
    shorter run is read), not tested on another task (its value shown)."""

    @functools.wraps(fn)
    def measure(r: InflationRun, cfg: Params) -> Measured | NotTested | None:
        f = facts(r, cfg)
        m = fn(f, cfg)
        if m is None:
            return None
        if not f.paper_task:
            return NotTested(
                f"needs 20 000 epochs at p = 53 (this run: {f.horizon} at p = {f.p})",
                ours=str(m.ours),
                context={**m.context, "at": ""},
            )
        return replace(m, context={**m.context, "at": "" if f.full_run else f" [at epoch {f.horizon} of 20 000]"})

    return measure


def always(fn: Fn) -> Callable[[InflationRun, Params], Measured | None]:
    """A rule judged on every run."""

    @functools.wraps(fn)
    def measure(r: InflationRun, cfg: Params) -> Measured | None:
        return fn(facts(r, cfg), cfg)

    return measure


def window_quartiles(arm: ArmResult, key: str, bound: float, what: str) -> tuple[list[float], list[float], list[float], str]:
    """Per model the lower quartile, median and upper quartile of ``key`` over the last quarter of the run, and why
    the models cannot tell (the first whose quartiles straddle ``bound``, when none lies wholly below it)."""
    mask = window_mask(arm.epochs)
    q25, med, q75 = np.percentile(np.asarray(arm[key], dtype=float)[:, mask], [25, 50, 75], axis=1)
    undecided = [m for m in range(len(q25)) if q25[m] < bound <= q75[m]]
    why = ""
    if undecided and (q75 >= bound).all():
        m = undecided[0]
        why = (
            f"model {m}'s {what} over its last {int(mask.sum())} checkpoints has quartiles {q25[m]:g}–{q75[m]:g}, "
            f"around the bound {bound:g}"
        )
    return q25.tolist(), med.tolist(), q75.tolist(), why


def after_grok(fn: Fn) -> Fn:
    """``fn`` where every model grokked by the fork, else no row (the row above fails instead)."""

    @functools.wraps(fn)
    def measure(f: Facts, cfg: Params) -> Measured | None:
        return fn(f, cfg) if f.before_fork else None

    return measure
