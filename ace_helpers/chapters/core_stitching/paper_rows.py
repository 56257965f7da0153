"""Chapter 7's rows for two paper claims, from the results dict alone: the cores' CCA between independently trained
mod-add models (our row ``ours.core_stitching.modadd_cca_invariant``; the paper's ``modadd.invariant`` is judged on
frequency-free invariants at the paper's settings in :mod:`ace_helpers.chapters.modadd_grokking.paper_epochs`) and
``implication.merging`` (naive weight interpolation fails; aligning cores is a route to merging).

**Invariance** (:func:`invariance_holds`): the mean of *all* min(r_A, r_B) canonical correlations of the two
cores' coordinates (a core is invariant only if every one of its coordinates is matched; the top three are met
by any subspace that holds a few answer directions) lies above the 95th percentile of random subspace pairs of
the same ranks and not below the top-r PCA subspaces' (by more than :data:`CCA_TOL`); partly: above random
only.  The class-mean oracle is shown beside it: when it matches the cores, the CCA says that both models
represent the label linearly, not that they share a core.

**Merging** (per pair, :func:`naive_fails` and :func:`aligned_keeps`): naive weight interpolation loses at least
half of the endpoints' above-chance accuracy at α = 0.5, and the merge of aligned core coordinates
(:mod:`ace_helpers.chapters.core_stitching.merging`) stays within :data:`TOLERANCE` of the weaker endpoint at
every α; partly: one of the two.  The headline combines the pairs ("k of N pairs").
"""

from __future__ import annotations

from typing import Any

from ace_helpers.chapters.core_stitching.rules import (
    DIAGNOSIS,
    KNOWN_GAPS,
    MARKOV_GAPS,
    MERGING_PAPER,
    MERGING_WHERE,
    TOLERANCE,
    WHERE,
    _works,
)
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import ClaimRow, Claims

#: How far below the PCA subspaces' mean CCA the cores' may lie and still count as "not below" (ours).
CCA_TOL = 0.01
#: Share of the endpoints' above-chance accuracy that naive interpolation must lose at α = 0.5 to count as failing.
DROP_SHARE = 0.5
MIDPOINT = 0.5
#: How the interval of the cores' mean CCA is computed (:func:`ace_helpers.method.specificity.bootstrap_cca`).
CCA_INTERVAL = ("normal bootstrap interval, 90 %: the cores' mean CCA ± z·sd of 200 resamples of the test inputs; centred "
                "on the measured value, since resampled rows repeat and raise every sample CCA")
INVARIANT_PAPER = "the cores of independently trained models are invariant (the title's claim, for modular addition)"
ID = "ours.core_stitching."
#: The CCA row's id: ours, since a mean over all canonical correlations tests shared key frequencies, not the same
#: algorithm (the paper's claim is judged on frequency-free invariants in chapter 2).
CCA_INVARIANT = ID + "modadd_cca_invariant"


# -------------------- the rules, on one pair's results ---------------------------------------------------
def invariance_holds(inv: dict[str, Any]) -> tuple[bool, bool]:
    """(holds, partly) for one pair's :func:`ace_helpers.method.specificity.specificity_table`: the cores' mean CCA
    > the random pairs' 95th percentile and ≥ PCA's − :data:`CCA_TOL` (partly: the first only)."""
    core = inv["core"]["cca"]
    above_random = core > inv["random"]["cca"]["q95"]
    return above_random and core >= inv["pca"]["cca"] - CCA_TOL, above_random


def drop_line(merge: dict[str, Any]) -> float:
    """The accuracy at or below which the naive midpoint counts as failed:
    chance + (1 − DROP_SHARE)·(weaker endpoint − chance)."""
    acc, chance = merge["acc"]["weights"], merge["chance"]
    return chance + (1.0 - DROP_SHARE) * (min(acc[0], acc[-1]) - chance)


def _at(merge: dict[str, Any], path: str, alpha: float) -> float:
    alphas = list(merge["alphas"])
    if alpha not in alphas:
        raise ValueError(f"the merge path has no α = {alpha}: its α are {alphas}")
    return float(merge["acc"][path][alphas.index(alpha)])


def naive_fails(merge: dict[str, Any]) -> bool:
    """Naive weight interpolation at α = 0.5 is at or below :func:`drop_line`."""
    return _at(merge, "weights", MIDPOINT) <= drop_line(merge)


def aligned_keeps(merge: dict[str, Any], path: str = "core_aligned") -> bool:
    """The ``path`` merge stays within :data:`TOLERANCE` of the weaker endpoint model at every α."""
    ends = merge["acc"]["weights"]
    return min(merge["acc"][path]) >= min(ends[0], ends[-1]) - TOLERANCE


