"""Long tables and logs folded on the page: the HTML a reader opens, the markdown the tests read back."""

from __future__ import annotations

import pytest

from ace_helpers.repro.folded import Folded, markdown_html

TABLE = "The six prompts.\n\n| model | prompt | shift |\n|---|---|---|\n| a | `The keys` \\| x | +1.00 |\n| b | [there](x.html) |  |\n"


def test_a_folded_table_is_html_under_its_summary_and_keeps_its_markdown():
    view = Folded("Show the **six** prompts", TABLE)
    html = view._repr_html_()
    assert html.startswith('<details class="ace-fold"><summary>Show the <b>six</b> prompts</summary><p>The six prompts.</p><table>')
    assert html.count("<tr>") == 3 and "<th>prompt</th>" in html
    assert "<td><code>The keys</code> | x</td>" in html  # an escaped pipe stays in its cell
    assert '<td><a href="x.html">there</a></td><td></td>' in html  # a short row is padded
    assert view._repr_markdown_() == TABLE


def test_a_folded_log_is_preformatted_and_escaped():
    view = Folded("Show the log", text="a <b>\n  b")
    assert view._repr_html_().endswith("<pre>a &lt;b&gt;\n  b</pre></details>")
    assert view._repr_markdown_() is None and repr(view).startswith("Show the log")


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="exactly one of markdown= and text="):
        Folded("s")
    with pytest.raises(ValueError, match="exactly one of markdown= and text="):
        Folded("s", "| a |", text="x")
    with pytest.raises(ValueError, match="non-empty summary"):
        Folded("  ", text="x")
    with pytest.raises(ValueError, match="has 3 cells; its header"):
        markdown_html("| a | b |\n|---|---|\n| 1 | 2 | 3 |")
