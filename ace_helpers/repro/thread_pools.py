"""Threads: torch's intra-op threads and the BLAS / OpenMP pools of numpy, SciPy and scikit-learn, set to one count."""

from __future__ import annotations

import os

import torch
from threadpoolctl import threadpool_limits

from ace_helpers.method.checks import check_int, fail
from ace_helpers.repro.kernels import mode


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity mask, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def thread_budget(workers: int, cores: int | None = None) -> int:
    """Torch threads for each of ``workers`` processes run at once: ``max(1, cores // workers)``
    (``cores``: default :func:`cpu_cores`)."""
    return max(1, (cpu_cores() if cores is None else cores) // check_int("workers", workers, low=1))


#: The thread pools of numpy / SciPy (OpenBLAS, MKL) and scikit-learn (OpenMP), by the variable each reads at load.
POOL_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_pools(threads: int) -> None:
    """Give the BLAS and OpenMP pools of numpy, SciPy and scikit-learn ``threads`` threads: those already
    loaded through threadpoolctl, those loaded later through :data:`POOL_VARIABLES` (overwritten, so that
    one count holds for every pool of the process)."""
    threads = check_int("threads", threads, low=1)
    for name in POOL_VARIABLES:
        os.environ[name] = str(threads)
    threadpool_limits(limits=threads)


def set_threads(threads: int | None = None, *, workers: int = 1) -> int:
    """Set torch's intra-op threads, and the BLAS / OpenMP pools (:func:`limit_pools`), to ``threads``,
    else ``$TORCH_THREADS``, else the thread budget; under the reproducible kernels, to 1.

    Under the reproducible kernels (:mod:`ace_helpers.repro.kernels`, the default) every process computes
    with one thread, whatever is asked: a parallel reduction splits its sum by thread, so the
    thread count changes the last bits.  With ``ACE_KERNELS=native`` the budget keeps workers ×
    threads ≤ cores: a process that is one of ``workers`` parallel workers gets ``max(1, cores //
    workers)`` threads, and with ``workers=1`` and no variable set the libraries' defaults are left
    as they are.  On a 2-core machine anything else running makes 2 threads ~16x slower (torch's,
    and numpy's or scikit-learn's just as much), so tests and CI set ``TORCH_THREADS=1``.  Returns
    torch's thread count in force.
    """
    workers = check_int("workers", workers, low=1)
    if threads is None and os.environ.get("TORCH_THREADS"):
        raw = os.environ["TORCH_THREADS"].strip()
        if not raw.isdigit():
            fail("TORCH_THREADS", raw, "a positive integer (environment variable), e.g. TORCH_THREADS=1")
        threads = check_int("TORCH_THREADS", int(raw), low=1)
    if threads is None and workers > 1:
        threads = thread_budget(workers)
    if mode() == "reproducible":
        threads = 1
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads, low=1))
        limit_pools(threads)
    return torch.get_num_threads()
