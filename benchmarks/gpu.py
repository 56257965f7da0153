"""The book's GPU targets, measured side by side in one run on one device (and the official code's, given a checkout).

Steps (``--only`` picks some and their order; all by default, in this order), each timed on ``--device`` (default ``cuda``):

* ``tests``: the book's tests marked ``cuda`` (the trainers, bf16 autocast and the language-model path on the GPU;
  skipped with their reason where torch sees no CUDA device), run with pytest from the files that hold them;
* ``matmul``: the device's bf16 matrix-product rate (n × n products), the roofline the training rates are divided by;
* ``markov``: chapter 1's training at the paper's settings (3 seeds × 40 epochs of 3 000 sequences, the ensemble
  trainer), its wall time and achieved FLOP/s (≈ 6 · parameters · tokens) as a fraction of the matmul rate;
* ``modadd``: chapters 2–3's paper run, trained and analysed at every checkpoint
  (``python -m ace_helpers.chapters.modadd --preset paper --trainer ensemble --precision bf16 --device …``);
* ``sweeps``: chapter 4's paper-settings sweeps, every ω and p run
  (``python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper --device … --in-process``; with
  ``--device cuda`` on a machine of several GPUs, ``--gpus N``: one Dask worker per GPU);
* ``fusion``: one training step of chapters 1 and 2-3's ensembles eager, compiled (``torch.compile``) and, on a GPU,
  replayed as CUDA graphs (``benchmarks/trainer_fusion.py --device …``): what fused kernels and graphs buy;
* ``variants``: with ``--keep``, chapters 1, 2 and 3 executed on the device as named variants of their ``book`` run
  (``python -m ace_helpers.variants NOTEBOOK --name <device>-bf16 --set DEVICE=… PRECISION=bf16``): their verdicts
  are stored beside the CPU run's and compared claim by claim on the reproducibility page (needs papermill);
* ``official``: with ``--official PATH`` (a checkout of the paper's code release), its ``markov.py`` and
  ``modadd.py --quick`` from a scratch copy, on the same machine, right after ours.

The targets (the GPU issue of this book): chapter 1 ≤ 30 s, chapters 2–3 ≤ 5 min, chapter 4 ≤ 10 min.  Runs are
stored in a temporary folder unless ``--keep`` (then where the chapters read them, keyed by the device kind).
``--quick`` shrinks every step (the ``ci`` preset, 2 epochs, n = 1024) to check the script on any device, the CPU
included, in a few minutes.

``--budget SECONDS`` bounds the whole run (time on a GPU is often short): a command step still running when the
budget is spent is stopped and its line says so, and the steps after it are skipped.  A step that fails is reported
as failed and the next one runs (the exit status is 1 then).  Each line is printed as it comes and ``--out`` is
rewritten after every step, so a run stopped from outside keeps what it measured.

On an offline GPU machine without the book's packages: ``python benchmarks/gpu_kit.py`` here packs the wheels
and the official code, and ``bash benchmarks/gpu_device.sh [flags of this script]`` there runs it (see both).

Usage::

    python benchmarks/gpu.py [--device cuda] [--official ~/src/cores] [--quick] [--keep] [--budget S] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from ace_helpers.chapters.markov_run.run import model_seeds, train_models
from ace_helpers.method.devices import describe_device, resolve_device
from ace_helpers.repro.artifacts import atomic_write_bytes, write_report
from ace_helpers.repro.machine import machine_line
from ace_helpers.repro.official import check_official, copy_official
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("tests", "matmul", "markov", "modadd", "sweeps", "fusion", "variants", "official")
#: the chapters the ``variants`` step runs on the device
VARIANT_CHAPTERS = ("01_markov_cores", "02_modadd_grokking", "03_core_inflation")
TARGET_S = {"markov": 30.0, "modadd": 300.0, "sweeps": 600.0}


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(device: torch.device, n: int, repeats: int = 10) -> float:
    """Best bf16 FLOP/s of an n × n by n × n product on ``device`` over ``repeats`` timed products (after a warm-up)."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    best = float("inf")
    for i in range(repeats + 1):
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        if i:
            best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def markov_step(device: torch.device, epochs: int, precision: str) -> tuple[float, float]:
    """(wall seconds, estimated training FLOPs) of chapter 1's three seeds on the paper's data."""
    data = markov_dataset(PAPER_CHAIN, 3000, 16, 32)
    sync(device)
    start = time.perf_counter()
    res = train_models(data, model_seeds(0, 3), epochs=epochs, method="ensemble", precision=precision, device=device)
    sync(device)
    wall = time.perf_counter() - start
    params = sum(p.numel() for p in res.models[0].parameters())
    tokens = data.train_inputs.numel()
    return wall, 6.0 * params * tokens * epochs * len(res.models)


