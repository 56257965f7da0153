"""Remote models on NDIF: where traces go, the key, and a wrapper whose traces run on the server.

nnsight sends a trace made with ``remote=True`` to an NDIF server: ``https://api.ndif.us`` by default, or the server
named by ``$NDIF_HOST`` (your own deployment, e.g. ``http://127.0.0.1:8001``); the key comes from ``$NDIF_API_KEY``
(read by nnsight, never printed or stored here).  :func:`remote_model` checks both before anything is built and
says what to do when the server cannot be reached; a model is a Hub id, or, on a server of your own that serves
local checkpoints, the checkpoint's folder (the same path on the client and the server).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

#: Seconds to wait for the server's ``/ping`` before saying it cannot be reached.
PING_TIMEOUT_S = 10.0


def ndif_host() -> str:
    """The NDIF server that remote traces go to: ``$NDIF_HOST``, else nnsight's configured host."""
    from nnsight import CONFIG  # load time: a heavy import, done on first use

    host = os.environ.get("NDIF_HOST") or CONFIG.API.HOST
    CONFIG.API.HOST = host  # nnsight reads $NDIF_HOST once, when it is first imported
    return host.rstrip("/")


def check_server(host: str | None = None, *, timeout: float = PING_TIMEOUT_S) -> None:
    """Raise ``RuntimeError`` when the NDIF server at ``host`` (default :func:`ndif_host`) does not answer ``/ping``
    within ``timeout`` seconds, naming the host and what to check."""
    host = (host or ndif_host()).rstrip("/")
    try:
        with urllib.request.urlopen(f"{host}/ping", timeout=timeout) as reply:
            if reply.status == 200:
                return
            problem = f"it answered /ping with HTTP {reply.status}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        problem = f"it did not answer /ping within {timeout:g} s ({getattr(exc, 'reason', exc)})"
    raise RuntimeError(
        f"the NDIF server at {host} cannot be reached: {problem}. Check the network and $NDIF_HOST (unset: "
        "https://api.ndif.us; your own deployment: e.g. NDIF_HOST=http://127.0.0.1:8001), or run locally (remote=False)"
    )


def remote_model(name: str):
    """An nnsight wrapper of ``name`` whose traces run on the NDIF server (``lm.trace(..., remote=True)``).

    Args:
        name: a Hub id (its config is read from the Hub or the local Hugging Face cache), or the folder of a
            checkpoint that your own NDIF server serves under the same path (read here for its config and
            tokenizer; the server is asked for that folder, never the Hub).

    Returns:
        ``(lm, tokenizer)``: ``lm`` an ``nnsight.TransformersModel`` on the meta device.

    Raises:
        RuntimeError: no ``$NDIF_API_KEY``, a server that cannot be reached (:func:`check_server`), or a
            model whose config cannot be read.
    """
    import nnsight  # load time: a heavy import, done on first use
    from nnsight.modeling import huggingface  # load time: a heavy import, done on first use

    if not os.environ.get("NDIF_API_KEY"):
        raise RuntimeError(
            "remote=True needs an NDIF API key: set the environment variable NDIF_API_KEY "
            "(get one at https://login.ndif.us; a server of your own without authentication takes any string); "
            "it is read by nnsight and never printed or stored"
        )
    check_server()
    kwargs = {}
    folder = Path(name).expanduser()
    if folder.is_dir():
        from transformers import AutoTokenizer  # load time: a heavy import, done on first use

        name = str(folder.resolve())
        huggingface._ID_CACHE[name] = name  # a local checkpoint is its own id: no Hub lookup for its remote key
        kwargs["tokenizer"] = AutoTokenizer.from_pretrained(name)
    try:
        lm = nnsight.TransformersModel(name, task="text-generation", **kwargs)
    except OSError as exc:
        raise RuntimeError(
            f"could not build the remote wrapper for {name!r}: its config must be readable here (a local folder, "
            f"the Hugging Face cache, or the Hub with network access; HF_TOKEN for gated models). Original error: {exc}"
        ) from exc
    lm.tokenizer.padding_side = "left"
    if lm.tokenizer.pad_token is None:
        lm.tokenizer.pad_token = lm.tokenizer.eos_token
    return lm, lm.tokenizer
