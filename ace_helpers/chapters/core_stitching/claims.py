"""Chapter 7's claims, from the results dict alone (so a stored results.json checks the same): when a stitch works, when it fails, the rules, and the paper's merging implication read on activations."""

from __future__ import annotations

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
from ace_helpers.chapters.toy_models.knobs import MEMORY_LIMIT, PRESETS, check, memory_estimate  # noqa: F401
from ace_helpers.chapters.toy_models.markov_jobs import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.toy_models.views import FREQ_POWER
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import ClaimRow, Claims, not_tested_table  # noqa: F401 - for the notebook


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


def markov_claims(claims: Claims, m: dict[str, Any], cfg: Params) -> None:
    """Claims on the Markov seeds (pair 0 → 1, held-out pair 0 → 2)."""
    base, sw, fl = m["base_acc"][1], m["swap"], m["floor"]["agree"]
    line = halfway(fl)
    r_core = m["core_ranks"][1]
    claims.check("Markov: the core-mapped swap carries A's computation into B (B on another input)", PAPER,
                 _pair(sw["core"]["crossed"]), _works(sw["core"]["crossed"], base), where=WHERE, rule=WORKS_RULE,
                 id=ID + "markov_core_swap_crossed", short=f"crossed core swap: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    claims.check("Markov: the core-mapped swap keeps B's accuracy (same input)", PAPER, _pair(sw["core"]["same"]),
                 _works(sw["core"]["same"], base), where=WHERE, rule=WORKS_RULE, id=ID + "markov_core_swap_same",
                 short=f"same-input core swap: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    claims.check("Markov: a random subspace of the same rank does not carry it", PAPER, _pair(sw["random"]["crossed"]),
                 sw["random"]["crossed"]["agree"] <= line, where=WHERE, rule=FAILS_RULE + f"; floor {fl:.3f}",
                 id=ID + "markov_random_swap_fails", value=sw["random"]["crossed"]["agree"], threshold=line, op="<=",
                 short="crossed random swap: agree ≤ halfway from the no-swap floor to 1")
    unm = [sw["unmapped"][g]["agree"] for g in REGIMES]
    claims.check("Markov: the unmapped swap (A's raw core coordinates) fails", PAPER, unm, max(unm) <= line,
                 where=WHERE, rule=FAILS_RULE + ", on the same and on another input", id=ID + "markov_unmapped_swap_fails",
                 threshold=line, op="<=", short="unmapped swap, both regimes: agree ≤ halfway from the floor to 1")
    claims.check("Markov: a full-rank map of the whole activation stitches too (control)", PAPER,
                 _pair(sw["full"]["crossed"]), _works(sw["full"]["crossed"], base), where=WHERE, rule=WORKS_RULE,
                 id=ID + "markov_full_map_control", short=f"crossed full-rank swap: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    first = first_working_rank(m, base)
    claims.check("Markov: the core swap starts to work exactly at the core rank", f"{PAPER}; core rank n − 1",
                 [first, r_core], first == r_core, where=WHERE,
                 rule="smallest swept rank whose crossed core swap works (rule above) = B's ACE rank (ours)",
                 id=ID + "markov_works_from_core_rank", short="first working rank of the crossed core swap = B's core rank")
    tr, lineh = m["transfer"], halfway(m["floor_heldout"]["agree"])
    claims.check("Markov: composed core maps stitch the held-out seed pair 0 → 2", PAPER, _pair(tr["core"]["crossed"]),
                 _works(tr["core"]["crossed"], m["base_acc"][2]), where=WHERE,
                 rule=WORKS_RULE + "; maps fitted on pairs 0 → 1 and 1 → 2 only", id=ID + "markov_composed_core_transfers",
                 short=f"held-out pair, composed core maps: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    claims.check("Markov: composed random-subspace maps do not", PAPER, _pair(tr["random"]["crossed"]),
                 tr["random"]["crossed"]["agree"] <= lineh, where=WHERE, rule=FAILS_RULE,
                 id=ID + "markov_composed_random_fails", value=tr["random"]["crossed"]["agree"], threshold=lineh, op="<=",
                 short="held-out pair, composed random maps: agree ≤ halfway from the floor to 1")
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
                 partly=core_ok and not full_fails, id=ID + "markov_transfer_only_through_core",
                 short="held-out pair: composed core maps stitch, composed random and full-rank maps fail")
    claims.check("Markov: on the same input the random swap leaves B intact (why the crossed test is needed)",
                 "—", sw["random"]["same"]["agree"], sw["random"]["same"]["agree"] >= 0.95, where=DIAGNOSIS,
                 rule="agreement ≥ 0.95: a random rank-r subspace misses B's core (ours)",
                 id=ID + "markov_random_same_input_intact", threshold=0.95, op=">=",
                 short="same-input random swap: agree ≥ 0.95")


