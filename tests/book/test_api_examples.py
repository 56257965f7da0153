"""Every Python example of the library reference page (book/api.md) runs and prints what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "book" / "api.md").read_text(), flags=re.DOTALL)
EXPECTED = ["2 8", "[1. 1. 1.]", "0.9", "2"]  # a line each example's comment promises


def test_the_reference_page_has_an_example_per_group():
    assert len(BLOCKS) == len(EXPECTED)


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_each_example_runs(i, tmp_path):
    run = subprocess.run([sys.executable, "-c", BLOCKS[i]], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         check=False)
    assert run.returncode == 0, f"example {i} failed:\n{run.stderr[-3000:]}"
    assert EXPECTED[i] in run.stdout, f"example {i} printed {run.stdout!r}"
