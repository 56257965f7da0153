"""``python -m ace_helpers.chapters.llm_agreement --preset book --store qwen2.5-1.5b``: analyse one model at a preset's
knobs and store the analysis that chapter 5 reads (:mod:`.stored`)."""

from __future__ import annotations

import argparse
import time

from ace_helpers import llm
from ace_helpers.chapters.llm_agreement import PARAMS
from ace_helpers.chapters.llm_agreement.pipeline import run_models
from ace_helpers.chapters.llm_agreement.stored import STORED_MODELS, save_model_result
from ace_helpers.repro.artifacts import display_path


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, analyse the model, store its analysis."""
    parser = argparse.ArgumentParser(prog="python -m ace_helpers.chapters.llm_agreement", description=__doc__)
    parser.add_argument("--preset", default="book", choices=["ci", "book", "paper"])
    parser.add_argument("--store", required=True, choices=list(STORED_MODELS), help="the model to analyse and store")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N or mps")
    parser.add_argument("--dtype", default="auto", help="auto (the paper's dtype on a GPU, float32 on the CPU), family (the paper's dtype anywhere), "
                        "float32, bfloat16 or float16; a run off the CPU or in half precision is stored beside the CPU one")
    args = parser.parse_args(argv)
    cfg = PARAMS.resolve(PRESET=args.preset, MODELS=[args.store], DEVICE=args.device, DTYPE=args.dtype)  # validated first
    (label,) = llm.model_labels(list(cfg.MODELS))
    start = time.perf_counter()
    res = run_models(cfg)[label]
    path = save_model_result(cfg, res, wall_s=time.perf_counter() - start)
    print(f"stored {label} ({time.perf_counter() - start:.0f} s): {display_path(path)}")


if __name__ == "__main__":
    main()
