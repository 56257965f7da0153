"""Chapter 1 pipeline: train the seeds, analyse each model, compare them, flatten the results.

:func:`run_chains` runs the main chain and the extra chains; :func:`chain_results` turns one
chain's run into the flat ``results.json`` keys listed in :mod:`ace_helpers.chapters.markov_cores`.
The eigenvalue check reads three numbers per true eigenvalue λ of the chain: the relative error
of the operator fitted to the core coordinates (:func:`relative_eig_errors`), the same for the
operator fitted to each coordinate's current-state mean (:func:`state_mean_coords`), and the
sampling floor of the test steps themselves (:func:`sampling_floor`: the eigenvalues of the
transition matrix counted on them, which a core holding exactly the current state would give).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import nnsight
import numpy as np
import torch

from ace_helpers.chapters.toy_models.markov_spectra import (  # noqa: F401 - part of the pipeline's API
    empirical_transition,
    relative_eig_errors,
    sampling_floor,
    sorted_eigs,
    state_mean_coords,
)
from ace_helpers.method import checks, compare, interventions
from ace_helpers.method.checks import check_choice
from ace_helpers.method.devices import resolve_device
from ace_helpers.method.core import Core, extract_core_from_gramians
from ace_helpers.method.interventions import HookSite
from ace_helpers.method.operators import fit_dynamics, match_eigenvalues
from ace_helpers.repro.params import Params
from ace_helpers.repro.thread_pools import cpu_cores, set_threads
from ace_helpers.toys.ensemble_runs import TrainResult, train_seeds
from ace_helpers.toys.models import ToyConfig, ToyTransformer
from ace_helpers.toys.tasks.markov import (
    MarkovData,
    bayes_accuracy,
    chance_accuracy,
    markov_dataset,
    nontrivial_eigenvalues,
    oracle_r2,
    state_r2,
    validate_transition,
)

HOOK = "layers.0"
ANALYSIS_BATCH = 256  # sequences per forward pass in the analysis (keeps activations in cache)
TAILS = ("centered", "logits")
ABLATIONS = ("mean", "zero")
PAPER_TAIL, PAPER_ABLATION = "logits", "zero"
ALL_VARIANTS = [(t, a) for t in TAILS for a in ABLATIONS]
SEED_STRIDE = 100  # paper: seed_all(0 + 100·m)

#: The largest chain the Markov chapters take (the core has n − 1 dimensions; beyond this the toy is no toy).
MAX_STATES = 64


def model_seeds(seed: int, n: int) -> list[int]:
    """The paper's model seeds ``seed + 100·m``, m = 0..n−1 (0, 100, 200 for seed 0)."""
    return [int(seed) + SEED_STRIDE * m for m in range(n)]


# -------------------- training --------------------------------------------------------------
def toy_config(n_states: int, d_model: int) -> ToyConfig:
    """The paper's one-layer model for an n-state chain: 4 heads, d_ff = 4·d, dropout 0.1, max_len 64."""
    return ToyConfig(vocab=int(n_states), d_model=int(d_model), n_layers=1, n_heads=4, max_len=64, dropout=0.1)


def train_models(
    data: MarkovData,
    seeds: Sequence[int],
    *,
    d_model: int = 64,
    epochs: int = 40,
    batch_size: int = 64,
    lr: float = 1e-4,
    method: str = "ensemble",
    precision: str = "fp32", device: str | torch.device = "cpu",
) -> TrainResult:
    """Train one model per seed on ``data`` (AdamW, no weight decay, CE on every position).

    The chapter's model (:func:`toy_config`) trained by :func:`ace_helpers.toys.ensemble_runs.train_seeds`
    (``method``: ``"ensemble"`` all seeds at once, ``"ensemble1"`` the same code one seed at a
    time, ``"sequential"`` the plain ``train_lm`` loop).  ``precision="bf16"`` trains under bf16
    autocast with the fast kernels (see :mod:`ace_helpers.toys.precision`); ``device``: where they train (CPU models back).
    """
    check_choice("method", method, ("ensemble", "ensemble1", "sequential"))
    return train_seeds(toy_config(data.n_states, d_model), data.train_inputs, data.train_targets, seeds,
                       epochs=epochs, batch_size=batch_size, lr=lr, method=method, precision=precision, device=device)


