"""Where and in which dtype a language model runs: the DTYPE knob (the paper's bf16 / fp16 per family), loss-scaled
fp16 gradients, inputs placed on the model's device; on the CPU, with tiny random models (a CUDA run is skipped
here, with its reason, when torch sees no GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers import llm
from ace_helpers.chapters import llm_agreement as A
from ace_helpers.chapters.llm_agreement.stored import KEY_KNOBS, precision_key, store_key
from ace_helpers.llm import precision, readout
from ace_helpers.llm.agreement import DEMO_PROMPTS, GENERATION_PROMPTS, agreement_split, vocabulary

#: the CPU here; a GPU too where torch sees one (the same test, skipped with its reason elsewhere)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
PROMPTS = ["The keys to the cabinet", "The key near the doors", "The keys near the box", "The key to the cabinets"]


def test_dtype_knob_follows_the_papers_table():
    assert precision.resolve_dtype("auto", "qwen2", "cpu") == torch.float32  # the book on a CPU: float32
    assert precision.resolve_dtype("auto", "gpt2", torch.device("cuda")) == torch.float16  # the paper's fp16
    assert precision.resolve_dtype("auto", "llama", "mps") == torch.bfloat16  # and bf16
    assert precision.resolve_dtype("family", "gemma3_text", "cpu") == torch.bfloat16
    assert precision.resolve_dtype("family", "a_new_family", "cpu") == precision.OTHER_FAMILIES
    assert precision.resolve_dtype(" Float16 ", None, "cpu") == torch.float16
    assert precision.check_dtype("DTYPE", torch.bfloat16) == "bfloat16"
    for bad in ("fp16", "half", 16, None):
        with pytest.raises(ValueError, match=r"DTYPE=.* is not allowed: DTYPE must be one of \['auto', 'family'"):
            precision.check_dtype("DTYPE", bad)
    assert precision.grad_scale(torch.float16) == precision.FP16_GRAD_SCALE
    assert precision.grad_scale(torch.bfloat16) == precision.grad_scale(torch.float32) == 1.0
    assert "float32" in precision.describe_dtype("auto", "cpu") and "fp16" in precision.describe_dtype("family", "cpu")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arch", sorted(llm.tiny.ARCHS))
def test_half_precision_states_and_gradients_follow_float32(arch, device):
    """bf16 and fp16 models on ``device`` give the CPU's float32 states and gradients to within 3 %, also for a
    metric whose gradients are ~1e-5..1e-7 (where fp16 needs its loss scale: without it the same check fails)."""
    lm, tok = llm.tiny_model(arch, words=vocabulary(), n_layers=3, seed=1)
    a, b = tok.convert_tokens_to_ids("are"), tok.convert_tokens_to_ids("is")

    def metric(z):
        return 1e-5 * (z[:, -1, a] - z[:, -1, b])

    ref = llm.metric_gradients(lm, tok, PROMPTS, metric, [1, 2])
    for dtype in (torch.bfloat16, torch.float16):
        llm.torch_module(lm).to(device=device, dtype=dtype)
        half = llm.metric_gradients(lm, tok, PROMPTS, metric, [1, 2])
        assert half.H.dtype == half.G.dtype == np.float32
        for got, want in ((half.H, ref.H), (half.G, ref.G), (half.values, ref.values)):
            assert np.abs(got - want).max() <= 0.03 * np.abs(want).max()
        if dtype == torch.float16:  # the loss scale is what keeps fp16 gradients accurate
            original = readout.grad_scale
            readout.grad_scale = lambda _d: 1.0
            try:
                raw = llm.metric_gradients(lm, tok, PROMPTS, metric, [1, 2])
            finally:
                readout.grad_scale = original
            assert np.abs(raw.G - ref.G).max() > 0.05 * np.abs(ref.G).max()
    llm.torch_module(lm).to(device="cpu", dtype=torch.float32)


def test_load_model_resolves_the_dtype_knob_from_the_models_family(tmp_path):
    for arch, want in (("llama", torch.bfloat16), ("qwen2", torch.float16)):
        lm, tok = llm.tiny_model(arch, words=vocabulary(), n_layers=2, seed=0)
        folder = tmp_path / arch
        llm.torch_module(lm).save_pretrained(folder)
        tok.save_pretrained(folder)
        loaded, _ = llm.load_model(str(folder), dtype="family", device="cpu")
        assert llm.model_dtype(loaded) == want and llm.input_device(loaded) == torch.device("cpu")
        auto, _ = llm.load_model(str(folder), dtype="auto", device="cpu")
        assert llm.model_dtype(auto) == torch.float32  # "auto" on the CPU: float32, as the book runs
    with pytest.raises(ValueError, match="dtype='fp16' is not allowed"):
        llm.load_model(str(folder), dtype="fp16")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda' is not allowed here: torch sees no CUDA device"):
            llm.load_model(str(folder), device="cuda")


@pytest.mark.cuda
def test_load_model_places_the_model_on_cuda_in_its_familys_dtype(tmp_path):
    lm, tok = llm.tiny_model("qwen2", words=vocabulary(), n_layers=2, seed=0)
    llm.torch_module(lm).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, _ = llm.load_model(str(tmp_path), dtype="auto", device="cuda")  # "auto" on a GPU: the paper's dtype
    assert llm.model_dtype(loaded) == torch.float16 and llm.input_device(loaded).type == "cuda"


def test_chapter_knobs_and_stored_keys():
    cfg = A.PARAMS.resolve(PRESET="ci")
    assert cfg.DEVICE == "auto" and cfg.DTYPE == "auto"
    assert precision_key(cfg) == ({"DEVICE": "cuda", "DTYPE": "family"} if torch.cuda.is_available() else {})
    cpu = A.PARAMS.resolve(PRESET="ci", DEVICE="cpu")  # the CPU in float32: the key of the runs stored before
    assert store_key(cpu, "smollm2-135m") == {"model": "smollm2-135m", **{k: cpu[k] for k in KEY_KNOBS}}
    half = A.PARAMS.resolve(PRESET="ci", DTYPE="bfloat16", DEVICE="cpu")
    assert precision_key(half) == {"DTYPE": "bfloat16"}  # stored beside the float32 run, never read for it
    assert precision_key(A.PARAMS.resolve(PRESET="ci", DTYPE="float32", DEVICE="cpu")) == {}
    with pytest.raises(ValueError, match="DTYPE='int8' is not allowed"):
        A.PARAMS.resolve(PRESET="ci", DTYPE="int8")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="DEVICE='cuda' is not allowed here"):
            A.PARAMS.resolve(PRESET="ci", DEVICE="cuda")


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_analysis_runs_end_to_end(device):
    """The whole per-model analysis (states, cores, sweep, controls, demo, generation) on a bf16 model on
    ``device``."""
    lm, tok = llm.tiny_model("llama", words=vocabulary(), n_layers=3, seed=2)
    llm.torch_module(lm).to(device=device, dtype=torch.bfloat16)
    data = agreement_split(24, seed=0)
    res = A.analyse_model("tiny", lm, tok, data, layers=[2, 3], batch_size=8, gen_tokens=2, gen_samples=1,
                          gen_prompts=GENERATION_PROMPTS[:1], demo_prompts=DEMO_PROMPTS, n_random=2,
                          n_permutations=200, gen_refine=1, gen_eps=2.0, log=lambda _line: None)
    flat = A.flat_results({"tiny": res}, [])
    assert all(np.isfinite(flat[f"tiny.{k}"]) for k in ("auc_base", "auc_keep", "auc_remove", "auc_flip"))


@pytest.mark.cuda
def test_cuda_states_follow_the_cpu():
    """On a GPU: inputs follow the model there, and float32 states and gradients equal the CPU's to rounding."""
    lm, tok = llm.tiny_model("llama", words=vocabulary(), n_layers=3, seed=1)
    metric = lambda z: z[:, -1, 5] - z[:, -1, 6]  # noqa: E731
    ref = llm.metric_gradients(lm, tok, PROMPTS, metric, [1, 2])
    llm.torch_module(lm).to("cuda")
    assert llm.input_device(lm).type == "cuda"
    got = llm.metric_gradients(lm, tok, PROMPTS, metric, [1, 2])
    np.testing.assert_allclose(got.H, ref.H, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got.G, ref.G, rtol=1e-3, atol=1e-6)
