"""Sweeps of independent runs: one job per run, on Dask distributed or in-process, resumable.

A sweep is a list of :class:`Job` s.  Each job names a function by its import path
(``"package.module:function"``, so any worker can import it) and its plain keyword arguments.
A finished job is stored as a checksummed artifact (:func:`ace_helpers.repro.artifacts.save_artifact`)
whose name is a hash of the function and its arguments, so a rerun, on this machine or another
one that shares the store folder, skips every job already stored; a corrupt or partial artifact
does not load and its job runs again.

Where a job runs never changes its result: a job is a pure function of its arguments, run with
one torch thread, and its result is stored as plain JSON.  With no scheduler given,
:func:`run_sweep` starts a :class:`distributed.LocalCluster` of single-threaded worker processes;
with ``scheduler="tcp://host:8786"`` it submits to a running cluster (``dask scheduler`` /
``dask worker``, or ``dask-jobqueue`` on SLURM); ``in_process=True`` runs the jobs one after
another in this process; ``gpus=N`` starts one worker per GPU, worker i pinned to GPU i (jobs that ask for
``device="cuda"`` then train on their worker's GPU; on a cluster of several machines, start one ``dask worker
--nworkers 1`` per GPU with ``CUDA_VISIBLE_DEVICES`` set to it).  A failing job is reported with its arguments and the others go on.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ace_helpers.repro.artifacts import load_artifact, save_artifact, to_plain
from ace_helpers.repro.thread_pools import cpu_cores


@dataclass(frozen=True)
class Job:
    """One independent run: ``fn`` (``"module:function"``) called with ``kwargs`` (plain values).

    ``stored_as``: the function path the stored result is keyed by, when it differs from ``fn``: a
    function that moves to another module keeps its old path here, so its stored runs are still found.
    """

    fn: str
    kwargs: Mapping[str, Any]
    stored_as: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        """What the stored artifact is keyed by: the function (``stored_as`` if given) and its arguments (plain)."""
        return {"fn": self.stored_as or self.fn, "kwargs": to_plain(dict(self.kwargs))}

    @property
    def name(self) -> str:
        """Artifact name: the function's name and a 16-hex hash of :attr:`params`."""
        digest = hashlib.sha256(json.dumps(self.params, sort_keys=True).encode()).hexdigest()[:16]
        return f"{self.fn.rsplit(':', 1)[-1]}_{digest}"


