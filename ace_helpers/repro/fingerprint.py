"""A fingerprint of the kernels the chapters compute with: one hash per operation, to compare machines.

Each operation runs on fixed seeded inputs at the chapters' shapes, one thread, and is hashed
(sha256 of its output bytes, first 16 hex digits).  Two machines that print the same line for an
operation computed it bit for bit alike.  The first seventeen operations are those of the
project's reference fingerprint, taken on an AVX2-only AMD EPYC (the expected lines ship as
``tests/data/kernel_fingerprint.txt``); the rest are the chapters' own kernels: numpy's
transcendental loops (which have AVX-512 variants), one training step of the batched ensemble
trainer (chapters 1-4), and ACE itself on fixed states and Jacobians.

Run it under the reproducible setting (:mod:`ace_helpers.repro.kernels`), which fixes the libraries'
code paths before they load::

    python -m ace_helpers.kernels --fingerprint --compare tests/data/kernel_fingerprint.txt
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg
import torch

from ace_helpers.method import portable
from ace_helpers.method.core import extract_core
from ace_helpers.repro import kernels
from ace_helpers.repro.machine import cpu_model
from ace_helpers.repro.thread_pools import limit_pools
from ace_helpers.toys.ensemble_trainer import EnsembleTrainer
from ace_helpers.toys.models import ToyConfig
from ace_helpers.toys.precision import cpu_info


def digest(*arrays: Any) -> str:
    """First 16 hex digits of the sha256 of the arrays' bytes (torch tensors or numpy arrays)."""

    h = hashlib.sha256()
    for a in arrays:
        if hasattr(a, "detach"):
            a = a.detach().contiguous().numpy()
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _torch_reference() -> dict[str, str]:
    """The reference fingerprint's eleven torch operations (their order fixes the random draws); its
    AdamW step is the book's (the fused kernel), where the reference took torch's default step, whose
    square root is MKL's vendor-dependent one (:mod:`ace_helpers.repro.vendor_ops`)."""

    g = torch.Generator().manual_seed(0)
    out: dict[str, str] = {}
    a, b = torch.randn(1024, 128, generator=g), torch.randn(128, 512, generator=g)
    out["torch.matmul (1024x128)@(128x512)"] = digest(a @ b)
    w, x = torch.randn(6, 128, 128, generator=g), torch.randn(6, 1024, 128, generator=g)
    out["torch.bmm (6,1024,128)@(6,128,128)"] = digest(torch.bmm(x, w))
    lin = torch.nn.Linear(128, 512)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(512, 128, generator=g) * 0.05)
        lin.bias.copy_(torch.randn(512, generator=g) * 0.05)
    xi = a.clone().requires_grad_(True)
    y = lin(xi)
    y.square().mean().backward()
    out["torch.nn.Linear forward"] = digest(y)
    out["torch.nn.Linear backward (input, weight grads)"] = digest(xi.grad, lin.weight.grad)
    q, k = torch.randn(8, 4, 32, 32, generator=g), torch.randn(8, 4, 32, 32, generator=g)
    out["torch attention scores + softmax"] = digest(torch.softmax(q @ k.transpose(-1, -2) / 32**0.5, dim=-1))
    out["torch.nn.LayerNorm"] = digest(torch.nn.LayerNorm(128)(a))
    out["torch GELU, ReLU"] = digest(torch.nn.functional.gelu(a), torch.relu(a))
    logits = torch.randn(2048, 113, generator=g, requires_grad=True)
    target = torch.randint(0, 113, (2048,), generator=g)
    loss = torch.nn.functional.cross_entropy(logits, target)
    loss.backward()
    out["torch cross_entropy + backward"] = digest(loss, logits.grad)
    p = torch.nn.Parameter(torch.randn(512, 128, generator=g))
    opt = portable.adamw([p], lr=1e-3, weight_decay=1.0)
    for _ in range(3):
        opt.zero_grad()
        (p @ b).square().mean().backward()
        opt.step()
    out["torch AdamW (fused), 3 steps"] = digest(p)
    mask = torch.empty(6, 1024, 512).bernoulli_(0.9, generator=torch.Generator().manual_seed(1))
    out["torch bernoulli_ with a seeded generator"] = digest(mask)
    out["torch sum / mean over 1M"] = digest(torch.randn(1_000_000, generator=g).sum(), a.mean(0))
    return out


