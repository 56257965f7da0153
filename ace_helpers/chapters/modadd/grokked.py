"""Modular-addition models trained until they grok: chapters 6 and 7 train theirs here, and chapters 2-4 show
ACE in plain sight on one stored grokked model (:func:`hook_site`), since their own runs store no weights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nnsight
import numpy as np

from ace_helpers.chapters.modadd.limits import model_config
from ace_helpers.method.devices import resolve_device
from ace_helpers.method.interventions import HookSite
from ace_helpers.repro.artifacts import cached, project_root
from ace_helpers.toys.ensemble import ensemble_accuracy
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.models import ToyTransformer, build_model
from ace_helpers.toys.tasks.modadd import ModAddData, modadd_dataset
from ace_helpers.toys.train import load_state, state_arrays

#: Test accuracy at which a mod-add model counts as grokked (chapter 2's threshold).
GROK_ACC = 0.99
MODADD_SEED_STRIDE = 1000

#: The stored demo model's training: chapter 7's book setting (p = 31, 60 % of the pairs, lr 3e-3, weight
#: decay 1), trained until its test accuracy reaches :data:`GROK_ACC` and 200 steps more.
DEMO = {
    "P": 31,
    "TRAIN_FRACTION": 0.6,
    "DATA_SEED": 42,
    "MODADD_LR": 3e-3,
    "MODADD_SEED": 1031,
    "MODADD_MAX_STEPS": 3000,
    "MODADD_EXTRA_STEPS": 200,
    "PRECISION": "fp32",
}
#: The hook of the demo: the output of the second (last) block, read and edited at the last token.
DEMO_HOOK = "layers.1"


def train_modadd(cfg: Mapping[str, Any], data: ModAddData, n_models: int = 2) -> tuple[list[Any], list[int | None]]:
    """``n_models`` models (seeds MODADD_SEED + 1000·m, weight decay 1), each trained until its test accuracy
    reaches :data:`GROK_ACC` and MODADD_EXTRA_STEPS more steps (at most MODADD_MAX_STEPS), in PRECISION
    (``"bf16"``: autocast and the ensemble's fast kernels, :mod:`ace_helpers.toys.precision`), on ``DEVICE``
    when ``cfg`` has it (else the CPU).

    Returns the models (eval mode, on the CPU) and the step at which each grokked (None: never).
    """
    grok: dict[int, int] = {}
    extra = cfg["MODADD_EXTRA_STEPS"]

    def evaluate(step: int, ensemble: Any, ids: np.ndarray) -> np.ndarray:
        for i, acc in zip(ids, ensemble_accuracy(ensemble, data.test_inputs, data.test_answers)):
            if acc >= GROK_ACC and int(i) not in grok:
                grok[int(i)] = step
        return np.array([int(i) in grok and step >= grok[int(i)] + extra for i in ids])

    seeds = [cfg["MODADD_SEED"] + MODADD_SEED_STRIDE * m for m in range(n_models)]
    run = train_ensemble(
        model_config(data.p),
        data.train_inputs,
        data.train_targets,
        seeds=seeds,
        weight_decays=[1.0] * n_models,
        batch_size=512,
        lr=cfg["MODADD_LR"],
        max_steps=cfg["MODADD_MAX_STEPS"],
        eval_every=25,
        evaluate=evaluate,
        keep_models=True,
        progress=False,
        precision=cfg["PRECISION"],
        fast=cfg["PRECISION"] == "bf16",
        device=resolve_device(cfg.get("DEVICE", "cpu")),
    )
    return [m.eval() for m in run.models], [grok.get(m) for m in range(n_models)]


def grokked_model() -> tuple[ToyTransformer, ModAddData, int | None]:
    """The stored demo model (:data:`DEMO`), its data and the step it grokked at: read from
    ``book/artifacts/modadd_demo`` (checksummed, keyed by :data:`DEMO`), trained and stored when absent
    (a few minutes on one CPU thread)."""
    data = modadd_dataset(DEMO["P"], DEMO["TRAIN_FRACTION"], seed=DEMO["DATA_SEED"])

    def train() -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        (model,), (grok,) = train_modadd(DEMO, data, n_models=1)
        return {"grok_step": grok}, state_arrays(model)

    found, _ = cached(project_root() / "book" / "artifacts" / "modadd_demo", "grokked_p31", DEMO, train)
    model = build_model(model_config(DEMO["P"]), DEMO["MODADD_SEED"])
    load_state(model, None, found.arrays)
    return model.eval(), data, found.data["grok_step"]


def hook_site() -> HookSite:
    """The stored grokked model as ACE sees it: the test pairs, the hook :data:`DEMO_HOOK` at the last token,
    the unembedding W_U (p, D) as the Jacobian (the tail after the last block is linear), last-token accuracy."""
    model, data, _ = grokked_model()
    answers = data.test_answers
    return HookSite(
        nnsight.NNsight(model),
        data.test_inputs,
        DEMO_HOOK,
        model.lm_head.weight.detach().double().numpy(),
        lambda logits: float((logits[:, -1].argmax(-1) == answers).double().mean()),
        positions=-1,
    )
