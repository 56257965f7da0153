"""Chapter 2 (notebooks/02_modadd_grokking): the modular-addition core at grokking.

The chapter protocol: :data:`PARAMS` (the presets and check of
:mod:`ace_helpers.chapters.modadd.config`), :func:`run` (the training run it shares with chapter 3,
stored or trained: :func:`ace_helpers.chapters.modadd.run.load_run`) and :func:`build_claims` (with
the :data:`KNOWN_GAPS` measured at the book and paper presets, and the diagnosis rows that test
their causes), the stored long run it repeats them on, and its ``results.json`` (:func:`results`).
The per-checkpoint statistics the claims read are in :mod:`ace_helpers.chapters.modadd.stats`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import (  # noqa: F401 - the chapter's analysis, for the notebook
    ArmResult,
    GrokRun,
    arm_results,
    clock_panels,
    default_clock_epochs,
    grok_epoch,
    per_model_at,
    per_model_summary,
    run_entries,
)
from ace_helpers.chapters.modadd.grokked import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.modadd.long_run import (  # noqa: F401
    NO_LONG_RUN,
    describe_long_run,
    how_trained,
    run_departures,
    stored_long_run,
)
from ace_helpers.chapters.modadd.run import load_run as run  # noqa: F401 - the chapter protocol's run(cfg)
from ace_helpers.chapters.modadd.stats import (  # noqa: F401 - used by the notebook
    LATE_EPOCH,
    NEC_FACTOR,
    PARTLY_SHARE,
    SHARE_MIN,
    WIDE_BAND,
    PostGrok,
    late_arm,
    post_grok,
    post_grok_table,
    remove_at_energy_rank,
    wide_band_share,
)
from ace_helpers.chapters.modadd_grokking import snap_models, trainers  # noqa: F401 - the trainers compared, for the notebook
from ace_helpers.chapters.modadd_grokking.claims import (  # noqa: F401 - the chapter's claims
    CODE_CLOCKS,
    CODE_SHARE,
    OFF_PAPER_TASK,
    PRE_GROK_ACC,
    build_claims,
    long_clock_epochs,
    r2_threshold,
    unit_circle_sentence,
)
from ace_helpers.chapters.modadd_grokking.keep_remove import KEEP_TOL, keep_at_energy_rank  # noqa: F401
from ace_helpers.chapters.modadd_grokking.known_gaps import KNOWN_GAPS  # noqa: F401
from ace_helpers.chapters.modadd_grokking.paper_epochs import IDS as PAPER_EPOCH_IDS  # noqa: F401
from ace_helpers.chapters.modadd_grokking.paper_epochs import paper_epoch_claims  # noqa: F401
from ace_helpers.repro.params import ChapterParams, Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.untested import ClaimRow, not_tested_table  # noqa: F401

PARAMS = ChapterParams("02_modadd_grokking", config.PRESETS, config.check)


def results(
    cfg: Params,
    grok_run: GrokRun,
    claims: Claims,
    clock_epochs: Sequence[int],
    long: tuple[Params, GrokRun, Mapping[str, int]] | None,
    long_claims: Claims | None,
    wall_s: float,
) -> dict[str, Any]:
    """The chapter's ``results.json`` entries (keys listed in the notebook's Results section);
    ``long_claims``: the claims on the stored long run ``long``, when there is one."""
    wd = grok_run.wd
    out = (
        arm_results(wd)
        | {
            "clock_epochs": list(clock_epochs),
            "median_abs_eig_ols": wd["median_abs_eig_ols"].tolist(),
            "remove_acc_energy_rank": remove_at_energy_rank(wd).tolist(),
            "numbers": dict(claims.numbers),
        }
        | run_entries(grok_run, claims.counts(), wall_s)
    )
    if long is not None:
        long_cfg, lrun, through = long
        out["long_run"] = {
            "preset": "paper",
            "trainer": long_cfg["TRAINER"],
            "precision": long_cfg["PRECISION"],
            "n_models": lrun.n_models,
            "through_epoch": through,
            "numbers": long_claims.numbers,
            "claims_failed": long_claims.counts()["claims_failed"],
        }
    return out
