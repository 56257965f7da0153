"""How verdicts look on a page: badges with an icon, claims tables with short columns and folded details, the landing
page's findings table (failures first), and the verdict box's counts."""

from __future__ import annotations

import pytest

from ace_helpers.repro import badges
from ace_helpers.repro.claims_view import ClaimsView
from ace_helpers.repro.paper_claims import PAPER_CLAIMS
from ace_helpers.repro.report import VERDICTS, Claims
from ace_helpers.repro.untested import ClaimRow
from ace_helpers.repro.scorecard import findings_markdown, scorecard_rows, untested_records, verdict_summary


def test_every_verdict_has_a_badge_with_an_icon_and_a_class():
    for verdict in VERDICTS:
        html = badges.badge(verdict)
        assert html.startswith(f'<span class="ace-verdict ace-v-{verdict.replace(" ", "-")}">{badges.ICONS[verdict]} ')
    assert "(unexpected)" in badges.badge("not reproduced", unexpected=True)
    with pytest.raises(ValueError, match="verdict='maybe' is not allowed"):
        badges.badge("maybe")
    line = badges.counts_badges({"reproduced": 3, "partly": 0, "not reproduced": 1, "inconclusive": 0, "not tested": 0})
    assert line.index("1 not reproduced") < line.index("3 reproduced") and "partly" not in line


def test_cells_keep_code_and_bold_escape_html_and_unfold_printed_dicts():
    assert badges.cell("`T` is **bold** <b>") == "<code>T</code> is <b>bold</b> &lt;b&gt;"
    assert badges.cell("{'ace': 3, 'pca': 0.123456, 'seeds': [1.23456, 2]}") == "ace: 3<br>pca: 0.1235<br>seeds: [1.235, 2]"
    assert badges.cell("{not a dict") == "{not a dict"


def test_the_claims_view_carries_html_for_the_page_and_the_markdown_the_tests_read():
    claims = Claims()
    claims.check("rank 3", "a 3-D core", 3, True, where="Fig. 1", rule="rank == 3", id="ours.x.rank")
    claims.check("overlap small", "0.02-0.04", 0.3, False, known_gap="measured cause", rule="< 0.1", id="ours.x.ov")
    view = ClaimsView(claims, [ClaimRow("later", "p", "-", "needs 20 000 epochs")])
    html = view._repr_html_()
    # the untested paper claim's table (shown) and our own claims (folded, with their counts in the summary)
    assert html.count("<table") == 2 and html.count("<tr>") == 5 and html.count("<details>") == 3
    assert html.index("needs 20 000 epochs") < html.index('<details class="ace-claims-group"><summary>Our own claims (2): ')
    assert "measured cause" in html and "needs 20 000 epochs" in html and "Fig. 1" in html
    assert [html.count(f"<td><span class=\"ace-verdict ace-v-{v}\"") for v in ("reproduced", "not-reproduced", "not-tested")] == [1, 1, 1]
    markdown = view._repr_markdown_()
    assert markdown.startswith("| claim | paper | our rule | ours | verdict |") and "not tested: needs 20 000 epochs" in markdown


def test_the_findings_table_lists_each_paper_claim_once_failures_first():
    ids = list(PAPER_CLAIMS)
    recs = [{"claim": PAPER_CLAIMS[cid], "paper": "", "ours": "1", "verdict": v, "id": cid, "kind": "paper", "rule": "r",
             "note": "cause" if v != "reproduced" else "", "section": "book run", "headline": True, "where": ""}
            for cid, v in zip(ids[:3], ("reproduced", "not reproduced", "inconclusive"))]  # fmt: skip
    rows = scorecard_rows({"01_markov_cores": {"claims": recs}})
    text = findings_markdown(rows + untested_records(rows, why=dict.fromkeys(PAPER_CLAIMS, "not built")))
    lines = [ln for ln in text.splitlines() if ln.startswith("| ") and "ace-verdict" in ln]
    assert len(lines) == len(PAPER_CLAIMS)
    assert "not-reproduced" in lines[0] and "inconclusive" in lines[1] and "reproduced" in lines[-1]
    assert "[chapter 1](../notebooks/01_markov_cores.ipynb)" in lines[0]
    assert text.startswith(f"The paper's {len(PAPER_CLAIMS)} claims, each judged once: ")
    box = verdict_summary(recs)
    assert box.startswith("Paper claims (3, one verdict each): ") and "ace-v-not-reproduced" in box


