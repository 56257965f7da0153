"""Every chapter rule declared as data: each fails on its plausible wrong input, and each is in the rules ledger."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ace_helpers.chapters import (
    ace_planted_system,
    ace_vs_alternatives,
    core_inflation,
    core_stitching,
    grokking_scaling_law,
    llm_agreement,
    markov_cores,
    modadd_grokking,
)
from ace_helpers.chapters.ace_vs_alternatives.llm import LAYER
from ace_helpers.chapters.ace_vs_alternatives.llm_rules import LlmRun
from ace_helpers.chapters.ace_vs_alternatives.llm_rules import SPECS as LLM_SPECS
from ace_helpers.chapters.core_inflation.claims import CONTINUATION_SPECS as CONTINUATION
from ace_helpers.chapters.grokking_scaling_law.claims_limits import MARGIN_SPECS, REDUNDANCY_SPECS
from ace_helpers.chapters.core_inflation.claims import Continuation
from ace_helpers.chapters.core_inflation.reference_rules import SPECS as REFERENCE
from ace_helpers.chapters.core_inflation.reference_rules import ReferenceRun
from ace_helpers.chapters.core_inflation.rules import InflationRun
from ace_helpers.chapters.llm_agreement.combined import ModelRun
from ace_helpers.chapters.modadd.analysis import ArmResult, grok_epoch
from ace_helpers.chapters.modadd.long_run import stored_long_run
from ace_helpers.chapters.modadd_grokking.circle_rules import SPECS as CIRCLE
from ace_helpers.chapters.modadd_grokking.grok_rules import SPECS as GROK
from ace_helpers.chapters.modadd_grokking.grok_rules import GrokClaimsRun
from ace_helpers.chapters.modadd_grokking.keep_remove import SPECS as KEEP_REMOVE
from ace_helpers.chapters.modadd_grokking.keep_remove import KeepRemoveRun
from ace_helpers.chapters.modadd_grokking.paper_epochs import EpochRun, official_shares
from ace_helpers.chapters.modadd_grokking import snap_models, trainers
from ace_helpers.chapters.rule_tables import tables
from ace_helpers.llm.labels import model_labels
from ace_helpers.repro import rules_ledger
from ace_helpers.repro.rules import Measured, NotTested, rules_of, verdict_of

ROOT = Path(__file__).resolve().parents[2]
#: Stored results each chapter's rules are measured on (several, so that every rule applies to one of them).
STORED = {"00_ace_planted_system": ["book/results/00_ace_planted_system.json"],
          "07_core_stitching": ["book/results/07_core_stitching.json"], "01_markov_cores": ["book/results/01_markov_cores.json", "book/results/variants/01_markov_cores/ci-fp32.json"]}
CHAPTERS = {"00_ace_planted_system": ace_planted_system, "07_core_stitching": core_stitching, "01_markov_cores": markov_cores, "02_modadd_grokking": modadd_grokking}
CASES = [(stem, i) for stem, rules in tables().items() for i in range(len(rules))]


def _inputs(stem, rule=None):
    """``(results, cfg)`` pairs a chapter's rules are measured on: stored results files, or the stored long run."""
    if stem == "05_llm_agreement":
        results = json.loads((ROOT / "book/results/05_llm_agreement.json").read_text())
        cfg = llm_agreement.PARAMS.resolve(**{k: v for k, v in results["params"].items() if k != "OUTPUT_DIR"})
        return [(ModelRun(results, tuple(model_labels(list(cfg.MODELS)))), cfg)]
    if stem == "06_ace_vs_alternatives":
        results = json.loads((ROOT / "book/results/06_ace_vs_alternatives.json").read_text())
        cfg = ace_vs_alternatives.PARAMS.resolve(**{k: v for k, v in results["params"].items() if k != "OUTPUT_DIR"})
        models = tuple(dict.fromkeys([*cfg["LLM_MODELS"], *LAYER]))
        on_llms = rule is not None and any(rule is r for r in rules_of(LLM_SPECS))
        return [(LlmRun(results["llm"], models), cfg)] if on_llms else [(results, cfg)]
    if stem == "03_core_inflation" and rule is not None and any(rule is r for r in CONTINUATION):
        # no stored long run continues a stored chapter run bit for bit today: a comparison as same_prefix gives one
        return [(Continuation("book", [0, 100, 1400], 0.0), core_inflation.PARAMS.resolve(PRESET="book"))]
    if stem == "03_core_inflation" and rule is not None and any(rule is r for r in REFERENCE):
        book = core_inflation.PARAMS.resolve(PRESET="book")
        ref_cfg, ref_run = core_inflation.reference_source(book, core_inflation.run(book, log=None))
        ref = core_inflation.stored_reference(ref_cfg)
        return [(ReferenceRun(ref, ref_run, core_inflation.reference_rows(ref, ref_cfg.P)), ref_cfg)]
    if stem == "03_core_inflation":
        book = core_inflation.PARAMS.resolve(PRESET="book")
        long_cfg, run, through = stored_long_run(modadd_grokking.PARAMS.resolve(PRESET="book"))
        pair = core_inflation.fork_pair(book)  # the runs forked at 900 and at 1100 (the second: cores below 48)
        forks = [(InflationRun(r, t["wd"]), c) for c, r, t in (pair or ())]
        book_run = core_inflation.run(book, log=None)
        wd = book_run.wd
        never = replace(book_run, wd=ArmResult(wd.epochs, {**wd.arrays, "test_acc": wd["test_acc"] * 0}))  # never groks
        return [(InflationRun(book_run), book), (InflationRun(run, through["wd"]), long_cfg), *forks, (InflationRun(never), book)]
    if stem == "04_grokking_scaling_law":
        results = json.loads((ROOT / "book/results/04_grokking_scaling_law.json").read_text())
        if rule is not None and any(rule is r for r in MARGIN_SPECS):
            return [(grokking_scaling_law.margin_fits_from_rows(results["margin_ode"]), None)]
        if rule is not None and any(rule is r for r in REDUNDANCY_SPECS):
            return [(grokking_scaling_law.redundancy_from_rows(results["redundancy"]), None)]
        book, ci = grokking_scaling_law.PARAMS.resolve(PRESET="book"), grokking_scaling_law.PARAMS.resolve(PRESET="ci")
        runs = grokking_scaling_law.records_from_dicts(results["runs"])
        fits = grokking_scaling_law.fit_sweeps([r for r in runs if r.sweep == "omega"], [r for r in runs if r.sweep == "p"])
        paper = grokking_scaling_law.stored_paper_sweeps(book)  # the paper-settings sweeps: one ω in the p sweep
        paper_fits = grokking_scaling_law.fit_sweeps(paper.runs["omega"], paper.runs["p"], paper.cfg["OMEGA_P"])
        return [(fits, book), (fits, ci), (paper_fits, paper.cfg)]
    if stem == "02_modadd_grokking" and rule is not None and any(rule is r for r in snap_models.SPECS):
        return [(trainers.load(ROOT), None)]  # judged on the stored trainers' comparison
    if stem == "02_modadd_grokking":
        long_cfg, run, _ = stored_long_run(modadd_grokking.PARAMS.resolve(PRESET="book"))
        if rule is not None and any(rule is r for r in KEEP_REMOVE):
            wd = run.wd
            grok = grok_epoch(wd.epochs, wd["test_acc"])
            return [(KeepRemoveRun(wd, wd.index(grok), wd.epochs >= grok), long_cfg)]
        if rule is not None and any(rule is r for r in (*GROK, *CIRCLE)):
            # the book run (its diagnoses run: its share dips after grokking), the long run, and the book run's
            # numbers read off the paper's task (the ci preset's p = 31), which the relaxed variants measure
            book, ci = modadd_grokking.PARAMS.resolve(PRESET="book"), modadd_grokking.PARAMS.resolve(PRESET="ci")
            book_run = modadd_grokking.run(book, log=None)
            return [(GrokClaimsRun(book_run, book, True), book), (GrokClaimsRun(run, long_cfg), long_cfg),
                    (GrokClaimsRun(book_run, ci), ci)]
        return [(EpochRun(run.wd, official_shares()), long_cfg)]
    out = []
    for path in STORED[stem]:
        results = json.loads((ROOT / path).read_text())
        out.append((results, CHAPTERS[stem].PARAMS.resolve(**{k: v for k, v in results["params"].items() if k != "OUTPUT_DIR"})))
    if stem == "07_core_stitching":  # a run stored before the merging paths: the swaps carry the merging headline
        results, cfg = out[0]
        out.append(({**results, **{t: {k: v for k, v in results[t].items() if k != "merging"} for t in ("markov", "modadd")}}, cfg))
        two_pairs = {**results["modadd"], "invariance": results["modadd"]["invariance"] * 2}  # judged pair by pair
        out.append(({**results, "modadd": two_pairs}, cfg))
    return out


