"""Chapter 2 (notebooks/02_modadd_grokking): the modular-addition core crystallises at grokking.

Its knobs (:data:`PARAMS`, the presets and check of :mod:`ace_helpers.chapters.modadd.config`),
the run it shares with chapter 3 (:func:`load_run`), its claims (:func:`grokking_claims`, with
the :data:`KNOWN_GAPS` measured at the book and paper presets), the stored long run it repeats
them on (:func:`long_run_claims`) and its ``results.json`` (:func:`results`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import (  # noqa: F401 - the chapter's analysis, for the notebook
    run_entries,
    ArmResult,
    GrokRun,
    arm_results,
    clock_panels,
    default_clock_epochs,
    grok_epoch,
    per_model_at,
    per_model_summary,
)
from ace_helpers.chapters.modadd.claims import ClaimRow, not_tested_table  # noqa: F401
from ace_helpers.chapters.modadd.long_run import NO_LONG_RUN, describe_long_run, stored_long_run  # noqa: F401
from ace_helpers.chapters.modadd.run import load_run  # noqa: F401
from ace_helpers.params import ChapterParams, Params
from ace_helpers.report import Claims, KnownGaps

PARAMS = ChapterParams("02_modadd_grokking", config.PRESETS, config.check)

#: Test accuracy below which a checkpoint counts as "before grokking" (memorisation phase) for
#: the claims about the pre-grokking spectrum: 0.1 is ~5x chance at p = 53 and below every
#: transition-phase accuracy of the paper's clocks (epoch 300: chance; epoch 800: 1.0).
PRE_GROK_ACC = 0.1

#: Claims measured *not* to reproduce with a preset's exact run (seeds and N_MODELS included),
#: and why.  They are shown as "no — known gap" and do not fail the notebook; any other failure
#: does.  Evidence: the book-preset run stored in ``book/artifacts/modadd_grokking``, and the
#: paper run (2 of its 3 models: the book run continued to 20 000 epochs, so the book's
#: checkpoints and their gaps are part of it).
KNOWN_GAPS = KnownGaps(
    gaps={
        "book": {
            "post_grok_unit_circle": "model 1 groks late (epoch 1000) and its clock is still sharpening at its grok "
            "checkpoint, and model 0's share drifts down once its core starts to inflate",
            "post_grok_r2_holdout": "same checkpoints as the unit-circle row: a late grokker and an inflating core "
            "make the 4-class held-out block harder to predict",
        },
        "paper": {
            "post_grok_unit_circle": "besides the book run's checkpoints (a late grokker, an inflating core), the share "
            "dips while the core inflates under weight decay and recovers later in the run (per-checkpoint arrays in the chapter)",
            "post_grok_r2_holdout": "R_h² is the mean per-dimension R² on 4 held-out classes of a ridge fit on the other "
            "class pairs; once the core has inflated to ~40 dimensions it is noisy and stays low",
        },
    },
    run_knobs=(*config.RUN_KNOBS, "N_MODELS"),
)

#: How a relaxed claim names its rule (:func:`ace_helpers.chapters.modadd.config.paper_task`).
OFF_PAPER_TASK = "off the paper task p = 53 / 50 %"


def grokking_claims(run: GrokRun, cfg: Params) -> tuple[Claims, list[ClaimRow], dict[str, Any]]:
    """Chapter 2 claims: grok epoch, core dim at grokking, spectrum before / after, keep / remove.

    Returns ``(Claims, not_tested, numbers)``; ``numbers`` are the measured values used.
    One rule relaxes thresholds, :func:`~ace_helpers.chapters.modadd.config.paper_task`: off the
    paper's task (a smaller prime, other data) the paper's grok-epoch window becomes "groks
    before FORK_EPOCH", the core-dim window's lower bound is 4 instead of 10 (p = 31 has 16, not
    27, harmonics) and the post-grokking R_h² threshold is 0.5 instead of 0.9 (at p = 31 the
    ~14-dim shift operator is fitted on only 27 class pairs and scored on 4, so R_h² is noisy:
    0.6–0.93 on the ci run's post-grokking checkpoints, against < 0 before grokking).  Each
    relaxed claim says so in its text.
    """
    p = cfg["P"]
    wd = run.wd
    epochs = wd.epochs
    claims = Claims()
    not_tested: list[ClaimRow] = []
    grok = grok_epoch(epochs, wd["test_acc"])
    paper_task = config.paper_task(cfg)
    relaxed = "" if paper_task else f" (relaxed {OFF_PAPER_TASK}: p = {p})"
    nums: dict[str, Any] = {"grok_epoch": grok}
    if paper_task:
        claims.check("grok epoch (all models ≥ 0.99 test acc) in [500, 1200]", "~800", grok,
                     grok is not None and 500 <= grok <= 1200)  # fmt: skip
    else:
        claims.check(f"groks (all models ≥ 0.99) by FORK_EPOCH = {cfg['FORK_EPOCH']}, not in [500, 1200]{relaxed}",
                     "~800 at p = 53", grok, grok is not None and grok <= cfg["FORK_EPOCH"])  # fmt: skip
    if grok is None:
        return claims, not_tested, nums
    dim_at = per_model_at(wd, "core_dim", grok)
    lo = 10 if paper_task else 4
    nums["core_dim_at_grok"] = dim_at.tolist()
    claims.check(f"core dim at grokking in [{lo}, 25] (every model){'' if paper_task else ', not [10, 25]' + relaxed}",
                 "~15", dim_at.tolist(), bool(((dim_at >= lo) & (dim_at <= 25)).all()))  # fmt: skip

    pre = (wd["test_acc"] < PRE_GROK_ACC).all(axis=0) & (epochs < grok)
    post = epochs >= grok
    nums["pre_grok_epochs"] = epochs[pre].tolist()
    med = wd["median_abs_eig"][:, pre]
    r2h = wd["r2_holdout"][:, pre]
    nums["pre_grok_max_median_abs_eig"] = float(np.max(med)) if med.size else None
    nums["pre_grok_max_r2_holdout"] = float(np.max(r2h)) if r2h.size else None
    claims.check(f"before grokking (test acc < {PRE_GROK_ACC}): median |λ| < 0.8 at every checkpoint", "inside the disk",
                 nums["pre_grok_max_median_abs_eig"], bool(med.size) and bool((med < 0.8).all()))  # fmt: skip
    claims.check("before grokking: R_h² < 0.6 at every checkpoint", "R² ≈ 0", nums["pre_grok_max_r2_holdout"],
                 bool(r2h.size) and bool((r2h < 0.6).all()))  # fmt: skip
    frac = wd["frac_unit_circle"][:, post]
    r2p = wd["r2_holdout"][:, post]
    keep_gap = (wd["test_acc"] - wd["keep_acc"])[:, post]
    rem = wd["remove_acc"][:, post]
    nums.update(post_grok_min_frac_unit_circle=float(frac.min()), post_grok_min_r2_holdout=float(r2p.min()),
                post_grok_max_keep_gap=float(keep_gap.max()), post_grok_max_remove_acc=float(rem.max()))  # fmt: skip
    claims.check("from grokking on: ≥ 80 % of eigenvalues within sin(π/p) of the circle", "on the circle",
                 nums["post_grok_min_frac_unit_circle"], bool((frac >= 0.8).all()),
                 known_gap=KNOWN_GAPS.reason(cfg, "post_grok_unit_circle"))  # fmt: skip
    r2_min = 0.9 if paper_task else 0.5
    claims.check(f"from grokking on: R_h² ≥ {r2_min}{'' if paper_task else ', not 0.9' + relaxed}", "≈ 1",
                 nums["post_grok_min_r2_holdout"], bool((r2p >= r2_min).all()),
                 known_gap=KNOWN_GAPS.reason(cfg, "post_grok_r2_holdout"))  # fmt: skip
    claims.check("from grokking on: core-only acc ≥ base − 0.01 (max shortfall)", "= base",
                 nums["post_grok_max_keep_gap"], bool((keep_gap <= 0.01).all()))  # fmt: skip
    claims.check(f"from grokking on: core-removed acc ≤ 2/p = {2 / p:.4f} (max)", "chance",
                 nums["post_grok_max_remove_acc"], bool((rem <= 2.0 / p).all()))  # fmt: skip
    return claims, not_tested, nums


def long_clock_epochs(arm: ArmResult, grok: int | None) -> list[int]:
    """Clock epochs of the long run: the paper's (0, 300, 800, 900, 2000) shifted by our grokking:
    0, 300, grok, grok + 100, 2000 (those that are checkpoints)."""
    return [e for e in (0, 300, grok, (grok or 0) + 100, 2000) if e is not None and e in arm.epochs]


def results(
    cfg: Params,
    run: GrokRun,
    claims: Claims,
    clock_epochs: Sequence[int],
    long: tuple[Params, GrokRun, Mapping[str, int]] | None,
    long_claims: Claims | None,
    long_numbers: Mapping[str, Any] | None,
    wall_s: float,
) -> dict[str, Any]:
    """The chapter's ``results.json`` entries (keys listed in the notebook's Results section)."""
    wd = run.wd
    out = arm_results(wd) | {
        "clock_epochs": list(clock_epochs),
    } | run_entries(run, claims.counts(), wall_s)
    if long is not None:
        _, lrun, through = long
        out["long_run"] = {"preset": "paper", "n_models": lrun.n_models, "through_epoch": through, "numbers": long_numbers,
                           "claims_failed": long_claims.counts()["claims_failed"]}  # fmt: skip
    return out
