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

import ast
import difflib
import json
import os
import re
import shlex
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace_helpers.method.checks import check_choice, fail
from ace_helpers.repro.artifacts import default_output_dir, display_path

PRESET_NAMES = ("ci", "book", "paper")

DEVICE_KNOB = "DEVICE"
"""The knob naming where a chapter computes (:mod:`ace_helpers.method.devices`); it never makes a run another
experiment (:meth:`Params.is_preset_run`)."""


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

    __slots__ = ("_chapter", "_values")

    def __init__(self, values: Mapping[str, Any], chapter: ChapterParams) -> None:
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
    def chapter(self) -> ChapterParams:
        """The chapter definition these knobs were resolved against."""
        return self._chapter

    def replace(self, **changes: Any) -> Params:
        """A copy with ``changes`` applied, resolved and validated again (``PRESET`` kept unless given)."""
        knobs = {k: v for k, v in self._values.items() if k in self._chapter.knobs}
        knobs.update(PRESET=self._values["PRESET"], OUTPUT_DIR=self._values["OUTPUT_DIR"])
        knobs.update(changes)
        return self._chapter.resolve(**knobs)

    def is_preset_run(self, knobs: Iterable[str] | None = None) -> bool:
        """Whether ``knobs`` (default: all the chapter's knobs) equal the values of the preset in force.

        ``DEVICE`` is never compared: where a run computes does not change its protocol (a CPU and a GPU run are
        two samples of it)."""
        preset = self._chapter.check_copy(self._chapter.presets[self._values["PRESET"]])  # validated once
        names = self._chapter.knobs if knobs is None else tuple(knobs)
        return all(self._values[k] == preset[k] for k in names if k != DEVICE_KNOB)

    def changed_knobs(self) -> dict[str, Any]:
        """The knobs whose values differ from the preset in force (what a command must pass besides ``PRESET``).

        The preset is compared in its validated form; a preset that does not validate here (e.g. ``paper`` naming
        models this machine lacks) is compared as written."""
        preset = self._chapter.presets[self._values["PRESET"]]
        try:
            preset = self._chapter.check_copy(preset)
        except ValueError:
            pass
        return {k: self._values[k] for k in self._chapter.knobs if self._values[k] != preset[k]}

    def command(self, output: str | None = None) -> str:
        """The papermill command that runs this notebook again with these knobs, from the repository root.

        Only ``PRESET`` and the knobs that differ from it are passed (as ``-y`` YAML, written as JSON);
        ``OUTPUT_DIR`` is passed when it is not the default.  ``output``: the executed notebook's path
        (default ``<notebook>.out.ipynb``).  Under the reproducible kernels the command starts with
        ``python -m ace_helpers.kernels --``, as the book's runs do.
        """
        from ace_helpers.repro import kernels  # load time: only a printed command needs it

        stem = self._chapter.notebook
        parts = ["papermill", f"notebooks/{stem}.ipynb", output or f"{stem}.out.ipynb", "-p", "PRESET", self._values["PRESET"]]
        changed: dict[str, Any] = {
            k: (str(v) if isinstance(v, (str, os.PathLike)) else v) for k, v in self.changed_knobs().items()
        }
        out_dir = Path(self._values["OUTPUT_DIR"])
        if out_dir.resolve() != default_output_dir(stem).resolve():
            changed["OUTPUT_DIR"] = display_path(out_dir)
        if changed:
            parts += ["-y", json.dumps(changed, default=str, ensure_ascii=False)]
        prefix = ["python", "-m", "ace_helpers.kernels", "--"] if kernels.in_force() == "reproducible" else []
        return shlex.join(prefix + parts)

    def knob_values(self) -> dict[str, Any]:
        """The chapter's knobs with their values (no ``PRESET`` / ``OUTPUT_DIR``), as a new dict."""
        return {k: self._values[k] for k in self._chapter.knobs}


