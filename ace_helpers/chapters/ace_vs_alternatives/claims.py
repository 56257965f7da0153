"""Chapter 6's claims, from the results dict alone: the smallest necessary-and-sufficient rank of each method on each task, and the rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ace_helpers.chapters.ace_vs_alternatives import llm as llm_part
from ace_helpers.chapters.toy_models.markov_jobs import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import ClaimRow, Claims, KnownGaps
from ace_helpers.repro.tables import markdown_table
from ace_helpers.repro.verdicts import BOOTSTRAP_METHOD

METHODS = ("ace", "pca", "jacobian", "probe", "class_means", "random", "das")
TASKS = ("planted", "markov", "modadd")
KEEP_TOL, REMOVE_TOL = 0.01, 0.05
#: The prefix of our claim ids in this chapter.
ID = "ours.ace_vs_alternatives."
#: Projector overlap with the ground truth that counts as "the ground truth" (ours).
GT_MIN = 0.9
#: The mod-add overlap's margin where a run stores no interval for it: about half the spread measured between
#: trainings of the same setting on different CPUs (0.870 for chapter 2's stored demo model, 0.89 on an AMD EPYC,
#: 0.909 on an Intel Xeon); the stored book results hold no samples to bootstrap (one model, one overlap).
MODADD_GT_MARGIN = 0.02
MARGIN_METHOD = (f"± {MODADD_GT_MARGIN:g}, the measured spread of this overlap between trainings of the setting on "
                 "different CPUs (no bootstrap stored with this run)")


# -------------------- claims ------------------------------------------------------------------
WHERE = "ours (beyond the paper)"
PAPER = "not tested (the paper argues that activity or relevance alone misses the core, Sec. 2; it compares no other method)"
NS_RULE = (f"minimal N&S rank: smallest r with keep ≥ base − {KEEP_TOL} and remove ≤ chance + {REMOVE_TOL} (ours); "
           "a method that never gets there counts as ∞")


#: Measured at the book preset's own run (the numbers are appended from the run itself).
_PLANTED_GAP = ("the linear probe is necessary and sufficient one rank below ACE: the argmax answers of the planted "
                "readout need only 2 of the core's 3 dimensions, and the probe, trained on those answers, finds 2 that carry them")
KNOWN_GAPS = KnownGaps({
    "ci": {"planted_ns": _PLANTED_GAP},
    "book": {"planted_ns": _PLANTED_GAP,
             "modadd_ns": "CPU-sensitive: the two kinds of CPU train different mod-add models. On an AMD EPYC "
                          "(AVX-512) PCA, the class means and DAS were necessary and sufficient one rank below ACE (11 "
                          "against 12), and PCA's rank-11 subspace overlapped the ground truth 0.82 against ACE's 0.90 "
                          "(the smaller basis was not the model's algorithm); on an Intel Xeon with AMX (measured "
                          "2026-12-05) ACE is necessary and sufficient at 11, every other method at 12 or never",
             "markov_ns": "a learned (DAS) basis is necessary and sufficient one rank below ACE: the argmax answers of the "
                          "4-state chain need only 2 dimensions, while ACE's rank-3 core is the whole belief state",
             # measured on an AMD EPYC (AVX512, no AMX): its fp32 sums train another model than the Intel machine's,
             # whose rank-16 overlap was 0.909
             "modadd_smaller_basis": "ACE's own rank-16 overlap with the ground truth is 0.884, inside its interval "
                                     "[0.86, 0.91] around 0.9 (the ground-truth row: inconclusive), so this diagnosis "
                                     "cannot hold either; the mod-add model retrained under the fused optimiser steps "
                                     "(2026-12-07) is another sample than the earlier ones, as the N&S row says",
             "llm_one_dim": "removing the 1-D core at r = 1 inverts agreement (accuracy 0.26–0.34, the sign of the margin "
                            "against the subject's number) instead of destroying it; chapter 5 shows why: on prompts "
                            "without an opposite-number attractor removal leaves agreement (AUC 0.88–0.96)",
             "llm_scale_invariance": "our four models span 13× in parameters but 1.7× in depth (18 to 30 layers); the "
                                     "paper's GPT-2 Small → Large spans 3× in depth",
             "modadd_ground_truth": "the 90 %-power rule admits two weak key frequencies beside the six the model uses "
                                    "(amplitudes in the class means about a tenth of the strongest's): ACE's rank-16 "
                                    "subspace holds the strong ones and falls short on the weak ones (diagnosis row)"},
})


WEAK_FREQ_RULE = ("ACE's subspace at the ground-truth rank holds the plane of every strong key frequency (amplitude in "
                  "the class means ≥ ½ of the largest) at ≥ 0.95, and the weak ones less: the overlap falls short on "
                  "frequencies the 90 %-power rule admits but the model barely uses (ours)")


def _weak_frequency_diagnosis(s: dict[str, Any], g: int) -> tuple[str, str, str, bool]:
    """(claim, paper, ours, passed) of the diagnosis row for a mod-add ground-truth overlap not shown ≥ 0.9."""
    amp, share = np.array(s["key_amp"]), np.array(s["key_share"])
    strong = amp >= 0.5 * amp.max()
    ours = f"per key frequency k, amplitude ÷ the largest and share inside ACE's rank-{g} subspace: " + "; ".join(
        f"k={k}: {a / amp.max():.2f}, {sh:.3f}" for k, a, sh in zip(s["key_freqs"], amp, share))
    passed = bool((~strong).any() and share[strong].min() >= 0.95 and share[~strong].min() < share[strong].min())
    return (f"modadd (diagnosis): ACE's rank-{g} subspace holds the strong key frequencies; the overlap falls short on the "
            "weak ones", "—", ours, passed)


def _inf(r: int | None) -> float:
    return float("inf") if r is None else float(r)


def ground_truth_interval(task: str, s: dict[str, Any], ov: float | None) -> tuple[list[float] | None, str]:
    """(interval, method) of ACE's ground-truth overlap ``ov``: the run's bootstrap where it stores one
    (``gt_overlap_interval``, ``gt_overlap_method``), else for mod-add ``ov`` ± :data:`MODADD_GT_MARGIN`, else none."""
    if ov is None:
        return None, ""
    if s.get("gt_overlap_interval") is not None:
        return [float(v) for v in s["gt_overlap_interval"]], s.get("gt_overlap_method", "")
    if task == "modadd":
        return [ov - MODADD_GT_MARGIN, ov + MODADD_GT_MARGIN], MARGIN_METHOD
    return None, ""


def ns_table_rows(res: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    """{task: {method: minimal N&S rank}} for the tasks that ran."""
    return {t: res[t]["ns_rank"] for t in TASKS if res.get(t) is not None}


def build_claims(res: dict[str, Any], cfg: Params) -> Claims:
    """The chapter's claims (ours), from the results alone, with those not tested (MODADD off, an LLM absent) inside."""
    claims = Claims()
    for task in TASKS:
        s = res.get(task)
        if s is None:
            continue
        ns = s["ns_rank"]
        others = {m: ns[m] for m in METHODS if m != "ace"}
        best = min(_inf(v) for v in others.values())
        wins = ns["ace"] is not None and ns["ace"] <= best
        gap = KNOWN_GAPS.reason(cfg, f"{task}_ns")
        if gap is not None:
            first = min(others, key=lambda m: _inf(others[m]))
            i = s["ranks"].index(int(best)) if best in s["ranks"] else None
            gap += ("" if i is None else f" (measured: {first} at rank {int(best)} keeps {s['keep'][first][i]:.3f} and "
                    f"removed leaves {s['remove'][first][i]:.3f}; base {s['base_acc']:.3f}, chance {s['chance_acc']:.3f})")
        claims.check(f"{task}: ACE reaches N&S at the smallest rank of all methods", PAPER, [ns["ace"], others], wins,
                     gap, where=WHERE, rule=NS_RULE, id=f"{ID}{task}_ns_smallest_rank", value=[_inf(ns["ace"]), best],
                     short="ACE's minimal N&S rank ≤ every other method's (value: [ACE, best other]; none: never)")
        if not wins and best < float("inf") and int(best) in s["ranks"] and s["gt_rank"] in s["ranks"]:
            first = min(others, key=lambda m: _inf(others[m]))
            won = s["overlap"][first][s["ranks"].index(int(best))]
            ace_g = s["overlap"]["ace"][s["ranks"].index(s["gt_rank"])]
            ceiling = float(np.sqrt(int(best) / s["gt_rank"]))
            claims.check(f"{task} (diagnosis): the smaller N&S basis ({first}, rank {int(best)}) is not the ground truth; "
                         f"ACE's rank-{s['gt_rank']} subspace is", "—", [won, ace_g], won < GT_MIN <= ace_g,
                         KNOWN_GAPS.reason(cfg, f"{task}_smaller_basis"), where="ours (diagnosis)", rule=f"overlap with the ground truth: < {GT_MIN:g} for the smaller basis, "
                         f"≥ {GT_MIN:g} for ACE at the ground-truth rank; the answers (an argmax) need fewer dimensions than "
                         f"the ground-truth subspace (ours). A rank-{int(best)} basis reaches at most √({int(best)}/"
                         f"{s['gt_rank']}) = {ceiling:.3f} against a rank-{s['gt_rank']} truth, so "
                         + ("the first part holds by rank alone here and the row's test is ACE's part" if ceiling < GT_MIN
                            else "both parts can fail here"),
                         id=f"{ID}{task}_smaller_basis_not_truth",
                         short=f"smaller N&S basis < {GT_MIN:g} overlap (rank ceiling {ceiling:.2f}), ACE at the truth's rank ≥ {GT_MIN:g}")
        g = s["gt_rank"]
        ov = s["overlap"]["ace"][s["ranks"].index(g)] if g in s["ranks"] else None
        interval, method = ground_truth_interval(task, s, ov)
        rand = s["overlap"]["random"][s["ranks"].index(g)] if g in s["ranks"] else None
        is_truth = claims.check(
            f"{task}: ACE's rank-{g} subspace is the ground truth", PAPER,
            "not swept" if ov is None else f"{ov:.4g}" + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")
            + ("" if rand is None else f" (a random rank-{g} subspace: {rand:.3f})"),
            ov is not None and ov >= GT_MIN, KNOWN_GAPS.reason(cfg, f"{task}_ground_truth"), where=WHERE,
            rule=f"projector overlap with the ground-truth subspace at its rank ≥ {GT_MIN:g} (ours); inconclusive when "
                 "the overlap's interval straddles it (where the run has one: a bootstrap over the test pairs, or for "
                 f"mod-add without one, ± {MODADD_GT_MARGIN:g}, the spread measured between trainings on different CPUs)",
            id=f"{ID}{task}_ground_truth", value=ov, interval=interval, threshold=GT_MIN if ov is not None else None,
            op=">=" if ov is not None else None, method=method or BOOTSTRAP_METHOD,
            short=f"overlap of ACE's rank-g subspace with the ground truth ≥ {GT_MIN:g} (interval not straddling)")
        if not is_truth and s.get("key_share"):
            claims.check(*_weak_frequency_diagnosis(s, g), where="ours (diagnosis)", rule=WEAK_FREQ_RULE,
                         id=f"{ID}{task}_weak_frequencies", value=s["key_share"],
                         short="ACE's rank-g subspace holds every strong key frequency ≥ 0.95 and the weak ones less")
    pl = res["planted"]
    r = cfg["R_CORE"]
    fails = {m: [pl["overlap"][m][r - 1], pl["ns_rank"][m]] for m in ("pca", "jacobian")}
    claims.check("planted: PCA and the Jacobian Gram fail on the distractors", PAPER, fails,
                 all(v[0] <= 0.1 and _inf(v[1]) > r for v in fails.values()), where=WHERE,
                 rule=f"overlap with the planted core at rank {r} ≤ 0.1 and no N&S at rank {r} (ours)",
                 id=ID + "planted_distractors", value=[fails["pca"][0], fails["jacobian"][0]],
                 short=f"PCA and Jacobian: overlap with the planted core ≤ 0.1 and not N&S at rank {r}")
    not_tested = [] if res.get("modadd") is not None else [
        ClaimRow(f"modadd: {c}", PAPER, "—", "MODADD is off at this preset (training the model takes minutes)", where=WHERE,
                 rule=rule, id=ID + name)
        for c, rule, name in (("ACE reaches N&S at the smallest rank of all methods", NS_RULE, "modadd_ns_smallest_rank"),
                              ("ACE's subspace is the ground truth", f"overlap ≥ {GT_MIN:g} (ours)", "modadd_ground_truth"))]
    models = list(dict.fromkeys([*cfg["LLM_MODELS"], *llm_part.LAYER]))
    not_tested += llm_part.add_claims(claims, res.get("llm"), models, ClaimRow, lambda key: KNOWN_GAPS.reason(cfg, key))
    claims.not_tested = not_tested
    return claims


def ns_markdown(res: dict[str, Any]) -> str:
    """Markdown: the minimal N&S rank per method (rows) and task (columns), and each method's wall time."""
    tasks = [t for t in TASKS if res.get(t) is not None]
    extra, extra_cells, extra_truth = llm_part.ns_columns(res.get("llm"))
    head = ["method", *(c for t in tasks for c in (f"{t}: N&S rank", f"{t}: s")), *extra]
    rows = []
    for m in METHODS:
        cells = [m]
        for t in tasks:
            v = res[t]["ns_rank"][m]
            cells += ["never" if v is None else str(v), f"{res[t]['seconds'][m]:.2f}"]
        rows.append(cells + extra_cells[m])
    truth = [c for t in tasks for c in (str(res[t]["gt_rank"]), "")] + extra_truth
    rows.append(["*ground-truth rank*", *truth])
    return markdown_table(head, rows)
