"""Every chapter rule declared as data: each fails on its plausible wrong input, and each is in the rules ledger."""

import json
from pathlib import Path

import pytest

from ace_helpers.chapters import ace_planted_system, markov_cores, modadd_grokking
from ace_helpers.chapters.modadd.long_run import stored_long_run
from ace_helpers.chapters.modadd_grokking.paper_epochs import EpochRun, official_shares
from ace_helpers.chapters.rule_tables import tables
from ace_helpers.repro import rules_ledger
from ace_helpers.repro.rules import Measured, NotTested, verdict_of

ROOT = Path(__file__).resolve().parents[2]
#: Stored results each chapter's rules are measured on (several, so that every rule applies to one of them).
STORED = {"00_ace_planted_system": ["book/results/00_ace_planted_system.json"], "01_markov_cores": ["book/results/01_markov_cores.json", "book/results/variants/01_markov_cores/ci-fp32.json"]}
CHAPTERS = {"00_ace_planted_system": ace_planted_system, "01_markov_cores": markov_cores, "02_modadd_grokking": modadd_grokking}
CASES = [(stem, i) for stem, rules in tables().items() for i in range(len(rules))]


def _inputs(stem):
    """``(results, cfg)`` pairs a chapter's rules are measured on: stored results files, or the stored long run."""
    if stem == "02_modadd_grokking":
        long_cfg, run, _ = stored_long_run(modadd_grokking.PARAMS.resolve(PRESET="book"))
        return [(EpochRun(run.wd, official_shares()), long_cfg)]
    out = []
    for path in STORED[stem]:
        results = json.loads((ROOT / path).read_text())
        out.append((results, CHAPTERS[stem].PARAMS.resolve(**{k: v for k, v in results["params"].items() if k != "OUTPUT_DIR"})))
    return out


def _measurements(stem, rule):
    out = []
    for results, cfg in _inputs(stem):
        m = rule.measure(results, cfg)
        out += [] if m is None or isinstance(m, NotTested) else [m] if isinstance(m, Measured) else list(m)
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
