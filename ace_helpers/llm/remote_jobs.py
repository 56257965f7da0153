"""One remote job on an NDIF server, bounded in time and with errors that say what happened and what to do.

nnsight's blocking remote backend waits on the server's websocket without a limit, and passes on what goes wrong
as the server or the socket library words it.  :func:`trace_options` gives the keyword arguments of
``lm.trace(...)`` for a run with ``remote=...``: a backend of nnsight's own protocol (subscribe, send, read status
updates until COMPLETED) that gives up after :func:`remote_timeout` seconds and raises

- :class:`RemoteTimeout` (a ``TimeoutError``) when no result came within the limit (``$NDIF_TIMEOUT_S``);
- :class:`RemoteFailure` (a ``RuntimeError``) when the server cannot be reached or is not ready yet, closes the connection before the
  job finished (it stopped or restarted mid-request), does not serve the model, or reports that the job failed.

A result too large for the socket comes back through the server's object store (a presigned URL nnsight downloads);
that path is the same as nnsight's.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

#: Seconds a remote job may take, from sending it to its result, unless ``$NDIF_TIMEOUT_S`` says otherwise.
DEFAULT_TIMEOUT_S = 1800.0

#: Seconds between two looks at the clock while waiting (also the status display's refresh).
POLL_S = 0.25

#: Seconds to open the websocket before saying the server cannot be reached.
CONNECT_S = 10.0


class RemoteTimeout(TimeoutError):
    """A remote job gave no result within its time limit."""


class RemoteFailure(RuntimeError):
    """A remote job could not run: server unreachable or stopped, model not served, or the job failed there."""


def remote_timeout() -> float:
    """Seconds a remote job may take: ``$NDIF_TIMEOUT_S`` (a positive number), else :data:`DEFAULT_TIMEOUT_S`."""
    text = os.environ.get("NDIF_TIMEOUT_S", "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(
            f"NDIF_TIMEOUT_S={text!r} is not allowed: it must be a positive number of seconds (unset: {DEFAULT_TIMEOUT_S:g})"
        )
    return value


def _unreachable(host: str, exc: BaseException) -> RemoteFailure:
    return RemoteFailure(
        f"the NDIF server at {host} cannot be reached ({exc}). Check the network and $NDIF_HOST "
        "(unset: https://api.ndif.us), or run locally (remote=False)"
    )


def _job_failed(host: str, model: str, description: str) -> RemoteFailure:
    lines = description.strip().splitlines() or ["no reason given"]
    description = lines[0] + (" (the server's traceback: in the chained error)" if len(lines) > 1 else "")
    if "deploy" in description.lower() or "not found" in description.lower():
        return RemoteFailure(
            f"the NDIF server at {host} does not serve the model {model!r} ({description}). Use a model it serves "
            "(ndif.us lists them at https://nnsight.net/status), deploy it on your own server, or run locally (remote=False)"
        )
    return RemoteFailure(f"the remote job on the NDIF server at {host} failed there: {description}")


@functools.cache
def _backend_class() -> type:
    """nnsight's ``RemoteBackend`` with a deadline and these errors (built on first use: nnsight is a heavy import)."""
    import websocket  # load time: a heavy import, done on first use
    from nnsight.intervention.backends.remote import RemoteBackend, RemoteError  # load time: as above
    from nnsight.schema.response import Status  # load time: as above

    class DeadlineBackend(RemoteBackend):
        """A blocking remote run that gives up after ``timeout_s`` seconds (see the module's docstring)."""

        def __init__(self, *args: Any, timeout_s: float, name: str, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.timeout_s, self.name = timeout_s, name
            self.channel: str | None = None  # how the last result came: "socket" (inline) or "object store" (a URL)

        def request(self, request: Any, tracer: Any) -> Any:
            blob = self._serialize(tracer)
            header = {"ndif-api-key": self.api_key} if self.api_key else None
            try:
                socket = websocket.create_connection(
                    f"{self.ws_host}/subscribe", header=header, timeout=min(CONNECT_S, self.timeout_s)
                )
            except (OSError, websocket.WebSocketException) as exc:
                raise _unreachable(self.host, exc) from exc
            deadline, status, job = time.monotonic() + self.timeout_s, "not sent", None
            try:
                request.session_id = json.loads(socket.recv())["session_id"]
                self.send(request, blob)
                status = "sent"
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise RemoteTimeout(
                            f"the NDIF server at {self.host} gave no result within {self.timeout_s:g} s (job {job}, last "
                            f"status {status}): it is queued behind other jobs or runs longer. Set NDIF_TIMEOUT_S to "
                            "allow more seconds, or try again later"
                        )
                    socket.settimeout(min(left, POLL_S))
                    try:
                        message = socket.recv()
                    except websocket.WebSocketTimeoutException:
                        self.display.refresh()
                        continue
                    response = self.parse(message)
                    job, status = response.id or job, getattr(response.status, "value", response.status)
                    result = self.handle(response)
                    if response.status == Status.COMPLETED:
                        self.channel = "object store" if isinstance(response.data, str) else "socket"
                        return result
            except RemoteTimeout:
                raise
            except TimeoutError as exc:  # the server accepted the socket but did not say the session's id in time
                raise _unreachable(self.host, exc) from exc
            except RemoteError as exc:
                text = str(exc)
                if "temporarily unavailable" in text.lower() or "503" in text:
                    raise RemoteFailure(
                        f"the NDIF server at {self.host} is up but not ready to take jobs ({text}). Try again in a few minutes"
                    ) from exc
                if text.startswith("Failed to send request"):
                    raise _unreachable(self.host, exc) from exc
                raise _job_failed(self.host, self.name, text) from exc
            except (websocket.WebSocketConnectionClosedException, OSError) as exc:
                raise RemoteFailure(
                    f"the NDIF server at {self.host} closed the connection before the job finished (job {job}, last "
                    f"status {status}; {type(exc).__name__}: {exc}): it stopped or restarted mid-request. Check that "
                    f"{self.host}/ping answers, then run again"
                ) from exc
            finally:
                socket.close()

    return DeadlineBackend


def trace_options(lm: Any, remote: bool | str) -> dict[str, Any]:
    """Keyword arguments of ``lm.trace`` for a run with ``remote``: none locally (``False``), nnsight's serverless
    dry run for ``"local"``, and for ``True`` (or a server URL) a bounded backend (:func:`remote_timeout`)."""
    if remote is False or remote is None:
        return {}
    if remote == "local":
        return {"remote": "local"}
    backend = _backend_class()(
        lm.to_model_key(),
        host=remote if isinstance(remote, str) else None,
        env=lm._remoteable_get_env(),
        timeout_s=remote_timeout(),
        name=str(getattr(lm, "repo_id", None) or lm.to_model_key()),
    )
    return {"backend": backend}


__all__ = ["DEFAULT_TIMEOUT_S", "RemoteFailure", "RemoteTimeout", "remote_timeout", "trace_options"]
