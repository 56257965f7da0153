"""Chapter 5's flip-demo significance (paper id ``sva.flip_demo_tests``): results entries, the claim row, a table.

The statistics are :mod:`ace_helpers.llm.agreement_demo`'s: per model, paired Wilcoxon signed-rank tests of
the six prompts' scores log(P(correct number)/max of the four) between clean (``base``), core removed
and core flipped, Fisher-combined over the chapter's models, for Base vs Removed, Base vs Flipped and
Removed vs Flipped. The claim is judged on the one-sided tests (the first condition of each pair
scores higher: removal lowers the score, the flip lowers it below removal); the code release's
two-sided tests are stored and shown beside them.

``results.json`` keys written by :func:`demo_test_entries` (``<m>`` a model, ``<cmp>`` one of
:data:`~ace_helpers.llm.agreement_demo.COMPARISON_KEYS`): ``<m>.demo_score_<cond>`` (per prompt, ``cond`` in
base, removed, flipped), ``<m>.demo_p_<cmp>`` (one-sided), ``<m>.demo_p_two_sided_<cmp>``,
``demo_fisher_p_<cmp>`` (one-sided, Fisher-combined over the models) and ``demo_fisher_p_two_sided_<cmp>``
(None when no model ran the demo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ace_helpers.chapters.llm_agreement.combined import ModelRun
from ace_helpers.llm.agreement_demo import COMPARISON_KEYS, COMPARISONS, CONDITIONS, combined_demo_tests, comparison_key
from ace_helpers.repro.report import NOT_REPRODUCED, Claims
from ace_helpers.repro.rules import ONE, Comparison, Measured, Rule, judge_all
from ace_helpers.repro.tables import markdown_table

#: Each of the three Fisher-combined one-sided p-values must be below this.
DEMO_P = 0.05
#: How the comparisons read in the claim: the first condition scores higher than the second.
DIRECTION = {comparison_key(a, b): f"{a} > {b}" for a, b in COMPARISONS}

PAPER = (
    "Base vs Removed, Base vs Flipped and Removed vs Flipped differ: paired Wilcoxon tests per model on the score "
    "log(P(correct number)/max of P(is/are/was/were)) of six prompts, Fisher-combined p-values (values not given)"
)
WHERE = "SVA figure, panel C; the tests from code release joshseth/cores (the SVA figure script, paired_wilcoxon)"
RULE = (f"each of the three Fisher-combined p-values < {DEMO_P}, one-sided in the claim's direction: base > removed "
        "(removal lowers the score), base > flipped and removed > flipped (the flip lowers it below removal); per model a "
        "paired Wilcoxon signed-rank test over the six demo prompts (scipy's, exact without ties), combined by Fisher's "
        "method over the chapter's models. The code release runs scipy's default two-sided test (shown beside ours); one-sided because the claim has a "
        "direction, and a two-sided Fisher combination would count models that move the wrong way. With six prompts one "
        "model's smallest one-sided p is 1/64 ≈ 0.016 (two-sided 1/32). Partly: one or two of the three")  # fmt: skip


def demo_test_entries(scores: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, Any]:
    """The flip-demo test entries of ``results.json`` (keys: the module docstring) from each model's scores.

    ``scores``: model -> condition (base, removed, flipped) -> (6,) scores of the demo prompts (models
    without the demo left out). With no model, the combined entries are None.
    """
    out: dict[str, Any] = {}
    if not scores:
        return {f"demo_fisher_p{s}_{k}": None for s in ("", "_two_sided") for k in COMPARISON_KEYS}
    for suffix, alternative in (("", "greater"), ("_two_sided", "two-sided")):
        tests = combined_demo_tests(scores, alternative)
        for name, ps in tests.per_model.items():
            out.update({f"{name}.demo_p{suffix}_{k}": p for k, p in ps.items()})
        out.update({f"demo_fisher_p{suffix}_{k}": p for k, p in tests.combined.items()})
    for name, s in scores.items():
        out.update({f"{name}.demo_score_{c}": np.asarray(s[c], float).tolist() for c in CONDITIONS})
    return out


def _p(x: Any) -> str:
    return "n/a" if x is None else f"{x:.2g}"


def _demo_tests(run: ModelRun, cfg: Any) -> Measured | None:
    combined = [run.results.get(f"demo_fisher_p_{k}") for k in COMPARISON_KEYS]
    if all(p is None for p in combined):
        return None
    if any(p is None for p in combined):
        raise ValueError(f"the results hold only some of the flip demo's combined p-values: {combined}")
    ran = [m for m in run.models if run.results.get(f"{m}.demo_p_{COMPARISON_KEYS[0]}") is not None]
    per_model = [[run.results[f"{m}.demo_p_{k}"] for k in COMPARISON_KEYS] for m in ran]
    two = [run.results.get(f"demo_fisher_p_two_sided_{k}") for k in COMPARISON_KEYS]
    ours = "; ".join(f"{DIRECTION[k]} p {_p(p)}" for k, p in zip(COMPARISON_KEYS, combined))
    ours += f" (one-sided, Fisher-combined over {len(ran)} model{'s' if len(ran) != 1 else ''}"
    ours += f"; two-sided as the code release: {', '.join(_p(p) for p in two)})" if any(p is not None for p in two) else ")"
    ours += "; per model: " + "; ".join(f"{m} {', '.join(_p(p) for p in ps)}" for m, ps in zip(ran, per_model))
    return Measured({**{f"p ({DIRECTION[k]})": p for k, p in zip(COMPARISON_KEYS, combined)}, "the smallest p": min(combined)},
                    ours=ours, value=combined, per_seed=per_model)


#: ``sva.flip_demo_tests``: reproduced when all three Fisher-combined one-sided p-values are below :data:`DEMO_P`,
#: partly when some are; the record's ``value`` holds the three (:data:`COMPARISON_KEYS` order), ``per_seed`` each
#: model's three.
RULE_SPEC = Rule(
    "sva.flip_demo_tests", "flip demo: removal lowers the agreement score, the flip lowers it further (paired Wilcoxon, "
    "Fisher-combined over models)", PAPER, WHERE, "the six demo prompts, on each of the paper's models",
    tuple(Comparison(f"p ({DIRECTION[k]})", "<", DEMO_P, over=ONE) for k in COMPARISON_KEYS), RULE, _demo_tests,
    {**{f"p ({DIRECTION[k]})": 0.5 for k in COMPARISON_KEYS}, "the smallest p": 0.5},
    partly=(Comparison("the smallest p", "<", DEMO_P, over=ONE),), mixed=NOT_REPRODUCED, gap="demo_tests",
)


def flip_demo_claim(claims: Claims, results: Mapping[str, Any], models: Sequence[str], known_gap: str | None = None) -> bool:
    """Add the headline row of ``sva.flip_demo_tests`` (:data:`RULE_SPEC`) from the flat ``results``
    (:func:`demo_test_entries`'s keys) to ``claims``; no row when the run has no flip demo.  Returns whether a row
    was added."""
    judged = judge_all([RULE_SPEC], ModelRun(results, tuple(models)), None, lambda key: known_gap)
    claims.rows += judged.rows
    return bool(judged.rows)


def demo_tests_table(results: Mapping[str, Any], models: Sequence[str]) -> str:
    """Markdown: per model and Fisher-combined, the one-sided (ours) and two-sided (code release) p-value
    of each comparison; "n/a" where a stored run lacks the value."""
    header = ["", *(f"{a} > {b} (two-sided)" for a, b in COMPARISONS)]
    rows = [[m, *(f"{_p(results.get(f'{m}.demo_p_{k}'))} ({_p(results.get(f'{m}.demo_p_two_sided_{k}'))})"
                  for k in COMPARISON_KEYS)] for m in models]  # fmt: skip
    rows.append(["Fisher-combined", *(f"{_p(results.get(f'demo_fisher_p_{k}'))} "
                                      f"({_p(results.get(f'demo_fisher_p_two_sided_{k}'))})" for k in COMPARISON_KEYS)])
    return markdown_table(header, rows)


def demo_tests_reading(results: Mapping[str, Any]) -> str:
    """One line for the prose: each comparison's Fisher-combined one-sided p-value, and whether it is below
    :data:`DEMO_P` (``"n/a"`` for a run without the flip demo)."""
    ps = [results.get(f"demo_fisher_p_{k}") for k in COMPARISON_KEYS]
    if any(p is None for p in ps):
        return "n/a (no flip demo in this run)"
    return ", ".join(f"{DIRECTION[k]} p = {_p(p)} ({'below' if p < DEMO_P else 'not below'} {DEMO_P})"
                     for k, p in zip(COMPARISON_KEYS, ps))  # fmt: skip
