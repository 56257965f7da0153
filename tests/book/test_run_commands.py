"""Every `papermill` command the book prints (chapter text, README) passes the chapter's knob check.

A reader copies these commands; when a preset changes (e.g. the ``ci`` fork epoch moved past an
example's ``EPOCHS``), an example that no longer validates would stop in its second cell.  Each
command is parsed the way papermill parses it (``-p`` values through papermill's own type
resolution, ``-y`` through YAML, ``ACE_PRESET=`` in front) and resolved with the chapter's
``PARAMS.resolve``, which raises on any bad knob before compute starts.
"""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest
import yaml
from papermill.cli import _resolve_type

ROOT = Path(__file__).resolve().parents[2]
#: ``[ACE_PRESET=x ]papermill NN_name.ipynb OUT OPTIONS`` up to a closing backtick or the end of the line
COMMAND = re.compile(r"(?:ACE_PRESET=(\w+) )?papermill (\d\d_\w+)\.ipynb \S+([^`]*)")


def _chapter_module(stem: str):
    """The ``ace_helpers.chapters`` module the notebook ``stem`` imports as ``chapter``."""
    source = (ROOT / "notebooks" / f"{stem}.py").read_text()
    match = re.search(r"^from ace_helpers\.chapters import (\w+) as chapter$", source, re.M)
    assert match, f"{stem}.py does not import its chapter module as `chapter`"
    return importlib.import_module(f"ace_helpers.chapters.{match.group(1)}")


def _knobs(env_preset: str | None, args: str) -> dict:
    """The knobs a command line passes: ``-p NAME VALUE`` and ``-y YAML`` options, plus ``ACE_PRESET``."""
    words = shlex.split(args)
    knobs: dict = {}
    i = 0
    while i < len(words):
        if words[i] == "-p":
            knobs[words[i + 1]] = _resolve_type(words[i + 2])
            i += 3
        elif words[i] == "-y":
            knobs.update(yaml.safe_load(words[i + 1]))
            i += 2
        else:
            raise AssertionError(f"unexpected word {words[i]!r} in {args!r}")
    if env_preset and "PRESET" not in knobs:
        knobs["PRESET"] = env_preset
    return knobs


def _commands() -> list[tuple[str, str, dict]]:
    found = []
    for path in [*sorted((ROOT / "notebooks").glob("*.py")), ROOT / "README.md", *sorted((ROOT / "book").glob("*.md"))]:
        for line in path.read_text().splitlines():
            text = line.lstrip("# ")
            for m in COMMAND.finditer(text):
                found.append((f"{path.name}: {m.group(0)}", m.group(2), _knobs(m.group(1), m.group(3))))
    return found


COMMANDS = _commands()


def test_commands_are_found():
    stems = {stem for _, stem, _ in COMMANDS}
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.py")}
    assert stems == notebooks, f"chapters without a printed run command: {sorted(notebooks - stems)}"


def _write_prompts(path: Path) -> None:
    """A small valid prompts file (the reader's own file in the printed command): 5 prompts of each number."""
    rows = [f"The {noun} near the {other},{number}" for number, (noun, other) in
            [("singular", ("key", "cabinets")), ("plural", ("keys", "cabinet"))] * 5]
    path.write_text("prompt,number\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize("where, stem, knobs", COMMANDS, ids=[c[0][:90] for c in COMMANDS])
def test_printed_command_validates(where, stem, knobs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the command runs; a file it names is the reader's own
    if isinstance(knobs.get("PROMPTS_FILE"), str):
        _write_prompts(tmp_path / knobs["PROMPTS_FILE"])
    knobs = dict(knobs, OUTPUT_DIR=str(tmp_path / "out"))
    _chapter_module(stem).PARAMS.resolve(**knobs)  # raises ValueError naming the bad knob
