"""``benchmarks/gpu.py`` refuses what it cannot measure before any work, and its quick check runs on the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal cannot be seen here")
def test_an_absent_device_and_an_unknown_step_are_refused_at_once():
    done = _run("--device", "cuda")
    assert done.returncode == 1 and "device='cuda' is not allowed here: torch sees no CUDA device" in done.stderr
    done = _run("--device", "cpu", "--only", "matmul,markvo")
    assert done.returncode == 1 and "no step ['markvo']; the steps are ['matmul', 'markov'" in done.stderr


def test_the_quick_check_reports_the_matmul_rate(tmp_path):
    out = tmp_path / "report.txt"
    done = _run("--device", "cpu", "--quick", "--only", "matmul", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert "not a measurement" in lines[1] and lines[2].startswith("matmul: bf16 ") and lines[2].endswith(" TFLOP/s")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal cannot be seen here")
def test_the_fusion_benchmark_refuses_an_absent_device_before_any_work():
    fusion = SCRIPT.parent / "trainer_fusion.py"
    done = subprocess.run([sys.executable, str(fusion), "--device", "cuda"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "device='cuda' is not allowed here: torch sees no CUDA device" in done.stderr
    done = _run("--device", "cpu", "--only", "fusoin")
    assert done.returncode == 1 and "'fusion'" in done.stderr
