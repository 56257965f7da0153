"""The rule evaluator: verdicts derived from a spec, the short text, and the ledger that records rule changes."""

import dataclasses

import pytest

from ace_helpers.repro import rules_ledger
from ace_helpers.repro.rules import (
    EQUAL,
    INTERVAL,
    ONE,
    WITHIN,
    Combine,
    Comparison,
    Measured,
    NotTested,
    Rule,
    judge_all,
    untested,
    verdict_of,
)


def _rule(*tests, partly=(), mixed="inconclusive", measure=None):
    return Rule("markov.accuracy", "claim", "paper", "where", "observed", tuple(tests), "prose {t0}",
                measure or (lambda r, c: Measured({"acc": r["acc"], "ref": 0.75})), {"acc": [0.25, 0.25]},
                partly=tuple(partly), mixed=mixed)


@pytest.mark.parametrize("values, verdict", [
    ([0.8, 0.8], "reproduced"), ([0.8, 0.7], "inconclusive"), ([0.6, 0.6], "partly"), ([0.1, 0.1], "not reproduced"),
])
def test_verdicts_follow_the_spec(values, verdict):
    rule = _rule(Comparison("acc", ">=", -0.005, relative_to="ref"), partly=[Comparison("acc", ">=", 0.5)])
    assert verdict_of(rule, Measured({"acc": values, "ref": 0.75})) == verdict


def test_mixed_seeds_fail_where_the_rule_says_so():
    rule = _rule(Comparison("acc", ">=", 0.7), mixed="not reproduced")
    assert verdict_of(rule, Measured({"acc": [0.8, 0.6]})) == "not reproduced"


def test_an_interval_straddling_its_threshold_is_inconclusive():
    rule = _rule(Comparison("acc", "<=", -0.9, over=INTERVAL))
    assert verdict_of(rule, Measured({"acc": [-1.1, -0.95]})) == "reproduced"
    assert verdict_of(rule, Measured({"acc": [-1.1, -0.7]})) == "inconclusive"
    assert verdict_of(rule, Measured({"acc": [-0.8, -0.7]})) == "not reproduced"


def test_equality_and_bands():
    assert verdict_of(_rule(Comparison("acc", EQUAL, -1, relative_to="ref")), Measured({"acc": [3, 3], "ref": 4})) == "reproduced"
    assert verdict_of(_rule(Comparison("acc", WITHIN, (0.95, 1.05)), mixed="not reproduced"), Measured({"acc": [1.0, 1.2]})) == "not reproduced"


def test_the_short_text_and_the_prose_state_the_threshold_once():
    rule = _rule(Comparison("acc", ">=", -0.005, relative_to="ref"), partly=[Comparison("acc", ">=", 0.5)])
    assert rule.short_text() == "every seed: acc ≥ ref − 0.005; partly: every seed: acc ≥ 0.5"
    claims = judge_all([rule], {"acc": [0.8, 0.8]}, None, lambda k: None)
    row = claims.rows[0]
    assert row.rule == "prose 0.745" and row.threshold == pytest.approx(0.745) and row.op == ">="


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match="no test"):
        _rule()
    with pytest.raises(ValueError, match="not a comparison"):
        Comparison("acc", "=>", 1.0)
    with pytest.raises(ValueError, match="'in' takes"):
        Comparison("acc", WITHIN, 1.0)
    with pytest.raises(ValueError, match="reads one"):
        verdict_of(_rule(Comparison("acc", ">=", 1.0, over=ONE)), Measured({"acc": [1.0, 2.0]}))
    with pytest.raises(KeyError, match="no measured quantity 'acc'"):
        verdict_of(_rule(Comparison("acc", ">=", 1.0)), Measured({"other": 1.0}))


def test_a_rule_a_run_cannot_test_is_listed_not_counted():
    rule = _rule(Comparison("acc", ">=", 0.7), measure=lambda r, c: NotTested("no such run"))
    claims = judge_all([rule], {}, None, lambda k: None)
    assert not claims.rows and claims.not_tested[0].why == "no such run"


