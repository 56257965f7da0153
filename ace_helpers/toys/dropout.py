"""Dropout masks for an ensemble whose members each draw from their own ``torch.Generator``.

A member's mask at a dropout site comes from its generator, either drawn at the site or taken from
randomness drawn for the whole forward pass before it runs (:class:`DrawCursor`, filled by
:meth:`~ace_helpers.toys.ensemble.ToyEnsemble.draw_dropout`).  On a CPU the two give the same masks,
bit for bit: the generator's stream does not depend on how it is cut into draws.  A pass that takes
its randomness as a tensor has no generator calls, so ``torch.compile`` traces it as one graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn import functional as F


def draws_per_site(n: int, fast: bool) -> int:
    """Draws one member's dropout mask of ``n`` elements takes: ``n`` uniform floats, or ``ceil(n / 4)``
    64-bit words for ``fast`` masks (16 random bits per element)."""
    return -(-n // 4) if fast else n


def draw(generators: Sequence[torch.Generator], width: int, fast: bool, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(M, width): row ``m`` is the next ``width`` draws of ``generators[m]``, int64 words for ``fast``
    masks (all 64 bits random), else uniform floats in [0, 1) of ``dtype``."""
    draws = torch.empty((len(generators), width), dtype=torch.int64 if fast else dtype, device=device)
    for m, g in enumerate(generators):
        if fast:
            draws[m].random_(-(2**63), 2**63 - 1, generator=g)
        else:
            draws[m].uniform_(generator=g)
    return draws


class DrawCursor:
    """Pre-drawn dropout randomness (M, n), handed out to the dropout sites in the order they run."""

    def __init__(self, draws: torch.Tensor) -> None:
        self.draws = draws
        self.used = 0

    def take(self, k: int) -> torch.Tensor:
        """The next ``k`` draws of every member: (M, k), a view."""
        out = self.draws[:, self.used : self.used + k]
        self.used += k
        return out


#: where a dropout site's randomness comes from: one generator per member (drawn at the site), the
#: forward pass's pre-drawn randomness, or ``None`` (torch's global RNG)
DropoutRandomness = Sequence[torch.Generator] | DrawCursor | None


def apply_dropout(x: torch.Tensor, p: float, rng: DropoutRandomness, fast: bool = False) -> torch.Tensor:
    """Inverted dropout on a (M, ...) tensor; member ``m``'s mask comes from ``rng``'s row ``m``.

    The reference masks compare one uniform float per element with ``p``.  ``fast`` masks
    compare 16 random bits per element with ``p`` rounded to a multiple of 1/65536 (and scale
    by the rounded keep rate, so the expectation is exact): one 64-bit draw of member ``m``'s
    generator makes four masks, about 3x cheaper to draw than the floats.  Drawn at the site from
    member ``m``'s generator or taken from the forward pass's pre-drawn randomness, the masks are the
    same when the pre-drawn randomness came from the same generators (:meth:`~ace_helpers.toys.ensemble.ToyEnsemble.draw_dropout`).
    """
    if p == 0.0:
        return x
    if rng is None:
        return F.dropout(x, p, training=True)
    n = x[0].numel()
    k = draws_per_site(n, fast)
    draws = rng.take(k) if isinstance(rng, DrawCursor) else draw(rng, k, fast, x.dtype, x.device)  # (M, k)
    if fast:
        cut = round(p * 65536)  # drop the 16-bit values below -32768 + cut
        bits = draws.view(torch.int16)[:, :n].reshape(x.shape)
        return x * (bits >= cut - 32768).to(x.dtype).mul_(65536.0 / (65536 - cut))
    # 1.0 where the uniform is >= p, scaled by the keep rate
    return x * draws.reshape(x.shape).ge(p).to(x.dtype).mul_(1.0 / (1.0 - p))
