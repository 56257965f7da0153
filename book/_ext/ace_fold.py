"""A Sphinx extension of the book: ``{fold}`` folds the rest of a section on the page.

In a chapter's markdown, after a section's opening paragraph::

    ```{fold} Show the 20 000-epoch run: figures, tables and its claims
    ```

Everything after the marker, up to the end of its section (cells, figures, tables, subsections), is put in a
``<details>`` element whose summary is the directive's argument: closed when the page opens, one click to read.
The page stays short; nothing is dropped (the browser tests measure page heights with the folds closed).
"""

from __future__ import annotations

import html

from docutils import nodes
from docutils.parsers.rst import Directive

OPEN = '<details class="ace-fold-section">'
"""How the raw HTML node that opens a fold begins (its closing node is added at the end of the same parent; the raw
node carries no class, which would wrap it in a ``<div>`` of its own and close the fold at once)."""


class FoldDirective(Directive):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = False

    def run(self) -> list[nodes.Node]:
        summary = html.escape(self.arguments[0])
        return [nodes.raw("", f"{OPEN}<summary>{summary}</summary>\n", format="html")]


def _close_folds(app, doctree: nodes.document) -> None:
    """Close each fold at the end of the element that holds it (its section)."""
    for opening in list(doctree.findall(lambda n: isinstance(n, nodes.raw) and n.astext().startswith(OPEN))):
        opening.parent += nodes.raw("", "</details>\n", format="html")


def setup(app) -> dict[str, object]:
    app.add_directive("fold", FoldDirective)
    app.connect("doctree-read", _close_folds)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
