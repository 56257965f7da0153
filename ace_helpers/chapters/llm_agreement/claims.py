"""Chapter 5 claims: the paper's subject–verb agreement results, our controls and diagnoses, the known gaps.

:data:`SPECS` is the chapter's table of rules: the per-model rules (:data:`~.model_rules.MODEL_SPECS`), one headline
row over the models for each paper claim checked once per model (:data:`COMBINED`), the flip demo's tests over the
models (:data:`~.flip_demo.RULE_SPEC`) and the per-pair alignment rules (:data:`PAIR_SPECS`).  :func:`flat_claims`
judges them on the flat results dict (:func:`~.pipeline.flat_results`), so a stored ``results.json`` gives the same
verdicts.  A weaker form that still means something is reported as ``partly``; controls are ``ours.`` rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ace_helpers.chapters.llm_agreement.combined import combined_cause
from ace_helpers.chapters.llm_agreement.flip_demo import DEMO_P, RULE_SPEC as FLIP_DEMO  # noqa: F401 - DEMO_P re-exported
from ace_helpers.chapters.llm_agreement.gaps import GAP_CAUSES, KNOWN_GAPS  # noqa: F401 - re-exported
from ace_helpers.chapters.llm_agreement.model_rules import (
    ID,
    MODEL_SPECS,
    P_MAX,
    PANEL,
    SWEEP_PAPER,
    ModelRun,
    demo_shifts,
    fmt,
    fmt_p,
)
from ace_helpers.llm.labels import model_labels, model_slug
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import ONE, Combine, Comparison, Measure, Measured, Rule, Spec, judge_all, per_part

ALIGN_PAPER = "sign-aligned Spearman correlation of the per-prompt core coordinates of two models: up to 0.93"
ALIGN_WHERE = "Table 6 (subject–verb agreement core alignment)"
OBSERVED_PAIRS = "pairs of GPT-2 Small, Medium and Large, on the 600 shared test prompts"


def _pairs(run: ModelRun) -> list[str]:
    """The pairs ``"a~b"`` of the run's models that the results hold, in the models' order (a stored file sorts its keys)."""
    stored = run.results.get("pairwise_spearman", {})
    return [f"{a}~{b}" for i, a in enumerate(run.models) for b in run.models[i + 1 :] if f"{a}~{b}" in stored]


def per_pair(fn: Callable[[Callable[[str], Any]], Measured]) -> Measure:
    """A rule's ``measure`` from ``fn(get)`` for one pair (``get(field)`` reads ``pairwise_<field>[pair]``): one
    measurement per pair, its ``key`` the pair's id part and ``{a}``, ``{b}`` its models."""

    @per_part(lambda run: ((model_slug(pair), (run, pair), dict(zip("ab", pair.split("~")))) for pair in _pairs(run)))
    @functools.wraps(fn)
    def measure(item: tuple[ModelRun, str], key: str, cfg: Params) -> Measured:
        run, pair = item
        return fn(lambda f: run.results[f"pairwise_{f}"].get(pair))

    return measure


def _below(p: Any) -> float:
    """A p-value for a ``<`` test; a missing one (None) fails it."""
    return float("inf") if p is None else float(p)


@per_pair
def _alignment(get):
    rho, null, p = get("spearman"), get("label_null"), get("p_label_preserving")
    return Measured({"label-preserving p": _below(p)}, value=[rho, p],
                    ours=f"ρ {fmt(rho)} (label-only null median {fmt(null)}, p {fmt_p(p)}; random-pairing p {fmt_p(get('p_value'))})")


@per_pair
def _alignment_within(get):
    ps, pp = _below(get("p_singular")), _below(get("p_plural"))
    return Measured({"singular p": ps, "plural p": pp, "the smaller p": min(ps, pp)},
                    value=[get("spearman_singular"), get("spearman_plural")],
                    ours=f"singular ρ {fmt(get('spearman_singular'))} (p {fmt_p(get('p_singular'))}), plural ρ "
                    f"{fmt(get('spearman_plural'))} (p {fmt_p(get('p_plural'))})")


