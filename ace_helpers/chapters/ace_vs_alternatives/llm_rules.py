"""Chapter 6's rules on the offline LLMs, as data: per model, ACE's 1-D core against the other methods (the paper's
``sva.one_dim``, combined over the models), and the paper's ``sva.scale_invariance`` over them.

Each rule of :data:`SPECS` is read by :func:`~ace_helpers.repro.rules.judge_all` from the stored LLM results
(:func:`~ace_helpers.chapters.ace_vs_alternatives.llm.run_llm`), so a stored ``results.json`` gives the same verdicts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ace_helpers.chapters.ace_vs_alternatives.llm import FLIP_MAX, KEEP_TOL, METHODS, REMOVE_TOL, rate_interval
from ace_helpers.llm.labels import model_slug
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import NOT_REPRODUCED, Claims
from ace_helpers.repro.rules import (
    EQUAL,
    EVERY,
    INTERVAL,
    ONE,
    Combine,
    Comparison,
    Measure,
    Measured,
    NotTested,
    Rule,
    Spec,
    judge_all,
    per_part,
)
from ace_helpers.repro.untested import ClaimRow

WHERE = "ours (beyond the paper)"
PAPER = (
    "not tested against other methods (the paper finds one necessary and sufficient axis for agreement "
    "in GPT-2 whose flip inverts the verb number, its subject–verb agreement figure, panel A; it compares no other method)"
)
NS_RULE = (
    f"accuracy of the margin's sign against the subject's number on the test prompts, edits at the last token "
    f"about the train mean: N&S = keep ≥ base − {KEEP_TOL} and remove ≤ 0.5 + {REMOVE_TOL} (ours; "
    "an accuracy, where chapter 5 uses AUCs)"
)
OBSERVED = "GPT-2 Small, Medium and Large (the paper); here the bundled offline LLMs, at chapter 5's chosen layer"

#: The paper claim the first per-model row tests (a 1-D core, necessary and sufficient), combined over models.
ONE_DIM = "sva.one_dim"
ONE_DIM_PAPER = "one causal axis (a 1-D core) for agreement in late layers of every model"
ONE_DIM_WHERE = "abstract; SVA figure, panel A"
ONE_DIM_CLAIM = "one causal axis: a 1-D core is necessary and sufficient in every model"
ONE_DIM_RULE = (
    f"at r = 1, keep ≥ base − {KEEP_TOL} and removal destroys agreement: |remove − 0.5| ≤ {{t1}} (as the "
    "paper states it; an accuracy far below 0.5 is agreement inverted, not destroyed); partly: N&S as the "
    f"method comparison reads it, remove ≤ 0.5 + {REMOVE_TOL}, inversion included (accuracies of the margin's "
    "sign against the subject's number, edits at the last token about the train mean)"
)

SCALE = "sva.scale_invariance"
SCALE_PAPER = "the core stays one-dimensional from GPT-2 Small to Large (6.6× parameters, 3× depth)"
SCALE_WHERE = "SVA section (GPT-2 Small, Medium, Large)"
SCALE_CLAIM = "the agreement core stays one-dimensional across model scale"
#: The scale span the claim needs: the paper's GPT-2 Small → Large, in parameters and in depth (12 → 36 layers).
SCALE_SPAN, SCALE_DEPTH = 6.6, 3.0
SCALE_RULE = (
    f"ACE's minimal N&S rank (at r = 1: keep ≥ base − {KEEP_TOL}, remove ≤ 0.5 + {REMOVE_TOL}) is 1 in every "
    f"model, and the models span at least {SCALE_SPAN}× in the parameters of their transformer blocks and "
    "{t1}× in depth (the paper's GPT-2 Small → Large); partly: 1-D in every model over the parameter span but a "
    "shorter depth span; our models come from three families and are quantised checkpoints, the paper's are "
    "GPT-2 in full precision"
)

#: The name part of each per-model claim's id (:func:`claim_ids`), in the order of :func:`claim_specs`.
CLAIM_NAMES = ("ns_at_rank1", "flip", "ns_smallest_rank", "pca_not_ns_at_rank1")


@dataclass(frozen=True)
class LlmRun:
    """What the rules read: the stored LLM results (``{model: section}``; an ``unavailable`` section did not run) and
    the models the run asked for."""

    sections: Mapping[str, Mapping[str, Any]]
    models: tuple[str, ...]
    #: The chapter's known gap of a key (``"llm_one_dim"``, ``"llm_scale_invariance"``), or None.
    gap: Callable[[str], str | None] = field(default=lambda key: None, compare=False)

    def ran(self) -> dict[str, Mapping[str, Any]]:
        """The models that ran, with their sections."""
        return {n: s for n, s in self.sections.items() if "unavailable" not in s}


def claim_specs(name: str) -> list[tuple[str, str]]:
    """(claim, rule) of each per-model claim for model ``name``, in :data:`CLAIM_NAMES` order (from :data:`SPECS`)."""
    m = Measured({}, context={"name": name})
    return [(r.claim.format(name=name), r.fill(r.prose, _placeholder(r, m))) for r in MODEL_SPECS]


def _placeholder(rule: Rule, m: Measured) -> Measured:
    """``m`` with every quantity ``rule``'s thresholds read set to 0 (to fill its texts without a run)."""
    return replace(m, quantities={t.relative_to: 0.0 for t in (*rule.tests, *rule.partly) if t.relative_to})


