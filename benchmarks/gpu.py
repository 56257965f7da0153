"""The book's GPU targets, measured side by side in one run on one device (and the official code's, given a checkout).

Steps (``--only`` picks some; all by default), each timed on ``--device`` (default ``cuda``):

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

``--budget SECONDS`` bounds the whole run (a lent GPU's time is short): a command step still running when the
budget is spent is stopped and its line says so (a target it would have missed is shown as missed), and the steps
after it are skipped.  Each line is printed as it comes and ``--out`` is rewritten after every step, so a run
stopped from outside keeps what it measured.

On an offline GPU machine without the book's packages: ``python benchmarks/gpu_kit.py`` here packs the wheels
and the official code, and ``bash benchmarks/gpu_device.sh [flags of this script]`` there runs it (see both).

Usage::

    python benchmarks/gpu.py [--device cuda] [--official ~/src/cores] [--quick] [--keep] [--budget S] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ace_helpers.chapters.toy_models.markov import model_seeds, train_models
from ace_helpers.method.devices import describe_device, resolve_device
from ace_helpers.repro.artifacts import atomic_write_bytes, write_report
from ace_helpers.repro.machine import machine_line
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("matmul", "markov", "modadd", "sweeps", "fusion", "variants", "official")
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


def command_step(args: list[str], timeout: float | None = None) -> float | None:
    """Wall seconds of ``python -m …args`` run from the repository root, or None when it was stopped after
    ``timeout`` seconds; raises naming the command when it fails."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False,
                              env=dict(os.environ, MPLBACKEND="Agg"), timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    if done.returncode:
        raise SystemExit(f"`python -m {' '.join(args)}` failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def fusion_step(device: str, quick: bool) -> list[str]:
    """The report of ``benchmarks/trainer_fusion.py`` on ``device`` (its lines, indented under this step)."""
    steps = "1" if quick else "20"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "trainer_fusion.py"), "--device", device, "--rounds", "2",
                           "--steps", steps], cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"trainer_fusion.py failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return ["fusion (one training step: eager / compiled / CUDA graphs):"] + [f"  {line}" for line in done.stdout.splitlines()]


def check_official(path: Path) -> Path:
    """``path`` resolved, once it is known to be a checkout of the paper's code release (refused naming what it lacks)."""
    checkout = path.expanduser().resolve()
    missing = [p for p in ("markov.py", "modadd.py") if not (checkout / p).is_file()]
    if missing:
        raise SystemExit(f"--official {path} is not a checkout of the paper's code release: it lacks {', '.join(missing)}")
    return checkout


def official_step(checkout: Path, quick: bool, left: Callable[[], float | None]) -> dict[str, float | None]:
    """Wall seconds of the official code's ``markov.py`` and ``modadd.py --quick`` (from a ``checkout`` that
    :func:`check_official` accepted), run in a scratch copy (None for
    one stopped after ``left()`` seconds, the budget's rest when it starts)."""
    out: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory(prefix="official") as scratch:
        copy = Path(scratch) / "cores"
        shutil.copytree(checkout, copy, ignore=shutil.ignore_patterns(".git"))
        for script, extra in (("markov.py", []), ("modadd.py", ["--quick"])):
            if quick and script == "markov.py":
                continue
            name = f"{script} {' '.join(extra)}".strip()
            start = time.perf_counter()
            try:
                done = subprocess.run([sys.executable, script, *extra], cwd=copy, capture_output=True, text=True,
                                      check=False, env=dict(os.environ, MPLBACKEND="Agg"), timeout=left())  # fmt: skip
            except subprocess.TimeoutExpired:
                out[name] = None
                break
            if done.returncode:
                raise SystemExit(f"official {script} failed ({done.returncode}):\n{done.stderr[-2000:]}")
            out[name] = time.perf_counter() - start
    return out


def timed(name: str, wall: float | None, allowed: float | None, target: str = "") -> str:
    """A command step's report line: its wall seconds, or that it was stopped after ``allowed`` seconds."""
    if wall is not None:
        return f"{name}: {wall:.0f} s{target}"
    return f"{name}: stopped at the budget{f' after {allowed:.0f} s' if allowed else ''}, not finished{target}"


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