def test_a_threshold_times_a_measured_quantity():
    rule = _rule(Comparison("acc", ">=", 0.5, times="half"))
    assert rule.short_text() == "every seed: acc ≥ 0.5 × half"
    assert verdict_of(rule, Measured({"acc": [14.0, 13.0], "half": 26})) == "reproduced"
    assert verdict_of(rule, Measured({"acc": [12.0, 12.5], "half": 26})) == "not reproduced"
    with pytest.raises(ValueError, match="not both"):
        Comparison("acc", ">=", 0.5, times="half", relative_to="ref")


def test_one_part_not_tested_beside_parts_that_are():
    """A rule measured once per part (a model) lists a part that did not run as not tested, its claim and id
    filled from that part's context, and judges the others."""
    rule = dataclasses.replace(_rule(Comparison("acc", ">=", 0.7)), id="ours.x.{key}_acc", claim="{name}: accuracy")
    parts = [Measured({"acc": [0.8, 0.9]}, context={"name": "a"}, key="a"), NotTested("no weights", context={"name": "b"}, key="b")]
    claims = judge_all([dataclasses.replace(rule, measure=lambda r, c: parts)], {}, None, lambda k: None)
    assert [r.id for r in claims.rows] == ["ours.x.a_acc"] and claims.rows[0].claim == "a: accuracy"
    (nt,) = claims.not_tested
    assert (nt.id, nt.claim, nt.why, nt.rule) == ("ours.x.b_acc", "b: accuracy", "no weights", "prose 0.7")


def test_a_known_gap_is_recorded_only_where_its_claim_fails():
    rule = dataclasses.replace(_rule(Comparison("acc", ">=", 0.7)), gap="acc_gap")
    for values, note in (([0.8, 0.9], None), ([0.1, 0.2], "the measured cause")):
        claims = judge_all([rule], {"acc": values}, None, lambda k: "the measured cause")
        assert claims.rows[0].known_gap == note


def test_a_combined_row_and_its_after_hook():
    """``Combine`` makes one headline row of a claim's per-part rows (``min_parts`` of them at least) and hands it,
    with the parts, to ``after``."""
    seen = []
    rule = dataclasses.replace(_rule(Comparison("acc", ">=", 0.7)), id="markov.accuracy",
                               measure=lambda r, c: [Measured({"acc": [v]}, key=str(i)) for i, v in enumerate(r)])
    combine = Combine("markov.accuracy", "every part", "paper", "where", "rule", "short", unit="parts", min_parts=1,
                      after=lambda row, parts: seen.append((row.verdict, len(parts))))
    for values, verdict in (([0.8], "reproduced"), ([0.8, 0.1], "partly")):
        claims = judge_all([rule, combine], values, None, lambda k: None)
        head = [r for r in claims.rows if r.headline]
        assert len(head) == 1 and head[0].claim == "every part" and head[0].verdict == verdict
    assert seen == [("reproduced", 1), ("partly", 2)]
    two = dataclasses.replace(combine, min_parts=2)
    assert [r.claim for r in judge_all([rule, two], [0.8], None, lambda k: None).rows if r.headline] == ["claim"]


def test_the_fingerprint_moves_with_the_rule_not_with_its_prose():
    rule = _rule(Comparison("acc", ">=", 0.7))
    assert dataclasses.replace(rule, prose="other words").fingerprint() == rule.fingerprint()
    assert dataclasses.replace(rule, tests=(Comparison("acc", ">=", 0.6),)).fingerprint() != rule.fingerprint()
    assert dataclasses.replace(rule, observed="epoch 2000").fingerprint() != rule.fingerprint()


