"""The reproducible kernels: the setting, its fingerprint against the AVX2-only reference, the thread rule."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ace_helpers.repro import fingerprint, kernels, thread_pools
from ace_helpers.toys.precision import cpu_info

EXPECTED = Path(__file__).parents[1] / "data" / "kernel_fingerprint.txt"


def _run(code: str, **env: str) -> str:
    """``code`` in a fresh interpreter whose environment is this one's without the setting, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in (*kernels.PINNED, kernels.MODE_VARIABLE, "TORCH_THREADS")}
    return subprocess.run([sys.executable, "-c", code], env=base | env, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(kernels.supported() is not None, reason="the setting needs an x86-64 CPU with AVX2")
def test_the_fingerprint_under_the_setting_matches_the_reference():
    """Every operation of the fingerprint, computed under the setting started by ``python -m
    ace_helpers.repro.kernels``, hashes as in the reference: the vendor-neutral lines (16 of them the
    AVX2-only AMD EPYC's) on every CPU, and the lines of this CPU's vendor where the reference has them."""
    expected = fingerprint.read_expected(EXPECTED)
    neutral = fingerprint.read_expected(EXPECTED, vendor="none")
    assert len(neutral) == 22 and len(expected) >= len(neutral)
    base = {k: v for k, v in os.environ.items() if k not in kernels.PINNED}
    done = subprocess.run([sys.executable, "-m", "ace_helpers.repro.kernels", "--fingerprint", "--compare", str(EXPECTED)],
                          env=base, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(expected)} of {len(expected)} operations bit-identical" in done.stdout
    assert "kernels: reproducible" in done.stdout.splitlines()[0]


def test_vendor_lines_are_kept_for_their_vendor_and_listed_elsewhere(tmp_path):
    ref = tmp_path / "f.txt"
    ref.write_text("# c\nop a: 1\n[GenuineIntel] op b: 2\n[AuthenticAMD] op c: 3\n[GenuineIntel] op c: 4\n")
    assert fingerprint.read_expected(ref, vendor="GenuineIntel") == {"op a": "1", "op b": "2", "op c": "4"}
    assert fingerprint.read_expected(ref, vendor="AuthenticAMD") == {"op a": "1", "op c": "3"}
    assert fingerprint.unmeasured(ref, vendor="AuthenticAMD") == ["op b"]
    assert fingerprint.unmeasured(ref, vendor="GenuineIntel") == []
    assert fingerprint.unmeasured(ref, vendor="HygonGenuine") == ["op b", "op c"]
    ref.write_text("[Genuine Intel op: 1\n")
    with pytest.raises(ValueError, match="f.txt:1: expected"):
        fingerprint.read_expected(ref)


def test_the_fingerprint_can_fail():
    """A changed hash, a missing operation, and a malformed file are each reported."""
    mine = ["op a: 1111", "op b: 2222"]
    assert fingerprint.compare(mine, {"op a": "1111", "op b": "2222"}) == (2, [])
    assert fingerprint.compare(mine, {"op a": "1111", "op b": "9999", "op c": "0"}) == (1, ["differs: op b", "missing: op c"])


def test_read_expected_rejects_a_malformed_line(tmp_path):
    bad = tmp_path / "f.txt"
    bad.write_text("# comment\nop a: 1111\nno hash here\n")
    with pytest.raises(ValueError, match="f.txt:3: expected .*.operation: hash."):
        fingerprint.read_expected(bad)


def test_mode_is_checked_and_named():
    assert kernels.mode({}) == "reproducible" and kernels.mode({"ACE_KERNELS": "native"}) == "native"
    with pytest.raises(ValueError, match="ACE_KERNELS='fast' is not allowed: ACE_KERNELS must be one of \\['reproducible', 'native'\\]"):
        kernels.mode({"ACE_KERNELS": "fast"})


@pytest.mark.skipif(kernels.supported() is not None, reason="the setting needs an x86-64 CPU with AVX2")
def test_apply_sets_the_pinned_variables_unless_native():
    env = {"PATH": "/bin"}
    assert kernels.apply(env) == dict(kernels.PINNED) and env == {"PATH": "/bin", **kernels.PINNED}
    native = {"ACE_KERNELS": "native"}
    assert kernels.apply(native) == {} and native == {"ACE_KERNELS": "native"}
    assert kernels.environment({"X": "1"}) == {"X": "1", **kernels.PINNED}


@pytest.mark.skipif(kernels.supported() is not None, reason="the setting needs an x86-64 CPU with AVX2")
def test_a_process_says_whether_it_runs_under_the_setting():
    """The banner line tells a process started under the setting from one that was not, and why."""
    code = "import torch, numpy; from ace_helpers.repro.kernels import describe; print(describe())"
    assert _run(code, **kernels.PINNED).startswith("kernels: reproducible")
    outside = _run(code)
    assert outside.startswith("kernels: NOT under the reproducible setting") and "ATEN_CPU_CAPABILITY is None" in outside
    assert "python -m ace_helpers.kernels -- COMMAND" in outside
    assert _run(code, ACE_KERNELS="native").startswith("kernels: native")


def test_the_kernels_command_runs_a_command_under_the_setting_and_checks_its_arguments():
    code = "import os; print(os.environ.get('ATEN_CPU_CAPABILITY'), os.environ.get('NPY_DISABLE_CPU_FEATURES'))"
    base = {k: v for k, v in os.environ.items() if k not in kernels.PINNED}
    out = subprocess.run([sys.executable, "-m", "ace_helpers.repro.kernels", "--", sys.executable, "-c", code],
                         env=base, capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.split(None, 1) == ["avx2", "X86_V4 AVX512_ICL AVX512_SPR\n"] or kernels.supported() is not None
    done = subprocess.run([sys.executable, "-m", "ace_helpers.repro.kernels", "--compare", "x.txt"], capture_output=True, text=True)
    assert done.returncode == 2 and "--compare needs --fingerprint" in done.stderr
    done = subprocess.run([sys.executable, "-m", "ace_helpers.repro.kernels", "--", "no-such-command-here"], capture_output=True, text=True)
    assert done.returncode == 127 and "no such command 'no-such-command-here'" in done.stderr


def test_under_the_setting_every_process_computes_with_one_thread(monkeypatch):
    """Thread counts change sums, so the reproducible setting overrides TORCH_THREADS and the budget;
    native honours them."""
    import torch

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("ACE_KERNELS", raising=False)
        monkeypatch.setenv("TORCH_THREADS", "2")
        assert thread_pools.set_threads() == 1 and thread_pools.set_threads(2) == 1 and os.environ["OPENBLAS_NUM_THREADS"] == "1"
        monkeypatch.setenv("ACE_KERNELS", "native")
        assert thread_pools.set_threads() == 2 and os.environ["OPENBLAS_NUM_THREADS"] == "2"
    finally:
        torch.set_num_threads(before)
        thread_pools.limit_pools(1)


@pytest.mark.skipif(kernels.supported() is not None, reason="the setting needs an x86-64 CPU with AVX2")
def test_a_training_chapter_writes_the_same_results_with_one_thread_and_with_two(tmp_path, monkeypatch):
    """Chapter 1 at the ci preset (it trains its models), executed with TORCH_THREADS=1 and =2 under the
    setting: the same results.json, timing keys and the output folder aside."""
    import json
    import re

    from ace_helpers.repro.artifacts import project_root
    from ace_helpers.repro.runbook import run_source

    monkeypatch.delenv("ACE_KERNELS", raising=False)
    timing = re.compile(r"(wall|cpu|train|chain)_s$")
    seen = []
    for threads in ("1", "2"):
        monkeypatch.setenv("TORCH_THREADS", threads)
        out = tmp_path / threads
        nb, _ = run_source(project_root() / "notebooks" / "01_markov_cores.py", {"PRESET": "ci", "OUTPUT_DIR": str(out)})
        assert any("kernels: reproducible" in o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
        results = json.loads((out / "results.json").read_text())
        results["params"].pop("OUTPUT_DIR")
        seen.append({k: v for k, v in results.items() if not timing.search(k)})
    assert seen[0] == seen[1]


def test_manifests_record_the_kernel_setting(monkeypatch):
    from ace_helpers.repro.machine import machine

    monkeypatch.setenv("ACE_KERNELS", "native")
    assert machine()["kernels"] == "native"
    monkeypatch.delenv("ACE_KERNELS")
    assert machine()["kernels"] == ("reproducible" if not kernels.problems() else "not in force")
    code = "import torch; from ace_helpers.repro.artifacts import machine; print(machine()['kernels'])"
    if kernels.supported() is None:
        assert _run(code, **kernels.PINNED).strip() == "reproducible" and _run(code).strip() == "not in force"