def timed_run(cmd: list[str], cwd: Path, timeout: float | None, name: str) -> float | None:
    """Wall seconds of ``cmd`` run in ``cwd``, or None when it was stopped after ``timeout`` seconds; raises
    ``SystemExit`` ("``name`` failed (status): …" with the end of its output) when it fails."""
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False,
                              env=dict(os.environ, MPLBACKEND="Agg"), timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    if done.returncode:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def command_step(args: list[str], timeout: float | None = None) -> float | None:
    """Wall seconds of ``python -m …args`` run from the repository root (:func:`timed_run`)."""
    return timed_run([sys.executable, "-m", *args], ROOT, timeout, f"`python -m {' '.join(args)}`")


#: a test marked ``cuda``: decorated, or a parameter of one (``pytest.param("cuda", marks=pytest.mark.cuda)``)
CUDA_MARK = re.compile(r"^\s*@pytest\.mark\.cuda\b|marks=pytest\.mark\.cuda\b", re.MULTILINE)


def cuda_test_files(root: Path = ROOT) -> list[str]:
    """The test files (relative to ``root``) that hold tests marked ``cuda``."""
    return sorted(str(p.relative_to(root)) for p in (root / "tests").rglob("test_*.py") if CUDA_MARK.search(p.read_text()))


def tests_step(timeout: float | None, root: Path = ROOT) -> str | None:
    """pytest's summary of the tests marked ``cuda`` under ``root`` ("7 passed, 1 skipped in 31.2s"), or None when
    it was stopped after ``timeout`` seconds; raises ``SystemExit`` with the summary and the failures' report when
    one fails."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "cuda", *cuda_test_files(root)]
    try:
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    lines = done.stdout.strip().splitlines()
    summary = lines[-1].strip("= ") if lines else "no output"
    if done.returncode:
        raise SystemExit(f"the CUDA tests: {summary} (pytest status {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")
    return summary


def fusion_step(device: str, quick: bool) -> list[str]:
    """The report of ``benchmarks/trainer_fusion.py`` on ``device`` (its lines, indented under this step)."""
    steps = "1" if quick else "20"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "trainer_fusion.py"), "--device", device, "--rounds", "2",
                           "--steps", steps], cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"trainer_fusion.py failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return ["fusion (one training step: eager / compiled / CUDA graphs):"] + [f"  {line}" for line in done.stdout.splitlines()]


def official_step(checkout: Path, quick: bool, left: Callable[[], float | None]) -> dict[str, float | None]:
    """Wall seconds of the official code's ``markov.py`` and ``modadd.py --quick`` (from a ``checkout`` that
    ``check_official`` accepted), run in a scratch copy; None for a script stopped after ``left()`` seconds (the
    budget's rest when it starts)."""
    out: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory(prefix="official") as scratch:
        copy = copy_official(checkout, Path(scratch) / "cores")
        for script, extra in (("markov.py", []), ("modadd.py", ["--quick"])):
            if quick and script == "markov.py":
                continue
            name = f"{script} {' '.join(extra)}".strip()
            out[name] = timed_run([sys.executable, script, *extra], copy, left(), f"official {script}")
            if out[name] is None:
                break
    return out


def timed(name: str, wall: float | None, allowed: float | None, target: str = "") -> str:
    """A command step's report line: its wall seconds, or that it was stopped after ``allowed`` seconds."""
    if wall is not None:
        return f"{name}: {wall:.0f} s{target}"
    return f"{name}: stopped at the budget{f' after {allowed:.0f} s' if allowed else ''}, not finished{target}"


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none), for a report line."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Report:
    """The report's lines: each printed as it comes and, with ``out``, the whole report so far rewritten there
    atomically, so that a run stopped from outside still leaves the steps it finished."""

    def __init__(self, out: str | None) -> None:
        self.out = out
        self.lines: list[str] = []

    def add(self, *lines: str) -> None:
        """Print ``lines`` and append them to the report (and to ``out``)."""
        for line in lines:
            print(line, flush=True)
        self.lines += lines
        if self.out is not None:
            atomic_write_bytes(self.out, ("\n".join(self.lines) + "\n").encode())

    def finish(self) -> None:
        """Print the whole report once more, after a blank line."""
        write_report(self.lines, self.out)


