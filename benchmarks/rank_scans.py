"""Benchmark: keep/remove accuracy at every rank r = 0..D, batched vs one model pass per rank.

The per-checkpoint analysis of the modular-addition chapters needs keep-only and core-removed
accuracy for every candidate rank (to find the necessary and sufficient dimensions).  The naive
way runs the model once per rank and mode with a forward hook that projects layer 2's output;
``ace_helpers.method.scans.rank_scan`` computes all ranks at once from the layer-2 activations,
because the tail after layer 2 is only ``lm_head``.  Both are timed here in one run, on the same
model and test split, and their accuracies are compared.

Run:  TORCH_THREADS=1 python benchmarks/rank_scans.py [--p 53] [--repeats 3] [--nnsight]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from ace_helpers.chapters.modadd.checkpoints import last_token_activations
from ace_helpers.chapters.modadd.limits import model_config
from ace_helpers.method.core import extract_core
from ace_helpers.method.scans import rank_scan
from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.models import build_model
from ace_helpers.toys.tasks.modadd import modadd_dataset


@torch.no_grad()
def naive_scan(model, inputs, targets, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One full forward pass per rank and mode, layer-2 output projected by a plain torch hook."""
    q_all = torch.as_tensor(basis, dtype=torch.float32)
    keep, remove = [], []
    for r in range(q_all.shape[1] + 1):
        q = q_all[:, :r]
        for mode, out in (("keep", keep), ("remove", remove)):
            def hook(_m, _i, h, q=q, mode=mode):
                proj = (h @ q) @ q.T
                return proj if mode == "keep" else h - proj

            handle = model.layers[-1].register_forward_hook(hook)
            try:
                logits = model(inputs)[:, -1]
            finally:
                handle.remove()
            out.append(float((logits.argmax(-1) == targets).double().mean()))
    return np.array(keep), np.array(remove)


def nnsight_scan(model, inputs, targets, core) -> tuple[np.ndarray, np.ndarray]:
    """One nnsight ``run_with_core`` trace per rank and mode (ranks 1..D)."""
    import nnsight

    from ace_helpers.method.interventions import run_with_core

    wrapped = nnsight.NNsight(model)
    keep, remove = [np.nan], [np.nan]
    for r in range(1, core.dim + 1):
        c = core.truncate(r)
        for mode, out in (("keep", keep), ("remove", remove)):
            logits = run_with_core(wrapped, inputs, "layers.1", c, mode)[:, -1]
            out.append(float((logits.argmax(-1) == targets).double().mean()))
    return np.array(keep), np.array(remove)


def best_of(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--p", type=int, default=53)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nnsight", action="store_true", help="also time one nnsight trace per rank")
    args = ap.parse_args()
    set_threads()
    data = modadd_dataset(args.p, 0.5, seed=42)
    model = build_model(model_config(args.p), seed=0).eval()
    x = data.test_inputs
    with torch.no_grad():
        y = model(x)[:, -1].argmax(-1)  # the model's own answers: non-trivial curves at init
    H = last_token_activations(model, x)
    core = extract_core(H, model.lm_head.weight, energy=0.99)
    print(f"p = {args.p}: {len(y)} test rows, D = {core.dim}, ranks 0..{core.dim}, torch threads {torch.get_num_threads()}")

    t_batched, (kb, rb) = best_of(
        lambda: rank_scan(H, model.lm_head.weight, model.lm_head.bias, core.full_basis, y), args.repeats
    )
    t_naive, (kn, rn) = best_of(lambda: naive_scan(model, x, y, core.full_basis), args.repeats)
    diff = max(np.abs(kb - kn).max(), np.abs(rb - rn).max())
    print(f"batched rank_scan (all ranks, one tensor op) : {t_batched * 1e3:8.1f} ms")
    print(f"naive: 2 model passes per rank (torch hooks) : {t_naive * 1e3:8.1f} ms  ({2 * (core.dim + 1)} passes)")
    print(f"speed-up batched vs naive                    : {t_naive / t_batched:8.1f}x")
    print(f"max |accuracy difference| over all ranks     : {diff:.2e} (1 test row = {1 / len(y):.2e})")
    if args.nnsight:
        t_nn, (ks, rs) = best_of(lambda: nnsight_scan(model, x, y, core), 1)
        d2 = max(np.nanmax(np.abs(kb - ks)), np.nanmax(np.abs(rb - rs)))
        print(f"naive via nnsight run_with_core (1 run)      : {t_nn * 1e3:8.1f} ms  -> batched is {t_nn / t_batched:.1f}x faster")
        print(f"max |accuracy difference| vs nnsight         : {d2:.2e}")


if __name__ == "__main__":
    main()
