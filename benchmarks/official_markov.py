"""Chapter 1 against the official code release: both whole runs, side by side on one machine.

The paper's code release (``joshseth/cores``) runs its Markov-chain experiment with
``python markov.py``: it trains 3 models at the paper's settings, extracts and ablates their
cores, compares them, fits their dynamics and draws its figure.  This script times that run
beside the whole chapter-1 notebook at the same settings (the ``book`` preset is the paper's:
3 seeds, 3 000 / 3 000 sequences, 40 epochs, lr 1e-4), without the extra chains the chapter adds
(``EXTRA_CHAINS=[]``), in interleaved rounds (ours, theirs, ours, theirs, ...) with the same torch
thread count, and prints the best wall time of each and the ratio ours / theirs.

The official code is not part of this project and is never downloaded: pass a checkout of it
with ``--official PATH`` (it needs only torch, numpy and matplotlib, which this project's
environment has).  The checkout is copied to a temporary folder first, so its results and
figures are written there, not into your checkout; the notebook writes into another temporary
folder, so the book's stored results are not touched.

Usage::

    python benchmarks/official_markov.py --official ~/src/cores [--threads 2] [--rounds 2] [--out FILE]

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

from ace_helpers.repro.artifacts import write_report
from ace_helpers.repro.official import check_official, copy_official
from ace_helpers.repro.machine import machine_line

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "01_markov_cores.ipynb"


def environment(threads: int) -> dict[str, str]:
    """This process's environment with ``threads`` torch threads for both runs (``OMP_NUM_THREADS`` sets
    torch's default in the official script, which does not set it; ``TORCH_THREADS`` in ours), the
    Agg backend for the figures, and this interpreter's folder first on ``PATH`` (the notebook kernel)."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TORCH_THREADS=str(threads), MPLBACKEND="Agg",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="a checkout of joshseth/cores")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of both runs (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds; the best of each is compared")
    parser.add_argument("--out", type=Path, default=None, help="also write the report to this file")
    args = parser.parse_args()
    if args.threads < 1 or args.rounds < 1:
        raise SystemExit("--threads and --rounds must be >= 1")
    official = check_official(args.official)
    env = environment(args.threads)
    best = {"ours": float("inf"), "official": float("inf")}
    with tempfile.TemporaryDirectory(prefix="ace-official-") as tmp:
        work = Path(tmp)
        theirs = work / "cores"
        copy_official(official, theirs)
        ours = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(work / "01_markov_cores.ipynb"),
                "-p", "PRESET", "book", "-y", "EXTRA_CHAINS: []", "-p", "OUTPUT_DIR", str(work / "ours"), "--no-progress-bar"]
        for r in range(args.rounds):
            for name, cmd, cwd in (("ours", ours, ROOT), ("official", [sys.executable, "markov.py"], theirs)):
                wall = timed(cmd, cwd, env, work / f"{name}_{r}.log")
                best[name] = min(best[name], wall)
                print(f"round {r + 1}: {name:<8} {wall:7.1f} s", flush=True)
    report = [
        machine_line(),
        f"chapter 1 (book preset = the paper's settings, 3 seeds, EXTRA_CHAINS=[]) vs the official markov.py, "
        f"{args.threads} torch thread(s), best of {args.rounds} round(s)",
        f"  ours {best['ours']:.1f} s | official {best['official']:.1f} s | ours / official {best['ours'] / best['official']:.2f}",
    ]
    write_report(report, args.out)


if __name__ == "__main__":
    main()
