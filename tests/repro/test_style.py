"""The formatter and the linter run: ``ruff format --check`` and ``ruff check`` pass on every formatted package, and
no formatted package asks the formatter to skip a line.  :data:`FORMATTED` grows package by package until it is the
whole of ``ace_helpers``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The packages formatted so far (ruff, configured in pyproject.toml).
FORMATTED = (
    "ace_helpers/method", "ace_helpers/toys", "ace_helpers/llm", "ace_helpers/repro",
    "ace_helpers/chapters/ace_planted_system", "ace_helpers/chapters/ace_vs_alternatives", "ace_helpers/chapters/markov_run",
    "ace_helpers/chapters/toy_views", "ace_helpers/chapters/modadd_grokking", "ace_helpers/chapters/__init__.py",
    "ace_helpers/chapters/paper_runs.py", "ace_helpers/chapters/rule_tables.py", "ace_helpers/chapters/sweep.py",
    "ace_helpers/chapters/training_knobs.py",
    "ace_helpers/chapters/markov_cores", "ace_helpers/chapters/core_inflation",
    "ace_helpers/chapters/grokking_scaling_law", "ace_helpers/chapters/modadd",
)


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]], ids=["format", "check"])
def test_the_formatted_packages_pass_ruff(command):
    done = subprocess.run([sys.executable, "-m", "ruff", *command, *FORMATTED], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_formatted_package_skips_the_formatter():
    skips = [f"{p.relative_to(ROOT)}:{i}" for folder in FORMATTED for p in sorted((ROOT / folder).rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if "fmt: skip" in line or "fmt: off" in line]
    assert not skips, skips


def test_ruff_sees_a_badly_formatted_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("x=( 1,\n2)\n")
    done = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", str(bad)], capture_output=True, text=True)
    assert done.returncode == 1