def hook_site(cfg: Mapping[str, Any]) -> HookSite:
    """One Markov model of a chapter, trained here with the chapter's chain and knobs (seed ``SEED``), as ACE
    sees it: the test sequences, the hook ``layers.0``, the centred tail's Jacobian (K, D) and next-token accuracy.

    ``cfg`` needs ``T``, ``N_TRAIN``, ``N_TEST``, ``SEQ_LEN``, ``D_MODEL``, ``EPOCHS``, ``LR``, ``SEED`` and
    ``PRECISION``; ``DATA_SEED``, ``TEST_DATA_SEED``, ``BATCH_SIZE``, ``DEVICE`` default to 0, 999, 64, ``"cpu"``.
    """
    options = dict(d_model=cfg["D_MODEL"], n_train=cfg["N_TRAIN"], n_test=cfg["N_TEST"], seq_len=cfg["SEQ_LEN"],
                   lr=cfg["LR"], batch_size=cfg.get("BATCH_SIZE", 64), data_seed=cfg.get("DATA_SEED", 0),
                   test_data_seed=cfg.get("TEST_DATA_SEED", 999), precision=cfg["PRECISION"],
                   device=resolve_device(cfg.get("DEVICE", "cpu")))  # fmt: skip
    job = SeedJob(0, validate_transition(cfg["T"]).tolist(), (int(cfg["SEED"]),), int(cfg["EPOCHS"]), options)
    data = job.data()
    model = train_remembered(job, data, remember=True)[0][0].eval()
    targets = data.test_targets
    return HookSite(nnsight.NNsight(model), data.test_inputs, HOOK, tail_jacobian(model, "centered"),
                      lambda logits: float((logits.argmax(-1) == targets).double().mean()))


# -------------------- per-model analysis ----------------------------------------------------
def tail_jacobian(model: ToyTransformer, tail: str) -> np.ndarray:
    """(K, D) Jacobian of the tail at the layer output: W_U (``logits``) or (I − 11ᵀ/K) W_U (``centered``)."""
    check_choice("TAIL", tail, TAILS)
    w = model.lm_head.weight.detach().double().numpy()
    if tail == "centered":
        w = w - w.mean(axis=0, keepdims=True)
    return w


@dataclass
class VariantResult:
    """One (tail, ablation) variant of the analysis of one model."""

    core: Core
    keep_acc: float
    remove_acc: float
    eigs: np.ndarray  # fitted operator eigenvalues (r,)
    eig_max_error: float
    r2: float
    r2_state: float
    z: np.ndarray  # (N_test * T, r) core coordinates (uncentred)
    eig_rel_error: list[float] = field(default_factory=list)  # per true eigenvalue (sorted_eigs order)
    eig_rel_error_state: list[float] = field(default_factory=list)  # same, fit on the current-state means
    coord_state_r2: list[float] = field(default_factory=list)  # per core coordinate: variance share set by the state


@dataclass
class SeedAnalysis:
    """Everything measured on one trained model."""

    base_acc: float
    variants: dict[tuple[str, str], VariantResult]
    softmax_cos: float
    energy_at_n_minus_1: float
    energy_softmax_share: float
    energy_shares: dict[str, list[float]]  # per tail: the first n + 1 weights / total weight


def capture_states(wrapped: Any, inputs: torch.Tensor, *, batch_size: int = ANALYSIS_BATCH) -> torch.Tensor:
    """Output of ``layers.0`` at every position, (N, T, D), captured through nnsight in batches."""
    return torch.cat([interventions.capture(wrapped, inputs[i : i + batch_size], HOOK)
                      for i in range(0, inputs.shape[0], batch_size)])