def claim_ids(name: str) -> list[str]:
    """The ids of model ``name``'s claims (:func:`claim_specs` order): the paper's ``sva.one_dim`` for the first
    (combined over models into one headline), ``ours.ace_vs_alternatives.llm_<model>_<claim>`` for the rest."""
    return [ONE_DIM, *(f"ours.ace_vs_alternatives.llm_{model_slug(name)}_{c}" for c in CLAIM_NAMES[1:])]


def per_model(skip_absent: bool) -> Callable[[Callable[..., Measured]], Measure]:
    """A rule's ``measure`` from ``fn(s)`` on one model's section ``s``: one measurement per model the run asked for,
    its ``key`` the model's id part and ``{name}`` its label; a model that did not run is not tested (left out where
    ``skip_absent``: the paper's row is listed once for all models)."""

    def wrap(fn: Callable[..., Measured]) -> Measure:
        @per_part(lambda run: ((model_slug(name), (run, name), {"name": name}) for name in run.models))
        @functools.wraps(fn)
        def measure(item: tuple[LlmRun, str], key: str, cfg: Params) -> Measured | NotTested | None:
            run, name = item
            if name in run.ran():
                return fn(run.ran()[name])
            if skip_absent:
                return None
            return NotTested(
                run.sections.get(name, {}).get("unavailable") or "LLM_MODELS does not list it at this preset (off at ci)"
            )

        return measure

    return wrap


