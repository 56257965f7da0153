"""Chapter 7's claims, from the results dict alone (so a stored results.json checks the same): when a stitch works, when it fails, the rules, and the paper's merging implication read on activations."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from math import comb
from typing import Any

import numpy as np

from ace_helpers.chapters.core_stitching import paper_rows
from ace_helpers.chapters.core_stitching.rules import (  # noqa: F401 - the chapter's rules, re-exported
    AGREE_MIN,
    DIAGNOSIS,
    KNOWN_GAPS,
    MARKOV_GAPS,
    MARKOV_KNOBS,
    MERGING_PAPER,
    MERGING_WHERE,
    MODADD_KNOBS,
    PAPER,
    REGIMES,
    TOLERANCE,
    WHERE,
    _works,
    halfway,
)
from ace_helpers.chapters.modadd.grokked import GROK_ACC
from ace_helpers.chapters.toy_views.knobs import MEMORY_LIMIT, PRESETS, check, memory_estimate  # noqa: F401
from ace_helpers.chapters.markov_run.jobs import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.toy_views.views import FREQ_POWER
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import NOT_REPRODUCED, Claims  # noqa: F401 - for the notebook
from ace_helpers.repro.untested import ClaimRow, not_tested_table  # noqa: F401 - for the notebook
from ace_helpers.repro.rules import EQUAL, ONE, Comparison, Measure, Measured, Rule, judge_all, per_part


# -------------------- claims (from the results dict only, so a stored results.json checks the same)
def first_working_rank(section: dict[str, Any], base: float) -> int | None:
    """Smallest swept rank whose crossed core swap keeps ``base`` within TOLERANCE and reaches AGREE_MIN."""
    sweep = section["sweep"]["core"]
    for r, acc, agree in zip(section["ranks"], sweep["acc"], sweep["agree"]):
        if acc >= base - TOLERANCE and agree >= AGREE_MIN:
            return int(r)
    return None


def _pair(s: dict[str, float]) -> list[float]:
    return [s["acc"], s["agree"]]


WORKS_RULE = f"accuracy ≥ B's own − {TOLERANCE} and agreement with B's own predictions ≥ {AGREE_MIN} (ours)"
FAILS_RULE = "agreement with B's predictions on A's input ≤ halfway between the no-swap floor and 1 (ours)"
#: The prefix of our claim ids in this chapter.
ID = "ours.core_stitching."
#: Share of two unrelated random frequency sets whose Jaccard index is at most the rule's threshold (its percentile).
JACCARD_LEVEL = 0.95


def random_jaccard(n: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, probabilities), values ascending: the exact distribution of the Jaccard index of two independent,
    uniformly random subsets of sizes ``a`` and ``b`` of ``n`` items (their intersection k is hypergeometric;
    J = k / (a + b − k))."""
    if not 1 <= a <= n or not 1 <= b <= n:
        raise ValueError(f"set sizes a={a!r}, b={b!r} must lie in 1..n={n!r}")
    ks = np.arange(max(0, a + b - n), min(a, b) + 1)
    probs = np.array([comb(a, int(k)) * comb(n - a, b - int(k)) for k in ks], dtype=float) / comb(n, b)
    return ks / (a + b - ks), probs


