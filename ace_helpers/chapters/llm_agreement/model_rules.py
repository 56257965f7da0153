"""Chapter 5's rules for one model, as data: the layer sweep, the controls, the removal diagnoses, the knob, the flip
demo and steered generation.

Each rule of :data:`MODEL_SPECS` (:class:`~ace_helpers.repro.rules.Rule`) is measured once per model of the run
(:func:`per_model`: one :class:`~ace_helpers.repro.rules.Measured` each, ``key`` the model's id part, ``{name}`` its
label), from the flat results alone (``<model>.<field>`` entries, :func:`~.pipeline.flat_results`), so a stored
``results.json`` gives the same verdicts.  The paper states its agreement results in words (per-model numbers were
not given), so most thresholds are ours; each rule's prose says what it asks and why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ace_helpers.chapters.llm_agreement.combined import OURS_PREFIX, WILSON_METHOD, ModelRun, wilson_interval
from ace_helpers.chapters.llm_agreement.pipeline import OFFICIAL_RULE
from ace_helpers.llm.labels import model_slug
from ace_helpers.method.stats import r2_interval
from ace_helpers.repro.params import Params
from ace_helpers.repro.rules import INTERVAL, ONE, Comparison, Measure, Measured, NotTested, Rule, per_part

PANEL = "SVA figure"  # the paper's subject–verb agreement figure: A layer sweep, B knob, C flip demo
CODE = "code release joshseth/cores, SVA_uni.py"
OURS, CONTROL, DIAGNOSIS = "ours (beyond the paper)", "ours (control, beyond the paper)", "ours (diagnosis)"
ID = OURS_PREFIX  # the prefix of the chapter's own claim ids; a model's own rows add its id part
OBSERVED = "GPT-2 Small, Medium and Large (fp16), 1200 synthetic attractor prompts split 600 / 600, the layer of lowest flip AUC"

BASE_MIN = 0.85  # clean AUC: a model that does agreement on attractor prompts (chance 0.5)
KEEP_TOL = 0.02  # core only: at the base AUC within about one standard error (200 test prompts)
CHANCE_TOL, REMOVE_PARTLY = 0.10, 0.60  # removed: at chance ±0.1; partly: no agreement left (≤ 0.6)
FLIP_MAX = 0.25  # flipped: half way from chance to a full inversion
RANDOM_GAP = 0.30  # controls: ACE beats the median random direction by this much (and every one)
DOM_TOL = 0.05  # ACE vs the difference of means
ZERO_TOL = 0.05  # zero vs mean ablation: the same AUC within this
FREE_GAP, FREE_MIN = 0.30, 0.60  # attractor-free removal: this far above the test prompts' removal, and above this
KNOB_R2 = 0.50
P_MAX = 0.01  # permutation tests
GEN_RATE, GEN_PARTLY = 0.70, 0.50
PUSH_TOL, LANDED_MIN = 0.50, 0.90  # generation: achieved push within this of the target; share landing on the other side
DEMO_SHARE = 2 / 3  # flip demo, partly: the share of the demo prompts the flip moves

SWEEP_PAPER = {
    "keep": "keeping only the 1-D core keeps agreement (Core Only (+))",
    "remove": "removing the core destroys agreement (Core Removed (−))",
    "flip": "reflecting the core coordinate about the mean inverts grammatical number: AUC below 0.5 (Core Flipped (↔))",
    "knob": "the margin follows the single core coordinate (affine fit, R² in the legend; values not given)",
    "generation": "flipping the core inverts grammatical number throughout generation (examples; no rate given)",
}


def fmt(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals, ``"n/a"`` for None or NaN."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def fmt_p(x: Any) -> str:
    """A p-value with two significant digits, ``"n/a"`` for None."""
    return "n/a" if x is None else f"{x:.2g}"


PerModel = Callable[[Callable[[str], Any], Params, Mapping[str, Any], str], "Measured | NotTested | None"]


def per_model(fn: PerModel) -> Measure:
    """A rule's ``measure`` from ``fn(get, cfg, results, name)`` for model ``name``: one measurement (or
    :class:`~ace_helpers.repro.rules.NotTested`) per model of the run (a model ``fn`` returns None for is left out),
    its ``key`` the model's id part and ``{name}`` its label (:func:`~ace_helpers.repro.rules.per_part`)."""

    @per_part(lambda run: ((model_slug(name), (run, name), {"name": name}) for name in run.models))
    @functools.wraps(fn)
    def measure(item: tuple[ModelRun, str], key: str, cfg: Params) -> Measured | NotTested | None:
        run, name = item
        return fn(run.getter(name), cfg, run.results, name)

    return measure


