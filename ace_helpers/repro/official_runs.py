"""The official code release's experiments (mod-add, Markov), rerun here as released, and their outputs stored as artifacts.

Markov: the release's ``python markov.py --only run`` trains its 3 models at the paper's settings and writes one
``results.json`` (ablations, pairwise comparisons, fitted dynamics, weight cosines); :func:`run_markov` stores it.

The release (``joshseth/cores``) trains its mod-add models with ``python modadd.py`` (``src/cores/run_modadd.py``):
``K_MODELS`` models at p = 53 with weight decay 1 to ``TOTAL_EPOCHS`` (20 000 in the release), a weight-decay-off
arm forked at ``BRANCH_EPOCH`` (900), then its own analysis (``core_formation.npz`` and ``mode_spread.npz`` per arm)
and its figures.  This module runs that script unmodified in a scratch copy of a checkout, with its configuration
constants set the way its own ``--quick`` flag sets them (module globals, before ``main()``): here only
``TOTAL_EPOCHS`` and ``K_MODELS`` can be changed, everything else is the release's.  Its result files are read
back and stored, with the command, the release's commit, the wall time and the machine, as one artifact (json +
npz + manifest, no pickles).  The run computes under the book's kernel setting, one thread, so that it is
reproducible on one kind of CPU; it does not resume (the release's trainer has no resume), so a stopped run
starts again.

Command line::

    python -m ace_helpers.repro.official_runs --official ~/src/cores --epochs 5000 \\
        --work /tmp/official-modadd --store book/artifacts/official_modadd
    python -m ace_helpers.repro.official_runs --official ~/src/cores --experiment markov \\
        --work /tmp/official-markov --store book/artifacts/official_markov
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ace_helpers.method.checks import check_int
from ace_helpers.repro import kernels
from ace_helpers.repro.artifacts import save_artifact
from ace_helpers.repro.official import check_official, copy_official

#: Where the release's Markov run writes its results (relative to the checkout's root).
MARKOV_RESULTS = "experiments/markov_chain/results/results.json"

#: What the release's run writes, per arm, that this module stores (relative to the checkout's root).
RESULT_FILES = {
    "wd1/core_formation": "experiments/modular_addition/results/wd1_res/core_formation.npz",
    "wd1/mode_spread": "experiments/modular_addition/results/wd1_res/mode_spread.npz",
    "wd0/core_formation": "experiments/modular_addition/results/wd0_res/core_formation.npz",
    "wd0/mode_spread": "experiments/modular_addition/results/wd0_res/mode_spread.npz",
}


def modadd_command(epochs: int, k_models: int) -> list[str]:
    """The release's ``run_modadd.main()`` with ``TOTAL_EPOCHS`` and ``K_MODELS`` set (as its ``--quick`` does); run in
    the release's root with its ``src`` on ``PYTHONPATH`` (:func:`run_modadd`), as its own ``modadd.py`` arranges."""
    epochs, k_models = check_int("epochs", epochs, low=1000, high=20_000), check_int("k_models", k_models, low=1, high=3)
    code = (
        "import sys; sys.argv = ['run_modadd.py']; import cores.run_modadd as r; "
        f"r.TOTAL_EPOCHS = {epochs}; r.K_MODELS = {k_models}; r.main()"
    )
    return [sys.executable, "-c", code]


def official_commit(checkout: Path) -> str | None:
    """The checkout's git commit, or None when it is not a git checkout."""
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def read_results(work: Path) -> dict[str, np.ndarray]:
    """The arrays of every file of :data:`RESULT_FILES` in a finished run's folder, keyed ``<file key>/<array>``.

    Raises:
        FileNotFoundError: naming the result files the run did not write.
    """
    missing = [rel for rel in RESULT_FILES.values() if not (work / rel).is_file()]
    if missing:
        raise FileNotFoundError(f"the official run in {work} did not write {', '.join(missing)}")
    out = {}
    for key, rel in RESULT_FILES.items():
        with np.load(work / rel, allow_pickle=False) as z:
            out.update({f"{key}/{name}": z[name] for name in z.files})
    return out