def test_the_claims_view_shows_the_paper_claims_and_folds_ours_diagnoses_and_repeats():
    claims = Claims()
    claims.check("core rank", "3-D", 3, True, id="markov.core_rank")
    claims.check("core rank, seed 2", "3-D", 4, False, known_gap="cause", id="markov.core_rank", headline=False)
    claims.check("ours holds", "-", 1, True, id="ours.x.a")
    claims.check("why it fails", "-", 1, True, id="ours.x.why", explains="markov.core_rank")
    html = ClaimsView(claims)._repr_html_()
    shown, _, folded = html.partition("<details class=")
    assert "core rank" in shown and "ours holds" not in shown and "seed 2" not in shown
    summaries = [s.split("</summary>")[0] for s in folded.split("<summary>")[1:] if not s.startswith("rule and details")]
    assert [s.split(" (")[0] for s in summaries] == ["Our own claims", "Diagnoses", "The same claims on each model or run"]
    assert "ace-v-not-reproduced" in summaries[2]  # a failure inside a closed group shows in its summary


def test_the_code_releases_number_stands_under_ours_where_it_was_rerun() -> None:
    from ace_helpers.repro.plain import plain_value

    claims = Claims()
    claims.check("r2", "paper", 0.99, True, id="markov.r2")
    claims.check("rank", "paper", 3, True, id="markov.core_rank")
    claims.rows[0].official = [1.0149, 0.9942]
    html = ClaimsView(claims)._repr_html_()
    assert html.count("official code, rerun here") == 1 and "1.015 / 0.9942" in html
    assert plain_value([[0.02, 0.03], None]) == "0.02 / 0.03; —" and plain_value({"pca": [1.0, 6]}) == "pca 1 / 6"
    assert plain_value(None) == "—" and "[" not in plain_value([[1.5], 2, [0.25]])


def test_an_open_verdict_without_a_costed_settlement_is_found_and_marked() -> None:
    from ace_helpers.repro import open_verdicts

    rows = [{"id": "x.open", "kind": "paper", "headline": True, "verdict": "inconclusive", "chapter": "99", "claim": "c"},
            {"id": "x.few", "kind": "paper", "headline": True, "verdict": "not reproduced", "cause": "three models",
             "cause_class": "samples", "chapter": "99", "claim": "c"},
            {"id": "x.done", "kind": "paper", "headline": True, "verdict": "reproduced", "chapter": "99", "claim": "c"}]
    assert open_verdicts.missing(rows, {}) == ["x.open", "x.few"]
    settle = {"x.open": open_verdicts.Settle("more seeds", 1.5, "a measured run")}
    table = open_verdicts.table(rows, settle)
    assert "more seeds" in table and "**not costed**" in table and "x.done" not in table and "In all: 1.5 CPU-hours" in table


def test_the_scorecard_shows_a_list_of_numbers_in_plain_words_and_a_text_as_written() -> None:
    from ace_helpers.repro.scorecard import ours_cell

    assert ours_cell({"ours": "[0.7484, 0.7484]", "value": [0.74839, 0.74841]}) == "0.7484 / 0.7484"
    assert ours_cell({"ours": "[[3], 0.01]", "value": [[3.0], 0.0124]}) == "3; 0.0124"
    assert ours_cell({"ours": "0.720 [0.679, 0.763] over 12 models", "value": 0.72}) == "0.720 [0.679, 0.763] over 12 models"