def _torch_book() -> dict[str, str]:
    """The book's other torch steps: Adam on its fused kernel (chapter 6's DAS), the orthonormalisation
    that replaces LAPACK's QR there, and the elementwise functions of the chapters' models that look like
    MKL's vector math but are ATen's own (RMSNorm's rsqrt, tanh, sigmoid / SiLU, RoPE's sin, cos and pow)."""

    g = torch.Generator().manual_seed(4)
    out: dict[str, str] = {}
    raw = torch.nn.Parameter(torch.randn(256, 8, generator=g))
    target = torch.randn(256, 8, generator=g)
    opt = portable.adam([raw], lr=0.02)
    for _ in range(3):
        opt.zero_grad()
        (portable.orthonormalize(raw) - target).square().sum().backward()
        opt.step()
    out["torch Adam (fused) through orthonormalize, 3 steps"] = digest(raw, portable.orthonormalize(raw))
    x = torch.randn(100_003, generator=g)
    f = torch.nn.functional
    out["torch rsqrt, tanh, sigmoid, SiLU, sin, cos, pow (100k)"] = digest(
        torch.rsqrt(x.abs() + 1e-3),
        torch.tanh(x),
        torch.sigmoid(x),
        f.silu(x),
        torch.sin(x),
        torch.cos(x),
        torch.pow(10_000.0, x.clamp(-1, 1)),
        f.gelu(x, approximate="tanh"),
    )
    return out


def _small_products() -> dict[str, str]:
    """Matrix products at the toy models' small shapes (MKL picks its small-size kernels by CPU vendor):
    chapter 1's unembedding (2048, 64) @ (64, 4), its per-head attention (256, 32, 16) @ (256, 16, 32), a
    dot product and a matrix-vector product."""

    g = torch.Generator().manual_seed(6)
    h, w = torch.randn(2048, 64, generator=g), torch.randn(64, 4, generator=g)
    q, k = torch.randn(256, 32, 16, generator=g), torch.randn(256, 16, 32, generator=g)
    v, m = torch.randn(256, generator=g), torch.randn(64, 256, generator=g)
    return {"torch small products (unembedding, per-head attention, dot, matrix-vector)": digest(h @ w, q @ k, v @ v, m @ v)}


def _numpy_reference() -> dict[str, str]:
    """The reference fingerprint's six numpy / SciPy (OpenBLAS, LAPACK) operations."""

    rng = np.random.default_rng(0)
    out: dict[str, str] = {}
    h, j = rng.standard_normal((2000, 128)), rng.standard_normal((2000, 128))
    out["numpy matmul H^T J (128x2000 @ 2000x128)"] = digest(h.T @ j)
    c = h.T @ h / len(h)
    out["numpy.linalg.eigh (128x128 covariance)"] = digest(*np.linalg.eigh(c))
    u, s, vt = np.linalg.svd(h.T @ j, full_matrices=False)
    out["numpy.linalg.svd (128x128)"] = digest(np.abs(u), s, np.abs(vt))
    z = rng.standard_normal((500, 16))
    out["numpy.linalg.lstsq (500x16)"] = digest(np.linalg.lstsq(z[:-1], z[1:], rcond=None)[0])
    out["numpy.linalg.eig (16x16 operator)"] = digest(np.sort_complex(np.linalg.eigvals(z.T @ z / 500)))
    out["scipy.linalg.svd (gesdd, 128x128)"] = digest(scipy.linalg.svd(c, compute_uv=False))
    return out


def _numpy_book() -> dict[str, str]:
    """numpy's QR (chapter 4's Fourier projector, the bases of chapter 6) on a tall matrix."""

    a = np.random.default_rng(5).standard_normal((500, 24))
    q, r = np.linalg.qr(a)
    return {"numpy.linalg.qr (500x24)": digest(q, r)}


def _numpy_loops() -> dict[str, str]:
    """numpy's own SIMD loops that have AVX-512 variants (float64 exp, log, power)."""

    x = np.random.default_rng(1).standard_normal(100_003)
    return {"numpy exp, log, power (float64, 100k)": digest(np.exp(x), np.log(np.abs(x) + 1e-3), np.power(np.abs(x), 0.3))}


def _ensemble_step() -> dict[str, str]:
    """Two training steps of the batched ensemble trainer (3 members, dropout, AdamW) on fixed data."""

    config = ToyConfig(vocab=59, d_model=64, n_layers=1, n_heads=4, max_len=4, dropout=0.1)
    trainer = EnsembleTrainer(config, [3, 4, 5], [1.0, 1.0, 0.0], lr=1e-3, batch_size=64)
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, 59, (128, 4), generator=g)
    losses = trainer.train_epoch(tokens[:, :3], tokens[:, 1:])
    return {"ensemble trainer, one epoch (3 members, 2 steps)": digest(losses, *trainer.ensemble.parameters())}


