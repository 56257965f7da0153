"""No result of the book depends on a vendor-dependent MKL routine (VML or LAPACK) on CPU floats.

Each test runs one of the book's steps under :class:`VendorOpAudit` and fails if the step calls one
of the operations that MKL computes differently on Intel and AMD CPUs; the first test shows that the
audit catches them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers import llm
from ace_helpers.chapters.ace_vs_alternatives import llm as alternatives_llm
from ace_helpers.chapters.grokking_scaling_law.redundancy import fourier_projector
from ace_helpers.chapters.llm_agreement import collect_states
from ace_helpers.chapters import markov_cores
from ace_helpers.llm import agreement
from ace_helpers.method import portable, subspaces
from ace_helpers.repro.vendor_ops import VendorOpAudit, is_vendor_op
from ace_helpers.toys.ensemble import EnsembleAdamW
from ace_helpers.toys.models import ToyConfig, build_model
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import train_lm


def _clean(fn) -> None:
    with VendorOpAudit() as audit:
        fn()
    assert not audit.found, dict(audit.found)


def test_the_audit_catches_vml_and_lapack_calls_on_cpu_floats_only() -> None:
    x = torch.rand(5) + 0.1
    with VendorOpAudit() as audit:
        x.sqrt(), x.exp(), x.pow(0.5), torch._foreach_log([x]), x.clone().erf_(), torch.linalg.qr(torch.eye(3))
        x.rsqrt(), x.sigmoid(), x.pow(2.0), torch.log_softmax(x, 0), x.long().abs()  # not vendor-dependent
    assert set(audit.found) == {"aten.sqrt.default", "aten.exp.default", "aten.pow.Tensor_Scalar", "aten._foreach_log.default",
                                "aten.erf_.default", "aten.linalg_qr.default"}  # fmt: skip
    assert not is_vendor_op(torch.ops.aten.sqrt.default, (torch.ones(2, dtype=torch.long),))
    p = torch.nn.Parameter(torch.randn(4))
    p.grad = torch.randn(4)
    with VendorOpAudit() as audit:  # torch's default AdamW step takes VML's square root
        torch.optim.AdamW([p], lr=1e-2).step()
    assert audit.found


def test_optimiser_steps_of_the_book() -> None:
    """The ensemble's AdamW (one age, then two ages after members join) and the torch optimisers the book builds."""
    p = torch.nn.Parameter(torch.randn(3, 4, 5))
    opt = EnsembleAdamW([p], lr=1e-2, weight_decay=[0.0, 0.3, 1.0])
    p.grad = torch.randn(3, 4, 5)
    _clean(opt.step)
    p = torch.nn.Parameter(torch.cat([p.detach(), p.detach()[:1]]))
    opt.extend([0.0], [p])
    p.grad = torch.randn(4, 4, 5)
    _clean(opt.step)
    single = torch.nn.Parameter(torch.randn(4, 5))
    for make in (lambda: portable.adamw([single], lr=1e-2, weight_decay=1.0), lambda: portable.adam([single], lr=1e-2)):
        step = make().step
        single.grad = torch.randn(4, 5)
        _clean(step)


def test_training_loops() -> None:
    """The loop trainer (``train_lm``: chapters 2-3's loop, the reference of the ensemble tests)."""
    config = ToyConfig(vocab=11, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=2, dropout=0.1)
    data = modadd_dataset(11, 0.5, 0)
    model = build_model(config, 0)
    _clean(lambda: train_lm(model, data.train_inputs, data.train_targets, epochs=1, batch_size=16, lr=1e-2,
                            weight_decay=1.0, seed=0, loss_positions="last"))  # fmt: skip


def test_chapter_1_pipeline() -> None:
    """Chapter 1: the ensemble trainer, nnsight capture, ACE, keep/remove ablations and the operator fit."""
    cfg = markov_cores.PARAMS.resolve(PRESET="ci", N_SEEDS=2, EPOCHS=1, D_MODEL=16, N_TRAIN=40, N_TEST=30, SEQ_LEN=8,
                                      EXTRA_CHAINS=[])  # fmt: skip
    _clean(lambda: markov_cores.run_chains(cfg, workers=1))


def test_chapter_4_and_6_helpers() -> None:
    """Chapter 4's Fourier projector and chapter 6's DAS bases (the paths that used torch's LAPACK QR)."""
    rng = np.random.default_rng(0)
    h, w = rng.standard_normal((60, 8)), rng.standard_normal((3, 8))
    g, m = rng.standard_normal((60, 8)), rng.standard_normal(60)
    _clean(lambda: fourier_projector(11, [2, 3]))
    _clean(lambda: subspaces.das_basis(h, w, None, 2, steps=3))
    _clean(lambda: alternatives_llm.das_margin_basis(h, g, m, 2, steps=3))


@pytest.mark.parametrize("arch", sorted(llm.tiny.ARCHS))
def test_llm_states_and_gradients(arch: str) -> None:
    """Chapter 5's states and margin gradients on each architecture (tiny random models)."""
    lm, tok = llm.tiny_model(arch, words=agreement.vocabulary(), n_layers=2, seed=0)
    data = agreement.agreement_split(6, seed=0)
    _clean(lambda: collect_states(lm, tok, data.train_prompts, [1, 2]))
