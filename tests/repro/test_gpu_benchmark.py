"""``benchmarks/gpu.py`` refuses what it cannot measure before any work, and its quick check runs on the CPU."""

from __future__ import annotations

import os
import runpy
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
    assert done.returncode == 1 and "no step ['markvo']; the steps are ['tests', 'matmul', 'markov'" in done.stderr


def test_the_quick_check_reports_the_matmul_rate(tmp_path):
    out = tmp_path / "report.txt"
    done = _run("--device", "cpu", "--quick", "--only", "matmul", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert "not a measurement" in lines[1] and lines[2].startswith("matmul: bf16 ") and lines[2].endswith(" TFLOP/s")


def test_the_tests_step_runs_the_tests_marked_cuda_and_reports_pytests_summary(tmp_path):
    bench = runpy.run_path(str(SCRIPT))
    files = bench["cuda_test_files"]()
    assert {"tests/method/test_devices.py", "tests/llm/test_precision.py"} <= set(files)
    assert "tests/repro/test_gpu_benchmark.py" not in files  # the marker only in a string here
    out = tmp_path / "report.txt"
    done = _run("--device", "cpu", "--only", "tests", "--out", str(out))
    assert done.returncode == 0, done.stderr
    line = out.read_text().splitlines()[2]
    want = "passed" if torch.cuda.is_available() else "skipped"  # where torch sees no GPU, every one is skipped
    assert line.startswith(f"tests (marked cuda, {len(files)} files): ") and f" {want}" in line, line
    assert "failed" not in line
    fake = tmp_path / "repo"  # a failing test marked cuda: the step fails, naming pytest's summary
    (fake / "tests").mkdir(parents=True)
    (fake / "tests" / "test_one.py").write_text("import pytest\n\n@pytest.mark.cuda\ndef test_one():\n    assert False\n\n"
                                               "def test_unmarked():\n    assert False\n")
    with pytest.raises(SystemExit, match=r"the CUDA tests: 1 failed, 1 deselected.* in [0-9.]+s \(pytest status 1\)"):
        bench["tests_step"](60, fake)
    (fake / "tests" / "test_one.py").write_text("import time\nimport pytest\n\n@pytest.mark.cuda\ndef test_one():\n    time.sleep(30)\n")
    assert bench["tests_step"](3, fake) is None  # stopped at its time


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal cannot be seen here")
def test_the_fusion_benchmark_refuses_an_absent_device_before_any_work():
    fusion = SCRIPT.parent / "trainer_fusion.py"
    done = subprocess.run([sys.executable, str(fusion), "--device", "cuda"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "device='cuda' is not allowed here: torch sees no CUDA device" in done.stderr
    done = _run("--device", "cpu", "--only", "fusoin")
    assert done.returncode == 1 and "'fusion'" in done.stderr


def test_a_spent_budget_stops_a_step_and_skips_the_rest_and_bad_budgets_are_refused(tmp_path):
    out = tmp_path / "report.txt"
    done = _run("--device", "cpu", "--quick", "--only", "modadd,fusion", "--budget", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert lines[1].endswith("; budget 2 s")
    assert lines[2].startswith("modadd (chapters 2-3, trained and analysed): stopped at the budget after ")
    assert lines[2].endswith("s, not finished (target 300 s)") and lines[3] == "fusion: skipped, the budget of 2 s was spent"
    for bad in ("0", "-5", "nan"):
        done = _run("--device", "cpu", "--only", "matmul", "--budget", bad)
        assert done.returncode == 1 and f"--budget {float(bad)}: give the seconds the steps may take" in done.stderr


def test_an_official_path_that_is_no_checkout_is_refused_before_any_work(tmp_path):
    done = _run("--device", "cpu", "--only", "matmul,official", "--official", str(tmp_path))
    assert done.returncode == 1 and "is not a checkout of the paper's code release (joshseth/cores): it lacks markov.py, modadd.py, src/cores/markov.py" in done.stderr
    assert "matmul:" not in done.stdout


KIT = SCRIPT.parent / "gpu_kit.py"


def test_the_kit_reads_a_targets_package_list_and_leaves_out_the_gpu_stack(tmp_path):
    kit = runpy.run_path(str(KIT), run_name="gpu_kit")
    listing = tmp_path / "have.txt"
    listing.write_text("Package    Version\n---------- -------\nNumPy      2.5.2\ntyping_extensions 4.15\n"
                       "scipy==1.17.1\npydantic-core @ file:///x.whl\n")  # fmt: skip
    assert kit["read_have"](listing) == {"numpy", "typing-extensions", "scipy", "pydantic-core"}
    found = kit["requirements_closure"]({"pydantic"}, "3.12")
    assert {"pydantic", "pydantic-core", "annotated-types", "typing-inspection", "typing-extensions"} <= set(found)
    pack, left = kit["plan"](found | {"torch": "2.13.0", "nvidia-cublas": "13.1", "ace-helpers": "0.1"},
                             {"typing-extensions", "pydantic-core"})  # fmt: skip
    assert set(pack) == {"pydantic", "annotated-types", "typing-inspection"}
    assert left["torch"].startswith("the GPU stack") and left["nvidia-cublas"].startswith("the GPU stack")
    assert left["pydantic-core"] == "the target has it" and "travels with the working tree" in left["ace-helpers"]


def test_the_kit_and_the_device_script_refuse_bad_input_before_any_download(tmp_path):
    def kit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(KIT), "--out", str(tmp_path / "kit"), *args], capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip

    assert "--python '3': give the target's Python as major.minor" in kit("--python", "3").stderr
    assert "--have nope.txt: no such file" in kit("--have", "nope.txt").stderr
    assert "is not a checkout of the paper's code release" in kit("--official", str(tmp_path)).stderr
    assert not (tmp_path / "kit").exists()
    device = subprocess.run(["bash", str(SCRIPT.parent / "gpu_device.sh")], capture_output=True, text=True, timeout=60,
                            check=False, env={**os.environ, "GPU_KIT": str(tmp_path / "none"), "GPU_RESULTS": str(tmp_path)})  # fmt: skip
    assert device.returncode == 2 and f"no kit at {tmp_path / 'none'}/whl" in device.stderr


def test_a_failing_step_is_reported_and_the_next_one_runs_in_the_order_given(tmp_path):
    checkout = tmp_path / "cores"
    (checkout / "src" / "cores").mkdir(parents=True)
    for script in ("markov.py", "modadd.py", "src/cores/markov.py"):
        (checkout / script).write_text("raise SystemExit(3)\n")
    out = tmp_path / "report.txt"
    done = _run("--device", "cpu", "--quick", "--only", "official,matmul", "--official", str(checkout), "--out", str(out))
    assert done.returncode == 1 and "steps that failed: ['official']" in done.stderr
    lines = out.read_text().splitlines()
    assert lines[2] == "official: failed: official modadd.py failed (3):" and lines[3].startswith("matmul: bf16 ")
    (checkout / "modadd.py").write_text("import sys\nassert sys.argv[1:] == ['--quick']\n")
    done = _run("--device", "cpu", "--quick", "--only", "official", "--official", str(checkout), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines()[2] == "official modadd.py --quick: 0 s"


def test_the_device_script_runs_the_benchmark_and_packs_what_it_stored(tmp_path):
    (tmp_path / "kit" / "whl").mkdir(parents=True)  # a kit for a machine that has every package: no wheel
    env = {**os.environ, "GPU_KIT": str(tmp_path / "kit"), "GPU_RESULTS": str(tmp_path / "out"), "PYTHON": sys.executable}
    done = subprocess.run(["bash", "benchmarks/gpu_device.sh", "--device", "cpu", "--quick", "--only", "matmul"],
                          cwd=SCRIPT.parents[1], capture_output=True, text=True, timeout=300, check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "gpu.txt").read_text().splitlines()[2].startswith("matmul: bf16 ")
    assert "matmul: bf16 " in (tmp_path / "out" / "log.txt").read_text()
    assert "stored runs: " in done.stdout and "(0 files)" in done.stdout  # the quick matmul stores nothing
    assert (tmp_path / "out" / "runs.tar.gz").is_file()