def _ace() -> dict[str, str]:
    """ACE on fixed states H (2000, 64) and Jacobians J (2000, 8, 64): the balanced basis, weights and rank."""

    rng = np.random.default_rng(3)
    mix = rng.standard_normal((64, 64))
    h = rng.standard_normal((2000, 64)) @ mix
    j = rng.standard_normal((2000, 8, 64)) @ mix.T / 8
    core = extract_core(h, j, energy=0.99)
    return {"ACE core (extract_core, 2000 states x 8 outputs x 64)": digest(core.full_basis, core.weights, np.array([core.rank]))}


#: Every operation group, in the order they print.
GROUPS: tuple[Callable[[], dict[str, str]], ...] = (
    _torch_reference,
    _numpy_reference,
    _torch_book,
    _small_products,
    _numpy_book,
    _numpy_loops,
    _ensemble_step,
    _ace,
)


def lines() -> list[str]:
    """``"operation: hash"`` lines for every operation, at one thread."""

    torch.set_num_threads(1)
    limit_pools(1)
    rows: dict[str, str] = {}
    for group in GROUPS:
        rows.update(group())
    return [f"{name}: {value}" for name, value in rows.items()]


def _entries(path: Path) -> list[tuple[str | None, str, str]]:
    """``(vendor or None, operation, hash)`` for every line of a file of :func:`lines` (``#`` lines are comments;
    a line ``[VENDOR] operation: hash`` holds on that vendor's CPUs only).

    Raises:
        ValueError: a line that is not ``[VENDOR] operation: hash`` or ``operation: hash``.
    """
    out = []
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        tag, line = None, raw
        if raw.startswith("["):
            tag, sep, line = raw[1:].partition("] ")
            if not sep or not tag.isalnum():
                tag = ""
        name, sep, value = line.rpartition(": ")
        if not sep or not name or tag == "":
            raise ValueError(f"{path}:{number}: expected '[VENDOR] operation: hash' or 'operation: hash', got {raw!r}")
        out.append((tag, name, value.strip()))
    return out


def read_expected(path: Path, vendor: str | None = None) -> dict[str, str]:
    """``{operation: hash}`` from a file of :func:`lines`: its untagged lines, and its ``[VENDOR]`` lines
    (``[GenuineIntel]``, ``[AuthenticAMD]``) for ``vendor`` (default: this CPU's, :func:`vendor_of_this_cpu`).

    Raises:
        ValueError: a line that is not ``[VENDOR] operation: hash`` or ``operation: hash``.
    """
    vendor = vendor_of_this_cpu() if vendor is None else vendor
    return {name: value for tag, name, value in _entries(path) if tag is None or tag == vendor}


def unmeasured(path: Path, vendor: str | None = None) -> list[str]:
    """The operations of ``path`` that hold per vendor (``[VENDOR]`` lines) but have no line for ``vendor``
    (default: this CPU's): not yet measured on such a CPU."""
    vendor = vendor_of_this_cpu() if vendor is None else vendor
    tagged = [(tag, name) for tag, name, _ in _entries(path) if tag is not None]
    return sorted({name for _, name in tagged} - {name for tag, name in tagged if tag == vendor})


def vendor_of_this_cpu() -> str:
    """This CPU's vendor as ``/proc/cpuinfo`` names it (``GenuineIntel``, ``AuthenticAMD``), or ``"unknown"``."""
    return cpu_info().get("vendor_id", "unknown")


def compare(mine: list[str], expected: dict[str, str]) -> tuple[int, list[str]]:
    """How many of ``expected``'s operations ``mine`` matches, and a line for each that differs or is missing."""
    have = dict(line.rpartition(": ")[::2] for line in mine)
    bad = [
        f"differs: {name}" if name in have else f"missing: {name}" for name, value in expected.items() if have.get(name) != value
    ]
    return len(expected) - len(bad), bad


def main(argv: list[str] | None = None) -> int:
    """Print the fingerprint; with ``--compare FILE`` also the comparison, exit 1 if any operation differs."""

    parser = argparse.ArgumentParser(prog="python -m ace_helpers.fingerprint", description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, default=None, help="a file of expected lines")
    args = parser.parse_args(argv)
    expected = read_expected(args.compare) if args.compare is not None else None
    mine = lines()
    missing = unmeasured(args.compare) if args.compare is not None else []
    print(
        f"# {cpu_model()}; {platform.machine()}, torch {torch.__version__} "
        f"({torch.backends.cpu.get_cpu_capability()} kernels), numpy {np.__version__}; {kernels.describe()}"
    )
    print("\n".join(mine))
    if expected is None:
        return 0
    same, bad = compare(mine, expected)
    print(f"\n{same} of {len(expected)} operations bit-identical to {args.compare}")
    print("\n".join(f"  {b}" for b in bad))
    if missing:
        print(f"not yet measured on a {vendor_of_this_cpu()} CPU (these differ by vendor; not compared):")
        print("\n".join(f"  {name}" for name in missing))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
