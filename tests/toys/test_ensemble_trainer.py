"""The epoch-level ensemble trainer: forks with a fresh AdamW, resumes bit for bit, trains members independently."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.dropout import apply_dropout
from ace_helpers.toys.ensemble_trainer import EnsembleTrainer
from ace_helpers.toys.models import ToyConfig, build_model
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import train_lm

set_threads(1)

TINY2 = ToyConfig(vocab=11, d_model=16, n_layers=2, n_heads=4, d_ff=24, max_len=2)
DATA = modadd_dataset(11, 0.5, 0)  # 60 train pairs


def _out(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(DATA.test_inputs)[:, -1]


@pytest.mark.parametrize("fast", [False, True])
def test_fork_continues_like_a_deep_copy_with_a_fresh_adamw(fast: bool) -> None:
    """Dropout off: train, fork (wd 0, fresh optimizer), train both == train_lm on the model and on a deep copy."""
    config = ToyConfig(**{**TINY2.__dict__, "dropout": 0.0})
    tr = EnsembleTrainer(config, [5], [1.0], lr=1e-2, batch_size=16, fast=fast)
    ref = build_model(config, 5)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=1.0)
    for _ in range(2):
        tr.train_epoch(DATA.train_inputs, DATA.train_targets)
    train_lm(ref, DATA.train_inputs, DATA.train_targets, epochs=2, batch_size=16, lr=1e-2, weight_decay=1.0,
             seed=5, loss_positions="last", optimizer=ref_opt)
    fork = copy.deepcopy(ref)
    fork_opt = torch.optim.AdamW(fork.parameters(), lr=1e-2, weight_decay=0.0)
    (j,) = tr.fork([0], 0.0)
    tr.reseed(0, 17)
    tr.reseed(j, 23)
    for _ in range(2):
        tr.train_epoch(DATA.train_inputs, DATA.train_targets)
    train_lm(ref, DATA.train_inputs, DATA.train_targets, epochs=2, batch_size=16, lr=1e-2, weight_decay=1.0,
             seed=17, loss_positions="last", optimizer=ref_opt)
    train_lm(fork, DATA.train_inputs, DATA.train_targets, epochs=2, batch_size=16, lr=1e-2, weight_decay=0.0,
             seed=23, loss_positions="last", optimizer=fork_opt)
    torch.testing.assert_close(_out(tr.member(0)), _out(ref), atol=2e-4, rtol=1e-4)
    torch.testing.assert_close(_out(tr.member(j)), _out(fork), atol=2e-4, rtol=1e-4)
    # the two arms really went apart, so the checks above are not trivially the same check
    assert (_out(tr.member(0)) - _out(tr.member(j))).abs().max() > 1e-3


def test_resume_from_state_arrays_is_bit_identical() -> None:
    def fresh() -> EnsembleTrainer:
        return EnsembleTrainer(TINY2, [1, 2], [1.0, 1.0], lr=1e-2, batch_size=16)

    def run(tr: EnsembleTrainer, epochs: range) -> None:
        for e in epochs:
            for j in range(tr.n_members):
                tr.reseed(j, 100 * e + j)
            tr.train_epoch(DATA.train_inputs, DATA.train_targets)
            if e == 1:
                tr.fork([0, 1], 0.0)

    whole = fresh()
    run(whole, range(4))
    half = fresh()
    run(half, range(3))
    stored = half.state_arrays()
    resumed = fresh()
    resumed.load_state_arrays(stored)
    run(resumed, range(3, 4))
    assert resumed.n_members == whole.n_members == 4
    for (name, a), (_, b) in zip(whole.ensemble.named_parameters(), resumed.ensemble.named_parameters()):
        assert torch.equal(a, b), name


def test_member_numbers_do_not_depend_on_company() -> None:
    """Dropout on: member 'seed 2' trains to the same weights alone and beside another member."""
    both = EnsembleTrainer(TINY2, [1, 2], [1.0, 0.5], lr=1e-2, batch_size=16)
    alone = EnsembleTrainer(TINY2, [2], [0.5], lr=1e-2, batch_size=16)
    for _ in range(3):
        lb = both.train_epoch(DATA.train_inputs, DATA.train_targets)
        la = alone.train_epoch(DATA.train_inputs, DATA.train_targets)
    assert la[0] == lb[1]
    for a, b in zip(both.member(1).parameters(), alone.member(0).parameters()):
        assert torch.equal(a, b)


def test_a_fork_leaves_the_parent_bit_for_bit() -> None:
    """After a fork the members have two ages; the fused step takes each member's own step count, so the
    parent trains on exactly as an unforked twin does (before the fused step it rounded differently)."""
    config = ToyConfig(**{**TINY2.__dict__, "dropout": 0.0})
    twin = EnsembleTrainer(config, [4], [1.0], lr=1e-2, batch_size=60)  # one batch per epoch
    forked = EnsembleTrainer(config, [4], [1.0], lr=1e-2, batch_size=60)
    for tr in (twin, forked):
        tr.train_epoch(DATA.train_inputs, DATA.train_targets)
    forked.fork([0], 0.0)
    for tr in (twin, forked):
        tr.train_epoch(DATA.train_inputs, DATA.train_targets)
    for a, b in zip(twin.member(0).parameters(), forked.member(0).parameters()):
        assert torch.equal(a, b)
    # the fork itself trained on (so the parent's equality is not that of a frozen ensemble)
    assert not torch.equal(forked.member(1).lm_head.weight, forked.member(0).lm_head.weight)


def test_bf16_trains_and_differs_from_fp32() -> None:
    runs = {}
    for precision in ("fp32", "bf16"):
        tr = EnsembleTrainer(TINY2, [3], [1.0], lr=1e-2, batch_size=16, precision=precision)
        losses = [tr.train_epoch(DATA.train_inputs, DATA.train_targets)[0] for _ in range(6)]
        assert losses[-1] < losses[0]
        runs[precision] = tr.member(0)
        assert runs[precision].lm_head.weight.dtype == torch.float32  # master weights stay fp32
    assert not torch.equal(runs["fp32"].lm_head.weight, runs["bf16"].lm_head.weight)


def test_fast_dropout_masks_keep_the_expectation() -> None:
    x = torch.ones(3, 20_000)
    gens = [torch.Generator().manual_seed(s) for s in range(3)]
    y = apply_dropout(x, 0.1, gens, fast=True)
    dropped = (y == 0).double().mean(dim=1)
    assert torch.all((dropped - 0.1).abs() < 0.01), dropped
    assert abs(float(y.mean()) - 1.0) < 0.01
    assert not torch.equal(y[0], y[1])  # each member its own stream
    again = apply_dropout(x, 0.1, [torch.Generator().manual_seed(s) for s in range(3)], fast=True)
    assert torch.equal(y, again)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="precision"):
        EnsembleTrainer(TINY2, [1], [1.0], lr=1e-2, batch_size=16, precision="fp16")
    with pytest.raises(ValueError, match="equal length"):
        EnsembleTrainer(TINY2, [1, 2], [1.0], lr=1e-2, batch_size=16)
    with pytest.raises(ValueError, match="loss_positions"):
        EnsembleTrainer(TINY2, [1], [1.0], lr=1e-2, batch_size=16, loss_positions="first")
    tr = EnsembleTrainer(TINY2, [1], [1.0], lr=1e-2, batch_size=16)
    with pytest.raises(ValueError, match=r"\(N, T\)"):
        tr.train_epoch(DATA.train_inputs[:, :1], DATA.train_targets)
    assert np.isfinite(tr.train_epoch(DATA.train_inputs, DATA.train_targets)).all()


def test_fast_kernels_keep_their_numbers() -> None:
    """The fast kernels' numbers are pinned: resume snapshots committed with the book (the paper run of
    chapters 2-3) continue only if a later version trains exactly as the one that wrote them.
    Changing the fast kernels on purpose means retraining those runs (and updating this value)."""
    tr = EnsembleTrainer(TINY2, [1, 2], [1.0, 1.0], lr=1e-2, batch_size=16, precision="fp32", fast=True)
    tr.train_epoch(DATA.train_inputs, DATA.train_targets)
    tr.fork([0], 0.0)  # a fork with a fresh optimizer, as the WD-off arm
    tr.reseed(2, 7)
    losses = [tr.train_epoch(DATA.train_inputs, DATA.train_targets) for _ in range(2)]
    np.testing.assert_allclose(np.asarray(losses), PINNED_FAST_LOSSES, rtol=1e-5)


#: Per-member mean training losses of the last two epochs above, as this version computes them.
PINNED_FAST_LOSSES = [[2.3462678, 2.3650248, 2.3933394], [2.2690039, 2.3171579, 2.2617213]]


@pytest.mark.parametrize(
    "flags, kernels, words",
    [
        ({"avx512f", "amx_bf16", "avx512_bf16"}, "amx", "on AMX"),
        ({"avx512f", "avx512_bf16"}, "avx512_bf16", "AVX512-BF16 dot products"),
        ({"avx2"}, "emulated", "expect it to run slower than fp32"),
    ],
)
def test_precision_names_the_bf16_kernels_of_the_cpu(monkeypatch, flags, kernels, words):
    from ace_helpers.toys import precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    assert precision.bf16_kernels() == kernels
    assert words in precision.describe("bf16")
    assert "fp32 throughout" in precision.describe("fp32")
