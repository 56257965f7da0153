"""Reproducible kernels: every library on its AVX2 code path, so that x86-64 CPUs compute fp32 alike.

Which machine code computes a sum depends on the CPU: torch's own vectorised kernels (ATen), MKL
(torch's BLAS), oneDNN, the OpenBLAS inside numpy and SciPy, and numpy's own SIMD loops each pick
the widest instructions the CPU has (AVX2, AVX-512, AMX).  Each sums in its own order, so the last
bits differ between kinds of CPU, and training amplifies them until a claim near its threshold
flips.  The *reproducible* setting (:data:`PINNED`) makes every one of these libraries run its
AVX2 code path, which every x86-64 CPU with AVX2 has: an AVX-512 AMD machine then computes exactly
what an AVX2-only AMD machine computes.  On Intel CPUs MKL's strict
AVX2 branch (``MKL_CBWR=AVX2,STRICT``) sums large matrix products in the AMD kernels' order: the
fingerprint's large products match the AVX2-only AMD reference there bit for bit.  Two parts of MKL
still choose their code by vendor, and no variable reaches them: its vector math and LAPACK, which
the book no longer calls (:mod:`ace_helpers.repro.vendor_ops`, :mod:`ace_helpers.method.portable`),
and the kernels of small matrix products (the toy models' shapes), so trained numbers still differ
in the last bits between an Intel and an AMD CPU (see the book's reproducibility page).

The libraries read these variables once, when they load, so they must be in the environment of
every process that computes, before it starts: ``make`` starts the test suite and the runbook
through ``python -m ace_helpers.kernels -- COMMAND``; the runbook and the variant runs put them in
the environment of every notebook kernel they start; worker processes inherit them.

Threads change sums too (a parallel reduction splits the sum by thread).  The rule: under the
setting every process computes with **one** thread (torch intra-op and the BLAS / OpenMP pools);
the book gets its parallelism from processes (notebooks run side by side, ensemble members,
sweep workers).  ``TORCH_THREADS`` > 1 applies only with ``ACE_KERNELS=native``.

Opt out with ``ACE_KERNELS=native``: the libraries' own fastest kernels and any thread count, at
the price of numbers that can differ from the stored ones in the last bits, and, after training,
beyond.  bf16 is outside the promise: AMX, AVX512-BF16 and emulated bf16 are different kernels,
so bf16 numbers are reproducible on one kind of CPU only.  So are GPUs and other architectures.

Command line::

    python -m ace_helpers.kernels                         # is the setting in force here? (exit 1 if not)
    python -m ace_helpers.kernels -- papermill a.ipynb b.ipynb -p PRESET ci   # run a command under it
    python -m ace_helpers.kernels --fingerprint [--compare FILE]   # hash the chapters' kernels
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path

from threadpoolctl import threadpool_info

from ace_helpers.toys.precision import cpu_flags

#: The variable that chooses the setting, and its values.
MODE_VARIABLE = "ACE_KERNELS"
MODES = ("reproducible", "native")

#: The AVX2 code path of each library, by the variable it reads when it loads.
PINNED: Mapping[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    "MKL_CBWR": "AVX2,STRICT",  # MKL inside torch: conditional numerical reproducibility, AVX2 branch, strict
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN inside torch
    "OPENBLAS_CORETYPE": "Haswell",  # the OpenBLAS inside numpy and SciPy: its AVX2 kernels
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",  # numpy's AVX-512 loops (exp, log, power, ...)
}

#: The CPU flags the setting needs (every x86-64 CPU since about 2013 has them).
REQUIRED_FLAGS = ("avx2", "fma")


def mode(environ: Mapping[str, str] | None = None) -> str:
    """The setting asked for: ``$ACE_KERNELS`` (default ``"reproducible"``).

    Raises:
        ValueError: ``ACE_KERNELS`` is set to anything but ``reproducible`` or ``native``.
    """
    env = os.environ if environ is None else environ
    value = env.get(MODE_VARIABLE, "").strip() or MODES[0]
    if value not in MODES:
        raise ValueError(
            f"{MODE_VARIABLE}={value!r} is not allowed: {MODE_VARIABLE} must be one of {list(MODES)} "
            f"(environment variable; unset means 'reproducible')"
        )
    return value


def supported() -> str | None:
    """Why this machine cannot run the setting (not x86-64, or no AVX2 / FMA), or None when it can."""

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"this is a {platform.machine()} machine, not x86-64"
    missing = [f for f in REQUIRED_FLAGS if f not in cpu_flags()]
    return f"this CPU lacks {', '.join(missing)}" if missing else None


def apply(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Put the setting in force for the processes started from ``environ`` (default ``os.environ``):
    under ``reproducible`` the :data:`PINNED` variables are set; under ``native`` nothing changes.
    Returns the variables it set.  A process that has already loaded torch or numpy is not changed
    itself: only the processes it starts afterwards are."""
    env = os.environ if environ is None else environ
    if mode(env) == "native" or supported() is not None:
        return {}
    env.update(PINNED)
    return dict(PINNED)


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) with the setting applied (:func:`apply`)."""
    env = dict(os.environ if base is None else base)
    apply(env)
    return env


def problems() -> list[str]:
    """Why this process does not compute under the setting: variables missing or different, or a
    library that loaded another code path anyway.  Empty when it does (or when the mode is native)."""
    if mode() == "native":
        return []
    why = supported()
    if why is not None:
        return [why]
    out = [f"{k} is {os.environ.get(k)!r}, not {v!r}" for k, v in PINNED.items() if os.environ.get(k) != v]
    if "torch" in sys.modules:
        capability = sys.modules["torch"].backends.cpu.get_cpu_capability()
        if capability != "AVX2":
            out.append(f"torch runs its {capability} kernels (it was loaded before ATEN_CPU_CAPABILITY was set)")
    if "numpy" in sys.modules:
        for pool in threadpool_info():
            if pool.get("internal_api") == "openblas" and pool.get("architecture") not in (None, "Haswell"):
                out.append(
                    f"{Path(pool['filepath']).name} runs its {pool['architecture']} kernels (loaded before OPENBLAS_CORETYPE)"
                )
    return out


def in_force() -> str:
    """The setting this process computes under, for manifests: ``"reproducible"``, ``"native"``, or
    ``"not in force"`` (reproducible asked for, but :func:`problems` found a library on another path)."""
    if mode() == "native":
        return "native"
    return "not in force" if problems() else "reproducible"


def describe() -> str:
    """One line for a chapter's setup cell: which setting is in force, and what follows for its numbers."""
    if mode() == "native":
        return (
            f"kernels: native ({MODE_VARIABLE}=native): the fastest code paths of this CPU; numbers may differ "
            "in the last bits from the stored ones, and a trained run may differ beyond"
        )
    missing = problems()
    if missing:
        return (
            "kernels: NOT under the reproducible setting (" + "; ".join(missing) + "): numbers may differ in the "
            "last bits from the stored ones, and a trained run may differ beyond. Start Jupyter or papermill "
            "through `python -m ace_helpers.kernels -- COMMAND` (make does)"
        )
    return (
        "kernels: reproducible (AVX2 code paths of torch, MKL (strict), oneDNN, OpenBLAS and numpy; one thread "
        "per process): fp32 numbers are the same on every CPU of one vendor; between Intel and AMD CPUs MKL's "
        "small matrix products still differ in the last bits (the book's reproducibility page)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""

    args = list(sys.argv[1:] if argv is None else argv)
    command = args[args.index("--") + 1 :] if "--" in args else []
    options = args[: args.index("--")] if "--" in args else args
    parser = argparse.ArgumentParser(prog="python -m ace_helpers.kernels", description=__doc__.splitlines()[0])
    parser.add_argument("--fingerprint", action="store_true", help="hash the chapters' kernels (under the setting)")
    parser.add_argument("--compare", type=Path, default=None, help="with --fingerprint: a file of expected lines")
    opts = parser.parse_args(options)
    if opts.compare is not None and not opts.fingerprint:
        parser.error("--compare needs --fingerprint")
    if command and opts.fingerprint:
        parser.error("give either --fingerprint or -- COMMAND, not both")
    if command or opts.fingerprint:
        env = environment()
        if opts.fingerprint:
            command = [sys.executable, "-m", "ace_helpers.repro.fingerprint"] + (
                ["--compare", str(opts.compare)] if opts.compare else []
            )
        try:
            os.execvpe(command[0], command, env)
        except FileNotFoundError:
            print(f"python -m ace_helpers.kernels: no such command {command[0]!r}", file=sys.stderr)
            return 127
    print(describe())
    return 0 if not problems() else 1


if __name__ == "__main__":
    sys.exit(main())
