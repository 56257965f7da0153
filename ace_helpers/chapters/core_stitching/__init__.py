"""Chapter 7 (notebooks/07_core_stitching): stitching independently trained models through their ACE cores.

Ours, beyond the paper.  The paper calls the cores of independently trained models *invariant*
(Markov seeds: CCA of the core coordinates ≈ 1, Fig. 1D) but never runs one model on another's
core.  Here two models A and B of the same setting are stitched (:mod:`ace_helpers.method.stitching`): B
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
``key_freqs`` (per model), ``freq_jaccard``, ``p``; both also ``invariance`` (per model pair: the cores' mean CCA
and projector overlap beside random, PCA and class-mean subspaces, :mod:`.invariance`) and ``merging`` (per merged
pair: accuracy along α of naive weight interpolation and of merges at the hook, :mod:`.merging`); top level ``wall_s``.

The paper's claims ``modadd.invariant`` and ``implication.merging`` are judged in :mod:`.paper_rows`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ace_helpers.chapters.core_stitching.claims import (  # noqa: F401 - the chapter's claims
    AGREE_MIN,
    FAILS_RULE,
    KNOWN_GAPS,
    MARKOV_GAPS,
    MARKOV_KNOBS,
    MODADD_KNOBS,
    MODADD_NOT_TESTED,
    PAPER,
    REGIMES,
    TOLERANCE,
    WORKS_RULE,
    _works,
    build_claims,
    first_working_rank,
    halfway,
    jaccard_baseline,
)
from ace_helpers.chapters.core_stitching.invariance import invariance_pairs
from ace_helpers.chapters.core_stitching.merging import merge_paths
from ace_helpers.chapters.modadd.grokked import train_modadd
from ace_helpers.chapters.markov_run import run as markov
from ace_helpers.chapters.toy_views.knobs import MEMORY_LIMIT, PRESETS, check, memory_estimate  # noqa: F401
from ace_helpers.chapters.markov_run.jobs import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.toy_views.views import FREQ_POWER, View, key_frequencies, markov_view, modadd_view
from ace_helpers.method.devices import resolve_device
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
from ace_helpers.repro.untested import ClaimRow, not_tested_table  # noqa: F401 - for the notebook
from ace_helpers.toys.tasks.markov import bayes_accuracy, chance_accuracy, markov_dataset
from ace_helpers.toys.tasks.modadd import modadd_dataset

NOTEBOOK = "07_core_stitching"
CONDITIONS = ("core", "random", "unmapped", "full")
#: The Markov seed pairs that are merged (into the first of each pair).
MARKOV_PAIRS = ((0, 1), (0, 2), (1, 2))


#: The chapter's knobs.
PARAMS = ChapterParams(NOTEBOOK, PRESETS, check)


# -------------------- one setting: models seen at a hook ---------------------------------------


@dataclass
class StitchSetting:
    """Held-out data of one setting and where the stitch acts."""

    hook: str
    positions: int | None  # None: every position (Markov); -1: the last token (mod-add)
    inputs: torch.Tensor  # (N, T) long test inputs
    targets: torch.Tensor  # (N, T) long
    order: np.ndarray  # (N,) the crossed inputs x' = inputs[order]
    views: list[View]


def charts(setting: StitchSetting, a: int, b: int, condition: str, rank: int, seed: int) -> tuple[Chart, Chart]:
    """The two models' charts for ``condition`` at ``rank`` (random: seeded by ``seed`` and the model index)."""
    va, vb = setting.views[a], setting.views[b]
    if condition in ("core", "unmapped"):
        return core_chart(va.core, rank), core_chart(vb.core, rank)
    if condition == "random":
        return (random_chart(va.core.dim, rank, va.core.mean, seed + a),
                random_chart(vb.core.dim, rank, vb.core.mean, seed + b))
    if condition == "full":
        return full_chart(va.core.mean), full_chart(vb.core.mean)
    raise ValueError(f"condition={condition!r} is not allowed: condition must be one of {list(CONDITIONS)}")


