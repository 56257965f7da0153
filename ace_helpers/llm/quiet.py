"""Quiet model loading: transformers' progress bars, info / warning logs and Python warnings switched off while a
model loads, and restored afterwards."""

from __future__ import annotations

import contextlib
import functools
import warnings


@contextlib.contextmanager
def quiet_loading():
    """Switch off transformers' progress bars, its info / warning logs and Python warnings while loading.

    Covers the "Loading weights" bar, the Hub download bars and the GGUF converter's
    "Converting and de-quantizing GGUF tensors" bar (a plain ``tqdm`` in transformers, patched to
    ``disable=True`` here).  Everything is restored on exit, also after an error.
    """
    from transformers.utils import logging as hf_logging  # load time: a heavy import, done on first use

    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    gguf_utils = original = None
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils  # load time: a heavy import, done on first use

        original = gguf_utils.tqdm
        gguf_utils.tqdm = functools.partial(original, disable=True)
    except (ImportError, AttributeError):
        gguf_utils = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if gguf_utils is not None:
            gguf_utils.tqdm = original
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


__all__ = ["quiet_loading"]
