"""Chapter parameters: one resolver for every chapter, and the checks it runs.

Every checker raises ``ValueError`` naming the parameter, the bad value and what is allowed,
so that a notebook fails in its second cell, before any compute.

Each chapter module defines its knobs once, as a :class:`ChapterParams` (presets
``{"ci": {...}, "book": {...}, "paper": {...}}`` plus a ``check`` function), and a notebook
resolves them in one call that reads its own parameters cell::

    cfg = chapter.PARAMS.resolve(globals())

A knob left at ``None`` takes its preset's value; anything else (e.g. a value passed through
papermill ``-p NAME VALUE``) wins.  ``PRESET`` comes from the cell, else ``$ACE_PRESET``, else
``"book"``.  ``OUTPUT_DIR`` (every chapter) defaults to ``outputs/<notebook>`` and is checked to
be writable before any compute.  What comes back is a read-only :class:`Params`: what runs.
"""

from __future__ import annotations

import math
import os
import platform
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PRESET_NAMES = ("ci", "book", "paper")


def preset_from_env(default: str = "book") -> str:
    """The preset named by ``$ACE_PRESET``, else ``default``."""
    return os.environ.get("ACE_PRESET", default)


def resolve(preset: str, knobs: Mapping[str, Any], presets: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Fill the ``None`` knobs from ``presets[preset]``; explicit values win.

    Args:
        preset: one of ``"ci"``, ``"book"``, ``"paper"``.
        knobs: the notebook's UPPER_CASE parameters (``None`` = take the preset's value).
        presets: ``{preset name: {KNOB: value}}``.

    Returns:
        A new dict with every knob set, plus ``"PRESET"``.
    """
    check_choice("PRESET", preset, PRESET_NAMES)
    table = presets[preset]
    unknown = sorted(set(table) - set(knobs))
    if unknown:
        raise ValueError(f"preset {preset!r} sets knobs the notebook does not declare: {unknown}")
    out: dict[str, Any] = {}
    for name, value in knobs.items():
        out[name] = table.get(name) if value is None else value
    out["PRESET"] = preset
    return out


class Params(Mapping[str, Any]):
    """The resolved, validated knobs of one chapter run: read-only (a frozen spec).

    Read a knob as ``cfg.P`` or ``cfg["P"]``.  Besides the chapter's knobs it holds ``PRESET``
    and ``OUTPUT_DIR`` (a :class:`~pathlib.Path`).  :meth:`replace` returns a re-validated copy.
    """

    __slots__ = ("_values", "_chapter")

    def __init__(self, values: Mapping[str, Any], chapter: "ChapterParams") -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_chapter", chapter)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"{self._chapter.notebook} has no knob {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Params are read-only: use .replace(NAME=value) for a changed copy")

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Params({self._chapter.notebook}, {self._values!r})"

    def __reduce__(self):  # picklable for worker processes
        return (Params, (self._values, self._chapter))

    @property
    def chapter(self) -> "ChapterParams":
        """The chapter definition these knobs were resolved against."""
        return self._chapter

    def replace(self, **changes: Any) -> "Params":
        """A copy with ``changes`` applied, resolved and validated again (``PRESET`` kept unless given)."""
        knobs = {k: v for k, v in self._values.items() if k in self._chapter.knobs}
        knobs.update(PRESET=self._values["PRESET"], OUTPUT_DIR=self._values["OUTPUT_DIR"])
        knobs.update(changes)
        return self._chapter.resolve(**knobs)

    def is_preset_run(self, knobs: Iterable[str] | None = None) -> bool:
        """Whether ``knobs`` (default: all the chapter's knobs) equal the values of the preset in force."""
        preset = self._chapter.check_copy(self._chapter.presets[self._values["PRESET"]])  # validated once
        names = self._chapter.knobs if knobs is None else tuple(knobs)
        return all(self._values[k] == preset[k] for k in names)

    def knob_values(self) -> dict[str, Any]:
        """The chapter's knobs with their values (no ``PRESET`` / ``OUTPUT_DIR``), as a new dict."""
        return {k: self._values[k] for k in self._chapter.knobs}


@dataclass(frozen=True, eq=False)
class ChapterParams:
    """The knobs of one chapter: its presets and the check that validates (and normalises) them.

    Args:
        notebook: the notebook stem, e.g. ``"01_markov_cores"`` (names the default OUTPUT_DIR).
        presets: ``{"ci" | "book" | "paper": {KNOB: value}}``; every preset sets every knob
            (a knob whose value is ``None`` in a preset means "none", e.g. an optional file).
        check: ``check(values)`` validates a dict of every knob, raising ``ValueError`` naming
            the bad knob, and may normalise values in place (e.g. a tuple into a list).
    """

    notebook: str
    presets: Mapping[str, Mapping[str, Any]]
    check: Callable[[dict[str, Any]], None]

    @property
    def knobs(self) -> tuple[str, ...]:
        """The chapter's knob names, in the order of its ``book`` preset."""
        return tuple(self.presets["book"])

    def check_copy(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A validated, normalised copy of ``values`` (all knobs)."""
        out = dict(values)
        self.check(out)
        return out

    def resolve(self, namespace: Mapping[str, Any] | None = None, /, **knobs: Any) -> Params:
        """Resolve and validate the chapter's knobs, once; returns what runs.

        Args:
            namespace: a notebook's ``globals()`` (its parameters cell): the chapter's knobs,
                ``PRESET`` and ``OUTPUT_DIR`` are read from it; other names are ignored.
            **knobs: knob values given directly (library and test callers); they win over
                ``namespace``.  An unknown name raises ``ValueError``.

        Raises:
            ValueError: an unknown knob, a bad value (naming the knob and what is allowed), or
                an OUTPUT_DIR that cannot be written.
        """
        names = (*self.knobs, "PRESET", "OUTPUT_DIR")
        unknown = sorted(set(knobs) - set(names))
        if unknown:
            raise ValueError(
                f"unknown knob(s) {unknown} for {self.notebook}: allowed knobs are {list(self.knobs)} plus PRESET, OUTPUT_DIR"
            )
        given = {n: namespace.get(n) for n in names} if namespace is not None else {}
        given.update(knobs)
        preset = given.get("PRESET") or preset_from_env("book")
        values = resolve(preset, {k: given.get(k) for k in self.knobs}, self.presets)
        self.check(values)
        values["OUTPUT_DIR"] = check_output_dir("OUTPUT_DIR", given.get("OUTPUT_DIR"), self.notebook)
        return Params(values, self)


def check_output_dir(name: str, value: Any, notebook: str) -> Path:
    """The output folder ``value`` (None: ``outputs/<notebook>``), checked writable; nothing is left behind.

    An existing path must be a folder; a missing one needs its nearest existing parent to be a
    folder.  Writability is probed by creating and removing a temporary file there.
    """
    import tempfile

    from ace_helpers.artifacts import default_output_dir

    if value is None:
        path = default_output_dir(notebook)
    elif isinstance(value, (str, os.PathLike)) and str(value).strip():
        path = Path(value).expanduser()
    else:
        _fail(name, value, "None or a folder path (string)")
    if path.exists() and not path.is_dir():
        _fail(name, str(path), "a folder, not an existing file")
    probe = path if path.exists() else next((q for q in path.absolute().parents if q.exists()), None)
    if probe is None or not probe.is_dir():
        _fail(name, str(path), f"a folder that can be created (its nearest existing parent {probe} is not a folder)")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as err:
        _fail(name, str(path), f"a folder you can write to ({probe}: {err.strerror or err})")
    return path


def _fail(name: str, value: Any, allowed: str) -> None:
    raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        _fail(name, value, f"one of {list(choices)}")
    return value


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` must be an int (not bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        _fail(name, value, "an integer")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        _fail(name, value, f"an integer in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]")
    return value


def check_range(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` must be a finite real number within the given (open or closed) bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        _fail(name, value, "a real number")
    value = float(value)
    ok = math.isfinite(value)
    if low is not None:
        ok = ok and (value > low if low_open else value >= low)
    if high is not None:
        ok = ok and (value < high if high_open else value <= high)
    if not ok:
        lo = "-inf" if low is None else f"{low}"
        hi = "inf" if high is None else f"{high}"
        _fail(name, value, f"a finite number in {'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}")
    return value


def is_prime(n: int) -> bool:
    """Deterministic primality by trial division (moduli here are small)."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    return all(n % k for k in range(3, math.isqrt(n) + 1, 2))


def check_prime(name: str, value: Any, *, low: int = 3) -> int:
    """``value`` must be a prime integer >= ``low``."""
    value = check_int(name, value, low=low)
    if not is_prime(value):
        _fail(name, value, f"a prime >= {low} (e.g. 31, 53, 97)")
    return value


def check_list(name: str, value: Any, item_check, *, min_len: int = 1) -> list:
    """``value`` must be a list/tuple of at least ``min_len`` items, each passing ``item_check(name[i], item)``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        _fail(name, value, f"a list of at least {min_len} items")
    if len(value) < min_len:
        _fail(name, value, f"a list of at least {min_len} items")
    return [item_check(f"{name}[{i}]", v) for i, v in enumerate(value)]


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
    from threadpoolctl import threadpool_limits

    threads = check_int("threads", threads, low=1)
    for name in POOL_VARIABLES:
        os.environ[name] = str(threads)
    threadpool_limits(limits=threads)


def set_threads(threads: int | None = None, *, workers: int = 1) -> int:
    """Set torch's intra-op threads, and the BLAS / OpenMP pools (:func:`limit_pools`), to ``threads``,
    else ``$TORCH_THREADS``, else the thread budget; under the reproducible kernels, to 1.

    Under the reproducible kernels (:mod:`ace_helpers.kernels`, the default) every process computes
    with one thread, whatever is asked: a parallel reduction splits its sum by thread, so the
    thread count changes the last bits.  With ``ACE_KERNELS=native`` the budget keeps workers ×
    threads ≤ cores: a process that is one of ``workers`` parallel workers gets ``max(1, cores //
    workers)`` threads, and with ``workers=1`` and no variable set the libraries' defaults are left
    as they are.  On a 2-core machine anything else running makes 2 threads ~16x slower (torch's,
    and numpy's or scikit-learn's just as much), so tests and CI set ``TORCH_THREADS=1``.  Returns
    torch's thread count in force.
    """
    import torch

    from ace_helpers.kernels import mode

    workers = check_int("workers", workers, low=1)
    if threads is None and os.environ.get("TORCH_THREADS"):
        raw = os.environ["TORCH_THREADS"].strip()
        if not raw.isdigit():
            _fail("TORCH_THREADS", raw, "a positive integer (environment variable), e.g. TORCH_THREADS=1")
        threads = check_int("TORCH_THREADS", int(raw), low=1)
    if threads is None and workers > 1:
        threads = thread_budget(workers)
    if mode() == "reproducible":
        threads = 1
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads, low=1))
        limit_pools(threads)
    return torch.get_num_threads()


def begin(cfg: Params) -> None:
    """A chapter's validation-cell side effects: set torch threads, remove the previous run's
    ``OUTPUT_DIR/results.json`` (so an interrupted run never leaves an older result looking like
    its own), print the knobs in force, the versions, whether the reproducible kernels are in force
    (:func:`ace_helpers.kernels.describe`) and, in a training chapter, which kernels its ``PRECISION`` runs on this CPU."""
    from ace_helpers.artifacts import clear_results, display_path
    from ace_helpers.kernels import describe as describe_kernels

    set_threads()
    shown = display_path(cfg["OUTPUT_DIR"])
    if clear_results(cfg["OUTPUT_DIR"]):
        print(f"removed the previous run's {shown}/results.json (this run writes a new one at its end)")

    def short(value: Any) -> Any:
        text = repr(value)
        return value if len(text) <= 80 else text[:77] + "..."

    print({k: (shown if k == "OUTPUT_DIR" else short(v)) for k, v in cfg.items()})
    print(versions())
    print(describe_kernels())
    if "PRECISION" in cfg:
        from ace_helpers.precision import describe

        print(f"PRECISION={cfg['PRECISION']!r}: {describe(cfg['PRECISION'])}")


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch global RNGs (the library itself uses explicit generators)."""
    import torch

    seed = check_int("SEED", seed, low=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def versions() -> dict[str, str]:
    """Versions of python and the libraries the book depends on (for manifests and cell 2)."""
    from importlib import metadata

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("torch", "numpy", "scipy", "nnsight", "transformers", "seaborn", "matplotlib"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out
