"""Ensemble vs sequential training of the chapter-1 seeds, measured side by side in one run.

Three ways to train the same N seeds on the paper's Markov data (3000 sequences of length 32,
batch 64, AdamW lr 1e-4, d_model 64):

* ``sequential``: ``ace_helpers.toys.train.train_lm`` on each ``ToyTransformer`` (nn.Module path);
* ``ensemble1``:  the stacked ``ToyEnsemble`` code, one seed at a time;
* ``ensemble``:   all seeds stacked in one ``ToyEnsemble`` (batched matmuls, one Python loop).

Rounds are interleaved (A B C A B C ...) so that load from other processes hits all three
alike; the script prints each method's median and best seconds per seed-epoch and the ratios
``sequential / method``.  Run with ``TORCH_THREADS=1 python benchmarks/markov_training.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ace_helpers.chapters.markov_cores import model_seeds, train_models
from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset

METHODS = ("sequential", "ensemble1", "ensemble")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="number of models (paper: 3)")
    parser.add_argument("--epochs", type=int, default=1, help="epochs per timed run")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--n-train", type=int, default=3000, help="training sequences (paper: 3000)")
    args = parser.parse_args()
    threads = set_threads()
    data = markov_dataset(PAPER_CHAIN, args.n_train, 2, 32)
    seeds = model_seeds(0, args.seeds)
    wall: dict[str, list[float]] = {m: [] for m in METHODS}
    cpu: dict[str, list[float]] = {m: [] for m in METHODS}
    per = args.seeds * args.epochs
    for _ in range(args.rounds):
        for method in METHODS:
            start, start_cpu = time.perf_counter(), time.process_time()
            train_models(data, seeds, d_model=64, epochs=args.epochs, batch_size=64, lr=1e-4, method=method)
            wall[method].append((time.perf_counter() - start) / per)
            cpu[method].append((time.process_time() - start_cpu) / per)
    print(f"torch threads {threads}; {args.seeds} seeds x {args.epochs} epoch(s) x {args.n_train} sequences, "
          f"{args.rounds} interleaved rounds; seconds per seed-epoch (wall, and CPU time of this process):")
    ref_wall, ref_cpu = statistics.median(wall["sequential"]), statistics.median(cpu["sequential"])
    for method in METHODS:
        w, c = statistics.median(wall[method]), statistics.median(cpu[method])
        print(f"  {method:<11} wall median {w:7.3f} (best {min(wall[method]):.3f})  cpu median {c:7.3f}  "
              f"speed-up vs sequential: wall {ref_wall / w:5.2f}x, cpu {ref_cpu / c:5.2f}x")
    paper_epochs = 40
    print(f"projected CPU time to train {args.seeds} seeds x {paper_epochs} epochs: "
          + ", ".join(f"{m} {statistics.median(cpu[m]) * args.seeds * paper_epochs:.0f} s" for m in METHODS))


if __name__ == "__main__":
    main()
