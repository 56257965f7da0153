"""What the reproducible kernels cost: the chapters' trainers and ACE, pinned to AVX2 vs this CPU's native kernels.

The reproducible setting (:mod:`ace_helpers.repro.kernels`) makes torch, MKL, oneDNN, OpenBLAS and numpy
run their AVX2 code paths on every CPU, so that an AVX-512 or AMX machine computes what an
AVX2-only machine computes.  On a CPU with wider instructions that can cost time.  The variables
are read when the libraries load, so each measurement runs in a fresh child process, started with
the setting or without it (``ACE_KERNELS=native``), in interleaved rounds; each workload's best
time per setting is kept and the ratio pinned / native printed (above 1: pinning costs time).
Threads: one per process in both settings (the setting's rule), so only the kernels differ.

Workloads:

* ``modadd``: training epochs of the chapters 2-3 ensemble (p = 53, 6 members, batch 512, fp32);
* ``markov``: training epochs of the chapter 1 ensemble (4 states, 3 members, batch 64, fp32);
* ``ace``: ACE (:func:`ace_helpers.extract_core`) on 8 000 states of width 512 with 16 outputs
  (numpy / OpenBLAS / LAPACK), the analysis side of every chapter.

Usage::

    python benchmarks/kernel_pinning.py [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

WORKLOADS = ("modadd", "markov", "ace")


def _train_seconds(model: str, steps: int) -> float:
    """Seconds per training step of ``model``'s ensemble (one warm-up epoch of 2 steps first)."""
    from trainer_fusion import SETUPS, batch

    from ace_helpers.toys.ensemble_trainer import EnsembleTrainer

    config, inputs, targets, members, all_positions = batch(model)
    rows = SETUPS[model][1]
    trainer = EnsembleTrainer(config, list(range(members)), [1.0] * members, lr=1e-3, batch_size=rows,
                              loss_positions="all" if all_positions else "last")  # fmt: skip
    reps = max(1, -(-rows * steps // inputs.shape[0]))
    x, y = inputs.repeat(reps, 1)[: rows * steps], targets.repeat(reps, 1)[: rows * steps]
    trainer.train_epoch(x[: 2 * rows], y[: 2 * rows])
    start = time.perf_counter()
    trainer.train_epoch(x, y)
    return (time.perf_counter() - start) / steps


def _ace_seconds() -> float:
    """Seconds of one ACE extraction on fixed (8000, 512) states and (8000, 16, 512) Jacobians."""
    import numpy as np

    from ace_helpers.method.core import extract_core

    rng = np.random.default_rng(0)
    h, j = rng.standard_normal((8000, 512)), rng.standard_normal((8000, 16, 512))
    extract_core(h, j)  # warm-up
    start = time.perf_counter()
    extract_core(h, j)
    return time.perf_counter() - start


def child(workload: str) -> None:
    """Time ``workload`` in this process (under whatever setting it was started with); print JSON."""
    from ace_helpers.repro.kernels import describe, problems
    from ace_helpers.repro.thread_pools import set_threads

    set_threads(1)
    seconds = _ace_seconds() if workload == "ace" else _train_seconds(workload, steps=8 if workload == "modadd" else 40)
    print(json.dumps({"seconds": seconds, "pinned": not problems() and "native" not in describe()}))


def measure(workload: str, setting: str) -> float:
    """Run one child for ``workload`` under ``setting`` (``"pinned"`` or ``"native"``); its seconds."""
    from ace_helpers.repro.kernels import PINNED, environment

    base = {k: v for k, v in os.environ.items() if k not in (*PINNED, "ACE_KERNELS")}
    env = environment(base) if setting == "pinned" else base | {"ACE_KERNELS": "native"}
    env |= {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, __file__, "--child", workload], env=env, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__)))  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"{workload} ({setting}) failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["pinned"] != (setting == "pinned"):
        raise RuntimeError(f"{workload}: the child meant to run {setting} kernels did not")
    return out["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None, help="also write the report here (atomically)")
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    from ace_helpers.repro.artifacts import write_report
    from ace_helpers.repro.kernels import supported
    from ace_helpers.repro.machine import machine_line
    from ace_helpers.toys.precision import cpu_flags

    if supported() is not None:
        raise SystemExit(f"the reproducible kernels need an x86-64 CPU with AVX2: {supported()}")
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.rounds):
        for workload in WORKLOADS:
            for setting in ("pinned", "native"):  # interleaved: drift in machine speed hits both alike
                s = measure(workload, setting)
                best[workload, setting] = min(best.get((workload, setting), s), s)
    wide = [f for f in ("avx512f", "avx512_bf16", "amx_tile") if f in cpu_flags()] or ["none: AVX2 is this CPU's widest"]
    lines = [machine_line(), f"wider instruction sets than AVX2 on this CPU: {', '.join(wide)}; 1 thread per process, fp32; "
             f"best of {args.rounds} interleaved rounds, each in a fresh process"]  # fmt: skip
    lines += [f"  {'workload':<8} {'pinned (AVX2)':>14} {'native':>10} {'pinned / native':>16}"]
    for workload in WORKLOADS:
        p, n = best[workload, "pinned"], best[workload, "native"]
        unit = "s" if workload == "ace" else "s/step"
        lines.append(f"  {workload:<8} {p:>10.4f} {unit:<3} {n:>8.4f} {unit:<3} {p / n:>10.2f}x")
    write_report(lines, args.out)


if __name__ == "__main__":
    main()
