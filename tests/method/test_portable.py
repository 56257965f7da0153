"""ace_helpers.method.portable: the fused optimisers and the Gram–Schmidt orthonormalisation."""

from __future__ import annotations

import pytest
import torch

from ace_helpers.method import portable


def test_orthonormalize_is_qr_with_a_positive_diagonal() -> None:
    a = torch.randn(40, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    q = portable.orthonormalize(a)
    ref_q, ref_r = torch.linalg.qr(a)
    torch.testing.assert_close(q.T @ q, torch.eye(6, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(q, ref_q * torch.sign(torch.diagonal(ref_r)), atol=1e-12, rtol=0)


def test_orthonormalize_is_differentiable() -> None:
    a = torch.randn(20, 3, generator=torch.Generator().manual_seed(1), requires_grad=True)
    (portable.orthonormalize(a)[:, 0] @ torch.ones(20)).backward()
    assert a.grad is not None and torch.isfinite(a.grad).all() and a.grad.abs().max() > 0


@pytest.mark.parametrize("bad", [torch.zeros(3), torch.zeros(2, 3), torch.zeros(4, 2, dtype=torch.long), torch.zeros(4, 0)])
def test_orthonormalize_refuses_what_it_cannot_take(bad: torch.Tensor) -> None:
    with pytest.raises(ValueError, match="orthonormalize needs a \\(D, r\\) floating tensor with 1 <= r <= D"):
        portable.orthonormalize(bad)


def test_the_optimisers_are_torchs_on_the_fused_kernel() -> None:
    p = torch.nn.Parameter(torch.zeros(3))
    for opt in (portable.adam([p], lr=0.1), portable.adamw([p], lr=0.1, weight_decay=0.5)):
        assert opt.defaults["fused"] is True and opt.defaults["lr"] == 0.1
    assert isinstance(portable.adamw([p], lr=0.1, weight_decay=0.5), torch.optim.AdamW)
    assert portable.adamw([p], lr=0.1, weight_decay=0.5).defaults["weight_decay"] == 0.5