class Bench:
    """The steps of one run (a method each, named as in :data:`STEPS`), sharing the device, the budget, the
    scratch folder and the matmul rate that later steps divide by."""

    def __init__(self, args: argparse.Namespace, device: torch.device, official: Path | None, report: Report,
                 work: Path) -> None:  # fmt: skip
        self.args, self.device, self.checkout, self.report, self.work = args, device, official, report, work
        self.preset = "ci" if args.quick else "paper"
        self.deadline = time.perf_counter() + args.budget if args.budget else float("inf")
        self.rate: float | None = None

    def left(self) -> float | None:
        """Seconds left of the budget (at least 1), or None without one."""
        return None if self.args.budget is None else max(1.0, self.deadline - time.perf_counter())

    def tests(self) -> None:
        """The tests marked ``cuda``, on this machine's GPU (they skip, saying so, where there is none)."""
        allowed = self.left()
        summary = tests_step(allowed)
        name = f"tests (marked cuda, {len(cuda_test_files())} files)"
        self.report.add(f"{name}: {summary}" if summary is not None else timed(name, None, allowed))

    def matmul(self) -> None:
        """The device's bf16 matrix-product rate (the roofline of the training rates)."""
        self.rate = matmul_rate(self.device, 1024 if self.args.quick or self.device.type == "cpu" else 8192)
        self.report.add(f"matmul: bf16 {self.rate / 1e12:.2f} TFLOP/s")

    def markov(self) -> None:
        """Chapter 1's three seeds at the paper's settings: wall time and achieved FLOP/s."""
        wall, flops = markov_step(self.device, 2 if self.args.quick else 40, "bf16" if self.device.type == "cuda" else "fp32")
        share = f", {flops / wall / self.rate:.1%} of the matmul rate" if self.rate else ""
        self.report.add(f"markov (chapter 1, 3 seeds): {wall:.1f} s (target {TARGET_S['markov']:.0f} s); "
                        f"{flops / wall / 1e12:.3f} TFLOP/s achieved{share}")  # fmt: skip

    def modadd(self) -> None:
        """Chapters 2-3's run (the paper preset), trained and analysed, as the long-run command does."""
        store = [] if self.args.keep else ["--snapshot-dir", str(self.work / "snapshots"), "--artifact-dir", str(self.work / "modadd")]
        allowed = self.left()
        wall = command_step(["ace_helpers.chapters.modadd", "--preset", self.preset, "--trainer", "ensemble",
                             "--precision", "bf16", "--device", self.args.device, *store], allowed)  # fmt: skip
        self.report.add(timed("modadd (chapters 2-3, trained and analysed)", wall, allowed, f" (target {TARGET_S['modadd']:.0f} s)"))

    def sweeps(self) -> None:
        """Chapter 4's sweeps, every omega and p run (one Dask worker per GPU on a machine of several)."""
        store = [] if self.args.keep else ["--store", str(self.work / "sweeps")]
        gpus = torch.cuda.device_count() if self.device.type == "cuda" and self.device.index is None else 1
        where = ["--device", "cuda", "--gpus", str(gpus)] if gpus > 1 else ["--device", self.args.device, "--in-process"]
        allowed = self.left()
        wall = command_step(["ace_helpers.chapters.sweep", "04_grokking_scaling_law", "--preset", self.preset, *where, *store],
                            allowed)  # fmt: skip
        self.report.add(timed(f"sweeps (chapter 4, every omega and p run, {gpus} device(s))", wall, allowed,
                              f" (target {TARGET_S['sweeps']:.0f} s)"))  # fmt: skip

    def fusion(self) -> None:
        """One training step eager, compiled and (on a GPU) replayed as CUDA graphs."""
        self.report.add(*fusion_step(self.args.device, self.args.quick))

    def variants(self) -> None:
        """Chapters 1-3 executed on the device as named variants of their run (with ``--keep``)."""
        if not self.args.keep:
            self.report.add("variants: skipped (they are stored in the book's results: give --keep)")
            return
        kind = self.device.type
        for stem in VARIANT_CHAPTERS:
            allowed = self.left()
            wall = command_step(["ace_helpers.variants", stem, "--preset", self.preset, "--name", f"{kind}-bf16",
                                 "--set", f"DEVICE={self.args.device}", "PRECISION=bf16"], allowed)  # fmt: skip
            self.report.add(timed(f"variant {stem} ({kind}, bf16)", wall, allowed) + ", stored in book/results/variants/")

    def official(self) -> None:
        """The official code's scripts on the same device (with ``--official``)."""
        assert self.checkout is not None, "the official step needs --official"
        for name, wall in official_step(self.checkout, self.args.quick, self.left).items():
            self.report.add(timed(f"official {name}", wall, None))