PAIR_SPECS: tuple[Rule, ...] = (
    Rule("sva.alignment", "{a}–{b}: core coordinates aligned across models (pooled sign-aligned Spearman)", ALIGN_PAPER,
         ALIGN_WHERE, OBSERVED_PAIRS, (Comparison("label-preserving p", "<", P_MAX, over=ONE),),
         "p < {t0} against a label-preserving null (pairings within each number class: its median is what the two "
         "coordinates' separation of the labels alone gives; random pairings ignore it); the paper's 0.93 is its best "
         "pair of models, so no value is required", _alignment, {"label-preserving p": 0.5}),
    Rule(ID + "{key}_alignment_within_class", "{a}–{b}: aligned within each number class", ALIGN_PAPER,
         f"{ALIGN_WHERE} (our within-class reading)", OBSERVED_PAIRS,
         (Comparison("singular p", "<", P_MAX, over=ONE), Comparison("plural p", "<", P_MAX, over=ONE)),
         "in each class, Spearman in the pooled alignment's direction with a one-sided within-class permutation p < {t0}; "
         "partly: in one class", _alignment_within, {"singular p": 0.5, "plural p": 0.5, "the smaller p": 0.5},
         partly=(Comparison("the smaller p", "<", P_MAX, over=ONE),)),
)


def _combined(claim_id: str, claim: str, paper: str, where: str, unit: str) -> Combine:
    return Combine(claim_id, claim, paper, where, f"the per-{unit[:-1]} rows' rule holds in every one of the {unit}; partly: "
                   "in some, or its weaker form in every one; inconclusive: none fails it but some cannot tell", "", unit=unit,
                   after=lambda row, parts: combined_cause(row, parts, unit))


#: The paper claims checked once per model (or pair of models): one headline row over them each.
COMBINED: tuple[Combine, ...] = (
    _combined("sva.keep", "keeping only the core keeps agreement, in every model", SWEEP_PAPER["keep"],
              f"abstract; {PANEL}, panel A", "models"),
    _combined("sva.remove", "removing the core destroys agreement, in every model", SWEEP_PAPER["remove"],
              f"abstract; {PANEL}, panel A", "models"),
    _combined("sva.flip", "flipping the core inverts agreement, in every model", SWEEP_PAPER["flip"],
              f"abstract; {PANEL}, panel A", "models"),
    _combined("sva.knob", "the knob: margin affine in the core coordinate, in every model", SWEEP_PAPER["knob"],
              f"{PANEL}, panel B", "models"),
    _combined("sva.generation", "steered generation changes verb number (official calibration), in every model",
              SWEEP_PAPER["generation"], "abstract", "models"),
)
COMBINED_PAIRS = _combined("sva.alignment", "core coordinates aligned across every pair of models", ALIGN_PAPER,
                           ALIGN_WHERE, "model pairs")

SPECS: tuple[Spec, ...] = (*MODEL_SPECS, *COMBINED, FLIP_DEMO, *PAIR_SPECS, COMBINED_PAIRS)


def _gap(cfg: Params, key: str, results: Mapping[str, Any], preset_models: bool) -> str | None:
    """The known gap ``key`` (``"<model>:<claim>"``, or ``"demo_tests"`` over the preset's own models only) of this run,
    its ``{field}`` placeholders filled from the model's results (``<model>.<field>``; ``{stay}`` / ``{shifts}``: the
    demo prompts the flip leaves on their own number, and their margin shifts)."""
    if ":" not in key:
        return KNOWN_GAPS.reason(cfg, key) if preset_models else None
    why = KNOWN_GAPS.reason(cfg, key)
    if why is None:
        return None
    name = key.rsplit(":", 1)[0]

    def get(field: str) -> Any:
        value = results.get(f"{name}.{field}")
        return fmt(value) if isinstance(value, float) else str(value)

    class Fields(dict):
        def __missing__(self, field: str) -> str:
            return get(field)

    return why.format_map(Fields(_demo_stay(results, name)))


def _demo_stay(results: Mapping[str, Any], name: str) -> dict[str, str]:
    share, texts = results.get(f"{name}.demo_share_flipped") or [], results.get("demo_prompts") or []
    shifts = demo_shifts(results, name) if share else []
    stay = [i for i, v in enumerate(share) if v >= 0.5]
    return {"stay": ", ".join(f"“{texts[i]}”" if i < len(texts) else f"{i + 1}" for i in stay) or "none",
            "shifts": ", ".join(f"{shifts[i]:+.1f}" for i in stay if i < len(shifts)) or "none"}  # fmt: skip


def flat_claims(results: Mapping[str, Any], cfg: Params, models: Sequence[str] | None = None) -> Claims:
    """The chapter's claims from its flat results (:func:`~.pipeline.flat_results`, or a stored ``results.json``):
    every rule of :data:`SPECS` judged on ``models`` (default the labels of ``cfg.MODELS``, in that order)."""
    labels = model_labels(list(cfg.MODELS))  # results name models by their short labels
    models = list(labels if models is None else models)
    return judge_all(SPECS, ModelRun(results, tuple(models)), cfg, lambda key: _gap(cfg, key, results, models == labels))
