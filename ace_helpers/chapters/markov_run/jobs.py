"""Chapter 1's run as jobs: the seeds of every chain trained and analysed in worker processes, and the demo model.

:func:`run_chains` splits the seeds of the main chain and of the extra chains into one share per worker
process (:func:`plan_jobs`); each share trains its seeds (one ensemble per chain) and analyses each model
(:func:`run_seeds`), with one thread under the reproducible kernels.  The numbers do not depend on the
number of workers: a seed trains to the same weights in any ensemble, and each model is analysed alone.
:func:`hook_site` (the chapter's "ACE in plain sight" cell) trains the main chain's first seed and
remembers it, so that the run analyses that model instead of training it again.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import nnsight
import numpy as np
import torch

from ace_helpers.chapters.markov_run.run import (
    ALL_VARIANTS,
    EXTRA_KEYS,
    HOOK,
    PAPER_ABLATION,
    PAPER_TAIL,
    ChainRun,
    SeedAnalysis,
    analyse_model,
    chain_results,
    model_seeds,
    tail_jacobian,
    train_models,
)
from ace_helpers.method import checks
from ace_helpers.method.devices import resolve_device
from ace_helpers.method.interventions import HookSite
from ace_helpers.repro.params import Params
from ace_helpers.repro.thread_pools import cpu_cores, set_threads
from ace_helpers.toys.ensemble_runs import TrainResult
from ace_helpers.toys.models import ToyTransformer
from ace_helpers.toys.tasks.markov import MarkovData, markov_dataset, validate_transition


def hook_site(cfg: Mapping[str, Any]) -> HookSite:
    """One Markov model of a chapter, trained here with the chapter's chain and knobs (seed ``SEED``), as ACE
    sees it: the test sequences, the hook ``layers.0``, the centred tail's Jacobian (K, D) and next-token accuracy.

    ``cfg`` needs ``T``, ``N_TRAIN``, ``N_TEST``, ``SEQ_LEN``, ``D_MODEL``, ``EPOCHS``, ``LR``, ``SEED`` and
    ``PRECISION``; ``DATA_SEED``, ``TEST_DATA_SEED``, ``BATCH_SIZE``, ``DEVICE`` default to 0, 999, 64, ``"cpu"``.
    """
    options = {
        "d_model": cfg["D_MODEL"],
        "n_train": cfg["N_TRAIN"],
        "n_test": cfg["N_TEST"],
        "seq_len": cfg["SEQ_LEN"],
        "lr": cfg["LR"],
        "batch_size": cfg.get("BATCH_SIZE", 64),
        "data_seed": cfg.get("DATA_SEED", 0),
        "test_data_seed": cfg.get("TEST_DATA_SEED", 999),
        "precision": cfg["PRECISION"],
        "device": resolve_device(cfg.get("DEVICE", "cpu")),
    }
    job = SeedJob(0, validate_transition(cfg["T"]).tolist(), (int(cfg["SEED"]),), int(cfg["EPOCHS"]), options)
    data = job.data()
    model = train_remembered(job, data, remember=True)[0][0].eval()
    targets = data.test_targets
    return HookSite(
        nnsight.NNsight(model),
        data.test_inputs,
        HOOK,
        tail_jacobian(model, "centered"),
        lambda logits: float((logits.argmax(-1) == targets).double().mean()),
    )


@dataclass(frozen=True)
class SeedJob:
    """One unit of work of a chapter run: train some seeds of one chain as one ensemble, analyse each
    (picklable, for worker processes)."""

    chain: int  # index of the chain in the run (0: the main chain)
    T: list[list[float]]
    seeds: tuple[int, ...]
    epochs: int
    options: dict[str, Any]  # data, training and analysis knobs (run_chains builds them)

    def data(self) -> MarkovData:
        """The chain's train and test sequences (the same for every seed of the chain)."""
        o = self.options
        return markov_dataset(
            np.asarray(self.T), o["n_train"], o["n_test"], o["seq_len"], train_seed=o["data_seed"], test_seed=o["test_data_seed"]
        )


@dataclass
class SeedRun:
    """One seed of a :class:`SeedJob`: the trained model, its per-epoch loss, its analysis and its share of the cost."""

    model: ToyTransformer
    loss: list[float]
    analysis: SeedAnalysis
    train_s: float
    train_cpu_s: float
    seconds: float
    cpu_seconds: float


#: Models trained in this process, by what determines their weights (:func:`train_key`), as (a copy, loss,
#: train_s, train_cpu_s): chapter 1's "ACE in plain sight" cell trains the main chain's first seed, and the run
#: that follows analyses that model instead of training it again (the same weights: a seed trains alike in any
#: ensemble).
_TRAINED: dict[tuple, tuple[ToyTransformer, list[float], float, float]] = {}


