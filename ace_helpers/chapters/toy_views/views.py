"""Trained toy models seen through their ACE cores at a hook (a :class:`View`): the Markov and modular-addition
models that chapters 6 and 7 train and compare."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nnsight
import numpy as np
import torch

from ace_helpers.chapters.markov_run import run as markov
from ace_helpers.chapters.modadd.checkpoints import analyse_activations, last_token_activations
from ace_helpers.method.core import Core, extract_core_from_gramians

#: Share of the Fourier power of W_U·Q (the core's image in logit space) that a model's key
#: frequencies hold together (ours).
FREQ_POWER = 0.9


@dataclass
class View:
    """One trained model at the stitching hook.

    Attributes:
        wrapped: the model wrapped with ``nnsight.NNsight``.
        core: its ACE core.
        h_train: (N_rows, D) float64 activations on the training inputs (the map's data).
        h_test: activations on the test inputs, shaped like the edited slice: (N, T, D) or (N, D).
        clean: (N, T) long, the model's own predictions on the test inputs.
    """

    wrapped: Any
    core: Core
    h_train: np.ndarray
    h_test: np.ndarray
    clean: torch.Tensor


def markov_view(model: Any, data: Any, energy: float) -> View:
    """ACE core (centred-logit tail, as chapter 1) from the training activations; test activations; clean predictions."""
    model.eval()
    wrapped = nnsight.NNsight(model)
    h_train = markov.capture_states(wrapped, data.train_inputs)
    h_test = markov.capture_states(wrapped, data.test_inputs)
    dim = h_train.shape[-1]
    mean, cov = markov.activation_gramian(h_train.reshape(-1, dim))
    w = markov.tail_jacobian(model, "centered")
    core = extract_core_from_gramians(cov, w.T @ w, mean=mean, energy=energy)
    with torch.no_grad():
        clean = model.lm_head(h_test).argmax(-1)
    return View(wrapped, core, h_train.reshape(-1, dim).double().numpy(), h_test.double().numpy(), clean)


def key_frequencies(core: Core, w_u: np.ndarray, power: float = FREQ_POWER) -> list[int]:
    """Frequencies k ∈ 1..⌊p/2⌋ of the core's image in logit space W_U·Q (p, r), largest first, until
    they hold ``power`` of its Fourier power over the answer classes."""
    img = w_u @ core.basis
    spec = np.sum(np.abs(np.fft.rfft(img - img.mean(axis=0), axis=0)) ** 2, axis=1)[1:]
    order = np.argsort(spec)[::-1]
    k = int(np.searchsorted(np.cumsum(spec[order]) / spec.sum(), power) + 1)
    return sorted(int(f) + 1 for f in order[:k])


def modadd_view(model: Any, data: Any, energy: float) -> View:
    """The ACE core at the last token of layer 2 (chapter 2's analysis, its necessary rank) and the test activations."""
    wrapped = nnsight.NNsight(model)
    h_test = last_token_activations(model, data.test_inputs)
    _, core = analyse_activations(
        h_test, model.lm_head.weight, model.lm_head.bias, data.test_answers, data.p, energy=energy, holdout=0
    )
    h_train = last_token_activations(model, data.train_inputs).double().numpy()
    with torch.no_grad():
        clean = model(data.test_inputs).argmax(-1)
    return View(wrapped, core, h_train, h_test.double().numpy(), clean)
