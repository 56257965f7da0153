"""The "ours" cell of a combined claim row: one paper claim checked once per model, pair or run, said in one line.

:meth:`ace_helpers.repro.report.Claims.combine` makes the row; :func:`combined_ours` writes its text from the parts'
rows (each has ``claim``, ``ours``, ``passed`` and ``verdict``), naming each part and keeping its numbers
(:func:`numbers_only`), while each part's own row keeps its details.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any


def combined_ours(parts: Sequence[Any], held: int, unit: str) -> str:
    """The "ours" cell of a combined row: ``"k of N {unit}: "`` then each part named by its claim's text before the
    first colon (the model, pair or run) with its numbers, less their parenthesised details (each part's own row
    keeps them), and its verdict where it does not hold (``"3 of 4 models: a R² 0.83; b R² 0.47 (not reproduced); …"``).
    Parts without such a name, or whose names repeat, are listed by verdict instead (``"reproduced: 0.83; …"``)."""
    names = [r.claim.split(":", 1)[0].strip() for r in parts]
    head = f"{held} of {len(parts)} {unit}"
    if any(":" not in r.claim for r in parts) or len(set(names)) < len(parts) or not all(names):
        return f"{head} (" + "; ".join(f"{r.verdict}: {numbers_only(r.ours)}" for r in parts) + ")"
    return f"{head}: " + "; ".join(
        f"{name} {numbers_only(r.ours)}" + ("" if r.passed else f" ({r.verdict})") for name, r in zip(names, parts)
    )


def numbers_only(text: str) -> str:
    """``text`` without its parenthesised asides (``"R² 0.83 (null median 0.35, p 0.0001)"`` -> ``"R² 0.83"``), or
    ``text`` itself when nothing would be left or its parentheses do not balance."""
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return text
        elif depth == 0:
            out.append(ch)
    short = re.sub(r"\s+([;,])", r"\1", re.sub(r"\s{2,}", " ", "".join(out))).strip()
    return short if depth == 0 and short else text