def jaccard_baseline(freqs: list[list[int]], p: int, observed: float) -> dict[str, float]:
    """What two unrelated key-frequency sets of the models' sizes, drawn from 1..⌊p/2⌋, give: ``mean``, the
    5th and :data:`JACCARD_LEVEL` percentiles ``q05`` and ``q95`` (the smallest attainable J whose cumulative
    probability reaches the level) and ``p_shared`` = P(J_random ≥ ``observed``)."""
    values, probs = random_jaccard(p // 2, len(freqs[0]), len(freqs[1]))
    cdf = np.cumsum(probs)
    quantile = lambda level: float(values[int(np.argmax(cdf >= level - 1e-12))])  # noqa: E731
    return {"mean": float(values @ probs), "q05": quantile(0.05), "q95": quantile(JACCARD_LEVEL),
            "p_shared": float(probs[values >= observed - 1e-12].sum())}


def _task(tasks: tuple[str, ...]) -> Callable[[Callable[[dict[str, Any], Params], Measured | None]], Measure]:
    """A rule's ``measure`` from ``fn(s, cfg)`` on each task's section ``s`` that ran (of ``tasks``): its ``key`` the
    task and ``{label}`` its name in the claims ("Markov", "mod-add") (:func:`~ace_helpers.repro.rules.per_part`)."""

    def wrap(fn: Callable[[dict[str, Any], Params], Measured | None]) -> Measure:
        @per_part(lambda res: ((task, res[task], {"label": LABELS[task]}) for task in tasks if res.get(task) is not None))
        @functools.wraps(fn)
        def measure(s: dict[str, Any], task: str, cfg: Params) -> Measured | None:
            return fn(s, cfg)

        return measure

    return wrap


LABELS = {"markov": "Markov", "modadd": "mod-add"}
OBSERVED = "ours: Markov seeds (chapter 1's task) and two grokked mod-add models (p = 31), stitched at the core's layer"
BOTH, MARKOV, MODADD = ("markov", "modadd"), ("markov",), ("modadd",)
WORKS = ("accuracy", "agreement with B's own predictions")
LINE = "halfway from the no-swap floor to 1"


def _works_tests() -> tuple[Comparison, ...]:
    return (Comparison(WORKS[0], ">=", -TOLERANCE, relative_to="B's own accuracy", over=ONE),
            Comparison(WORKS[1], ">=", AGREE_MIN, over=ONE))


def _stitch(s: dict[str, float], base: float, **context: Any) -> Measured:
    """A swap that should work: its accuracy and agreement against B's own accuracy ``base``."""
    return Measured({WORKS[0]: s["acc"], WORKS[1]: s["agree"], "B's own accuracy": base}, ours=_pair(s), context=context)


def _fails(agree: float, floor: float, ours: Any, **context: Any) -> Measured:
    """A swap that should fail: its agreement against the line halfway from the no-swap ``floor`` to 1."""
    return Measured({"agreement with B's own predictions": agree, LINE: halfway(floor)}, ours=ours, value=agree, context=context)


def _swap(regime_path: tuple[str, str]):
    kind, regime = regime_path

    @_task(BOTH)
    def measure(s, cfg):
        return _stitch(s["swap"][kind][regime], s["base_acc"][1])

    measure.__qualname__ = f"swap[{kind}, {regime}]"
    return measure


@_task(BOTH)
def _random_fails(s, cfg):
    sw = s["swap"]["random"]["crossed"]
    return _fails(sw["agree"], s["floor"]["agree"], _pair(sw), floor_agree=f"{s['floor']['agree']:.3f}")


@_task(BOTH)
def _unmapped_fails(s, cfg):
    unm = [s["swap"]["unmapped"][g]["agree"] for g in REGIMES]
    return Measured({"the larger agreement, same and another input": max(unm), LINE: halfway(s["floor"]["agree"])},
                    ours=unm, value=unm)


@_task(MARKOV)
def _from_core_rank(m, cfg):
    first, r_core = first_working_rank(m, m["base_acc"][1]), m["core_ranks"][1]
    return Measured({"first working rank − B's core rank": float("inf") if first is None else first - r_core}, ours=[first, r_core])


@_task(MARKOV)
def _composed_core(m, cfg):
    return _stitch(m["transfer"]["core"]["crossed"], m["base_acc"][2])


@_task(MARKOV)
def _composed_random(m, cfg):
    tr = m["transfer"]["random"]["crossed"]
    return _fails(tr["agree"], m["floor_heldout"]["agree"], _pair(tr))


@_task(MARKOV)
def _only_core(m, cfg):
    tr, line = m["transfer"], halfway(m["floor_heldout"]["agree"])
    core = tr["core"]["crossed"]
    return Measured({WORKS[0]: core["acc"], WORKS[1]: core["agree"], "B's own accuracy": m["base_acc"][2],
                     "composed random maps' agreement": tr["random"]["crossed"]["agree"],
                     "composed full-rank maps' agreement": tr["full"]["crossed"]["agree"], LINE: line},
                    ours=[_pair(core), _pair(tr["full"]["crossed"])])


@_task(MARKOV)
def _random_same(m, cfg):
    return Measured({"same-input random swap's agreement": m["swap"]["random"]["same"]["agree"]})


@_task(MODADD)
def _grokked(a, cfg):
    grokked = [float(g is not None) for g in a["grok_step"]]
    return Measured({"grokked (1) or not (0)": grokked}, ours=[a["grok_step"], a["base_acc"]], value=a["base_acc"])


@_task(MODADD)
def _key_frequencies(a, cfg):
    jac = a["freq_jaccard"]
    rand = jaccard_baseline(a["key_freqs"], a["p"], jac)
    return Measured({"Jaccard index of the key frequencies": jac, f"its {JACCARD_LEVEL:.0%} percentile for two random sets": rand["q95"]},
                    value=jac, ours=f"{a['key_freqs'][0]} vs {a['key_freqs'][1]}: Jaccard {jac:.3f}; two random sets of "
                    f"these sizes from 1..{a['p'] // 2}: mean {rand['mean']:.3f}, 5th–95th percentile {rand['q05']:.3f}–"
                    f"{rand['q95']:.3f}, P(J ≥ ours) = {rand['p_shared']:.3f}")


def _merging(headline: bool):
    def measure(res: Mapping[str, Any], cfg: Params) -> Measured | None:
        if any("merging" in (res.get(t) or {}) for t in BOTH) == headline:
            return None  # the headline only for a stored run without merging paths
        held, parts = [], []
        for task in BOTH:
            s = res.get(task)
            if s is None:
                continue
            sw, line = s["swap"], halfway(s["floor"]["agree"])
            unaligned = max(sw["unmapped"][g]["agree"] for g in REGIMES)
            held.append(_works(sw["core"]["crossed"], s["base_acc"][1]) and unaligned <= line)
            parts.append(f"{task}: {'holds' if held[-1] else 'fails'} (aligned {sw['core']['crossed']['agree']:.3f}, "
                         f"unaligned {unaligned:.3f})")
        return Measured({"the aligned swap stitches and the unaligned one fails (1) or not (0), per task": [float(h) for h in held],
                         "tasks where it holds": sum(held)}, ours="; ".join(parts),
                        context={"gap": "modadd_core" if len(held) > 1 and not held[1] else ""})

    measure.__qualname__ = measure.__name__ = f"merging[{'headline' if headline else 'evidence'}]"
    return measure


WORKS_PROSE = "accuracy ≥ B's own − {d0} and agreement with B's own predictions ≥ {t1} (ours)"
FAILS_PROSE = "agreement with B's predictions on A's input ≤ halfway between the no-swap floor and 1 (ours)"
MERGING_CLAIM = ("stitching: aligning the cores lets one model run on another's core coordinates, where the unaligned "
                 "coordinates do not (per task)")
MERGING_RULE = (f"tested on activations, not on weights: in every task run, the core-mapped swap (A's core coordinates "
                f"carried into B's core by a fitted linear map) works with B on another input (accuracy ≥ B's own − "
                f"{TOLERANCE}, agreement with B's own predictions ≥ {AGREE_MIN}) while A's unmapped core coordinates fail "
                "(agreement ≤ halfway from the no-swap floor to 1); naive weight interpolation itself is not tested; "
                "partly: it holds in some tasks")


def _rule(key: str, claim: str, tests: tuple[Comparison, ...], prose: str, measure: Any, wrong: Mapping[str, Any],
          **kw: Any) -> Rule:
    return Rule(ID + key, claim, kw.pop("paper", PAPER), kw.pop("where", WHERE), OBSERVED, tests, prose, measure, wrong, **kw)


_FAIL_LINE = (Comparison("agreement with B's own predictions", "<=", 0, relative_to=LINE, over=ONE),)
_WRONG_WORKS = {WORKS[0]: 0.2, WORKS[1]: 0.3}
SPECS: tuple[Rule, ...] = (
    _rule("{key}_core_swap_crossed", "{label}: the core-mapped swap carries A's computation into B (B on another input)",
          _works_tests(), WORKS_PROSE, _swap(("core", "crossed")), _WRONG_WORKS, gap="stitch:{key}_core"),
    _rule("{key}_core_swap_same", "{label}: the core-mapped swap keeps B's accuracy (same input)", _works_tests(),
          WORKS_PROSE, _swap(("core", "same")), _WRONG_WORKS, gap="stitch:{key}_core"),
    _rule("{key}_random_swap_fails", "{label}: a random subspace of the same rank does not carry it", _FAIL_LINE,
          FAILS_PROSE + "; floor {floor_agree}", _random_fails, {"agreement with B's own predictions": 1.0}),
    _rule("{key}_unmapped_swap_fails", "{label}: the unmapped swap (A's raw core coordinates) fails",
          (Comparison("the larger agreement, same and another input", "<=", 0, relative_to=LINE, over=ONE),),
          FAILS_PROSE.removesuffix(" (ours)") + ", on the same and on another input (ours)", _unmapped_fails,
          {"the larger agreement, same and another input": 1.0}),
    _rule("{key}_full_map_control", "{label}: a full-rank map of the whole activation stitches too (control)", _works_tests(),
          WORKS_PROSE, _swap(("full", "crossed")), _WRONG_WORKS, gap="stitch:{key}_full"),
    _rule("markov_works_from_core_rank", "Markov: the core swap starts to work exactly at the core rank",
          (Comparison("first working rank − B's core rank", EQUAL, 0, over=ONE),),
          "smallest swept rank whose crossed core swap works (rule above) = B's ACE rank (ours)", _from_core_rank,
          {"first working rank − B's core rank": 3.0}, paper=f"{PAPER}; core rank n − 1"),
    _rule("markov_composed_core_transfers", "Markov: composed core maps stitch the held-out seed pair 0 → 2", _works_tests(),
          WORKS_PROSE + "; maps fitted on pairs 0 → 1 and 1 → 2 only", _composed_core, _WRONG_WORKS),
    _rule("markov_composed_random_fails", "Markov: composed random-subspace maps do not", _FAIL_LINE, FAILS_PROSE,
          _composed_random, {"agreement with B's own predictions": 1.0}),
    _rule("markov_transfer_only_through_core", "Markov: the map transfers to the held-out pair only through the core "
          "([core, full-rank] accuracy, agreement)",
          (*_works_tests(), Comparison("composed random maps' agreement", "<=", 0, relative_to=LINE, over=ONE),
           Comparison("composed full-rank maps' agreement", "<=", 0, relative_to=LINE, over=ONE)),
          "composed core maps stitch (rule above) while composed random-subspace maps and composed full-rank maps of the "
          "whole activation both fail (agreement ≤ halfway to 1); partly: the core and the full-rank maps both transfer, "
          "random ones do not (ours)", _only_core, {"composed full-rank maps' agreement": 1.0, WORKS[1]: 0.2},
          partly=(*_works_tests(), Comparison("composed random maps' agreement", "<=", 0, relative_to=LINE, over=ONE)),
          gap="markov:only_core"),
    _rule("markov_random_same_input_intact", "Markov: on the same input the random swap leaves B intact (why the crossed "
          "test is needed)", (Comparison("same-input random swap's agreement", ">=", 0.95, over=ONE),),
          "agreement ≥ {t0}: a random rank-r subspace misses B's core (ours)", _random_same,
          {"same-input random swap's agreement": 0.5}, paper="—", where=DIAGNOSIS),
    _rule("modadd_grokked", "mod-add: both models grokked", (Comparison("grokked (1) or not (0)", ">=", 1.0),),
          f"test accuracy ≥ {GROK_ACC} within MODADD_MAX_STEPS (ours)", _grokked, {"grokked (1) or not (0)": [0.0, 0.0]},
          paper="test accuracy ≥ 0.99", unit="model"),
    _rule("modadd_different_key_frequencies", "mod-add: the two cores use different key frequencies, shared no more than "
          "by two unrelated sets",
          (Comparison("Jaccard index of the key frequencies", "<=", 0, relative_to=f"its {JACCARD_LEVEL:.0%} percentile for two random sets", over=ONE),
           Comparison("Jaccard index of the key frequencies", "<", 1.0, over=ONE)),
          f"Jaccard index J of the frequency sets holding {FREQ_POWER:.0%} of the Fourier power of W_U·Q, against its "
          "exact distribution for two independent uniformly random sets of the same sizes from 1..⌊p/2⌋ "
          f"(hypergeometric): J < 1 and J ≤ its {JACCARD_LEVEL:.0%} percentile, i.e. the models share no more "
          "frequencies than unrelated models would (a shared algorithm gives J near 1); partly: J < 1 but above that "
          "percentile (different sets, yet more shared than chance) (ours; it explains the failed mod-add swaps above)",
          _key_frequencies, {"Jaccard index of the key frequencies": 1.0},
          partly=(Comparison("Jaccard index of the key frequencies", "<", 1.0, over=ONE),), paper="—", where=DIAGNOSIS),
    *(Rule("implication.merging", MERGING_CLAIM, MERGING_PAPER, MERGING_WHERE, OBSERVED,
           (Comparison("the aligned swap stitches and the unaligned one fails (1) or not (0), per task", ">=", 1.0),),
           MERGING_RULE, _merging(headline), {"the aligned swap stitches and the unaligned one fails (1) or not (0), per task": [0.0, 0.0],
                                              "tasks where it holds": 0},
           partly=(Comparison("tasks where it holds", ">=", 1, over=ONE),), mixed=NOT_REPRODUCED, unit="task",
           gap="plain:{gap}", headline=headline) for headline in (True, False)),
)
MODADD_NOT_TESTED = (("mod-add: the core-mapped swap carries A's computation into B", "modadd_core_swap_crossed"),
                     ("mod-add: a random subspace of the same rank does not carry it", "modadd_random_swap_fails"),
                     ("mod-add: the unmapped swap fails", "modadd_unmapped_swap_fails"))


def _gap(cfg: Params, key: str, res: Mapping[str, Any]) -> str | None:
    """The known gap ``key`` of this run: ``"plain:<key>"`` (the mod-add pair's), ``"stitch:<key>"`` (the same, with
    the measured key frequencies and map R² appended), ``"markov_plain:<key>"`` (the Markov seeds'), ``"markov:<key>"``
    (the same, with the measured agreements of the composed maps appended)."""
    table, name = key.split(":", 1)
    why = (MARKOV_GAPS if table.startswith("markov") else KNOWN_GAPS).reason(cfg, name) if name else None
    if why is None or table in ("plain", "markov_plain"):
        return why
    if table == "markov":
        tr = res["markov"]["transfer"]
        return f"{why} (composed full-rank agreement {tr['full']['crossed']['agree']:.4f}, core {tr['core']['crossed']['agree']:.4f})"
    a = res["modadd"]
    return (f"{why} (measured: key frequencies {a['key_freqs'][0]} vs {a['key_freqs'][1]} (Jaccard {a['freq_jaccard']:.2f}), "
            f"held-out map R² {a['map_r2']['core']:.2f})")


def build_claims(res: dict[str, Any], cfg: Params) -> Claims:
    """The chapter's claims (ours; the paper's ``modadd.invariant`` and ``implication.merging``), from the results dict
    alone, and those not tested (MODADD off)."""
    claims = judge_all((*SPECS, *paper_rows.SPECS), res, cfg, lambda key: _gap(cfg, key, res))
    not_tested: list[ClaimRow] = []
    if res["modadd"] is None:
        not_tested = [ClaimRow(c, PAPER, "—", "MODADD is off at this preset (training the two models takes minutes)",
                               where=WHERE, rule=WORKS_RULE if "carries" in c else FAILS_RULE, id=ID + name)
                      for c, name in MODADD_NOT_TESTED]
    claims.not_tested = not_tested + claims.not_tested
    return claims
