"""The official code release is checked before any work and copied without its history or earlier results."""

from __future__ import annotations

import pytest

from ace_helpers.repro.official import OFFICIAL_FILES, check_official, copy_official


def test_a_folder_that_lacks_the_release_files_is_refused_naming_them(tmp_path):
    (tmp_path / "markov.py").write_text("")
    with pytest.raises(SystemExit, match=r"is not a checkout of the paper's code release \(joshseth/cores\): it lacks "
                                         r"modadd.py, src/cores/markov.py$"):  # fmt: skip
        check_official(tmp_path)
    assert check_official(tmp_path, needs=("markov.py",)) == tmp_path.resolve()


def test_a_checkout_is_copied_without_git_and_earlier_results(tmp_path):
    checkout = tmp_path / "cores"
    for name in (*OFFICIAL_FILES, ".git/HEAD", "experiments/run.json"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(name)
    copy = copy_official(check_official(checkout), tmp_path / "scratch" / "cores")
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()) == sorted(OFFICIAL_FILES)


def test_the_releases_number_judged_by_our_rule_sets_the_cause_class():
    from ace_helpers.repro.official import attach_official, triangulate
    from ace_helpers.repro.rules import Comparison, Measured, Rule, judge_all

    rule = Rule("inflation.no_wd", "ratio ≤ {t0}", "no inflation", "Fig. 2A", "3 models",
                (Comparison("ratio", "<=", 1.5),), "every model ≤ {t0}", lambda r, cfg: Measured({"ratio": r["ratio"]}),
                {"ratio": [3.0]}, unit="model")
    for theirs, cls, word in (([0.82], "ours", "meets"), ([2.0], "paper", "fails")):
        claims = judge_all((rule,), {"ratio": [2.9, 2.3]}, None, lambda key: None)
        triangulate(attach_official(claims, {"inflation.no_wd": theirs}), (rule,), {"inflation.no_wd": theirs}, "epoch 5000")
        (row,) = claims.rows
        assert row.official == theirs and row.cause_class == cls and f"{word} the rule" in row.cause
        assert len(row.cause.split()) <= 20
    held = judge_all((rule,), {"ratio": [1.0]}, None, lambda key: None)
    triangulate(held, (rule,), {"inflation.no_wd": [2.0]}, "epoch 5000")
    assert held.rows[0].cause is None or held.rows[0].cause == ""  # a claim that holds keeps no cause
