"""Chapter 3's claims: the rules of :mod:`ace_helpers.chapters.core_inflation.rules` judged on one run
(:func:`build_claims`) or on the stored long run (:func:`long_run_claims`), with the gaps measured at the book and paper
presets (:data:`KNOWN_GAPS`).  Each row names the paper claim it tests (``inflation.*``) or is one of ours
(``ours.core_inflation.*``; a diagnosis names the paper claim it explains)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ace_helpers.chapters.core_inflation import official
from ace_helpers.chapters.core_inflation.fork import has_spectra
from ace_helpers.chapters.core_inflation.measures import (  # noqa: F401 - the chapter's bounds, re-exported
    DIM_MIN,
    MIN_GROWTH,
    NOWD_FACTOR,
    REDIST_FACTOR,
    REDIST_SHARE,
    sufficient_dims,
)
from ace_helpers.chapters.core_inflation.readings import Facts, window_quartiles
from ace_helpers.chapters.core_inflation.rules import OURS, SPECS, InflationRun, facts
from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import GrokRun, per_model_at
from ace_helpers.repro.known_gaps import KnownGaps, seed_sensitive
from ace_helpers.repro.official import attach_official, triangulate
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import ONE, Comparison, Measured, Rule, Spec, judge_all

_WD_OFF_GAP = (
    "without weight decay, removing the energy-rank directions leaves accuracy above the 2/p floor (the "
    "residue table in the chapter), so the necessity scan runs tens of dimensions past the energy rank, "
    "which itself does not grow (the WD-off energy-rank row)"
)

#: Claims measured *not* to reproduce with a preset's exact run (seeds and N_MODELS included),
#: and why; shown as "not reproduced" or "partly" with the cause, they do not fail the notebook.
#: Evidence: the book run stored in ``book/artifacts/modadd_grokking`` and the paper run (2 of
#: its 3 models); every mechanism named here is checked by a row of its own.
KNOWN_GAPS = KnownGaps(
    gaps={
        "ci": {
            "suff_flat": seed_sensitive(
                2, 5, "max/min of the sufficient dim after grokking 1.25, 1.667, 3.25, 2, 1.25 against 1.5"
            )
        },
        config.BOOK_1100: {"nowd_no_inflation": _WD_OFF_GAP},
        config.BOOK_LOOP: {"nowd_no_inflation": _WD_OFF_GAP},
        # the first stored paper run (2 of its 3 models): each model alone, fp32
        config.PAPER_LOOP: {
            "nowd_no_inflation": _WD_OFF_GAP,
            "dim_60": "our cores stop growing near 42 dimensions: the core dim hardly changes over the second half of "
            "the run (the plateau row), so more epochs would not reach ~60",
            "growth_45": "the same plateau near 42 dimensions (the plateau row): the growth stops at about two-thirds "
            "of the paper's",
            "suff_flat": "with weight decay the sufficient dim grows too (less than the necessary dim, so their gap "
            "still widens); this is not the strict 1e-3 keep tolerance: it grows at a 1 % tolerance as well (the "
            "tolerance row)",
            "modes_27": "the count is capped by the core's size: an OLS fit on a d-dimensional core fills at most "
            "⌊d/2⌋ + 1 bins (22 for d = 42) and ours fill nearly all of them (the cap row); the paper's ~60-dimensional "
            "cores leave room for all 27",
            "modes_contrast": "in the WD-off model whose necessary dim jumps to about the WD arm's (the WD-off rows), the "
            "OLS fit runs in a space as large and fills more bins (its cap ⌊d/2⌋ + 1 grows with d)",
        },
        # the same protocol forked at 900 as in the paper (its stored part; measured on its own)
        config.PAPER_ENSEMBLE: {
            "suff_flat": "with weight decay the sufficient dim grows too, less than the necessary dim, so their gap still "
            "widens (the redundancy row), as in the run forked at 1100",
            "nowd_no_inflation": _WD_OFF_GAP + "; unlike the run forked at 1100, whose WD-off arm ends at its size at "
            "grokking, this arm stays two to three times as large to epoch 20 000 (the fork table)",
            "nowd_no_modes": "the OLS modes are counted on the WD-off core, which stays two to three times its size at "
            "grokking (the row above) while its energy rank stays flat (the WD-off energy-rank row): the fit runs in a "
            "larger space and its cap ⌊d/2⌋ + 1 grows with d",
            "modes_contrast": "the WD-off cores stay large (the WD-off rows), so their OLS fit runs in a space nearly as "
            "large as the weight-decay arm's and fills nearly as many bins (its cap ⌊d/2⌋ + 1 grows with d)",
            "growth_45": "the seeds end apart: model 0's core ends smallest (inside the ~60 rule, the inflation row) and "
            "grew least from its size at grokking; the other two grew by about 45",
            "modes_27": "the count is capped by the core's size (the cap row: ⌊d/2⌋ + 1 bins for a d-dimensional core): "
            "model 0's core leaves room for fewer than 27, and the larger cores fill all but one bin, as in the run "
            "forked at 1100",
            "redistribution": "measured, cause not identified: under weight decay the unembedding's Fourier power "
            "spreads to most of the ⌊p/2⌋ harmonics while the embedding's stays on a few, as without weight decay (the "
            "harmonics figure); the claim holds for one of the two weights",
        },
        # the same protocol on the ensemble trainer in bf16 (all 3 models, both arms), forked at 1100
        config.PAPER_ENSEMBLE_1100: {
            "nowd_no_inflation": _WD_OFF_GAP,
            "dim_60": "the seeds' cores end far apart (ours lists them): those below 48 have stopped growing over the "
            "second half of the run (the plateau row), so more epochs would not bring every model to ~60",
            "growth_45": "the growth follows the final sizes: the cores that stop below 48 (the plateau row) grew less than ~45",
            "suff_flat": "with weight decay the sufficient dim grows too (less than the necessary dim, so their gap "
            "still widens); this is not the strict 1e-3 keep tolerance: it grows at a 1 % tolerance as well (the "
            "tolerance row)",
            "modes_27": "the count is capped by the core's size: an OLS fit on a d-dimensional core fills at most "
            "⌊d/2⌋ + 1 bins and ours fill nearly all of them (the cap row); only cores of 52 dims or more leave room "
            "for all 27",
        },
    },
    run_knobs=(*config.RUN_KNOBS, "N_MODELS"),
    runs={**config.FORK_1100_RUNS, config.PAPER_ENSEMBLE: config.PAPER_ENSEMBLE_RUN},
)


def _gap(cfg: Params, key: str, full_run: bool, horizon: int) -> str | None:
    """The known gap ``key`` of this run; a rule stated for 20 000 epochs (``"late:<key>"``) that a shorter run on
    the paper's task does not meet has the run's length as its cause, where no gap is known."""
    if not key.startswith("late:"):
        return KNOWN_GAPS.reason(cfg, key)
    why = KNOWN_GAPS.reason(cfg, key[5:]) if key[5:] else None
    if why is None and not full_run:
        why = f"training length: measured at epoch {horizon}, before the claim's horizon of 20 000 epochs"
    return why


def chapter_numbers(f: Facts) -> dict[str, Any]:
    """The measured values the chapter's prose and ``results.json`` quote (``claims.numbers``), from a run's facts."""
    wd, nowd = f.wd, f.nowd
    nums: dict[str, Any] = {
        "grok_epoch": f.grok,
        "core_dim_last": wd["core_dim"][:, -1].tolist(),
        "modes_ols_last": wd["rotational_modes_ols"][:, -1].tolist(),
        "nowd_core_dim_last": nowd["core_dim"][:, -1].tolist(),
        "nowd_modes_ols_last": nowd["rotational_modes_ols"][:, -1].tolist(),
        "core_dim_window_median": window_quartiles(wd, "core_dim", DIM_MIN, "core dim")[1],
    }
    if not f.before_fork:
        return nums
    nums["core_dim_growth_since_grok"] = f.growth().tolist()
    for field, short in (("core_dim", "dim"), ("rotational_modes_ols", "modes")):
        nums[f"nowd_{short}_ratio_to_grok_at_end"] = {"epoch": f.e_end, "ratio": f.nowd_ratio(field).tolist()}
        nums[f"nowd_{short}_max_ratio_to_grok"] = (
            nowd[field].max(axis=1) / np.maximum(per_model_at(wd, field, f.grok), 1)
        ).tolist()
    nums["nowd_energy_rank_max_ratio_to_fork"] = (nowd["energy_rank"] / nowd["energy_rank"][:, :1]).max(axis=1).tolist()
    if f.shared:
        for field, name in (("energy_rank", "energy_rank_wd_minus_nowd"), ("rotational_modes_ols", "modes_ols_wd_minus_nowd")):
            nums[name] = {"epoch": f.e_end, "diff": f.contrast(field).tolist()}
    if f.shared and has_spectra(wd) and has_spectra(nowd):
        for field, name in (("emb_spectrum", "embedding"), ("unemb_spectrum", "unembedding")):
            h_wd, h_off = f.harmonics(field)
            nums[f"effective_harmonics_{name}"] = {"epoch": f.e_end, "wd": h_wd.tolist(), "nowd": h_off.tolist(), "of": f.p // 2}
    nums["suff_dim_post_grok_max_over_min"] = f.suff_spread().tolist()
    nums["redundancy_gap_growth_since_grok"] = f.gap_growth().tolist()
    nums["modes_ols_window_median"] = window_quartiles(wd, "rotational_modes_ols", f.p // 2 + 1 - 3, "OLS mode count")[1]
    return nums


def build_claims(run: GrokRun, cfg: Params, last_epoch: int | None = None) -> Claims:
    """Chapter 3 claims on one run (Fig. 2A, 2B, 2D): every rule of :data:`~.rules.SPECS`, with the claims the run
    cannot test in ``not_tested`` and the measured values in ``numbers`` (:func:`chapter_numbers`).

    The inflation targets are stated for 20 000 epochs at p = 53; ``last_epoch`` is where the run's checkpoints stop
    (default EPOCHS; less for the stored part of an unfinished run).  A run on the paper's task that stops earlier is
    judged at its last epoch, with the run's length as the cause of a target it misses (:func:`_gap`).  On the
    paper's task the weight-decay-off rows carry the code release's own ratios, rerun here (:mod:`ace_helpers.chapters.core_inflation.official`).
    """
    f = facts(InflationRun(run, last_epoch), cfg)
    claims = judge_all(SPECS, InflationRun(run, last_epoch), cfg, lambda key: _gap(cfg, key, f.full_run, f.horizon))
    claims.numbers = chapter_numbers(f)
    numbers = official.stored_official() if config.paper_task(cfg) else None
    n = len(numbers["inflation.no_wd"]) if numbers else 0
    where = f"epoch {numbers['epoch']}, {n} model{'s' if n != 1 else ''}" if numbers else ""
    return triangulate(attach_official(claims, numbers), SPECS, numbers, where)


@dataclass(frozen=True)
class Continuation:
    """A stored long run compared with the chapter's run it continues: the run's ``preset``, the ``shared`` epochs of
    the weight-decay arm and the ``largest`` difference of any per-checkpoint number there (inf: shapes or NaNs differ)."""

    preset: str
    shared: list[int]
    largest: float


def _reproduces(c: Continuation, cfg: Params) -> Measured | None:
    if not c.shared:
        return None  # the long run is not this run continued: nothing to compare
    return Measured(
        {"largest difference at the shared checkpoints": c.largest},
        ours=f"{c.largest:.1e}",
        value=c.largest,
        context={"preset": c.preset, "last": c.shared[-1]},
    )


CONTINUATION_SPECS: tuple[Spec, ...] = (
    Rule(
        OURS + "long_run_reproduces_run",
        "reproduces the {preset} run at the shared checkpoints (epochs ≤ {last}; largest difference ≤ {t0})",
        "–",
        "ours (reproducibility)",
        "the stored long run and this chapter's run, both arms, at the epochs both stored",
        (Comparison("largest difference at the shared checkpoints", "<=", 1e-9, over=ONE),),
        "every stored per-checkpoint number of both arms within {t0} (training segments are seeded by their position)",
        _reproduces,
        {"largest difference at the shared checkpoints": 1e-3},
    ),
)


def long_run_claims(
    cfg: Params, long_cfg: Params, lrun: GrokRun, through: Mapping[str, int], comparison: tuple[bool, list[int], float]
) -> Claims:
    """:func:`build_claims` on the stored long run (up to its last stored WD-arm epoch), plus a row checking that it
    reproduces this chapter's run at their shared checkpoints (when it is this run continued: ``comparison`` as
    :func:`ace_helpers.chapters.modadd.long_run.same_prefix` returns it)."""
    long_claims = build_claims(lrun, long_cfg, last_epoch=through["wd"])
    _, shared, largest = comparison
    long_claims.rows += judge_all(
        CONTINUATION_SPECS, Continuation(cfg["PRESET"], list(shared), largest), cfg, lambda key: None
    ).rows
    return long_claims
