"""Trained toy models seen through their ACE cores at a hook (a :class:`View`): the Markov and modular-addition
models that chapters 6 and 7 train and compare."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nnsight
import numpy as np
import torch

from ace_helpers.chapters.modadd.analysis import analyse_activations, last_token_activations
from ace_helpers.chapters.modadd.config import model_config
from ace_helpers.chapters.toy_models import markov
from ace_helpers.method.core import Core, extract_core_from_gramians
from ace_helpers.repro.params import Params
from ace_helpers.toys.ensemble import ensemble_accuracy, train_ensemble

#: Test accuracy at which a mod-add model counts as grokked (chapter 2's threshold).
GROK_ACC = 0.99


#: Share of the Fourier power of W_U·Q (the core's image in logit space) that a model's key
#: frequencies hold together (ours).
FREQ_POWER = 0.9


MODADD_SEED_STRIDE = 1000


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


def train_modadd(cfg: Params, data: Any, n_models: int = 2) -> tuple[list[Any], list[int | None]]:
    """``n_models`` models (seeds MODADD_SEED + 1000·m, weight decay 1), each trained until its test accuracy
    reaches :data:`GROK_ACC` and MODADD_EXTRA_STEPS more steps (at most MODADD_MAX_STEPS), in PRECISION
    (``"bf16"``: autocast and the ensemble's fast kernels, :mod:`ace_helpers.toys.precision`).

    Returns the models (eval mode) and the step at which each grokked (None: never).
    """
    grok: dict[int, int] = {}
    extra = cfg["MODADD_EXTRA_STEPS"]

    def evaluate(step: int, ensemble: Any, ids: np.ndarray) -> np.ndarray:
        for i, acc in zip(ids, ensemble_accuracy(ensemble, data.test_inputs, data.test_answers)):
            if acc >= GROK_ACC and int(i) not in grok:
                grok[int(i)] = step
        return np.array([int(i) in grok and step >= grok[int(i)] + extra for i in ids])

    seeds = [cfg["MODADD_SEED"] + MODADD_SEED_STRIDE * m for m in range(n_models)]
    run = train_ensemble(model_config(data.p), data.train_inputs, data.train_targets, seeds=seeds, weight_decays=[1.0] * n_models,
                         batch_size=512, lr=cfg["MODADD_LR"], max_steps=cfg["MODADD_MAX_STEPS"], eval_every=25,
                         evaluate=evaluate, keep_models=True, progress=False, precision=cfg["PRECISION"],
                         fast=cfg["PRECISION"] == "bf16")
    return [m.eval() for m in run.models], [grok.get(m) for m in range(n_models)]


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
    _, core = analyse_activations(h_test, model.lm_head.weight, model.lm_head.bias, data.test_answers, data.p,
                                  energy=energy, holdout=0)
    h_train = last_token_activations(model, data.train_inputs).double().numpy()
    with torch.no_grad():
        clean = model(data.test_inputs).argmax(-1)
    return View(wrapped, core, h_train, h_test.double().numpy(), clean)
