"""A function's code as text that formatting does not change, for the fingerprints of the rules ledger
(:meth:`~ace_helpers.repro.rules.Rule.fingerprint`): a rule is "changed" when what it computes changes, not when the
formatter rewraps it."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any


def code_key(fn: Any) -> str:
    """What a function computes, as text that formatting does not change: the dump of its source's syntax tree
    (without line numbers, comments or its own name); where the source cannot be read or parsed on its own (a
    lambda inside a longer expression), its source text or its qualified name."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return getattr(fn, "__qualname__", repr(fn))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.name = ""
    return ast.dump(tree, include_attributes=False)
