"""Chapter 3's claims as data: inflation under weight decay, none without it, the contrasts between the arms, sufficient
against necessary dimension (Fig. 2A, 2B, 2D), and the diagnosis rows of the measured gaps.

:data:`SPECS` is the chapter's table of rules (:class:`~ace_helpers.repro.rules.Rule`), read by
:func:`~ace_helpers.repro.rules.judge_all` on an :class:`InflationRun`.  The inflation targets are stated for
20 000 epochs at p = 53 (:func:`late`): a run on the paper's task that stops earlier is judged at its last epoch (a
target met there is met "by epoch 20 000"; one missed there has the run's length as its cause), and another task does
not test them.  A quantity that fluctuates from checkpoint to checkpoint is read over the last quarter of the run
(:mod:`~ace_helpers.chapters.core_inflation.readings`); a rule every model must meet is judged k of N models (models
that disagree: inconclusive).  Rotational modes are counted on the OLS fit on all class means, as the official code
release fits them.
"""

from __future__ import annotations

from ace_helpers.chapters.core_inflation import measures
from ace_helpers.chapters.core_inflation.measures import (
    DIM_MIN,
    DIM_PARTLY,
    MIN_GROWTH,
    NOWD_FACTOR,
    REDIST_FACTOR,
    REDIST_SHARE,
)
from ace_helpers.chapters.core_inflation.readings import (  # noqa: F401 - InflationRun, the rules' input, re-exported
    Facts,
    InflationRun,
    after_grok,
    always,
    facts,
    late,
    span,
    window_mask,
    window_quartiles,
)
from ace_helpers.repro.rules import INTERVAL, ONE, Comparison, Rule, Spec

#: Our own claims and diagnosis rows: ``ours.core_inflation.<name>``.
OURS = "ours.core_inflation."
DIAGNOSIS = "ours (diagnosis)"
CODE_MODES = "code release joshseth/cores, src/cores/modular_addition_analysis.py, sweep_mode_spread: OLS on all class means"
OBSERVED = (
    "3 models, p = 53, weight decay 1 to epoch 20 000 and a weight-decay-off arm forked at epoch 900 "
    "(Fig. 2); the last quarter of the run where a quantity fluctuates"
)


def _every(metric: str, op: str, threshold: float, relative_to: str | None = None) -> Comparison:
    return Comparison(metric, op, threshold, relative_to=relative_to)


def _nowd_rule(claim_id: str, what: str, field: str, paper: str, where: str, gap: str, ends: str) -> Rule:
    """The WD-off arm's rule on ``field`` (the same for the core dim and the modes): at the last epoch both arms
    reached, the WD-off value ÷ the WD arm's value at grokking ≤ :data:`NOWD_FACTOR` in every model."""
    return Rule(
        claim_id,
        f"WD-off arm: {what} at the last epoch both arms reached ≤ {NOWD_FACTOR}× the value at grokking "
        "(epoch {e_end}, ratio per model){at}",
        paper,
        where,
        OBSERVED,
        (_every("WD-off value at the last shared epoch ÷ at grokking", "<=", NOWD_FACTOR),),
        f"WD-off {what} / the WD arm's {what} at grokking ≤ {{t0}} in every model at the last epoch both arms "
        "reached (the paper compares the arms at epoch 20 000 and gives no number; the same rule for the core dim "
        "and the modes)",
        measures.nowd_ratio(field),
        {"WD-off value at the last shared epoch ÷ at grokking": [3.0, 3.0, 3.0]},
        gap=f"late:{gap}",
        cause=f"without weight decay {ends}, in one 20 000-epoch sample of our trainer",
        cause_class="samples",
    )