def main(argv: list[str] | None = None) -> None:
    """Parse the flags, check the device before any work, run the steps, print (and write) the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N, mps, cpu or auto (an absent device is refused)")
    ap.add_argument("--only", default=",".join(STEPS), help=f"comma-separated steps among {', '.join(STEPS)}")
    ap.add_argument("--official", type=Path, help="a checkout of the paper's code release (the official step)")
    ap.add_argument("--quick", action="store_true", help="small sizes: checks the script, measures nothing")
    ap.add_argument("--keep", action="store_true", help="store the runs where the chapters read them")
    ap.add_argument("--out", help="also write the report to this file (atomically, after each step)")
    ap.add_argument("--budget", type=float, default=None, help="seconds the steps may take in all: a command step is "
                    "stopped when they are spent (its line says so) and the steps after it are skipped")
    args = ap.parse_args(argv)
    steps = [s.strip() for s in args.only.split(",") if s.strip()]
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
    preset = "ci" if args.quick else "paper"
    report = Report(args.out)
    report.add(f"{machine_line()}; {describe_device(args.device)}",
               f"preset {preset}{' (--quick: a check of the script, not a measurement)' if args.quick else ''}"
               f"{f'; budget {args.budget:.0f} s' if args.budget else ''}")  # fmt: skip
    deadline = time.perf_counter() + args.budget if args.budget else None

    def left() -> float | None:
        return None if deadline is None else max(1.0, deadline - time.perf_counter())

    rate = None
    with tempfile.TemporaryDirectory(prefix="gpu-bench") as tmp:
        work = Path(tmp)
        for step in [s for s in STEPS if s in steps]:
            if deadline is not None and time.perf_counter() >= deadline:
                report.add(f"{step}: skipped, the budget of {args.budget:.0f} s was spent")
                continue
            left_at_start = left()
            if step == "matmul":
                rate = matmul_rate(device, 1024 if args.quick or device.type == "cpu" else 8192)
                report.add(f"matmul: bf16 {rate / 1e12:.2f} TFLOP/s")
            elif step == "markov":
                wall, flops = markov_step(device, 2 if args.quick else 40, "bf16" if device.type == "cuda" else "fp32")
                share = f", {flops / wall / rate:.1%} of the matmul rate" if rate else ""
                report.add(f"markov (chapter 1, 3 seeds): {wall:.1f} s (target {TARGET_S['markov']:.0f} s); "
                           f"{flops / wall / 1e12:.3f} TFLOP/s achieved{share}")
            elif step == "modadd":
                store = [] if args.keep else ["--snapshot-dir", str(work / "snapshots"), "--artifact-dir", str(work / "modadd")]
                wall = command_step(["ace_helpers.chapters.modadd", "--preset", preset, "--trainer", "ensemble",
                                     "--precision", "bf16", "--device", args.device, *store], left_at_start)
                report.add(timed("modadd (chapters 2-3, trained and analysed)", wall, left_at_start, f" (target {TARGET_S['modadd']:.0f} s)"))
            elif step == "sweeps":
                store = [] if args.keep else ["--store", str(work / "sweeps")]
                gpus = torch.cuda.device_count() if device.type == "cuda" and device.index is None else 1
                where = ["--device", "cuda", "--gpus", str(gpus)] if gpus > 1 else ["--device", args.device, "--in-process"]
                wall = command_step(["ace_helpers.chapters.sweep", "04_grokking_scaling_law", "--preset", preset, *where,
                                     *store], left_at_start)  # fmt: skip
                report.add(timed(f"sweeps (chapter 4, every omega and p run, {gpus} device(s))", wall, left_at_start,
                                 f" (target {TARGET_S['sweeps']:.0f} s)"))  # fmt: skip
            elif step == "fusion":
                report.add(*fusion_step(args.device, args.quick))
            elif step == "variants" and not args.keep:
                report.add("variants: skipped (they are stored in the book's results: give --keep)")
            elif step == "variants":
                for stem in VARIANT_CHAPTERS:
                    allowed = left()
                    wall = command_step(["ace_helpers.variants", stem, "--preset", preset, "--name", f"{device.type}-bf16",
                                         "--set", f"DEVICE={args.device}", "PRECISION=bf16"], allowed)  # fmt: skip
                    report.add(timed(f"variant {stem} ({device.type}, bf16)", wall, allowed) + ", stored in book/results/variants/")
            elif step == "official":
                for name, wall in official_step(official, args.quick, left).items():
                    report.add(timed(f"official {name}", wall, None))
    report.finish()


if __name__ == "__main__":
    main()
