"""How much fused kernels could still gain: the ensemble's training step eager vs ``torch.compile``, side by side.

The ensemble trainer (:mod:`ace_helpers.toys.ensemble`) runs eager PyTorch: every elementwise op
(bias, ReLU, dropout, residual, layer norm, their gradients) is its own pass over memory, and on
a 2-core machine those passes, not the matrix products, are what a training step waits for.  A
fusing compiler (``torch.compile``, TorchInductor, which needs a C++ compiler) merges them.  This
script measures what that would buy, on one training step (forward, loss, backward) of the
ensembles the chapters train:

* ``modadd`` (chapters 2-3): the two-layer p = 53 model, 6 members, a batch of 512 pairs, the
  loss at the last position;
* ``markov`` (chapter 1): the one-layer 4-state model at the paper's settings, 3 members, a batch
  of 64 sequences of 31 positions, the loss at every position.

Each model is timed in interleaved rounds after one untimed call each: eager and compiled, with the
chapter's dropout and without it; on a GPU (``--device cuda``) also compiled with CUDA graphs
(``torch.compile(mode="reduce-overhead")``: the whole step replayed as one recorded graph, which removes
the per-kernel launches a step of these small models waits for on a GPU).  The first compiled call is timed on its own
(the compile time; the compile cache goes to a temporary folder, so it is a cold compile).  With
dropout, the library draws each member's masks from the member's own ``torch.Generator``; the
compiler cannot trace a generator call and splits the step at each one (the graph breaks are
counted).  The "pre-drawn" variants draw the step's dropout randomness before the step
(``ToyEnsemble.draw_dropout``, one call per member, the same masks on a CPU) and hand the compiled
step a tensor, so the step is one graph; their time includes the draw.  Without dropout the step is
one graph too: that ratio is the upper bound of what fusion buys.  The
largest difference between the eager and compiled losses of one step is printed too: a compiled
trainer's numbers differ from the eager trainer's by rounding, so the book's stored runs could not
be reproduced with it.

Usage::

    python benchmarks/trainer_fusion.py [--device cpu] [--threads 1] [--rounds 3] [--steps 5] [--models modadd markov] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

import torch

from ace_helpers.chapters.markov_cores import toy_config
from ace_helpers.chapters.modadd.limits import model_config
from ace_helpers.method.devices import describe_device, resolve_device
from ace_helpers.repro.artifacts import write_report
from ace_helpers.repro.machine import machine_line
from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.ensemble import DROPOUT_SEED_OFFSET, ToyEnsemble
from ace_helpers.toys.ensemble_trainer import member_losses
from ace_helpers.toys.models import ToyConfig
from ace_helpers.toys.precision import describe
from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset
from ace_helpers.toys.tasks.modadd import modadd_dataset

#: (members, batch rows, loss at every position?) per model
SETUPS = {"modadd": (6, 512, False), "markov": (3, 64, True)}


#: compile modes timed: "default" (fused kernels) everywhere, "reduce-overhead" (fused kernels replayed as CUDA graphs)
#: on a GPU only
MODES = {"cpu": ("default",), "cuda": ("default", "reduce-overhead")}


def batch(model: str) -> tuple[ToyConfig, torch.Tensor, torch.Tensor, int, bool]:
    """The model's config, one training batch (B, T) of inputs and targets, its member count and loss kind."""
    members, rows, all_positions = SETUPS[model]
    if model == "modadd":
        data = modadd_dataset(53, 0.5, 42)
        config = model_config(53)
    else:
        data = markov_dataset(PAPER_CHAIN, 3000, 300, 32)
        config = toy_config(4, 64)
    return config, data.train_inputs[:rows], data.train_targets[:rows], members, all_positions


def step_loss(ensemble: ToyEnsemble, inputs: torch.Tensor, targets: torch.Tensor,
              generators: list[torch.Generator] | None, draws: torch.Tensor | None, loss_positions: str) -> torch.Tensor:
    """The trainer's loss of one batch: inputs (B, T), targets (M, B, T) long -> scalar (sum of the members' means).

    The dropout masks come from ``generators`` or from ``draws``, the step's randomness drawn before it."""
    return member_losses(ensemble, inputs, targets, generators, loss_positions=loss_positions, precision="fp32",
                         fast=True, draws=draws).sum()


