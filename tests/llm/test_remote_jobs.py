"""The client side of a remote job, without a server: its time limit setting, the trace options per ``remote`` value,
and an unreachable server named at once (the server-side failures are tested against a real server in
``tests/remote``)."""

from __future__ import annotations

import time

import pytest

from ace_helpers import llm
from ace_helpers.llm import remote_jobs
from ace_helpers.llm.agreement import vocabulary


def test_the_time_limit_comes_from_the_environment_and_is_checked(monkeypatch):
    monkeypatch.delenv("NDIF_TIMEOUT_S", raising=False)
    assert remote_jobs.remote_timeout() == remote_jobs.DEFAULT_TIMEOUT_S
    monkeypatch.setenv("NDIF_TIMEOUT_S", " 90 ")
    assert remote_jobs.remote_timeout() == 90.0
    for bad in ("0", "-5", "inf", "nan", "ten"):
        monkeypatch.setenv("NDIF_TIMEOUT_S", bad)
        with pytest.raises(ValueError, match=f"NDIF_TIMEOUT_S='{bad}' is not allowed: it must be a positive number"):
            remote_jobs.remote_timeout()


@pytest.fixture(scope="module")
def meta_wrapper(tmp_path_factory):
    """A remote-style wrapper (weights on the meta device) of a tiny local checkpoint, built without a server."""
    import nnsight
    from nnsight.modeling import huggingface

    lm, tok = llm.tiny_model("gpt2", words=vocabulary(), n_layers=2, seed=0)
    folder = tmp_path_factory.mktemp("tiny")
    llm.torch_module(lm).save_pretrained(folder)
    tok.save_pretrained(folder)
    huggingface._ID_CACHE[str(folder)] = str(folder)  # a local checkpoint is its own id (as remote_model does)
    return nnsight.TransformersModel(str(folder), task="text-generation", tokenizer=tok), tok


def test_trace_options_per_remote_value(meta_wrapper):
    lm, _ = meta_wrapper
    assert remote_jobs.trace_options(lm, False) == {}
    assert remote_jobs.trace_options(lm, "local") == {"remote": "local"}
    backend = remote_jobs.trace_options(lm, "http://127.0.0.1:9")["backend"]
    assert backend.host == "http://127.0.0.1:9" and backend.timeout_s == remote_jobs.remote_timeout()
    assert backend.channel is None


def test_an_unreachable_server_is_named_at_once(meta_wrapper, monkeypatch):
    lm, tok = meta_wrapper
    monkeypatch.setenv("NDIF_API_KEY", "unused")
    start = time.monotonic()
    with pytest.raises(remote_jobs.RemoteFailure, match=r"the NDIF server at http://127.0.0.1:9 cannot be reached .*NDIF_HOST"):
        llm.metric_gradients(lm, tok, ["the key"], lambda z: z[:, -1, 0], [1], gradients=False, remote="http://127.0.0.1:9")
    assert time.monotonic() - start < 15
