"""Loading language models for ACE: the bundled offline models (:mod:`ace_helpers.llm.offline`: GGUF parsed once,
cached as float32 safetensors), Hub names and local folders, NDIF remote wrappers; what cannot load is said before
any work."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import torch

from ace_helpers.llm.bundled import missing_parts
from ace_helpers.llm.offline import OFFLINE_MODELS, offline_cache_folder, offline_model_path
from ace_helpers.llm.precision import cast, check_dtype
from ace_helpers.llm.quiet import quiet_loading
from ace_helpers.llm.remote import remote_model
from ace_helpers.method.devices import resolve_device

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def _hub_cached(name: str, filename: str) -> str | None:
    """Path of ``filename`` of Hub repo ``name`` in the local HF cache (never downloads), else None."""
    from huggingface_hub import try_to_load_from_cache  # load time: a heavy import, done on first use
    from huggingface_hub.errors import HFValidationError  # load time: a heavy import, done on first use

    try:
        found = try_to_load_from_cache(name, filename)
    except (HFValidationError, ValueError):
        return None
    return found if isinstance(found, str) else None


def unavailable_reason(name: Any, *, remote: bool = False, cache: str | os.PathLike | None = None) -> str | None:
    """Why model ``name`` cannot be loaded here, or None when :func:`load_model` can load it.

    Checked offline, without network and without loading anything: a bundled offline model needs
    its package (or its converted cache); a local folder needs ``config.json``; any other name
    needs ``config.json`` and a weights file in the local Hugging Face cache.  With ``remote``
    (NDIF), only the name's form is checked (a Hub id, or a local folder with ``config.json`` that your own
    server serves; not a bundled model).
    """
    if not isinstance(name, str) or not name.strip():
        return "a model name must be a non-empty string"
    allowed = (
        f"one of the bundled offline models {sorted(OFFLINE_MODELS)}, a local folder holding config.json "
        "and weights, or a Hub id whose weights are in the local Hugging Face cache"
    )
    if remote:
        if name in OFFLINE_MODELS:
            return "NDIF serves Hub models only; run the bundled offline models locally (remote=False)"
        if Path(name).expanduser().is_dir():  # a checkpoint your own NDIF server serves under the same path
            return None if (Path(name).expanduser() / "config.json").is_file() else f"the folder {name!r} has no config.json"
        from huggingface_hub.errors import HFValidationError  # load time: a heavy import, done on first use
        from huggingface_hub.utils import validate_repo_id  # load time: a heavy import, done on first use

        try:
            validate_repo_id(name)
        except HFValidationError as exc:
            return f"a remote (NDIF) model must be a Hub id such as 'openai-community/gpt2' ({exc})"
        return None
    if name in OFFLINE_MODELS:
        if (offline_cache_folder(name, cache) / "config.json").is_file():
            return None
        if "chunks" in OFFLINE_MODELS[name]:
            missing = missing_parts(OFFLINE_MODELS[name]["chunks"])
            return f"the offline model's packages {missing} are not installed: {OFFLINE_MODELS[name]['pip']}" if missing else None
        if importlib.util.find_spec(OFFLINE_MODELS[name]["package"]) is None:
            return (
                f"the offline model's package {OFFLINE_MODELS[name]['package']!r} is not installed: {OFFLINE_MODELS[name]['pip']}"
            )
        return None
    folder = Path(name).expanduser()
    if folder.is_dir():
        return None if (folder / "config.json").is_file() else f"the folder {str(folder)!r} has no config.json"
    if _hub_cached(name, "config.json") is None or not any(_hub_cached(name, f) for f in _WEIGHT_FILES):
        return (
            f"it is not a bundled offline model {sorted(OFFLINE_MODELS)} nor a local folder, and its weights are "
            "missing from the local Hugging Face cache (checked offline; nothing is downloaded). Allowed: "
            f"{allowed}. To use it, download it once with network access (`huggingface-cli download {name}`)"
        )
    return None


def model_config(name: str, *, cache: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The ``config.json`` entries of a loadable model, read locally (None when not found here).

    For a bundled offline model whose cache is not built yet, its shape entries from
    :data:`OFFLINE_MODELS`.  GPT-2's names (``n_layer``, ``n_embd``, ``n_positions``) are also given
    under the common names ``num_hidden_layers``, ``hidden_size``, ``max_position_embeddings``.
    """
    path: Path | None = None
    if name in OFFLINE_MODELS:
        path = offline_cache_folder(name, cache) / "config.json"
        if not path.is_file():
            return dict(OFFLINE_MODELS[name]["config"])
    elif Path(name).expanduser().is_dir():
        path = Path(name).expanduser() / "config.json"
    else:
        found = _hub_cached(name, "config.json")
        path = Path(found) if found else None
    if path is None or not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    for common, gpt2 in (("num_hidden_layers", "n_layer"), ("hidden_size", "n_embd"), ("max_position_embeddings", "n_positions")):
        if common not in config and gpt2 in config:
            config[common] = config[gpt2]
    return config


