"""A real NDIF server for the remote tests, started here and stopped by process id (``make remote-test``).

The stack (``stack/start.sh``: Redis, moto's S3, a Ray head with ndif's controller and our CPU model actor, ndif's
API) runs inside the network namespace ``make remote-test`` creates, which has only loopback: nothing in it can listen
on or reach another address.  The session fixture :func:`ndif` deploys a tiny random GPT-2 and SmolLM2-135M from
local folders, points the client at ``http://127.0.0.1:8001`` and, at the end (also after a failure), stops every
process of the namespace but this one and checks that no process and no listening socket is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STACK = Path(__file__).resolve().parent / "stack"
HOST = "http://127.0.0.1:8001"
START_TIMEOUT_S = 420
READY_TIMEOUT_S = 180
STOP_GRACE_S = 10.0


def only_loopback() -> bool:
    """Whether this process's network namespace has no interface but ``lo``."""
    try:
        return sorted(os.listdir("/sys/class/net")) == ["lo"]
    except OSError:
        return False


def _namespace_pids() -> list[int]:
    """Processes in this network namespace, except this one and its ancestors (make's shell, pytest)."""
    mine = os.readlink("/proc/self/ns/net")
    keep, pid = set(), os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in keep:
            try:
                if os.readlink(entry / "ns" / "net") == mine:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _listening() -> list[str]:
    """Listening TCP sockets of this namespace, as ``ss`` prints them."""
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=False).stdout
    return [line for line in out.splitlines() if line.strip()]


def stop_everything() -> tuple[list[int], list[str]]:
    """SIGTERM every other process of the namespace, SIGKILL what is left after :data:`STOP_GRACE_S`; returns the
    processes and listening sockets still there afterwards (both empty when the stop worked)."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        for pid in _namespace_pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while _namespace_pids() and time.monotonic() < deadline:
            time.sleep(0.2)
    deadline = time.monotonic() + STOP_GRACE_S  # a killed process's listening socket closes a moment after it is gone
    while _listening() and not _namespace_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    return _namespace_pids(), _listening()


def save_tiny_gpt2(folder: Path) -> Path:
    """A tiny random GPT-2 (2 blocks, width 32) with a word-level tokenizer, saved as a local checkpoint."""
    from ace_helpers import llm

    words = "the cat cats dog dogs is are was were near keys key cabinet cabinets hello world".split()
    lm, tok = llm.tiny_model("gpt2", words=words, n_layers=2, d_model=32, n_heads=4, seed=0)
    llm.torch_module(lm).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def wait_until_serving(folder: str) -> None:
    """Return once the server runs a one-token trace of the deployed ``folder`` (its API answers before its link to
    Ray is up: "not ready"), within :data:`READY_TIMEOUT_S`; any other failure is raised at once."""
    from ace_helpers import llm
    from ace_helpers.llm.remote_jobs import RemoteFailure

    lm, tok = llm.load_model(folder, remote=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            llm.metric_gradients(lm, tok, ["the cat"], lambda z: z[:, -1, 0], [1], gradients=False, remote=True)
            return
        except RemoteFailure as exc:
            if "not ready" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(2.0)


@pytest.fixture
def tiny_checkpoint():
    """:func:`save_tiny_gpt2`, for a test that needs a checkpoint the server does not serve."""
    return save_tiny_gpt2


@dataclass(frozen=True)
class Server:
    """The running test server: its host and the local folders it serves."""

    host: str
    tiny: str
    smollm2: str
    run_dir: Path

    def kill(self, service: str) -> None:
        """SIGKILL one background service of the stack (``redis``, ``moto``, ``api``) and its whole process group."""
        for line in (self.run_dir / "pids").read_text().splitlines():
            name, pid = line.split()
            if name == service:
                os.killpg(int(pid), signal.SIGKILL)
                return
        raise KeyError(f"no service {service!r} in {self.run_dir / 'pids'}")


@pytest.fixture(scope="session")
def ndif() -> Server:
    if not only_loopback():
        pytest.skip("the remote tests start an NDIF server: run them with `make remote-test` (a loopback-only network namespace)")
    venv = Path(os.environ.get("ACE_NDIF_VENV", ROOT / ".venv-ndif"))
    if not (venv / "bin" / "ray").exists():
        pytest.skip(f"the NDIF server's venv {venv} is missing: `make remote-venv`")
    from ace_helpers import llm

    run_dir = Path(tempfile.mkdtemp(prefix="ndif", dir="/tmp"))  # short: Ray's socket paths live under it
    tiny = str(save_tiny_gpt2(run_dir / "tiny-gpt2"))
    smollm2 = str(llm.offline_model_path("smollm2-135m"))
    env = dict(os.environ, RUN_DIR=str(run_dir), SERVER_VENV=str(venv))
    try:
        started = subprocess.run(["bash", str(STACK / "start.sh"), tiny, smollm2], env=env, capture_output=True,
                                 text=True, timeout=START_TIMEOUT_S, check=False)
        if started.returncode:
            raise RuntimeError(f"the NDIF stack did not start:\n{started.stdout[-3000:]}\n{started.stderr[-3000:]}")
        os.environ.update(NDIF_HOST=HOST, NDIF_API_KEY="local")  # no authentication on this server: any key
        wait_until_serving(tiny)
        yield Server(HOST, tiny, smollm2, run_dir)
    finally:
        left, sockets = stop_everything()
        assert not left and not sockets, f"left behind: processes {left}, listening {sockets}"
