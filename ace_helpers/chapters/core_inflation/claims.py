"""Chapter 3's claims: inflation under weight decay, none without it, the contrasts between the
arms, sufficient against necessary dimension (Fig. 2A, 2B, 2D), with the diagnosis rows of the
gaps measured at the book and paper presets (:data:`KNOWN_GAPS`), on one run
(:func:`build_claims`) or on the stored long run (:func:`long_run_claims`).  Each row names the paper
claim it tests (``inflation.*``) or is one of ours (``ours.core_inflation.*``; a diagnosis names the
paper claim it explains); a rule that every model must meet is judged k of N models (models that
disagree: inconclusive)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ace_helpers.chapters.core_inflation.fork import effective_harmonics, has_spectra
from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult, GrokRun, grok_epoch, per_model_at
from ace_helpers.chapters.core_inflation.readings import add_causes, judge_window, window_mask, window_states
from ace_helpers.chapters.modadd.reference import mode_cap
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import ClaimRow, Claims, KnownGaps, seed_sensitive

_WD_OFF_GAP = ("without weight decay, removing the energy-rank directions leaves accuracy above the 2/p floor (the "
               "residue table in the chapter), so the necessity scan runs tens of dimensions past the energy rank, "
               "which itself does not grow (the WD-off energy-rank row)")  # fmt: skip

#: Claims measured *not* to reproduce with a preset's exact run (seeds and N_MODELS included),
#: and why; shown as "not reproduced" or "partly" with the cause, they do not fail the notebook.
#: Evidence: the book run stored in ``book/artifacts/modadd_grokking`` and the paper run (2 of
#: its 3 models); every mechanism named here is checked by a row of its own.
KNOWN_GAPS = KnownGaps(
    gaps={
        "ci": {"suff_flat": seed_sensitive(2, 5, "max/min of the sufficient dim after grokking 1.25, 1.667, 3.25, 2, "
                                           "1.25 against 1.5")},
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
            "growth_45": "the growth follows the final sizes: the cores that stop below 48 (the plateau row) grew "
            "less than ~45",
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

#: Largest ratio of the WD-off arm's core dim (or OLS modes) to the value at grokking that this
#: chapter reads as "no inflation" ("no proliferation"): ours, the paper gives no number.
NOWD_FACTOR = 1.5

#: "Weight decay redistributes weight across all harmonics": the embedding's effective number of
#: harmonics (:func:`~ace_helpers.chapters.core_inflation.fork.effective_harmonics`) under weight
#: decay reaches this share of ⌊p/2⌋, and this multiple of the WD-off arm's (ours; no number in the paper).
REDIST_SHARE, REDIST_FACTOR = 0.5, 1.5

#: Our own claims and diagnosis rows: ``ours.core_inflation.<name>``.
OURS = "ours.core_inflation."

#: Necessary-dim growth after grokking that this chapter calls inflation (and the smallest
#: WD vs WD-off contrast in dimensions): ours, a margin above the checkpoint-to-checkpoint
#: scatter of the necessary dim (a few dimensions) and a fraction of the paper's ~45.
MIN_GROWTH = 10


def sufficient_dims(arm: ArmResult, tolerance: float) -> np.ndarray:
    """(M, C) sufficient dim at another keep tolerance: smallest r ≥ 1 with keep acc ≥ base − ``tolerance``,
    read from the stored ``keep_curve`` (M, C, D + 1); D when no rank qualifies."""
    keep, base = np.asarray(arm["keep_curve"], float), np.asarray(arm["test_acc"], float)
    ok = keep[:, :, 1:] >= base[:, :, None] - tolerance
    return np.where(ok.any(axis=2), ok.argmax(axis=2) + 1, keep.shape[2] - 1)


def build_claims(run: GrokRun, cfg: Params, last_epoch: int | None = None) -> Claims:
    """Chapter 3 claims on one run (Fig. 2A, 2B, 2D): inflation with WD, none without, the WD vs
    WD-off contrasts, sufficient vs necessary dim, plus diagnosis rows for the gaps they explain.
    The claims the run cannot test are in ``not_tested``, the measured values used in ``numbers``.

    The inflation targets (core dim ~60, growth ~15 → ~60, modes → 27, the contrasts that need
    inflation) are stated for 20 000 epochs at p = 53.  ``last_epoch`` is where the run's
    checkpoints stop (default EPOCHS; less for the stored part of an unfinished run).  A run on
    the paper's task (:func:`~ace_helpers.chapters.modadd.config.paper_task`) that stops
    earlier is checked against them only where it already meets them (a target reached by its
    last epoch is reached "by epoch 20 000"); otherwise they are reported as *not tested* with
    its value.  Rotational modes are counted on the OLS fit on all class means
    (``rotational_modes_ols``), as the official code release fits them.
    """
    p = cfg["P"]
    wd, nowd = run.wd, run.nowd
    claims = Claims()
    not_tested = claims.not_tested
    grok = grok_epoch(wd.epochs, wd["test_acc"])
    last = int(wd.epochs[-1])
    horizon = int(cfg["EPOCHS"] if last_epoch is None else last_epoch)
    dim_last, modes_last = wd["core_dim"][:, -1], wd["rotational_modes_ols"][:, -1]
    top = p // 2 + 1
    nums = claims.numbers
    nums |= {"grok_epoch": grok, "core_dim_last": dim_last.tolist(), "modes_ols_last": modes_last.tolist(),
                            "nowd_core_dim_last": nowd["core_dim"][:, -1].tolist(),
                            "nowd_modes_ols_last": nowd["rotational_modes_ols"][:, -1].tolist()}  # fmt: skip
    paper_task = config.paper_task(cfg)
    full_run = paper_task and horizon >= 20000
    why = f"needs 20 000 epochs at p = 53 (this run: {horizon} at p = {p})"
    gap = lambda key: KNOWN_GAPS.reason(cfg, key)  # noqa: E731

    def late(text: str, paper: str, ours: Any, ok: bool, where: str, rule: str, partly: bool = False, key: str | None = None,
             **tags: Any) -> bool:  # fmt: skip
        """Check a claim stated for the paper's 20 000 epochs; returns whether it was checked.  On the paper's
        task a shorter run is checked too, at its last epoch: a target met there is met "by epoch 20 000",
        and a target missed there is reported against the claim, with the run's length as the cause (it
        measures the claim before its horizon).  ``tags``: the row's ``id`` and the other keywords of
        :meth:`Claims.check` (a row not tested keeps its ``id``)."""
        if full_run or paper_task:
            cause = None if ok or key is None else gap(key)
            if not ok and not full_run and cause is None:
                cause = f"training length: measured at epoch {horizon}, before the claim's horizon of 20 000 epochs"
            label = text if full_run else f"{text} [at epoch {horizon} of 20 000]"
            claims.check(label, paper, ours, ok, cause, where=where, rule=rule, partly=partly, **tags)
            return True
        not_tested.append(ClaimRow(text, paper, str(ours), why, where=where, rule=rule, id=tags["id"]))
        return False

    # --- Fig. 2A: the core inflates with weight decay --------------------------------------
    dim_states, dim_med = window_states(wd["core_dim"], wd.epochs, 48)
    n_win = int(window_mask(wd.epochs).sum())
    nums["core_dim_window_median"] = dim_med
    points = f"{n_win} checkpoint{'s' * (n_win != 1)}"
    checked = late(f"with WD: core dim ~60 by epoch 20 000 (every model; median of the last {points} to epoch {last})",
                   "~60", [round(v, 1) for v in dim_med], all(st == "hold" for st in dim_states),
                   "Fig. 2A; § core inflation",
                   f"every model ≥ 48 (the paper's ~60 read as within 20 %) over the last quarter of the run ({points}): "
                   "its lower quartile ≥ 48; a model whose quartiles straddle 48 cannot tell (inconclusive); partly: "
                   "every model's lower quartile ≥ 40 (two-thirds of it, the bound this chapter used before)",
                   all(st == "hold" for st in window_states(wd["core_dim"], wd.epochs, 40)[0]), "dim_60", id="inflation.grows",
                   per_seed=dim_med, short="every model: lower quartile of the core dim over the last quarter of the run "
                   "≥ 48; partly: ≥ 40")  # fmt: skip
    if checked:
        judge_window(claims, dim_states, wd, "core_dim", 48, "core dim")
    if checked and full_run and not (dim_last >= 48).all():  # the cause of a miss at 20 000 epochs (before: the length)
        half = int(wd.epochs[np.abs(wd.epochs - last / 2).argmin()])
        short = np.flatnonzero(dim_last < 48)
        change = (dim_last - per_model_at(wd, "core_dim", half))[short].tolist()
        claims.check(f"with WD: the cores below 48 have stopped growing (epoch {half} → {last}, change of models "
                     f"{short.tolist()})", "–", change, bool((np.abs(change) <= 5).all()), where="ours (diagnosis)",
                     id=OURS + "short_cores_stopped_growing", explains="inflation.grows", per_seed=np.abs(change).tolist(),
                     threshold=5, op="<=", short="every core ending below 48: |change over the second half| ≤ 5 dims",
                     rule="|change| ≤ 5 dims over the second half of the run in every model whose core ends below 48 "
                     "(reaching ~60 would need ≥ 15 more)")  # fmt: skip
    if grok is None or grok > cfg["FORK_EPOCH"]:
        claims.check("the run groks before the fork (needed for the WD-off comparison)", "grok 800 < fork 900", grok, False,
                     where="§ core inflation (setting)", rule="grok epoch (all models ≥ 0.99 test acc) ≤ FORK_EPOCH",
                     id=OURS + "groks_before_fork", short="grok epoch ≤ FORK_EPOCH")  # fmt: skip
        return claims
    g_dim = per_model_at(wd, "core_dim", grok)
    growth = wd["core_dim"][:, -1] - g_dim
    nums["core_dim_growth_since_grok"] = growth.tolist()
    late(f"with WD: the core grows from its size at grokking by ~45 dims (last − grok, epoch {last})", "~15 → ~60",
         growth.tolist(), bool((growth >= 36).all()), "Fig. 2A; § core inflation",
         f"growth ≥ 36 in every model (80 % of the paper's ~45); partly: ≥ {MIN_GROWTH} (the smallest growth this "
         "chapter calls inflation)", bool((growth >= MIN_GROWTH).all()), "growth_45", id=OURS + "growth_since_grok",
         per_seed=growth.tolist(), short=f"every model's core dim growth since grokking ≥ 36; partly: ≥ {MIN_GROWTH}")  # fmt: skip

    # --- Fig. 2A and 2D: no inflation, no mode proliferation without weight decay (one rule) ---
    shared = np.intersect1d(wd.epochs, nowd.epochs)
    e_end = int(shared[-1]) if shared.size else int(nowd.epochs[-1])
    for field, cid, fig, what in (("core_dim", "inflation.no_wd", "Fig. 2A", "core dim"),
                                  ("rotational_modes_ols", "inflation.no_wd_modes", "Fig. 2D", "OLS modes")):  # fmt: skip
        at_grok = np.maximum(per_model_at(wd, field, grok), 1)
        end = per_model_at(nowd, field, e_end) / at_grok
        peak = nowd[field].max(axis=1) / at_grok
        short = "dim" if field == "core_dim" else "modes"
        nums[f"nowd_{short}_ratio_to_grok_at_end"] = {"epoch": e_end, "ratio": end.tolist()}
        nums[f"nowd_{short}_max_ratio_to_grok"] = peak.tolist()
        late(f"WD-off arm: {what} at the last epoch both arms reached ≤ {NOWD_FACTOR}× the value at grokking (epoch "
             f"{e_end}, ratio per model)", "no inflation" if field == "core_dim" else "no mode proliferation",
             [round(float(r), 3) for r in end], bool((end <= NOWD_FACTOR).all()), f"{fig}; § core inflation",
             f"WD-off {what} / the WD arm's {what} at grokking ≤ {NOWD_FACTOR} in every model at the last epoch both "
             "arms reached (the paper compares the arms at epoch 20 000 and gives no number; the same rule for the "
             "core dim and the modes)", key="nowd_no_inflation" if field == "core_dim" else "nowd_no_modes", id=cid,
             per_seed=end.tolist(), threshold=NOWD_FACTOR, op="<=",
             short=f"every model: WD-off {what} at the last shared epoch ≤ {NOWD_FACTOR} × at grokking")  # fmt: skip
    er_ratio = (nowd["energy_rank"] / nowd["energy_rank"][:, :1]).max(axis=1)
    nums["nowd_energy_rank_max_ratio_to_fork"] = er_ratio.tolist()
    claims.check("WD-off arm: energy rank stays ≤ 1.5× its value at the fork (max ratio per model)", "no inflation",
                 [round(float(r), 3) for r in er_ratio], bool((er_ratio <= 1.5).all()),
                 where="Fig. 2A; on the 0.99-energy rank instead of the core dim: ours", id=OURS + "nowd_energy_rank_flat",
                 explains="inflation.no_wd", per_seed=er_ratio.tolist(), threshold=1.5, op="<=",
                 short="every model: WD-off energy rank ≤ 1.5 × its value at the fork at every checkpoint",
                 rule="max over the WD-off checkpoints of energy rank / its value at the fork ≤ 1.5 in every model; the "
                 "energy rank is ACE's energy rule alone, without the necessity scan of the paper's core dim")  # fmt: skip

    # --- WD vs WD-off contrasts at the last epoch both arms reached --------------------------
    if shared.size:
        d_er = (per_model_at(wd, "energy_rank", e_end) - per_model_at(nowd, "energy_rank", e_end)).tolist()
        d_m = (per_model_at(wd, "rotational_modes_ols", e_end) - per_model_at(nowd, "rotational_modes_ols", e_end)).tolist()
        nums["energy_rank_wd_minus_nowd"] = {"epoch": e_end, "diff": d_er}
        nums["modes_ols_wd_minus_nowd"] = {"epoch": e_end, "diff": d_m}
        late(f"WD vs WD-off: energy rank of the WD arm exceeds the WD-off arm's (epoch {e_end}, difference per model)",
             "~60 vs no inflation", d_er, bool((np.asarray(d_er) >= MIN_GROWTH).all()),
             "Fig. 2A, the WD vs WD-off contrast; on the 0.99-energy rank instead of the core dim: ours",
             f"WD − WD-off ≥ {MIN_GROWTH} dims in every model at the last epoch both arms reached (ours: the smallest "
             "growth this chapter calls inflation; the paper's contrast is ~45 dims of core dim)", id=OURS + "energy_rank_contrast",
             per_seed=d_er, threshold=MIN_GROWTH, op=">=", short=f"every model: WD − WD-off energy rank ≥ {MIN_GROWTH}")  # fmt: skip
        late(f"WD vs WD-off: rotational modes (OLS) of the WD arm exceed the WD-off arm's (epoch {e_end}, difference per model)",
             "→ 27 vs no mode proliferation", d_m, bool((np.asarray(d_m) >= 10).all()),
             "Fig. 2D; code release joshseth/cores, src/cores/modular_addition_analysis.py, sweep_mode_spread: OLS on all class means",
             "WD − WD-off ≥ 10 bins in every model at the last epoch both arms reached (ours: over half the paper's ~18, "
             "27 against the ~9 at the fork); partly: WD > WD-off in every model", bool((np.asarray(d_m) >= 1).all()),
             "modes_contrast", id=OURS + "modes_contrast", per_seed=d_m,
             short="every model: WD − WD-off OLS modes ≥ 10; partly: ≥ 1")  # fmt: skip

    # --- weight decay as redistribution: the harmonics that carry the embeddings' weight ------
    if shared.size and has_spectra(wd) and has_spectra(nowd):
        half = p // 2
        spread: dict[str, tuple[np.ndarray, np.ndarray, bool]] = {}
        for field, name in (("emb_spectrum", "embedding"), ("unemb_spectrum", "unembedding")):
            h_wd = effective_harmonics(wd[field][:, wd.index(e_end)])
            h_off = effective_harmonics(nowd[field][:, nowd.index(e_end)])
            spread[name] = (h_wd, h_off, bool(((h_wd >= REDIST_SHARE * half) & (h_wd >= REDIST_FACTOR * h_off)).all()))
            nums[f"effective_harmonics_{name}"] = {"epoch": e_end, "wd": h_wd.tolist(), "nowd": h_off.tolist(), "of": half}
        held = [name for name, (_, _, ok) in spread.items() if ok]
        late(f"with WD: the weight of the embedding and of the unembedding spreads over the harmonics (effective number "
             f"of frequencies per model at epoch {e_end}, of ⌊p/2⌋ = {half}; embedding, unembedding)",
             "all harmonics up to ⌊p/2⌋",
             [[round(float(h), 2) for h in spread[n][0]] for n in ("embedding", "unembedding")], len(held) == 2,
             "§ inflation (weight decay redistributes weight across the functionally equivalent harmonics)",
             f"in every model at the last epoch both arms reached, for the embedding and for the unembedding: effective "
             f"number of harmonics 1/Σ s_k² ≥ {REDIST_SHARE} × ⌊p/2⌋ with weight decay and ≥ {REDIST_FACTOR}× the WD-off "
             "arm's (ours: the paper names neither a number nor the weights); partly: one of the two (held by: "
             f"{', '.join(held) or 'neither'}; WD-off: embedding {np.round(spread['embedding'][1], 2).tolist()}, "
             f"unembedding {np.round(spread['unembedding'][1], 2).tolist()})", len(held) == 1, "redistribution",
             id="inflation.redistribution", per_seed=np.minimum(spread["embedding"][0], spread["unembedding"][0]).tolist(),
             threshold=REDIST_SHARE * half, op=">=",
             short=f"every model, embedding and unembedding: effective harmonics ≥ {REDIST_SHARE}·⌊p/2⌋ and ≥ "
             f"{REDIST_FACTOR}× WD-off's; partly: one of the two")  # fmt: skip

    # --- Fig. 2B: sufficient flat, necessary growing -----------------------------------------
    post = wd.epochs >= grok
    suff = wd["suff_dim"][:, post]
    spread = suff.max(axis=1) / np.maximum(suff.min(axis=1), 1)
    nums["suff_dim_post_grok_max_over_min"] = spread.tolist()
    flat = bool((spread <= 1.5).all())
    claims.check("with WD: sufficient dim stays flat after grokking (max/min ≤ 1.5 per model)", "flat",
                 [round(float(s), 3) for s in spread], flat, None if flat else gap("suff_flat"), where="Fig. 2B",
                 id="inflation.sufficient_flat", per_seed=spread.tolist(), threshold=1.5, op="<=",
                 short="every model: max/min of the sufficient dim after grokking ≤ 1.5",
                 rule="max/min of the sufficient dim over the post-grokking checkpoints ≤ 1.5 in every model (ours: the "
                 "paper shows it flat, without a number)")  # fmt: skip
    if not flat and full_run and "keep_curve" in wd.arrays:  # the cause of a miss at 20 000 epochs
        loose = sufficient_dims(wd, 0.01)[:, post]
        s_loose = loose.max(axis=1) / np.maximum(loose.min(axis=1), 1)
        claims.check("with WD: the sufficient dim grows at a 1 % keep tolerance too (max/min per model)", "–",
                     [round(float(s), 3) for s in s_loose], bool((s_loose > 1.5).all()), where="ours (diagnosis)",
                     id=OURS + "suff_grows_at_loose_tolerance", explains="inflation.sufficient_flat", per_seed=s_loose.tolist(),
                     threshold=1.5, op=">", short="every model: max/min of the sufficient dim at a 1 % keep tolerance > 1.5",
                     rule="max/min > 1.5 in every model with keep acc ≥ base − 0.01 instead of base − 1e-3: the growth "
                     "is not the strict tolerance")  # fmt: skip
    gap_growth = ((wd["core_dim"] - wd["suff_dim"])[:, -1] - (g_dim - per_model_at(wd, "suff_dim", grok))).tolist()
    nums["redundancy_gap_growth_since_grok"] = gap_growth
    late(f"with WD: necessary and sufficient dims separate: their gap grows after grokking (epoch {last})",
         "the gap (redundancy) widens", gap_growth, bool((np.asarray(gap_growth) >= MIN_GROWTH).all()), "Fig. 2B",
         f"gap growth ≥ {MIN_GROWTH} dims in every model (ours: the paper gives no number)", id="inflation.redundancy",
         per_seed=gap_growth, threshold=MIN_GROWTH, op=">=",
         short=f"every model: (necessary − sufficient dim) grows by ≥ {MIN_GROWTH} after grokking")  # fmt: skip

    # --- Fig. 2D: rotational modes (OLS, as the code release) --------------------------------
    mode_states, mode_med = window_states(wd["rotational_modes_ols"], wd.epochs, top - 3)
    nums["modes_ols_window_median"] = mode_med
    checked = late(f"with WD: rotational modes (OLS) → 27 by epoch 20 000 (median of the last {points} to "
                   f"epoch {last}, of {top})", "→ 27", [round(v, 1) for v in mode_med], all(st == "hold" for st in mode_states),
                   "Fig. 2D; code release joshseth/cores, src/cores/modular_addition_analysis.py, sweep_mode_spread: OLS on all class means",
                   f"every model ≥ {top - 3} of {top} (our reading of 'approaches': within 3 bins) over the last quarter of "
                   f"the run: its lower quartile ≥ {top - 3}; quartiles straddling it cannot tell (inconclusive); partly: "
                   "every lower quartile ≥ 20 (the bound this chapter used before)",
                   all(st == "hold" for st in window_states(wd["rotational_modes_ols"], wd.epochs, 20)[0]), "modes_27",
                   id="inflation.modes", per_seed=mode_med,
                   short=f"every model: lower quartile of the OLS modes over the last quarter of the run ≥ {top - 3}; partly: ≥ 20")  # fmt: skip
    if checked:
        judge_window(claims, mode_states, wd, "rotational_modes_ols", top - 3, "OLS mode count")
    if checked and full_run and not (modes_last >= top - 3).all():
        cap = np.asarray([mode_cap(int(d), p) for d in dim_last])
        claims.check(f"with WD: the modes fill the cap ⌊d/2⌋ + 1 of the core's dimension d (epoch {last}: modes, cap)", "–",
                     [[int(a), int(b)] for a, b in zip(modes_last, cap)], bool((modes_last >= cap - 2).all()),
                     where="ours (diagnosis)", id=OURS + "modes_fill_cap", explains="inflation.modes",
                     per_seed=(modes_last - cap).tolist(), threshold=-2, op=">=", short="every model: modes − cap ≥ −2",
                     rule="modes ≥ cap − 2 in every model: the count is limited by the "
                     "core's dimension, not by the fit")  # fmt: skip
    add_causes(claims)
    return claims


def long_run_claims(
    cfg: Params, long_cfg: Params, lrun: GrokRun, through: Mapping[str, int], comparison: tuple[bool, list[int], float]
) -> Claims:
    """:func:`build_claims` on the stored long run (up to its last stored WD-arm epoch), plus a
    row checking that it reproduces this chapter's run at their shared checkpoints (when it is this run continued)."""
    long_claims = build_claims(lrun, long_cfg, last_epoch=through["wd"])
    same, shared, diff = comparison
    if shared:
        long_claims.check(f"reproduces the {cfg['PRESET']} run at the shared checkpoints (epochs ≤ {shared[-1]}; "
                          "largest difference ≤ 1e-9)", "–", f"{diff:.1e}", same, where="ours (reproducibility)",
                          id=OURS + "long_run_reproduces_run", value=diff, threshold=1e-9, op="<=",
                          short="every shared per-checkpoint number within 1e-9",
                          rule="every stored per-checkpoint number of both arms within 1e-9 (training segments are "
                          "seeded by their position)")  # fmt: skip
    return long_claims
