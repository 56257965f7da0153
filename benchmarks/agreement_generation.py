"""Chapter 5's steered generation, measured side by side in one run (ours vs every run in full).

Ours (``generate_with_flip``): per step one clean run (the KV cache for the next step), then the
calibration runs and the sampled run recompute only blocks ℓ−1.. (the clean run's state is fed past
the earlier blocks), and the calibration runs compute four verb logits instead of the whole
vocabulary. The reference (``tests.reference.steered_generate_full_runs``, the book's code before
this change) runs every one of them through all blocks and the whole vocabulary. Both use the same
KV cache and sampling generator; the script checks that they sample the same tokens. A second line
times the top-k sampler (a draw among the k candidates) against the book's former sampler (logits
below the k-th set to −inf, a multinomial over the whole vocabulary), on the model's vocabulary.

Usage (from the project root)::

    TORCH_THREADS=1 python -m benchmarks.agreement_generation [--model gemma3-270m] [--tokens 8] [--refine 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from ace_helpers import llm
from ace_helpers.chapters import llm_agreement as A
from ace_helpers.llm.agreement import GENERATION_PROMPTS, agreement_split, vocabulary
from ace_helpers.repro import thread_pools
from tests.reference import (  # run as a module from the project root (see Usage)
    sample_top_k_full_vocabulary,
    steered_generate_full_runs,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="model name, or 'tiny' for a random 4-layer Llama")
    parser.add_argument("--layer", type=int, default=None, help="edited layer ℓ (default: the model's last layer)")
    parser.add_argument("--tokens", type=int, default=8, help="new tokens per generation")
    parser.add_argument("--samples", type=int, default=8, help="rows per generation prompt (the book: 8)")
    parser.add_argument("--refine", type=int, default=2, help="extra secant steps (the book's refined rule: 2)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds; the best of each is reported")
    args = parser.parse_args()
    if args.model == "tiny":
        lm, tok = llm.tiny_model("llama", words=vocabulary(), n_layers=4, d_model=64)
    else:
        lm, tok = llm.load_model(args.model)
    threads = thread_pools.set_threads()
    layer = args.layer or llm.n_layers(lm)
    core = A.layer_cores(A.collect_states(lm, tok, agreement_split(100, seed=0).train_prompts, [layer], batch_size=50))[0]
    rows = [p for p in GENERATION_PROMPTS for _ in range(args.samples)]
    print(f"model {args.model}: layer {layer} of {llm.n_layers(lm)}, {len(rows)} rows, {args.tokens} new tokens, "
          f"refine {args.refine}, {threads} torch thread(s), best of {args.rounds} interleaved rounds")
    t_ours, t_full = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        ours, scales, _, _ = A.generate_with_flip(lm, tok, rows, layer, core, n_new=args.tokens, seed=0,
                                                  refine=args.refine, eps=3.0)
        t_ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        full, full_scales, _ = steered_generate_full_runs(lm, tok, rows, layer, core, n_new=args.tokens, seed=0,
                                                          refine=args.refine, eps=3.0)
        t_full.append(time.perf_counter() - start)
    same = float((ours == full).float().mean())
    err = float(np.abs(scales - full_scales).max())
    print(f"steered generation: ours {min(t_ours):.2f} s | every run in full {min(t_full):.2f} s | "
          f"speed-up x{min(t_full) / min(t_ours):.2f} | same tokens {same:.3f} | max scale difference {err:.1e}")

    logits = torch.randn(len(rows), len(tok), dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    t_top, t_vocab = [], []
    for _ in range(args.rounds):
        for sampler, times in ((A.sample_top_k, t_top), (sample_top_k_full_vocabulary, t_vocab)):
            gen = torch.Generator().manual_seed(0)
            start = time.perf_counter()
            for _ in range(args.tokens):
                sampler(logits, gen, 50)
            times.append(time.perf_counter() - start)
    print(f"sampling ({len(tok)} tokens, top-k 50): among the k {min(t_top):.3f} s | over the vocabulary "
          f"{min(t_vocab):.3f} s | speed-up x{min(t_vocab) / min(t_top):.1f}")


if __name__ == "__main__":
    main()
