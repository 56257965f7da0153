"""Edits of a language model's residual stream at the last token, scored by any metric: full forwards, or the
fast path that runs each batch's prefix once (KV cache) and then only the last token through the blocks from the
edited one on (nnsight ``skip`` feeds the cached clean states past the earlier blocks).

``metric`` is the :data:`~ace_helpers.llm.readout.Metric` of :func:`~ace_helpers.llm.readout.metric_gradients`:
logits (B, T, V) -> (B,); on the fast path T = 1 (the last token), so write it on ``logits[:, -1]``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ace_helpers.llm.batching import batch_rows, encode, prefix_cache, with_cache
from ace_helpers.llm.layers import block_paths, input_device, layer_path, module, torch_module
from ace_helpers.llm.readout import Metric
from ace_helpers.llm.remote_jobs import trace_options
from ace_helpers.method import interventions
from ace_helpers.method.core import Core
from ace_helpers.method.interventions import resolve_module

#: The core edits of a sweep, in order (mean-centred keep and remove, flip about the mean).
MODES = ("keep", "remove", "flip")


def stacked(edits: Sequence[Callable[[torch.Tensor], torch.Tensor]]) -> Callable[[torch.Tensor], torch.Tensor]:
    """Edit for rows interleaved as (edit 0, edit 1, …) per prompt: (E·B, D) -> (E·B, D)."""

    def fn(h: torch.Tensor) -> torch.Tensor:
        x = h.reshape(-1, len(edits), h.shape[-1])
        return torch.stack([e(x[:, k]) for k, e in enumerate(edits)], 1).reshape(h.shape)

    return fn


def core_edits(core: Core) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    """keep / remove / flip of ``core`` (mean-centred), in the order of :data:`MODES` (closures over its compact form)."""
    core = core.compact()
    return [lambda h: core.keep(h, centered=True), lambda h: core.remove(h, centered=True), core.flip]


MAX_ROWS = 600
"""At most this many single-token rows (prompts × stacked edits) per rerun: each row copies the prefix cache."""


def tail_inputs(lm, batch):
    """(prefix KV cache, last-token inputs, clean block outputs of the last token) of one batch."""
    cache = prefix_cache(lm, batch)
    tail = {
        "input_ids": batch["input_ids"][:, -1:],
        "attention_mask": batch["attention_mask"],
        "position_ids": batch["position_ids"][:, -1:],
        "use_cache": True,
        "logits_to_keep": 1,
    }
    return cache, tail, clean_block_outputs(lm, block_paths(lm), with_cache(lm, tail, copy.deepcopy(cache)))[1]


def tail_values(lm, paths, cache, tail, clean, ell, edits, metric: Metric, max_rows: int | None = MAX_ROWS) -> np.ndarray:
    """``metric`` values (E, B) with each of the E ``edits`` applied at layer ``ell`` (block ℓ−1, last token);
    only blocks ℓ−1.. are recomputed, E edits stacked per rerun up to ``max_rows`` rows (None: all at once)."""
    n = tail["input_ids"].shape[0]
    per_run = len(edits) if max_rows is None else max(1, max_rows // n)
    out = []
    for g in range(0, len(edits), per_run):
        group = list(edits[g : g + per_run])
        k = len(group)
        c = copy.deepcopy(cache)
        c.batch_repeat_interleave(k)
        rep = {key: (v.repeat_interleave(k, dim=0) if torch.is_tensor(v) else v) for key, v in tail.items()}
        skip_with = clean[ell - 2].repeat_interleave(k, dim=0) if ell >= 2 else None
        logits = tail_edit(lm, with_cache(lm, rep, c), paths, ell, stacked(group), skip_with)
        out.append(metric(logits).detach().float().cpu().numpy().reshape(n, k).T)
    return np.concatenate(out, 0)


def clean_block_outputs(lm, paths, inputs) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One clean no-grad forward of ``inputs`` (extends its ``cache``, if any): (logits (B, T, V), the
    output (B, T, D) of every block in ``paths``, in order) — the states :func:`tail_edit` feeds past
    the blocks it skips."""
    seen: list[torch.Tensor] = []
    handles = [
        module(lm, p).register_forward_hook(lambda _m, _i, o: seen.append(o[0] if isinstance(o, tuple) else o)) for p in paths
    ]
    try:
        with torch.no_grad():
            logits = torch_module(lm)(**inputs).logits
    finally:
        for h in handles:
            h.remove()
    return logits, seen