def _sweep(get: Callable[[str], Any]) -> dict[str, Any]:
    return {"base AUC": get("auc_base"), "core-only AUC": get("auc_keep"), "core-removed AUC": get("auc_remove"),
            "core-flipped AUC": get("auc_flip")}  # fmt: skip


@per_model
def _base(get, cfg, results, name):
    return Measured(_sweep(get), ours=fmt(get("auc_base")), value=get("auc_base"))


@per_model
def _keep(get, cfg, results, name):
    keep, base = get("auc_keep"), get("auc_base")
    return Measured(_sweep(get), ours=f"{fmt(keep)} (base {fmt(base)})", value=keep, context={"ell": get("chosen_layer")})


@per_model
def _remove(get, cfg, results, name):
    remove = get("auc_remove")
    return Measured({**_sweep(get), "|core-removed AUC − 0.5|": abs(remove - 0.5)}, ours=fmt(remove), value=remove)


@per_model
def _flip(get, cfg, results, name):
    return Measured(_sweep(get), ours=fmt(get("auc_flip")), value=get("auc_flip"))


def _random(mode: str) -> Callable[[ModelRun, Params], list[Measured] | None]:
    """Measure ACE's ``mode`` AUC against the random directions' (``keep``: above; ``remove``, ``flip``: below)."""
    ace_field, rand_field = {"keep": ("auc_keep", "keep"), "remove": ("auc_remove", "matched_remove"),
                             "flip": ("auc_flip", "matched_flip")}[mode]  # fmt: skip

    def measure(get, cfg, results, name):
        if not get("auc_random_keep"):
            return None
        ace, rand = get(ace_field), get(f"auc_random_{rand_field}")
        lo, med, hi = float(np.min(rand)), float(np.median(rand)), float(np.max(rand))
        sign = 1 if mode == "keep" else -1  # how far ACE lies on the claim's side of each
        return Measured({"ACE's margin over every random direction": sign * (ace - (hi if sign > 0 else lo)),
                         "ACE's margin over the random median": sign * (ace - med)},
                        ours=f"ACE {fmt(ace)}; random min {fmt(lo)}, median {fmt(med)}, max {fmt(hi)}", value=[ace, lo, med, hi],
                        context={"k": len(get("auc_random_keep"))})

    measure.__qualname__ = measure.__name__ = f"random_{mode}"
    return per_model(measure)


@per_model
def _dom(get, cfg, results, name):
    if not get("auc_random_keep"):
        return None
    keep, flip, dk, df = get("auc_keep"), get("auc_flip"), get("auc_dom_keep"), get("auc_dom_flip")
    return Measured({"ACE keep AUC": keep, "difference of means' keep AUC": dk, "ACE flip AUC": flip,
                     "difference of means' flip AUC": df, "the better of the two margins": max(keep - dk, df - flip)},
                    ours=f"ACE keep {fmt(keep)}, flip {fmt(flip)}; difference of means keep {fmt(dk)}, flip {fmt(df)} "
                    f"(remove {fmt(get('auc_dom_remove'))}); |cos| {fmt(get('cos_core_dom'))}", value=[keep, flip, dk, df])


@per_model
def _zero(get, cfg, results, name):
    if not get("auc_random_keep"):
        return None
    remove, zero = get("auc_remove"), get("auc_ace_remove_zero")
    mm, mz, mc = get("mean_margin_remove"), get("mean_margin_remove_zero"), get("mean_margin_clean")
    return Measured({"|zero − mean ablation AUC|": abs(zero - remove)}, value=[remove, zero],
                    ours=f"mean ablation {fmt(remove)}, zero ablation {fmt(zero)}; mean margin (singular, plural): clean "
                    f"({fmt(mc[0], 2)}, {fmt(mc[1], 2)}), mean ablation ({fmt(mm[0], 2)}, {fmt(mm[1], 2)}), zero "
                    f"ablation ({fmt(mz[0], 2)}, {fmt(mz[1], 2)})")


