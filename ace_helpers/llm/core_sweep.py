"""ACE across the layers of a language model: one core per layer from :func:`~ace_helpers.llm.readout.metric_gradients`,
and the metric on held-out prompts with that core kept, removed or flipped at the last token."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ace_helpers.llm.edits import MODES, sweep_values
from ace_helpers.llm.layers import n_layers
from ace_helpers.llm.readout import Metric, metric_gradients
from ace_helpers.method.core import Core, GramianAccumulator


@dataclass
class LayerCore:
    """One layer of :func:`layer_sweep`: ``layer`` ℓ (the output of block ℓ−1), its ACE ``core``, and ``values``:
    the metric on the N held-out prompts per mode, ``"base"`` (no edit), ``"keep"``, ``"remove"``, ``"flip"``: (N,)."""

    layer: int
    core: Core
    values: dict[str, np.ndarray]

    def scores(self, score: Callable[[np.ndarray], float] = np.mean) -> dict[str, float]:
        """``score`` of each mode's values (default: the mean metric), e.g. an AUC against labels."""
        return {mode: float(score(v)) for mode, v in self.values.items()}


def layer_sweep(
    lm,
    tokenizer,
    fit_prompts: Sequence[str],
    eval_prompts: Sequence[str],
    metric: Metric,
    layers: Sequence[int] | str = "all",
    *,
    rank: int | None = None,
    energy: float = 0.99,
    batch_size: int = 16,
    remote: bool | str = False,
) -> list[LayerCore]:
    """A core per layer from the fit prompts, scored by keep / remove / flip on the eval prompts.

    Args:
        fit_prompts: prompts whose last-token states and metric gradients give each layer's Gramians.
        eval_prompts: held-out prompts, edited at the last token.
        metric: logits (B, T, V) -> (B,) (:data:`~ace_helpers.llm.readout.Metric`; write it on ``logits[:, -1]``).
        layers: ``"all"`` or layers ℓ in 1..n_layers.  rank: a fixed core rank (the paper's LLM cores: 1); None:
            the energy rule with ``energy``.
    Returns:
        One :class:`LayerCore` per layer, in the order of ``layers``.
    """
    depth = n_layers(lm)
    chosen = list(range(1, depth + 1)) if layers == "all" else [int(v) for v in layers]
    bad = [v for v in chosen if not 1 <= v <= depth]
    if not chosen or bad:
        raise ValueError(f"layers={layers!r} is not allowed: this model has layers 1..{depth}" + (f"; bad: {bad}" if bad else ""))
    fit = metric_gradients(lm, tokenizer, fit_prompts, metric, chosen, batch_size=batch_size, remote=remote)
    order = [fit.layers.index(ell) for ell in chosen]
    cores = []
    for i in order:
        acc = GramianAccumulator(fit.H.shape[2])
        acc.add_activations(fit.H[i]).add_jacobians(fit.G[i])
        cores.append(acc.core(rank=rank, energy=energy))
    base = metric_gradients(
        lm, tokenizer, eval_prompts, metric, chosen[:1], gradients=False, batch_size=batch_size, remote=remote
    ).values
    edited = sweep_values(lm, tokenizer, eval_prompts, chosen, cores, metric, modes=MODES, batch_size=batch_size, remote=remote)
    return [
        LayerCore(ell, c, {"base": base, **{m: edited[m][li] for m in MODES}}) for li, (ell, c) in enumerate(zip(chosen, cores))
    ]
