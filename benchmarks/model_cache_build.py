"""First use of an offline LLM: building its float32 cache from the GGUF, one parse vs three, side by side.

Chapters 5 and 6 read SmolLM2-135M and Gemma-3-270M from float32 safetensors caches that
:func:`ace_helpers.llm.offline_model_path` builds from the packages' GGUF files on first use.
transformers opens a GGUF file three times for that (tokenizer, config, weights) and parses its
whole header each time; the library shares one parsed header between the three
(``ace_helpers.llm.offline._one_gguf_parse``).  This script builds each model's cache both ways into
temporary folders, in interleaved rounds (shared, three parses, shared, ...), checks that both
builds wrote the same files byte for byte, and prints the best wall time of each and the ratio.

Usage::

    python benchmarks/model_cache_build.py [--models smollm2-135m gemma3-270m] [--rounds 1] [--out FILE]

``--out book/model_cache_build.txt`` also writes the report there (atomically), with the date, the CPU
and the torch version; the reproducibility page includes that file.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import tempfile
import time
from pathlib import Path

from ace_helpers import llm
from ace_helpers.llm import offline
from ace_helpers.repro.artifacts import write_report
from ace_helpers.repro.machine import machine_line
from ace_helpers.repro.thread_pools import set_threads


def build(name: str, cache: Path, *, shared: bool) -> float:
    """Build ``name``'s cache under ``cache``; ``shared=False`` lets transformers parse the GGUF each time it
    opens it (what a plain ``from_pretrained(gguf_file=...)`` does).  Returns the wall time in seconds."""
    real = offline._one_gguf_parse
    if not shared:
        offline._one_gguf_parse = contextlib.nullcontext
    try:
        start = time.perf_counter()
        llm.offline_model_path(name, cache=cache)
        return time.perf_counter() - start
    finally:
        offline._one_gguf_parse = real


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file in ``folder`` by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"], choices=sorted(llm.OFFLINE_MODELS))
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds; the best of each is compared")
    parser.add_argument("--out", type=Path, default=None, help="also write the report to this file")
    args = parser.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    threads = set_threads()
    import transformers  # noqa: F401 - imported before any timing, so neither variant pays for it

    lines = []
    for name in args.models:
        best = {True: float("inf"), False: float("inf")}
        with tempfile.TemporaryDirectory(prefix="ace-cache-bench-") as tmp:
            for r in range(args.rounds):
                for shared in (True, False):
                    cache = Path(tmp) / f"{'one' if shared else 'three'}-{r}"
                    wall = build(name, cache, shared=shared)
                    best[shared] = min(best[shared], wall)
                    print(f"{name} round {r + 1}: {'one parse' if shared else 'three parses'} {wall:6.1f} s", flush=True)
            one, three = (digests(next((Path(tmp) / f"{v}-0").iterdir())) for v in ("one", "three"))
            if one != three:
                raise SystemExit(f"{name}: the two builds differ in {sorted(k for k in one if one[k] != three.get(k))}")
        lines.append(f"  {name:<13} one parse {best[True]:6.1f} s | three parses {best[False]:6.1f} s | "
                     f"three / one {best[False] / best[True]:.2f}x (same files, sha256)")
    report = [
        machine_line(),
        f"float32 cache build from the GGUF (first use of each offline model), {threads} torch thread(s), best of {args.rounds} round(s)",
        *lines,
    ]
    write_report(report, args.out)


if __name__ == "__main__":
    main()
