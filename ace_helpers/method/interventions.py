"""Applying cores inside a model through nnsight: capture, keep, remove, flip.

Works on toy modules wrapped with ``nnsight.NNsight(module)`` and on Hugging Face models wrapped
with ``nnsight.TransformersModel(model, tokenizer=tok)``.  A hook point is a dotted module path
relative to the wrapped model (``"layers.0"`` for :class:`~ace_helpers.toys.models.ToyTransformer`,
``"model.layers.5"`` for Llama/Gemma/Qwen, ``"transformer.h.5"`` for GPT-2).

Module outputs may be a tensor ``(B, T, D)`` (transformers 5 decoder blocks, encoder layers) or a
tuple whose first item is the hidden states; both are handled (never ``output[0]`` on a tensor,
which would be batch row 0).  Positions select where the edit applies: ``None`` (all), an int
(e.g. ``-1``), a list/slice of positions, or a (B,) long tensor of one position per row (e.g. the
last non-pad token of a right-padded batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from ace_helpers.method.core import Core

Mode = Literal["keep", "remove", "flip"]
Positions = None | int | slice | Sequence[int] | torch.Tensor
MODES = ("keep", "remove", "flip")


def resolve_module(model: Any, path: str) -> Any:
    """The nnsight Envoy of ``model`` at dotted ``path`` (digits index into module lists)."""
    envoy = model
    for part in path.split("."):
        try:
            envoy = envoy[int(part)] if part.isdigit() else getattr(envoy, part)
        except (AttributeError, IndexError, KeyError, TypeError) as err:
            raise ValueError(f"module path {path!r} has no component {part!r} in {type(model).__name__}") from err
    return envoy


def _select(hidden: torch.Tensor, positions: Positions) -> torch.Tensor:
    """The (B, ..., D) slice of hidden (B, T, D) at ``positions``."""
    if positions is None:
        return hidden
    if isinstance(positions, torch.Tensor):
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), positions.to(hidden.device)]
    if isinstance(positions, (int, slice)):
        return hidden[:, positions]
    return hidden[:, list(positions)]


def _replace(hidden: torch.Tensor, positions: Positions, new: torch.Tensor) -> torch.Tensor:
    """Copy of hidden (B, T, D) with the ``positions`` slice replaced by ``new``."""
    if positions is None:
        return new
    out = hidden.clone()
    if isinstance(positions, torch.Tensor):
        out[torch.arange(hidden.shape[0], device=hidden.device), positions.to(hidden.device)] = new
    elif isinstance(positions, (int, slice)):
        out[:, positions] = new
    else:
        out[:, list(positions)] = new
    return out


def _hidden(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def _with_hidden(output: Any, hidden: torch.Tensor) -> Any:
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


def _logits(output: Any) -> torch.Tensor:
    return output.logits if hasattr(output, "logits") else output


def _trace_args(inputs: Any) -> tuple[tuple, dict]:
    if isinstance(inputs, dict):
        return (), dict(inputs)
    return (inputs,), {}


def capture(model: Any, inputs: Any, module: str, *, positions: Positions = None, **trace_kwargs: Any) -> torch.Tensor:
    """Output of ``module`` (hidden states) on ``inputs``, at ``positions``, detached.

    Returns (B, T, D) for ``positions=None``, (B, D) for an int or a per-row tensor,
    (B, P, D) for a list/slice of P positions.
    """
    args, kwargs = _trace_args(inputs)
    with torch.no_grad(), model.trace(*args, **kwargs, **trace_kwargs):
        out = _select(_hidden(resolve_module(model, module).output), positions).detach().save()
    return out


def run_with_edit(
    model: Any,
    inputs: Any,
    module: str,
    fn: Callable[[torch.Tensor], torch.Tensor] | None,
    *,
    positions: Positions = None,
    reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
    **trace_kwargs: Any,
) -> torch.Tensor:
    """Logits of ``model`` with ``module``'s hidden states at ``positions`` replaced by ``fn(slice)``.

    ``fn`` maps the (..., D) slice to a tensor of the same shape; ``None`` runs the clean model.
    Returns logits (B, T, V), or ``reduce(logits)`` computed inside the trace (e.g. a metric (B,)): on a remote
    server only that comes back, instead of every position's logits.
    """
    args, kwargs = _trace_args(inputs)
    with torch.no_grad(), model.trace(*args, **kwargs, **trace_kwargs):
        if fn is not None:
            envoy = resolve_module(model, module)
            out = envoy.output
            hidden = _hidden(out)
            envoy.output = _with_hidden(out, _replace(hidden, positions, fn(_select(hidden, positions))))
        logits = _logits(model.output)
        result = (logits if reduce is None else reduce(logits)).save()
    return result


def core_edit(core: Core, mode: Mode, *, centered: bool = False, scale: float = 1.0) -> Callable[[torch.Tensor], torch.Tensor]:
    """The map (..., D) -> (..., D) that keeps, removes or flips ``core``.

    keep/remove: uncentred projections (the paper's toy models) unless ``centered``
    (about the core's mean, as for LLMs); flip always reflects about the mean with ``scale``.
    """
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not allowed: mode must be one of {list(MODES)}")
    core = core.compact()  # the closure carries D·r numbers, not D² (a remote trace sends it)
    if mode == "keep":
        return lambda h: core.keep(h, centered=centered)
    if mode == "remove":
        return lambda h: core.remove(h, centered=centered)
    return lambda h: core.flip(h, scale=scale)


def run_with_core(
    model: Any,
    inputs: Any,
    module: str,
    core: Core | None,
    mode: Mode | None,
    *,
    positions: Positions = None,
    centered: bool = False,
    scale: float = 1.0,
    **trace_kwargs: Any,
) -> torch.Tensor:
    """Logits (B, T, V) with ``core`` kept / removed / flipped at ``module`` (``mode=None``: clean)."""
    fn = None if mode is None else core_edit(core, mode, centered=centered, scale=scale)
    return run_with_edit(model, inputs, module, fn, positions=positions, **trace_kwargs)


def accuracy_under(
    model: Any,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    module: str,
    core: Core | None,
    mode: Mode | None,
    *,
    positions: Positions = None,
    score: Literal["all", "last"] = "all",
    centered: bool = False,
    batch_size: int = 4096,
) -> float:
    """Argmax next-token accuracy (targets (N, T) long) under an intervention, in batches.

    ``score="all"`` scores every position, ``"last"`` only the final one.
    """
    correct, total = 0, 0
    for start in range(0, inputs.shape[0], batch_size):
        x, y = inputs[start : start + batch_size], targets[start : start + batch_size]
        logits = run_with_core(model, x, module, core, mode, positions=positions, centered=centered)
        if score == "last":
            logits, y = logits[:, -1], y[:, -1]
        correct += int((logits.argmax(-1) == y).sum())
        total += y.numel()
    return correct / total


@dataclass(frozen=True)
class HookSite:
    """One model and its task as ACE sees them: what :func:`capture`, ``extract_core`` and
    :func:`run_with_core` need, and the task's own score.

    Attributes:
        model: the model wrapped with nnsight (``nnsight.NNsight`` or ``TransformersModel``).
        inputs: what the model takes: a (B, T) long tensor, (B, T, D) activations, or a tokenizer's batch dict.
        hook: the dotted module path where the core is read and edited.
        jacobian: the Jacobian of the task output at the hook: (K, D) when the tail is linear, else
            (N, K, D) or (N, D) per captured row (see :func:`ace_helpers.method.core.extract_core`).
        score: the task's accuracy (a float in [0, 1]) from the model's logits (B, T, V).
        positions: where the hook is read and edited (see the module docstring); None: everywhere.
        trace: keyword arguments for every trace of the model (e.g. ``{"remote": True}`` for NDIF).
    """

    model: Any
    inputs: Any
    hook: str
    jacobian: Any
    score: Callable[[torch.Tensor], float]
    positions: Positions = None
    trace: dict[str, Any] = field(default_factory=dict)

    def accuracy(self, core: Core | None = None, mode: Mode = "keep") -> float:
        """The task's score with ``core`` kept / removed / flipped at the hook (no core: the clean model)."""
        logits = run_with_core(
            self.model, self.inputs, self.hook, core, None if core is None else mode, positions=self.positions, **self.trace
        )
        return self.score(logits)