def fitted_map(setting: StitchSetting, a: int, b: int, ca: Chart, cb: Chart, condition: str, ridge: float) -> LinearMap:
    """The map from A's to B's chart coordinates: fitted on training inputs (identity when ``unmapped``)."""
    if condition == "unmapped":
        return identity_map(ca.rank)
    return fit_linear_map(ca.coords(setting.views[a].h_train), cb.coords(setting.views[b].h_train), ridge=ridge)


def swap_scores(setting: StitchSetting, a: int, b: int, ca: Chart, cb: Chart, fmap: LinearMap,
                regimes: tuple[str, ...] = REGIMES) -> dict[str, dict[str, float]]:  # fmt: skip
    """{regime: {acc, agree}}: B with its ``cb`` coordinates set to ``fmap`` of A's ``ca`` coordinates on x."""
    z = fmap(ca.coords(setting.views[a].h_test))
    vb = setting.views[b]
    out = {}
    for regime in regimes:
        x = setting.inputs if regime == "same" else setting.inputs[torch.as_tensor(setting.order)]
        preds = stitched_predictions(vb.wrapped, x, setting.hook, cb, z, positions=setting.positions)
        acc, agree = scores(preds, setting.targets, vb.clean, setting.positions)
        out[regime] = {"acc": acc, "agree": agree}
    return out


def floor_scores(setting: StitchSetting, b: int) -> dict[str, float]:
    """B on the crossed inputs without any swap, scored against x: what a swap that carries nothing gives."""
    vb = setting.views[b]
    preds = stitched_predictions(vb.wrapped, setting.inputs[torch.as_tensor(setting.order)], setting.hook, full_chart(vb.core.mean), None)
    acc, agree = scores(preds, setting.targets, vb.clean, setting.positions)
    return {"acc": acc, "agree": agree}


