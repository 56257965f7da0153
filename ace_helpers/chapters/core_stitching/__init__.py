"""Chapter 7 (notebooks/07_core_stitching): stitching independently trained models through their ACE cores.

Ours, beyond the paper.  The paper calls the cores of independently trained models *invariant*
(Markov seeds: CCA of the core coordinates ≈ 1, Fig. 1D) but never runs one model on another's
core.  Here two models A and B of the same task are stitched (:mod:`ace_helpers.method.stitching`): B
runs with the coordinates of a subspace of its activation replaced by A's coordinates on the same
input, carried over by a linear map fitted on training inputs; the rest of B's activation is kept.

Two regimes on held-out inputs:

* ``same``: A and B see the same input x (the literal stitching test);
* ``crossed``: A sees x, B sees another input x' (a derangement of the test rows).  B's answer
  now follows x only as far as the swapped coordinates carry x's computation: this is the test
  that tells a working stitch from a harmless one (a swap that misses B's core leaves B intact
  on the same input).

Conditions: ``core`` (ACE cores of rank r, least-squares map), ``random`` (random subspaces of the
same rank in both models, least-squares map), ``unmapped`` (ACE cores, A's coordinates used as
they are), ``full`` (the whole activation through a full-rank least-squares map).  Scores:
accuracy against x's targets and agreement with B's own clean predictions on x.  Tasks: the
Markov chain (three seeds; the held-out pair is stitched by composing the maps of the two fitted
pairs) and modular addition after grokking (two models).

``results.json`` keys: ``markov`` and ``modadd``, each with ``base_acc`` (per model), ``core_ranks``,
``floor`` (crossed inputs, no swap: acc / agree), ``swap`` {condition: {regime: {acc, agree}}},
``map_r2`` {condition: held-out R² of the fitted map}, ``ranks`` and ``sweep`` {condition:
{acc, agree}} (crossed, per rank), ``wall_s``; ``markov`` also ``transfer`` and ``direct``
(held-out pair: composed maps / maps fitted on it), ``bayes_acc``; ``modadd`` also ``grok_step``,
``key_freqs`` (per model), ``freq_jaccard``; top level ``wall_s``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ace_helpers.chapters.modadd.claims import ClaimRow, not_tested_table  # noqa: F401 - for the notebook
from ace_helpers.chapters.modadd.grokked import GROK_ACC, train_modadd
from ace_helpers.chapters.toy_models import markov
from ace_helpers.chapters.toy_models.knobs import MEMORY_LIMIT, PRESETS, check, memory_estimate  # noqa: F401
from ace_helpers.chapters.toy_models.markov import hooked_task  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.toy_models.views import FREQ_POWER, View, key_frequencies, markov_view, modadd_view
from ace_helpers.method.stitching import (  # fmt: skip
    Chart,
    LinearMap,
    core_chart,
    crossed_order,
    fit_linear_map,
    full_chart,
    identity_map,
    map_r2,
    random_chart,
    ranks_up_to,
    scores,
    stitched_predictions,
)
from ace_helpers.repro.params import ChapterParams, Params
from ace_helpers.repro.report import Claims, KnownGaps
from ace_helpers.toys.tasks.markov import bayes_accuracy, markov_dataset
from ace_helpers.toys.tasks.modadd import modadd_dataset

NOTEBOOK = "07_core_stitching"
CONDITIONS = ("core", "random", "unmapped", "full")
REGIMES = ("same", "crossed")
#: Accuracy a working stitch may lose against B's own (ours): 0.01.
TOLERANCE = 0.01
#: Agreement with B's clean predictions that counts as a working stitch (ours).
AGREE_MIN = 0.99


#: The chapter's knobs.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)


# -------------------- one task: models seen at a hook ---------------------------------------


@dataclass
class Task:
    """Held-out data of one task and where the stitch acts."""

    hook: str
    positions: int | None  # None: every position (Markov); -1: the last token (mod-add)
    inputs: torch.Tensor  # (N, T) long test inputs
    targets: torch.Tensor  # (N, T) long
    order: np.ndarray  # (N,) the crossed inputs x' = inputs[order]
    views: list[View]


def charts(task: Task, a: int, b: int, condition: str, rank: int, seed: int) -> tuple[Chart, Chart]:
    """The two models' charts for ``condition`` at ``rank`` (random: seeded by ``seed`` and the model index)."""
    va, vb = task.views[a], task.views[b]
    if condition in ("core", "unmapped"):
        return core_chart(va.core, rank), core_chart(vb.core, rank)
    if condition == "random":
        return (random_chart(va.core.dim, rank, va.core.mean, seed + a),
                random_chart(vb.core.dim, rank, vb.core.mean, seed + b))
    if condition == "full":
        return full_chart(va.core.mean), full_chart(vb.core.mean)
    raise ValueError(f"condition={condition!r} is not allowed: condition must be one of {list(CONDITIONS)}")


