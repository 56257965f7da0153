"""Chapter 5: agreement data, margins, one-backward gradients, fast sweeps, generation, the pipeline and its claims."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from reference import collect_states_per_layer, sample_top_k_full_vocabulary, steered_generate_full_runs

from ace_helpers import llm
from ace_helpers.chapters import llm_agreement as A
from ace_helpers.llm import agreement as ag
from ace_helpers.method import interventions
from ace_helpers.method.stats import roc_auc

# ----------------------------------------------------------------------------- data


def test_synthetic_prompts_follow_the_spec():
    prompts, labels = ag.synthetic_prompts(400, seed=0)
    again, labels2 = ag.synthetic_prompts(400, seed=0)
    assert prompts == again and np.array_equal(labels, labels2)
    assert ag.synthetic_prompts(400, seed=1)[0] != prompts
    assert labels.sum() == 200
    heads = {0: set(ag.SINGULAR_HEADS), 1: set(ag.PLURAL_HEADS)}
    attractors = {0: set(ag.PLURAL_ATTRACTORS), 1: set(ag.SINGULAR_ATTRACTORS)}
    for text, label in zip(prompts, labels):
        words = text.replace(",", "").split()
        assert heads[label] & set(words), text  # the head has the labelled number
        assert not heads[1 - label] & set(words), text
        assert attractors[label] & set(words), text  # the attractor has the opposite number
        assert words[-1] not in ag.VERBS
    assert 0.4 < np.mean([p.startswith(ag.PREFIX) for p in prompts]) < 0.6
    assert any(" There " in p or p.startswith("There ") or "there " in p for p in prompts)
    assert any(pad.lower() in p.lower() for p in prompts for pad in ag.FRONT_PADS)
    assert any(p.endswith(pad) for p in prompts for pad in ag.BACK_PADS)
    assert any(rel in p for p in prompts for rel in ag.REL_CHUNKS)
    with pytest.raises(ValueError, match="n="):
        ag.synthetic_prompts(7)


def test_split_is_seeded_and_balanced():
    a = ag.agreement_split(100, seed=0)
    b = ag.agreement_split(100, seed=0)
    assert a.test_prompts == b.test_prompts and len(a.train_prompts) == len(a.test_prompts) == 50
    assert not set(a.train_prompts) & set(a.test_prompts) or len(set(a.train_prompts)) < 50
    with pytest.raises(ValueError, match="only one number"):
        ag.split(["a", "b", "c", "d"], np.array([1, 1, 1, 1]))


def test_load_prompts_csv_json_and_row_errors(tmp_path):
    good = tmp_path / "p.csv"
    good.write_text("prompt,number\nThe key to the cabinets,singular\nThe keys to the cabinet,plural\n"
                    "The man near the doors,singular\nThe men near the door,Plural\n")
    prompts, labels = ag.load_prompts(good)
    assert prompts[1] == "The keys to the cabinet" and labels.tolist() == [0, 1, 0, 1]
    js = tmp_path / "p.json"
    js.write_text(json.dumps([{"prompt": p, "number": "plural" if lab else "singular"} for p, lab in zip(prompts, labels)]))
    assert ag.load_prompts(js)[0] == prompts
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,number\nThe key,singular\nThe keys,many\nA,singular\nB,plural\n")
    with pytest.raises(ValueError, match="row 3.*'number'"):
        ag.load_prompts(bad)
    badj = tmp_path / "bad.json"
    badj.write_text(json.dumps([{"prompt": "x", "number": "plural"}, {"number": "plural"}]))
    with pytest.raises(ValueError, match="item 1.*'prompt'"):
        ag.load_prompts(badj)
    header = tmp_path / "h.csv"
    header.write_text("text,label\na,singular\n")
    with pytest.raises(ValueError, match="header"):
        ag.load_prompts(header)
    with pytest.raises(ValueError, match="PROMPTS_FILE"):
        ag.load_prompts(tmp_path / "missing.csv")


def test_verb_ids_and_margin():
    tok = llm.word_tokenizer(ag.vocabulary())
    ids = ag.verb_token_ids(tok)
    assert len(set(ids.values())) == 4
    logits = torch.zeros(2, len(tok))
    logits[0, ids["are"]], logits[1, ids["was"]] = 2.0, 3.0
    assert ag.margin(logits, ids).tolist() == [2.0, -3.0]
    assert ag.copula_margin(logits, ids)[0] > 0 > ag.copula_margin(logits, ids)[1]
    empty = llm.word_tokenizer(["The", "key"])
    with pytest.raises(ValueError, match="unknown token"):
        ag.verb_token_ids(empty)


# ----------------------------------------------------------------------------- demo statistics, alignment, parameters


def test_demo_scores_and_tests():
    probs = np.array([[0.5, 0.1, 0.3, 0.1], [0.5, 0.1, 0.3, 0.1]])
    s = A.demo_scores(probs, np.array([0, 1]))
    assert s[0] == pytest.approx(np.log(0.8 / 0.5)) and s[1] == pytest.approx(np.log(0.2 / 0.5))
    scores = {"base": np.arange(6.0), "removed": np.arange(6.0) - 1, "flipped": np.arange(6.0) - 3}
    p = A.demo_tests(scores)
    assert p["base_vs_flipped"] == pytest.approx(1 / 64) and p["removed_vs_flipped"] == pytest.approx(1 / 64)


def test_pairwise_alignment():
    rng = np.random.default_rng(0)
    x = rng.normal(size=80)
    rows = A.pairwise_alignment({"a": x, "b": -x, "c": x**3}, n_permutations=200)
    assert [(r["a"], r["b"]) for r in rows] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert rows[0]["spearman"] == pytest.approx(1.0) and rows[0]["pearson"] == pytest.approx(1.0)


def test_params_resolve_and_check():
    ci = A.PARAMS.resolve(PRESET="ci")
    assert ci.MODELS == ["smollm2-135m"] and ci.PROMPTS_FILE is None and ci.is_preset_run()
    book = A.PARAMS.resolve(PRESET="book", N_PROMPTS=40, LAYERS=[3, 1, 3], MODELS="gemma3-270m")
    assert book.N_PROMPTS == 40 and book.LAYERS == [1, 3] and book.MODELS == ["gemma3-270m"] and not book.is_preset_run()
    assert len(A.PARAMS.resolve(PRESET="book").MODELS) == 4
    for bad, match in ((dict(N_PROMPTS=41), "N_PROMPTS"), (dict(MODELS=[]), "MODELS"), (dict(MODELS=["a", "a"]), "MODELS"),
                       (dict(LAYERS=[0]), r"LAYERS\[0\]"), (dict(REMOTE="yes"), "REMOTE"), (dict(SEED=-1), "SEED"),
                       (dict(GEN_EPS=0.0), "GEN_EPS"), (dict(PROMPTS_FILE=3), "PROMPTS_FILE"),
                       (dict(PRESET="fast"), "PRESET"), (dict(WHAT=1), "unknown knob")):
        with pytest.raises(ValueError, match=match):
            A.PARAMS.resolve(PRESET="ci", **bad) if "PRESET" not in bad else A.PARAMS.resolve(**bad)
    with pytest.raises(ValueError, match="layers 1..3"):
        A.layer_list([4], 3)


def test_models_must_be_loadable_here(monkeypatch, tmp_path):
    """A model name that cannot be loaded here is refused by name in the check, not after minutes of loading."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert A.PARAMS.resolve(PRESET="ci", MODELS="smollm2-135m").MODELS == ["smollm2-135m"]  # a bare name: a one-model list
    for bad, match in (("abc", r"MODELS\[0\]='abc'.*bundled offline model"),
                       (["smollm2-135m", "no-such-org/no-such-model"], r"MODELS\[1\]"),
                       (str(tmp_path), r"MODELS\[0\].*config.json")):
        with pytest.raises(ValueError, match=match):
            A.PARAMS.resolve(PRESET="ci", MODELS=bad)
    with pytest.raises(ValueError, match=r"MODELS\[0\]='gpt2'.*weights are missing.*huggingface-cli download gpt2"):
        A.PARAMS.resolve(PRESET="paper")  # the paper's GPT-2 weights are not in this (empty) cache
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"num_hidden_layers": 4, "hidden_size": 16, "max_position_embeddings": 32}))
    assert A.PARAMS.resolve(PRESET="ci", MODELS=[str(folder)], LAYERS=[1, 4], GEN_TOKENS=8).MODELS == [str(folder)]
    with pytest.raises(ValueError, match=r"LAYERS=\[1, 5\].*layers 1..4"):
        A.PARAMS.resolve(PRESET="ci", MODELS=[str(folder)], LAYERS=[1, 5])
    with pytest.raises(ValueError, match="GEN_TOKENS=30 .*context of 32"):
        A.PARAMS.resolve(PRESET="ci", MODELS=[str(folder)], LAYERS=[1])
    # the ci default LAYERS ("every:2") follows the model's depth: a 4-layer folder needs no LAYERS knob
    assert A.PARAMS.resolve(PRESET="ci", MODELS=[str(folder)], GEN_TOKENS=8).LAYERS == "every:2"
    assert A.layer_list("every:2", 4) == [2, 4] and A.layer_list("every:2", 30)[-1] == 30 and A.layer_list("every:5", 3) == [3]
    for bad in ("every:0", "every", "some:2", "every:x"):
        with pytest.raises(ValueError, match=r"LAYERS=.*'all', 'every:k'"):
            A.PARAMS.resolve(PRESET="ci", LAYERS=bad)
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    for remote in (True, 1, "yes"):
        with pytest.raises(ValueError, match="REMOTE"):
            A.PARAMS.resolve(PRESET="ci", REMOTE=remote)
    monkeypatch.setenv("NDIF_API_KEY", "x")
    assert A.PARAMS.resolve(PRESET="ci", REMOTE=True, MODELS="openai-community/gpt2").REMOTE is True
    with pytest.raises(ValueError, match=r"MODELS\[0\].*NDIF serves Hub models only"):
        A.PARAMS.resolve(PRESET="ci", REMOTE=True)


