"""The vectorised ensemble must be M ToyTransformers, exactly: same outputs, same training."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.ensemble import EnsembleAdamW, ToyEnsemble, ensemble_accuracy
from ace_helpers.toys.ensemble_runs import train_ensemble
from ace_helpers.toys.models import ToyConfig, build_model
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import accuracy, train_lm

set_threads(1)

TINY = ToyConfig(vocab=11, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=2)
TINY2 = ToyConfig(vocab=11, d_model=16, n_layers=2, n_heads=4, d_ff=24, max_len=3)


def _tokens(config: ToyConfig, n: int, t: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, config.vocab, (n, t), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("config", [TINY, TINY2])
def test_forward_matches_each_toy_transformer(config: ToyConfig) -> None:
    models = [build_model(config, s) for s in (0, 1, 2)]
    ens = ToyEnsemble.from_models(models).eval()
    x = _tokens(config, 20, config.max_len)
    with torch.no_grad():
        full = ens(x)
        last = ens(x, last_only=True)
        per_member = ens(torch.stack([x, x.flip(0), x]))
        for m, model in enumerate(models):
            ref = model.eval()(x)
            torch.testing.assert_close(full[m], ref, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(last[m], ref[:, -1], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(per_member[1], models[1](x.flip(0)), atol=1e-5, rtol=1e-5)
    # the models really differ, so the check above is not trivially true
    assert (full[0] - full[1]).abs().max() > 1e-2


def test_member_unstacks_identical_model_after_training() -> None:
    data = modadd_dataset(11, 0.5, 0)
    run = train_ensemble(
        TINY, data.train_inputs, data.train_targets, seeds=[3, 4], weight_decays=[1.0, 0.1],
        batch_size=16, lr=1e-2, max_steps=12, eval_every=4, keep_models=True, progress=False,
    )
    ens = ToyEnsemble.from_models(run.models).eval()
    with torch.no_grad():
        for m in range(2):
            back = ens.member(m)
            assert torch.equal(back(data.test_inputs), run.models[m](data.test_inputs)) or torch.allclose(
                back(data.test_inputs), run.models[m](data.test_inputs), atol=1e-6
            )
            for (n1, a), (n2, b) in zip(back.named_parameters(), run.models[m].named_parameters()):
                assert n1 == n2 and torch.equal(a, b)
    assert not torch.allclose(run.models[0].lm_head.weight, build_model(TINY, 3).lm_head.weight)


def test_training_matches_one_by_one_without_dropout() -> None:
    """Dropout off: ensemble training == train_lm per member (same init, data order, AdamW, ω)."""
    config = ToyConfig(vocab=11, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=2, dropout=0.0)
    data = modadd_dataset(11, 0.5, 0)  # 60 train pairs
    seeds, wds, bs, epochs = [5, 6, 7], [0.3, 1.0, 3.0], 16, 3
    steps = epochs * -(-data.train_inputs.shape[0] // bs)
    run = train_ensemble(
        config, data.train_inputs, data.train_targets, seeds=seeds, weight_decays=wds,
        batch_size=bs, lr=1e-2, max_steps=steps, eval_every=5, keep_models=True, progress=False,
    )
    assert run.steps.tolist() == [steps] * 3
    for seed, wd, got in zip(seeds, wds, run.models):
        ref = build_model(config, seed)
        train_lm(ref, data.train_inputs, data.train_targets, epochs=epochs, batch_size=bs, lr=1e-2,
                 weight_decay=wd, seed=seed, loss_positions="last")
        D = config.d_model
        for (name, a), (_, b) in zip(got.named_parameters(), ref.named_parameters()):
            if name.endswith("in_proj_bias"):
                # the key bias has an exactly-zero gradient (softmax is shift invariant), so Adam
                # turns rounding noise into +-lr steps: it differs between implementations but
                # cannot change any output.  Compare the query and value biases only.
                a, b = torch.cat([a[:D], a[2 * D :]]), torch.cat([b[:D], b[2 * D :]])
            torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4, msg=name)
        with torch.no_grad():
            torch.testing.assert_close(got(data.test_inputs), ref(data.test_inputs), atol=2e-5, rtol=1e-4)
    # different ω gave different weights
    assert not torch.allclose(run.models[0].lm_head.weight, run.models[2].lm_head.weight, atol=1e-3)


@pytest.mark.parametrize("fork_at", [None, 2])
def test_adamw_per_member_weight_decay_matches_torch_bit_for_bit(fork_at: int | None) -> None:
    """Each member's update is exactly torch's fused AdamW on the member alone, with its own weight
    decay (0.3 is not a float32 number: the decay is taken in float64, as torch takes it), and, after
    members of another age join (``fork_at``), with its own step count."""
    torch.manual_seed(0)
    w = torch.randn(3, 4, 5)
    grads = [torch.randn(4, 4, 5) for _ in range(5)]
    wds = [0.0, 0.3, 2.0]
    p = torch.nn.Parameter(w.clone())
    opt = EnsembleAdamW([p], lr=1e-2, weight_decay=wds)
    refs = [torch.nn.Parameter(w[m].clone()) for m in range(3)]
    ref_opts = [torch.optim.AdamW([refs[m]], lr=1e-2, weight_decay=wds[m], fused=True) for m in range(3)]
    for step, g in enumerate(grads):
        if step == fork_at:  # a fresh member (a copy of member 0, weight decay 0) joins with step count 0
            p = torch.nn.Parameter(torch.cat([p.detach(), p.detach()[:1]]))
            opt.extend([0.0], [p])
            refs.append(torch.nn.Parameter(refs[0].detach().clone()))
            ref_opts.append(torch.optim.AdamW([refs[3]], lr=1e-2, weight_decay=0.0, fused=True))
        p.grad = g[: p.shape[0]].clone()
        opt.step()
        for m in range(len(refs)):
            refs[m].grad = g[m].clone()
            ref_opts[m].step()
    for m in range(len(refs)):
        assert torch.equal(p.data[m], refs[m].data), m


def test_member_trajectory_independent_of_ensemble_company() -> None:
    """Per-member generators: with dropout on, a member trains the same alone or in company."""
    data = modadd_dataset(11, 0.5, 0)
    kw = dict(batch_size=16, lr=1e-2, max_steps=8, eval_every=4, keep_models=True, progress=False)
    both = train_ensemble(TINY, data.train_inputs, data.train_targets, seeds=[1, 2], weight_decays=[1.0, 0.5], **kw)
    alone = train_ensemble(TINY, data.train_inputs, data.train_targets, seeds=[2], weight_decays=[0.5], **kw)
    for a, b in zip(both.models[1].parameters(), alone.models[0].parameters()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    again = train_ensemble(TINY, data.train_inputs, data.train_targets, seeds=[1, 2], weight_decays=[1.0, 0.5], **kw)
    for a, b in zip(both.models[0].parameters(), again.models[0].parameters()):
        assert torch.equal(a, b)  # deterministic


def test_dropout_active_in_training_only() -> None:
    ens = ToyEnsemble.from_seeds(TINY, [0, 1])
    x = _tokens(TINY, 30, 2)
    gens = lambda: [torch.Generator().manual_seed(9), torch.Generator().manual_seed(10)]  # noqa: E731
    ens.train()
    a, b = ens(x, generators=gens()), ens(x, generators=gens())
    assert torch.equal(a, b)
    ens.eval()
    c = ens(x)
    assert (a - c).abs().max() > 1e-3


def test_members_leave_and_rest_continue() -> None:
    data = modadd_dataset(11, 0.5, 0)
    calls = []

    def evaluate(step, ens, ids):
        calls.append((step, ids.tolist()))
        assert ens.n_members == len(ids)
        return ids == 0  # member 0 leaves at the first evaluation

    run = train_ensemble(TINY, data.train_inputs, data.train_targets, seeds=[0, 1, 2], weight_decays=[1, 1, 1],
                         batch_size=16, lr=1e-3, max_steps=9, eval_every=3, evaluate=evaluate, progress=False)
    assert run.steps.tolist() == [3, 9, 9]
    assert calls == [(3, [0, 1, 2]), (6, [1, 2]), (9, [1, 2])]


def test_select_keeps_member_outputs() -> None:
    ens = ToyEnsemble.from_seeds(TINY, [0, 1, 2]).eval()
    x = _tokens(TINY, 10, 2)
    with torch.no_grad():
        before = ens(x)
        ens.select([2, 0])
        after = ens(x)
    assert ens.n_members == 2
    torch.testing.assert_close(after[0], before[2])
    torch.testing.assert_close(after[1], before[0])


def test_ensemble_accuracy_matches_plain_accuracy() -> None:
    data = modadd_dataset(11, 0.5, 0)
    models = [build_model(TINY, s) for s in (0, 1)]
    acc = ensemble_accuracy(ToyEnsemble.from_models(models), data.test_inputs, data.test_answers)
    for m, model in enumerate(models):
        assert acc[m] == pytest.approx(accuracy(model, data.test_inputs, data.test_targets, positions="last"))


def test_bad_inputs_raise() -> None:
    data = modadd_dataset(11, 0.5, 0)
    with pytest.raises(ValueError, match="seeds and weight_decays"):
        train_ensemble(TINY, data.train_inputs, data.train_targets, seeds=[0, 1], weight_decays=[1.0],
                       batch_size=8, lr=1e-3, max_steps=1, eval_every=1, progress=False)
    with pytest.raises(ValueError, match="eval_every"):
        train_ensemble(TINY, data.train_inputs, data.train_targets, seeds=[0], weight_decays=[1.0],
                       batch_size=8, lr=1e-3, max_steps=1, eval_every=0, progress=False)
    ens = ToyEnsemble.from_seeds(TINY, [0, 1])
    with pytest.raises(ValueError, match="tokens must be"):
        ens(torch.zeros(3, 4, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="member index"):
        ens.member(2)
    with pytest.raises(ValueError, match="one ToyConfig"):
        ToyEnsemble.from_models([build_model(TINY, 0), build_model(TINY2, 0)])
    with pytest.raises(ValueError, match="weight_decay"):
        EnsembleAdamW(list(ens.parameters()), lr=1e-3, weight_decay=[1.0, 1.0, 1.0])
    assert np.isfinite(ensemble_accuracy(ens, data.test_inputs, data.test_answers)).all()


def test_all_positions_loss_is_bit_identical_to_the_former_markov_loop() -> None:
    """``loss_positions="all"`` reproduces the chapter-1 loop it replaced, bit for bit (ragged last batch too)."""
    from reference import train_ensemble_all_positions

    from ace_helpers.toys.ensemble_runs import train_seeds
    from ace_helpers.toys.tasks.markov import PAPER_CHAIN, markov_dataset

    d = markov_dataset(PAPER_CHAIN, 50, 4, 9)
    cfg = ToyConfig(vocab=4, d_model=16, n_layers=1, n_heads=4, max_len=64, dropout=0.1)
    ref_models, ref_loss = train_ensemble_all_positions(cfg, d.train_inputs, d.train_targets, [0, 100],
                                                        epochs=3, batch_size=16, lr=1e-3)
    new = train_seeds(cfg, d.train_inputs, d.train_targets, [0, 100], epochs=3, batch_size=16, lr=1e-3)
    assert new.loss == ref_loss and len(new.loss[0]) == 3
    for a, b in zip(ref_models, new.models):
        for x, y in zip(a.parameters(), b.parameters()):
            assert torch.equal(x, y)


def test_track_loss_on_the_last_position_does_not_change_training() -> None:
    data = modadd_dataset(11, 0.5, 0)
    kw = dict(seeds=[1, 2], weight_decays=[1.0, 0.5], batch_size=16, lr=1e-2, max_steps=8, eval_every=8,
              keep_models=True, progress=False)
    plain = train_ensemble(TINY, data.train_inputs, data.train_targets, **kw)
    tracked = train_ensemble(TINY, data.train_inputs, data.train_targets, track_loss=True, **kw)
    assert plain.loss == [] and len(tracked.loss) == 2 and all(np.isfinite(tracked.loss[0]))
    for a, b in zip(plain.models[0].parameters(), tracked.models[0].parameters()):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="loss_positions"):
        train_ensemble(TINY, data.train_inputs, data.train_targets, loss_positions="first", **kw)