def fitted_map(task: Task, a: int, b: int, ca: Chart, cb: Chart, condition: str, ridge: float) -> LinearMap:
    """The map from A's to B's chart coordinates: fitted on training inputs (identity when ``unmapped``)."""
    if condition == "unmapped":
        return identity_map(ca.rank)
    return fit_linear_map(ca.coords(task.views[a].h_train), cb.coords(task.views[b].h_train), ridge=ridge)


def swap_scores(task: Task, a: int, b: int, ca: Chart, cb: Chart, fmap: LinearMap,
                regimes: tuple[str, ...] = REGIMES) -> dict[str, dict[str, float]]:  # fmt: skip
    """{regime: {acc, agree}}: B with its ``cb`` coordinates set to ``fmap`` of A's ``ca`` coordinates on x."""
    z = fmap(ca.coords(task.views[a].h_test))
    vb = task.views[b]
    out = {}
    for regime in regimes:
        x = task.inputs if regime == "same" else task.inputs[torch.as_tensor(task.order)]
        preds = stitched_predictions(vb.wrapped, x, task.hook, cb, z, positions=task.positions)
        acc, agree = scores(preds, task.targets, vb.clean, task.positions)
        out[regime] = {"acc": acc, "agree": agree}
    return out


def floor_scores(task: Task, b: int) -> dict[str, float]:
    """B on the crossed inputs without any swap, scored against x: what a swap that carries nothing gives."""
    vb = task.views[b]
    preds = stitched_predictions(vb.wrapped, task.inputs[torch.as_tensor(task.order)], task.hook, full_chart(vb.core.mean), None)
    acc, agree = scores(preds, task.targets, vb.clean, task.positions)
    return {"acc": acc, "agree": agree}


def pair_results(task: Task, a: int, b: int, cfg: Params, r_max: int, seed: int) -> dict[str, Any]:
    """Every condition at B's core rank (both regimes), the map R², and the crossed rank sweep."""
    r_core = task.views[b].core.rank
    out: dict[str, Any] = {"swap": {}, "map_r2": {}, "floor": floor_scores(task, b)}
    for condition in CONDITIONS:
        ca, cb = charts(task, a, b, condition, r_core, seed)
        fmap = fitted_map(task, a, b, ca, cb, condition, cfg["RIDGE"])
        out["swap"][condition] = swap_scores(task, a, b, ca, cb, fmap)
        out["map_r2"][condition] = map_r2(fmap, ca.coords(task.views[a].h_test).reshape(-1, ca.rank),
                                          cb.coords(task.views[b].h_test).reshape(-1, cb.rank))
    ranks = ranks_up_to(min(r_max, task.views[b].core.dim), task.views[b].core.dim, extra=[r_core])
    out["ranks"] = ranks
    out["sweep"] = {c: {"acc": [], "agree": []} for c in ("core", "random", "unmapped")}
    for r in ranks:
        for condition in out["sweep"]:
            ca, cb = charts(task, a, b, condition, r, seed + 100 * r)
            s = swap_scores(task, a, b, ca, cb, fitted_map(task, a, b, ca, cb, condition, cfg["RIDGE"]), ("crossed",))
            out["sweep"][condition]["acc"].append(s["crossed"]["acc"])
            out["sweep"][condition]["agree"].append(s["crossed"]["agree"])
    return out


# -------------------- Markov ----------------------------------------------------------------