def pair_results(setting: StitchSetting, a: int, b: int, cfg: Params, r_max: int, seed: int) -> dict[str, Any]:
    """Every condition at B's core rank (both regimes), the map R², and the crossed rank sweep."""
    r_core = setting.views[b].core.rank
    out: dict[str, Any] = {"swap": {}, "map_r2": {}, "floor": floor_scores(setting, b)}
    for condition in CONDITIONS:
        ca, cb = charts(setting, a, b, condition, r_core, seed)
        fmap = fitted_map(setting, a, b, ca, cb, condition, cfg["RIDGE"])
        out["swap"][condition] = swap_scores(setting, a, b, ca, cb, fmap)
        out["map_r2"][condition] = map_r2(fmap, ca.coords(setting.views[a].h_test).reshape(-1, ca.rank),
                                          cb.coords(setting.views[b].h_test).reshape(-1, cb.rank))
    ranks = ranks_up_to(min(r_max, setting.views[b].core.dim), setting.views[b].core.dim, extra=[r_core])
    out["ranks"] = ranks
    out["sweep"] = {c: {"acc": [], "agree": []} for c in ("core", "random", "unmapped")}
    for r in ranks:
        for condition in out["sweep"]:
            ca, cb = charts(setting, a, b, condition, r, seed + 100 * r)
            s = swap_scores(setting, a, b, ca, cb, fitted_map(setting, a, b, ca, cb, condition, cfg["RIDGE"]), ("crossed",))
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
                                        batch_size=cfg["BATCH_SIZE"], lr=cfg["LR"], precision=cfg["PRECISION"],
                                        device=resolve_device(cfg["DEVICE"]))
    views = [markov_view(m, data, cfg["ENERGY"]) for m in trained.models]
    setting = StitchSetting("layers.0", None, data.test_inputs, data.test_targets, crossed_order(cfg["N_TEST"], cfg["SEED"]), views)
    out = pair_results(setting, 0, 1, cfg, cfg["R_MAX"], cfg["SEED"])
    # held-out pair 0 -> 2: compose the maps fitted on 0 -> 1 and 1 -> 2 (nothing fitted on 0, 2)
    out["transfer"], out["direct"] = {}, {}
    for condition in ("core", "random", "full"):
        r = views[2].core.rank
        c0, c1 = charts(setting, 0, 1, condition, r, cfg["SEED"])
        _, c2 = charts(setting, 1, 2, condition, r, cfg["SEED"])
        composed = fitted_map(setting, 0, 1, c0, c1, condition, cfg["RIDGE"]).then(fitted_map(setting, 1, 2, c1, c2, condition, cfg["RIDGE"]))
        out["transfer"][condition] = swap_scores(setting, 0, 2, c0, c2, composed)
        out["direct"][condition] = swap_scores(setting, 0, 2, c0, c2, fitted_map(setting, 0, 2, c0, c2, condition, cfg["RIDGE"]))
    out["floor_heldout"] = floor_scores(setting, 2)
    chance = chance_accuracy(data.T, data.test_targets)
    out["invariance"] = invariance_pairs(views, data.test_inputs, cfg["SEED"])
    out["merging"] = [merge_paths(trained.models, views, i, j, data.test_inputs, data.test_targets, setting.hook, None,
                                  cfg["RIDGE"], chance) for i, j in MARKOV_PAIRS]
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
    setting = StitchSetting("layers.1", -1, data.test_inputs, data.test_targets, crossed_order(data.test_inputs.shape[0], cfg["SEED"]), views)
    out = pair_results(setting, 0, 1, cfg, cfg["MODADD_R_MAX"], cfg["SEED"])
    freqs = [key_frequencies(v.core, m.lm_head.weight.detach().double().numpy()) for v, m in zip(views, models)]
    union = set(freqs[0]) | set(freqs[1])
    out["invariance"] = invariance_pairs(views, data.test_answers, cfg["SEED"])
    out["merging"] = [merge_paths(models, views, 0, 1, data.test_inputs, data.test_targets, setting.hook, -1,
                                  cfg["RIDGE"], 1.0 / data.p)]
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
             f"{a['key_freqs'][1]} (Jaccard index {a['freq_jaccard']:.2f}, where two unrelated random sets of these sizes "
             f"give {jaccard_baseline(a['key_freqs'], a['p'], a['freq_jaccard'])['mean']:.2f} on average; the frequencies "
             f"holding {FREQ_POWER:.0%} of the Fourier power of the core's image W_U·Q). ")
    if not ok:
        text += ("A linear map cannot carry cos(k·c) onto cos(k′·c) for k ≠ k′, and indeed the whole activation through "
                 f"a full-rank map fails as well ({sa['full']['crossed']['agree']:.1%}). Both models compute a + b by "
                 "rotations (chapter 2), but with different frequencies: their cores are the same *kind* of algorithm, "
                 "not the same computation up to a linear change of coordinates. That is the finding on this setting.")
    return text


def transfer_text(m: dict[str, Any]) -> str:
    """Markdown sentence on the held-out pair (composed maps), worded from the results."""
    tr, di, base = m["transfer"], m["direct"], m["base_acc"][2]
    return (f"The composed core map {_verb(_works(tr['core']['crossed'], base))} on the held-out pair: "
            f"{tr['core']['crossed']['agree']:.1%} agreement with B on another input ({di['core']['crossed']['agree']:.1%} "
            f"with a map fitted on that pair), against {tr['random']['crossed']['agree']:.1%} for composed random-subspace "
            f"maps. Composed full-rank maps of the whole activation give {tr['full']['crossed']['agree']:.1%}"
            + (": on this setting the core is not the only route that transfers, but it is by far the smallest one (an "
               "r × r map per pair instead of D × D)." if _works(tr["full"]["crossed"], base) else
               ": only the core transfers."))
