"""The toy transformers of the paper: token + learned positional embedding, a stack of
stock post-LN ``nn.TransformerEncoderLayer`` blocks under a causal mask, linear unembedding.

One class covers the paper's three toy settings (the official code release `joshseth/cores`:
`markov.py`, `modadd.py`, `grok_sweep.py`):

* Markov chains:      ``ToyTransformer(vocab=4,  d_model=64,  n_layers=1, max_len=64)``
* modular addition:   ``ToyTransformer(vocab=53, d_model=128, n_layers=2, max_len=2)``
* grokking sweeps:    ``ToyTransformer(vocab=p,  d_model=128, n_layers=1, max_len=2)``

The encoder blocks are PyTorch defaults on purpose (post-LN, ReLU, dropout 0.1), as in the
paper's code; there is no final LayerNorm, so the last block's output is what the unembedding
reads.  Blocks are reachable by name as ``layers.0``, ``layers.1``, ... (the hook points).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ToyConfig:
    """Architecture of a :class:`ToyTransformer` (all fields are plain ints/floats)."""

    vocab: int
    d_model: int = 64
    n_layers: int = 1
    n_heads: int = 4
    d_ff: int | None = None  # default 4 * d_model
    max_len: int = 64
    dropout: float = 0.1

    def __post_init__(self) -> None:
        for name in ("vocab", "d_model", "n_layers", "n_heads", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ToyConfig.{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"ToyConfig.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ToyConfig.dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def ff(self) -> int:
        """Feed-forward width (``d_ff`` or ``4 * d_model``)."""
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def to_dict(self) -> dict:
        """Plain-dict form, for manifests and ``results.json``."""
        return asdict(self)


class ToyTransformer(nn.Module):
    """Causal toy transformer; ``forward(tokens (B, T) long) -> logits (B, T, vocab)``."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab, config.d_model)
        self.pos_emb = nn.Embedding(config.max_len, config.d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model=config.d_model,
                nhead=config.n_heads,
                dim_feedforward=config.ff,
                dropout=config.dropout,
                batch_first=True,
            )
            for _ in range(config.n_layers)
        )
        self.lm_head = nn.Linear(config.d_model, config.vocab)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token + positional embedding: (B, T) long -> (B, T, d_model)."""
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (batch, seq), got {tuple(tokens.shape)}")
        seq = tokens.shape[1]
        if seq > self.config.max_len:
            raise ValueError(f"sequence length {seq} exceeds max_len {self.config.max_len}")
        positions = torch.arange(seq, device=tokens.device)
        return self.tok_emb(tokens) + self.pos_emb(positions)[None]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) long -> logits (B, T, vocab)."""
        h = self.embed(tokens)
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device, dtype=torch.bool)
        for layer in self.layers:
            h = layer(h, src_mask=mask, is_causal=True)
        return self.lm_head(h)


def build_model(config: ToyConfig, seed: int) -> ToyTransformer:
    """A freshly initialised model whose weights depend only on ``seed``."""
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return ToyTransformer(config)
    finally:
        torch.random.set_rng_state(generator_state)
