"""Markdown tables for the book: one writer for every table a chapter or a book page shows.

Written here rather than with ``tabulate`` or ``pandas.DataFrame.to_markdown`` (both pinned),
because neither escapes a ``|`` inside a cell (the row then splits into extra columns) and
pandas turns a line break inside a cell into a second row; the claim texts have both.  The rows
are also left unpadded, so that a changed number changes one line of a committed notebook.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def md_cell(text: Any) -> str:
    """``text`` as one markdown table cell: pipes escaped, line breaks flattened."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A pipe table: ``header`` (one name per column), then one line per row of ``rows``.

    Cells are written with ``str`` (format numbers before) and :func:`md_cell`; every row must
    have one cell per column.
    """
    width = len(header)
    lines = [_line(header), "|" + "---|" * width]
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"row {i} has {len(row)} cells, the header {width}: {list(row)!r}")
        lines.append(_line(row))
    return "\n".join(lines)


def _line(cells: Sequence[Any]) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"
