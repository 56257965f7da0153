"""Train many :class:`~ace_helpers.toys.models.ToyTransformer` s at once as one vectorised ensemble.

Every parameter of ``M`` toy transformers is stacked along a leading *member* dimension and
the forward pass is written with batched matrix products (``torch.baddbmm``), so one Python
step trains all members.  The maths is exactly that of ``ToyTransformer``: token + learned
positional embedding, stock post-LN ``nn.TransformerEncoderLayer`` blocks (ReLU, dropout on the
attention weights, after attention, inside and after the feed-forward block), a causal mask
and a linear unembedding.  :meth:`ToyEnsemble.member` unstacks one member into a plain
``ToyTransformer`` whose outputs equal the ensemble's (tested in ``tests/toys/test_ensemble.py``).

What makes it a *sweep* engine rather than ``M`` copies of one run:

* per-member AdamW weight decay (:class:`EnsembleAdamW`), so all ω of one p train together;
* per-member data order and dropout masks, each from its own seeded ``torch.Generator``: a
  member's trajectory does not depend on which other members share the ensemble;
* a training pass draws every member's dropout randomness once, before it runs
  (:meth:`ToyEnsemble.draw_dropout`): one generator call per member and step, and a step that takes
  that randomness as a tensor compiles (``torch.compile``) to one graph;
* a batched evaluation of all members (:func:`ensemble_accuracy`);
* members can leave the ensemble (:meth:`ToyEnsemble.select`), so the remaining ones run faster.

The training loops are :mod:`ace_helpers.toys.ensemble_runs` (a whole run in one call) and
:mod:`ace_helpers.toys.ensemble_trainer` (one epoch at a time, for runs whose members fork).

``last_only=True`` computes only the last position's output in the final block (queries,
feed-forward and unembedding at the last position; keys/values everywhere).  With a causal
mask this is exactly the last row of the full forward pass, at a fraction of the cost when the
loss is on the last token only (modular addition).  The first block's attention projections are
read from per-token tables (its input takes only ``max_len * vocab`` distinct values), which is
exact too and saves most of the projection work when the batch is much larger than the vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ace_helpers.toys.dropout import DrawCursor, DropoutRandomness, apply_dropout, draw, draws_per_site
from ace_helpers.toys.ensemble_optim import EnsembleAdamW  # noqa: F401 - part of this module's API
from ace_helpers.toys.models import ToyConfig, ToyTransformer, build_model

# name in a stacked block -> (dotted name in nn.TransformerEncoderLayer)
_BLOCK_PARAMS = {
    "in_w": "self_attn.in_proj_weight",  # (3D, D)
    "in_b": "self_attn.in_proj_bias",  # (3D,)
    "out_w": "self_attn.out_proj.weight",  # (D, D)
    "out_b": "self_attn.out_proj.bias",  # (D,)
    "ln1_w": "norm1.weight",
    "ln1_b": "norm1.bias",
    "ff1_w": "linear1.weight",  # (F, D)
    "ff1_b": "linear1.bias",  # (F,)
    "ff2_w": "linear2.weight",  # (D, F)
    "ff2_b": "linear2.bias",  # (D,)
    "ln2_w": "norm2.weight",
    "ln2_b": "norm2.bias",
}
DROPOUT_SEED_OFFSET = 1_000_003  # member m's dropout generator is seeded seeds[m] + this
_TOP_PARAMS = {"tok_emb": "tok_emb.weight", "pos_emb": "pos_emb.weight", "head_w": "lm_head.weight", "head_b": "lm_head.bias"}


#: ``fast`` attention multiplies queries and keys elementwise (no matrix products) up to this context length.
SMALL_CONTEXT = 8


class _StackedBlock(nn.Module):
    """One post-LN encoder block for M members; parameters have a leading member dimension."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        super().__init__()
        for name in _BLOCK_PARAMS:
            self.register_parameter(name, nn.Parameter(tensors[name].clone()))

    def forward(
        self,
        x: torch.Tensor,
        n_heads: int,
        dropout: float,
        last_only: bool,
        rng: DropoutRandomness,
        qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
        fast: bool = False,
    ) -> torch.Tensor:
        """x (M, B, T, D) -> (M, B, T', D) with T' = 1 if ``last_only`` else T.

        ``qkv``, when given, is the already computed attention input of ``x``: queries
        (M, B, H, T', hd), keys and values (M, B, H, T, hd) (the first block gets them from
        per-token tables, see ``ToyEnsemble._first_qkv``).  ``fast``: the same maths with
        cheaper kernels (elementwise attention for contexts up to :data:`SMALL_CONTEXT`, fast
        dropout masks, see :func:`~ace_helpers.toys.dropout.apply_dropout`); the numbers differ from the reference kernels
        by rounding, and the dropout masks by their random stream.
        """
        M, B, T, D = x.shape
        hd = D // n_heads
        drop = dropout if self.training else 0.0
        if qkv is not None:
            q, k, v = qkv
            Tq = q.shape[3]
            x_q = x[:, :, -Tq:]
        elif last_only:
            # keys/values at every position, queries at the last one only
            kv = torch.baddbmm(self.in_b[:, None, D:], x.reshape(M, B * T, D), self.in_w[:, D:].transpose(1, 2))
            k, v = kv.view(M, B, T, 2, n_heads, hd).permute(3, 0, 1, 4, 2, 5)  # (M, B, H, T, hd) each
            x_q = x[:, :, -1:]
            q = torch.baddbmm(self.in_b[:, None, :D], x_q.reshape(M, B, D), self.in_w[:, :D].transpose(1, 2))
            q = q.view(M, B, 1, n_heads, hd).transpose(2, 3)  # (M, B, H, 1, hd)
            Tq = 1
        else:
            qkv = torch.baddbmm(self.in_b[:, None, :], x.reshape(M, B * T, D), self.in_w.transpose(1, 2))
            q, k, v = qkv.view(M, B, T, 3, n_heads, hd).permute(3, 0, 1, 4, 2, 5)
            x_q = x
            Tq = T
        if Tq == 1:
            # one query: elementwise products beat M*B*H tiny matrix products
            scores = (q * k).sum(-1) / math.sqrt(hd)  # (M, B, H, T)
            attn = scores.softmax(-1)
            if drop:
                attn = apply_dropout(attn, drop, rng, fast)
            ctx = (attn.unsqueeze(-1) * v).sum(-2).reshape(M, B, D)  # (M, B, H, hd) -> (M, B, D)
        elif fast and T <= SMALL_CONTEXT:
            # a few positions: broadcast products beat M*B*H tiny matrix products
            scores = (q.unsqueeze(-2) * k.unsqueeze(-3)).sum(-1) / math.sqrt(hd)  # (M, B, H, Tq, T)
            causal = torch.ones(Tq, T, dtype=torch.bool, device=x.device).triu(1)
            attn = scores.masked_fill(causal, float("-inf")).softmax(-1)
            if drop:
                attn = apply_dropout(attn, drop, rng, fast)
            ctx = (attn.unsqueeze(-1) * v.unsqueeze(-3)).sum(-2)  # (M, B, H, Tq, hd)
            ctx = ctx.transpose(2, 3).reshape(M, B * Tq, D)
        else:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)  # (M, B, H, Tq, T)
            causal = torch.ones(Tq, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(causal, float("-inf"))
            attn = scores.softmax(-1)
            if drop:
                attn = apply_dropout(attn, drop, rng, fast)
            ctx = (attn @ v).transpose(2, 3).reshape(M, B * Tq, D)
        sa = torch.baddbmm(self.out_b[:, None, :], ctx, self.out_w.transpose(1, 2)).view(M, B, Tq, D)
        if drop:
            sa = apply_dropout(sa, drop, rng, fast)
        h = F.layer_norm(x_q + sa, (D,)) * self.ln1_w[:, None, None, :] + self.ln1_b[:, None, None, :]
        f = torch.baddbmm(self.ff1_b[:, None, :], h.reshape(M, B * Tq, D), self.ff1_w.transpose(1, 2)).relu()
        if drop:
            f = apply_dropout(f, drop, rng, fast)
        f = torch.baddbmm(self.ff2_b[:, None, :], f, self.ff2_w.transpose(1, 2)).view(M, B, Tq, D)
        if drop:
            f = apply_dropout(f, drop, rng, fast)
        return F.layer_norm(h + f, (D,)) * self.ln2_w[:, None, None, :] + self.ln2_b[:, None, None, :]


class ToyEnsemble(nn.Module):
    """``M`` toy transformers with stacked weights.

    ``forward(tokens (M, B, T) long) -> logits (M, B, T, vocab)`` (or ``(M, B, vocab)`` with
    ``last_only=True``); member ``m`` sees only ``tokens[m]``.  Build it with
    :meth:`from_models` or :meth:`from_seeds`; get member ``m`` back with :meth:`member`.
    """

    def __init__(self, config: ToyConfig, tensors: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.config = config
        for name in _TOP_PARAMS:
            self.register_parameter(name, nn.Parameter(tensors[name].clone()))
        self.layers = nn.ModuleList(
            _StackedBlock({k: tensors[f"layers.{i}.{k}"] for k in _BLOCK_PARAMS}) for i in range(config.n_layers)
        )

    @property
    def n_members(self) -> int:
        """Number of members M."""
        return self.tok_emb.shape[0]

    @classmethod
    def from_models(cls, models: Sequence[ToyTransformer]) -> ToyEnsemble:
        """Stack the weights of ``models`` (all with the same :class:`ToyConfig`)."""
        if len(models) == 0:
            raise ValueError("models must be a non-empty sequence of ToyTransformer")
        config = models[0].config
        if any(m.config != config for m in models):
            raise ValueError("all models of an ensemble must share one ToyConfig")
        states = [dict(m.named_parameters()) for m in models]
        tensors = {k: torch.stack([s[v].detach() for s in states]) for k, v in _TOP_PARAMS.items()}
        for i in range(config.n_layers):
            for k, v in _BLOCK_PARAMS.items():
                tensors[f"layers.{i}.{k}"] = torch.stack([s[f"layers.{i}.{v}"].detach() for s in states])
        return cls(config, tensors)

    @classmethod
    def from_seeds(cls, config: ToyConfig, seeds: Sequence[int]) -> ToyEnsemble:
        """Members initialised exactly like ``build_model(config, seed)`` for each seed."""
        return cls.from_models([build_model(config, int(s)) for s in seeds])

    @torch.no_grad()
    def member(self, m: int) -> ToyTransformer:
        """A plain :class:`ToyTransformer` holding member ``m``'s current weights, on the CPU (where the analyses run)."""
        if not 0 <= m < self.n_members:
            raise ValueError(f"member index m={m} out of range [0, {self.n_members})")
        model = ToyTransformer(self.config)
        params = dict(model.named_parameters())
        for k, v in _TOP_PARAMS.items():
            params[v].copy_(getattr(self, k)[m])
        for i, block in enumerate(self.layers):
            for k, v in _BLOCK_PARAMS.items():
                params[f"layers.{i}.{v}"].copy_(getattr(block, k)[m])
        return model.eval()

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """(M, B, T) long -> (M, B, T, D): token + positional embedding per member."""
        M, _, T = tokens.shape
        V, D = self.config.vocab, self.config.d_model
        offsets = (torch.arange(M, device=tokens.device) * V)[:, None, None]
        tok = F.embedding(tokens + offsets, self.tok_emb.reshape(M * V, D))
        return tok + self.pos_emb[:, None, :T, :]

    def _first_qkv(self, tokens: torch.Tensor, last_only: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries (M, B, H, T', hd), keys and values (M, B, H, T, hd) of the first block, read
        from tables (T' = 1 if ``last_only`` and the model has one block, else T).

        The first block's input at position t is ``tok_emb[token] + pos_emb[t]``, so its
        projections take only T * vocab distinct values per member: compute those once
        (M, T * V, 3D) and gather, instead of projecting all B * T inputs.
        """
        M, B, T = tokens.shape
        V, D, H = self.config.vocab, self.config.d_model, self.config.n_heads
        block = self.layers[0]
        inp = (self.tok_emb[:, None, :, :] + self.pos_emb[:, :T, None, :]).reshape(M, T * V, D)
        table = torch.baddbmm(block.in_b[:, None, :], inp, block.in_w.transpose(1, 2))  # (M, T*V, 3D)
        offsets = (torch.arange(M, device=tokens.device) * (T * V))[:, None, None] + (torch.arange(T, device=tokens.device) * V)[
            None, None, :
        ]
        idx = tokens + offsets  # (M, B, T) rows of the flattened table
        q_idx = idx[:, :, -1:] if last_only and len(self.layers) == 1 else idx

        def gather(rows: torch.Tensor, part: int) -> torch.Tensor:
            flat = table[..., part * D : (part + 1) * D].reshape(M * T * V, D)
            out = F.embedding(rows, flat)  # (M, B, t, D)
            return out.view(M, B, rows.shape[2], H, D // H).transpose(2, 3)

        return gather(q_idx, 0), gather(idx, 1), gather(idx, 2)

    def dropout_width(self, batch: int, length: int, *, last_only: bool = False, fast: bool = False) -> int:
        """Draws per member that one forward pass's dropout masks take (0 in eval mode or without dropout).

        Args:
            batch, length: the tokens' B and T.  last_only, fast: as in :meth:`forward`.
        """
        if not self.training or self.config.dropout == 0.0:
            return 0
        B, T, H, D = int(batch), int(length), self.config.n_heads, self.config.d_model
        d_ff = self.layers[0].ff1_w.shape[1]
        n = len(self.layers)
        total = 0
        for i in range(n):
            Tq = 1 if last_only and i == n - 1 else T
            # the block's sites in the order they run: attention weights, attention output, feed-forward inside, after
            for numel in (B * H * Tq * T, B * Tq * D, B * Tq * d_ff, B * Tq * D):
                total += draws_per_site(numel, fast)
        return total

    def draw_dropout(
        self, generators: Sequence[torch.Generator], batch: int, length: int, *, last_only: bool = False, fast: bool = False
    ) -> torch.Tensor:
        """Every member's dropout randomness for one forward pass, drawn before it: one draw call per member.

        ``forward(tokens, draws=...)`` then masks exactly as ``forward(tokens, generators=...)`` would
        have with the same generators (the sites take consecutive stretches of a member's stream, and
        the CPU generator's stream does not depend on how it is cut; on a GPU it does, so the masks are
        another sample of the same distribution there).  A step that takes its randomness as a tensor
        has no generator calls inside it, so ``torch.compile`` traces it as one graph.

        Args:
            generators: one per member, on the ensemble's device.
            batch, length: the tokens' B and T.  last_only, fast: as in :meth:`forward`.

        Returns:
            (M, :meth:`dropout_width`): int64 words for ``fast`` masks, else uniform floats in the parameters' dtype.
        """
        if len(generators) != self.n_members:
            raise ValueError(f"generators must hold one generator per member ({self.n_members}), got {len(generators)}")
        width = self.dropout_width(batch, length, last_only=last_only, fast=fast)
        return draw(generators, width, fast, self.tok_emb.dtype, self.tok_emb.device)

    def forward(
        self,
        tokens: torch.Tensor,
        *,
        last_only: bool = False,
        generators: Sequence[torch.Generator] | None = None,
        fast: bool = False,
        draws: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (M, B, T, V), or (M, B, V) for ``last_only``.

        Args:
            tokens: (M, B, T) long, or (B, T) to feed the same batch to every member.
            last_only: compute only the last position (exact for a causal model).
            generators: in training mode, one ``torch.Generator`` per member for its dropout
                masks (``None``: torch's global RNG).  The pass draws every member's randomness once,
                up front (:meth:`draw_dropout`), except for reference masks under autocast, whose
                sites draw in their own dtypes.
            fast: cheaper kernels for the same maths (see :meth:`_StackedBlock.forward`).
            draws: instead of ``generators``, the randomness :meth:`draw_dropout` drew for this pass.
        """
        if tokens.dim() == 2:
            tokens = tokens.unsqueeze(0).expand(self.n_members, -1, -1)
        if tokens.dim() != 3 or tokens.shape[0] != self.n_members:
            raise ValueError(f"tokens must be (M={self.n_members}, B, T) or (B, T); got {tuple(tokens.shape)}")
        if tokens.shape[2] > self.config.max_len:
            raise ValueError(f"sequence length {tokens.shape[2]} exceeds max_len {self.config.max_len}")
        if generators is not None and len(generators) != self.n_members:
            raise ValueError(f"generators must hold one generator per member ({self.n_members}), got {len(generators)}")
        if generators is not None and draws is not None:
            raise ValueError("give the dropout randomness as generators or as draws, not both")
        _, B, T = tokens.shape
        width = self.dropout_width(B, T, last_only=last_only, fast=fast)
        rng: DropoutRandomness = generators
        if generators is not None and width and (fast or not torch.is_autocast_enabled(tokens.device.type)):
            draws = draw(generators, width, fast, self.tok_emb.dtype, self.tok_emb.device)  # as draw_dropout, checked above
        if draws is not None:
            dtype = "int64" if fast else "floating-point"
            if draws.shape != (self.n_members, width) or draws.is_floating_point() == fast:
                raise ValueError(
                    f"draws must be ({self.n_members}, {width}) {dtype} for this pass (draw_dropout makes it), "
                    f"got {tuple(draws.shape)} {draws.dtype}"
                )
            rng = DrawCursor(draws)
        h = self.embed(tokens)
        n = len(self.layers)
        for i, block in enumerate(self.layers):
            qkv = self._first_qkv(tokens, last_only) if i == 0 else None
            h = block(h, self.config.n_heads, self.config.dropout, last_only and i == n - 1, rng, qkv, fast)
        if isinstance(rng, DrawCursor) and rng.used != width:  # dropout_width must follow the blocks' sites
            raise RuntimeError(f"the dropout sites took {rng.used} draws per member, dropout_width counted {width}")
        M, B, T, D = h.shape
        logits = torch.baddbmm(self.head_b[:, None, :], h.reshape(M, B * T, D), self.head_w.transpose(1, 2))
        logits = logits.view(M, B, T, -1)
        return logits[:, :, -1] if last_only else logits

    @torch.no_grad()
    def extend(self, copies: Sequence[int]) -> None:
        """Append copies of the members ``copies`` (in that order) as new members, in place.

        Like :meth:`select`, this replaces the parameters; hand the optimizer the new ones.
        """
        idx = torch.as_tensor(copies, dtype=torch.long, device=self.tok_emb.device)
        for module in self.modules():
            for name, param in list(module.named_parameters(recurse=False)):
                grown = torch.cat([param.detach(), param.detach().index_select(0, idx)])
                setattr(module, name, nn.Parameter(grown))

    @torch.no_grad()
    def select(self, keep: Sequence[int] | torch.Tensor) -> None:
        """Keep only the members ``keep`` (in that order), in place.

        The parameters are replaced by new ``nn.Parameter`` objects (autograd caches a leaf's
        shape), so an optimizer must be handed the new :meth:`parameters` afterwards.
        """
        idx = torch.as_tensor(keep, dtype=torch.long, device=self.tok_emb.device)
        for module in self.modules():
            for name, param in list(module.named_parameters(recurse=False)):
                setattr(module, name, nn.Parameter(param.detach().index_select(0, idx).contiguous()))


@torch.no_grad()
def ensemble_accuracy(ensemble: ToyEnsemble, inputs: torch.Tensor, answers: torch.Tensor, *, chunk: int = 4096) -> np.ndarray:
    """(M,) float64 last-token argmax accuracy of every member (eval mode) on shared data.

    Args:
        inputs: (N, T) long, fed to every member.  answers: (N,) long, the last-position target.
            Both are moved to the ensemble's device.
    """
    was_training = ensemble.training
    ensemble.eval()
    device = ensemble.tok_emb.device
    inputs, answers = inputs.to(device), answers.to(device)
    correct = torch.zeros(ensemble.n_members, dtype=torch.float64, device=device)
    for start in range(0, inputs.shape[0], chunk):
        logits = ensemble(inputs[start : start + chunk], last_only=True)  # (M, b, V)
        correct += (logits.argmax(-1) == answers[start : start + chunk]).sum(1).double()
    ensemble.train(was_training)
    return (correct / inputs.shape[0]).cpu().numpy()
