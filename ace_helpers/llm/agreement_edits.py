"""Subject-verb agreement under core edits: test margins under keep / remove / flip at every layer, and the flip
demo's verb probabilities (its scores and tests: :mod:`ace_helpers.llm.agreement_demo`).

The sweep runs each batch's prompt minus its last token **once** (KV cache); every edit then
recomputes only the last token (the only position an edit at the last token can change in a
causal model), and only the blocks from the edited one on.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import VERBS, margin, verb_token_ids
from ace_helpers.llm.agreement_demo import demo_scores, demo_tests  # noqa: F401 - the demo's statistics, re-exported
from ace_helpers.llm.agreement_states import verb_head
from ace_helpers.method import interventions
from ace_helpers.method.core import Core

MODES = ("keep", "remove", "flip")


def sweep_margins(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layers: Sequence[int],
    cores: Sequence[Core],
    *,
    modes: Sequence[str] = MODES,
    batch_size: int = 25,
    remote: bool | str = False,
) -> dict[str, np.ndarray]:
    """Margins under each mode at each layer: ``{mode: (L, N)}``, mean-centred edits at the last token.

    Locally, each batch's prefix (all but the last token) runs once (KV cache); an edit at layer ℓ
    then recomputes only the last token and only blocks ℓ−1.. (nnsight ``skip`` feeds the cached
    clean state past the earlier blocks), keep/remove/flip stacked in one batch. With ``remote``
    or other ``modes``, every edit is a full forward through
    :func:`ace_helpers.method.interventions.run_with_edit`. Tests check both paths give the same margins.
    """
    paths = llm.block_paths(lm)
    enc = llm.encode(tokenizer, prompts)
    out = {mode: np.zeros((len(layers), len(prompts))) for mode in modes}
    with contextlib.ExitStack() as stack:
        ids = verb_token_ids(tokenizer) if remote else stack.enter_context(verb_head(lm, tokenizer))
        _sweep(lm, enc, paths, layers, cores, modes, batch_size, remote, ids, out)
    return out


def _stacked(edits: Sequence[Callable[[torch.Tensor], torch.Tensor]]) -> Callable[[torch.Tensor], torch.Tensor]:
    """Edit for rows interleaved as (edit 0, edit 1, …) per prompt: (E·B, D) -> (E·B, D)."""

    def fn(h: torch.Tensor) -> torch.Tensor:
        x = h.reshape(-1, len(edits), h.shape[-1])
        return torch.stack([e(x[:, k]) for k, e in enumerate(edits)], 1).reshape(h.shape)

    return fn


def _core_edits(core: Core) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    """keep / remove / flip of ``core`` (mean-centred), in the order of :data:`MODES`."""
    return [lambda h: core.keep(h, centered=True), lambda h: core.remove(h, centered=True), core.flip]


MAX_ROWS = 600
"""At most this many single-token rows (prompts × stacked edits) per rerun: each row copies the prefix cache."""


def _tail_inputs(lm, batch):
    """(prefix KV cache, last-token inputs, clean block outputs of the last token) of one batch."""
    cache = llm.prefix_cache(lm, batch)
    tail = {"input_ids": batch["input_ids"][:, -1:], "attention_mask": batch["attention_mask"],
            "position_ids": batch["position_ids"][:, -1:], "use_cache": True, "logits_to_keep": 1}
    return cache, tail, clean_block_outputs(lm, llm.block_paths(lm), {**tail, "cache": copy.deepcopy(cache)})[1]


def _tail_margins(lm, paths, cache, tail, clean, ell, edits, ids, max_rows: int | None = MAX_ROWS) -> np.ndarray:
    """Margins (E, B) with each of the E ``edits`` applied at layer ``ell`` (block ℓ−1, last token);
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
        logits = tail_edit(lm, {**rep, "cache": c}, paths, ell, _stacked(group), skip_with)
        out.append(margin(logits[:, -1], ids).float().numpy().reshape(n, k).T)
    return np.concatenate(out, 0)