def train_key(job: SeedJob, seed: int) -> tuple:
    """What fixes the weights of ``seed`` trained by ``job`` (the chain, the training data and the training knobs)."""
    o = job.options
    return (
        tuple(map(tuple, job.T)),
        int(seed),
        job.epochs,
        o["d_model"],
        o["n_train"],
        o["seq_len"],
        o["lr"],
        o["batch_size"],
        o["data_seed"],
        o["precision"],
        str(o["device"]),
    )


def remembered(job: SeedJob, seed: int) -> bool:
    """Whether this process has already trained ``seed`` as ``job`` would."""
    return train_key(job, seed) in _TRAINED


def train_remembered(
    job: SeedJob, data: MarkovData, *, remember: bool = False
) -> tuple[list[ToyTransformer], list[list[float]], float, float]:
    """``job.seeds`` trained on ``data`` (the models, their per-epoch losses, train seconds and CPU seconds):
    the seeds this process remembers are rebuilt from their weights, the others are trained as one ensemble
    (and remembered, with ``remember``)."""
    o = job.options
    todo = [s for s in job.seeds if not remembered(job, s)]
    fresh: dict[tuple, tuple[ToyTransformer, list[float], float, float]] = {}
    if todo:
        trained = train_models(
            data,
            todo,
            d_model=o["d_model"],
            epochs=job.epochs,
            batch_size=o["batch_size"],
            lr=o["lr"],
            precision=o["precision"],
            device=o["device"],
        )
        fresh = {
            train_key(job, s): (m, loss, trained.seconds / len(todo), trained.cpu_seconds / len(todo))
            for s, m, loss in zip(todo, trained.models, trained.loss)
        }
        if remember:
            _TRAINED.update({k: (copy.deepcopy(m), *rest) for k, (m, *rest) in fresh.items()})
    models, losses, secs, cpus = [], [], 0.0, 0.0
    for s in job.seeds:
        key = train_key(job, s)
        model, loss, sec, cpu = fresh[key] if key in fresh else _TRAINED[key]
        models.append((model if key in fresh else copy.deepcopy(model)).eval())
        losses.append(list(loss))
        secs, cpus = secs + sec, cpus + cpu
    return models, losses, secs, cpus


def run_seeds(job: SeedJob) -> list[SeedRun]:
    """Train ``job.seeds`` as one ensemble (each seed trains to the same weights in any company; seeds this
    process trained before are reused, :func:`train_remembered`) and analyse each model; each seed's times are
    its share of the job's."""
    start, start_cpu = time.perf_counter(), time.process_time()
    o, n = job.options, len(job.seeds)
    data = job.data()
    models, losses, train_s, train_cpu = train_remembered(job, data)
    analyses = [analyse_model(m, data, energy=o["energy"], variants=o["variants"]) for m in models]
    wall, cpu = (time.perf_counter() - start) / n, (time.process_time() - start_cpu) / n
    return [SeedRun(m, loss, a, train_s / n, train_cpu / n, wall, cpu) for m, loss, a in zip(models, losses, analyses)]


def _run_share(args: tuple[list[SeedJob], int]) -> list[list[SeedRun]]:
    """A worker's share of the jobs, one after another, with its thread budget (one thread under the setting)."""
    jobs, workers = args
    set_threads(workers=workers)
    return [run_seeds(j) for j in jobs]


def plan_jobs(
    units: Sequence[tuple[int, list[list[float]], int, int]], options: dict[str, Any], workers: int
) -> list[list[SeedJob]]:
    """Split ``units`` ((chain, T, seed, epochs), in order) into ``workers`` contiguous shares of near-equal size;
    within a share, the seeds of one chain form one job (one ensemble)."""
    workers = max(1, min(int(workers), len(units)))
    size, extra = divmod(len(units), workers)
    shares, at = [], 0
    for w in range(workers):
        part = units[at : at + size + (w < extra)]
        at += len(part)
        jobs = []
        for chain in dict.fromkeys(u[0] for u in part):
            mine = [u for u in part if u[0] == chain]
            jobs.append(SeedJob(chain, mine[0][1], tuple(u[2] for u in mine), mine[0][3], options))
        shares.append(jobs)
    return shares


def run_seed_jobs(here: Sequence[SeedJob], shares: Sequence[Sequence[SeedJob]]) -> list[tuple[SeedJob, list[SeedRun]]]:
    """Every job with its runs: ``here`` (seeds this process has trained) in this process, and ``shares``: one
    share here too, several in as many spawned processes (each inherits the kernel setting from this process's
    environment) while this process works on ``here``.  The results do not depend on how the jobs are shared:
    each seed trains to the same weights in any ensemble, and each model is analysed alone."""
    if len(shares) <= 1:
        return [(j, run_seeds(j)) for j in [*here, *(shares[0] if shares else [])]]
    import multiprocessing as mp  # load time: only a parallel run needs it

    with mp.get_context("spawn").Pool(len(shares)) as pool:
        pending = pool.map_async(_run_share, [(list(share), len(shares)) for share in shares], chunksize=1)
        local = [(j, run_seeds(j)) for j in here]
        done = pending.get()
    return local + [(j, runs) for share, share_runs in zip(shares, done) for j, runs in zip(share, share_runs)]