def _measurements(stem, rule):
    out = []
    for results, cfg in _inputs(stem, rule):
        m = rule.measure(results, cfg)
        out += [] if m is None or isinstance(m, NotTested) else [m] if isinstance(m, Measured) else [
            x for x in m if isinstance(x, Measured)]
    return out


@pytest.mark.parametrize("stem, index", CASES, ids=[f"{s}:{tables()[s][i].id}:{i}" for s, i in CASES])
def test_every_rule_fails_on_its_wrong_input(stem, index):
    rule = tables()[stem][index]
    measured = _measurements(stem, rule)
    assert measured, f"{rule.id}: no stored result of {stem} measures it"
    for m in measured:
        wrong = {k: _shaped(v, m.quantity(k)) for k, v in rule.wrong.items()}
        assert verdict_of(rule, m.replace(**wrong)) != "reproduced", f"{rule.id} holds on its wrong input {rule.wrong}"


def _shaped(wrong, measured):
    """A wrong per-seed list fitted to the run's number of seeds (its first value repeated)."""
    if isinstance(wrong, list) and isinstance(measured, list) and len(wrong) != len(measured):
        return [wrong[0]] * len(measured)
    return wrong


def test_every_rule_is_registered_in_the_ledger():
    todo = rules_ledger.unregistered(tables(), rules_ledger.load())
    assert not todo, (f"rules changed or added without a ledger entry: {todo}; register them with "
                      "`python -m ace_helpers.chapters.rule_tables register --why \"...\"`")