def run_markov(cfg: Params) -> dict[str, Any]:
    """Three Markov seeds: stitch 0 → 1 (all conditions, rank sweep), and the held-out pair 0 → 2 via 0 → 1 → 2."""
    start = time.perf_counter()
    data = markov_dataset(cfg["T"], cfg["N_TRAIN"], cfg["N_TEST"], cfg["SEQ_LEN"], train_seed=cfg["DATA_SEED"],
                          test_seed=cfg["TEST_DATA_SEED"])
    seeds = markov.model_seeds(cfg["SEED"], 3)
    trained = markov.train_models(data, seeds, d_model=cfg["D_MODEL"], epochs=cfg["EPOCHS"],
                                        batch_size=cfg["BATCH_SIZE"], lr=cfg["LR"], precision=cfg["PRECISION"])
    views = [markov_view(m, data, cfg["ENERGY"]) for m in trained.models]
    task = Task("layers.0", None, data.test_inputs, data.test_targets, crossed_order(cfg["N_TEST"], cfg["SEED"]), views)
    out = pair_results(task, 0, 1, cfg, cfg["R_MAX"], cfg["SEED"])
    # held-out pair 0 -> 2: compose the maps fitted on 0 -> 1 and 1 -> 2 (nothing fitted on 0, 2)
    out["transfer"], out["direct"] = {}, {}
    for condition in ("core", "random", "full"):
        r = views[2].core.rank
        c0, c1 = charts(task, 0, 1, condition, r, cfg["SEED"])
        _, c2 = charts(task, 1, 2, condition, r, cfg["SEED"])
        composed = fitted_map(task, 0, 1, c0, c1, condition, cfg["RIDGE"]).then(fitted_map(task, 1, 2, c1, c2, condition, cfg["RIDGE"]))
        out["transfer"][condition] = swap_scores(task, 0, 2, c0, c2, composed)
        out["direct"][condition] = swap_scores(task, 0, 2, c0, c2, fitted_map(task, 0, 2, c0, c2, condition, cfg["RIDGE"]))
    out["floor_heldout"] = floor_scores(task, 2)
    out.update(seeds=seeds, core_ranks=[v.core.rank for v in views], n_states=data.n_states,
               base_acc=[float((v.clean == data.test_targets).double().mean()) for v in views],
               bayes_acc=bayes_accuracy(data.T), train_s=trained.seconds, wall_s=time.perf_counter() - start)
    return out


# -------------------- modular addition ------------------------------------------------------


def run_modadd(cfg: Params) -> dict[str, Any]:
    """Two grokked mod-add models: stitch 0 → 1 at the last token of layer 2 (all conditions, rank sweep)."""
    start = time.perf_counter()
    data = modadd_dataset(cfg["P"], cfg["TRAIN_FRACTION"], seed=42)
    models, grok = train_modadd(cfg, data)
    views = [modadd_view(m, data, cfg["MODADD_ENERGY"]) for m in models]
    task = Task("layers.1", -1, data.test_inputs, data.test_targets, crossed_order(data.test_inputs.shape[0], cfg["SEED"]), views)
    out = pair_results(task, 0, 1, cfg, cfg["MODADD_R_MAX"], cfg["SEED"])
    freqs = [key_frequencies(v.core, m.lm_head.weight.detach().double().numpy()) for v, m in zip(views, models)]
    union = set(freqs[0]) | set(freqs[1])
    out.update(p=data.p, grok_step=grok, core_ranks=[v.core.rank for v in views], key_freqs=freqs,
               freq_jaccard=len(set(freqs[0]) & set(freqs[1])) / len(union),
               base_acc=[float((v.clean[:, -1] == data.test_answers).double().mean()) for v in views],
               wall_s=time.perf_counter() - start)
    return out


def run(cfg: Params) -> dict[str, Any]:
    """The whole chapter: the Markov stitching, then the mod-add stitching."""
    start = time.perf_counter()
    res = {"markov": run_markov(cfg), "modadd": run_modadd(cfg) if cfg["MODADD"] else None}
    res["wall_s"] = time.perf_counter() - start
    return res


# -------------------- claims (from the results dict only, so a stored results.json checks the same)
WHERE, DIAGNOSIS = "ours (beyond the paper)", "ours (diagnosis)"
PAPER = "not tested (the paper compares the seeds' cores by CCA, Fig. 1D; it never swaps them)"
MODADD_KNOBS = ("P", "TRAIN_FRACTION", "MODADD_LR", "MODADD_SEED", "MODADD_ENERGY", "MODADD_MAX_STEPS",
                "MODADD_EXTRA_STEPS", "RIDGE", "SEED", "MODADD")
#: Measured at the book preset's own run (p = 31, seeds 1031 and 2031; the numbers are appended
#: from the run itself): the two grokked models use different key frequencies.
KNOWN_GAPS = KnownGaps({"book": {
    "modadd_core": "the two models' cores use different key frequencies, and a linear map cannot carry "
                   "cos(k·c) onto cos(k′·c) for k ≠ k′",
    "modadd_full": "the whole activations are not linear images of each other either: the models compute "
                   "with different key frequencies",
}}, run_knobs=MODADD_KNOBS)
MARKOV_KNOBS = ("T", "D_MODEL", "SEQ_LEN", "ENERGY", "BATCH_SIZE", "SEED", "DATA_SEED", "TEST_DATA_SEED", "R_MAX",
                "RIDGE", "N_TRAIN", "N_TEST", "EPOCHS", "LR")
