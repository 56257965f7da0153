"""Verdicts judged on all seeds: k of N, a seeded bootstrap interval, and ``inconclusive`` on a knife edge."""

import pytest

from ace_helpers.repro.report import INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, Claims
from ace_helpers.repro.verdicts import bootstrap_interval, interval_side, k_of_n


def test_k_of_n_counts_the_seeds_that_meet_the_rule():
    assert k_of_n([0.99, 0.97, 0.995], ">=", 0.98) == (2, 3)
    assert k_of_n([1, 2], "<", 2) == (1, 2)


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    samples = [0.70, 0.74, 0.78, 0.66, 0.81, 0.69]
    first, again = bootstrap_interval(samples, seed=3), bootstrap_interval(samples, seed=3)
    assert first == again and first[0] < sum(samples) / len(samples) < first[1]
    assert bootstrap_interval([0.5]) == (0.5, 0.5)


@pytest.mark.parametrize("interval, side", [((0.81, 0.9), True), ((0.6, 0.79), False), ((0.79, 0.81), None)])
def test_interval_side(interval, side):
    assert interval_side(interval, ">=", 0.8) is side


@pytest.mark.parametrize("bad, message", [
    (dict(values=[], op=">=", threshold=1), "empty"),
    (dict(values=[float("nan")], op=">=", threshold=1), "NaN"),
    (dict(values=[1.0], op="=>", threshold=1), "not a comparison"),
])  # fmt: skip
def test_bad_input_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        k_of_n(bad["values"], bad["op"], bad["threshold"])


def test_one_seed_across_the_threshold_makes_a_per_seed_rule_inconclusive():
    claims = Claims()
    claims.check("every seed > 0.98", "R² ratio > 0.98", [0.99, 0.99], True, id="markov.r2",
                 per_seed=[0.99, 0.99], threshold=0.98, op=">")
    claims.check("every seed > 0.98", "R² ratio > 0.98", [0.99, 0.97], False, id="markov.r2",
                 per_seed=[0.99, 0.97], threshold=0.98, op=">", headline=False)
    claims.check("every seed > 0.98", "R² ratio > 0.98", [0.97, 0.96], False, id="markov.r2",
                 per_seed=[0.97, 0.96], threshold=0.98, op=">", headline=False, partly=True)
    assert [r.verdict for r in claims.rows] == [REPRODUCED, INCONCLUSIVE, PARTLY]
    assert not claims.rows[1].unexpected and claims.rows[2].unexpected


def test_an_interval_straddling_the_threshold_is_inconclusive():
    claims = Claims()
    claims.check("R² ≥ 0.8", "log law", 0.81, True, id="scaling.log_law", interval=[0.79, 0.84], threshold=0.8, op=">=")
    claims.check("R² ≥ 0.8", "log law", 0.9, True, id="scaling.log_law", interval=[0.85, 0.95], threshold=0.8, op=">=",
                 headline=False)  # fmt: skip
    claims.check("R² ≥ 0.8", "log law", 0.7, False, id="scaling.log_law", interval=[0.6, 0.75], threshold=0.8, op=">=",
                 headline=False)  # fmt: skip
    assert [r.verdict for r in claims.rows] == [INCONCLUSIVE, REPRODUCED, NOT_REPRODUCED]
    rec = claims.records("s")[0]
    assert rec["interval"] == [0.79, 0.84] and rec["method"] == "percentile bootstrap" and rec["threshold"] == 0.8


def test_combine_makes_one_headline_row_per_paper_claim():
    claims = Claims()
    claims.check("model a keeps", "keep", 0.9, True, id="sva.keep")
    claims.check("model b keeps", "keep", 0.5, False, id="sva.keep", known_gap="measured")
    assert not claims.combine("sva.keep", "keeping the axis keeps agreement", "keep", unit="models")
    recs = claims.records("s")
    assert [r["headline"] for r in recs] == [False, False, True]
    assert recs[-1]["verdict"] == PARTLY and recs[-1]["ours"].startswith("1 of 2 models")
    with pytest.raises(ValueError, match="no checked row has id"):
        claims.combine("sva.flip", "x", "y")


def test_a_combined_row_names_each_part_and_its_number():
    claims = Claims()
    claims.check("model-a: keeping keeps", "keep", "R² 0.9 (null 0.3, p 0.01)", True, id="sva.keep", value=0.9)
    claims.check("model-b: keeping keeps", "keep", "0.5 (base 0.4 (of 2)); lowest 0.2 (chance)", False, id="sva.keep", value=0.5)
    claims.combine("sva.keep", "keeping the axis keeps agreement", "keep", unit="models")
    assert claims.records("s")[-1]["ours"] == "1 of 2 models: model-a R² 0.9; model-b 0.5; lowest 0.2 (not reproduced)"
    assert claims.records("s")[0]["ours"] == "R² 0.9 (null 0.3, p 0.01)"  # the part's own row keeps its details
    unnamed = Claims()  # parts that share a name (or have none) are listed by verdict
    unnamed.check("top: first", "c", 0.99, True, id="markov.cca")
    unnamed.check("top: second", "c", 0.5, False, id="markov.cca")
    unnamed.combine("markov.cca", "correlations", "c", unit="parts")
    assert unnamed.records("s")[-1]["ours"] == "1 of 2 parts (reproduced: 0.99; not reproduced: 0.5)"


@pytest.mark.parametrize("text", ["(only an aside)", "unbalanced (aside", "unbalanced) aside"])
def test_a_part_whose_details_cannot_be_cut_is_shown_whole(text):
    from ace_helpers.repro.combined import numbers_only

    assert numbers_only(text) == text


def test_evidence_runs_carry_no_headline():
    claims = Claims()
    claims.check("r", "p", 1.0, True, id="markov.r2")
    assert [r["headline"] for r in claims.records("long run", evidence=True)] == [False]


def test_check_records_refuses_what_the_scorecard_cannot_count():
    from ace_helpers.repro.scorecard import check_records

    claims = Claims()
    claims.check("r", "p", 1.0, True, id="markov.r2")
    claims.check("own", "—", 1.0, True, id="ours.markov_cores.extra")
    good = claims.records("s")
    assert check_records(good, "markov_cores") == {"markov.r2"}
    with pytest.raises(ValueError, match="two headline rows"):
        check_records(good + [dict(good[0])])
    with pytest.raises(ValueError, match="paper ids without one"):
        check_records([dict(good[0], headline=False)])
    assert check_records([dict(good[0], headline=False, evidence=True)]) == {"markov.r2"}  # evidence: no headline needed
    with pytest.raises(ValueError, match="ours.core_stitching.<name>"):
        check_records(good, "core_stitching")
    with pytest.raises(ValueError, match="kind"):
        check_records([dict(good[0], id="")])
