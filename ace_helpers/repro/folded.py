"""Long tables and logs folded on the page: ``display(Folded(summary, markdown))`` shows a one-line summary that opens
onto the table (HTML, which the book renders), and keeps the markdown table as the output's markdown, which the tests
read back; ``Folded(summary, text=log)`` folds printed text (a progress log, sampled generations)."""

from __future__ import annotations

import html
import re

from ace_helpers.repro.badges import cell

_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _cells(line: str) -> list[str]:
    parts = _SPLIT.split(line.strip())
    if parts and not parts[0].strip():
        parts = parts[1:]
    if parts and not parts[-1].strip():
        parts = parts[:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def _inline(text: str) -> str:
    """A cell's markdown as HTML: :func:`~ace_helpers.repro.badges.cell` (escaped, ``code``, **bold**) and
    ``[links](url)``."""
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', cell(text))


def markdown_html(markdown: str) -> str:
    """Pipe tables (a header row, a ``|---|`` row, body rows) and plain paragraphs of ``markdown`` as HTML.

    Raises ValueError for a table whose rows have more cells than its header."""
    out: list[str] = []
    lines = markdown.strip().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("|") and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1].strip()):
            head = _cells(line)
            body = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                row = _cells(lines[i])
                if len(row) > len(head):
                    raise ValueError(f"table row {row!r} has {len(row)} cells; its header {head!r} has {len(head)}")
                body.append(row + [""] * (len(head) - len(row)))
                i += 1
            ths = "".join(f"<th>{_inline(h)}</th>" for h in head)
            trs = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in body)
            out.append(f"<table><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>")
            continue
        paragraph = []
        while i < len(lines) and lines[i].strip() and not lines[i].lstrip().startswith("|"):
            paragraph.append(lines[i].strip())
            i += 1
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
        else:
            i += 1
    return "".join(out)


class Folded:
    """``summary`` (one line of markdown, shown) over ``markdown`` (tables and paragraphs) or ``text`` (preformatted),
    folded; exactly one of ``markdown`` and ``text``."""

    def __init__(self, summary: str, markdown: str | None = None, *, text: str | None = None) -> None:
        if (markdown is None) == (text is None):
            raise ValueError("Folded takes exactly one of markdown= and text=")
        if not summary.strip():
            raise ValueError("Folded needs a non-empty summary: the line a reader sees before opening it")
        self.summary, self.markdown, self.text = summary, markdown, text

    def _repr_html_(self) -> str:
        inner = markdown_html(self.markdown) if self.markdown is not None else f"<pre>{html.escape(self.text or '')}</pre>"
        return f'<details class="ace-fold"><summary>{_inline(self.summary)}</summary>{inner}</details>'

    def _repr_markdown_(self) -> str | None:
        return self.markdown

    def __repr__(self) -> str:
        return f"{self.summary}\n\n{self.markdown if self.markdown is not None else self.text}"


__all__ = ["Folded", "markdown_html"]
