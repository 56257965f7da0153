"""A training pass draws its dropout randomness up front: the same masks as drawing at each site, one graph to compile."""

from __future__ import annotations

import pytest
import torch

from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.ensemble import ToyEnsemble
from ace_helpers.toys.models import ToyConfig
from ace_helpers.toys.precision import autocast

set_threads(1)

ONE = ToyConfig(vocab=11, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=9)
TWO = ToyConfig(vocab=13, d_model=24, n_layers=2, n_heads=4, d_ff=40, max_len=12, dropout=0.3)


def _gens(seeds: tuple[int, ...] = (5, 6, 7)) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(s) for s in seeds]


def _tokens(config: ToyConfig, t: int) -> torch.Tensor:
    return torch.randint(0, config.vocab, (3, 10, t), generator=torch.Generator().manual_seed(0))


def _drawn_at_each_site(ens: ToyEnsemble, tokens: torch.Tensor, gens: list[torch.Generator], last_only: bool,
                        fast: bool) -> torch.Tensor:
    """The forward pass with every dropout site drawing from the generators itself (the library before pre-drawing)."""
    h = ens.embed(tokens)
    n = len(ens.layers)
    for i, block in enumerate(ens.layers):
        qkv = ens._first_qkv(tokens, last_only) if i == 0 else None
        h = block(h, ens.config.n_heads, ens.config.dropout, last_only and i == n - 1, gens, qkv, fast)
    M, B, T, D = h.shape
    logits = torch.baddbmm(ens.head_b[:, None, :], h.reshape(M, B * T, D), ens.head_w.transpose(1, 2)).view(M, B, T, -1)
    return logits[:, :, -1] if last_only else logits


@pytest.mark.parametrize("config", [ONE, TWO])
@pytest.mark.parametrize("last_only", [False, True])
@pytest.mark.parametrize("fast", [False, True])
def test_pre_drawn_masks_are_the_masks_drawn_at_each_site(config: ToyConfig, last_only: bool, fast: bool) -> None:
    ens = ToyEnsemble.from_seeds(config, [1, 2, 3]).train()
    # fast attention is taken up to 8 positions, the matrix-product attention beyond
    for t in (3, config.max_len):
        x = _tokens(config, t)
        with torch.no_grad():
            site = _drawn_at_each_site(ens, x, _gens(), last_only, fast)
            forward = ens(x, generators=_gens(), last_only=last_only, fast=fast)
            pre = ens(x, draws=ens.draw_dropout(_gens(), 10, t, last_only=last_only, fast=fast), last_only=last_only,
                      fast=fast)
            plain = ens.eval()(x, last_only=last_only, fast=fast)
            ens.train()
        assert torch.equal(forward, site)
        assert torch.equal(pre, site)
        assert (site - plain).abs().max() > 1e-3  # dropout really acted


def test_the_width_counts_every_site_and_nothing_in_eval() -> None:
    ens = ToyEnsemble.from_seeds(TWO, [1, 2]).train()
    B, T, H, D, F = 4, 5, 4, 24, 40
    per_block = B * H * T * T + 2 * B * T * D + B * T * F
    assert ens.dropout_width(B, T) == 2 * per_block
    last = B * H * T + 2 * B * D + B * F
    assert ens.dropout_width(B, T, last_only=True) == per_block + last
    assert ens.dropout_width(B, T, fast=True) == 2 * sum(-(-n // 4) for n in (B * H * T * T, B * T * D, B * T * F, B * T * D))
    assert ens.eval().dropout_width(B, T) == 0
    assert ToyEnsemble.from_seeds(ToyConfig(**{**TWO.__dict__, "dropout": 0.0}), [1]).train().dropout_width(B, T) == 0


def test_members_keep_their_own_streams() -> None:
    ens = ToyEnsemble.from_seeds(ONE, [1, 1]).train()  # two identical members
    draws = ens.draw_dropout(_gens((5, 6)), 10, 4, fast=True)
    assert draws.dtype == torch.int64 and draws.shape == (2, ens.dropout_width(10, 4, fast=True))
    x = _tokens(ONE, 4)[0]  # (B, T): the same batch for both
    out = ens(x, draws=draws, fast=True)
    assert not torch.equal(out[0], out[1])
    same = ens(x, draws=ens.draw_dropout(_gens((5, 5)), 10, 4, fast=True), fast=True)
    assert torch.equal(same[0], same[1])


def test_reference_masks_under_autocast_still_draw_at_each_site() -> None:
    ens = ToyEnsemble.from_seeds(ONE, [1, 2, 3]).train()
    x = _tokens(ONE, 4)
    with torch.no_grad(), autocast("bf16", "cpu"):
        forward = ens(x, generators=_gens())
        site = _drawn_at_each_site(ens, x, _gens(), False, False)
    assert torch.equal(forward, site)


def test_bad_draws_are_refused_before_the_pass() -> None:
    ens = ToyEnsemble.from_seeds(ONE, [1, 2, 3]).train()
    x = _tokens(ONE, 4)
    good = ens.draw_dropout(_gens(), 10, 4, fast=True)
    with pytest.raises(ValueError, match="not both"):
        ens(x, generators=_gens(), draws=good, fast=True)
    with pytest.raises(ValueError, match=r"draws must be \(3, \d+\) int64"):
        ens(x, draws=good[:, 1:], fast=True)
    with pytest.raises(ValueError, match="floating-point"):
        ens(x, draws=good)  # fast words for reference masks
    with pytest.raises(ValueError, match="one generator per member"):
        ens.draw_dropout(_gens()[:2], 10, 4)


def test_a_step_with_pre_drawn_masks_compiles_as_one_graph() -> None:
    import torch._dynamo

    ens = ToyEnsemble.from_seeds(TWO, [1, 2]).train()
    x = _tokens(TWO, 5)[:2]

    def step(draws: torch.Tensor | None, gens: list[torch.Generator] | None) -> torch.Tensor:
        return ens(x, draws=draws, generators=gens, fast=True).square().mean()

    torch._dynamo.reset()
    pre = torch._dynamo.explain(step)(ens.draw_dropout(_gens((1, 2)), 10, 5, fast=True), None)
    torch._dynamo.reset()
    drawn = torch._dynamo.explain(step)(None, _gens((1, 2)))
    torch._dynamo.reset()
    assert pre.graph_break_count == 0 and pre.graph_count == 1
    assert drawn.graph_break_count > 0  # generator calls split the step: what the pre-drawn tensor avoids
