"""Chapter 0's claims as data: ACE on a planted system whose core is known.

:data:`SPECS` is the chapter's table of rules (:class:`~ace_helpers.repro.rules.Rule`), read by one evaluator
(:func:`~ace_helpers.repro.rules.judge_all`).  Every rule is ours: the planted test with known ground truth is not in
the paper, which states the method's promise (abstract: a core keeps the directions that are both active and
relevant, and is necessary and sufficient).  Each ``measure`` reads only the flat results dict, so a stored
``results.json`` gives the same verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import EQUAL, ONE, Comparison, Measured, Rule, Spec, judge_all

OURS = "ours (beyond the paper)"
OBSERVED = "a planted system (ours): exactly uncorrelated sources in a core, an active-only and a relevant-only block"
ID = "ours.ace_planted_system."


def _rank(res: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured({"ACE rank": res["ace_rank"], "R_CORE": cfg["R_CORE"]}, context={"energy": f"{cfg['ENERGY']:g}"})


def _overlap(method: str):
    def measure(res: Mapping[str, Any], cfg: Params) -> Measured:
        return Measured({"overlap with the core": res["overlap"][method]["core"]})

    measure.__qualname__ = f"overlap[{method}]"
    return measure


def _keep_ace(res: Mapping[str, Any], cfg: Params) -> Measured:
    keep, base = res["acc_keep"]["ace"], res["acc_base"]
    return Measured({"core-only / readout accuracy": keep / base}, ours=keep, context={"base": f"{base:.4f}"})


def _accuracy(which: str, method: str):
    def measure(res: Mapping[str, Any], cfg: Params) -> Measured:
        return Measured(
            {"accuracy": res[which][method], "chance": res["chance_acc"]},
            context={"chance": f"{res['chance_acc']:g}", "classes": round(1 / res["chance_acc"])},
        )

    measure.__qualname__ = f"accuracy[{which}, {method}]"
    return measure


def _rule(key: str, claim: str, paper: str, test: Comparison, prose: str, measure: Any, wrong: Mapping[str, Any]) -> Rule:
    return Rule(ID + key, claim, paper, OURS, OBSERVED, (test,), prose, measure, wrong)


SPECS: tuple[Spec, ...] = (
    _rule(
        "rank",
        "ACE rank = planted core dimension",
        "—",
        Comparison("ACE rank", EQUAL, 0, relative_to="R_CORE", over=ONE),
        "the energy rule's rank (cumulative balanced energy ≥ ENERGY = {energy}) equals R_CORE = {t0} exactly",
        _rank,
        {"ACE rank": 5},
    ),
    _rule(
        "overlap",
        "ACE overlap with the core",
        "ACE keeps the directions that are both active and relevant (abstract)",
        Comparison("overlap with the core", ">=", 0.99, over=ONE),
        "projector overlap with the planted core ≥ {t0} (1: the same subspace; the sources are exactly uncorrelated, so "
        "the planted blocks are the sample's own ground truth)",
        _overlap("ace"),
        {"overlap with the core": 0.5},
    ),
    _rule(
        "pca_misses",
        "PCA misses the core",
        "—",
        Comparison("overlap with the core", "<=", 0.1, over=ONE),
        "overlap of the rank-matched top PCA directions with the core ≤ {t0} (activity alone finds the active-only block)",
        _overlap("pca"),
        {"overlap with the core": 0.9},
    ),
    _rule(
        "jacobian_misses",
        "Jacobian directions miss the core",
        "—",
        Comparison("overlap with the core", "<=", 0.1, over=ONE),
        "overlap of the rank-matched top Jacobian (readout) directions with the core ≤ {t0} (relevance alone finds the "
        "relevant-only block)",
        _overlap("jacobian"),
        {"overlap with the core": 0.9},
    ),
    _rule(
        "sufficient",
        "ACE core sufficient",
        "keeping only the core keeps performance (abstract)",
        Comparison("core-only / readout accuracy", ">=", 0.95, over=ONE),
        "core-only accuracy ≥ {t0} × the readout's own ({base}); ours: the dropped noise and relevant-only directions "
        "carry a little of the readout",
        _keep_ace,
        {"core-only / readout accuracy": 0.3},
    ),
    _rule(
        "necessary",
        "ACE core necessary",
        "removing the core drops performance to chance (abstract)",
        Comparison("accuracy", "<=", 0.05, relative_to="chance", over=ONE),
        "core-removed accuracy ≤ chance ({chance} = 1/{classes} classes) + {d0} (ours)",
        _accuracy("acc_remove", "ace"),
        {"accuracy": 0.9},
    ),
    _rule(
        "pca_not_sufficient",
        "the PCA subspace is not sufficient",
        "—",
        Comparison("accuracy", "<=", 0.05, relative_to="chance", over=ONE),
        "keeping only the rank-matched PCA subspace leaves accuracy ≤ chance + {d0}: high variance alone does not carry the task",
        _accuracy("acc_keep", "pca"),
        {"accuracy": 0.9},
    ),
)


def build_claims(res: Mapping[str, Any], cfg: Params) -> Claims:
    """The chapter's claims (the same thresholds at every preset): ACE finds the planted core and it is sufficient
    and necessary; the rank-matched PCA and Jacobian subspaces find the distractor blocks, and the PCA subspace is not
    sufficient.  Every rule of :data:`SPECS`, judged on ``res`` (the results dict of
    :func:`ace_helpers.chapters.ace_planted_system.run`)."""
    return judge_all(SPECS, res, cfg, lambda key: None)
