"""Test session setup: one torch thread (2-core machines slow 16x under contention), no network."""

import os

os.environ.setdefault("TORCH_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_configure(config):
    from ace_helpers.params import set_threads

    set_threads()
