"""Ensemble vs one-by-one training throughput for the grokking sweep model (chapter 4).

Both sides train the same members (p = 53, the one-layer sweep model, batch 512, AdamW
lr 1e-3, one weight decay per member) for the same number of optimizer steps:

* one-by-one: ``ace_helpers.toys.train.train_lm`` on each ``ToyTransformer`` in turn (stock
  ``nn.TransformerEncoderLayer``, ``torch.optim.AdamW``);
* ensemble: ``ace_helpers.toys.ensemble_runs.train_ensemble`` on all members at once.

Measured side by side in one run, at 1 and at 2 torch threads, repeated ``--repeats`` times
with the order alternated (the machine is shared, so the best of the repeats is reported).
The ensemble's speed comes from batching *and* from doing less work: it computes only the
last position in the final block and reads the first block's attention projections from
per-token tables (both exact); the ratio printed is the end-to-end one.

Usage::

    python benchmarks/ensemble_training.py [--members 6] [--epochs 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import torch

from ace_helpers.chapters.grokking_scaling_law import sweep_config
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.models import build_model
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import train_lm


def one_by_one(data, config, seeds, wds, epochs: int, batch: int) -> float:
    """Seconds to train every member with train_lm, one after the other."""
    start = time.perf_counter()
    for seed, wd in zip(seeds, wds):
        model = build_model(config, seed)
        train_lm(model, data.train_inputs, data.train_targets, epochs=epochs, batch_size=batch,
                 lr=1e-3, weight_decay=wd, seed=seed, loss_positions="last")
    return time.perf_counter() - start


def ensemble(data, config, seeds, wds, steps: int, batch: int) -> float:
    """Seconds to train all members together with train_ensemble (no evaluation)."""
    start = time.perf_counter()
    train_ensemble(config, data.train_inputs, data.train_targets, seeds=seeds, weight_decays=wds,
                   batch_size=batch, lr=1e-3, max_steps=steps, eval_every=steps, progress=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    p, batch = 53, 512
    data = modadd_dataset(p, 0.5, 42)
    config = sweep_config(p)
    omegas = [0.3, 0.5, 1.0, 1.5, 2.0, 3.0]
    seeds = [42 + i for i in range(args.members)]
    wds = [omegas[i % len(omegas)] for i in range(args.members)]
    steps = args.epochs * -(-data.train_inputs.shape[0] // batch)
    member_steps = steps * args.members
    print(f"{args.members} members x {steps} steps (p={p}, batch {batch}); best of {args.repeats}")
    print(f"{'threads':>7} {'one-by-one s':>13} {'ensemble s':>11} {'member-steps/s (1x1, ens)':>27} {'speed-up':>9}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        naive, ens = [], []
        for r in range(args.repeats):
            if r % 2 == 0:
                naive.append(one_by_one(data, config, seeds, wds, args.epochs, batch))
                ens.append(ensemble(data, config, seeds, wds, steps, batch))
            else:
                ens.append(ensemble(data, config, seeds, wds, steps, batch))
                naive.append(one_by_one(data, config, seeds, wds, args.epochs, batch))
        tn, te = min(naive), min(ens)
        print(f"{threads:>7} {tn:>13.2f} {te:>11.2f} {member_steps / tn:>13.1f}, {member_steps / te:>11.1f} {tn / te:>8.2f}x")


if __name__ == "__main__":
    main()
