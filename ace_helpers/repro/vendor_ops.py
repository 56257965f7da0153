"""Operations whose bits depend on the CPU's vendor, and an audit that finds them in a computation.

Under the reproducible-kernels setting (:mod:`ace_helpers.repro.kernels`) torch's matrix products
take MKL's AVX2 strict branch, the same summation order on Intel and AMD CPUs.  Two other parts of
MKL still choose their code by vendor, and no setting reaches them:

* its vector-math library (VML), which torch calls for these float functions on the CPU:
  ``sqrt`` (also ``pow(x, 0.5)`` and ``_foreach_sqrt``), ``exp``, ``log``, ``log10``, ``erf``,
  ``erfc``, ``erfinv``, ``tan``, ``atan``, ``asin`` and ``acos``;
* its LAPACK, behind ``torch.linalg`` (``qr``, ``eigh``, ``svd``, ``eig``, ``solve``, ``lstsq`` …).

Measured on an Intel Xeon (AVX-512, AMX), torch 2.13.0, under the setting: each of these gave other
bits than the same run with MKL forced onto its AMD code path, on 100 003 float32 values (the
linear-algebra ones on a 256 × 64 matrix).  ``tanh``, ``sigmoid``, ``sin``, ``cos``, ``log1p``,
``expm1``, ``rsqrt``, ``log2``, ``pow(x, 0.3)``, softmax, log-softmax, GELU, SiLU and softplus gave
the same bits: ATen computes them itself.  numpy does not use MKL (its OpenBLAS and its own loops are
pinned by the setting), so ``np.exp`` and ``np.linalg`` are not concerned.

:class:`VendorOpAudit` is a torch dispatch mode that records every call of these operations on CPU
floating tensors while it is active; the tests run the book's training steps and analyses under it,
and fail if one appears.  The book routes each such step through ATen's own kernels instead
(:mod:`ace_helpers.method.portable`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: VML-routed elementwise functions (their ``aten`` names; in-place, ``out=`` and ``_foreach_`` forms included).
VML_FUNCTIONS = ("sqrt", "exp", "log", "log10", "erf", "erfc", "erfinv", "tan", "atan", "asin", "acos")

#: LAPACK-routed ``aten`` operations (torch.linalg and its older spellings).
LAPACK_OPS = (
    "linalg_qr",
    "geqrf",
    "orgqr",
    "ormqr",
    "householder_product",
    "linalg_eigh",
    "_linalg_eigh",
    "linalg_eigvalsh",
    "linalg_eig",
    "linalg_eigvals",
    "_linalg_svd",
    "linalg_svd",
    "linalg_svdvals",
    "linalg_solve",
    "_linalg_solve_ex",
    "linalg_solve_ex",
    "linalg_lstsq",
    "linalg_inv",
    "linalg_inv_ex",
    "linalg_cholesky",
    "linalg_cholesky_ex",
    "cholesky_solve",
    "linalg_lu",
    "linalg_lu_factor_ex",
    "lu_unpack",
    "linalg_pinv",
    "_linalg_det",
    "_linalg_slogdet",
    "triangular_solve",
    "linalg_solve_triangular",
    "linalg_matrix_exp",
)


def _base_name(op: Any) -> str:
    """``aten.exp_.default`` -> ``exp``; ``aten._foreach_sqrt.default`` -> ``sqrt``."""
    name = op.overloadpacket.__name__ if hasattr(op, "overloadpacket") else str(op)
    name = name.removeprefix("_foreach_")
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def is_vendor_op(op: Any, args: tuple[Any, ...]) -> bool:
    """Whether the ``aten`` overload ``op`` called with ``args`` runs a vendor-dependent MKL routine: a
    :data:`VML_FUNCTIONS` or :data:`LAPACK_OPS` operation (or ``pow`` with exponent 0.5) on a CPU floating tensor."""
    tensors = [a for a in _flat(args) if isinstance(a, torch.Tensor)]
    if not any(t.device.type == "cpu" and t.dtype.is_floating_point for t in tensors):
        return False
    name = _base_name(op)
    if name in VML_FUNCTIONS or name in LAPACK_OPS:
        return True
    return name == "pow" and len(args) > 1 and isinstance(args[1], float) and args[1] == 0.5


def _flat(args: Any) -> list[Any]:
    out: list[Any] = []
    for a in args:
        out.extend(_flat(a) if isinstance(a, (list, tuple)) else [a])
    return out


class VendorOpAudit(TorchDispatchMode):
    """While active (``with VendorOpAudit() as audit:``), counts each vendor-dependent operation
    (:func:`is_vendor_op`) by its ``aten`` name in ``found`` (a Counter); every operation still runs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict | None = None) -> Any:
        if is_vendor_op(func, args):
            self.found[str(func)] += 1
        return func(*args, **(kwargs or {}))
