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
    MERGING_PAPER,
    MERGING_WHERE,
    TOLERANCE,
    WHERE,
    _works,
)
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import NOT_REPRODUCED
from ace_helpers.repro.rules import INTERVAL, ONE, Combine, Comparison, Measured, NotTested, Rule, Spec

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


CCA_RULE = ("every pair of models: the mean of all min(r_A, r_B) canonical correlations of the cores' coordinates on "
            "the same test inputs (the layer and token the chapter stitches) > the 95th percentile of random subspace pairs "
            "of the same ranks, and ≥ that of the models' top-r PCA subspaces − {d1} (the CCA is specific to the cores at "
            "least as far as the most active directions); the top-r class-mean (oracle) subspaces are shown beside it; with "
            "one pair whose PCA part holds, inconclusive when the 90 % interval of the cores' mean CCA (normal bootstrap "
            "over the test inputs) straddles the random 95th percentile; partly: above random only (ours; the paper states "
            "invariance without a rule)")
_ABOVE, _PCA = "each pair's core mean CCA − the random 95th percentile", "each pair's core mean CCA − PCA's"
OBSERVED = "ours: the Markov seed pairs (chapter 1's task) and the two grokked mod-add models (p = 31), on the same inputs"


def _pairs(invariance: list[dict[str, Any]]) -> dict[str, list[float]]:
    return {_ABOVE: [inv["core"]["cca"] - inv["random"]["cca"]["q95"] for inv in invariance],
            _PCA: [inv["core"]["cca"] - inv["pca"]["cca"] for inv in invariance]}


def _markov_cca(res: dict[str, Any], cfg: Params) -> Measured | None:
    m = res["markov"]
    if "invariance" not in m:
        return None
    return Measured(_pairs(m["invariance"]), value=[inv["core"]["cca"] for inv in m["invariance"]],
                    ours="; ".join(f"seeds {i + 1}–{j + 1}: {_inv_text(inv)}" for (i, j), inv in
                                   ((v["pair"], v) for v in m["invariance"])))


def _markov_state(res: dict[str, Any], cfg: Params) -> Measured | None:
    m = res["markov"]
    if "invariance" not in m:
        return None
    return Measured({"each pair's core mean CCA − the class-mean oracle's": [inv["core"]["cca"] - inv["oracle"]["cca"]
                                                                           for inv in m["invariance"]]},
                    ours=[[inv["core"]["cca"], inv["oracle"]["cca"]] for inv in m["invariance"]])


def _judged(a: dict[str, Any]) -> bool:
    """One pair whose PCA part holds and whose cores' CCA has an interval: judged on that interval."""
    one = a["invariance"][0]
    return (len(a["invariance"]) == 1 and one["core"]["cca"] >= one["pca"]["cca"] - CCA_TOL
            and one["core"].get("interval") is not None)


def _modadd_cca(judged: bool):
    def measure(res: dict[str, Any], cfg: Params) -> Measured | NotTested | None:
        a = res.get("modadd")
        if a is None or "invariance" not in a:
            why = ("MODADD is off at this preset (training the two models takes minutes)" if a is None else
                   "this stored run predates the invariance comparison: re-execute the chapter")
            return NotTested(why) if not judged else None
        if _judged(a) != judged:
            return None
        sw = a["swap"]["core"]
        stitch = (f"; beside it, stitching through the core {'works' if _works(sw['crossed'], a['base_acc'][1]) else 'fails'}"
                  f" (B on another input: agreement {sw['crossed']['agree']:.3f}; same input {sw['same']['agree']:.3f}); "
                  f"key frequencies {a['key_freqs'][0]} vs {a['key_freqs'][1]}")
        one = a["invariance"][0]
        quantities = _pairs(a["invariance"])
        if judged:
            quantities |= {"the cores' mean CCA": list(one["core"]["interval"]), "the random 95th percentile": one["random"]["cca"]["q95"]}
        return Measured(quantities, value=[inv["core"]["cca"] for inv in a["invariance"]], method=CCA_INTERVAL,
                        ours="; ".join(_inv_text(inv) for inv in a["invariance"]) + stitch)

    measure.__qualname__ = measure.__name__ = f"modadd_cca[{'interval' if judged else 'pairs'}]"
    return measure