def _load_hf(name: str, *, dtype: torch.dtype, cache: str | os.PathLike | None, attn_implementation: str | None):
    """Load (hf_model, tokenizer) for an offline name, a local folder or a Hub name."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # load time: a heavy import, done on first use

    kwargs: dict[str, Any] = {"dtype": dtype}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    if name in OFFLINE_MODELS:
        path = str(offline_model_path(name, cache=cache))
    else:
        path = name
    try:
        with quiet_loading():
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as exc:
        offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
        raise RuntimeError(
            f"model {name!r} is not available: it is not one of the bundled offline models "
            f"{sorted(OFFLINE_MODELS)}, not a local folder, and not in the local Hugging Face cache"
            + (" (HF_HUB_OFFLINE is set, so nothing is downloaded)" if offline else " and could not be downloaded")
            + ". To use it: download it once with network access (e.g. `huggingface-cli download "
            f"{name}`), set HF_TOKEN for gated models (Llama, Gemma), unset HF_HUB_OFFLINE; or pass a "
            "local folder holding config.json + weights; or run it on NDIF with remote=True and NDIF_API_KEY set. "
            f"Original error: {exc}"
        ) from exc
    return model, tok


def load_model(
    name: str,
    *,
    remote: bool = False,
    dtype: torch.dtype | str = torch.float32,
    cache: str | os.PathLike | None = None,
    attn_implementation: str | None = None,
    device: str | torch.device | None = None,
):
    """Load a causal LM wrapped for nnsight.

    Args:
        name: ``"smollm2-135m"``, ``"gemma3-270m"``, a Hub repo id, or a local folder.
        remote: build a meta-device wrapper for NDIF (weights are not loaded here; traces must
            pass ``remote=True``): :func:`ace_helpers.llm.remote.remote_model` (``$NDIF_API_KEY``, and
            ``$NDIF_HOST`` for a server of your own).
        dtype: a torch dtype for local loads (float32 default: exact gradients) or a knob of
            :mod:`ace_helpers.llm.precision` (``"auto"``, ``"family"``, ...; :func:`~ace_helpers.llm.precision.cast`).
        cache: cache folder for the offline models (default :func:`cache_dir`).
        attn_implementation: passed to ``from_pretrained`` (None = transformers' default).
        device: a ``torch.device`` or a knob of :mod:`ace_helpers.method.devices` (default: the CPU); an absent
            device is refused before anything is loaded.

    Returns:
        ``(lm, tokenizer)``: ``lm`` an ``nnsight.TransformersModel`` in eval mode with frozen
        parameters; ``tokenizer`` pads on the left (nnsight sets pad = EOS when missing).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r} is not allowed: name must be a non-empty model name or folder")
    if remote:
        if name in OFFLINE_MODELS:
            raise ValueError(
                f"name={name!r} with remote=True is not allowed: NDIF serves Hub models and the checkpoints of your own "
                "server only; run the bundled offline models locally (remote=False)"
            )
        with quiet_loading():
            return remote_model(name)
    where = None if device is None else resolve_device(device)  # refuses an absent device before loading
    knob = None if isinstance(dtype, torch.dtype) else check_dtype("dtype", dtype)
    model, tok = _load_hf(name, dtype=torch.float32 if knob else dtype, cache=cache, attn_implementation=attn_implementation)
    return wrap(model if knob is None else cast(model, knob, where or "cpu"), tok, device=where)


def wrap(model: torch.nn.Module, tokenizer, *, device: str | torch.device | None = None):
    """Freeze ``model`` (eval, ``requires_grad=False``) and wrap it as ``nnsight.TransformersModel``.

    Returns ``(lm, tokenizer)`` with left padding and a pad token (EOS if the tokenizer had none).
    """
    import nnsight  # load time: a heavy import, done on first use

    model.eval()
    model.requires_grad_(False)
    if device is not None:
        model.to(device)
    lm = nnsight.TransformersModel(model, tokenizer=tokenizer)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return lm, tokenizer
