"""Every Python block of the README runs, so the examples cannot rot."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)


def test_the_readme_has_python_examples():
    assert BLOCKS, "the README lost its Python examples"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(code, tmp_path):
    script = tmp_path / "example.py"  # a file, not stdin: nnsight reads the source of traced blocks
    script.write_text(code)
    env = dict(os.environ, TORCH_THREADS="1", OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, f"README example failed:\n{run.stderr[-3000:]}"


def test_the_quick_start_page_shows_the_readme_llm_example():
    """The book's Quick start page carries the README's LLM example verbatim (so the tests above run it)."""
    page = re.findall(r"```python\n(.*?)```", (ROOT / "book" / "quickstart.md").read_text(), flags=re.DOTALL)
    llm_blocks = [b for b in BLOCKS if "layer_sweep" in b]
    assert len(page) == 1 and llm_blocks == page, "book/quickstart.md and the README's LLM example differ"
    assert "ace_helpers.chapters" not in page[0], "the quick start must use the library only, no chapter code"