# -------------------- rows -------------------------------------------------------------------------------
def _inv_text(inv: dict[str, Any]) -> str:
    rnd, ov = inv["random"], inv["random"]["overlap"]
    overlap = "" if inv["core"]["overlap"] is None else (
        f"; projector overlap: cores {inv['core']['overlap']:.3f}, PCA {inv['pca']['overlap']:.3f}, random mean "
        f"{ov['mean']:.3f}")
    rho = ", ".join(f"{x:.2f}" for x in inv["core"]["rho"])
    ci = inv["core"].get("interval")
    boot = "" if ci is None else f" (90 % interval {ci[0]:.3f}–{ci[1]:.3f})"
    return (f"mean CCA over k = {inv['k']}: cores {inv['core']['cca']:.3f}{boot}, canonical correlations {rho}; random "
            f"subspaces mean {rnd['cca']['mean']:.3f}, 95th percentile {rnd['cca']['q95']:.3f} ({rnd['draws']} pairs); "
            f"top-r PCA {inv['pca']['cca']:.3f}; class-mean oracle {inv['oracle']['cca']:.3f}" + overlap)


def invariance_rows(claims: Claims, res: dict[str, Any], cfg: Params) -> list[ClaimRow]:
    """The cores' CCA rule on the mod-add pairs and on the Markov seed pairs (both ours); the mod-add row as not
    tested when mod-add did not run (returned)."""
    rule = (f"every pair of models: the mean of all min(r_A, r_B) canonical correlations of the cores' coordinates on "
            f"the same test inputs (the layer and token the chapter stitches) > the 95th percentile of random subspace "
            f"pairs of the same ranks, and ≥ that of the models' top-r PCA subspaces − {CCA_TOL} (the CCA is specific "
            "to the cores at least as far as the most active directions); the top-r class-mean (oracle) subspaces are "
            "shown beside it; with one pair whose PCA part holds, inconclusive when the 90 % interval of the cores' "
            "mean CCA (normal bootstrap over the test inputs) straddles the random 95th percentile; partly: above "
            "random only (ours; the paper states invariance without a rule)")
    m = res["markov"]
    if "invariance" in m:
        held = [invariance_holds(inv) for inv in m["invariance"]]
        claims.check("Markov: the seeds' cores' CCA (mean of all core coordinates) is above random subspaces' and not "
                     "below PCA's", "CCA 0.999, 0.999, 0.929 between seeds (Fig. 1D)",
                     "; ".join(f"seeds {i + 1}–{j + 1}: {_inv_text(inv)}" for (i, j), inv in
                               ((v["pair"], v) for v in m["invariance"])),
                     all(h for h, _ in held), MARKOV_GAPS.reason(cfg, "cca_specific"), where=WHERE, rule=rule,
                     partly=all(p for _, p in held), id=ID + "markov_cca_beyond_baselines",
                     value=[inv["core"]["cca"] for inv in m["invariance"]],
                     short="every seed pair: core mean CCA > random 95th percentile and ≥ PCA's − 0.01")
        claims.check("Markov: the cores' CCA is the one-hot state's (the one-hot-state subspace matches it)", "—",
                     [[inv["core"]["cca"], inv["oracle"]["cca"]] for inv in m["invariance"]],
                     all(inv["core"]["cca"] <= inv["oracle"]["cca"] + CCA_TOL for inv in m["invariance"]),
                     where=DIAGNOSIS, rule=f"every seed pair: the cores' mean CCA ≤ the class-mean oracle's + {CCA_TOL} "
                     "(the top n − 1 directions of the current-state means: coordinates linear in the one-hot state); "
                     "a core aligned beyond what representing the state gives would fail it (ours)",
                     id=ID + "markov_cca_is_the_state", short="every seed pair: core CCA ≤ one-hot-state oracle's + 0.01")
    a = res.get("modadd")
    if a is None or "invariance" not in a:
        why = ("MODADD is off at this preset (training the two models takes minutes)" if a is None else
               "this stored run predates the invariance comparison: re-execute the chapter")
        return [ClaimRow("mod-add: the cores of two grokked models are invariant", INVARIANT_PAPER, "—", why,
                         where=WHERE, rule=rule, id=CCA_INVARIANT)]
    held = [invariance_holds(inv) for inv in a["invariance"]]
    one = a["invariance"][0]
    pca_ok = one["core"]["cca"] >= one["pca"]["cca"] - CCA_TOL
    # one pair whose PCA part holds: the random part is judged on the bootstrap interval of the cores' mean CCA
    judged = len(a["invariance"]) == 1 and pca_ok and one["core"].get("interval") is not None
    sw = a["swap"]["core"]
    stitch = (f"; beside it, stitching through the core {'works' if _works(sw['crossed'], a['base_acc'][1]) else 'fails'}"
              f" (B on another input: agreement {sw['crossed']['agree']:.3f}; same input {sw['same']['agree']:.3f}); "
              f"key frequencies {a['key_freqs'][0]} vs {a['key_freqs'][1]}")
    claims.check("mod-add: the cores of two grokked models are invariant (CCA above random subspaces' and not below PCA's)",
                 INVARIANT_PAPER, "; ".join(_inv_text(inv) for inv in a["invariance"]) + stitch,
                 all(h for h, _ in held), KNOWN_GAPS.reason(cfg, "invariant"), where=WHERE, rule=rule,
                 partly=all(p for _, p in held), id=CCA_INVARIANT, value=[inv["core"]["cca"] for inv in a["invariance"]],
                 interval=one["core"]["interval"] if judged else None, method=CCA_INTERVAL,
                 threshold=one["random"]["cca"]["q95"] if judged else None, op=">" if judged else None,
                 short="every model pair: core mean CCA > random 95th percentile and ≥ PCA's − 0.01")
    return []