def activation_gramian(h_flat: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean (D,) and covariance (D, D, N − 1 normalisation) of activation rows (N, D), in float64.

    Computed with torch so that it honours ``torch.set_num_threads`` (numpy's BLAS may use
    every core, which is slow on a shared machine).
    """
    h = h_flat.detach().double()
    mean = h.mean(dim=0)
    hc = h - mean
    cov = hc.T @ hc / (h.shape[0] - 1)
    return mean.numpy(), cov.numpy()


def _fit_steps(z: np.ndarray) -> Any:
    """One-step operator fit over the positions of (N, L, r) coordinates (:func:`fit_dynamics`)."""
    r = z.shape[-1]
    return fit_dynamics(z[:, :-1].reshape(-1, r), z[:, 1:].reshape(-1, r))


def analyse_model(
    model: ToyTransformer,
    data: MarkovData,
    *,
    energy: float,
    variants: Sequence[tuple[str, str]],
) -> SeedAnalysis:
    """ACE, ablations and operator fit for one model, for each ``(tail, ablation)`` in ``variants``.

    Activations are the output of ``layers.0`` at every position of every test sequence,
    captured through ``nnsight.NNsight``; ablations replace that output at all positions
    (:func:`ace_helpers.method.interventions.accuracy_under`).  The full-model accuracy is read from the
    captured activations (the layer output feeds ``lm_head`` directly, so ``lm_head(H)`` *is*
    the model's output).
    """
    import nnsight  # load time: a heavy import, done on first use

    model.eval()
    wrapped = nnsight.NNsight(model)
    x, y = data.test_inputs, data.test_targets
    n = data.n_states
    h = capture_states(wrapped, x)  # (N, T, D)
    n_seq, seq, dim = h.shape
    h_flat = h.reshape(-1, dim)
    with torch.no_grad():
        base = float((model.lm_head(h).argmax(-1) == y).double().mean())
    mean, cov = activation_gramian(h_flat)
    cores = {}
    for tail in TAILS:
        w = tail_jacobian(model, tail)
        cores[tail] = extract_core_from_gramians(cov, w.T @ w, mean=mean, energy=energy)
    out: dict[tuple[str, str], VariantResult] = {}
    states = x.numpy()
    h_np = h_flat.double().numpy()
    true = sorted_eigs(nontrivial_eigenvalues(data.T))
    dynamics: dict[str, tuple] = {}
    for tail in TAILS:  # the operator fit depends on the core only, not on the ablation
        core = cores[tail]
        z = core.coords(h_np).reshape(n_seq, seq, core.rank)
        fit = _fit_steps(z)
        _, err = match_eigenvalues(true, fit.eigenvalues)
        r2s = state_r2(z[:, 1:].reshape(-1, core.rank), states[:, :-1].reshape(-1), n)
        z_state, coord_r2 = state_mean_coords(z, states, n)
        rel_state = relative_eig_errors(true, _fit_steps(z_state).eigenvalues)
        dynamics[tail] = (fit, err, r2s, z.reshape(-1, core.rank), relative_eig_errors(true, fit.eigenvalues),
                          rel_state, coord_r2)
    for tail, ablation in variants:
        core = cores[tail]
        centered = ablation == "mean"
        keep = interventions.accuracy_under(wrapped, x, y, HOOK, core, "keep", centered=centered,
                                            batch_size=ANALYSIS_BATCH)
        remove = interventions.accuracy_under(wrapped, x, y, HOOK, core, "remove", centered=centered,
                                              batch_size=ANALYSIS_BATCH)
        fit, err, r2s, z, rel, rel_state, coord_r2 = dynamics[tail]
        out[(tail, ablation)] = VariantResult(core, keep, remove, fit.eigenvalues, err, fit.r2, r2s, z, rel,
                                              rel_state, coord_r2)
    logit_core = cores["logits"]
    q_n = logit_core.full_basis[:, n - 1]
    image = model.lm_head.weight.detach().double().numpy() @ q_n
    softmax_cos = float(abs(image.sum()) / (np.linalg.norm(image) * np.sqrt(len(image))))
    frac = logit_core.energy_fraction()
    share = float(logit_core.weights[n - 1] / logit_core.weights.sum())
    shares = {t: (c.weights[: n + 1] / c.weights.sum()).tolist() for t, c in cores.items()}
    return SeedAnalysis(base, out, softmax_cos, float(frac[n - 2]), share, shares)


# -------------------- one chain: train, analyse, compare ------------------------------------
@dataclass
class ChainRun:
    """All results for one chain (several seeds)."""

    T: np.ndarray
    seeds: list[int]
    data: MarkovData
    train: TrainResult
    analyses: list[SeedAnalysis]
    variants: list[tuple[str, str]]
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    pairs: list[tuple[int, int]] = field(default_factory=list)

    @property
    def n_states(self) -> int:
        """Number of chain states."""
        return self.data.n_states

    def variant(self, key: tuple[str, str]) -> list[VariantResult]:
        """The per-seed results of one (tail, ablation) variant."""
        return [a.variants[key] for a in self.analyses]


def run_chain(
    T: Any,
    *,
    seeds: Sequence[int],
    epochs: int,
    d_model: int,
    n_train: int,
    n_test: int,
    seq_len: int,
    energy: float,
    variants: Sequence[tuple[str, str]],
    lr: float = 1e-4,
    batch_size: int = 64,
    data_seed: int = 0,
    test_data_seed: int = 999,
    method: str = "ensemble",
    precision: str = "fp32", device: str | torch.device = "cpu",
) -> ChainRun:
    """Sample data, train the seeds (on ``device``), analyse each model for each ``(tail, ablation)`` variant."""
    start, start_cpu = time.perf_counter(), time.process_time()
    T = validate_transition(T)
    data = markov_dataset(T, n_train, n_test, seq_len, train_seed=data_seed, test_seed=test_data_seed)
    trained = train_models(data, seeds, d_model=d_model, epochs=epochs, batch_size=batch_size, lr=lr, method=method,
                           precision=precision, device=device)
    variants = list(dict.fromkeys(tuple(v) for v in variants))
    analyses = [analyse_model(m, data, energy=energy, variants=variants) for m in trained.models]
    pairs = list(combinations(range(len(seeds)), 2))
    return ChainRun(T, list(seeds), data, trained, analyses, variants, time.perf_counter() - start,
                    time.process_time() - start_cpu, pairs)


def _eig_list(eigs: np.ndarray) -> list[list[float]]:
    return [[float(e.real), float(e.imag)] for e in sorted_eigs(eigs)]


def variant_results(run: ChainRun, key: tuple[str, str], *, cca_k: int | None = None) -> dict[str, Any]:
    """Flat results of one variant (documented in :mod:`ace_helpers.chapters.markov_cores`), plain Python types.

    ``cca_k``: how many canonical correlations to keep (default n − 1).
    """
    per_seed = run.variant(key)
    n = run.n_states
    k = n - 1 if cca_k is None else cca_k
    overlaps, angles, ccas = [], [], []
    for i, j in run.pairs:
        a, b = per_seed[i], per_seed[j]
        overlaps.append(compare.projector_overlap(a.core.basis, b.core.basis))
        angles.append(compare.principal_angles(a.core.basis, b.core.basis).tolist())
        kk = min(k, a.core.rank, b.core.rank)
        ccas.append(compare.cca(a.z, b.z, k=kk).tolist())
    return {
        "core_ranks": [v.core.rank for v in per_seed],
        "keep_acc": [v.keep_acc for v in per_seed],
        "remove_acc": [v.remove_acc for v in per_seed],
        "projector_overlap": overlaps,
        "principal_angles": angles,
        "cca": ccas,
        "core_eigs": [_eig_list(v.eigs) for v in per_seed],
        "eig_max_error": [v.eig_max_error for v in per_seed],
        "eig_rel_error": [v.eig_rel_error for v in per_seed],
        "eig_rel_error_state": [v.eig_rel_error_state for v in per_seed],
        "coord_state_r2": [v.coord_state_r2 for v in per_seed],
        "r2": [v.r2 for v in per_seed],
        "r2_state": [v.r2_state for v in per_seed],
    }


def chain_results(run: ChainRun, tail: str, ablation: str) -> dict[str, Any]:
    """Flat ``results.json`` dict for one chain: chosen variant + ``_paper`` copies + shared keys."""
    chance = chance_accuracy(run.T, run.data.test_targets)
    out: dict[str, Any] = {
        "n_states": run.n_states,
        "seeds": run.seeds,
        "base_acc": [a.base_acc for a in run.analyses],
        "chance_acc": chance,
        "bayes_acc": bayes_accuracy(run.T),
        "r2_oracle": oracle_r2(run.T),
        "true_eigs": _eig_list(nontrivial_eigenvalues(run.T)),
        "eig_rel_floor": sampling_floor(run.T, run.data.test_inputs.numpy()),
        "random_overlap": (run.n_states - 1) / run.train.models[0].config.d_model,
        "weight_cosine": [compare.weight_cosine(run.train.models[i], run.train.models[j]) for i, j in run.pairs],
        "softmax_cos": [a.softmax_cos for a in run.analyses],
        "energy_at_n_minus_1": [a.energy_at_n_minus_1 for a in run.analyses],
        "energy_softmax_share": [a.energy_softmax_share for a in run.analyses],
        "energy_shares_logits": [a.energy_shares["logits"] for a in run.analyses],
        "energy_shares_centered": [a.energy_shares["centered"] for a in run.analyses],
        "train_loss": [l[-1] for l in run.train.loss],
        "train_s": run.train.seconds,
        "chain_s": run.seconds,
        "train_cpu_s": run.train.cpu_seconds,
        "chain_cpu_s": run.cpu_seconds,
    }
    out.update(variant_results(run, (tail, ablation)))
    for t in TAILS:
        with_tail = [v for v in run.variants if v[0] == t]
        if with_tail:
            out[f"core_ranks_{t}"] = [v.core.rank for v in run.variant(with_tail[0])]
    for t, a in run.variants:
        out[f"keep_acc_{t}_{a}"] = [v.keep_acc for v in run.variant((t, a))]
        out[f"remove_acc_{t}_{a}"] = [v.remove_acc for v in run.variant((t, a))]
    paper = variant_results(run, (PAPER_TAIL, PAPER_ABLATION), cca_k=3)
    out.update({f"{k}_paper": v for k, v in paper.items()})
    return out


#: Keys stored per extra chain (as ``extra_<key>``, one list entry per chain).
EXTRA_KEYS = ("n_states", "core_ranks", "keep_acc", "remove_acc", "base_acc", "chance_acc", "bayes_acc", "true_eigs",
              "core_eigs", "eig_max_error", "eig_rel_error", "eig_rel_floor", "r2", "r2_oracle", "r2_state",
              "core_ranks_paper", "keep_acc_paper", "remove_acc_paper", "eig_max_error_paper", "softmax_cos", "chain_s",
              "chain_cpu_s", *(f"core_ranks_{t}" for t in TAILS),
              *(f"{kind}_acc_{t}_{a}" for kind in ("keep", "remove") for t, a in ALL_VARIANTS))  # fmt: skip


@dataclass(frozen=True)
class SeedJob:
    """One unit of work of a chapter run: train some seeds of one chain as one ensemble, analyse each
    (picklable, for worker processes)."""

    chain: int  # index of the chain in the run (0: the main chain)
    T: list[list[float]]
    seeds: tuple[int, ...]
    epochs: int
    options: dict[str, Any]  # run_chain's keyword arguments other than T, seeds, epochs, method

    def data(self) -> MarkovData:
        """The chain's train and test sequences (the same for every seed of the chain)."""
        o = self.options
        return markov_dataset(np.asarray(self.T), o["n_train"], o["n_test"], o["seq_len"], train_seed=o["data_seed"],
                              test_seed=o["test_data_seed"])  # fmt: skip


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
    return (tuple(map(tuple, job.T)), int(seed), job.epochs, o["d_model"], o["n_train"], o["seq_len"], o["lr"],
            o["batch_size"], o["data_seed"], o["precision"], str(o["device"]))  # fmt: skip


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
        trained = train_models(data, todo, d_model=o["d_model"], epochs=job.epochs, batch_size=o["batch_size"],
                               lr=o["lr"], precision=o["precision"], device=o["device"])  # fmt: skip
        fresh = {train_key(job, s): (m, loss, trained.seconds / len(todo), trained.cpu_seconds / len(todo))
                 for s, m, loss in zip(todo, trained.models, trained.loss)}  # fmt: skip
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


def plan_jobs(units: Sequence[tuple[int, list[list[float]], int, int]], options: dict[str, Any], workers: int) -> list[list[SeedJob]]:
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


def chain_run(T: Any, seeds: Sequence[int], runs: Sequence[SeedRun], data: MarkovData, variants: Sequence[tuple[str, str]]) -> ChainRun:
    """One chain's :class:`ChainRun` assembled from its seeds' runs (times: the sums over seeds)."""
    train = TrainResult([r.model for r in runs], [r.loss for r in runs], sum(r.train_s for r in runs),
                        sum(r.train_cpu_s for r in runs))  # fmt: skip
    return ChainRun(validate_transition(T), list(seeds), data, train, [r.analysis for r in runs], list(variants),
                    sum(r.seconds for r in runs), sum(r.cpu_seconds for r in runs),
                    list(combinations(range(len(seeds)), 2)))  # fmt: skip


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
    options = dict(d_model=p["D_MODEL"], n_train=p["N_TRAIN"], n_test=p["N_TEST"], seq_len=p["SEQ_LEN"],
                   energy=p["ENERGY"], lr=p["LR"], batch_size=p["BATCH_SIZE"], data_seed=p["DATA_SEED"],
                   test_data_seed=p["TEST_DATA_SEED"], variants=variants, precision=p["PRECISION"], device=device)  # fmt: skip
    chains = [(p["T"], model_seeds(p["SEED"], p["N_SEEDS"]), p["EPOCHS"])]
    chains += [(T, model_seeds(p["SEED"], p["EXTRA_SEEDS"]), p["EXTRA_EPOCHS"]) for T in p["EXTRA_CHAINS"]]
    units = [(c, np.asarray(T, dtype=float).tolist(), s, e) for c, (T, seeds, e) in enumerate(chains) for s in seeds]
    known = [u for u in units if remembered(SeedJob(u[0], u[1], (u[2],), u[3], options), u[2])]
    here = [j for share in plan_jobs(known, options, 1) for j in share] if known else []
    rest = [u for u in units if u not in known]
    shares = plan_jobs(rest, options, workers) if rest else []
    by_seed = {(j.chain, seed): (j, run) for j, runs in run_seed_jobs(here, shares)
               for seed, run in zip(j.seeds, runs)}  # fmt: skip
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