def _ns(s: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
    others = {m: s["ns_rank"][m] for m in METHODS if m != "ace"}
    return others, min(float("inf") if v is None else v for v in others.values())


def _rank(r: int | None) -> float:
    return float("inf") if r is None else float(r)


@per_model(skip_absent=True)
def _one_dim(s):
    keep, remove = s["keep"]["ace"][0], s["remove"]["ace"][0]
    return Measured(
        {"ACE's minimal N&S rank": _rank(s["ns_rank"]["ace"]), "|ACE's removed accuracy − 0.5|": abs(remove - 0.5)},
        ours=[s["base_acc"], [keep, remove]],
    )


@per_model(skip_absent=False)
def _flip(s):
    flip = s["flip"]["ace"][0]
    return Measured(
        {"share of prompts keeping the right number after the flip": list(rate_interval(flip, s["n_test"]))},
        ours=[flip, s["flip_shift"]["ace"][0]],
        value=flip,
    )


@per_model(skip_absent=False)
def _smallest(s):
    others, best = _ns(s)
    ace = s["ns_rank"]["ace"]
    return Measured(
        {"ACE's minimal N&S rank − the best other method's": float("inf") if ace is None else ace - best},
        ours=[ace, others],
        value=[_rank(ace), best],
    )


@per_model(skip_absent=False)
def _pca(s):
    return Measured({"PCA's minimal N&S rank": _rank(s["ns_rank"]["pca"])}, ours=[s["keep"]["pca"][0], s["remove"]["pca"][0]])


def _scale(run: LlmRun, cfg: Params) -> Measured | NotTested | None:
    ran = run.ran()
    if not ran:
        return None  # no LLM ran (the ci preset): no row at all
    sized = {n: s for n, s in ran.items() if s.get("n_params")}
    if len(sized) < 2:
        return NotTested(f"{len(sized)} model with a parameter count ran: a scale comparison needs two or more")
    size = {n: s.get("n_params_blocks") or s["n_params"] for n, s in sized.items()}
    by_size = sorted(sized, key=lambda n: size[n])
    span = size[by_size[-1]] / size[by_size[0]]
    depth = max(sized[n]["n_layers"] for n in by_size) / min(sized[n]["n_layers"] for n in by_size)
    if span < SCALE_SPAN:
        return NotTested(
            f"the models span {span:.1f}× in parameters ({by_size[0]} to {by_size[-1]}); the claim compares {SCALE_SPAN}× or more"
        )
    ranks = [_rank(sized[n]["ns_rank"]["ace"]) for n in by_size]
    ours = ", ".join(
        f"{n} ({size[n] / 1e6:.0f}M, {sized[n]['n_layers']} layers): rank {sized[n]['ns_rank']['ace']}" for n in by_size
    )
    why = [f"our models span {depth:.1f}× in depth, not the paper's {SCALE_DEPTH:g}× (GPT-2 Small → Large); no GPT-2 ran"]
    if any(r != 1 for r in ranks):
        why = [f"ACE's core is not 1-D in {', '.join(n for n, r in zip(by_size, ranks) if r != 1)}"]
    return Measured(
        {"ACE's minimal N&S rank per model": ranks, "depth span": depth},
        value=[span, depth],
        per_seed=[float(sized[n]["ns_rank"]["ace"] or 0) for n in by_size],
        ours=f"minimal N&S rank of ACE per model, {ours}; span {span:.1f}× in block parameters, {depth:.1f}× in depth",
        context={"why": why[0]},
    )


def _one_dim_cause(row: Any, parts: list[Any]) -> None:
    """The measured cause of a combined ``sva.one_dim`` row that does not hold: removal inverts agreement."""
    removed = [p.value[1][1] for p in parts]
    if not row.passed and removed and max(removed) < 0.5 - REMOVE_TOL:
        row.cause = (
            f"at r = 1 removal inverts agreement (accuracy {min(removed):.2f}–{max(removed):.2f}) instead of "
            "destroying it, in our four models"
        )
        row.cause_class = "ours"


MODEL_SPECS: tuple[Rule, ...] = (
    Rule(
        ONE_DIM,
        "{name}: ACE's 1-D core is necessary and sufficient at r = 1",
        ONE_DIM_PAPER,
        ONE_DIM_WHERE,
        OBSERVED,
        (
            Comparison("ACE's minimal N&S rank", EQUAL, 1, over=ONE),
            Comparison("|ACE's removed accuracy − 0.5|", "<=", REMOVE_TOL, over=ONE),
        ),
        ONE_DIM_RULE,
        _one_dim,
        {"ACE's minimal N&S rank": 3.0, "|ACE's removed accuracy − 0.5|": 0.4},
        partly=(Comparison("ACE's minimal N&S rank", EQUAL, 1, over=ONE),),
        gap="llm_one_dim",
    ),
    Rule(
        "ours.ace_vs_alternatives.llm_{key}_flip",
        "{name}: flipping ACE's 1-D core flips the verb number",
        PAPER,
        WHERE,
        OBSERVED,
        (Comparison("share of prompts keeping the right number after the flip", "<=", FLIP_MAX, over=INTERVAL),),
        "share of test prompts whose flipped margin still has the right sign ≤ {t0} (ours); inconclusive when its "
        "percentile-bootstrap interval over the test prompts straddles it",
        _flip,
        {"share of prompts keeping the right number after the flip": [0.5, 0.7]},
    ),
    Rule(
        "ours.ace_vs_alternatives.llm_{key}_ns_smallest_rank",
        "{name}: ACE reaches N&S at the smallest rank of all methods (ties count)",
        PAPER,
        WHERE,
        OBSERVED,
        (Comparison("ACE's minimal N&S rank − the best other method's", "<=", 0, over=ONE),),
        NS_RULE + "; ties count as a win",
        _smallest,
        {"ACE's minimal N&S rank − the best other method's": 2.0},
    ),
    Rule(
        "ours.ace_vs_alternatives.llm_{key}_pca_not_ns_at_rank1",
        "{name}: activity alone (PCA) is not N&S at r = 1",
        PAPER,
        WHERE,
        OBSERVED,
        (Comparison("PCA's minimal N&S rank", ">=", 2, over=ONE),),
        NS_RULE,
        _pca,
        {"PCA's minimal N&S rank": 1.0},
    ),
)

SPECS: tuple[Spec, ...] = (
    *MODEL_SPECS,
    Rule(
        SCALE,
        SCALE_CLAIM,
        SCALE_PAPER,
        SCALE_WHERE,
        OBSERVED,
        (
            Comparison("ACE's minimal N&S rank per model", EQUAL, 1, over=EVERY),
            Comparison("depth span", ">=", SCALE_DEPTH, over=ONE),
        ),
        SCALE_RULE,
        _scale,
        {"ACE's minimal N&S rank per model": [2.0, 3.0], "depth span": 1.0},
        partly=(Comparison("ACE's minimal N&S rank per model", EQUAL, 1, over=EVERY),),
        mixed=NOT_REPRODUCED,
        unit="model",
        gap="llm_scale_invariance",
        cause="{why}",
        cause_class="as-stated",
    ),
    Combine(
        ONE_DIM,
        ONE_DIM_CLAIM,
        ONE_DIM_PAPER,
        ONE_DIM_WHERE,
        "the per-model rows above (ACE at r = 1: keep ≥ base − "
        f"{KEEP_TOL}, |remove − 0.5| ≤ {REMOVE_TOL}; partly: remove ≤ 0.5 + {REMOVE_TOL}) hold in every model; partly: in "
        "some, or removal inverts agreement instead of destroying it",
        "",
        min_parts=1,
        after=_one_dim_cause,
    ),
)


def claims(
    sections: Mapping[str, Any] | None, models: Sequence[str], cfg: Params, gap: Callable[[str], str | None] = lambda key: None
) -> Claims:
    """The LLM rules of :data:`SPECS` judged on the stored ``sections`` for ``models`` (those that did not run are not
    tested); ``sva.one_dim`` not tested when no model ran at all."""
    judged = judge_all(SPECS, LlmRun(sections or {}, tuple(models)), cfg, gap)
    if models and not any(r.id == ONE_DIM for r in judged.rows):
        judged.not_tested.append(
            ClaimRow(
                ONE_DIM_CLAIM, ONE_DIM_PAPER, "—", "no model ran at this preset", where=ONE_DIM_WHERE, rule=NS_RULE, id=ONE_DIM
            )
        )
    return judged