def edit_margins(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layer: int,
    edits: Sequence[Callable[[torch.Tensor], torch.Tensor]],
    *,
    batch_size: int = 25,
    remote: bool | str = False,
) -> np.ndarray:
    """Margins (E, N) of the N ``prompts`` under each of the E ``edits`` at ``layer`` (last token).

    Each edit maps the (rows, D) last-token block output to a tensor of the same shape. Locally this
    runs as :func:`sweep_margins`' fast path (the prefix once per batch, then only the last token
    through blocks ℓ−1..); with ``remote`` or one-token prompts every edit is a full forward.
    """
    paths = llm.block_paths(lm)
    enc = llm.encode(tokenizer, prompts)
    out = np.zeros((len(edits), len(prompts)))
    fast = not remote and enc["input_ids"].shape[1] > 1
    with contextlib.ExitStack() as stack:
        ids = stack.enter_context(verb_head(lm, tokenizer)) if not remote else verb_token_ids(tokenizer)
        for start in range(0, enc["input_ids"].shape[0], batch_size):
            batch = llm.batch_rows(enc, start, start + batch_size)
            stop = start + batch["input_ids"].shape[0]
            if fast:
                cache, tail, clean = _tail_inputs(lm, batch)
                out[:, start:stop] = _tail_margins(lm, paths, cache, tail, clean, layer, edits, ids)
                continue
            kw = {"remote": remote} if remote else {}
            for k, fn in enumerate(edits):
                logits = interventions.run_with_edit(lm, batch, paths[layer - 1], fn, positions=-1, **kw)
                out[k, start:stop] = margin(logits[:, -1], ids).float().numpy()
    return out


def _sweep(lm, enc, paths, layers, cores, modes, batch_size, remote, ids, out) -> None:
    fast = not remote and tuple(modes) == MODES and enc["input_ids"].shape[1] > 1
    for start in range(0, enc["input_ids"].shape[0], batch_size):
        batch = llm.batch_rows(enc, start, start + batch_size)
        stop = start + batch["input_ids"].shape[0]
        if not fast:
            for li, ell in enumerate(layers):
                for mode in modes:
                    fn = interventions.core_edit(cores[li], mode, centered=True)
                    kw = {"remote": remote} if remote else {}
                    logits = interventions.run_with_edit(lm, batch, paths[ell - 1], fn, positions=-1, **kw)
                    out[mode][li, start:stop] = margin(logits[:, -1], ids).float().numpy()
            continue
        cache, tail, clean = _tail_inputs(lm, batch)  # clean: (n_blocks, B, 1, D)
        for li, ell in enumerate(layers):
            m = _tail_margins(lm, paths, cache, tail, clean, ell, _core_edits(cores[li]), ids, max_rows=None)
            for k, mode in enumerate(MODES):
                out[mode][li, start:stop] = m[k]


def clean_block_outputs(lm, paths, inputs) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One clean no-grad forward of ``inputs`` (extends its ``cache``, if any): (logits (B, T, V), the
    output (B, T, D) of every block in ``paths``, in order) — the states :func:`tail_edit` feeds past
    the blocks it skips."""
    seen: list[torch.Tensor] = []
    handles = [llm.module(lm, p).register_forward_hook(lambda _m, _i, o: seen.append(o[0] if isinstance(o, tuple) else o)) for p in paths]
    try:
        with torch.no_grad():
            logits = llm.torch_module(lm)(**inputs).logits
    finally:
        for h in handles:
            h.remove()
    return logits, seen


def tail_edit(lm, inputs, paths, ell, fn, skip_with) -> torch.Tensor:
    """Logits (B, T, V) with blocks 0..ℓ−2 skipped (their clean output ``skip_with``, (B, T, D), is fed
    to block ℓ−1; None when ℓ = 1) and ``fn`` applied to block ℓ−1's output at the last position
    ((B, D) -> (B, D)): only blocks ℓ−1.. are recomputed. ``inputs`` carries the prefix ``cache``."""
    with torch.no_grad():
        with lm.trace(**inputs):
            for i in range(ell - 1):
                interventions.resolve_module(lm, paths[i]).skip(skip_with)
            env = interventions.resolve_module(lm, paths[ell - 1])
            hidden = env.output
            edited = hidden.clone()
            edited[:, -1] = fn(hidden[:, -1])
            env.output = edited
            logits = lm.output.logits.save()
    return logits


# ----------------------------------------------------------------------------- the flip demo


def last_token_probs(
    lm, tokenizer, prompts: Sequence[str], layer: int, core: Core | None, mode: str | None, *, remote: bool | str = False
) -> np.ndarray:
    """P(is), P(are), P(was), P(were) (full-vocabulary softmax) at the last token: (N, 4).

    The edit (``mode`` in keep/remove/flip, mean-centred, last token only) is a full forward
    through :func:`ace_helpers.method.interventions.run_with_core`.
    """
    ids = verb_token_ids(tokenizer)
    batch = llm.encode(tokenizer, prompts)
    path = llm.block_paths(lm)[layer - 1]
    kw = {"remote": remote} if remote else {}
    logits = interventions.run_with_core(lm, batch, path, core, mode, positions=-1, centered=True, **kw)[:, -1]
    probs = torch.softmax(logits.double(), -1)
    return probs[:, [ids[v] for v in VERBS]].numpy()