def test_the_ledger_catches_a_changed_rule_and_registers_it(tmp_path):
    rule = _rule(Comparison("acc", ">=", 0.7))
    ledger = {}
    assert rules_ledger.unregistered({"ch": [rule]}, ledger) == ["markov.accuracy"]
    stored = {"markov.accuracy": {"verdict": "reproduced", "value": [0.8, 0.8]}}
    rules_ledger.register({"ch": [rule]}, ledger, why="first", commit="a" * 40, date="2026-12-07", stored={})
    assert rules_ledger.unregistered({"ch": [rule]}, ledger) == []
    changed = dataclasses.replace(rule, tests=(Comparison("acc", ">=", 0.6),))
    assert rules_ledger.unregistered({"ch": [changed]}, ledger) == ["markov.accuracy"]
    rules_ledger.register({"ch": [changed]}, ledger, why="widened", commit="b" * 40, date="2026-12-08", stored=stored)
    entry = ledger["markov.accuracy"][-1]
    assert entry["change"] == "changed" and entry["data_existed"] and entry["verdict_before"] == "reproduced"
    assert "verdict then reproduced" in rules_ledger.change_note(ledger, "markov.accuracy")
    rules_ledger.save(ledger, tmp_path / "ledger.json")
    assert rules_ledger.load(tmp_path / "ledger.json") == ledger


def test_a_measured_cause_class_replaces_the_rules_and_is_checked():
    """The measurement decides the class where the code release's own rerun fails the claim too ("paper")."""
    def measure(r, c):
        return Measured({"acc": r["acc"]}, cause_class=r["class"])

    rule = dataclasses.replace(_rule(Comparison("acc", ">=", 0.7), measure=measure), cause="acc {t0} missed",
                               cause_class="ours")
    row = judge_all([rule], {"acc": [0.1, 0.1], "class": "paper"}, None, lambda k: None).rows[0]
    assert (row.cause, row.cause_class) == ("acc 0.7 missed", "paper")
    assert judge_all([rule], {"acc": [0.1, 0.1], "class": ""}, None, lambda k: None).rows[0].cause_class == "ours"
    with pytest.raises(ValueError, match="cause_class 'bad'"):
        judge_all([rule], {"acc": [0.1, 0.1], "class": "bad"}, None, lambda k: None)


def test_rules_a_run_cannot_test_at_all_are_listed_with_the_reason():
    rows = untested([_rule(Comparison("acc", ">=", 0.7)), Combine("x", "c", "p", "w", "prose", "short")], "no grokking")
    assert [(r.id, r.why, r.rule) for r in rows] == [("markov.accuracy", "no grokking", "prose 0.7")]


def test_a_window_read_on_an_interval():
    """Inside the window: holds; straddling one bound, or wider than the window on both sides: inconclusive; wholly
    outside: fails; a fit that could not be made ([nan, nan]) fails and records no interval."""
    rule = _rule(Comparison("acc", WITHIN, (-1.25, -0.8), over=INTERVAL),
                 measure=lambda r, c: Measured({"acc": r["acc"]}, value=-1.0))
    cases = {(-1.1, -0.9): "reproduced", (-1.1, -0.7): "inconclusive", (-1.4, -0.6): "inconclusive",
             (-0.7, -0.5): "not reproduced", (float("nan"), float("nan")): "not reproduced"}
    for interval, verdict in cases.items():
        row = judge_all([rule], {"acc": list(interval)}, None, lambda k: None).rows[0]
        assert row.verdict == verdict, interval
    assert row.interval is None and row.threshold == [-1.25, -0.8] and row.op == "in"


def test_a_rules_fingerprint_ignores_formatting_comments_and_the_functions_name(tmp_path):
    import importlib.util

    from ace_helpers.repro.code_keys import code_key

    (tmp_path / "a.py").write_text("def f(r, cfg):\n    return r['x'] + 1\n")
    (tmp_path / "b.py").write_text("def renamed(r,\n              cfg):  # a comment\n    return (r[\n        'x'] + 1)\n")
    (tmp_path / "c.py").write_text("def f(r, cfg):\n    return r['x'] + 2\n")
    fns = []
    for name in "abc":
        spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fns.append(next(v for k, v in vars(mod).items() if callable(v) and not k.startswith("_")))
    assert code_key(fns[0]) == code_key(fns[1]) != code_key(fns[2])