def _run_release(official: Path, work: Path, store: Path, command: list[str]) -> tuple[Path, float]:
    """Check ``official`` and ``store``, copy ``official`` to ``work`` (a new folder) and run ``command`` there, one
    thread, under the kernel setting, its log in ``work/run.log``; returns ``(checkout, wall seconds)``.

    Raises:
        FileExistsError: ``work`` exists.  PermissionError: ``store`` is not writable.
        RuntimeError: the run failed (naming its log).
    """
    checkout = check_official(official)
    if work.exists():
        raise FileExistsError(f"--work {work} exists: give a new folder (the release writes its checkpoints there)")
    store.mkdir(parents=True, exist_ok=True)
    if not os.access(store, os.W_OK):
        raise PermissionError(f"--store {store} is not writable")
    copy_official(checkout, work)
    threads = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env = kernels.environment() | threads | {"MPLBACKEND": "Agg", "PYTHONPATH": str(work / "src")}
    start = time.perf_counter()
    with (work / "run.log").open("w") as log:
        rc = subprocess.run(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - start
    if rc != 0:
        raise RuntimeError(f"the official run failed (exit {rc}); its log: {work / 'run.log'}")
    return checkout, wall


def run_markov(official: Path, work: Path, store: Path) -> Path:
    """Copy ``official`` to ``work`` (a new folder), run its Markov experiment there as released (``python
    markov.py --only run``: 3 models at the paper's settings, seed 0), and store its ``results.json`` in ``store``
    (artifact ``official_markov``); returns the artifact's manifest path."""
    command = [sys.executable, "markov.py", "--only", "run"]
    checkout, wall = _run_release(official, work, store, command)
    written = work / MARKOV_RESULTS
    if not written.is_file():
        raise FileNotFoundError(f"the official run in {work} did not write {MARKOV_RESULTS}")
    params = {
        "release": "joshseth/cores",
        "commit": official_commit(checkout),
        "script": "markov.py --only run",
        "kernels": kernels.mode(),
        "threads": 1,
    }
    data = {
        "command": " ".join(command),
        "note": "the release's own training and analysis, unmodified",
        "results": json.loads(written.read_text()),
    }
    return save_artifact(store, "official_markov", params=params, data=data, arrays={}, wall_s=wall)


def run_modadd(official: Path, work: Path, store: Path, *, epochs: int, k_models: int = 3) -> Path:
    """Copy ``official`` to ``work`` (a new folder), run its mod-add experiment there (:func:`modadd_command`, its
    log in ``work/run.log``), and store its results in ``store``; returns the artifact's manifest path."""
    command = modadd_command(epochs, k_models)
    checkout, wall = _run_release(official, work, store, command)
    params = {
        "release": "joshseth/cores",
        "commit": official_commit(checkout),
        "script": "modadd.py (run_modadd.main)",
        "TOTAL_EPOCHS": epochs,
        "K_MODELS": k_models,
        "kernels": kernels.mode(),
        "threads": 1,
    }
    data = {"command": " ".join(command), "note": "the release's own training and analysis, unmodified"}
    return save_artifact(
        store, f"official_modadd_e{epochs}_k{k_models}", params=params, data=data, arrays=read_results(work), wall_s=wall
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ace_helpers.repro.official_runs", description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="a checkout of joshseth/cores")
    parser.add_argument(
        "--experiment",
        choices=("modadd", "markov"),
        default="modadd",
        help="which of the release's experiments (markov: its settings, no --epochs/--models)",
    )
    parser.add_argument("--epochs", type=int, default=5000, help="TOTAL_EPOCHS (the release: 20000)")
    parser.add_argument("--models", type=int, default=3, help="K_MODELS (the release: 3)")
    parser.add_argument("--work", type=Path, required=True, help="a new scratch folder for the run")
    parser.add_argument("--store", type=Path, required=True, help="where the artifact goes")
    args = parser.parse_args(argv)
    if args.experiment == "markov":
        print(run_markov(args.official, args.work, args.store))
    else:
        print(run_modadd(args.official, args.work, args.store, epochs=args.epochs, k_models=args.models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