def midpoint_loss(mg: dict[str, Any]) -> float:
    """Share of the weaker endpoint's above-chance accuracy that naive weight interpolation loses at α = 0.5."""
    ends = min(mg["acc"]["weights"][0], mg["acc"]["weights"][-1])
    return (ends - _at(mg, "weights", MIDPOINT)) / max(ends - mg["chance"], 1e-12)


def _merge_text(mg: dict[str, Any]) -> str:
    acc = mg["acc"]
    return (f"endpoints {acc['weights'][0]:.3f}, {acc['weights'][-1]:.3f} (chance {mg['chance']:.3f}); naive midpoint "
            f"{_at(mg, 'weights', MIDPOINT):.3f} (loses {midpoint_loss(mg):.0%}; fails at ≤ {drop_line(mg):.3f}); "
            f"aligned cores, lowest along the path {min(acc['core_aligned']):.3f}")


def _merging_cause(row: Any, outcomes: list[tuple[bool, bool]]) -> None:
    """The measured cause of a combined ``implication.merging`` row that does not hold: in how many pairs each half holds."""
    if row.passed or not outcomes:
        return
    n = len(outcomes)
    row.cause = (f"naive interpolation fails in {sum(f for f, _ in outcomes)} of {n} pairs; the aligned-core merge keeps "
                 f"the accuracy in {sum(k for _, k in outcomes)} of {n}")
    row.cause_class = "as-stated"


def merging_rows(claims: Claims, res: dict[str, Any], cfg: Params) -> None:
    """One row per merged pair (Markov seed pairs, the mod-add pair), then the ``implication.merging`` headline
    combining them ("k of N pairs")."""
    rule = (f"per pair, α ∈ {{0, 0.25, 0.5, 0.75, 1}}: naive weight interpolation (1 − α)·θ_A + α·θ_B loses at least "
            f"{DROP_SHARE:.0%} of the weaker endpoint's above-chance accuracy at α = 0.5, and the merge of aligned cores "
            f"(A run with its core coordinates set to (1 − α)·z_A + α·ẑ_B, ẑ_B = B's core coordinates through the "
            f"stitching map B → A fitted on training inputs) stays within {TOLERANCE} of the weaker endpoint at every α; "
            "partly: one of the two (ours: the paper states no rule; the aligned merge merges representations at a "
            "hook, both models run, it is not a weight merge)")
    tasks = [("Markov", res["markov"], MARKOV_GAPS, "seeds"), ("mod-add", res.get("modadd"), KNOWN_GAPS, "models")]
    known: list[str | None] = []  # per failing pair: what failed, when its failure is a known gap
    outcomes: list[tuple[bool, bool]] = []  # per pair: (naive interpolation fails, aligned merge keeps)
    for label, s, gaps, unit in tasks:
        if s is None or "merging" not in s:
            continue
        for mg in s["merging"]:
            i, j = mg["pair"]
            fails, keeps = naive_fails(mg), aligned_keeps(mg)
            outcomes.append((fails, keeps))
            gap = gaps.reason(cfg, f"merge_{i}_{j}")
            if not (fails and keeps):
                what = "naive interpolation only degrades" if keeps else "the aligned merge fails too" if fails else "both"
                known.append(None if gap is None else f"{label} {unit} {i + 1}, {j + 1}: {what}")
            claims.check(f"{label} {unit} {i + 1} and {j + 1}: naive weight interpolation fails, the aligned-core merge "
                         "keeps the accuracy", MERGING_PAPER, _merge_text(mg), fails and keeps,
                         gap, where=MERGING_WHERE, rule=rule, partly=fails or keeps,
                         id="implication.merging", value=[_at(mg, "weights", MIDPOINT), min(mg["acc"]["core_aligned"])],
                         short="naive midpoint loses ≥ half the above-chance accuracy; aligned-core merge within "
                               f"{TOLERANCE} of the endpoints at every α")
    if any(r.id == "implication.merging" and r.headline for r in claims.rows):
        claims.combine("implication.merging", "naive weight interpolation fails and the aligned-core merge keeps the "
                       "accuracy, in every merged pair", MERGING_PAPER, where=MERGING_WHERE, unit="pairs", rule=rule,
                       short="every pair: naive midpoint fails, aligned-core merge keeps the accuracy",
                       known_gap="; ".join(known) if known and all(known) else None)  # type: ignore[arg-type]
        _merging_cause(claims.rows[-1], outcomes)
