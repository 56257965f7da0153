"""Chapter 1 against the official code release: both whole runs, side by side on one machine.

The paper's code release (``joshseth/cores``) runs its Markov-chain experiment with
``python markov.py``: it trains 3 models at the paper's settings, extracts and ablates their
cores, compares them, fits their dynamics and draws its figure.  This script times that run
beside the whole chapter-1 notebook at the same settings (the ``book`` preset is the paper's:
3 seeds, 3 000 / 3 000 sequences, 40 epochs, lr 1e-4), without the extra chains the chapter adds
(``EXTRA_CHAINS=[]``), in interleaved rounds (ours, theirs, ours, theirs, ...), and prints the best
wall time of each and the ratio ours / theirs, in two conditions:

* ``cores``: both processes on the same cores (``taskset``, default all of this machine's), each with its
  defaults: ours under the book's reproducible kernels, which trains and analyses each seed in its own
  worker process, one thread each, one worker per core; theirs with torch's default thread count;
* ``one``: both pinned to one core (ours then runs one worker, theirs one torch thread).

``--settings`` adds the cost of the kernel setting itself: chapter 1 on one core under the book's
setting (``MKL_CBWR=AVX2,STRICT``) against the same run under the setting before 2026-12-07
(``MKL_CBWR=AVX2``), interleaved too.

The official code is not part of this project and is never downloaded: pass a checkout of it
with ``--official PATH`` (it needs only torch, numpy and matplotlib, which this project's
environment has).  The checkout is copied to a temporary folder first, so its results and
figures are written there, not into your checkout; the notebook writes into another temporary
folder, so the book's stored results are not touched.

Usage::

    python benchmarks/official_markov.py --official ~/src/cores [--modes cores one] [--settings] [--rounds 2] [--out FILE]

``--out book/official_markov.txt`` also writes the report there (atomically), with the date, the
CPU and the torch version; the reproducibility page includes that file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ace_helpers.repro import kernels, thread_pools
from ace_helpers.repro.artifacts import write_report
from ace_helpers.repro.official import check_official, copy_official
from ace_helpers.repro.machine import machine_line

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "01_markov_cores.ipynb"


def environment(**extra: str) -> dict[str, str]:
    """This process's environment without the kernel setting's variables and thread counts (each run sets its
    own), the Agg backend for the figures, this interpreter's folder first on ``PATH`` (the notebook kernel),
    plus ``extra``."""
    drop = (*kernels.PINNED, kernels.MODE_VARIABLE, "TORCH_THREADS", *thread_pools.POOL_VARIABLES)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(MPLBACKEND="Agg", PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", **extra)
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    """Run ``cmd`` in ``cwd`` (output to ``log``); its wall time in seconds; ``SystemExit`` if it fails."""
    start = time.perf_counter()
    with log.open("w") as out:
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - start
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {rc}); its output: {log}")
    return wall


def interleave(runs: dict[str, tuple[list[str], Path, dict[str, str]]], rounds: int, work: Path, tag: str) -> dict[str, float]:
    """Best wall time of each named run over ``rounds`` interleaved rounds."""
    best = {name: float("inf") for name in runs}
    for r in range(rounds):
        for name, (cmd, cwd, env) in runs.items():
            wall = timed(cmd, cwd, env, work / f"{tag}_{name.replace(' ', '_')}_{r}.log")
            best[name] = min(best[name], wall)
            print(f"{tag} round {r + 1}: {name:<12} {wall:7.1f} s", flush=True)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="a checkout of joshseth/cores")
    parser.add_argument("--modes", nargs="+", choices=("cores", "one"), default=["cores", "one"], help="conditions")
    parser.add_argument("--settings", action="store_true", help="also time the kernel setting against the old one")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds; the best of each is compared")
    parser.add_argument("--out", type=Path, default=None, help="also write the report to this file")
    args = parser.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    official = check_official(args.official)
    cores = sorted(os.sched_getaffinity(0))
    report = [machine_line()]
    with tempfile.TemporaryDirectory(prefix="ace-official-") as tmp:
        work = Path(tmp)
        theirs = work / "cores"
        copy_official(official, theirs)

        def ours(under_setting: bool = True) -> list[str]:
            under = [sys.executable, "-m", "ace_helpers.kernels", "--"] if under_setting else []
            return under + [sys.executable, "-m", "papermill", str(NOTEBOOK), str(work / "01_markov_cores.ipynb"), "-p",
                            "PRESET", "book", "-y", "EXTRA_CHAINS: []", "-p", "OUTPUT_DIR", str(work / "ours"),
                            "--no-progress-bar"]  # fmt: skip

        for mode in args.modes:
            pin = ["taskset", "-c", ",".join(map(str, cores if mode == "cores" else cores[:1]))]
            n = len(cores) if mode == "cores" else 1
            best = interleave({"ours": (pin + ours(), ROOT, environment()),
                               "official": (pin + [sys.executable, "markov.py"], theirs, environment())},
                              args.rounds, work, mode)  # fmt: skip
            report += [f"chapter 1 (book preset = the paper's settings, 3 seeds, EXTRA_CHAINS=[]) vs the official markov.py "
                       f"on {n} core(s), each with its defaults (ours: {n} worker process(es), one thread each; theirs: "
                       f"torch's default threads), best of {args.rounds} round(s)",
                       f"  ours {best['ours']:.1f} s | official {best['official']:.1f} s | ours / official "
                       f"{best['ours'] / best['official']:.2f}"]  # fmt: skip
        if args.settings:
            pin = ["taskset", "-c", str(cores[0])]
            old = dict(kernels.PINNED) | {"MKL_CBWR": "AVX2"}
            best = interleave({"new setting": (pin + ours(), ROOT, environment()),
                               "old setting": (pin + ours(under_setting=False), ROOT, environment(**old))}, args.rounds, work, "settings")  # fmt: skip
            report += [f"chapter 1 on one core under the kernel setting (MKL_CBWR=AVX2,STRICT) vs the setting before "
                       f"2026-12-07 (MKL_CBWR=AVX2), best of {args.rounds} round(s)",
                       f"  new {best['new setting']:.1f} s | old {best['old setting']:.1f} s | new / old "
                       f"{best['new setting'] / best['old setting']:.2f}"]  # fmt: skip
    write_report(report, args.out)


if __name__ == "__main__":
    main()
