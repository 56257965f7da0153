"""The ensemble's AdamW step on torch's fused kernel against torch's default AdamW step per member.

``EnsembleAdamW.step`` runs ATen's fused AdamW kernel (``torch._fused_adamw_``) over each member's
slice of every stacked parameter, one call per distinct weight decay (so that its square root is the
IEEE instruction on every CPU).  The reference is what a per-model loop runs: one ``torch.optim.AdamW``
per member with torch's default step (the for-loop over parameters, with MKL's square root), on
the member's own parameters.  Both update the same shapes with the same gradients, side by side in
one process, interleaved rounds; the best milliseconds per step of each and the ratio are printed.

Workloads: the chapters 2-3 mod-add ensemble (p = 53, 6 members, half of them with weight decay)
and the chapter 1 Markov ensemble (4 states, d = 64, 3 members).

Usage::

    python -m ace_helpers.kernels -- python benchmarks/ensemble_adamw.py [--rounds 5] [--steps 50] [--out FILE]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ace_helpers.chapters.modadd.limits import model_config
from ace_helpers.chapters.markov_run.run import toy_config
from ace_helpers.repro.artifacts import write_report
from ace_helpers.repro.machine import machine_line
from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.ensemble import EnsembleAdamW, ToyEnsemble
from ace_helpers.toys.models import build_model

SETUPS = {"modadd p=53, 6 members": (model_config(53), 6), "markov n=4, 3 members": (toy_config(4, 64), 3)}


def _steppers(config, members: int) -> dict[str, Callable[[], None]]:
    """The two steps for one workload, with gradients set once (the step does not clear them)."""
    decays = [1.0] * (members // 2) + [0.0] * (members - members // 2)
    ens = ToyEnsemble.from_seeds(config, list(range(members)))
    for p in ens.parameters():
        p.grad = torch.randn_like(p)
    ours = EnsembleAdamW(list(ens.parameters()), lr=1e-3, weight_decay=decays)
    loop = []
    for m, wd in enumerate(decays):
        model = build_model(config, m)
        for p in model.parameters():
            p.grad = torch.randn_like(p)
        loop.append(torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=wd, foreach=False))
    return {"ensemble, fused": ours.step, "per member, default": lambda: [o.step() for o in loop]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the best of each is kept")
    parser.add_argument("--steps", type=int, default=50, help="timed steps per round")
    parser.add_argument("--out", type=Path, default=None, help="also write the report to this file")
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1:
        raise SystemExit("--rounds and --steps must be >= 1")
    set_threads(1)
    report = [machine_line(), f"AdamW steps, 1 thread, best of {args.rounds} rounds of {args.steps} steps (ms per step)"]
    for label, (config, members) in SETUPS.items():
        steps = _steppers(config, members)
        best = dict.fromkeys(steps, float("inf"))
        for _ in range(args.rounds):
            for name, step in steps.items():
                step()  # warm
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                best[name] = min(best[name], (time.perf_counter() - start) / args.steps * 1e3)
        ours, ref = best["ensemble, fused"], best["per member, default"]
        report.append(f"  {label}: ensemble, fused {ours:.2f} | per member, default {ref:.2f} | ratio {ours / ref:.2f}")
    write_report(report, args.out)


if __name__ == "__main__":
    main()
