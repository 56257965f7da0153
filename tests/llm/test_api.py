"""The public LLM API (ace_helpers.llm): per-example metric gradients at any module, the layer sweep, the layer
naming, on tiny random models of the paper's four architectures (GPT-2, Llama-3.1, Gemma-2, Qwen2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import vocabulary
from ace_helpers.llm.edits import MODES, sweep_values

PROMPTS = ["The keys to the cabinet", "The key near the doors", "The keys near the box", "The key to the cabinets"]
FIT = PROMPTS * 3


@pytest.fixture(scope="module", params=sorted(llm.tiny.ARCHS))
def tiny(request):
    return llm.tiny_model(request.param, words=vocabulary(), n_layers=3, seed=1)


def _metric(tok):
    a, b = tok.convert_tokens_to_ids("are"), tok.convert_tokens_to_ids("is")
    return lambda logits: logits[:, -1, a] - logits[:, -1, b]


def _plain(lm, tok, prompts, paths, metric):
    """Reference: plain torch hooks and autograd, one prompt at a time."""
    model = llm.torch_module(lm)
    H, G = [], []
    for prompt in prompts:
        enc = llm.encode(tok, [prompt])
        seen = []

        def hook(_m, _i, o):
            h = o[0] if isinstance(o, tuple) else o
            if not h.requires_grad:  # parameters are frozen: the graph starts at the first hooked output
                h.requires_grad_(True)
            seen.append(h)

        hooks = [llm.module(lm, p).register_forward_hook(hook) for p in paths]
        try:
            with torch.enable_grad():
                logits = model(**enc).logits
                grads = torch.autograd.grad(metric(logits).sum(), seen)
        finally:
            for h in hooks:
                h.remove()
        H.append(torch.stack([s[0, -1] for s in seen]))
        G.append(torch.stack([g[0, -1] for g in grads]))
    return torch.stack(H, 1).detach().numpy(), torch.stack(G, 1).numpy()


def test_metric_gradients_match_plain_autograd_per_prompt(tiny):
    lm, tok = tiny
    paths = [llm.layer_path(lm, 1), llm.layer_path(lm, 3)]
    r = llm.metric_gradients(lm, tok, PROMPTS, _metric(tok), [3, 1], batch_size=3)  # any order; batches of 3
    assert r.paths == paths and r.layers == [1, 3] and r.H.shape == r.G.shape == (2, 4, 32)
    H, G = _plain(lm, tok, PROMPTS, paths, _metric(tok))
    np.testing.assert_allclose(r.H, H, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r.G, G, rtol=1e-3, atol=1e-5)
    sub = "transformer.h.1.mlp" if "transformer.h.1" in paths[0] or llm.block_paths(lm)[0].startswith("transformer") else "model.layers.1.mlp"
    r2 = llm.metric_gradients(lm, tok, PROMPTS, _metric(tok), [sub, 3], gradients=False)
    assert r2.layers == [None, 3] and r2.G is None and np.allclose(r2.values, r.values, atol=1e-5)


def test_metric_gradients_refuse_bad_input(tiny):
    lm, tok = tiny
    with pytest.raises(ValueError, match=r"this model has layers 1\.\.3"):
        llm.metric_gradients(lm, tok, PROMPTS, _metric(tok), [4])
    with pytest.raises(ValueError, match="no component"):
        llm.metric_gradients(lm, tok, PROMPTS, _metric(tok), ["model.nowhere"])
    with pytest.raises(ValueError, match="one value per prompt"):
        llm.metric_gradients(lm, tok, PROMPTS, lambda z: z[:, -1], [1])
    with pytest.raises(ValueError, match="non-empty list"):
        llm.metric_gradients(lm, tok, PROMPTS, _metric(tok), [])
    with pytest.raises(ValueError, match="callable"):
        llm.metric_gradients(lm, tok, PROMPTS, "margin", [1])


def test_layer_naming_is_one_convention(tiny):
    lm, _ = tiny
    paths = llm.block_paths(lm)
    assert [llm.layer_path(lm, ell) for ell in (1, 2, 3)] == paths
    assert [llm.layer_of_path(lm, p) for p in paths] == [1, 2, 3]
    for bad in (0, 4, True, 1.0):
        with pytest.raises(ValueError, match=r"layers 1\.\.3 \(layer ℓ = output of block ℓ−1\)"):
            llm.layer_path(lm, bad)


def test_layer_sweep_scores_every_mode_and_matches_the_slow_path(tiny):
    lm, tok = tiny
    metric = _metric(tok)
    out = llm.layer_sweep(lm, tok, FIT, PROMPTS, metric, layers=[2, 3], rank=1)
    assert [o.layer for o in out] == [2, 3] and all(o.core.rank == 1 for o in out)
    for o in out:
        assert set(o.values) == {"base", *MODES} and all(v.shape == (4,) for v in o.values.values())
        assert set(o.scores()) == {"base", *MODES}
    base = llm.metric_gradients(lm, tok, PROMPTS, metric, [1], gradients=False).values
    np.testing.assert_allclose(out[0].values["base"], base, atol=1e-5)
    slow = sweep_values(lm, tok, PROMPTS, [2, 3], [o.core for o in out], metric, modes=("flip", "keep", "remove"))
    for mode in MODES:
        np.testing.assert_allclose(np.stack([o.values[mode] for o in out]), slow[mode], rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match=r"this model has layers 1\.\.3; bad: \[9\]"):
        llm.layer_sweep(lm, tok, FIT, PROMPTS, metric, layers=[9])
    assert len(llm.layer_sweep(lm, tok, FIT, PROMPTS, metric, layers="all", rank=1)) == 3
