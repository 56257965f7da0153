"""The house's import rules, read from the code: the import-linter contracts of ``pyproject.toml`` (layers,
independent chapters, acyclic siblings), no import cycle between any two modules, and imports at the top
of their modules (an import inside a function is there for load time only, and says so)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import grimp
import pytest
from importlinter import cli

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ace_helpers"
MODULES = sorted(PACKAGE.rglob("*.py"))


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted: the import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_linter_contracts_hold():
    assert cli.lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0, "lint-imports: a contract is broken (run it to see which)"


def test_no_import_cycle_between_any_two_modules():
    graph = grimp.build_graph("ace_helpers")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert cycles(edges) == []


def test_the_cycle_finder_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def _inner_imports(path: Path) -> list[tuple[int, str]]:
    """(line, source line) of every import below module level."""
    text = path.read_text()
    tree = ast.parse(text)
    top = {id(n) for n in tree.body}
    lines = text.splitlines()
    return [(n.lineno, lines[n.end_lineno - 1]) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_imports_sit_at_the_top_unless_for_load_time(path):
    bad = [f"l.{n}: {line.strip()}" for n, line in _inner_imports(path) if "load time" not in line]
    assert not bad, f"{path.relative_to(ROOT)} imports inside a function without a load-time reason: {bad}"


def test_the_inner_import_check_sees_one(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""x."""\n\n\ndef f():\n    import json\n    return json\n')
    assert [n for n, _ in _inner_imports(bad)] == [5]


def test_a_shared_chapter_package_importing_a_chapter_breaks_a_contract(tmp_path):
    """The forbidden contract fails in a scratch copy where the shared Markov run imports chapter 1."""
    shutil.copytree(PACKAGE, tmp_path / "ace_helpers", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    run = tmp_path / "ace_helpers" / "chapters" / "markov_run" / "run.py"
    run.write_text(run.read_text() + "\nimport ace_helpers.chapters.markov_cores  # noqa: E402,F401\n")
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter import cli; sys.exit(cli.lint_imports("
                           "config_filename='pyproject.toml'))"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tmp_path), "PATH": ""})
    assert done.returncode != 0 and "The shared chapter packages import no chapter" in done.stdout + done.stderr


def test_every_importlib_target_resolves():
    """The modules reached by importlib, which the contracts above cannot see: each notebook's chapter module
    (the seed check), every job function a stored sweep artifact names (the sweeps resume by it), and the package's
    lazily imported functions.  A renamed module breaks this test, not a user's resumed run."""
    import json

    import ace_helpers
    from ace_helpers.repro import seed_check, sweeps

    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    assert stems and all(seed_check.chapter_module(stem).PARAMS.notebook == stem for stem in stems)
    fns = {json.loads(p.read_text()).get("params", {}).get("fn") for p in (ROOT / "book" / "artifacts").rglob("*.manifest.json")}
    fns.discard(None)
    assert fns, "no stored job artifact names its function"
    assert all(callable(sweeps.resolve(fn)) for fn in sorted(fns))
    assert all(callable(getattr(ace_helpers, name)) for name in ace_helpers._LAZY_FUNCTIONS)
