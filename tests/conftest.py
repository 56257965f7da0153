"""Test session setup: one torch thread (2-core machines slow 16x under contention), no network, the
reproducible kernels for every process it starts (``make test`` starts pytest itself under them)."""

import os

os.environ.setdefault("TORCH_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA device; skipped, with its reason, where torch sees none "
                            "(`benchmarks/gpu.py`'s tests step runs these on a GPU)")
    from ace_helpers.repro.kernels import apply
    from ace_helpers.repro.thread_pools import set_threads

    apply()  # the notebook kernels and test workers started from here compute under the reproducible kernels
    set_threads()


def pytest_report_header(config):
    from ace_helpers.repro.kernels import describe

    return describe()


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``cuda`` where torch sees no CUDA device, saying so: never counted as passes."""
    import pytest
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: torch sees none on this machine")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
