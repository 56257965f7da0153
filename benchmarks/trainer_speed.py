"""Training throughput of every chapter's trainer, fp32 vs bf16, ensemble vs one by one, against the matmul roofline.

All numbers are taken side by side in one run, in interleaved rounds (A B C A B C ...) so that
load from other processes hits every variant alike; each variant's best round is reported, as
seconds per *member-epoch* (one model, one pass over its training set), and the ratios between
variants are what to read.  Sections:

* ``modadd``  (chapters 2-3: the two-layer p = 53 model, 1 404 train pairs, batch 512, both arms of
  3 models = 6 members): ``loop`` is the trainer of the stored runs (``train_lm`` on a
  ``ToyTransformer``, ``torch.optim.AdamW``, one model at a time); ``ens-ref`` the ensemble with
  the reference kernels; ``ens-fp32`` / ``ens-bf16`` the ensemble trainer of ``TRAINER="ensemble"``
  (fast kernels) in each precision; ``ens-fp32-nodrop`` the same without dropout (the dropout share).
* ``sweep``   (chapter 4: the one-layer p = 53 model, batch 512, 6 weight decays): one by one
  (``train_lm``) vs the ensemble in fp32 and bf16.
* ``markov``  (chapter 1: the paper's settings, 3 000 sequences of 32 states, batch 64, 3 seeds): a
  plain ``DataLoader`` loop over ``nn.TransformerEncoderLayer`` models (the way a per-model
  research script trains), ``train_lm`` one by one, and the ensemble in fp32 and bf16.
* ``roofline``: ``torch.bmm`` alone at the mod-add step's matmul shapes in each precision, and
  the achieved GFLOP/s of each mod-add variant as a fraction of it.  Two FLOP counts are given:
  *executed* (the matmuls the ensemble really runs: it computes only the last position in the
  final block and reads the first block's projections from tables) and *model* (what a plain
  implementation of the same model must run for the same training, the usual MFU convention).

Usage::

    python benchmarks/trainer_speed.py [--threads 1 2] [--rounds 3] [--epochs 2] [--sections modadd sweep markov roofline] [--out FILE]

``--out book/trainer_speed.txt`` also writes the printed report there (atomically), with the date,
the machine and the torch version; the reproducibility page includes that file.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ace_helpers.chapters.grokking_scaling_law import sweep_config
from ace_helpers.chapters.markov_cores import model_seeds, toy_config, train_models
from ace_helpers.chapters.modadd.limits import model_config
from ace_helpers.repro.machine import machine_line
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.ensemble_trainer import EnsembleTrainer
from ace_helpers.toys.models import ToyConfig, build_model
from ace_helpers.toys.precision import describe
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import train_lm

P, BATCH, LR = 53, 512, 1e-3


REPORT: list[str] = []


def say(line: str = "") -> None:
    """Print a report line and keep it for ``--out``."""
    print(line, flush=True)
    REPORT.extend(line.split("\n"))


def interleaved(variants: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Best of ``rounds`` interleaved runs of each variant (each returns seconds per member-epoch)."""
    best = {k: float("inf") for k in variants}
    for _ in range(rounds):
        for k, fn in variants.items():
            best[k] = min(best[k], fn())
    return best


def show(title: str, best: dict[str, float], reference: str) -> None:
    say(f"\n{title}  (ms per member-epoch, best round; ratio = {reference} / variant)")
    for k, s in best.items():
        say(f"  {k:<18} {s * 1e3:9.1f} ms   {best[reference] / s:5.2f}x")


