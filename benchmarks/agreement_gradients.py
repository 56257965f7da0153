"""Chapter 5 speed-ups, measured side by side in one run (ours vs the naive way).

1. Margin gradients for every layer: one forward + one backward per batch, all layers' gradients
   read from it (``collect_states``), vs one forward + backward per layer and batch with plain
   hooks (``tests.reference.collect_states_per_layer``).
2. The keep / remove / flip sweep: prefix cached once, only the last token and only blocks ℓ−1..
   recomputed, three modes stacked (``sweep_margins``), vs one full forward per layer and mode
   (``modes`` in another order forces the full-forward path).

Both pairs are also checked to give the same numbers. Usage::

    TORCH_THREADS=1 python -m benchmarks.agreement_gradients [--model smollm2-135m] [--prompts 20]   # from the project root
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ace_helpers import llm
from ace_helpers.chapters import llm_agreement as A
from ace_helpers.llm.agreement import agreement_split, vocabulary
from ace_helpers.repro import thread_pools
from tests.reference import collect_states_per_layer  # run as a module from the project root (see Usage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="model name, or 'tiny' for a random 4-layer Llama")
    parser.add_argument("--prompts", type=int, default=20, help="prompts per measurement (even)")
    parser.add_argument("--batch-size", type=int, default=10)
    args = parser.parse_args()
    thread_pools.set_threads()
    if args.model == "tiny":
        lm, tok = llm.tiny_model("llama", words=vocabulary(), n_layers=4, d_model=64)
    else:
        lm, tok = llm.load_model(args.model)
    layers = list(range(1, llm.n_layers(lm) + 1))
    data = agreement_split(2 * args.prompts, seed=0)
    prompts = data.train_prompts
    print(f"model {args.model}: {len(layers)} layers, {len(prompts)} prompts, batch {args.batch_size}, "
          f"{thread_pools.set_threads()} torch thread(s)")

    start = time.perf_counter()
    ours = A.collect_states(lm, tok, prompts, layers, batch_size=args.batch_size)
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    naive = collect_states_per_layer(lm, tok, prompts, layers, batch_size=args.batch_size)
    t_naive = time.perf_counter() - start
    err = float(np.abs(ours.G - naive.G).max() / np.abs(naive.G).max())
    print(f"gradients, all layers: one backward per batch {t_ours:.2f} s | one pass per layer {t_naive:.2f} s | "
          f"speed-up x{t_naive / t_ours:.1f} | max relative difference {err:.1e}")

    cores = A.layer_cores(ours)
    test = data.test_prompts
    start = time.perf_counter()
    fast = A.sweep_margins(lm, tok, test, layers, cores, batch_size=args.batch_size)
    t_fast = time.perf_counter() - start
    start = time.perf_counter()
    full = A.sweep_margins(lm, tok, test, layers, cores, modes=("flip", "remove", "keep"), batch_size=args.batch_size)
    t_full = time.perf_counter() - start
    err = max(float(np.abs(fast[m] - full[m]).max()) for m in A.MODES)
    print(f"keep/remove/flip sweep, all layers: last-token recompute {t_fast:.2f} s | full forwards {t_full:.2f} s | "
          f"speed-up x{t_full / t_fast:.1f} | max abs margin difference {err:.1e}")


if __name__ == "__main__":
    main()