def modadd_claims(claims: Claims, a: dict[str, Any], cfg: Params) -> None:
    """Claims on the two grokked mod-add models (pair 0 → 1)."""
    base, sw, line = a["base_acc"][1], a["swap"], halfway(a["floor"]["agree"])
    measured = (f"measured: key frequencies {a['key_freqs'][0]} vs {a['key_freqs'][1]} (Jaccard "
                f"{a['freq_jaccard']:.2f}), held-out map R² {a['map_r2']['core']:.2f}")
    gap = lambda key: (None if (why := KNOWN_GAPS.reason(cfg, key)) is None else f"{why} ({measured})")  # noqa: E731
    grokked = [g is not None for g in a["grok_step"]]
    claims.check("mod-add: both models grokked", "test accuracy ≥ 0.99", [a["grok_step"], a["base_acc"]], all(grokked),
                 where=WHERE, rule=f"test accuracy ≥ {GROK_ACC} within MODADD_MAX_STEPS (ours)", id=ID + "modadd_grokked",
                 value=a["base_acc"], per_seed=[float(g) for g in grokked], threshold=1.0, op=">=",
                 short=f"every model: test accuracy ≥ {GROK_ACC} within MODADD_MAX_STEPS (per model: 1 grokked, 0 not)")
    claims.check("mod-add: the core-mapped swap carries A's computation into B (B on another input)", PAPER,
                 _pair(sw["core"]["crossed"]), _works(sw["core"]["crossed"], base), gap("modadd_core"),
                 where=WHERE, rule=WORKS_RULE, id=ID + "modadd_core_swap_crossed",
                 short=f"crossed core swap: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    claims.check("mod-add: the core-mapped swap keeps B's accuracy (same input)", PAPER, _pair(sw["core"]["same"]),
                 _works(sw["core"]["same"], base), gap("modadd_core"), where=WHERE, rule=WORKS_RULE,
                 id=ID + "modadd_core_swap_same", short=f"same-input core swap: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    claims.check("mod-add: a random subspace of the same rank does not carry it", PAPER, _pair(sw["random"]["crossed"]),
                 sw["random"]["crossed"]["agree"] <= line, where=WHERE, rule=FAILS_RULE, id=ID + "modadd_random_swap_fails",
                 value=sw["random"]["crossed"]["agree"], threshold=line, op="<=",
                 short="crossed random swap: agree ≤ halfway from the no-swap floor to 1")
    unm = [sw["unmapped"][g]["agree"] for g in REGIMES]
    claims.check("mod-add: the unmapped swap fails", PAPER, unm, max(unm) <= line, where=WHERE,
                 rule=FAILS_RULE + ", on the same and on another input", id=ID + "modadd_unmapped_swap_fails",
                 threshold=line, op="<=", short="unmapped swap, both regimes: agree ≤ halfway from the floor to 1")
    claims.check("mod-add: a full-rank map of the whole activation stitches (control)", PAPER,
                 _pair(sw["full"]["crossed"]), _works(sw["full"]["crossed"], base), gap("modadd_full"),
                 where=WHERE, rule=WORKS_RULE, id=ID + "modadd_full_map_control",
                 short=f"crossed full-rank swap: acc ≥ B's − {TOLERANCE}, agree ≥ {AGREE_MIN}")
    jac = a["freq_jaccard"]
    rand = jaccard_baseline(a["key_freqs"], a["p"], jac)
    claims.check("mod-add: the two cores use different key frequencies, shared no more than by two unrelated sets", "—",
                 f"{a['key_freqs'][0]} vs {a['key_freqs'][1]}: Jaccard {jac:.3f}; two random sets of these sizes from "
                 f"1..{a['p'] // 2}: mean {rand['mean']:.3f}, 5th–95th percentile {rand['q05']:.3f}–{rand['q95']:.3f}, "
                 f"P(J ≥ ours) = {rand['p_shared']:.3f}", jac < 1.0 and jac <= rand["q95"], where=DIAGNOSIS,
                 rule=f"Jaccard index J of the frequency sets holding {FREQ_POWER:.0%} of the Fourier power of W_U·Q, "
                      f"against its exact distribution for two independent uniformly random sets of the same sizes from "
                      f"1..⌊p/2⌋ (hypergeometric): J < 1 and J ≤ its {JACCARD_LEVEL:.0%} percentile, i.e. the models share "
                      "no more frequencies than unrelated models would (a shared algorithm gives J near 1); partly: J < 1 "
                      "but above that percentile (different sets, yet more shared than chance) (ours; it explains the "
                      "failed mod-add swaps above)",
                 partly=jac < 1.0, id=ID + "modadd_different_key_frequencies", value=jac, threshold=rand["q95"], op="<=",
                 short=f"key-frequency Jaccard < 1 and ≤ the {JACCARD_LEVEL:.0%} percentile of two random sets of the same sizes")


