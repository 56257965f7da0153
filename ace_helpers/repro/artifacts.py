"""Small, checksummed result artifacts (json / npz, never pickles) with a manifest.

Layout of an artifact called ``NAME`` in folder ``DIR``::

    DIR/NAME.json           plain data (dict of floats/ints/strings/lists)
    DIR/NAME.npz            optional arrays (numpy, allow_pickle=False)
    DIR/NAME.manifest.json  parameters, sha256 of each file, git commit, versions, wall time, machine

Every file is written atomically (temporary file in the same folder, fsync, ``os.replace``),
the manifest last.  :func:`load_artifact` returns ``None`` for a missing, partial or corrupt
artifact (checksum mismatch) or one computed with other parameters, so :func:`cached`
recomputes it instead of half-reading it.

Hand-written rather than ``joblib.Memory`` or a pickle cache: those store pickles (unsafe to load from a
clone, and tied to library versions) keyed by code hashes, while the book commits small, checksummed,
readable json / npz artifacts keyed by their parameters, which any later version can load and check.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ace_helpers.repro.machine import machine, versions

MANIFEST_VERSION = 1


def to_plain(obj: Any) -> Any:
    """Convert numpy/torch scalars and arrays, tuples and paths to JSON-ready Python objects.

    Complex numbers become ``[re, im]``; non-finite floats become ``None`` (JSON has no NaN).
    """
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if hasattr(obj, "detach") and hasattr(obj, "cpu"):  # torch tensor
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, np.ndarray):
        return to_plain(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, (complex, np.complexfloating)):
        return [to_plain(obj.real), to_plain(obj.imag)]
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"cannot store {type(obj).__name__} in a JSON artifact: {obj!r}")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_report(lines: list[str], out: str | os.PathLike | None) -> None:
    """Print a benchmark's report (after a blank line) and, when ``out`` is given, write it there atomically."""
    print("\n" + "\n".join(lines))
    if out is not None:
        atomic_write_bytes(out, ("\n".join(lines) + "\n").encode())


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Atomically write ``obj`` (made plain by :func:`to_plain`) as indented JSON."""
    text = json.dumps(to_plain(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"
    return atomic_write_bytes(path, text.encode())


def sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def project_root(start: str | os.PathLike | None = None) -> Path:
    """Nearest folder at or above ``start`` (default: cwd) holding ``_toc.yml``; else ``start``."""
    start = Path(start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return start


def display_path(path: str | os.PathLike) -> str:
    """``path`` as a reader should see it: relative to the project root when inside it (so printed
    outputs and stored parameters carry no machine-specific absolute path), else as given."""
    path = Path(path)
    try:
        return path.resolve().relative_to(project_root()).as_posix()
    except ValueError:
        return str(path)


def default_output_dir(notebook: str) -> Path:
    """``$ACE_OUTPUT_ROOT/<notebook>`` if set, else ``<project root>/outputs/<notebook>``."""
    root = os.environ.get("ACE_OUTPUT_ROOT")
    return (Path(root) if root else project_root() / "outputs") / notebook


def git_commit(cwd: str | os.PathLike | None = None) -> str:
    """Current git commit (with ``-dirty`` when the tree has changes), or ``"unknown"``."""
    try:
        run = lambda *a: subprocess.run(
            ["git", *a], cwd=cwd or project_root(), capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        commit = run("rev-parse", "HEAD")
        dirty = bool(run("status", "--porcelain", "--untracked-files=no"))
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def clear_results(output_dir: str | os.PathLike) -> bool:
    """Remove a previous run's ``OUTPUT_DIR/results.json`` as a new run starts; True if one was there.

    A run that is then interrupted leaves no results at all, never an older run's results that
    look like its own.
    """
    path = Path(output_dir) / "results.json"
    if path.is_file():
        path.unlink()
        return True
    return False


def write_results(
    output_dir: str | os.PathLike,
    results: Mapping[str, Any],
    params: Mapping[str, Any],
    claims: list[Mapping[str, Any]] | None = None,
) -> Path:
    """Write ``OUTPUT_DIR/results.json``: the flat ``results`` plus ``params``, ``versions`` and ``claims``.

    Keys of ``results`` are the chapter's documented, stable names; values must be plain
    (floats, ints, strings, lists thereof) after :func:`to_plain`.  ``claims`` are the chapter's
    claim records (:meth:`ace_helpers.repro.report.Claims.records`), the rows of the book's scorecard.
    """
    reserved = {"params", "versions", "claims"} & set(results)
    if reserved:
        raise ValueError(f"results may not use the reserved keys {sorted(reserved)}")
    payload = dict(results)
    payload["params"] = dict(params)
    if "OUTPUT_DIR" in payload["params"]:
        payload["params"]["OUTPUT_DIR"] = display_path(payload["params"]["OUTPUT_DIR"])
    payload["versions"] = versions()
    payload["claims"] = list(claims or [])
    path = write_json(Path(output_dir) / "results.json", payload)
    root, cwd = project_root(), Path.cwd().resolve()
    if path.resolve().is_relative_to(root) and cwd.is_relative_to(root):
        return Path(os.path.relpath(path.resolve(), cwd))
    return path


@dataclass(frozen=True)
class Artifact:
    """A loaded artifact: ``data`` (plain dict), ``arrays`` (name -> ndarray), ``manifest``."""

    data: dict
    arrays: dict[str, np.ndarray]
    manifest: dict


def _params_key(params: Mapping[str, Any]) -> str:
    return json.dumps(to_plain(params), sort_keys=True)


def params_match(artifact: Artifact, params: Mapping[str, Any]) -> bool:
    """Whether a loaded artifact was made with ``params`` (the check :func:`load_artifact` applies)."""
    return _params_key(artifact.manifest["params"]) == _params_key(params)


def save_artifact(
    directory: str | os.PathLike,
    name: str,
    *,
    params: Mapping[str, Any],
    data: Mapping[str, Any] | None = None,
    arrays: Mapping[str, np.ndarray] | None = None,
    wall_s: float | None = None,
) -> Path:
    """Store ``data``/``arrays`` as artifact ``name`` in ``directory``; returns the manifest path."""
    directory = Path(directory)
    files: dict[str, str] = {}
    json_path = write_json(directory / f"{name}.json", data or {})
    files[json_path.name] = sha256(json_path)
    if arrays:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
        npz_path = atomic_write_bytes(directory / f"{name}.npz", buffer.getvalue())
        files[npz_path.name] = sha256(npz_path)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "name": name,
        "params": to_plain(params),
        "files": files,
        "git_commit": git_commit(),
        "versions": versions(),
        "wall_s": wall_s,
        "machine": machine(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return write_json(directory / f"{name}.manifest.json", manifest)


def load_artifact(directory: str | os.PathLike, name: str, params: Mapping[str, Any] | None = None) -> Artifact | None:
    """Load artifact ``name``; ``None`` if missing, corrupt/partial, or made with other ``params``."""
    directory = Path(directory)
    manifest_path = directory / f"{name}.manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
            return None
        files = manifest.get("files")
        if not isinstance(files, dict) or f"{name}.json" not in files:
            return None
        if (directory / f"{name}.npz").exists() and f"{name}.npz" not in files:
            return None  # the manifest does not cover every file of the artifact: a half-read
        if params is not None and _params_key(manifest["params"]) != _params_key(params):
            return None
        for fname, digest in manifest["files"].items():
            if sha256(directory / fname) != digest:
                return None
        data = json.loads((directory / f"{name}.json").read_text())
        arrays: dict[str, np.ndarray] = {}
        if f"{name}.npz" in manifest["files"]:
            with np.load(directory / f"{name}.npz", allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Artifact(data=data, arrays=arrays, manifest=manifest)


def cached(
    directory: str | os.PathLike,
    name: str,
    params: Mapping[str, Any],
    compute: Callable[[], tuple[Mapping[str, Any], Mapping[str, np.ndarray] | None]],
) -> tuple[Artifact, bool]:
    """Load artifact ``name`` made with ``params``, or run ``compute()`` and store it.

    ``compute`` returns ``(data, arrays_or_None)``.  Returns ``(artifact, was_cached)``.
    """
    found = load_artifact(directory, name, params)
    if found is not None:
        return found, True
    start = time.perf_counter()
    data, arrays = compute()
    save_artifact(directory, name, params=params, data=data, arrays=arrays, wall_s=time.perf_counter() - start)
    loaded = load_artifact(directory, name, params)
    if loaded is None:  # pragma: no cover - would mean the filesystem lost our write
        raise RuntimeError(f"artifact {name!r} in {directory} could not be read back after writing")
    return loaded, False