_CCA_PAIRS = (Comparison(_ABOVE, ">", 0), Comparison(_PCA, ">=", -CCA_TOL))
_CCA_WRONG = {_ABOVE: [-0.1, -0.1, -0.1], _PCA: [-0.2, -0.2, -0.2]}
INVARIANCE_SPECS: tuple[Rule, ...] = (
    Rule(ID + "markov_cca_beyond_baselines", "Markov: the seeds' cores' CCA (mean of all core coordinates) is above random "
         "subspaces' and not below PCA's", "CCA 0.999, 0.999, 0.929 between seeds (Fig. 1D)", WHERE, OBSERVED, _CCA_PAIRS,
         CCA_RULE, _markov_cca, _CCA_WRONG, partly=(Comparison(_ABOVE, ">", 0),), mixed=NOT_REPRODUCED, unit="seed pair",
         gap="markov_plain:cca_specific"),
    Rule(ID + "markov_cca_is_the_state", "Markov: the cores' CCA is the one-hot state's (the one-hot-state subspace matches "
         "it)", "—", DIAGNOSIS, OBSERVED, (Comparison("each pair's core mean CCA − the class-mean oracle's", "<=", CCA_TOL),),
         "every seed pair: the cores' mean CCA ≤ the class-mean oracle's + {t0} (the top n − 1 directions of the "
         "current-state means: coordinates linear in the one-hot state); a core aligned beyond what representing the state "
         "gives would fail it (ours)", _markov_state, {"each pair's core mean CCA − the class-mean oracle's": [0.2, 0.2, 0.2]},
         mixed=NOT_REPRODUCED, unit="seed pair"),
    Rule(CCA_INVARIANT, "mod-add: the cores of two grokked models are invariant (CCA above random subspaces' and not below "
         "PCA's)", INVARIANT_PAPER, WHERE, OBSERVED, _CCA_PAIRS, CCA_RULE, _modadd_cca(False), _CCA_WRONG,
         partly=(Comparison(_ABOVE, ">", 0),), mixed=NOT_REPRODUCED, unit="model pair", gap="plain:invariant"),
    Rule(CCA_INVARIANT, "mod-add: the cores of two grokked models are invariant (CCA above random subspaces' and not below "
         "PCA's)", INVARIANT_PAPER, WHERE, OBSERVED,
         (Comparison("the cores' mean CCA", ">", 0, relative_to="the random 95th percentile", over=INTERVAL), *_CCA_PAIRS[1:]),
         CCA_RULE, _modadd_cca(True),
         {"the cores' mean CCA": [0.1, 0.2], "the random 95th percentile": 0.4, _ABOVE: [-0.2], _PCA: [-0.3]},
         partly=(Comparison(_ABOVE, ">", 0),), unit="model pair", gap="plain:invariant"),
)


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


def _merges(res: dict[str, Any], cfg: Params) -> list[Measured] | None:
    out = []
    for task, label, unit in (("markov", "Markov", "seeds"), ("modadd", "mod-add", "models")):
        s = res.get(task)
        if s is None or "merging" not in s:
            continue
        for mg in s["merging"]:
            i, j = mg["pair"]
            fails, keeps = naive_fails(mg), aligned_keeps(mg)
            ends = mg["acc"]["weights"]
            out.append(Measured(
                {"naive midpoint accuracy": _at(mg, "weights", MIDPOINT), "the drop line": drop_line(mg),
                 "the aligned merge's lowest accuracy": min(mg["acc"]["core_aligned"]),
                 "the weaker endpoint's accuracy": min(ends[0], ends[-1]), "halves that hold": int(fails) + int(keeps)},
                ours=_merge_text(mg), value=[_at(mg, "weights", MIDPOINT), min(mg["acc"]["core_aligned"])],
                per_seed=[float(fails), float(keeps)], key=f"{task}_{i}_{j}",
                context={"what": f"{label} {unit} {i + 1} and {j + 1}", "gap": f"{'markov_plain' if task == 'markov' else 'plain'}:merge_{i}_{j}"}))
    return out or None


MERGE_RULE = (f"per pair, α ∈ {{{{0, 0.25, 0.5, 0.75, 1}}}}: naive weight interpolation (1 − α)·θ_A + α·θ_B loses at least "
              f"{DROP_SHARE:.0%} of the weaker endpoint's above-chance accuracy at α = 0.5, and the merge of aligned cores "
              f"(A run with its core coordinates set to (1 − α)·z_A + α·ẑ_B, ẑ_B = B's core coordinates through the "
              f"stitching map B → A fitted on training inputs) stays within {{d1}} of the weaker endpoint at every α; "
              "partly: one of the two (ours: the paper states no rule; the aligned merge merges representations at a "
              "hook, both models run, it is not a weight merge)")


def _merging_after(row: Any, parts: list[Any]) -> None:
    """The combined ``implication.merging`` row: where it fails, the failing pairs' known gaps (when every one has
    one) and its measured cause, how many pairs each half holds in."""
    failing = [p for p in parts if not (p.per_seed[0] and p.per_seed[1])]
    if failing and all(p.known_gap for p in failing):
        row.known_gap = "; ".join(f"{p.claim.split(':', 1)[0]}: " + ("naive interpolation only degrades" if p.per_seed[1]
                                  else "the aligned merge fails too" if p.per_seed[0] else "both") for p in failing)
    _merging_cause(row, [(bool(p.per_seed[0]), bool(p.per_seed[1])) for p in parts])


MERGING_SPECS: tuple[Spec, ...] = (
    Rule("implication.merging", "{what}: naive weight interpolation fails, the aligned-core merge keeps the accuracy",
         MERGING_PAPER, MERGING_WHERE, OBSERVED,
         (Comparison("naive midpoint accuracy", "<=", 0, relative_to="the drop line", over=ONE),
          Comparison("the aligned merge's lowest accuracy", ">=", -TOLERANCE, relative_to="the weaker endpoint's accuracy", over=ONE)),
         MERGE_RULE, _merges, {"naive midpoint accuracy": 1.0, "the aligned merge's lowest accuracy": 0.0, "halves that hold": 0},
         partly=(Comparison("halves that hold", ">=", 1, over=ONE),), mixed=NOT_REPRODUCED, gap="{gap}"),
    Combine("implication.merging", "naive weight interpolation fails and the aligned-core merge keeps the accuracy, in "
            "every merged pair", MERGING_PAPER, MERGING_WHERE, MERGE_RULE.replace("{d1}", f"{TOLERANCE}").replace("{{", "{").replace("}}", "}"),
            "every pair: naive midpoint fails, aligned-core merge keeps the accuracy", unit="pairs", min_parts=1,
            after=_merging_after),
)
SPECS: tuple[Spec, ...] = (*INVARIANCE_SPECS, *MERGING_SPECS)


