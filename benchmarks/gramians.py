"""Streaming Gramians vs materialising all activations: time and peak memory, side by side.

Usage: python benchmarks/gramians.py [--rows 1000000] [--dim 64] [--batch 8192]

The naive way stacks every activation row (and every Jacobian) before computing Cov and Obs;
``GramianAccumulator`` adds batches and keeps only D x D sums.  Both are fed the same batches
from the same generator; the script prints both results' agreement and the ratios.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from ace_helpers.method.core import GramianAccumulator


def batches(rows: int, dim: int, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((dim, dim))
    w = rng.standard_normal((4, dim))
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        yield 3.0 + rng.standard_normal((n, dim)) @ mix, np.broadcast_to(w, (n, 4, dim))


def naive(rows: int, dim: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    hs, js = zip(*batches(rows, dim, batch))
    h, j = np.concatenate(hs), np.concatenate(js)
    hc = h - h.mean(axis=0)
    flat = j.reshape(-1, dim)
    return hc.T @ hc / (len(h) - 1), flat.T @ flat / len(h)


def streaming(rows: int, dim: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    acc = GramianAccumulator(dim)
    for h, j in batches(rows, dim, batch):
        acc.add_activations(h).add_jacobians(j)
    return acc.cov(), acc.obs()


def measure(fn, *args):
    tracemalloc.start()
    start = time.perf_counter()
    out = fn(*args)
    wall = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, wall, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8192)
    a = parser.parse_args()
    (cov_n, obs_n), t_n, m_n = measure(naive, a.rows, a.dim, a.batch)
    (cov_s, obs_s), t_s, m_s = measure(streaming, a.rows, a.dim, a.batch)
    err = max(np.abs(cov_n - cov_s).max() / np.abs(cov_n).max(), np.abs(obs_n - obs_s).max() / np.abs(obs_n).max())
    print(f"rows={a.rows} dim={a.dim} batch={a.batch}; max relative difference {err:.1e}")
    print(f"naive (stack all rows): {t_n:7.2f} s, peak {m_n / 2**20:9.1f} MiB")
    print(f"streaming accumulator:  {t_s:7.2f} s, peak {m_s / 2**20:9.1f} MiB")
    print(f"ratio naive/streaming: time {t_n / t_s:.2f}x, peak memory {m_n / m_s:.1f}x")


if __name__ == "__main__":
    main()
