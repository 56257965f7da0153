"""A server that stops in the middle of a job: the client says so within seconds, instead of waiting for ever.

This module runs after ``test_remote.py`` (pytest takes the files in name order): it kills the server's API, which
the session's other tests need.
"""

from __future__ import annotations

import threading
import time

import pytest

from ace_helpers import llm
from ace_helpers.llm.remote_jobs import RemoteFailure

PROMPTS = ["the key near the cabinets", "the keys near the cabinet", "the dog is", "the dogs near the cat"]


def test_the_api_stopping_mid_request_is_named_and_nothing_hangs(ndif):
    lm, tok = llm.load_model(ndif.smollm2, remote=True)
    llm.metric_gradients(lm, tok, PROMPTS[:1], lambda z: z[:, -1, 0], [1], gradients=False, remote=True)  # warm
    killer = threading.Timer(1.0, ndif.kill, args=("api",))
    start = time.monotonic()
    killer.start()
    try:
        with pytest.raises(RemoteFailure, match=r"closed the connection before the job finished .*stopped or restarted "
                                                r"mid-request.*/ping"):
            llm.metric_gradients(lm, tok, PROMPTS * 50, lambda z: z[:, -1, 0], list(range(1, 31)), batch_size=200,
                                 remote=True)
    finally:
        killer.join()
    assert 1.0 <= time.monotonic() - start < 30
