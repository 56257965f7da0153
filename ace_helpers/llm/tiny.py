"""Tiny random GPT-2- or Llama-shaped models with a word-level tokenizer: every code path tested fast, no files, no network."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ace_helpers.llm.loading import wrap


def word_tokenizer(words: Sequence[str]):
    """A word-level ``PreTrainedTokenizerFast`` over ``words`` (split on whitespace and punctuation).

    Special tokens ``<unk>``, ``<pad>``, ``<eos>`` take ids 0, 1, 2. Decoding joins words with spaces.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # load time: a heavy import, done on first use
    from transformers import PreTrainedTokenizerFast  # load time: a heavy import, done on first use

    vocab = {"<unk>": 0, "<pad>": 1, "<eos>": 2}
    for word in words:
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    tok.padding_side = "left"
    return tok


#: The architectures of the paper's LLM families, as transformers (config, model) class names: GPT-2, Llama-3.1,
#: Gemma-2 and Qwen2(.5).
ARCHS: dict[str, tuple[str, str]] = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel"),
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
}


def tiny_model(
    arch: str = "gpt2",
    *,
    words: Sequence[str] = (),
    n_layers: int = 2,
    d_model: int = 32,
    n_heads: int = 4,
    seed: int = 0,
):
    """A small random HF model of one of the paper's architectures (from a config) with a word-level tokenizer.

    Args:
        arch: a key of :data:`ARCHS` (``"gpt2"``, ``"llama"``, ``"gemma2"``, ``"qwen2"``).
        words: vocabulary of the tokenizer (plus the three special tokens).
        n_layers, d_model, n_heads: model shape.
        seed: weight initialisation seed (deterministic).

    Returns:
        ``(lm, tokenizer)`` as :func:`load_model` returns them.
    """
    import transformers  # load time: a heavy import, done on first use

    if arch not in ARCHS:
        raise ValueError(f"arch={arch!r} is not allowed: arch must be one of {list(ARCHS)}")
    tok = word_tokenizer(words)
    vocab = len(tok)
    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(seed)
        special = {"bos_token_id": 2, "eos_token_id": 2, "pad_token_id": 1}
        if arch == "gpt2":
            config = transformers.GPT2Config(
                vocab_size=vocab, n_positions=128, n_embd=d_model, n_layer=n_layers, n_head=n_heads, **special
            )
            model = transformers.GPT2LMHeadModel(config)
        else:
            config_cls, model_cls = ARCHS[arch]
            extra = {"head_dim": d_model // n_heads, "sliding_window": 64} if arch == "gemma2" else {}
            config = getattr(transformers, config_cls)(
                vocab_size=vocab,
                hidden_size=d_model,
                intermediate_size=2 * d_model,
                num_hidden_layers=n_layers,
                num_attention_heads=n_heads,
                num_key_value_heads=max(1, n_heads // 2),
                max_position_embeddings=128,
                tie_word_embeddings=arch in ("gemma2", "qwen2"),
                **special,
                **extra,
            )
            model = getattr(transformers, model_cls)(config)
    return wrap(model, tok)