@per_model
def _attractor(get, cfg, results, name):
    if not get("auc_random_keep"):
        return None
    free, remove = get("auc_free_remove"), get("auc_remove")
    return Measured({"attractor-free − test prompts' removed AUC": free - remove, "attractor-free removed AUC": free},
                    value=[free, remove], ours=f"attractor-free prompts: removed {fmt(free)} (base "
                    f"{fmt(get('auc_free_base'))}, flipped {fmt(get('auc_free_flip'))}); test prompts: removed {fmt(remove)}")


@per_model
def _knob(get, cfg, results, name):
    r2, p = get("knob_r2"), get("knob_p_label_preserving")
    return Measured({"knob R²": list(r2_interval(r2, cfg["N_PROMPTS"] // 2)), "label-preserving p": p}, value=[r2, p],
                    ours=f"R² {fmt(r2)} (label-only null median {fmt(get('knob_r2_label_null'))}, p {fmt_p(p)})")


@per_model
def _knob_within(get, cfg, results, name):
    ps, pp = get("knob_p_singular"), get("knob_p_plural")
    return Measured({"singular p": ps, "plural p": pp, "the smaller p": min(ps, pp)},
                    value=[get("knob_r2_singular"), get("knob_r2_plural")],
                    ours=f"singular R² {fmt(get('knob_r2_singular'))} (p {fmt_p(ps)}), plural R² "
                    f"{fmt(get('knob_r2_plural'))} (p {fmt_p(pp)})")


def demo_shifts(results: Mapping[str, Any], name: str) -> list[float]:
    """Per demo prompt, how far the flip moves the margin m towards the other number (nats; + = towards it)."""
    labels = results["demo_labels"]
    base, flipped = results[f"{name}.demo_margin_base"], results[f"{name}.demo_margin_flipped"]
    return [(f - b) * (1 if lab == 0 else -1) for b, f, lab in zip(base, flipped, labels)]


@per_model
def _demo(get, cfg, results, name):
    share = get("demo_share_flipped")
    if share is None:
        return None
    moved, shifts = sum(s < 0.5 for s in share), demo_shifts(results, name)
    return Measured({"share of the demo prompts moved": moved / len(share)}, value=moved,
                    ours=f"{moved} of {len(share)} prompts; margin shift towards the other number per prompt "
                    f"[{', '.join(fmt(s, 1) for s in shifts)}] nats",
                    context={"n": len(share), "need": math.ceil(DEMO_SHARE * len(share) - 1e-9)})


@per_model
def _demo_near_mean(get, cfg, results, name):
    share = get("demo_share_flipped")
    if share is None or all(s < 0.5 for s in share) or get("coord_singular") is None:
        return None
    labels, z = results["demo_labels"], get("demo_coord")
    own = [z[i] * np.sign(get("coord_plural" if lab else "coord_singular")) for i, lab in enumerate(labels)]
    stay = [own[i] for i, s in enumerate(share) if s >= 0.5]
    went = [own[i] for i, s in enumerate(share) if s < 0.5]
    return Measured({"nearest moved − farthest kept coordinate": min(went) - max(stay) if went else math.inf},
                    ours=f"coordinate towards the own class: prompts kept [{', '.join(fmt(v, 1) for v in stay)}], moved "
                    f"[{', '.join(fmt(v, 1) for v in went)}]")


def _rate(kind: str) -> PerModel:
    """Measure the share of changed generations under the ``official`` or ``refined`` calibration."""

    def measure(get, cfg, results, name):
        rate, scored = get(f"generation_{kind}_rate"), get(f"generation_{kind}_scored")
        if scored is None:
            return None
        if rate is None or not scored:
            return NotTested("no steered generation has a number-marked verb to score")
        return Measured({"changed generations": list(wilson_interval(rate, int(scored))), "the share": rate}, value=rate,
                        ours=f"{fmt(rate)} of {scored} generations (clean texts {fmt(get('generation_baseline_rate'))})",
                        context={"refine": cfg["GEN_REFINE"], "eps": f"{cfg['GEN_EPS']:g}"})

    measure.__qualname__ = measure.__name__ = f"rate_{kind}"
    return measure


@per_model
def _push(get, cfg, results, name):
    if get("generation_refined_scored") is None:
        return None
    lo, hi, land = get("generation_official_push"), get("generation_refined_push"), get("generation_official_landed")
    return Measured({"|official push − its target|": abs(lo - OFFICIAL_RULE[1]), "|refined push − its target|": abs(hi - cfg["GEN_EPS"]),
                     "official share on the other side": land}, value=[lo, hi, land],
                    ours=f"median achieved margin towards the other number: official {fmt(lo, 2)} nats (on the other side "
                    f"at {fmt(land)} of steps), refined {fmt(hi, 2)} nats ({fmt(get('generation_refined_landed'))})",
                    context={"eps": f"{cfg['GEN_EPS']:g}", "official": f"{OFFICIAL_RULE[1]:g}"})


def _one(metric: str, op: str, threshold: float, relative_to: str | None = None) -> Comparison:
    return Comparison(metric, op, threshold, relative_to=relative_to, over=ONE)


_RANDOM = {
    "keep": ("keeping a random direction instead loses agreement", "above every random direction's and ≥ their median + ",
             "each kept as the core is, μ + rrᵀ(h − μ)"),
    "remove": ("removing a random direction leaves agreement", "below every random direction's and ≤ their median − ",
               "each moved by the core removal's own per-prompt displacement, h − z·r: the same size of edit in another direction"),
    "flip": ("a random direction pushed as far does not invert", "below every random direction's and ≤ their median − ",
             "each moved by the core flip's own per-prompt displacement, h − 2z·r: the same size of edit in another direction"),
}  # fmt: skip
_RANDOM_PAPER = "— (ours: is the core's effect specific to its direction?)"


def _random_rule(mode: str) -> Rule:
    text, side, how = _RANDOM[mode]
    return Rule(f"{ID}{{key}}_random_{mode}", f"{{name}}: control: {text}", _RANDOM_PAPER, CONTROL, OBSERVED,
                (_one("ACE's margin over every random direction", ">", 0), _one("ACE's margin over the random median", ">=", RANDOM_GAP)),
                f"ACE's {mode} AUC {side}{{t1}} (same layer, last token, mean-centred, {{k}} isotropic random unit "
                f"directions, {how})", _random(mode),
                {"ACE's margin over every random direction": -0.2, "ACE's margin over the random median": 0.0},
                gap=f"{{name}}:random_{mode}")


MODEL_SPECS: Sequence[Rule] = (
    Rule(ID + "{key}_base_agreement", "{name}: the model agrees (base AUC)", "GPT-2 Small / Medium / Large do subject–verb "
         "agreement on the attractor prompts (Base line; values not given)", f"{PANEL}, panel A", OBSERVED,
         (_one("base AUC", ">=", BASE_MIN),), "ROC-AUC of the clean margin vs the plural label ≥ {t0} (ours: the paper gives "
         "no value; chance is 0.5)", _base, {"base AUC": 0.5}, gap="{name}:base"),
    Rule("sva.keep", "{name}: keeping only the core keeps agreement (ℓ = {ell})", SWEEP_PAPER["keep"],
         f"abstract; {PANEL}, panel A", OBSERVED, (_one("core-only AUC", ">=", -KEEP_TOL, "base AUC"),),
         "core-only AUC ≥ base AUC − {d0} at the chosen layer (the lowest flip AUC, as the official code chooses it); as "
         "the paper states it (agreement kept), {d0} being about one standard error of the AUC", _keep, {"core-only AUC": 0.5}),
    Rule("sva.remove", "{name}: removing the core destroys agreement (AUC at chance)", SWEEP_PAPER["remove"],
         f"abstract; {PANEL}, panel A", OBSERVED, (_one("|core-removed AUC − 0.5|", "<=", CHANCE_TOL),),
         "|AUC − 0.5| ≤ {t0} (destroyed = at chance, as the paper states it: an AUC well below 0.5 is agreement reversed, "
         "not destroyed); partly: AUC ≤ {p0} (no agreement left, but inverted or short of chance)", _remove,
         {"|core-removed AUC − 0.5|": 0.45, "core-removed AUC": 0.95}, partly=(_one("core-removed AUC", "<=", REMOVE_PARTLY),),
         gap="{name}:remove"),
    Rule("sva.flip", "{name}: flipping the core inverts agreement", SWEEP_PAPER["flip"], f"abstract; {PANEL}, panel A",
         OBSERVED, (_one("core-flipped AUC", "<=", FLIP_MAX),), "flip AUC ≤ {t0} (the paper: below 0.5; ours asks for half "
         "the way from chance to a full inversion, so that a weak push does not count)", _flip, {"core-flipped AUC": 0.5}),
    *(_random_rule(mode) for mode in ("keep", "remove", "flip")),
    Rule(ID + "{key}_difference_of_means", "{name}: control: ACE, without labels, matches the difference of the class "
         "means", "— (ours: ACE never sees the labels; the difference of means is the supervised baseline)", CONTROL, OBSERVED,
         (_one("ACE keep AUC", ">=", -DOM_TOL, "difference of means' keep AUC"),
          _one("ACE flip AUC", "<=", DOM_TOL, "difference of means' flip AUC")),
         "ACE keep AUC ≥ the difference-of-means direction's − {d0} and ACE flip AUC ≤ its + {d1} (the unit direction "
         "between the plural and singular training means, edited as the core is); partly: one of the two", _dom,
         {"ACE keep AUC": 0.5, "ACE flip AUC": 0.5, "the better of the two margins": -0.3},
         partly=(_one("the better of the two margins", ">=", -DOM_TOL),), gap="{name}:dom"),
    Rule(ID + "{key}_zero_vs_mean_ablation", "{name}: diagnosis: where removal puts the coordinate does not change its AUC",
         "— (ours: does removal invert because the activation mean sits on one side?)", DIAGNOSIS, OBSERVED,
         (_one("|zero − mean ablation AUC|", "<=", ZERO_TOL),),
         "|AUC of the zero ablation h − qqᵀh − AUC of the mean ablation h − qqᵀ(h − μ)| ≤ {t0}: both set every prompt's "
         "coordinate to one value (0, or the mean's); where that value sits moves all margins to one side, but the AUC "
         "ranks prompts, so it cannot by itself invert them", _zero, {"|zero − mean ablation AUC|": 0.4}, explains="sva.remove"),
    Rule(ID + "{key}_removal_follows_attractor", "{name}: diagnosis: removal inverts only where an opposite-number "
         "attractor is present", "— (ours: what does the state keep once the core is removed?)", DIAGNOSIS, OBSERVED,
         (_one("attractor-free − test prompts' removed AUC", ">=", FREE_GAP), _one("attractor-free removed AUC", ">=", FREE_MIN)),
         "on attractor-free prompts (the 18 heads in 4 frames, no second noun), the removed AUC is ≥ {t0} above the test "
         "prompts' and ≥ {t1}: what is left after removal follows the attractor, whose number is always the opposite one",
         _attractor, {"attractor-free − test prompts' removed AUC": 0.0, "attractor-free removed AUC": 0.3},
         explains="sva.remove"),
    Rule("sva.knob", "{name}: the knob: margin affine in the core coordinate (pooled R²)", SWEEP_PAPER["knob"],
         f"{PANEL}, panel B", OBSERVED, (Comparison("knob R²", ">=", KNOB_R2, over=INTERVAL), _one("label-preserving p", "<", P_MAX)),
         "pooled R² of m ≈ a·z + b on the test prompts ≥ {t0} (ours: no value given) and above the label-preserving null "
         "(z permuted within each class, p < {t1}); that null's median is what the label alone gives; an R² within 2 "
         "standard errors of {t0} cannot tell (inconclusive)", _knob, {"knob R²": [0.1, 0.2], "label-preserving p": 0.5},
         gap="{name}:knob_r2", method="R² ± 2 large-sample standard errors √(4R²(1 − R²)²/n), n the test prompts"),
    Rule(ID + "{key}_knob_within_class", "{name}: the knob within each number class", SWEEP_PAPER["knob"],
         f"{PANEL}, panel B (our within-class reading)", OBSERVED, (_one("singular p", "<", P_MAX), _one("plural p", "<", P_MAX)),
         "in each number class separately, z correlates with m in the pooled slope's direction, one-sided within-class "
         "permutation p < {t0} (the pooled fit mixes this with the separation of the classes); partly: in one class",
         _knob_within, {"singular p": 0.5, "plural p": 0.5, "the smaller p": 0.5}, partly=(_one("the smaller p", "<", P_MAX),),
         gap="{name}:knob_within"),
    Rule("sva.flip", "{name}: flip demo: the mass moves to the other number", "on the six demo prompts, flipping the core "
         "moves P(is / are / was / were) to the other number", f"{PANEL}, panel C", OBSERVED,
         (_one("share of the demo prompts moved", ">=", 1.0),), "after the flip, the prompt's own number holds < 0.5 of "
         "the four verbs' probability on every demo prompt (as the panel shows it); partly: on ≥ {need} of {n}", _demo,
         {"share of the demo prompts moved": 0.0}, partly=(_one("share of the demo prompts moved", ">=", DEMO_SHARE),),
         gap="{name}:demo_flip", headline=False),
    Rule(ID + "{key}_demo_near_mean", "{name}: diagnosis: the flip leaves on their own number the demo prompts nearest "
         "the mean along the core", "— (ours: why the flip moves some demo prompts little)", DIAGNOSIS, OBSERVED,
         (_one("nearest moved − farthest kept coordinate", ">", 0),), "each prompt that keeps ≥ 0.5 of its own number after "
         "the flip has a smaller core coordinate towards its own class (z, signed so that the own class's training mean "
         "is positive; the mean μ is at 0) than every prompt that moves: the flip reflects z about the mean, so a prompt "
         "near the mean moves little, and one on the other side of it moves the wrong way", _demo_near_mean,
         {"nearest moved − farthest kept coordinate": -1.0}, explains="sva.flip"),
    Rule("sva.generation", "{name}: steered generation changes verb number (official calibration: one secant step to 1 nat)",
         SWEEP_PAPER["generation"], f"abstract; the calibration rule from {CODE} (generate_surgical)", OBSERVED,
         (Comparison("changed generations", ">=", GEN_RATE, over=INTERVAL),), "≥ {t0} of the steered generations with a "
         "number-marked verb (is/are, was/were, has/have, does/do) use mostly the form the clean model likes less in that "
         "context (ours: the paper gives examples); partly: ≥ {p0}; inconclusive where the rate's Wilson interval (95 %, "
         "over the scored generations) straddles {t0}", per_model(_rate("official")),
         {"changed generations": [0.1, 0.3], "the share": 0.2}, partly=(_one("the share", ">=", GEN_PARTLY),),
         gap="{name}:generation_official", method=WILSON_METHOD),
    Rule(ID + "{key}_generation_refined", "{name}: steered generation changes verb number (refined calibration: {refine} "
         "more secant steps to {eps} nats, ours)", SWEEP_PAPER["generation"], OURS, OBSERVED,
         (Comparison("changed generations", ">=", GEN_RATE, over=INTERVAL),), "as the row above (≥ {t0}), with our "
         "variant of the official rule: extra secant steps meet the target margin where one step undershoots, and a "
         "larger target leaves the clean number less chance at temperature 1 (a 1-nat margin leaves it 27 %)",
         per_model(_rate("refined")), {"changed generations": [0.1, 0.3]}, gap="{name}:generation_refined",
         method=WILSON_METHOD),
    Rule(ID + "{key}_official_rule_push", "{name}: diagnosis: the official rule reaches its 1-nat target, which leaves the "
         "clean number its chance", "— (ours: why the official rule changes fewer generations)", DIAGNOSIS, OBSERVED,
         (_one("|official push − its target|", "<=", PUSH_TOL), _one("|refined push − its target|", "<=", PUSH_TOL),
          _one("official share on the other side", ">=", LANDED_MIN)),
         "each rule's median achieved copula margin towards the other number lies within {t0} nat of its target "
         "({official} and {eps} nats) and the official rule lands on the other side at ≥ {t2} of the steps: the rules "
         "differ in how far they push, not in whether they get there; at temperature 1 a 1-nat margin leaves each copula "
         "the clean number with probability σ(−1) = 27 %", _push,
         {"|official push − its target|": 2.0, "|refined push − its target|": 2.0, "official share on the other side": 0.3},
         explains="sva.generation"),
)