_FULL_TRANSFERS = ("composed full-rank maps of the whole activation transfer too: seed 2's activation is close to a "
                   "linear image of seed 0's, so the core is the smallest route that transfers (an r × r map per pair "
                   "instead of D × D), not the only one")
#: Measured at the ci and book presets' own Markov runs (the numbers are appended from the run itself).
MARKOV_GAPS = KnownGaps({"ci": {"only_core": _FULL_TRANSFERS}, "book": {"only_core": _FULL_TRANSFERS}},
                        run_knobs=MARKOV_KNOBS)


def halfway(floor: float) -> float:
    """The failure line of a swap: agreement halfway between the no-swap floor and 1."""
    return (floor + 1.0) / 2.0


def first_working_rank(section: dict[str, Any], base: float) -> int | None:
    """Smallest swept rank whose crossed core swap keeps ``base`` within TOLERANCE and reaches AGREE_MIN."""
    sweep = section["sweep"]["core"]
    for r, acc, agree in zip(section["ranks"], sweep["acc"], sweep["agree"]):
        if acc >= base - TOLERANCE and agree >= AGREE_MIN:
            return int(r)
    return None


def _works(s: dict[str, float], base: float) -> bool:
    return s["acc"] >= base - TOLERANCE and s["agree"] >= AGREE_MIN


def _pair(s: dict[str, float]) -> list[float]:
    return [s["acc"], s["agree"]]


WORKS_RULE = f"accuracy ≥ B's own − {TOLERANCE} and agreement with B's own predictions ≥ {AGREE_MIN} (ours)"
FAILS_RULE = "agreement with B's predictions on A's input ≤ halfway between the no-swap floor and 1 (ours)"


def markov_claims(claims: Claims, m: dict[str, Any], cfg: Params) -> None:
    """Claims on the Markov seeds (pair 0 → 1, held-out pair 0 → 2)."""
    base, sw, fl = m["base_acc"][1], m["swap"], m["floor"]["agree"]
    line = halfway(fl)
    r_core = m["core_ranks"][1]
    claims.check("Markov: the core-mapped swap carries A's computation into B (B on another input)", PAPER,
                 _pair(sw["core"]["crossed"]), _works(sw["core"]["crossed"], base), where=WHERE, rule=WORKS_RULE)
    claims.check("Markov: the core-mapped swap keeps B's accuracy (same input)", PAPER, _pair(sw["core"]["same"]),
                 _works(sw["core"]["same"], base), where=WHERE, rule=WORKS_RULE)
    claims.check("Markov: a random subspace of the same rank does not carry it", PAPER, _pair(sw["random"]["crossed"]),
                 sw["random"]["crossed"]["agree"] <= line, where=WHERE, rule=FAILS_RULE + f"; floor {fl:.3f}")
    unm = [sw["unmapped"][g]["agree"] for g in REGIMES]
    claims.check("Markov: the unmapped swap (A's raw core coordinates) fails", PAPER, unm, max(unm) <= line,
                 where=WHERE, rule=FAILS_RULE + ", on the same and on another input")
    claims.check("Markov: a full-rank map of the whole activation stitches too (control)", PAPER,
                 _pair(sw["full"]["crossed"]), _works(sw["full"]["crossed"], base), where=WHERE, rule=WORKS_RULE)
    first = first_working_rank(m, base)
    claims.check("Markov: the core swap starts to work exactly at the core rank", f"{PAPER}; core rank n − 1",
                 [first, r_core], first == r_core, where=WHERE,
                 rule="smallest swept rank whose crossed core swap works (rule above) = B's ACE rank (ours)")
    tr, lineh = m["transfer"], halfway(m["floor_heldout"]["agree"])
    claims.check("Markov: composed core maps stitch the held-out seed pair 0 → 2", PAPER, _pair(tr["core"]["crossed"]),
                 _works(tr["core"]["crossed"], m["base_acc"][2]), where=WHERE,
                 rule=WORKS_RULE + "; maps fitted on pairs 0 → 1 and 1 → 2 only")
    claims.check("Markov: composed random-subspace maps do not", PAPER, _pair(tr["random"]["crossed"]),
                 tr["random"]["crossed"]["agree"] <= lineh, where=WHERE, rule=FAILS_RULE)
    core_ok = _works(tr["core"]["crossed"], m["base_acc"][2]) and tr["random"]["crossed"]["agree"] <= lineh
    full_fails = tr["full"]["crossed"]["agree"] <= lineh
    why = MARKOV_GAPS.reason(cfg, "only_core")
    measured = f"composed full-rank agreement {tr['full']['crossed']['agree']:.4f}, core {tr['core']['crossed']['agree']:.4f}"
    claims.check("Markov: the map transfers to the held-out pair only through the core ([core, full-rank] accuracy, "
                 "agreement)", PAPER,
                 [_pair(tr["core"]["crossed"]), _pair(tr["full"]["crossed"])], core_ok and full_fails,
                 known_gap=None if why is None else f"{why} ({measured})", where=WHERE,
                 rule="composed core maps stitch (rule above) while composed random-subspace maps and composed full-rank "
                      "maps of the whole activation both fail (agreement ≤ halfway to 1); partly: the core and the "
                      "full-rank maps both transfer, random ones do not (ours)",
                 partly=core_ok and not full_fails)
    claims.check("Markov: on the same input the random swap leaves B intact (why the crossed test is needed)",
                 "—", sw["random"]["same"]["agree"], sw["random"]["same"]["agree"] >= 0.95, where=DIAGNOSIS,
                 rule="agreement ≥ 0.95: a random rank-r subspace misses B's core (ours)")


