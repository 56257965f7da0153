"""nnsight interventions give the same numbers as plain torch forward hooks."""

import nnsight
import numpy as np
import pytest
import torch

from ace_helpers import extract_core
from ace_helpers.method.interventions import accuracy_under, capture, run_with_core, run_with_edit
from ace_helpers.toys.models import ToyConfig, build_model


@pytest.fixture(scope="module")
def toy():
    model = build_model(ToyConfig(vocab=5, d_model=16, n_layers=2, n_heads=2, max_len=8), seed=0).eval()
    x = torch.randint(0, 5, (40, 6), generator=torch.Generator().manual_seed(0))
    return model, nnsight.NNsight(model), x


def _hooked(model, x, layer, fn):
    handle = model.layers[layer].register_forward_hook(lambda mod, inp, out: fn(out))
    try:
        with torch.no_grad():
            return model(x)
    finally:
        handle.remove()


def test_capture_matches_hook(toy):
    model, nm, x = toy
    seen = {}
    _hooked(model, x, 1, lambda out: seen.setdefault("h", out.clone()))
    # float32 round-off only (the stock encoder layer may take its fused eval path under nnsight)
    torch.testing.assert_close(capture(nm, x, "layers.1"), seen["h"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(capture(nm, x, "layers.1", positions=-1), seen["h"][:, -1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(capture(nm, x, "layers.1", positions=[0, 2]), seen["h"][:, [0, 2]], rtol=1e-5, atol=1e-5)
    per_row = torch.randint(0, 6, (40,))
    torch.testing.assert_close(capture(nm, x, "layers.1", positions=per_row), seen["h"][torch.arange(40), per_row])


@pytest.mark.parametrize("mode", ["keep", "remove", "flip"])
@pytest.mark.parametrize("positions", [None, -1])
@pytest.mark.parametrize("centered", [False, True])
def test_core_interventions_match_hooks(toy, mode, positions, centered):
    model, nm, x = toy
    h = capture(nm, x, "layers.0").reshape(-1, 16)
    core = extract_core(h, model.lm_head.weight.detach(), rank=3)
    edit = {
        "keep": lambda t: core.keep(t, centered=centered),
        "remove": lambda t: core.remove(t, centered=centered),
        "flip": lambda t: core.flip(t),
    }[mode]

    def hook_fn(out):
        if positions is None:
            return edit(out)
        out = out.clone()
        out[:, positions] = edit(out[:, positions])
        return out

    ref = _hooked(model, x, 0, hook_fn)
    got = run_with_core(nm, x, "layers.0", core, mode, positions=positions, centered=centered)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    clean = run_with_core(nm, x, "layers.0", None, None)
    assert (got - clean).abs().max() > 1e-3  # the edit did something


def test_edit_leaves_other_positions_untouched(toy):
    model, nm, x = toy
    zeroed = run_with_edit(nm, x, "layers.1", torch.zeros_like, positions=-1)
    clean = run_with_edit(nm, x, "layers.1", None)
    torch.testing.assert_close(zeroed[:, :-1], clean[:, :-1], rtol=0, atol=0)


def test_accuracy_under_intervention(toy):
    model, nm, x = toy
    with torch.no_grad():
        pred = model(x).argmax(-1)
    assert accuracy_under(nm, x, pred, "layers.0", None, None, batch_size=7) == 1.0
    h = capture(nm, x, "layers.1").reshape(-1, 16)
    # post-LN outputs span a 15-D affine hyperplane: keeping all of it about the mean changes nothing
    full = extract_core(h, np.eye(16), rank=15)
    assert accuracy_under(nm, x, pred, "layers.1", full, "keep", centered=True) == pytest.approx(1.0)
    assert accuracy_under(nm, x, pred, "layers.1", full, "remove", centered=True) < 0.9


def test_bad_module_path_and_mode(toy):
    model, nm, x = toy
    with pytest.raises(ValueError, match="no component"):
        capture(nm, x, "layers.7")
    core = extract_core(np.random.default_rng(0).standard_normal((50, 16)), np.eye(16), rank=2)
    with pytest.raises(ValueError, match="mode"):
        run_with_core(nm, x, "layers.0", core, "invert")


def _tiny_hf(kind):
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    if kind == "llama":
        cfg = transformers.LlamaConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
        )
        model, path = transformers.LlamaForCausalLM(cfg), "model.layers.1"
    else:
        cfg = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=32, bos_token_id=2, eos_token_id=2)
        model, path = transformers.GPT2LMHeadModel(cfg), "transformer.h.1"
    words = Tokenizer(models.WordLevel(vocab={f"w{i}": i for i in range(64)}, unk_token="w0"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="w0", pad_token="w1", eos_token="w2")
    return model.eval(), tok, path


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
@pytest.mark.parametrize("mode", ["keep", "remove", "flip"])
def test_hf_interventions_match_hooks(kind, mode):
    model, tok, path = _tiny_hf(kind)
    lm = nnsight.TransformersModel(model, tokenizer=tok)
    ids = torch.randint(3, 64, (6, 5), generator=torch.Generator().manual_seed(1))
    enc = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    h_last = capture(lm, enc, path, positions=-1)
    assert h_last.shape == (6, 32)
    block = model.get_submodule(path)
    seen = {}
    handle = block.register_forward_hook(lambda m, i, o: seen.setdefault("h", (o[0] if isinstance(o, tuple) else o).clone()))
    with torch.no_grad():
        clean = model(**enc).logits
    handle.remove()
    torch.testing.assert_close(h_last, seen["h"][:, -1], rtol=1e-5, atol=1e-5)
    rng = np.random.default_rng(0)
    core = extract_core(rng.standard_normal((200, 32)), rng.standard_normal((200, 32)), rank=2)

    def hook(m, i, o):
        hid = (o[0] if isinstance(o, tuple) else o).clone()
        hid[:, -1] = getattr(core, mode)(hid[:, -1], **({"centered": True} if mode != "flip" else {}))
        return (hid, *o[1:]) if isinstance(o, tuple) else hid

    handle = block.register_forward_hook(hook)
    with torch.no_grad():
        ref = model(**enc).logits
    handle.remove()
    got = run_with_core(lm, enc, path, core, mode, positions=-1, centered=True)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    assert (got - clean).abs().max() > 1e-4
