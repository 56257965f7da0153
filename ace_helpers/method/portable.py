"""Numerics that give the same bits on every x86-64 CPU: optimiser steps and an orthonormalisation.

On the CPU, torch hands some float operations to MKL: the vector-math library (VML) computes
``sqrt``, ``exp``, ``log``, ``erf``, ``tan``, ``atan``, ``asin``, ``acos`` … (and ``pow(x, 0.5)``,
which is ``sqrt``), and LAPACK computes ``torch.linalg.qr``, ``eigh``, ``svd`` ….  MKL picks its
kernels by CPU vendor, so these round differently on Intel and AMD CPUs even under the book's
reproducible-kernels setting (:mod:`ace_helpers.repro.vendor_ops` lists them, with the
measurement).  torch's own ATen kernels, by contrast, compute with IEEE-754 instructions only
(``sqrtps`` is correctly rounded, so its result is the one result the standard allows).

This module gives the book's steps that need a square root or an orthonormal basis a path through
ATen alone:

* :func:`adam` and :func:`adamw` are ``torch.optim.Adam`` / ``AdamW`` on their *fused* kernel
  (``aten::_fused_adam_`` / ``_fused_adamw_``), whose square root is ATen's
  ``Vectorized<float>::sqrt`` (the ``sqrtps`` instruction) and, on its scalar tail, ``std::sqrt``
  (``sqrtss``): correctly rounded by construction, with no vendor library in between.  The
  default (for-loop) path calls ``Tensor.sqrt``, which is VML's.
* :func:`orthonormalize` is a differentiable modified Gram–Schmidt built from ATen's elementwise
  products, sums and ``rsqrt`` (``1 / sqrt``, both correctly rounded), in place of ``torch.linalg.qr``
  (its dot products are not MKL's either: MKL picks the kernels of small products by vendor too).

On a GPU these are the same algorithms on the GPU's kernels (the fused optimisers exist there too).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def adam(params: Iterable[torch.nn.Parameter], *, lr: float) -> torch.optim.Adam:
    """``torch.optim.Adam(params, lr=lr)`` on ATen's fused kernel (the same bits on every x86-64 CPU)."""
    return torch.optim.Adam(params, lr=lr, fused=True)


def adamw(params: Iterable[torch.nn.Parameter], *, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """``torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)`` on ATen's fused kernel (the same
    bits on every x86-64 CPU; the default for-loop step takes VML's vendor-dependent square root)."""
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=True)


def orthonormalize(a: torch.Tensor) -> torch.Tensor:
    """(D, r) orthonormal columns spanning the columns of ``a`` (D, r), r ≤ D, in order (modified
    Gram–Schmidt, twice for accuracy); differentiable.  Each column has a positive component along
    the input column it comes from (the Q of a QR with a positive diagonal R).

    Raises:
        ValueError: ``a`` is not a 2-D floating tensor with at least as many rows as columns.
    """
    if a.dim() != 2 or not a.dtype.is_floating_point or a.shape[1] > a.shape[0] or a.shape[1] < 1:
        raise ValueError(
            f"orthonormalize needs a (D, r) floating tensor with 1 <= r <= D, got shape {tuple(a.shape)} and dtype {a.dtype}"
        )
    cols: list[torch.Tensor] = []
    for j in range(a.shape[1]):
        v = a[:, j]
        for _ in range(2):  # re-orthogonalise once: "twice is enough" (Giraud et al. 2005)
            for q in cols:
                v = v - (q * v).sum() * q
        cols.append(v * torch.rsqrt((v * v).sum()))
    return torch.stack(cols, dim=1)
