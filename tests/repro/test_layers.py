"""The library's layers, read from the imports of every module.

Imports run one way: method <- toys, llm <- repro (the book's machinery) <- chapters <- notebooks (the
contracts themselves, with import-linter: tests/repro/test_import_contracts.py).  Here, read from each
file: the method, toys and llm wings name no chapter, book module or preset, and every module is
small (at most 400 lines) and says its job.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ace_helpers"
MODULES = sorted(PACKAGE.rglob("*.py"))
PRESET_NAMES = {"ci", "book", "paper"}
MAX_LINES = 400


def _name(path: Path) -> str:
    return ".".join(("ace_helpers", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")


def _layer(path: Path) -> str:
    """``"wings"`` (method, toys, llm), ``"repro"`` (the book's machinery and the shims at the top) or ``"chapters"``."""
    first = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if first == "chapters":
        return "chapters"
    return "wings" if first in ("method", "toys", "llm") else "repro"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in out if m.startswith("ace_helpers")}


@pytest.mark.parametrize("path", MODULES, ids=[_name(p) for p in MODULES])
def test_imports_run_one_way(path):
    layer = _layer(path)
    above = {"wings": ("ace_helpers.chapters", "ace_helpers.repro"), "repro": ("ace_helpers.chapters",), "chapters": ()}[layer]
    bad = sorted(m for m in _imports(path) if above and m.startswith(above))
    assert not bad, f"{_name(path)} ({layer} layer) imports a layer above it: {bad}"


@pytest.mark.parametrize("path", MODULES, ids=[_name(p) for p in MODULES])
def test_the_wings_have_no_presets(path):
    if _layer(path) != "wings":
        return
    strings = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & PRESET_NAMES, f"module {_name(path)} names a preset: {sorted(strings & PRESET_NAMES)}"


@pytest.mark.parametrize("path", MODULES, ids=[_name(p) for p in MODULES])
def test_each_module_is_small_and_says_its_job(path):
    text = path.read_text()
    doc = ast.get_docstring(ast.parse(text))
    assert doc and doc.strip().splitlines()[0].strip(), f"{_name(path)} has no docstring stating its job"
    assert len(text.splitlines()) <= MAX_LINES, f"{_name(path)} has {len(text.splitlines())} lines (limit {MAX_LINES})"


def test_the_layer_check_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""x."""\nfrom ace_helpers.chapters import markov_cores\nimport ace_helpers.chapters.modadd.run\n')
    assert _imports(bad) >= {"ace_helpers.chapters", "ace_helpers.chapters.markov_cores", "ace_helpers.chapters.modadd.run"}
