"""The DEVICE knob: its forms, the refusal of a device this machine lacks, and the trainers' device path.

On a machine without a GPU the device path runs with ``device="cpu"`` given explicitly: it must give the numbers
of the default path exactly.  Tests that need CUDA are skipped with a reason where there is none.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers.method.devices import (
    DEVICE_FORMS,
    available_devices,
    check_device,
    describe_device,
    device_kind,
    resolve_device,
)
from ace_helpers.toys.ensemble_runs import train_ensemble, train_seeds
from ace_helpers.toys.ensemble_trainer import EnsembleTrainer
from ace_helpers.toys.models import ToyConfig, build_model
from ace_helpers.toys.train import train_lm

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: nothing to refuse")


def test_forms_are_normalised_and_auto_resolves_to_what_is_there():
    assert check_device("DEVICE", " CPU ") == "cpu"
    assert check_device("DEVICE", "auto") == "auto"
    assert check_device("DEVICE", torch.device("cpu")) == "cpu"
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert device_kind("cpu") == "cpu"
    assert "cpu" in available_devices()
    assert describe_device("cpu").startswith("DEVICE='cpu': cpu")


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cuda:", "tpu", "", 0, None, ["cpu"]])
def test_malformed_devices_are_refused_naming_the_forms(bad):
    with pytest.raises(ValueError, match=r"DEVICE=.* is not allowed: DEVICE must be one of \['auto', 'cpu', 'cuda'"):
        check_device("DEVICE", bad)
    assert "cuda:N" in DEVICE_FORMS


@no_cuda
@pytest.mark.parametrize("absent", ["cuda", "cuda:0", "cuda:3"])
def test_an_absent_cuda_is_refused_naming_what_this_machine_has(absent):
    with pytest.raises(ValueError, match=r"is not allowed here: .*this machine has \['cpu'"):
        check_device("DEVICE", absent)


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has an Apple GPU")
def test_an_absent_apple_gpu_is_refused():
    with pytest.raises(ValueError, match="DEVICE='mps' is not allowed here"):
        check_device("DEVICE", "mps")


def _data(n: int = 64, seq: int = 6, vocab: int = 7, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (n, seq + 1), generator=g)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


CONFIG = ToyConfig(vocab=7, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=8, dropout=0.1)


def test_train_lm_on_an_explicit_cpu_gives_the_default_numbers_and_returns_the_model_home():
    x, y = _data()
    runs = []
    for device in (None, "cpu"):
        model = build_model(CONFIG, 3)
        torch.manual_seed(5)
        log = train_lm(model, x, y, epochs=2, batch_size=16, lr=1e-2, weight_decay=0.1, seed=1, device=device)
        runs.append((log.loss, [p.detach().clone() for p in model.parameters()]))
        assert next(model.parameters()).device.type == "cpu"
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))


def test_train_ensemble_and_the_trainer_on_an_explicit_cpu_give_the_default_numbers():
    x, y = _data()
    a = train_ensemble(CONFIG, x, y, seeds=[1, 2], weight_decays=[0.1, 0.0], batch_size=16, lr=1e-2, max_steps=9,
                       eval_every=9, keep_models=True, progress=False, loss_positions="all")
    b = train_ensemble(CONFIG, x, y, seeds=[1, 2], weight_decays=[0.1, 0.0], batch_size=16, lr=1e-2, max_steps=9,
                       eval_every=9, keep_models=True, progress=False, loss_positions="all", device="cpu")
    assert a.loss == b.loss and np.array_equal(a.steps, b.steps)
    for ma, mb in zip(a.models, b.models):
        assert all(torch.equal(p, q) for p, q in zip(ma.parameters(), mb.parameters()))
    losses = []
    for device in ("cpu", torch.device("cpu")):
        trainer = EnsembleTrainer(CONFIG, [1, 2], [0.1, 0.0], lr=1e-2, batch_size=16, loss_positions="all", device=device)
        losses.append([trainer.train_epoch(x, y) for _ in range(2)])
    assert all(np.array_equal(p, q) for p, q in zip(*losses))


def test_the_sequential_method_refuses_another_device():
    x, y = _data()
    with pytest.raises(ValueError, match="trains on the CPU only"):
        train_seeds(CONFIG, x, y, [1], epochs=1, batch_size=16, lr=1e-2, method="sequential", device="meta")


@pytest.mark.cuda
def test_the_ensemble_trains_on_cuda_with_independent_members():
    x, y = _data()
    both = train_ensemble(CONFIG, x, y, seeds=[1, 2], weight_decays=[0.0, 0.0], batch_size=16, lr=1e-2, max_steps=8,
                          eval_every=8, keep_models=True, progress=False, loss_positions="all", device="cuda")
    alone = train_ensemble(CONFIG, x, y, seeds=[2], weight_decays=[0.0], batch_size=16, lr=1e-2, max_steps=8,
                           eval_every=8, keep_models=True, progress=False, loss_positions="all", device="cuda")
    assert next(both.models[1].parameters()).device.type == "cpu"
    for p, q in zip(both.models[1].parameters(), alone.models[0].parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_training_on_the_device_follows_fp32_and_keeps_fp32_weights(device):
    """bf16 autocast on ``device`` (the default on GPUs that support it) differs from the fp32 run but tracks its
    losses closely over a short run; the master weights stay fp32 and come back to the CPU."""
    x, y = _data(n=128)
    runs = {}
    for precision in ("fp32", "bf16"):
        runs[precision] = train_ensemble(CONFIG, x, y, seeds=[1, 2], weight_decays=[0.1, 0.0], batch_size=16, lr=3e-3,
                                         max_steps=16, eval_every=4, keep_models=True, progress=False,
                                         loss_positions="all", track_loss=True, precision=precision, device=device)
    fp32, bf16 = (np.asarray(runs[k].loss, dtype=float) for k in ("fp32", "bf16"))
    assert np.isfinite(bf16).all() and fp32.shape == bf16.shape
    assert not np.array_equal(bf16, fp32)  # the bf16 kernels ran
    assert np.abs(bf16 - fp32).max() <= 0.01 * np.abs(fp32).max()  # measured on a CPU: 2e-4 of the loss
    for model in runs["bf16"].models:
        assert all(p.dtype == torch.float32 and p.device.type == "cpu" for p in model.parameters())


@pytest.mark.parametrize("device", DEVICES)
def test_the_markov_trainers_run_on_the_device_and_return_models_home(device):
    """Chapter 1's two training paths (the batched ensemble and one model at a time) on ``device``: finite losses,
    models back on the CPU; the sequential path is the CPU's only."""
    x, y = _data()
    res = train_seeds(CONFIG, x, y, [1, 2], epochs=2, batch_size=16, lr=1e-2, device=device)
    assert len(res.models) == 2
    assert all(next(m.parameters()).device.type == "cpu" for m in res.models)
    model = build_model(CONFIG, 3)
    log = train_lm(model, x, y, epochs=2, batch_size=16, lr=1e-2, weight_decay=0.1, seed=1, device=device)
    assert np.isfinite(log.loss).all() and next(model.parameters()).device.type == "cpu"