FIG_2A = "Fig. 2A; § core inflation"
SPECS: tuple[Spec, ...] = (
    Rule(
        "inflation.grows",
        "with WD: core dim ~60 by epoch 20 000 (every model; median of the last {points} to epoch {last}){at}",
        "~60",
        FIG_2A,
        OBSERVED,
        (Comparison("the models' smallest window quartiles of the core dim", ">=", DIM_MIN, over=INTERVAL),),
        "every model ≥ {t0} (the paper's ~60 read as within 20 %) over the last quarter of the run ({points}): its lower "
        "quartile ≥ {t0}; a model whose quartiles straddle {t0} cannot tell (inconclusive); partly: every model's lower "
        "quartile ≥ {p0} (two-thirds of it, the bound this chapter used before)",
        measures.grows,
        {
            "the models' smallest window quartiles of the core dim": [20.0, 30.0],
            "the smallest lower quartile of the core dim": 20.0,
        },
        partly=(Comparison("the smallest lower quartile of the core dim", ">=", DIM_PARTLY, over=ONE),),
        gap="late:dim_60",
        cause="{why}",
        cause_class="samples",
    ),
    Rule(
        OURS + "short_cores_stopped_growing",
        "with WD: the cores below 48 have stopped growing (epoch {half} → {last}, change of models {models})",
        "–",
        DIAGNOSIS,
        OBSERVED,
        (_every("|change of the core dim over the second half|", "<=", 5),),
        "|change| ≤ {t0} dims over the second half of the run in every model whose core ends below 48 (reaching ~60 would "
        "need ≥ 15 more)",
        measures.stopped,
        {"|change of the core dim over the second half|": [20.0]},
        explains="inflation.grows",
    ),
    Rule(
        OURS + "groks_before_fork",
        "the run groks before the fork (needed for the WD-off comparison)",
        "grok 800 < fork 900",
        "§ core inflation (setting)",
        OBSERVED,
        (Comparison("grok epoch − FORK_EPOCH", "<=", 0, over=ONE),),
        "grok epoch (all models ≥ 0.99 test acc) ≤ FORK_EPOCH",
        measures.groks_before_fork,
        {"grok epoch − FORK_EPOCH": 500.0},
    ),
    Rule(
        OURS + "growth_since_grok",
        "with WD: the core grows from its size at grokking by ~45 dims (last − grok, epoch {last}){at}",
        "~15 → ~60",
        FIG_2A,
        OBSERVED,
        (_every("core dim growth since grokking", ">=", 36),),
        "growth ≥ {t0} in every model (80 % of the paper's ~45); partly: ≥ {p0} (the smallest growth this chapter calls "
        "inflation)",
        measures.growth,
        {"core dim growth since grokking": [2.0, 3.0, 1.0]},
        partly=(_every("core dim growth since grokking", ">=", MIN_GROWTH),),
        gap="late:growth_45",
    ),
    _nowd_rule(
        "inflation.no_wd",
        "core dim",
        "core_dim",
        "no inflation",
        FIG_2A,
        "nowd_no_inflation",
        "the core ends at {span}× its grokking size",
    ),
    _nowd_rule(
        "inflation.no_wd_modes",
        "OLS modes",
        "rotational_modes_ols",
        "no mode proliferation",
        "Fig. 2D; § core inflation",
        "nowd_no_modes",
        "the modes end at {span}× their count at grokking",
    ),
    Rule(
        OURS + "nowd_energy_rank_flat",
        "WD-off arm: energy rank stays ≤ 1.5× its value at the fork (max ratio per model)",
        "no inflation",
        "Fig. 2A; on the 0.99-energy rank instead of the core dim: ours",
        OBSERVED,
        (_every("WD-off energy rank's largest ratio to its value at the fork", "<=", 1.5),),
        "max over the WD-off checkpoints of energy rank / its value at the fork ≤ {t0} in every model; the energy rank is "
        "ACE's energy rule alone, without the necessity scan of the paper's core dim",
        measures.energy_rank_flat,
        {"WD-off energy rank's largest ratio to its value at the fork": [3.0, 3.0, 3.0]},
        explains="inflation.no_wd",
    ),
    Rule(
        OURS + "energy_rank_contrast",
        "WD vs WD-off: energy rank of the WD arm exceeds the WD-off arm's (epoch {e_end}, difference per model){at}",
        "~60 vs no inflation",
        "Fig. 2A, the WD vs WD-off contrast; on the 0.99-energy rank instead of the core dim: ours",
        OBSERVED,
        (_every("WD − WD-off at the last shared epoch", ">=", MIN_GROWTH),),
        "WD − WD-off ≥ {t0} dims in every model at the last epoch both arms reached (ours: the smallest growth this "
        "chapter calls inflation; the paper's contrast is ~45 dims of core dim)",
        measures.contrast("energy_rank"),
        {"WD − WD-off at the last shared epoch": [0.0, 1.0, 0.0]},
        gap="late:",
    ),
    Rule(
        OURS + "modes_contrast",
        "WD vs WD-off: rotational modes (OLS) of the WD arm exceed the WD-off arm's (epoch {e_end}, difference per model){at}",
        "→ 27 vs no mode proliferation",
        f"Fig. 2D; {CODE_MODES}",
        OBSERVED,
        (_every("WD − WD-off at the last shared epoch", ">=", 10),),
        "WD − WD-off ≥ {t0} bins in every model at the last epoch both arms reached (ours: over half the paper's ~18, 27 "
        "against the ~9 at the fork); partly: WD > WD-off in every model",
        measures.contrast("rotational_modes_ols"),
        {"WD − WD-off at the last shared epoch": [0.0, -1.0, 0.0]},
        partly=(_every("WD − WD-off at the last shared epoch", ">=", 1),),
        gap="late:modes_contrast",
    ),
    Rule(
        "inflation.redistribution",
        "with WD: the weight of the embedding and of the unembedding spreads over the "
        "harmonics (effective number of frequencies per model at epoch {e_end}, of ⌊p/2⌋ = {half}; embedding, "
        "unembedding){at}",
        "all harmonics up to ⌊p/2⌋",
        "§ inflation (weight decay redistributes weight across the functionally equivalent harmonics)",
        OBSERVED,
        (
            Comparison("the smaller effective number of harmonics", ">=", REDIST_SHARE, times="⌊p/2⌋"),
            _every("the embedding's effective harmonics ÷ the WD-off arm's", ">=", REDIST_FACTOR),
            _every("the unembedding's effective harmonics ÷ the WD-off arm's", ">=", REDIST_FACTOR),
        ),
        "in every model at the last epoch both arms reached, for the embedding and for the unembedding: effective number "
        "of harmonics 1/Σ s_k² ≥ {d0} × ⌊p/2⌋ with weight decay and ≥ {t1}× the WD-off arm's (ours: the paper names "
        "neither a number nor the weights); partly: one of the two (held by: {held}; WD-off: embedding {off_emb}, "
        "unembedding {off_unemb})",
        measures.redistribution,
        {"the smaller effective number of harmonics": [1.0, 1.0, 1.0], "weights whose harmonics spread": 0},
        partly=(Comparison("weights whose harmonics spread", ">=", 1, over=ONE),),
        gap="late:redistribution",
        cause="the unembedding's power spreads over {unemb} effective harmonics, the "
        "embedding's over {emb}; the paper names neither weight",
        cause_class="as-stated",
    ),
    Rule(
        "inflation.sufficient_flat",
        "with WD: sufficient dim stays flat after grokking (max/min ≤ 1.5 per model)",
        "flat",
        "Fig. 2B",
        OBSERVED,
        (_every("max ÷ min of the sufficient dim after grokking", "<=", 1.5),),
        "max/min of the sufficient dim over the post-grokking checkpoints ≤ {t0} in every model (ours: the paper shows "
        "it flat, without a number)",
        measures.sufficient_flat,
        {"max ÷ min of the sufficient dim after grokking": [3.0, 3.0, 3.0]},
        gap="suff_flat",
        cause="{why}",
        cause_class="ours",
    ),
    Rule(
        OURS + "suff_grows_at_loose_tolerance",
        "with WD: the sufficient dim grows at a 1 % keep tolerance too (max/min per model)",
        "–",
        DIAGNOSIS,
        OBSERVED,
        (_every("max ÷ min of the sufficient dim at a 1 % keep tolerance", ">", 1.5),),
        "max/min > {t0} in every model with keep acc ≥ base − 0.01 instead of base − 1e-3: the growth is not the strict "
        "tolerance",
        measures.loose_tolerance,
        {"max ÷ min of the sufficient dim at a 1 % keep tolerance": [1.0, 1.0, 1.0]},
        explains="inflation.sufficient_flat",
        only_if_explained_fails=True,
    ),
    Rule(
        "inflation.redundancy",
        "with WD: necessary and sufficient dims separate: their gap grows after grokking (epoch {last}){at}",
        "the gap (redundancy) widens",
        "Fig. 2B",
        OBSERVED,
        (_every("growth of (necessary − sufficient dim) since grokking", ">=", MIN_GROWTH),),
        "gap growth ≥ {t0} dims in every model (ours: the paper gives no number)",
        measures.redundancy,
        {"growth of (necessary − sufficient dim) since grokking": [0.0, 1.0, 0.0]},
        gap="late:",
    ),
    Rule(
        "inflation.modes",
        "with WD: rotational modes (OLS) → 27 by epoch 20 000 (median of the last {points} to epoch {last}, of {top}){at}",
        "→ 27",
        f"Fig. 2D; {CODE_MODES}",
        OBSERVED,
        (Comparison("the models' smallest window quartiles of the OLS modes", ">=", -3, relative_to="⌊p/2⌋ + 1", over=INTERVAL),),
        "every model ≥ {t0} of {top} (our reading of 'approaches': within {d0} bins) over the last quarter of the run: "
        "its lower quartile ≥ {t0}; quartiles straddling it cannot tell (inconclusive); partly: every lower quartile ≥ "
        "{p0} (the bound this chapter used before)",
        measures.modes,
        {
            "the models' smallest window quartiles of the OLS modes": [5.0, 8.0],
            "the smallest lower quartile of the OLS modes": 5.0,
        },
        partly=(Comparison("the smallest lower quartile of the OLS modes", ">=", 20, over=ONE),),
        gap="late:modes_27",
        cause="{why}",
        cause_class="samples",
    ),
    Rule(
        OURS + "modes_fill_cap",
        "with WD: the modes fill the cap ⌊d/2⌋ + 1 of the core's dimension d (epoch {last}: modes, cap)",
        "–",
        DIAGNOSIS,
        OBSERVED,
        (_every("modes − cap", ">=", -2),),
        "modes − cap ≥ {t0} in every model: the count is limited by the core's dimension, not by the fit",
        measures.modes_cap,
        {"modes − cap": [-10.0, -10.0, -10.0]},
        explains="inflation.modes",
    ),
)