def modadd_claims(claims: Claims, a: dict[str, Any], cfg: Params) -> None:
    """Claims on the two grokked mod-add models (pair 0 → 1)."""
    base, sw, line = a["base_acc"][1], a["swap"], halfway(a["floor"]["agree"])
    measured = (f"measured: key frequencies {a['key_freqs'][0]} vs {a['key_freqs'][1]} (Jaccard "
                f"{a['freq_jaccard']:.2f}), held-out map R² {a['map_r2']['core']:.2f}")
    gap = lambda key: (None if (why := KNOWN_GAPS.reason(cfg, key)) is None else f"{why} ({measured})")  # noqa: E731
    grokked = [g is not None for g in a["grok_step"]]
    claims.check("mod-add: both models grokked", "test accuracy ≥ 0.99", [a["grok_step"], a["base_acc"]], all(grokked),
                 where=WHERE, rule=f"test accuracy ≥ {GROK_ACC} within MODADD_MAX_STEPS (ours)")
    claims.check("mod-add: the core-mapped swap carries A's computation into B (B on another input)", PAPER,
                 _pair(sw["core"]["crossed"]), _works(sw["core"]["crossed"], base), gap("modadd_core"),
                 where=WHERE, rule=WORKS_RULE)
    claims.check("mod-add: the core-mapped swap keeps B's accuracy (same input)", PAPER, _pair(sw["core"]["same"]),
                 _works(sw["core"]["same"], base), gap("modadd_core"), where=WHERE, rule=WORKS_RULE)
    claims.check("mod-add: a random subspace of the same rank does not carry it", PAPER, _pair(sw["random"]["crossed"]),
                 sw["random"]["crossed"]["agree"] <= line, where=WHERE, rule=FAILS_RULE)
    unm = [sw["unmapped"][g]["agree"] for g in REGIMES]
    claims.check("mod-add: the unmapped swap fails", PAPER, unm, max(unm) <= line, where=WHERE,
                 rule=FAILS_RULE + ", on the same and on another input")
    claims.check("mod-add: a full-rank map of the whole activation stitches (control)", PAPER,
                 _pair(sw["full"]["crossed"]), _works(sw["full"]["crossed"], base), gap("modadd_full"),
                 where=WHERE, rule=WORKS_RULE)
    claims.check("mod-add: the two cores use different key frequencies", "—", [a["key_freqs"], a["freq_jaccard"]],
                 a["freq_jaccard"] < 1.0, where=DIAGNOSIS,
                 rule=f"Jaccard index of the frequency sets holding {FREQ_POWER:.0%} of the Fourier power of W_U·Q < 1 (ours)")


MODADD_NOT_TESTED = ("mod-add: the core-mapped swap carries A's computation into B", "mod-add: a random subspace "
                     "of the same rank does not carry it", "mod-add: the unmapped swap fails")