# ---------------------------------------------------------------- chapters 2-3 -------------
def modadd_variants(epochs: int, members: int = 6) -> dict[str, Callable[[], float]]:
    data = modadd_dataset(P, 0.5, 42)
    config = model_config(P)

    def loop() -> float:
        model = build_model(config, 0)
        start = time.perf_counter()
        train_lm(model, data.train_inputs, data.train_targets, epochs=epochs, batch_size=BATCH, lr=LR,
                 weight_decay=1.0, seed=0, loss_positions="last")
        return (time.perf_counter() - start) / epochs

    def ensemble(precision: str, fast: bool, cfg: ToyConfig = config) -> Callable[[], float]:
        def run() -> float:
            trainer = EnsembleTrainer(cfg, list(range(members)), [1.0] * members, lr=LR, batch_size=BATCH,
                                      precision=precision, fast=fast)
            start = time.perf_counter()
            for _ in range(epochs):
                trainer.train_epoch(data.train_inputs, data.train_targets)
            return (time.perf_counter() - start) / (epochs * members)

        return run

    no_dropout = ToyConfig(**{**config.__dict__, "dropout": 0.0})
    return {
        "loop (stored runs)": loop,
        "ens-ref": ensemble("fp32", False),
        "ens-fp32": ensemble("fp32", True),
        "ens-bf16": ensemble("bf16", True),
        "ens-fp32-nodrop": ensemble("fp32", True, no_dropout),
        "ens-bf16-nodrop": ensemble("bf16", True, no_dropout),
    }


# ---------------------------------------------------------------- chapter 4 ----------------
def sweep_variants(epochs: int, members: int = 6) -> dict[str, Callable[[], float]]:
    data = modadd_dataset(P, 0.5, 42)
    config = sweep_config(P)
    wds = [0.3, 0.5, 1.0, 1.5, 2.0, 3.0][:members]
    steps = epochs * -(-data.train_inputs.shape[0] // BATCH)

    def one_by_one() -> float:
        start = time.perf_counter()
        for seed, wd in enumerate(wds):
            model = build_model(config, seed)
            train_lm(model, data.train_inputs, data.train_targets, epochs=epochs, batch_size=BATCH, lr=LR,
                     weight_decay=wd, seed=seed, loss_positions="last")
        return (time.perf_counter() - start) / (epochs * len(wds))

    def ensemble(precision: str) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            train_ensemble(config, data.train_inputs, data.train_targets, seeds=list(range(len(wds))), weight_decays=wds,
                           batch_size=BATCH, lr=LR, max_steps=steps, eval_every=steps, progress=False,
                           precision=precision, fast=precision == "bf16")
            return (time.perf_counter() - start) / (epochs * len(wds))

        return run

    return {"one by one": one_by_one, "ensemble fp32": ensemble("fp32"), "ensemble bf16": ensemble("bf16")}


# ---------------------------------------------------------------- chapter 1 ----------------
def dataloader_loop(config: ToyConfig, inputs: torch.Tensor, targets: torch.Tensor, seed: int, epochs: int) -> None:
    """A plain per-model research loop: DataLoader(shuffle=True), nn.TransformerEncoderLayer blocks, AdamW."""
    torch.manual_seed(seed)
    model = build_model(config, seed).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, targets), batch_size=64, shuffle=True)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            logits = model(x)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()


def markov_variants(epochs: int, seeds: int = 3) -> dict[str, Callable[[], float]]:
    data = markov_dataset(PAPER_CHAIN, 3000, 2, 32)
    config = toy_config(data.n_states, 64)
    ids = model_seeds(0, seeds)

    def plain() -> float:
        start = time.perf_counter()
        for s in ids:
            dataloader_loop(config, data.train_inputs, data.train_targets, s, epochs)
        return (time.perf_counter() - start) / (epochs * seeds)

    def ours(method: str, precision: str = "fp32") -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            train_models(data, ids, epochs=epochs, method=method, precision=precision)
            return (time.perf_counter() - start) / (epochs * seeds)

        return run

    return {
        "DataLoader loop": plain,
        "train_lm one by one": ours("sequential"),
        "ensemble fp32": ours("ensemble"),
        "ensemble bf16": ours("ensemble", "bf16"),
    }