def variant(model: str, dropout: bool, mode: str | None, device: torch.device,
            predrawn: bool = False) -> tuple[Callable[[], float], float, float]:
    """A timer of one variant (returns seconds per step), the seconds of its first call and that call's loss.

    ``mode``: None (eager) or a ``torch.compile`` mode; ``device``: where the ensemble, its batch and its dropout
    generators live; ``predrawn``: draw the step's dropout randomness before the (compiled) step and pass it in."""
    config, inputs, targets, members, all_positions = batch(model)
    inputs, targets = inputs.to(device), targets.expand(members, -1, -1).to(device)  # (M, B, T): the same batch each
    if not dropout:
        config = ToyConfig(**{**config.__dict__, "dropout": 0.0})
    ensemble = ToyEnsemble.from_seeds(config, list(range(members))).to(device).train()
    gens = [torch.Generator(device=device).manual_seed(m + DROPOUT_SEED_OFFSET) for m in range(members)]
    loss_fn = step_loss if mode is None else torch.compile(step_loss, mode=mode)
    positions = "all" if all_positions else "last"

    def one() -> float:
        if predrawn:
            draws = ensemble.draw_dropout(gens, inputs.shape[0], inputs.shape[1], last_only=positions == "last", fast=True)
            loss = loss_fn(ensemble, inputs, targets, None, draws, positions)
        else:
            loss = loss_fn(ensemble, inputs, targets, gens, None, positions)
        loss.backward()
        for p in ensemble.parameters():
            p.grad = None
        return float(loss.detach())  # waits for the device's queued work

    start = time.perf_counter()
    first_loss = one()
    first = time.perf_counter() - start
    return one, first, first_loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (an absent device is refused)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="steps per timed round")
    parser.add_argument("--models", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    parser.add_argument("--out", default=None, help="also write the report to this file (atomically)")
    args = parser.parse_args()
    for name in ("threads", "rounds", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    try:
        device = resolve_device(args.device)
    except ValueError as err:
        parser.error(str(err))
    set_threads(args.threads)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")  # a cold compile
    import torch._dynamo

    # every variant keeps its compiled code through the interleaved rounds: one entry per variant in the
    # compiled function's cache (a reset between variants would drop the others' code, and the rounds would recompile it)
    torch._dynamo.config.recompile_limit = 64
    counters = torch._dynamo.utils.counters

    lines = [machine_line(), describe_device(args.device), describe("fp32"),
             f"one training step (forward, loss, backward), fp32, {args.threads} torch thread(s), best of {args.rounds} rounds of {args.steps} steps"]
    for model in args.models:
        members, rows, _ = SETUPS[model]
        lines.append(f"\n{model}: {members} members, batch {rows}   (ms per step; ratio = eager / variant)")
        timers: dict[str, Callable[[], float]] = {}
        torch._dynamo.reset()
        for dropout, predrawn in ((True, False), (True, True), (False, False)):
            tag = ("dropout, pre-drawn" if predrawn else "dropout") if dropout else "no dropout"
            eager, _, eager_loss = variant(model, dropout, None, device, predrawn)
            timers[f"eager, {tag}"] = eager
            for mode in MODES.get(device.type, MODES["cpu"]):
                name = "compiled" if mode == "default" else "CUDA graphs"
                counters["graph_break"].clear()
                try:
                    fused, compile_s, fused_loss = variant(model, dropout, mode, device, predrawn)
                except Exception as err:  # no C++ compiler, or an inductor failure: say so, time the rest
                    lines.append(f"  {tag}, {name}: torch.compile failed here ({type(err).__name__}: {str(err).splitlines()[0][:120]})")
                    continue
                breaks = sum(counters["graph_break"].values())
                lines.append(f"  {tag}, {name}: first call {compile_s:.1f} s, {breaks} graph break(s), "
                             f"|loss eager - compiled| = {abs(eager_loss - fused_loss):.1e} (loss {eager_loss:.4f})")
                timers[f"{name}, {tag}"] = fused
        best = {k: float("inf") for k in timers}
        compiles = counters["frames"]["total"]
        for _ in range(args.rounds):
            for k, fn in timers.items():
                start = time.perf_counter()
                for _ in range(args.steps):
                    fn()
                best[k] = min(best[k], (time.perf_counter() - start) / args.steps)
        if counters["frames"]["total"] != compiles:
            lines.append("  torch.compile compiled again during the timed rounds: the compiled rows include compile time")
        for k, s in best.items():
            reference = best[f"eager, {k.split(', ', 1)[1]}"]
            lines.append(f"  {k:<30} {s * 1e3:8.1f} ms   {reference / s:5.2f}x")
    write_report(lines, args.out)


if __name__ == "__main__":
    main()