@dataclass
class SweepReport:
    """What a sweep did: ``results`` (job name -> stored result, jobs in order, finished ones only),
    ``failed`` ((job, error text) pairs), and how many jobs were ``skipped`` (already stored) or ``ran``."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: list[tuple[Job, str]] = field(default_factory=list)
    skipped: int = 0
    ran: int = 0
    wall_s: float = 0.0


def resolve(fn: str) -> Callable[..., Mapping[str, Any]]:
    """The function an import path ``"module:function"`` names (``ValueError`` if it does not)."""
    module, sep, attr = fn.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"job function {fn!r} is not allowed: it must be 'package.module:function'")
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"job function {fn!r} cannot be imported: {err}") from None
    if not callable(found):
        raise ValueError(f"job function {fn!r} is not callable")
    return found


def run_job(job: Job, store: str | os.PathLike) -> dict[str, Any]:
    """Run ``job`` with one torch thread and store its result in ``store``; returns the result.

    The function must return a mapping of plain values (numbers, strings, lists, dicts).
    """

    torch.set_num_threads(1)
    start = time.perf_counter()
    result = to_plain(dict(resolve(job.fn)(**job.kwargs)))
    save_artifact(store, job.name, params=job.params, data=result, wall_s=time.perf_counter() - start)
    return result


def stored(job: Job, store: str | os.PathLike) -> dict[str, Any] | None:
    """The stored result of ``job`` (checksums and parameters verified), or None."""
    found = load_artifact(store, job.name, job.params)
    return None if found is None else found.data


def check_gpus(gpus: Any, available: int | None = None) -> int:
    """``gpus`` checked against the CUDA devices torch sees (``available``: that count, for tests); returns it."""
    available = torch.cuda.device_count() if available is None else available
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise ValueError(f"gpus={gpus!r} is not allowed: gpus must be a positive integer (one Dask worker per GPU)")
    if gpus > available:
        raise ValueError(f"gpus={gpus} is not allowed here: torch sees {available} CUDA device(s)")
    return gpus


def gpu_of(worker_name: Any, n_gpus: int) -> int:
    """The GPU a local-cluster worker trains on: worker i (its name, ``0 … n − 1``) on GPU i."""
    index = int(worker_name)
    if not 0 <= index < n_gpus:
        raise ValueError(f"worker {worker_name!r} has no GPU: this cluster pins workers 0 to {n_gpus - 1}, one per GPU")
    return index


def pin_gpu(dask_worker: Any) -> int:
    """Run on every worker (``client.run``): make its GPU (:func:`gpu_of`) the current CUDA device; returns its index."""
    index = gpu_of(dask_worker.name, torch.cuda.device_count())
    torch.cuda.set_device(index)
    return index


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm  # load time: a heavy import, done on first use

    return tqdm(total=total, desc=desc, unit="job", disable=not enabled, leave=True)


def run_sweep(
    jobs: Sequence[Job],
    store: str | os.PathLike,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    in_process: bool = False,
    gpus: int | None = None,
    progress: bool = True,
    desc: str = "sweep",
    log: Callable[[str], None] | None = print,
) -> SweepReport:
    """Run every job of ``jobs`` not yet stored in ``store``; returns a :class:`SweepReport`.

    Args:
        jobs: the sweep (names must be distinct: the same run listed twice is refused).
        store: folder of the stored results (created; shared between machines to resume there).
        workers: worker processes of the :class:`~distributed.LocalCluster` started when no
            ``scheduler`` is given (default: the CPU cores, at most the number of jobs).
        scheduler: address of a running Dask scheduler to submit to instead.
        in_process: run the jobs here, one after another (no Dask).
        gpus: start a LocalCluster of one worker per GPU, worker i on GPU i (refused when torch sees fewer GPUs).
        progress: show a progress bar (jobs done / remaining, ETA).
    """

    names = [t.name for t in jobs]
    if len(set(names)) != len(names):
        raise ValueError("the sweep lists the same job twice: every job must have distinct arguments")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ValueError(f"workers={workers!r} is not allowed: workers must be a positive integer")
    if sum((scheduler is not None, in_process, gpus is not None, workers is not None)) > 1:
        raise ValueError("workers, scheduler, in_process and gpus exclude each other: give one of them")
    if gpus is not None:
        workers = check_gpus(gpus)
    for t in jobs:
        resolve(t.fn)  # refuse an unknown function before any compute
    store = Path(store)
    store.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    report = SweepReport()
    found = {t.name: stored(t, store) for t in jobs}
    todo = [t for t in jobs if found[t.name] is None]
    report.skipped = len(jobs) - len(todo)
    if log and report.skipped:
        log(f"{desc}: {report.skipped} of {len(jobs)} jobs already stored in {store}; running {len(todo)}")
    done: dict[str, dict[str, Any]] = {}
    bar = _progress(len(todo), desc, progress and bool(todo))
    try:
        if in_process:
            for t in todo:
                try:
                    done[t.name] = run_job(t, store)
                except Exception as err:  # noqa: BLE001 - a failing job is reported, the others go on
                    report.failed.append((t, f"{type(err).__name__}: {err}"))
                bar.update(1)
        elif todo:
            _run_on_dask(
                todo, store, workers or max(1, min(cpu_cores(), len(todo))), scheduler, done, report, bar, pin=gpus is not None
            )
    finally:
        bar.close()
    report.ran = len(done)
    for t in jobs:
        result = found[t.name] if found[t.name] is not None else done.get(t.name)
        if result is not None:
            report.results[t.name] = result
    report.wall_s = time.perf_counter() - start
    if log:
        for t, err in report.failed:
            log(f"{desc}: job {t.fn} {dict(t.kwargs)} failed: {err}")
    return report


def _run_on_dask(todo, store, workers, scheduler, done, report, bar, *, pin: bool = False) -> None:
    """Submit ``todo`` to a cluster (a new single-threaded LocalCluster, or ``scheduler``) and collect; ``pin``: each
    local worker on its own GPU (:func:`pin_gpu`)."""
    from distributed import Client, LocalCluster, as_completed  # load time: a heavy import, done on first use

    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        cluster, client = None, Client(scheduler)
    try:
        if pin:
            client.run(pin_gpu)
        futures = {client.submit(run_job, t, str(store), key=t.name, pure=False): t for t in todo}
        for fut in as_completed(futures):
            t = futures[fut]
            try:
                done[t.name] = fut.result()
            except Exception as err:  # noqa: BLE001 - reported with its arguments; the others go on
                report.failed.append((t, f"{type(err).__name__}: {err}"))
            bar.update(1)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