# ---------------------------------------------------------------- roofline -----------------
def modadd_flops(executed: bool, n: int = 1404, d: int = 128, f: int = 512, v: int = P, t: int = 2) -> float:
    """Matmul FLOPs of one member-epoch of the mod-add model (forward + backward = 3 x forward).

    ``executed``: the ensemble's work (the final block at the last position only, the first
    block's q/k/v from per-token tables); otherwise a plain implementation's (every position).
    """
    block_full = 2 * t * (3 * d * d + d * d + 2 * d * f)  # per example, one block, every position
    if executed:
        first = 2 * t * (d * d + 2 * d * f)  # q/k/v come from the tables
        last = 2 * t * 2 * d * d + 2 * (d * d + d * d + 2 * d * f)  # k/v everywhere, the rest at the last position
        head = 2 * d * v
        steps = -(-n // BATCH)
        tables = steps * 2 * (t * v) * d * 3 * d
        return 3 * (n * (first + last + head) + tables)
    return 3 * n * (2 * block_full + 2 * t * d * v)


def bmm_gflops(precision: str, members: int = 6, rows: int = 1024, reps: int = 20) -> float:
    """GFLOP/s of torch.bmm at the mod-add step's main shapes (the feed-forward and projection matmuls)."""
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    shapes = [(rows, 128, 512), (rows, 512, 128), (rows, 128, 128), (rows, 128, 384)]
    total_flops, total_s = 0.0, 0.0
    for m, k, n in shapes:
        a = torch.randn(members, m, k).to(dtype)
        b = torch.randn(members, k, n).to(dtype)
        torch.bmm(a, b)
        start = time.perf_counter()
        for _ in range(reps):
            torch.bmm(a, b)
        total_s += time.perf_counter() - start
        total_flops += reps * 2 * members * m * k * n
    return total_flops / total_s / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--sections", nargs="+", default=["modadd", "sweep", "markov", "roofline"])
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args()
    say(f"{machine_line()}; rounds {args.rounds}, epochs per round {args.epochs}")
    say(describe("fp32"))
    say(describe("bf16"))
    for threads in args.threads:
        torch.set_num_threads(threads)
        say(f"\n===== {threads} torch thread(s) =====")
        modadd = None
        if "modadd" in args.sections or "roofline" in args.sections:
            modadd = interleaved(modadd_variants(args.epochs), args.rounds)
        if "modadd" in args.sections:
            show("chapters 2-3 trainer, 6 members", modadd, "loop (stored runs)")
            say(f"  bf16 vs fp32 (ensemble): {modadd['ens-fp32'] / modadd['ens-bf16']:.2f}x;  dropout share of an fp32 step: "
                  f"{1 - modadd['ens-fp32-nodrop'] / modadd['ens-fp32']:.0%}, of a bf16 step: "
                  f"{1 - modadd['ens-bf16-nodrop'] / modadd['ens-bf16']:.0%}")
        if "sweep" in args.sections:
            show("chapter 4 sweep trainer, 6 weight decays", interleaved(sweep_variants(args.epochs), args.rounds), "one by one")
        if "markov" in args.sections:
            show("chapter 1 trainer, 3 seeds, paper settings", interleaved(markov_variants(1), args.rounds), "DataLoader loop")
        if "roofline" in args.sections and modadd is not None:
            roof = {prec: bmm_gflops(prec) for prec in ("fp32", "bf16")}
            say(f"\nroofline: torch.bmm at the mod-add shapes: fp32 {roof['fp32']:.0f} GFLOP/s, bf16 {roof['bf16']:.0f} GFLOP/s "
                  f"({roof['bf16'] / roof['fp32']:.1f}x)")
            for name, prec in (("loop (stored runs)", "fp32"), ("ens-ref", "fp32"), ("ens-fp32", "fp32"), ("ens-bf16", "bf16")):
                sec = modadd[name]
                counts = [("executed", modadd_flops(name != "loop (stored runs)")), ("model", modadd_flops(False))]
                text = ", ".join(f"{label} {fl / sec / 1e9:.0f} GFLOP/s = {fl / sec / 1e9 / roof[prec]:.2f} of the {prec} roofline"
                                 for label, fl in counts)
                say(f"  {name:<18} {text}")


    if args.out:
        from ace_helpers.repro.artifacts import atomic_write_bytes

        atomic_write_bytes(Path(args.out), ("\n".join(REPORT) + "\n").encode())


if __name__ == "__main__":
    main()