def merging_claim(claims: Claims, res: dict[str, Any], cfg: Params) -> None:
    """The paper's merging implication, read on the stitching swaps: per task that ran, aligned cores stitch, unaligned
    ones do not.  Evidence beside the merging paths' headline (:func:`paper_rows.merging_rows`); the headline only
    for a stored run that has no merging paths."""
    held, parts = [], []
    for task in ("markov", "modadd"):
        s = res.get(task)
        if s is None:
            continue
        sw, line = s["swap"], halfway(s["floor"]["agree"])
        unaligned = max(sw["unmapped"][g]["agree"] for g in REGIMES)
        held.append(_works(sw["core"]["crossed"], s["base_acc"][1]) and unaligned <= line)
        parts.append(f"{task}: {'holds' if held[-1] else 'fails'} (aligned {sw['core']['crossed']['agree']:.3f}, "
                     f"unaligned {unaligned:.3f})")
    gap = KNOWN_GAPS.reason(cfg, "modadd_core") if len(held) > 1 and not held[1] else None
    claims.check("stitching: aligning the cores lets one model run on another's core coordinates, where the unaligned "
                 "coordinates do not (per task)", MERGING_PAPER, "; ".join(parts), all(held), gap, where=MERGING_WHERE,
                 rule=f"tested on activations, not on weights: in every task run, the core-mapped swap (A's core coordinates "
                      f"carried into B's core by a fitted linear map) works with B on another input (accuracy ≥ B's own − "
                      f"{TOLERANCE}, agreement with B's own predictions ≥ {AGREE_MIN}) while "
                      "A's unmapped core coordinates fail (agreement ≤ halfway from the no-swap floor to 1); naive weight "
                      "interpolation itself is not tested; partly: it holds in some tasks",
                 partly=any(held), id="implication.merging", per_seed=[float(h) for h in held],
                 short="every task: the aligned-core swap stitches, the unaligned one fails",
                 headline=not any("merging" in (res.get(t) or {}) for t in ("markov", "modadd")))


MODADD_NOT_TESTED = (("mod-add: the core-mapped swap carries A's computation into B", "modadd_core_swap_crossed"),
                     ("mod-add: a random subspace of the same rank does not carry it", "modadd_random_swap_fails"),
                     ("mod-add: the unmapped swap fails", "modadd_unmapped_swap_fails"))


def build_claims(res: dict[str, Any], cfg: Params) -> Claims:
    """The chapter's claims (ours; the paper's ``modadd.invariant`` and ``implication.merging``), from the results dict
    alone, and those not tested (MODADD off)."""
    claims = Claims()
    markov_claims(claims, res["markov"], cfg)
    not_tested: list[ClaimRow] = []
    if res["modadd"] is not None:
        modadd_claims(claims, res["modadd"], cfg)
    else:
        not_tested = [ClaimRow(c, PAPER, "—", "MODADD is off at this preset (training the two models takes minutes)",
                               where=WHERE, rule=WORKS_RULE if "carries" in c else FAILS_RULE, id=ID + name)
                      for c, name in MODADD_NOT_TESTED]
    merging_claim(claims, res, cfg)
    not_tested += paper_rows.invariance_rows(claims, res, cfg)
    paper_rows.merging_rows(claims, res, cfg)
    claims.not_tested = not_tested
    return claims