def main(argv: list[str] | None = None) -> None:
    """Parse the flags, check the device before any work, run the steps, print (and write) the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N, mps, cpu or auto (an absent device is refused)")
    ap.add_argument("--only", default=",".join(STEPS), help=f"comma-separated steps among {', '.join(STEPS)}, run in "
                    "the order given (default: all, in that order)")
    ap.add_argument("--official", type=Path, help="a checkout of the paper's code release (the official step)")
    ap.add_argument("--quick", action="store_true", help="small sizes: checks the script, measures nothing")
    ap.add_argument("--keep", action="store_true", help="store the runs where the chapters read them")
    ap.add_argument("--out", help="also write the report to this file (atomically, after each step)")
    ap.add_argument("--budget", type=float, default=None, help="seconds the steps may take in all: a command step is "
                    "stopped when they are spent (its line says so) and the steps after it are skipped")
    args = ap.parse_args(argv)
    steps = list(dict.fromkeys(s.strip() for s in args.only.split(",") if s.strip()))  # in the order given
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        raise SystemExit(f"--only {args.only!r}: no step {unknown}; the steps are {list(STEPS)}")
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if args.budget is not None and not args.budget > 0:
        raise SystemExit(f"--budget {args.budget}: give the seconds the steps may take, a positive number")
    if "official" in steps and args.official is None:
        steps.remove("official")
    official = check_official(args.official) if "official" in steps else None
    report = Report(args.out)
    failed = []
    with tempfile.TemporaryDirectory(prefix="gpu-bench") as tmp:
        bench = Bench(args, device, official, report, Path(tmp))
        report.add(f"{machine_line()}; {describe_device(args.device)}",
                   f"preset {bench.preset}{' (--quick: a check of the script, not a measurement)' if args.quick else ''}"
                   f"{f'; budget {args.budget:.0f} s' if args.budget else ''}")  # fmt: skip
        for step in steps:
            if time.perf_counter() >= bench.deadline:
                report.add(f"{step}: skipped, the budget of {args.budget:.0f} s was spent")
                continue
            try:
                getattr(bench, step)()
            except (Exception, SystemExit) as exc:  # one step's failure must not cost the steps after it
                traceback.print_exc()
                failed.append(step)
                report.add(f"{step}: failed: {first_line(exc)}")
    report.finish()
    if failed:
        raise SystemExit(f"steps that failed: {failed} (their errors are above)")


if __name__ == "__main__":
    main()