#: A knob's name: UPPER_CASE (the notebooks keep every other global lower case).
KNOB_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


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

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a run may set: the knobs, ``PRESET`` and ``OUTPUT_DIR``."""
        return (*self.knobs, "PRESET", "OUTPUT_DIR")

    def refuse_unknown(self, names: Iterable[str]) -> None:
        """Raise ``ValueError`` naming each of ``names`` that is not in :attr:`names`, with the
        closest valid name, before any work."""
        allowed = self.names
        unknown = sorted(set(names) - set(allowed))
        if not unknown:
            return
        hints = []
        for name in unknown:
            close = (
                [name.upper()] if name.upper() in allowed else difflib.get_close_matches(name.upper(), allowed, n=1, cutoff=0.6)
            )
            hints.append(f"{name}: no such knob" + (f"; did you mean {close[0]}?" if close else ""))
        raise ValueError(
            f"unknown knob(s) for {self.notebook}: {'; '.join(hints)} (allowed: {list(self.knobs)} plus PRESET, OUTPUT_DIR)"
        )

    def resolve(self, namespace: Mapping[str, Any] | None = None, /, **knobs: Any) -> Params:
        """Resolve and validate the chapter's knobs, once; returns what runs.

        Args:
            namespace: a notebook's ``globals()`` (its parameters cell): the chapter's knobs,
                ``PRESET`` and ``OUTPUT_DIR`` are read from it.  Every UPPER_CASE name in it must
                be one of those (a misspelt ``papermill -p`` parameter lands there as a new
                name, which papermill only warns about), and so must every name papermill's
                injected parameters cell assigns, whatever its case (:func:`injected_parameters`);
                other names are ignored.
            **knobs: knob values given directly (library and test callers); they win over
                ``namespace``.  An unknown name raises ``ValueError``.

        Raises:
            ValueError: an unknown knob, a bad value (naming the knob and what is allowed), or
                an OUTPUT_DIR that cannot be written.
        """
        injected = injected_parameters(namespace or {})
        self.refuse_unknown([*knobs, *(n for n in namespace or () if KNOB_NAME.fullmatch(n)), *injected])
        given = {n: namespace.get(n) for n in self.names} if namespace is not None else {}
        given.update(knobs)
        preset = given.get("PRESET") or preset_from_env("book")
        values = resolve(preset, {k: given.get(k) for k in self.knobs}, self.presets)
        self.check(values)
        values["OUTPUT_DIR"] = check_output_dir("OUTPUT_DIR", given.get("OUTPUT_DIR"), self.notebook)
        return Params(values, self)


def injected_parameters(namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill's injected parameters cell assigned in a notebook's kernel, read from its input history
    (IPython's ``In``: a cell whose source starts with papermill's ``# Parameters`` comment), so that ``-p dim 48``
    is refused by name instead of running at the default.  ``[]`` outside a kernel."""
    history = namespace.get("In")
    names: list[str] = []
    for source in history if isinstance(history, list) else ():
        if not isinstance(source, str) or not source.lstrip().startswith("# Parameters"):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        names += [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
    return names


def check_output_dir(name: str, value: Any, notebook: str) -> Path:
    """The output folder ``value`` (None: ``outputs/<notebook>``), checked writable; nothing is left behind.

    An existing path must be a folder; a missing one needs its nearest existing parent to be a
    folder.  Writability is probed by creating and removing a temporary file there.
    """
    if value is None:
        path = default_output_dir(notebook)
    elif isinstance(value, (str, os.PathLike)) and str(value).strip():
        path = Path(value).expanduser()
    else:
        fail(name, value, "None or a folder path (string)")
    if path.exists() and not path.is_dir():
        fail(name, str(path), "a folder, not an existing file")
    probe = path if path.exists() else next((q for q in path.absolute().parents if q.exists()), None)
    if probe is None or not probe.is_dir():
        fail(name, str(path), f"a folder that can be created (its nearest existing parent {probe} is not a folder)")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as err:
        fail(name, str(path), f"a folder you can write to ({probe}: {err.strerror or err})")
    return path