def _prompts_csv(path, n_singular, n_plural, extra=""):
    rows = [f"The key near the doors {i},singular" for i in range(n_singular)] + [f"The keys near the door {i},plural" for i in range(n_plural)]
    path.write_text("prompt,number\n" + "\n".join(rows) + "\n" + extra, encoding="utf-8")
    return path


def test_prompts_file_is_checked_and_read_once(tmp_path):
    """PROMPTS_FILE: exists, UTF-8 (else the byte offset), parses, >= 4 prompts of each number; the run uses what was read."""
    good = _prompts_csv(tmp_path / "p.csv", 6, 6)
    cfg = A.PARAMS.resolve(PRESET="ci", PROMPTS_FILE=str(good))
    assert cfg.PROMPTS_FILE == str(good) and not cfg.is_preset_run()
    good.write_text("prompt,number\nchanged,plural\n")  # edited after the check: the run keeps what was checked
    data = ag.agreement_split(cfg.N_PROMPTS, cfg.SEED, cfg.PROMPTS_FILE)
    assert len(data.train_prompts) + len(data.test_prompts) == 12 and "changed" not in data.test_prompts + data.train_prompts
    import pickle

    again = pickle.loads(pickle.dumps(cfg))
    assert again.PROMPTS_FILE.prompts == cfg.PROMPTS_FILE.prompts and cfg.replace(SEED=1).PROMPTS_FILE.prompts == cfg.PROMPTS_FILE.prompts
    assert json.loads(json.dumps({"f": cfg.PROMPTS_FILE})) == {"f": str(good)}
    latin = tmp_path / "latin.csv"
    latin.write_bytes("prompt,number\nThe caf\u00e9 key,singular\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"PROMPTS_FILE='.*latin.csv'.*not UTF-8 text \(byte 21 is b.\\xe9"):
        A.PARAMS.resolve(PRESET="ci", PROMPTS_FILE=str(latin))
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + _prompts_csv(tmp_path / "x.csv", 4, 4).read_bytes())
    assert len(A.PARAMS.resolve(PRESET="ci", PROMPTS_FILE=str(bom)).PROMPTS_FILE.prompts) == 8
    for bad, match in ((tmp_path / "missing.csv", "existing"), (tmp_path, "existing"),
                       (_prompts_csv(tmp_path / "few.csv", 3, 9), "3 singular and 9 plural.*at least 4 of each"),
                       (_prompts_csv(tmp_path / "row.csv", 4, 4, "The man,many\n"), "row 10.*'number'"),
                       (_prompts_csv(tmp_path / "p.txt", 4, 4), r"\.csv or \.json")):
        with pytest.raises(ValueError, match=f"PROMPTS_FILE=.*{match}"):
            A.PARAMS.resolve(PRESET="ci", PROMPTS_FILE=str(bad))


def test_sizes_are_estimated_before_compute(monkeypatch):
    """Sizes whose memory estimate exceeds the limit are refused by name, with the estimate and the limit."""
    assert A.PARAMS.resolve(PRESET="ci").is_preset_run() and A.PARAMS.resolve(PRESET="book").is_preset_run()
    monkeypatch.setattr(A.knobs, "_memory_budget", lambda: 5 * 2**29)  # a 5 GiB machine: the ci run (~2.0 GiB per batch) still fits
    assert A.PARAMS.resolve(PRESET="ci").BATCH_SIZE == 50
    for bad, match in ((dict(N_PROMPTS=20_000, LAYERS="all"), r"N_PROMPTS=20000 would need ~3.9 GiB .*30 layers.*the limit is 2.5 GiB"),
                       (dict(BATCH_SIZE=100), r"BATCH_SIZE=100 would need ~4.0 GiB .*smollm2-135m.*the limit is 2.5 GiB"),
                       (dict(MODELS=["gemma3-270m"], N_PROMPTS=24_000, LAYERS="all"), "N_PROMPTS=24000 .*gemma3-270m.*18 layers")):
        with pytest.raises(ValueError, match=match):
            A.PARAMS.resolve(PRESET="ci", **bad)
    monkeypatch.setattr(A.knobs, "_memory_budget", lambda: 2**40)
    for bad, match in ((dict(N_PROMPTS=10), "N_PROMPTS=10"), (dict(N_PROMPTS=100_002), "N_PROMPTS"), (dict(BATCH_SIZE=4097), "BATCH_SIZE"),
                       (dict(GEN_TOKENS=513), "GEN_TOKENS"), (dict(LAYERS=[31]), r"LAYERS=\[31\].*layers 1..30")):
        with pytest.raises(ValueError, match=match):
            A.PARAMS.resolve(PRESET="ci", **bad)


# ----------------------------------------------------------------------------- model paths (tiny random models)


@pytest.fixture(scope="module", params=sorted(llm.tiny.ARCHS))  # the paper's GPT-2, Llama-3.1, Gemma-2, Qwen2
def tiny(request):
    lm, tok = llm.tiny_model(request.param, words=ag.vocabulary(), n_layers=3, seed=2)
    return lm, tok, ag.agreement_split(24, seed=0)


def test_one_backward_equals_one_pass_per_layer(tiny):
    lm, tok, data = tiny
    one = A.collect_states(lm, tok, data.train_prompts, [1, 2, 3], batch_size=5)
    naive = collect_states_per_layer(lm, tok, data.train_prompts, [1, 2, 3], batch_size=5)
    np.testing.assert_allclose(one.H, naive.H, atol=1e-6)
    np.testing.assert_allclose(one.G, naive.G, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(one.margin, naive.margin, atol=1e-5)
    assert np.abs(one.G).max() > 0
    sub = A.collect_states(lm, tok, data.train_prompts, [2], batch_size=7)
    np.testing.assert_allclose(sub.G[0], one.G[1], atol=1e-5, rtol=1e-4)


def test_gradient_matches_finite_difference(tiny):
    lm, tok, data = tiny
    prompt = data.train_prompts[:1]
    st = A.collect_states(lm, tok, prompt, [2])
    g = st.G[0, 0].astype(np.float64)
    u = g / np.linalg.norm(g)
    path = llm.block_paths(lm)[1]
    ids = ag.verb_token_ids(tok)
    batch = llm.encode(tok, prompt)
    ut = torch.as_tensor(u, dtype=torch.float32)
    mp = ag.margin(interventions.run_with_edit(lm, batch, path, lambda h: h + 1e-2 * ut, positions=-1)[:, -1], ids)
    mm = ag.margin(interventions.run_with_edit(lm, batch, path, lambda h: h - 1e-2 * ut, positions=-1)[:, -1], ids)
    assert float((mp - mm) / 2e-2) == pytest.approx(np.linalg.norm(g), rel=2e-2)


def test_last_layer_is_read_before_the_final_norm(tiny):
    """H at layer L is the last block's output, not HF's hidden_states[-1] (after the final norm)."""
    lm, tok, data = tiny
    st = A.collect_states(lm, tok, data.test_prompts[:4], [1, 2, 3], gradients=False)
    with torch.no_grad():
        hs = llm.torch_module(lm)(**llm.encode(tok, data.test_prompts[:4]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(st.H[0], hs[1][:, -1].numpy(), atol=1e-6)
    np.testing.assert_allclose(st.H[1], hs[2][:, -1].numpy(), atol=1e-6)
    assert not np.allclose(st.H[2], hs[3][:, -1].numpy(), atol=1e-3)


def _hook_margins(lm, tok, prompts, layer, core, mode):
    """Plain-torch reference: forward hook editing the last token of block layer-1, full forward."""
    model = llm.torch_module(lm)
    ids = ag.verb_token_ids(tok)
    fn = interventions.core_edit(core, mode, centered=True)

    def hook(_m, _i, out):
        out = out.clone()
        out[:, -1] = fn(out[:, -1])
        return out

    handle = llm.module(lm, llm.block_paths(lm)[layer - 1]).register_forward_hook(hook)
    try:
        with torch.no_grad():
            return ag.margin(model(**llm.encode(tok, prompts)).logits[:, -1], ids).numpy()
    finally:
        handle.remove()


def test_fast_sweep_equals_full_forward_and_plain_hooks(tiny):
    lm, tok, data = tiny
    train = A.collect_states(lm, tok, data.train_prompts, [1, 2, 3])
    cores = A.layer_cores(train)
    assert all(c.rank == 1 for c in cores)
    fast = A.sweep_margins(lm, tok, data.test_prompts, [1, 2, 3], cores, batch_size=5)
    full = A.sweep_margins(lm, tok, data.test_prompts, [1, 2, 3], cores, modes=("flip", "remove", "keep"), batch_size=5)
    for mode in A.MODES:
        np.testing.assert_allclose(fast[mode], full[mode], atol=1e-5)
        for li, ell in enumerate([1, 2, 3]):
            np.testing.assert_allclose(fast[mode][li], _hook_margins(lm, tok, data.test_prompts, ell, cores[li], mode), atol=1e-5)
    # the edits change something (a test that cannot fail is a defect)
    clean = A.collect_states(lm, tok, data.test_prompts, [1], gradients=False).margin
    assert np.abs(fast["flip"][2] - clean).max() > 1e-3


def test_verb_head_is_exact_and_restored(tiny):
    lm, tok, data = tiny
    head = llm.torch_module(lm).get_output_embeddings()
    before = head.weight
    st = A.collect_states(lm, tok, data.test_prompts[:5], [1], gradients=False)  # uses the 4-row head
    assert head.weight is before and head.out_features == len(tok)
    ids = ag.verb_token_ids(tok)
    with torch.no_grad():
        ref = ag.margin(llm.torch_module(lm)(**llm.encode(tok, data.test_prompts[:5])).logits[:, -1], ids).numpy()
    np.testing.assert_allclose(st.margin, ref, atol=1e-5)


def test_greedy_generation_matches_hf_generate(tiny):
    lm, tok, _ = tiny
    ours, scales, _, _ = A.generate_with_flip(lm, tok, ag.GENERATION_PROMPTS, 2, None, n_new=6, seed=None)
    enc = tok(list(ag.GENERATION_PROMPTS), return_tensors="pt", padding=True)
    with torch.no_grad():
        ref = llm.torch_module(lm).generate(**enc, max_new_tokens=6, min_new_tokens=6, do_sample=False, use_cache=False,
                                       pad_token_id=tok.pad_token_id)[:, enc["input_ids"].shape[1]:]
    assert torch.equal(ours, ref)
    assert scales.shape == (6, 3) and not scales.any()


def test_steered_generation_calibrates_and_is_seeded(tiny):
    lm, tok, data = tiny
    cores = A.layer_cores(A.collect_states(lm, tok, data.train_prompts, [3]))
    g1 = A.steered_generate(lm, tok, ag.GENERATION_PROMPTS[:2], 3, cores[0], n_new=4, n_samples=2, seed=5)
    g2 = A.steered_generate(lm, tok, ag.GENERATION_PROMPTS[:2], 3, cores[0], n_new=4, n_samples=2, seed=5)
    assert g1.steered == g2.steered and g1.clean == g2.clean and len(g1.clean) == 4
    assert g1.scales.shape == (4, 4) and np.isfinite(g1.scales).all() and np.abs(g1.scales).max() > 0
    assert np.abs(g1.scales).max() <= 50.0
    # first step: the calibrated scale moves the copula margin to the other side (1 nat target)
    ids = ag.verb_token_ids(tok)
    batch = llm.encode(tok, g1.prompts)
    path = llm.block_paths(lm)[2]
    m0 = ag.copula_margin(interventions.run_with_edit(lm, batch, path, None)[:, -1], ids).numpy()
    s = torch.as_tensor(g1.scales[0], dtype=torch.float32)[:, None]
    m = ag.copula_margin(interventions.run_with_edit(lm, batch, path, lambda h: cores[0].flip(h, scale=s), positions=-1)[:, -1], ids).numpy()
    unclipped = np.abs(g1.scales[0]) < 50
    assert (np.sign(m[unclipped]) == -np.sign(m0[unclipped])).mean() >= 0.75


@pytest.mark.parametrize("layer", [1, 3])
def test_fast_steered_generation_equals_full_runs(tiny, layer):
    """Skipping the blocks before the edit and the 4-verb head in the calibration runs change no token and
    only the last digits of the scales and margins (vs every run a full forward with the whole vocabulary)."""
    lm, tok, data = tiny
    core = A.layer_cores(A.collect_states(lm, tok, data.train_prompts, [layer]))[0]
    prompts = list(ag.GENERATION_PROMPTS[:2])
    for seed in (None, 3):  # greedy, and sampled with the same generator
        fast, scales, achieved, _ = A.generate_with_flip(lm, tok, prompts, layer, core, n_new=4, seed=seed, refine=1, eps=2.0)
        slow, slow_scales, slow_achieved = steered_generate_full_runs(lm, tok, prompts, layer, core, n_new=4, seed=seed,
                                                                      refine=1, eps=2.0)
        assert torch.equal(fast, slow)
        np.testing.assert_allclose(scales, slow_scales, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(achieved, slow_achieved, rtol=1e-3, atol=1e-4)
        assert np.abs(scales).max() > 0.1  # the flip did something


def test_top_k_sampler_draws_the_full_vocabulary_samplers_distribution():
    """Drawing among the k candidates only gives the distribution of the masked full-vocabulary multinomial
    (20 000 draws each: frequencies within 0.02), never a token outside the top k, and the same tokens for the
    same generator state."""
    logits = torch.randn(1, 5000, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 3
    rows = logits.expand(20000, -1)
    ours = A.sample_top_k(rows, torch.Generator().manual_seed(0), 5)
    full = sample_top_k_full_vocabulary(rows, torch.Generator().manual_seed(0), 5)
    top = torch.topk(logits[0], 5).indices
    assert set(ours.tolist()) <= set(top.tolist()) and set(full.tolist()) <= set(top.tolist())
    freq = lambda t: np.array([(t == i).double().mean().item() for i in top])  # noqa: E731
    exact = torch.softmax(logits[0, top], -1).numpy()
    np.testing.assert_allclose(freq(ours), exact, atol=0.02)
    np.testing.assert_allclose(freq(full), exact, atol=0.02)
    assert torch.equal(ours, A.sample_top_k(rows, torch.Generator().manual_seed(0), 5))
    assert torch.equal(A.sample_top_k(logits, None, 5), logits.argmax(-1))


@pytest.mark.cuda
def test_top_k_sampler_draws_the_cpus_tokens_for_logits_on_a_gpu():
    """A CPU generator with logits on a GPU: the tokens come back on the GPU and equal the CPU's draw."""
    logits = torch.randn(64, 500, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    on_gpu = A.sample_top_k(logits.cuda(), torch.Generator().manual_seed(0), 5)
    assert on_gpu.device.type == "cuda"
    assert torch.equal(on_gpu.cpu(), A.sample_top_k(logits, torch.Generator().manual_seed(0), 5))


def test_copula_disagreements_counts_against_clean_preference(tiny):
    lm, tok, _ = tiny
    ids = ag.verb_token_ids(tok)
    prompts = ["The keys to the cabinet", "The key near the doors"]
    gen = torch.tensor([[ids["is"], ids["are"]], [ids["were"], ids["was"]]])
    counts = A.copula_disagreements(lm, tok, prompts, gen)
    assert [n for _, n in counts] == [2, 2]
    # one-token generations of opposite number: exactly one of the two disagrees with the clean model
    a = A.copula_disagreements(lm, tok, prompts, torch.tensor([[ids["is"]], [ids["were"]]]))
    b = A.copula_disagreements(lm, tok, prompts, torch.tensor([[ids["are"]], [ids["was"]]]))
    assert all(x + y == 1 and n == m == 1 for (x, n), (y, m) in zip(a, b))
    none = A.copula_disagreements(lm, tok, prompts, torch.full((2, 2), tok.convert_tokens_to_ids("The")))
    assert none == [(0, 0), (0, 0)]


def test_analyse_model_end_to_end(tiny):
    lm, tok, data = tiny
    lines: list[str] = []
    res = A.analyse_model("tiny", lm, tok, data, layers=[2, 3], batch_size=6, gen_tokens=3, gen_samples=1,
                          gen_prompts=ag.GENERATION_PROMPTS[:1], demo_prompts=ag.DEMO_PROMPTS, n_random=3,
                          n_permutations=200, gen_refine=1, gen_eps=2.0, log=lines.append)
    # each stage says how long it took (the profile of a chapter run, in its output)
    stages = [re.fullmatch(r"tiny: (.+) in (\d+) s", line) for line in lines]
    assert all(stages), lines
    assert [m.group(1) for m in stages] == ["train states and gradients collected", "test states collected",
                                            "cores of 2 layers extracted", "keep/remove/flip sweep done", "controls done",
                                            "demo prompts done", "steered generation done"]
    flat = A.flat_results({"tiny": res}, [])
    for key in ("chosen_layer", "n_layers", "auc_base", "auc_keep", "auc_remove", "auc_flip", "auc_flip_per_layer",
                "knob_r2", "knob_r2_singular", "knob_p_plural", "knob_r2_label_null", "auc_dom_flip", "auc_ace_remove_zero",
                "auc_free_remove", "generation_official_rate", "generation_refined_push", "demo_margin_flipped"):
        assert f"tiny.{key}" in flat, key
    assert flat["tiny.chosen_layer"] in (2, 3) and flat["tiny.n_layers"] == 3
    assert flat["tiny.auc_flip"] == min(flat["tiny.auc_flip_per_layer"])
    assert len(flat["tiny.auc_random_matched_flip"]) == 3 and len(flat["tiny.demo_share_base"]) == 6
    assert set(res.demo_probs) == {"base", "removed", "flipped"} and res.demo_probs["base"].shape == (6, 4)
    # the flip demo's tests: per model and Fisher-combined (one model: the same p), one- and two-sided
    for key in ("base_vs_removed", "base_vs_flipped", "removed_vs_flipped"):
        assert flat[f"demo_fisher_p_{key}"] == pytest.approx(flat[f"tiny.demo_p_{key}"]) == pytest.approx(res.demo_p[key])
        assert flat[f"demo_fisher_p_two_sided_{key}"] == pytest.approx(flat[f"tiny.demo_p_two_sided_{key}"])
    assert flat["tiny.demo_score_base"] == pytest.approx(A.demo_scores(res.demo_probs["base"], np.array(flat["demo_labels"])))
    assert set(res.generations) == {"official", "refined"}
    assert flat["pairwise_spearman"] == {}
    # the controls' own ACE edits equal the sweep's at the chosen layer
    assert res.controls.auc["ace.flip"] == pytest.approx(flat["tiny.auc_flip"], abs=1e-9)
    cfg = A.PARAMS.resolve(PRESET="ci")
    claims = A.flat_claims(flat, cfg, models=["tiny"])
    names = [r.claim for r in claims.rows]
    assert names[:2] == ["tiny: the model agrees (base AUC)", f"tiny: keeping only the core keeps agreement (ℓ = {res.chosen_layer})"]
    demo_diagnosis = any(v >= 0.5 for v in flat["tiny.demo_share_flipped"])  # a row only when the demo falls short
    # a generation rule with no scored generation (no number-marked verb in the tiny model's texts) is not tested
    unscored = [k for k in ("official", "refined") if not flat[f"tiny.generation_{k}_scored"]]
    assert len(names) == 17 + demo_diagnosis - len(unscored) and all(r.known_gap is None and r.where and r.rule for r in claims.rows)
    assert len(claims.not_tested) == len(unscored) and all("no steered generation" in r.why for r in claims.not_tested)
    # the stored form (JSON round trip) gives the same claims
    again = A.flat_claims(json.loads(json.dumps(flat)), cfg, models=["tiny"])
    assert again.records("x") == claims.records("x")
    # without controls or generation those claims are left out, never crash
    bare = {k: v for k, v in flat.items() if "random" not in k and "generation" not in k}
    assert len(A.flat_claims(bare, cfg, models=["tiny"]).rows) == 17 - 4 - 2 - 3 + demo_diagnosis


def test_remote_local_dry_run_of_states_and_sweep(tiny):
    """The remote code path (full-forward edits, saved values only) run offline via remote='local'."""
    lm, tok, data = tiny
    local = A.collect_states(lm, tok, data.train_prompts[:6], [1, 3])
    remote = A.collect_states(lm, tok, data.train_prompts[:6], [1, 3], remote="local")
    np.testing.assert_allclose(remote.H, local.H, atol=1e-6)
    np.testing.assert_allclose(remote.G, local.G, atol=1e-5, rtol=1e-4)
    cores = A.layer_cores(local)
    a = A.sweep_margins(lm, tok, data.test_prompts[:6], [1, 3], cores)
    b = A.sweep_margins(lm, tok, data.test_prompts[:6], [1, 3], cores, remote="local")
    for mode in A.MODES:
        np.testing.assert_allclose(a[mode], b[mode], atol=1e-5)


# ----------------------------------------------------------------------------- the real offline model


def test_smollm2_fast_sweep_matches_plain_hooks():
    """On the offline SmolLM2 (30 layers), the cached single-token sweep equals full-forward hooks."""
    lm, tok = llm.load_model("smollm2-135m")
    data = ag.agreement_split(24, seed=0)
    train = A.collect_states(lm, tok, data.train_prompts, [29, 30], batch_size=12)
    cores = A.layer_cores(train)
    fast = A.sweep_margins(lm, tok, data.test_prompts[:6], [29, 30], cores)
    for li, ell in enumerate([29, 30]):
        for mode in A.MODES:
            np.testing.assert_allclose(fast[mode][li], _hook_margins(lm, tok, data.test_prompts[:6], ell, cores[li], mode),
                                       atol=2e-3, rtol=1e-4)
    labels = data.test_labels[:6]
    assert roc_auc(fast["flip"][0], labels) < 0.5 < roc_auc(fast["keep"][0], labels)


def test_notebook_source_carries_no_execution_metadata():
    """The jupytext source is what the cache key hashes: execution metadata would change it at every run."""
    from pathlib import Path

    source = (Path(__file__).resolve().parents[2] / "notebooks" / "05_llm_agreement.py").read_text()
    header = source.split("# ---\n")[1]  # the jupytext header (the prose may name papermill in its run box)
    assert "papermill" not in header and "jupytext_version" not in source
    assert "session.start(chapter, globals())" in source


def test_a_stored_model_run_reads_back_the_same_analysis(tiny, tmp_path):
    from ace_helpers.chapters.llm_agreement import stored

    lm, tok, data = tiny
    res = A.analyse_model("tiny", lm, tok, data, layers=[2, 3], batch_size=6, gen_tokens=3, gen_samples=1,
                          gen_prompts=ag.GENERATION_PROMPTS[:1], demo_prompts=ag.DEMO_PROMPTS, n_random=2, n_permutations=200)
    cfg = A.PARAMS.resolve(PRESET="ci")
    stored.save_model_result(cfg, res, wall_s=1.0, directory=tmp_path)
    back, manifest = stored.load_model_result(cfg, "tiny", directory=tmp_path)
    assert manifest["params"]["model"] == "tiny" and back.cores == []
    a, b = A.flat_results({"tiny": res}, []), A.flat_results({"tiny": back}, [])
    assert a == b
    assert isinstance(back.generations["official"].clean_disagree[0], tuple) and back.knob.z.shape == res.knob.z.shape
    other = A.PARAMS.resolve(PRESET="ci", SEED=1)
    assert stored.load_model_result(other, "tiny", directory=tmp_path) is None  # other knobs: not this run
    assert stored.STORED_MODELS == ("qwen2.5-1.5b",)  # the chapter's run reads stored runs of these models only


def test_generation_samples_print_every_kth_row_of_each_model_and_rule():
    from types import SimpleNamespace

    from ace_helpers.chapters.llm_agreement import generation_samples

    g = SimpleNamespace(prompts=["a", "a", "b", "b"], clean=["x", "y", "z", "w"], steered=["X", "Y", "Z", "W"])
    text = generation_samples({"m1": {"official": g}, "m2": {"refined": g}}, 2)
    assert text.splitlines()[:4] == ["m1, official calibration:", "  PROMPT  'a'", "  clean   'x'", "  flipped 'X'"]
    assert text.count("PROMPT") == 4 and "m2, refined calibration:" in text and "'y'" not in text
    with pytest.raises(ValueError, match="every=0 is not allowed"):
        generation_samples({"m": {"official": g}}, 0)
