"""Subject-verb agreement under core edits: test margins under keep / remove / flip at every layer, and the flip
demo's verb probabilities (its scores and tests: :mod:`ace_helpers.llm.agreement_demo`).

The sweeps are :mod:`ace_helpers.llm.edits`' (the prefix once per batch, then only the last token through the
blocks from the edited one on) with the agreement margin as their metric.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import VERBS, margin_metric, verb_token_ids
from ace_helpers.llm.agreement_demo import demo_scores, demo_tests  # noqa: F401 - the demo's statistics, re-exported
from ace_helpers.llm.agreement_states import verb_columns
from ace_helpers.llm.edits import MODES, edit_values, sweep_values
from ace_helpers.llm.remote_jobs import trace_options
from ace_helpers.method import interventions
from ace_helpers.method.core import Core


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
    """Margins under each mode at each layer: ``{mode: (L, N)}``, mean-centred edits at the last token
    (:func:`ace_helpers.llm.edits.sweep_values` with the agreement margin)."""
    with verb_columns(lm, tokenizer, remote) as ids:
        return sweep_values(
            lm, tokenizer, prompts, layers, cores, margin_metric(ids), modes=modes, batch_size=batch_size, remote=remote
        )


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
    """Margins (E, N) of the N ``prompts`` under each of the E ``edits`` at ``layer`` (last token)
    (:func:`ace_helpers.llm.edits.edit_values` with the agreement margin)."""
    with verb_columns(lm, tokenizer, remote) as ids:
        return edit_values(lm, tokenizer, prompts, layer, edits, margin_metric(ids), batch_size=batch_size, remote=remote)


# ----------------------------------------------------------------------------- the flip demo


def last_token_probs(
    lm, tokenizer, prompts: Sequence[str], layer: int, core: Core | None, mode: str | None, *, remote: bool | str = False
) -> np.ndarray:
    """P(is), P(are), P(was), P(were) (full-vocabulary softmax) at the last token: (N, 4).

    The edit (``mode`` in keep/remove/flip, mean-centred, last token only) is a full forward
    through :func:`ace_helpers.method.interventions.run_with_core`.
    """
    ids = verb_token_ids(tokenizer)
    batch = llm.encode(tokenizer, prompts, device=llm.input_device(lm))
    path = llm.block_paths(lm)[layer - 1]
    kw = trace_options(lm, remote)
    logits = interventions.run_with_core(lm, batch, path, core, mode, positions=-1, centered=True, **kw)[:, -1]
    probs = torch.softmax(logits.double(), -1)
    return probs[:, [ids[v] for v in VERBS]].cpu().numpy()