def tail_edit(lm, inputs, paths, ell, fn, skip_with) -> torch.Tensor:
    """Logits (B, T, V) with blocks 0..ℓ−2 skipped (their clean output ``skip_with``, (B, T, D), is fed
    to block ℓ−1; None when ℓ = 1) and ``fn`` applied to block ℓ−1's output at the last position
    ((B, D) -> (B, D)): only blocks ℓ−1.. are recomputed. ``inputs`` carries the prefix ``cache``."""
    with torch.no_grad(), lm.trace(**inputs):
        for i in range(ell - 1):
            resolve_module(lm, paths[i]).skip(skip_with)
        env = resolve_module(lm, paths[ell - 1])
        hidden = env.output
        edited = hidden.clone()
        edited[:, -1] = fn(hidden[:, -1])
        env.output = edited
        logits = lm.output.logits.save()
    return logits


def edit_values(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layer: int,
    edits: Sequence[Callable[[torch.Tensor], torch.Tensor]],
    metric: Metric,
    *,
    batch_size: int = 25,
    remote: bool | str = False,
) -> np.ndarray:
    """``metric`` values (E, N) of the N ``prompts`` under each of the E ``edits`` at ``layer`` (last token).

    Each edit maps the (rows, D) last-token state at layer ℓ (the output of block ℓ−1) to a tensor of the same
    shape.  Locally the fast path (prefix once per batch, then only the last token through blocks ℓ−1..); with
    ``remote`` or one-token prompts every edit is a full forward.
    """
    paths = block_paths(lm)
    layer_path(lm, layer)  # refuses a layer outside 1..n_layers
    enc = encode(tokenizer, prompts, device=input_device(lm))
    out = np.zeros((len(edits), len(prompts)))
    fast = not remote and enc["input_ids"].shape[1] > 1
    for start in range(0, enc["input_ids"].shape[0], batch_size):
        batch = batch_rows(enc, start, start + batch_size)
        stop = start + batch["input_ids"].shape[0]
        if fast:
            cache, tail, clean = tail_inputs(lm, batch)
            out[:, start:stop] = tail_values(lm, paths, cache, tail, clean, layer, edits, metric)
            continue
        kw = trace_options(lm, remote)
        for k, fn in enumerate(edits):
            values = interventions.run_with_edit(lm, batch, paths[layer - 1], fn, positions=-1, reduce=metric, **kw)
            out[k, start:stop] = values.detach().float().cpu().numpy()
    return out


def sweep_values(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layers: Sequence[int],
    cores: Sequence[Core],
    metric: Metric,
    *,
    modes: Sequence[str] = MODES,
    batch_size: int = 25,
    remote: bool | str = False,
) -> dict[str, np.ndarray]:
    """``metric`` under each core edit at each layer: ``{mode: (L, N)}``, mean-centred edits at the last token.

    Locally (and for the three :data:`MODES`) each batch's prefix runs once and keep / remove / flip are
    stacked in one single-token rerun per layer; otherwise every edit is a full forward through
    :func:`ace_helpers.method.interventions.run_with_edit`.  Both paths give the same values (tested).
    """
    if len(layers) != len(cores):
        raise ValueError(f"need one core per layer: {len(layers)} layers, {len(cores)} cores")
    paths = block_paths(lm)
    for ell in layers:
        layer_path(lm, ell)
    enc = encode(tokenizer, prompts, device=input_device(lm))
    out = {mode: np.zeros((len(layers), len(prompts))) for mode in modes}
    fast = not remote and tuple(modes) == MODES and enc["input_ids"].shape[1] > 1
    for start in range(0, enc["input_ids"].shape[0], batch_size):
        batch = batch_rows(enc, start, start + batch_size)
        stop = start + batch["input_ids"].shape[0]
        if not fast:
            kw = trace_options(lm, remote)
            for li, ell in enumerate(layers):
                for mode in modes:
                    fn = interventions.core_edit(cores[li], mode, centered=True)
                    values = interventions.run_with_edit(lm, batch, paths[ell - 1], fn, positions=-1, reduce=metric, **kw)
                    out[mode][li, start:stop] = values.detach().float().cpu().numpy()
            continue
        cache, tail, clean = tail_inputs(lm, batch)  # clean: (n_blocks, B, 1, D)
        for li, ell in enumerate(layers):
            m = tail_values(lm, paths, cache, tail, clean, ell, core_edits(cores[li]), metric, max_rows=None)
            for k, mode in enumerate(MODES):
                out[mode][li, start:stop] = m[k]
    return out