def build_claims(res: dict[str, Any], cfg: Params) -> Claims:
    """The chapter's claims (ours), from the results dict alone, and those not tested (MODADD off)."""
    claims = Claims()
    markov_claims(claims, res["markov"], cfg)
    not_tested: list[ClaimRow] = []
    if res["modadd"] is not None:
        modadd_claims(claims, res["modadd"], cfg)
    else:
        not_tested = [ClaimRow(c, PAPER, "—", "MODADD is off at this preset (training the two models takes minutes)",
                               where=WHERE, rule=WORKS_RULE if "carries" in c else FAILS_RULE) for c in MODADD_NOT_TESTED]
    claims.not_tested = not_tested
    return claims


# -------------------- prose from the numbers (glued into the chapter) -----------------------
def _verb(ok: bool) -> str:
    return "works" if ok else "fails"


def finding_text(res: dict[str, Any]) -> str:
    """Markdown paragraphs stating what the swaps did, worded from the results (both tasks)."""
    m = res["markov"]
    sw, base, r_core = m["swap"], m["base_acc"][1], m["core_ranks"][1]
    first = first_working_rank(m, base)
    core_ok = _works(sw["core"]["crossed"], base)
    text = (f"**Markov chain.** Stitching through the core {_verb(core_ok)}: with B on another input, the stitched B "
            f"agrees with its own predictions on A's input for {sw['core']['crossed']['agree']:.1%} of the tokens "
            f"(accuracy {sw['core']['crossed']['acc']:.3f}; B's own {base:.3f}). A random subspace of rank {r_core} "
            f"gives {sw['random']['crossed']['agree']:.1%}, no more than B on the other input without any swap "
            f"({m['floor']['agree']:.1%}), and A's unmapped core coordinates give {sw['unmapped']['crossed']['agree']:.1%}. "
            f"The whole activation through a full-rank map {_verb(_works(sw['full']['crossed'], base))} too "
            f"({sw['full']['crossed']['agree']:.1%}), with a D × D map instead of a {r_core} × {r_core} one. On the same "
            f"input the random swap leaves B intact ({sw['random']['same']['agree']:.1%} agreement): it misses B's core, "
            f"which is why the test with another input is the one that counts. The core swap first works at rank "
            f"{first} (B's ACE rank: {r_core}).")
    a = res.get("modadd")
    if a is None:
        return text + "\n\n**Modular addition** is not run at this preset (`MODADD` is off)."
    sa, ba = a["swap"], a["base_acc"][1]
    ok = _works(sa["core"]["crossed"], ba)
    text += (f"\n\n**Modular addition.** Stitching through the core {_verb(ok)}: with B on another input, the stitched "
             f"B agrees with its own predictions on A's input for {sa['core']['crossed']['agree']:.1%} of the test pairs "
             f"({sa['core']['same']['agree']:.1%} on the same input; B's own accuracy {ba:.3f}), and the held-out R² of "
             f"the core map is {a['map_r2']['core']:.2f}. The two models use the key frequencies {a['key_freqs'][0]} and "
             f"{a['key_freqs'][1]} (Jaccard index {a['freq_jaccard']:.2f}; the frequencies holding {FREQ_POWER:.0%} of the "
             f"Fourier power of the core's image W_U·Q). ")
    if not ok:
        text += ("A linear map cannot carry cos(k·c) onto cos(k′·c) for k ≠ k′, and indeed the whole activation through "
                 f"a full-rank map fails as well ({sa['full']['crossed']['agree']:.1%}). Both models compute a + b by "
                 "rotations (chapter 2), but with different frequencies: their cores are the same *kind* of algorithm, "
                 "not the same computation up to a linear change of coordinates. That is the finding on this task.")
    return text


def transfer_text(m: dict[str, Any]) -> str:
    """Markdown sentence on the held-out pair (composed maps), worded from the results."""
    tr, di, base = m["transfer"], m["direct"], m["base_acc"][2]
    return (f"The composed core map {_verb(_works(tr['core']['crossed'], base))} on the held-out pair: "
            f"{tr['core']['crossed']['agree']:.1%} agreement with B on another input ({di['core']['crossed']['agree']:.1%} "
            f"with a map fitted on that pair), against {tr['random']['crossed']['agree']:.1%} for composed random-subspace "
            f"maps. Composed full-rank maps of the whole activation give {tr['full']['crossed']['agree']:.1%}"
            + (": on this task the core is not the only route that transfers, but it is by far the smallest one (an "
               "r × r map per pair instead of D × D)." if _works(tr["full"]["crossed"], base) else
               ": only the core transfers."))