def chain_run(
    T: Any, seeds: Sequence[int], runs: Sequence[SeedRun], data: MarkovData, variants: Sequence[tuple[str, str]]
) -> ChainRun:
    """One chain's :class:`ChainRun` assembled from its seeds' runs (times: the sums over seeds)."""
    train = TrainResult(
        [r.model for r in runs], [r.loss for r in runs], sum(r.train_s for r in runs), sum(r.train_cpu_s for r in runs)
    )
    return ChainRun(
        validate_transition(T),
        list(seeds),
        data,
        train,
        [r.analysis for r in runs],
        list(variants),
        sum(r.seconds for r in runs),
        sum(r.cpu_seconds for r in runs),
        list(combinations(range(len(seeds)), 2)),
    )


def default_workers(device: str | torch.device) -> int:
    """Worker processes a chapter run uses by default: the CPU cores for a CPU run, one on an accelerator
    (its models share the one device)."""
    return cpu_cores() if torch.device(device).type == "cpu" else 1


def run_chains(p: Params, *, workers: int | None = None) -> tuple[dict[str, Any], ChainRun, list[ChainRun]]:
    """Run the whole chapter from resolved knobs (``PARAMS.resolve(...)``): the main chain, then ``EXTRA_CHAINS``.

    The seeds of all chains are split into ``workers`` shares (:func:`plan_jobs`), each trained (one ensemble per
    chain) and analysed in its own process (default :func:`default_workers`), while this process analyses the
    seeds it has already trained (:func:`hook_site`'s); the numbers are the same for any ``workers`` (a seed
    trains to the same weights in any ensemble).  Returns ``(results, main_run, extra_runs)``;
    ``results`` holds the flat keys of :mod:`ace_helpers.chapters.markov_cores` (the extra chains' under
    ``extra_<key>``, one list entry per chain).
    """
    device = resolve_device(p["DEVICE"])
    workers = default_workers(device) if workers is None else checks.check_int("workers", workers, low=1)
    variants = list(dict.fromkeys([(p["TAIL"], p["ABLATION"]), (PAPER_TAIL, PAPER_ABLATION)] + ALL_VARIANTS))
    options = {
        "d_model": p["D_MODEL"],
        "n_train": p["N_TRAIN"],
        "n_test": p["N_TEST"],
        "seq_len": p["SEQ_LEN"],
        "energy": p["ENERGY"],
        "lr": p["LR"],
        "batch_size": p["BATCH_SIZE"],
        "data_seed": p["DATA_SEED"],
        "test_data_seed": p["TEST_DATA_SEED"],
        "variants": variants,
        "precision": p["PRECISION"],
        "device": device,
    }
    chains = [(p["T"], model_seeds(p["SEED"], p["N_SEEDS"]), p["EPOCHS"])]
    chains += [(T, model_seeds(p["SEED"], p["EXTRA_SEEDS"]), p["EXTRA_EPOCHS"]) for T in p["EXTRA_CHAINS"]]
    units = [(c, np.asarray(T, dtype=float).tolist(), s, e) for c, (T, seeds, e) in enumerate(chains) for s in seeds]
    known = [u for u in units if remembered(SeedJob(u[0], u[1], (u[2],), u[3], options), u[2])]
    here = [j for share in plan_jobs(known, options, 1) for j in share] if known else []
    rest = [u for u in units if u not in known]
    shares = plan_jobs(rest, options, workers) if rest else []
    by_seed = {(j.chain, seed): (j, run) for j, runs in run_seed_jobs(here, shares) for seed, run in zip(j.seeds, runs)}
    done = []
    for c, (T, seeds, _) in enumerate(chains):
        runs = [by_seed[(c, s)][1] for s in seeds]
        done.append(chain_run(T, seeds, runs, by_seed[(c, seeds[0])][0].data(), variants))
    main, extras = done[0], done[1:]
    results = chain_results(main, p["TAIL"], p["ABLATION"])
    per_chain = [chain_results(r, p["TAIL"], p["ABLATION"]) for r in extras]
    results["extra_T"] = [r.T.tolist() for r in extras]
    for key in EXTRA_KEYS:
        results[f"extra_{key}"] = [c[key] for c in per_chain]
    return results, main, extras
