"""Chapters 2–3: the modular-addition core crystallises at grokking, then inflates.

Spec ``ace-paper.md`` §3.1–3.3.  Models are the two-layer toy transformer trained on
a + b (mod p) with AdamW (weight decay ``WEIGHT_DECAY``); a second arm forks every model at
``FORK_EPOCH`` and continues with a fresh AdamW without weight decay.  At every checkpoint of
the schedule the model is analysed on the **test split**, at the **last token of layer 2**
(:func:`analyse_checkpoint`), so full checkpoints are never stored:

* ACE (energy ``ENERGY``) with tail = ``lm_head``, so ``J = W_U`` and ``Obs = W_Uᵀ W_U``;
* a scan over every rank r = 0..D of keep-only / core-removed accuracy, done for all r at once
  (:func:`rank_scan`: the tail after layer 2 is linear, so the logits for every r are cumulative
  sums of rank-one terms — one batched tensor op instead of one model pass per r);
* ``core_dim`` = max(energy rank, smallest r ≥ energy rank whose removal drops accuracy to
  ≤ 2/p) and ``suff_dim`` = smallest r ≥ 1 whose keep-only accuracy is ≥ base − 1e-3;
* the cyclic shift operator on the class means of the core coordinates (ridge ``RIDGE``,
  block-edge holdout of round(``HOLDOUT_FRACTION``·p) classes): holdout R_h², eigenvalues,
  fraction within sin(π/p) of the unit circle, rotational modes out of ⌊p/2⌋ + 1.  The
  in-sample OLS fit (ridge 0, no holdout: the paper's sweep arrays) is stored beside it.

The training + analysis run (:func:`load_or_train`) is cached as artifacts, one per model
(so a run with more models reuses the first ones, and an interrupted run resumes from the
last finished model; with ``snapshot_dir`` it also resumes inside a model, every
``SEGMENT_EPOCHS`` epochs).  Both chapter notebooks call it with the same parameters and so
share one training run.  Long runs (the paper preset: hours on a CPU) can be produced in the
background with ``python -m ace_helpers.grokking_cores --preset paper`` (re-run the same command
to resume); the notebooks then load the stored artifact.  Training runs on the CPU.

Per-checkpoint arrays of an arm (:class:`ArmResult`, shape (n_models, n_checkpoints) unless
noted), also the keys of the chapters' ``results.json`` (the WD-off arm with prefix ``nowd_``):

``epochs`` (n_checkpoints,) checkpoint epochs; ``test_acc`` base test accuracy;
``energy_rank`` the 0.99-energy rank; ``core_dim`` necessary dimension (above); ``suff_dim``
sufficient dimension; ``keep_acc`` / ``remove_acc`` accuracy with only / without the first
``core_dim`` directions; ``r2_holdout`` holdout R_h² of the ridge shift fit; ``r2_ols``
in-sample R² of the OLS fit; ``frac_unit_circle`` fraction of the ridge-fit eigenvalues within
sin(π/p) of the unit circle; ``rotational_modes`` folded frequency bins holding such an
eigenvalue; ``median_abs_eig`` median ``|λ|``; ``*_ols`` the same from the OLS fit;
``eig_real``/``eig_imag`` (n_models, n_checkpoints, p) ridge-fit eigenvalues, NaN-padded;
``keep_curve``/``remove_curve`` (n_models, n_checkpoints, D + 1) accuracy at every rank r.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ace_helpers import params as P_
from ace_helpers.artifacts import default_output_dir, load_artifact, params_match, project_root, save_artifact, to_plain
from ace_helpers.core import Core, extract_core
from ace_helpers.models import ToyConfig, ToyTransformer, build_model
from ace_helpers.operators import fit_shift_operator, near_unit_circle, rotational_modes
from ace_helpers.tasks.modadd import ModAddData, modadd_dataset
from ace_helpers.train import train_lm

# --------------------------------------------------------------------------------------------
# parameters

#: Training is split into segments of this many epochs; each segment reseeds the shuffling and
#: dropout RNGs from (seed, arm, model, segment start), so a run resumed from a snapshot gives
#: the same numbers as an uninterrupted one.  Fixed: changing it changes the numbers.
SEGMENT_EPOCHS = 500

PRESETS: dict[str, dict[str, Any]] = {
    # p = 31, 60 % of the pairs, lr 3e-3: groks at epoch ~450 (two steps per epoch, minutes).  The
    # holdout keeps the paper's block of 4 classes (0.13 · 31 = 4; the paper: 0.075 · 53 = 4).
    "ci": {
        "P": 31,
        "TRAIN_FRACTION": 0.6,
        "DATA_SEED": 42,
        "EPOCHS": 500,
        "N_MODELS": 1,
        "WEIGHT_DECAY": 1.0,
        "FORK_EPOCH": 450,
        "CHECKPOINT_EVERY": 50,
        "CHECKPOINT_SWITCH": 500,
        "CHECKPOINT_EVERY_LATE": 100,
        "SEED": 1031,
        "LR": 3e-3,
        "BATCH_SIZE": 512,
        "ENERGY": 0.99,
        "RIDGE": 1.0,
        "HOLDOUT_FRACTION": 0.13,
        "CLOCK_EPOCHS": None,
        "ARTIFACT_DIR": None,
        "WORKERS": 1,
    },
    # The paper's task (p = 53, 50 % split) and schedule, cut to what 2 CPU cores allow.  With
    # these seeds every model has grokked by epoch 1000 (not 800), so the WD-off arm forks 100
    # epochs after grokking at 1100, as the paper forks at 900 after grokking at 800.
    "book": {
        "P": 53,
        "TRAIN_FRACTION": 0.5,
        "DATA_SEED": 42,
        "EPOCHS": 1400,
        "N_MODELS": 2,
        "WEIGHT_DECAY": 1.0,
        "FORK_EPOCH": 1100,
        "CHECKPOINT_EVERY": 100,
        "CHECKPOINT_SWITCH": 2000,
        "CHECKPOINT_EVERY_LATE": 500,
        "SEED": 1031,
        "LR": 1e-3,
        "BATCH_SIZE": 512,
        "ENERGY": 0.99,
        "RIDGE": 1.0,
        "HOLDOUT_FRACTION": 0.075,
        "CLOCK_EPOCHS": None,
        "ARTIFACT_DIR": None,
        "WORKERS": 2,
    },
}

# The paper's run (spec §3.1): 3 models x 20 000 epochs.  Hours on a CPU.  One departure: the
# paper forks at epoch 900, 100 epochs after its models grok (800); ours grok at 1000 (at 900
# model 1 is at 0.986 test accuracy), so the fork is at 1100 as in the book preset.  With the
# same seeds this run is the book run continued: its first 1400 epochs are the book's numbers.
PRESETS["paper"] = PRESETS["book"] | {"EPOCHS": 20000, "N_MODELS": 3, "WORKERS": 3}

KNOBS: tuple[str, ...] = tuple(PRESETS["paper"])

#: Knobs that change the training run / analysis (the artifact key); the others only change plots.
RUN_KNOBS: tuple[str, ...] = tuple(k for k in KNOBS if k not in ("N_MODELS", "CLOCK_EPOCHS", "ARTIFACT_DIR", "WORKERS"))


def resolve_params(**knobs: Any) -> dict[str, Any]:
    """Fill ``None`` knobs from the preset (``PRESET`` None -> ``$ACE_PRESET`` or "book") and validate.

    Accepts the knobs of :data:`KNOBS` plus ``PRESET`` and ``OUTPUT_DIR`` (both may be None).
    Raises ``ValueError`` naming the knob, the bad value and what is allowed.
    """
    knobs = dict(knobs)
    preset = knobs.pop("PRESET", None) or P_.preset_from_env("book")
    output_dir = knobs.pop("OUTPUT_DIR", None)
    unknown = sorted(set(knobs) - set(KNOBS))
    if unknown:
        raise ValueError(f"unknown knob(s) {unknown}: allowed knobs are {list(KNOBS)} plus PRESET, OUTPUT_DIR")
    full = {k: knobs.get(k) for k in KNOBS}
    cfg = P_.resolve(preset, full, PRESETS)
    cfg["OUTPUT_DIR"] = output_dir
    validate(cfg)
    return cfg


def validate(cfg: Mapping[str, Any]) -> None:
    """Check every knob of a resolved parameter dict (see :func:`resolve_params`)."""
    P_.check_prime("P", cfg["P"], low=5)
    P_.check_range("TRAIN_FRACTION", cfg["TRAIN_FRACTION"], low=0.0, high=1.0, low_open=True, high_open=True)
    P_.check_int("DATA_SEED", cfg["DATA_SEED"], low=0)
    epochs = P_.check_int("EPOCHS", cfg["EPOCHS"], low=1)
    P_.check_int("N_MODELS", cfg["N_MODELS"], low=1, high=16)
    P_.check_range("WEIGHT_DECAY", cfg["WEIGHT_DECAY"], low=0.0)
    P_.check_int("FORK_EPOCH", cfg["FORK_EPOCH"], low=1, high=max(epochs - 1, 1))
    if cfg["FORK_EPOCH"] >= epochs:
        raise ValueError(
            f"FORK_EPOCH={cfg['FORK_EPOCH']!r} is not allowed: FORK_EPOCH must be in [1, EPOCHS - 1] = [1, {epochs - 1}]"
        )
    P_.check_int("CHECKPOINT_EVERY", cfg["CHECKPOINT_EVERY"], low=1)
    P_.check_int("CHECKPOINT_SWITCH", cfg["CHECKPOINT_SWITCH"], low=0)
    P_.check_int("CHECKPOINT_EVERY_LATE", cfg["CHECKPOINT_EVERY_LATE"], low=1)
    P_.check_int("SEED", cfg["SEED"], low=0)
    P_.check_range("LR", cfg["LR"], low=0.0, low_open=True)
    P_.check_int("BATCH_SIZE", cfg["BATCH_SIZE"], low=1)
    P_.check_range("ENERGY", cfg["ENERGY"], low=0.0, high=1.0, low_open=True)
    P_.check_range("RIDGE", cfg["RIDGE"], low=0.0)
    P_.check_range("HOLDOUT_FRACTION", cfg["HOLDOUT_FRACTION"], low=0.0, high=0.5, high_open=True)
    if holdout_classes(cfg["P"], cfg["HOLDOUT_FRACTION"]) > cfg["P"] - 3:
        raise ValueError(f"HOLDOUT_FRACTION={cfg['HOLDOUT_FRACTION']!r} holds out too many classes for P={cfg['P']}")
    if cfg["CLOCK_EPOCHS"] is not None:
        P_.check_list("CLOCK_EPOCHS", cfg["CLOCK_EPOCHS"], lambda n, v: P_.check_int(n, v, low=0, high=epochs))
    P_.check_int("WORKERS", cfg["WORKERS"], low=1, high=64)
    if cfg["ARTIFACT_DIR"] is not None and not isinstance(cfg["ARTIFACT_DIR"], (str, Path)):
        raise ValueError(f"ARTIFACT_DIR={cfg['ARTIFACT_DIR']!r} is not allowed: ARTIFACT_DIR must be a path or None")


def checkpoint_schedule(epochs: int, every: int, switch: int, every_late: int) -> list[int]:
    """Checkpoint epochs: 0, then every ``every`` up to ``switch``, then every ``every_late``; always ``epochs``.

    Paper: ``checkpoint_schedule(20000, 100, 2000, 500)`` -> 0, 100, ..., 2000, 2500, ..., 20000.
    """
    marks = {0, epochs}
    marks.update(range(every, min(switch, epochs) + 1, every))
    if switch < epochs:
        marks.update(range(switch + every_late, epochs + 1, every_late))
    return sorted(marks)


def holdout_classes(p: int, fraction: float) -> int:
    """Held-out block size of the shift fit: round(fraction · p), at least 1 when fraction > 0 (p=53: 4)."""
    if fraction <= 0:
        return 0
    return max(1, int(round(fraction * p)))


def schedule_of(cfg: Mapping[str, Any]) -> list[int]:
    """The checkpoint schedule of a resolved parameter dict."""
    return checkpoint_schedule(cfg["EPOCHS"], cfg["CHECKPOINT_EVERY"], cfg["CHECKPOINT_SWITCH"], cfg["CHECKPOINT_EVERY_LATE"])


def model_config(p: int) -> ToyConfig:
    """The paper's two-layer model for modulus ``p`` (d_model 128, 4 heads, d_ff 512, context 2)."""
    return ToyConfig(vocab=p, d_model=128, n_layers=2, n_heads=4, d_ff=512, max_len=2)


# --------------------------------------------------------------------------------------------
# per-checkpoint analysis


@torch.no_grad()
def last_token_activations(model: ToyTransformer, inputs: torch.Tensor, layer: int = -1) -> torch.Tensor:
    """Output of block ``layer`` at the last position: (N, 2) long -> (N, D) float (eval mode)."""
    store: list[torch.Tensor] = []
    handle = model.layers[layer].register_forward_hook(lambda _m, _i, out: store.append(out[:, -1].detach()))
    was_training = model.training
    try:
        model.eval()
        model(inputs)
    finally:
        handle.remove()
        model.train(was_training)
    return store[0]


def rank_scan(
    H: torch.Tensor | np.ndarray,
    weight: torch.Tensor | np.ndarray,
    bias: torch.Tensor | np.ndarray | None,
    basis: np.ndarray,
    targets: torch.Tensor | np.ndarray,
    chunk: int = 32,
) -> tuple[np.ndarray, np.ndarray]:
    """Keep-only and core-removed accuracy for **every** rank r = 0..R at once.

    The tail after the hook is linear (logits = W h + b), so with core coordinates C = H Q the
    keep-only logits at rank r are ``b + Σ_{i<r} C[:, i] ⊗ (W Q)[:, i]`` (a cumulative sum over
    i) and the removed logits are ``W h + b − Σ_{i<r} ...``.  Uncentred projections, as the paper.

    Args:
        H: (N, D) activations.  weight: (K, D) unembedding.  bias: (K,) or None.
        basis: (D, R) orthonormal columns in the order to add them (``core.full_basis``).
        targets: (N,) int labels.  chunk: ranks processed per batched op (memory N·chunk·K).

    Returns:
        ``(keep_acc, remove_acc)``, each (R + 1,) float64; index r = first r columns kept/removed.
    """
    h = torch.as_tensor(np.asarray(H) if not torch.is_tensor(H) else H.detach()).double()
    w = torch.as_tensor(np.asarray(weight) if not torch.is_tensor(weight) else weight.detach()).double()
    q = torch.as_tensor(np.asarray(basis, dtype=np.float64))
    y = torch.as_tensor(np.asarray(targets) if not torch.is_tensor(targets) else targets).long().reshape(-1)
    if h.ndim != 2 or w.ndim != 2 or w.shape[1] != h.shape[1] or q.shape[0] != h.shape[1] or y.shape[0] != h.shape[0]:
        raise ValueError(
            f"rank_scan needs H (N, D), weight (K, D), basis (D, R), targets (N,); got {tuple(h.shape)}, "
            f"{tuple(w.shape)}, {tuple(q.shape)}, {tuple(y.shape)}"
        )
    b = torch.zeros(w.shape[0], dtype=torch.float64) if bias is None else torch.as_tensor(
        np.asarray(bias) if not torch.is_tensor(bias) else bias.detach()
    ).double()
    n, r_max = h.shape[0], q.shape[1]
    coords = h @ q  # (N, R)
    readout = (w @ q).T  # (R, K): logit change per unit of coordinate i
    full = h @ w.T  # (N, K) without bias
    keep = np.empty(r_max + 1)
    remove = np.empty(r_max + 1)
    running = torch.zeros(n, w.shape[0], dtype=torch.float64)  # Σ_{i<r} contributions
    keep[0] = float(((running + b).argmax(-1) == y).double().mean())
    remove[0] = float(((full + b).argmax(-1) == y).double().mean())
    for start in range(0, r_max, chunk):
        stop = min(start + chunk, r_max)
        part = torch.cumsum(coords[:, start:stop, None] * readout[None, start:stop, :], dim=1)
        part = part + running[:, None, :]  # (N, c, K)
        keep[start + 1 : stop + 1] = ((part + b).argmax(-1) == y[:, None]).double().mean(0).numpy()
        remove[start + 1 : stop + 1] = ((full[:, None, :] - part + b).argmax(-1) == y[:, None]).double().mean(0).numpy()
        running = part[:, -1]
    return keep, remove


def necessary_dim(remove_curve: np.ndarray, energy_rank: int, floor: float) -> int:
    """max(energy rank, smallest r ≥ energy rank with remove accuracy ≤ ``floor``); D if never."""
    r_max = len(remove_curve) - 1
    hits = [r for r in range(max(energy_rank, 1), r_max + 1) if remove_curve[r] <= floor]
    return hits[0] if hits else r_max


def sufficient_dim(keep_curve: np.ndarray, base_acc: float, tol: float = 1e-3) -> int:
    """Smallest r ≥ 1 whose keep-only accuracy is ≥ ``base_acc − tol`` (D at worst, where keep = base)."""
    r_max = len(keep_curve) - 1
    hits = [r for r in range(1, r_max + 1) if keep_curve[r] >= base_acc - tol]
    return hits[0] if hits else r_max


def class_means(z: np.ndarray, labels: np.ndarray, p: int) -> np.ndarray:
    """(p, r) mean of the rows of z (N, r) for each answer class 0..p−1 (every class must occur)."""
    labels = np.asarray(labels).reshape(-1)
    counts = np.bincount(labels, minlength=p)
    if (counts == 0).any():
        missing = np.flatnonzero(counts == 0).tolist()
        raise ValueError(f"answer classes {missing} have no test example; use a larger test split")
    sums = np.zeros((p, z.shape[1]))
    np.add.at(sums, labels, z)
    return sums / counts[:, None]


@dataclass(frozen=True)
class CheckpointAnalysis:
    """Everything measured at one checkpoint of one model (plain numbers and numpy arrays)."""

    test_acc: float
    energy_rank: int
    core_dim: int
    suff_dim: int
    keep_acc: float
    remove_acc: float
    r2_holdout: float
    r2_ols: float
    frac_unit_circle: float
    rotational_modes: int
    median_abs_eig: float
    frac_unit_circle_ols: float
    rotational_modes_ols: int
    median_abs_eig_ols: float
    eigenvalues: np.ndarray  # (k,) complex, ridge + holdout fit
    keep_curve: np.ndarray  # (D + 1,)
    remove_curve: np.ndarray  # (D + 1,)


SCALAR_FIELDS: tuple[str, ...] = (
    "test_acc", "energy_rank", "core_dim", "suff_dim", "keep_acc", "remove_acc", "r2_holdout", "r2_ols",
    "frac_unit_circle", "rotational_modes", "median_abs_eig", "frac_unit_circle_ols", "rotational_modes_ols",
    "median_abs_eig_ols",
)  # fmt: skip


def analyse_activations(
    H: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    answers: torch.Tensor,
    p: int,
    *,
    energy: float = 0.99,
    ridge: float = 1.0,
    holdout: int = 4,
) -> tuple[CheckpointAnalysis, Core]:
    """The per-checkpoint analysis from layer-2 last-token activations H (N, D) and lm_head (W (K, D), b (K,)).

    Returns the :class:`CheckpointAnalysis` and the ACE :class:`Core` truncated to ``core_dim``.
    """
    y = answers.detach().cpu().long().numpy()
    w = weight.detach().double()
    core = extract_core(H, w, energy=energy)  # tail = lm_head: J = W_U for every row
    keep_curve, remove_curve = rank_scan(H, w, bias, core.full_basis, y)
    base = remove_curve[0]
    floor = 2.0 / p
    r_nec = necessary_dim(remove_curve, core.rank, floor)
    r_suf = sufficient_dim(keep_curve, base)
    core_nec = core.truncate(r_nec)
    z = core_nec.coords(H.detach().cpu().double().numpy())
    means = class_means(z, y, p)
    eps = math.sin(math.pi / p)
    ridge_fit = fit_shift_operator(means, ridge=ridge, holdout=holdout or None)
    ols_fit = fit_shift_operator(means, ridge=0.0, holdout=None)
    eig, eig_ols = ridge_fit.eigenvalues, ols_fit.eigenvalues
    analysis = CheckpointAnalysis(
        test_acc=float(base),
        energy_rank=int(core.rank),
        core_dim=int(r_nec),
        suff_dim=int(r_suf),
        keep_acc=float(keep_curve[r_nec]),
        remove_acc=float(remove_curve[r_nec]),
        r2_holdout=float(ridge_fit.r2_holdout),
        r2_ols=float(ols_fit.r2),
        frac_unit_circle=float(near_unit_circle(eig, eps).mean()),
        rotational_modes=int(rotational_modes(eig, p, eps)),
        median_abs_eig=float(np.median(np.abs(eig))),
        frac_unit_circle_ols=float(near_unit_circle(eig_ols, eps).mean()),
        rotational_modes_ols=int(rotational_modes(eig_ols, p, eps)),
        median_abs_eig_ols=float(np.median(np.abs(eig_ols))),
        eigenvalues=np.asarray(eig, dtype=np.complex128),
        keep_curve=keep_curve,
        remove_curve=remove_curve,
    )
    return analysis, core_nec


def analyse_checkpoint(
    model: ToyTransformer,
    data: ModAddData,
    *,
    energy: float = 0.99,
    ridge: float = 1.0,
    holdout: int = 4,
) -> CheckpointAnalysis:
    """Analyse ``model`` on the test split of ``data`` at the last token of its last block (layer 2).

    See the module docstring for what is measured.
    """
    H = last_token_activations(model, data.test_inputs)
    analysis, _ = analyse_activations(
        H, model.lm_head.weight, model.lm_head.bias, data.test_answers, data.p,
        energy=energy, ridge=ridge, holdout=holdout,
    )  # fmt: skip
    return analysis


def grok_epoch(epochs: Sequence[int], test_acc: np.ndarray, threshold: float = 0.99) -> int | None:
    """First checkpoint epoch at which **every** model has test accuracy ≥ ``threshold``; None if none.

    Args:
        epochs: (C,) checkpoint epochs.  test_acc: (M, C) or (C,) accuracies.
    """
    acc = np.atleast_2d(np.asarray(test_acc, dtype=float))
    if acc.shape[1] != len(epochs):
        raise ValueError(f"test_acc has {acc.shape[1]} checkpoints, epochs has {len(epochs)}")
    ok = np.flatnonzero((acc >= threshold).all(axis=0))
    return int(epochs[ok[0]]) if ok.size else None


# --------------------------------------------------------------------------------------------
# training with checkpoint analyses


def _segment_seed(seed: int, arm: int, model_index: int, start: int) -> int:
    """Seed of one training segment (shuffling and dropout), a pure function of its position."""
    digest = hashlib.sha256(f"{seed}/{arm}/{model_index}/{start}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class _ArmRecorder:
    """Collects :class:`CheckpointAnalysis` rows at the schedule's epochs for one arm."""

    def __init__(self, schedule: Sequence[int], analyse: Callable[[nn.Module], CheckpointAnalysis]) -> None:
        self.schedule = set(schedule)
        self.analyse = analyse
        self.epochs: list[int] = []
        self.rows: list[CheckpointAnalysis] = []

    def record(self, epoch: int, model: nn.Module) -> None:
        if epoch in self.schedule and epoch not in self.epochs:
            self.epochs.append(epoch)
            self.rows.append(self.analyse(model))


def _stack_rows(epochs: list[int], rows: list[CheckpointAnalysis], p: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {"epochs": np.asarray(epochs, dtype=np.int64)}
    for name in SCALAR_FIELDS:
        out[name] = np.asarray([getattr(r, name) for r in rows])
    eig = np.full((len(rows), p), np.nan + 0j)
    for i, r in enumerate(rows):
        eig[i, : len(r.eigenvalues)] = r.eigenvalues
    out["eig_real"], out["eig_imag"] = eig.real.copy(), eig.imag.copy()
    out["keep_curve"] = np.stack([r.keep_curve for r in rows])
    out["remove_curve"] = np.stack([r.remove_curve for r in rows])
    return out


def _state_arrays(model: nn.Module, opt: torch.optim.Optimizer | None, prefix: str) -> dict[str, np.ndarray]:
    arrays = {f"{prefix}model/{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    if opt is not None:
        for i, st in opt.state_dict()["state"].items():
            for key, val in st.items():
                arrays[f"{prefix}opt/{i}/{key}"] = torch.as_tensor(val).detach().cpu().numpy()
    return arrays


def _load_state(model: nn.Module, opt: torch.optim.Optimizer | None, arrays: Mapping[str, np.ndarray], prefix: str) -> None:
    model.load_state_dict({k[len(prefix) + 6 :]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith(prefix + "model/")})
    if opt is not None:
        state: dict[int, dict[str, torch.Tensor]] = {}
        for k, v in arrays.items():
            if k.startswith(prefix + "opt/"):
                _, i, key = k[len(prefix) :].split("/")
                state.setdefault(int(i), {})[key] = torch.from_numpy(np.array(v))
        opt.load_state_dict({"state": state, "param_groups": opt.state_dict()["param_groups"]})


#: The two arms, in segment-seed order: weight decay on, and off after the fork.
ARMS: tuple[str, str] = ("wd", "nowd")


def _model_key(cfg: Mapping[str, Any], model_index: int) -> dict[str, Any]:
    """Parameters the stored analyses of model ``model_index`` must match: the run knobs and the index."""
    return {k: cfg[k] for k in RUN_KNOBS} | {"model_index": model_index}


def snapshot_key(cfg: Mapping[str, Any], model_index: int) -> dict[str, Any]:
    """Parameters a resume snapshot of model ``model_index`` must match."""
    return _model_key(cfg, model_index) | {"segment_epochs": SEGMENT_EPOCHS}


def snapshot_name(cfg: Mapping[str, Any], model_index: int) -> str:
    """Artifact name stem of model ``model_index``'s snapshots (``<stem>_wd``, ``<stem>_nowd``)."""
    return f"snapshot_{_run_hash(cfg)}_m{model_index}"


@dataclass
class _ArmRun:
    """One arm of one model while it trains: model, optimizer, recorder and next epoch."""

    name: str
    index: int  # 0 = "wd", 1 = "nowd" (part of the segment seed)
    weight_decay: float
    first: int  # first epoch of the arm (0, or FORK_EPOCH)
    model: nn.Module
    opt: torch.optim.Optimizer
    recorder: _ArmRecorder
    start: int  # next epoch to train
    wall_s: float = 0.0  # training + analysis time spent on this arm so far (over resumes)


def train_one_model(
    cfg: Mapping[str, Any],
    model_index: int,
    *,
    snapshot_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
    stop_after: int | None = None,
    wd_first: bool = False,
) -> dict[str, np.ndarray]:
    """Train model ``model_index`` (both arms) and analyse it at every checkpoint.

    Arm "wd": AdamW(lr, weight_decay=WEIGHT_DECAY) for EPOCHS epochs from a fresh init
    (``build_model(config, SEED + model_index)``).  Arm "nowd": a deep copy of that model at
    FORK_EPOCH, continued to EPOCHS with a fresh AdamW(lr, weight_decay=0).  Training runs in
    segments of :data:`SEGMENT_EPOCHS`, each seeded by its position alone, so the order in which
    segments run does not change the numbers.  The two arms advance in lockstep (the arm that is
    behind trains next), so an interrupted run holds both arms up to about the same epoch; with
    ``wd_first`` the weight-decay arm is trained to the end first (then the WD-off arm).  With ``snapshot_dir`` the state of an arm is saved there
    after each of its segments and a later call resumes from it (see :func:`partial_run` for
    reading an unfinished run).  ``stop_after`` (epochs) ends training once both arms have
    reached it, leaving the snapshots for a later call (default: train to EPOCHS).

    Returns:
        Arrays with keys ``wd/<field>`` and ``nowd/<field>`` (see :func:`_stack_rows`) up to
        EPOCHS (or ``stop_after``); the "nowd" arm's epochs start at FORK_EPOCH (identical to
        "wd" there; no "nowd" keys if ``stop_after`` stopped training before FORK_EPOCH).
    """
    log = log or (lambda _msg: None)
    p = cfg["P"]
    data = modadd_dataset(p, cfg["TRAIN_FRACTION"], cfg["DATA_SEED"])
    schedule = schedule_of(cfg)
    fork, epochs = cfg["FORK_EPOCH"], cfg["EPOCHS"]
    if stop_after is not None:
        P_.check_int("stop_after", stop_after, low=1)
    horizon = epochs if stop_after is None else min(epochs, stop_after)
    holdout = holdout_classes(p, cfg["HOLDOUT_FRACTION"])
    analyse = lambda m: analyse_checkpoint(m, data, energy=cfg["ENERGY"], ridge=cfg["RIDGE"], holdout=holdout)  # noqa: E731
    snap_key = snapshot_key(cfg, model_index)
    snap_name = snapshot_name(cfg, model_index)
    fork_state: dict[str, np.ndarray] | None = None

    def new_arm(index: int) -> _ArmRun:
        wd, first = (cfg["WEIGHT_DECAY"], 0) if index == 0 else (0.0, fork)
        arm_schedule = schedule if index == 0 else [fork] + [e for e in schedule if e > fork]
        model = build_model(model_config(p), cfg["SEED"] + model_index)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["LR"], weight_decay=wd)
        arm = _ArmRun(ARMS[index], index, wd, first, model, opt, _ArmRecorder(arm_schedule, analyse), first)
        nonlocal fork_state
        snap = None if snapshot_dir is None else load_artifact(snapshot_dir, f"{snap_name}_{arm.name}", snap_key)
        if snap is not None:  # resume this arm
            _load_state(model, opt, snap.arrays, "")
            arm.start = int(snap.data["epoch"])
            arm.wall_s = float(snap.data.get("wall_s", 0.0))
            arm.recorder.epochs = list(snap.data["epochs"])
            arm.recorder.rows = [_row_from_plain(r) for r in snap.data["rows"]]
            if index == 0 and "fork/model/tok_emb.weight" in snap.arrays:
                fork_state = {k[5:]: v for k, v in snap.arrays.items() if k.startswith("fork/")}
            log(f"model {model_index} arm {arm.name}: resumed at epoch {arm.start}")
            return arm
        if index == 1:
            assert fork_state is not None
            _load_state(model, None, fork_state, "")  # fresh optimizer at the fork
        arm.recorder.record(first, model)
        return arm

    def train_segment(arm: _ArmRun) -> None:
        def callback(epoch: int, m: nn.Module) -> None:
            nonlocal fork_state
            arm.recorder.record(epoch, m)
            if arm.index == 0 and epoch == fork:
                fork_state = _state_arrays(copy.deepcopy(m), None, "")  # deep copy of the model at the fork

        tic = time.perf_counter()
        seg_end = min((arm.start // SEGMENT_EPOCHS + 1) * SEGMENT_EPOCHS, epochs)
        seg_seed = _segment_seed(cfg["SEED"], arm.index, model_index, arm.start)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seg_seed)  # dropout
            train_lm(
                arm.model, data.train_inputs, data.train_targets, epochs=seg_end - arm.start,
                batch_size=cfg["BATCH_SIZE"], lr=cfg["LR"], weight_decay=arm.weight_decay, seed=seg_seed,
                loss_positions="last", optimizer=arm.opt, start_epoch=arm.start, callback=callback,
            )  # fmt: skip
        arm.start = seg_end
        arm.wall_s += time.perf_counter() - tic
        if snapshot_dir is not None:
            arrays = _state_arrays(arm.model, arm.opt, "")
            if arm.index == 0 and fork_state is not None:
                arrays.update({f"fork/{k}": v for k, v in fork_state.items()})
            save_artifact(
                snapshot_dir, f"{snap_name}_{arm.name}", params=snap_key, arrays=arrays,
                data={
                    "epoch": arm.start, "wall_s": arm.wall_s, "epochs": arm.recorder.epochs,
                    "rows": [_row_to_plain(r) for r in arm.recorder.rows],
                },
            )  # fmt: skip
        last = arm.recorder.rows[-1]
        log(f"model {model_index} arm {arm.name}: epoch {arm.start}, test acc {last.test_acc:.3f}, core dim {last.core_dim}")

    wd_arm = new_arm(0)
    nowd_arm: _ArmRun | None = None
    while True:
        if nowd_arm is None and (fork_state is not None or wd_arm.start >= fork):
            nowd_arm = new_arm(1)
        behind = [a for a in (wd_arm, nowd_arm) if a is not None and a.start < horizon]
        if not behind:
            break
        train_segment(behind[0] if wd_first else min(behind, key=lambda a: (a.start, a.index)))
    results: dict[str, np.ndarray] = {}
    for arm in (wd_arm, nowd_arm):
        if arm is None:  # stopped (stop_after) before the fork
            continue
        for key, val in _stack_rows(arm.recorder.epochs, arm.recorder.rows, p).items():
            results[f"{arm.name}/{key}"] = val
    return results


def _row_to_plain(row: CheckpointAnalysis) -> dict[str, Any]:
    d = {name: getattr(row, name) for name in SCALAR_FIELDS}
    d["eig"] = [[float(z.real), float(z.imag)] for z in row.eigenvalues]
    d["keep_curve"] = row.keep_curve.tolist()
    d["remove_curve"] = row.remove_curve.tolist()
    return to_plain(d)


def _row_from_plain(d: Mapping[str, Any]) -> CheckpointAnalysis:
    kwargs = {name: (float("nan") if d[name] is None else d[name]) for name in SCALAR_FIELDS}
    return CheckpointAnalysis(
        **kwargs,
        eigenvalues=np.asarray([complex(a, b) for a, b in d["eig"]], dtype=np.complex128),
        keep_curve=np.asarray(d["keep_curve"], dtype=float),
        remove_curve=np.asarray(d["remove_curve"], dtype=float),
    )


def _run_hash(cfg: Mapping[str, Any]) -> str:
    key = json.dumps(to_plain({k: cfg[k] for k in RUN_KNOBS}), sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def snapshot_dir_for(cfg: Mapping[str, Any]) -> Path:
    """Scratch folder for resume snapshots (never committed): ``outputs/modadd_grokking_snapshots``."""
    return default_output_dir("modadd_grokking_snapshots")


def artifact_dir(cfg: Mapping[str, Any]) -> Path:
    """Where the run is cached: ``ARTIFACT_DIR``, else ``book/artifacts/modadd_grokking`` (book, paper
    presets: committed with the book) or ``outputs/modadd_grokking_cache`` (ci: never committed, so CI trains)."""
    if cfg.get("ARTIFACT_DIR") is not None:
        return Path(cfg["ARTIFACT_DIR"])
    if cfg.get("PRESET") == "ci":
        return default_output_dir("modadd_grokking_cache")
    return project_root() / "book" / "artifacts" / "modadd_grokking"


@dataclass(frozen=True)
class ArmResult:
    """Per-checkpoint arrays of one arm, stacked over models: ``arrays[field]`` is (M, C) (see module doc)."""

    epochs: np.ndarray
    arrays: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.epochs if name == "epochs" else self.arrays[name]

    def eigenvalues(self, model: int, checkpoint: int) -> np.ndarray:
        """(k,) complex ridge-fit eigenvalues of one model at checkpoint index ``checkpoint``."""
        z = self.arrays["eig_real"][model, checkpoint] + 1j * self.arrays["eig_imag"][model, checkpoint]
        return z[~np.isnan(z)]

    def upto(self, last: int) -> "ArmResult":
        """The checkpoints at epochs ≤ ``last``."""
        keep = self.epochs <= last
        return ArmResult(epochs=self.epochs[keep], arrays={k: v[:, keep] for k, v in self.arrays.items()})

    def index(self, epoch: int) -> int:
        """Checkpoint index of ``epoch`` (ValueError if not a checkpoint)."""
        hits = np.flatnonzero(self.epochs == epoch)
        if not hits.size:
            raise ValueError(f"epoch {epoch} is not a checkpoint of this arm; checkpoints: {self.epochs.tolist()}")
        return int(hits[0])


@dataclass(frozen=True)
class GrokRun:
    """The cached training run: both arms for N_MODELS models."""

    wd: ArmResult
    nowd: ArmResult
    n_models: int
    cached: list[bool]  # per model: loaded from an artifact (True) or trained now (False)
    wall_s: list[float]  # per model: wall time of the training + analysis that produced it
    directory: Path


def _train_worker(job: tuple[dict, int, str | None, bool]) -> tuple[dict[str, np.ndarray], float]:
    """Process-pool entry point: train one model, return its arrays and wall time."""
    cfg, m, snapshot_dir, wd_first = job
    P_.set_threads()
    start = time.perf_counter()
    arrays = train_one_model(cfg, m, snapshot_dir=snapshot_dir, log=print, wd_first=wd_first)
    return arrays, time.perf_counter() - start


def load_or_train(
    cfg: Mapping[str, Any],
    *,
    snapshot_dir: str | Path | None = None,
    workers: int = 1,
    log: Callable[[str], None] | None = print,
    wd_first: bool = False,
) -> GrokRun:
    """Load each model's analyses from the artifact directory, or train and store them.

    Artifacts: ``<artifact_dir(cfg)>/run_<hash>_m<i>`` (json + npz + manifest with the run's
    parameters, commit, versions, wall time), one per model: a run with more models reuses the
    stored ones, an interrupted run keeps the finished ones.  ``snapshot_dir`` (default: none)
    also resumes inside a model (see :func:`train_one_model`).  ``workers > 1`` trains the
    missing models in that many processes (one torch thread each; results are identical).
    ``wd_first`` trains each model's weight-decay arm to the end before its WD-off arm (see
    :func:`train_one_model`; same numbers).
    """
    validate(cfg)
    P_.check_int("workers", workers, low=1)
    directory = artifact_dir(cfg)
    tag = _run_hash(cfg)
    keys = [_model_key(cfg, m) for m in range(cfg["N_MODELS"])]
    names = [f"run_{tag}_m{m}" for m in range(cfg["N_MODELS"])]
    found = [load_artifact(directory, names[m], keys[m]) for m in range(cfg["N_MODELS"])]
    missing = [m for m, a in enumerate(found) if a is None]
    snap = None if snapshot_dir is None else str(snapshot_dir)
    if missing:
        jobs = [(dict(cfg), m, snap, wd_first) for m in missing]
        if workers > 1 and len(missing) > 1:
            import multiprocessing as mp

            with mp.get_context("spawn").Pool(min(workers, len(missing))) as pool:
                outs = pool.map(_train_worker, jobs)
        else:
            outs = []
            for cfg_m, m, s, first in jobs:
                t = time.perf_counter()
                outs.append((train_one_model(cfg_m, m, snapshot_dir=s, log=log, wd_first=first), time.perf_counter() - t))
        for m, (arrays, wall) in zip(missing, outs):
            save_artifact(directory, names[m], params=keys[m], data={"model_index": m}, arrays=arrays, wall_s=wall)
            if snapshot_dir is not None:  # the model is stored: its resume snapshots are no longer needed
                for f in Path(snapshot_dir).glob(f".snapshot_{tag}_m{m}_*"):
                    f.unlink()
                for f in Path(snapshot_dir).glob(f"snapshot_{tag}_m{m}_*"):
                    f.unlink()
            found[m] = load_artifact(directory, names[m], keys[m])
            if found[m] is None:  # pragma: no cover - the filesystem lost our write
                raise RuntimeError(f"artifact {names[m]} in {directory} could not be read back after writing")
    if log is not None:
        for m in range(cfg["N_MODELS"]):
            log(f"model {m}: {'trained now' if m in missing else 'loaded from artifact'} ({directory.name}/{names[m]})")
    return _grok_run(found, directory, cached=[m not in missing for m in range(cfg["N_MODELS"])])


def _grok_run(found: Sequence[Any], directory: Path, cached: list[bool] | None = None) -> GrokRun:
    """A :class:`GrokRun` from per-model artifacts holding ``<arm>/<field>`` arrays (as :func:`train_one_model` returns)."""
    per_model = [a.arrays for a in found]
    arms = {}
    for name in ARMS:
        fields = sorted({k.split("/", 1)[1] for k in per_model[0] if k.startswith(name + "/")} - {"epochs"})
        arms[name] = ArmResult(
            epochs=np.asarray(per_model[0][f"{name}/epochs"]),
            arrays={f: np.stack([pm[f"{name}/{f}"] for pm in per_model]) for f in fields},
        )
    return GrokRun(
        wd=arms["wd"], nowd=arms["nowd"], n_models=len(found), cached=cached or [True] * len(found),
        wall_s=[float(a.manifest.get("wall_s") or 0.0) for a in found], directory=directory,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# an unfinished long run (the paper preset on a CPU): stored up to the epoch it reached


def _partial_name(cfg: Mapping[str, Any], model_index: int) -> str:
    return f"partial_{_run_hash(cfg)}_m{model_index}"


def store_partial(
    cfg: Mapping[str, Any], snapshot_dir: str | Path, *, directory: str | Path | None = None
) -> dict[str, int]:
    """Store the analyses an unfinished run has reached, from its resume snapshots.

    For every model of ``cfg["N_MODELS"]`` both arms' snapshots (see :func:`train_one_model`)
    are read; each arm is cut at the smallest epoch that arm has reached over the models, so
    every stored model covers the same checkpoints.  The rows are exactly those the finished
    run will have at these epochs (each segment is seeded by its position).

    Writes ``partial_<hash>_m<i>`` artifacts (params: the run knobs, the model index and
    ``through_epoch``) to ``directory`` (default :func:`artifact_dir`), replacing older ones.

    Returns:
        ``through_epoch``: the last epoch stored per arm, ``{"wd": ..., "nowd": ...}``.

    Raises:
        FileNotFoundError: a model lacks a snapshot of either arm (it has not passed FORK_EPOCH).
    """
    validate(cfg)
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    p = cfg["P"]
    per_model = []
    for m in range(cfg["N_MODELS"]):
        snaps = [load_artifact(snapshot_dir, f"{snapshot_name(cfg, m)}_{arm}", snapshot_key(cfg, m)) for arm in ARMS]
        if any(s is None for s in snaps):
            raise FileNotFoundError(
                f"model {m} has no snapshot of both arms in {snapshot_dir} (arm 'nowd' starts at FORK_EPOCH = "
                f"{cfg['FORK_EPOCH']}): run `python -m ace_helpers.grokking_cores --preset {cfg.get('PRESET')}` first"
            )
        per_model.append(snaps)
    through = {arm: min(int(snaps[a].data["epoch"]) for snaps in per_model) for a, arm in enumerate(ARMS)}
    for m, snaps in enumerate(per_model):
        arrays: dict[str, np.ndarray] = {}
        for arm, snap in zip(ARMS, snaps):
            keep = [(e, r) for e, r in zip(snap.data["epochs"], snap.data["rows"]) if e <= through[arm]]
            rows = [_row_from_plain(r) for _, r in keep]
            arrays |= {f"{arm}/{k}": v for k, v in _stack_rows([e for e, _ in keep], rows, p).items()}
        wall = sum(float(s.data.get("wall_s", 0.0)) for s in snaps)
        save_artifact(
            directory, _partial_name(cfg, m), params=_partial_key(cfg, m, through), arrays=arrays,
            data={"model_index": m, "through_epoch": through}, wall_s=wall,
        )  # fmt: skip
    return through


def load_long_run(cfg: Mapping[str, Any], *, directory: str | Path | None = None) -> tuple[GrokRun, dict[str, int]] | None:
    """A stored run without training: its finished models if any, else its stored part.

    Finished models are the ``run_<hash>_m<i>`` artifacts of :func:`load_or_train`, taken from
    model 0 on (up to ``cfg["N_MODELS"]``).  The stored part of an unfinished run
    (:func:`store_partial`) is used only when no model has finished.

    Returns ``(run, through_epoch)`` — the last stored epoch per arm, ``{"wd": ..., "nowd": ...}``:
    EPOCHS for finished models — or ``None`` if nothing is stored.
    """
    validate(cfg)
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    tag = _run_hash(cfg)
    found = []
    for m in range(cfg["N_MODELS"]):
        art = load_artifact(directory, f"run_{tag}_m{m}", _model_key(cfg, m))
        if art is None:
            break
        found.append(art)
    if found:
        return _grok_run(found, directory), {arm: int(cfg["EPOCHS"]) for arm in ARMS}
    return load_partial(cfg, directory=directory)


def _partial_key(cfg: Mapping[str, Any], model_index: int, through: Mapping[str, int]) -> dict[str, Any]:
    return _model_key(cfg, model_index) | {"through_epoch": dict(through)}


def load_partial(cfg: Mapping[str, Any], *, directory: str | Path | None = None) -> tuple[GrokRun, dict[str, int]] | None:
    """The stored part of an unfinished run (see :func:`store_partial`), or ``None``.

    Loads the ``partial_<hash>_m<i>`` artifacts of as many models as are stored (up to
    ``cfg["N_MODELS"]``, from model 0 on); they must match ``cfg``'s run knobs.

    Returns:
        ``(run, through_epoch)``: ``run.n_models`` is the number of models found, and each arm's
        checkpoints stop at ``through_epoch[arm]``.
    """
    validate(cfg)
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    found: list[Any] = []
    through: dict[str, int] | None = None
    for m in range(cfg["N_MODELS"]):
        art = load_artifact(directory, _partial_name(cfg, m))
        if art is None:
            break
        reached = {arm: int(e) for arm, e in art.data["through_epoch"].items()}
        if not params_match(art, _partial_key(cfg, m, reached)) or (through is not None and reached != through):
            break
        found.append(art)
        through = reached
    if not found or through is None:
        return None
    return _grok_run(found, directory), through


def stored_long_run(cfg: Mapping[str, Any]) -> tuple[dict[str, Any], GrokRun, dict[str, int]] | None:
    """The stored ``paper``-preset run to show beside a shorter preset's run; trains nothing.

    Returns ``(paper_cfg, run, last_epoch)`` (see :func:`load_long_run`), or ``None`` when
    ``cfg`` is itself the paper preset (its own run is the long run) or nothing is stored.
    """
    if cfg.get("PRESET") == "paper":
        return None
    paper_cfg = resolve_params(PRESET="paper")
    found = load_long_run(paper_cfg)
    return None if found is None else (paper_cfg, *found)


def describe_long_run(paper_cfg: Mapping[str, Any], run: GrokRun, through: Mapping[str, int]) -> str:
    """One line on what a stored long run holds: models, epochs reached per arm, CPU time, grok epoch."""
    epochs = paper_cfg["EPOCHS"]
    state = "finished" if min(through.values()) >= epochs else "unfinished; stored part"
    return (
        f"stored long run ({state}): {run.n_models} of {paper_cfg['N_MODELS']} models; checkpoints through epoch "
        f"{through['wd']} (WD = 1) and {through['nowd']} (WD 1 → 0) of {epochs}; {sum(run.wall_s) / 3600:.1f} "
        f"CPU-hours of training + analysis; grok epoch {grok_epoch(run.wd.epochs, run.wd['test_acc'])}, "
        f"fork {paper_cfg['FORK_EPOCH']}"
    )


#: Printed by the chapters when no long run is stored.
NO_LONG_RUN = (
    "no stored long run to show (at PRESET = 'paper' the run above is the long run). To produce one: "
    "`python -m ace_helpers.grokking_cores --preset paper` (resumable), then the same with `--store-partial`"
)


def continues(long_cfg: Mapping[str, Any], cfg: Mapping[str, Any]) -> bool:
    """Whether run ``long_cfg`` is run ``cfg`` continued: the same run knobs except a larger EPOCHS."""
    same = all(long_cfg[k] == cfg[k] for k in RUN_KNOBS if k != "EPOCHS")
    return same and long_cfg["EPOCHS"] >= cfg["EPOCHS"]


def same_prefix(short: GrokRun, long: GrokRun, atol: float = 1e-9) -> tuple[bool, list[int], float]:
    """Whether two runs agree on their shared models and checkpoint epochs.

    A run continued for more epochs (same run knobs otherwise) must reproduce the shorter one's
    numbers: every segment is seeded by its position alone.  Training is bitwise reproducible;
    the shift-operator fits of a run stored by an earlier version of the code may differ from a
    fresh one at the level of floating-point rounding, hence ``atol``.

    Returns:
        ``(equal, epochs, max_abs_diff)``: ``equal`` is True when every per-checkpoint array of
        both arms agrees within ``atol`` (NaN exactly where the other has NaN) on the first
        min(n_models) models at the shared epochs ``epochs`` of the weight-decay arm (False if
        there are none); ``max_abs_diff`` is the largest difference found.
    """
    n = min(short.n_models, long.n_models)
    shared: list[int] = []
    equal, worst = True, 0.0
    for name in ARMS:
        a, b = getattr(short, name), getattr(long, name)
        common = np.intersect1d(a.epochs, b.epochs)
        if name == "wd":
            shared = common.tolist()
        ia = [a.index(int(e)) for e in common]
        ib = [b.index(int(e)) for e in common]
        for field in a.arrays:
            x = np.asarray(a.arrays[field][:n, ia], dtype=float)
            y = np.asarray(b.arrays[field][:n, ib], dtype=float)
            nan = np.isnan(x)
            if x.shape != y.shape or not np.array_equal(nan, np.isnan(y)):
                return False, shared, float("inf")
            if x.size:
                worst = max(worst, float(np.max(np.abs(x[~nan] - y[~nan]), initial=0.0)))
    equal = worst <= atol
    return equal and bool(shared), shared, worst


# --------------------------------------------------------------------------------------------
# summaries used by both chapters


def per_model_summary(arm: ArmResult, threshold: float = 0.99) -> list[dict[str, Any]]:
    """Per model: its own grok epoch (first checkpoint with test acc ≥ ``threshold``) and, from
    that checkpoint on, the minimum R_h², minimum fraction of near-unit eigenvalues, the core dim
    there and the largest core-removed accuracy."""
    out = []
    for m in range(arm["test_acc"].shape[0]):
        g = grok_epoch(arm.epochs, arm["test_acc"][m : m + 1], threshold)
        row: dict[str, Any] = {"model": m, "grok_epoch": g}
        if g is not None:
            post = arm.epochs >= g
            row.update(
                core_dim_at_grok=int(arm["core_dim"][m, arm.index(g)]),
                min_r2_holdout=round(float(arm["r2_holdout"][m, post].min()), 3),
                min_frac_unit_circle=round(float(arm["frac_unit_circle"][m, post].min()), 3),
                max_remove_acc=round(float(arm["remove_acc"][m, post].max()), 4),
            )
        out.append(row)
    return out


def default_clock_epochs(epochs: Sequence[int], grok: int | None) -> list[int]:
    """Clock epochs like the paper's (0, 300, 800, 900, 2000): start, before, at and after grokking, last."""
    epochs = list(epochs)
    if grok is None:
        picks = [epochs[0], epochs[len(epochs) // 3], epochs[2 * len(epochs) // 3], epochs[-1]]
    else:
        g = epochs.index(grok)
        picks = [epochs[0], epochs[max(g // 2, 0)], grok, epochs[min(g + 1, len(epochs) - 1)], epochs[-1]]
    return sorted(set(picks))


def arm_results(arm: ArmResult, prefix: str = "") -> dict[str, Any]:
    """Flat results.json entries of one arm: per-checkpoint arrays as (M, C) nested lists."""
    keys = ("test_acc", "core_dim", "suff_dim", "keep_acc", "remove_acc", "r2_holdout", "frac_unit_circle",
            "rotational_modes", "energy_rank", "median_abs_eig", "r2_ols", "frac_unit_circle_ols", "rotational_modes_ols")  # fmt: skip
    out: dict[str, Any] = {f"{prefix}epochs": arm.epochs.tolist()}
    for k in keys:
        out[f"{prefix}{k}"] = to_plain(arm.arrays[k])
    return out


# --------------------------------------------------------------------------------------------
# claims (thresholds from issue 4's "Must reach" list; see the chapters for the paper's values)

#: Test accuracy below which a checkpoint counts as "before grokking" (memorisation phase) for
#: the claims about the pre-grokking spectrum: 0.1 is ~5x chance at p = 53 and below every
#: transition-phase accuracy of the paper's clocks (epoch 300: chance; epoch 800: 1.0).
PRE_GROK_ACC = 0.1


@dataclass(frozen=True)
class ClaimRow:
    """A claim the preset cannot test (reported with our value, never counted as a pass)."""

    claim: str
    paper: str
    ours: str
    why: str


def per_model_at(arm: ArmResult, name: str, epoch: int) -> np.ndarray:
    """(M,) values of field ``name`` at checkpoint ``epoch`` for every model."""
    return arm[name][:, arm.index(epoch)]


#: Claims measured *not* to reproduce with a preset's exact parameters (seeds included), and why.
#: They are shown as "no — known gap" in the chapter and do not fail the notebook; any other
#: failure does.  Evidence: the book-preset run stored in ``book/artifacts/modadd_grokking``.
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "book": {
        "post_grok_unit_circle": "model 1 groks late (epoch 1000) and its clock is still sharpening at its grok "
        "checkpoint, and model 0's share drifts down once its core starts to inflate",
        "post_grok_r2_holdout": "same checkpoints as the unit-circle row: a late grokker and an inflating core "
        "make the 4-class held-out block harder to predict",
        "nowd_no_inflation": "the remove-until-≤ 2/p rule sits on a knife edge: without weight decay one model "
        "keeps a few-times-chance residue off the core, so its necessary dim jumps by tens",
    },
}
# Measured on the paper run (2 of its 3 models: the book run continued to 20 000 epochs, so the
# book's checkpoints and their gaps are part of it).
KNOWN_GAPS["paper"] = {
    "post_grok_unit_circle": "besides the book run's checkpoints (a late grokker, an inflating core), the share "
    "dips while the core inflates under weight decay and recovers later in the run (per-checkpoint arrays in the chapter)",
    "post_grok_r2_holdout": "R_h² is the mean per-dimension R² on 4 held-out classes of a ridge fit on the other "
    "class pairs; once the core has inflated to ~40 dimensions it is noisy and stays low",
    "nowd_no_inflation": "the remove-until-≤ 2/p rule sits on a knife edge: without weight decay both models keep "
    "a residue of one to two times 2/p off the core, so their necessary dim jumps by tens while the arm's 0.99-energy "
    "rank does not grow (table in the chapter)",
    "suff_flat": "the sufficient dim grows under weight decay too, though less than the necessary dim (so their gap "
    "widens, see the separation row); keep-only must stay within 1e-3 of base accuracy, i.e. lose at most one test "
    "example, while the solution spreads over more frequencies",
    "modes_20": "tied to the core size, which stays below the paper's ~60 here (first row): a d-dimensional core "
    "holds at most ⌊d/2⌋ + 1 frequency bins",
}


def known_gap(cfg: Mapping[str, Any], key: str) -> str | None:
    """The documented reason ``key`` does not reproduce, if ``cfg`` is exactly its preset's run."""
    preset = cfg.get("PRESET")
    gaps = KNOWN_GAPS.get(preset, {})
    if key not in gaps:
        return None
    same_run = all(cfg[k] == PRESETS[preset][k] for k in (*RUN_KNOBS, "N_MODELS"))
    return gaps[key] if same_run else None


def grokking_claims(run: GrokRun, cfg: Mapping[str, Any]) -> tuple[Any, list[ClaimRow], dict[str, Any]]:
    """Chapter 2 claims: grok epoch, core dim at grokking, spectrum before / after, keep / remove.

    Returns ``(Claims, not_tested, numbers)``; ``numbers`` are the measured values used.
    At the ``ci`` preset (a smaller prime and other data) the paper's grok-epoch window and the
    core-dim window do not apply; they are replaced by "groks before FORK_EPOCH" and a core
    dim at grokking in [4, 25] (loosened below 10 because p = 31 has 16, not 27, harmonics), and
    the post-grokking R_h² threshold is loosened from 0.9 to 0.5: at p = 31 the ~14-dim shift
    operator is fitted on only 27 class pairs and scored on 4, so R_h² is noisy (0.6–0.93 on
    the ci run's post-grokking checkpoints, against < 0 before grokking).
    """
    from ace_helpers.report import Claims

    p = cfg["P"]
    wd = run.wd
    epochs = wd.epochs
    claims = Claims()
    not_tested: list[ClaimRow] = []
    grok = grok_epoch(epochs, wd["test_acc"])
    paper_task = p == 53 and cfg["TRAIN_FRACTION"] == 0.5
    nums: dict[str, Any] = {"grok_epoch": grok}
    if paper_task:
        claims.check("grok epoch (all models ≥ 0.99 test acc) in [500, 1200]", "~800", grok,
                     grok is not None and 500 <= grok <= 1200)  # fmt: skip
    else:
        claims.check(f"groks (all models ≥ 0.99) by FORK_EPOCH = {cfg['FORK_EPOCH']} (ci: p = {p})", "~800 at p = 53",
                     grok, grok is not None and grok <= cfg["FORK_EPOCH"])  # fmt: skip
    if grok is None:
        return claims, not_tested, nums
    dim_at = per_model_at(wd, "core_dim", grok)
    lo = 10 if paper_task else 4
    nums["core_dim_at_grok"] = dim_at.tolist()
    claims.check(f"core dim at grokking in [{lo}, 25] (every model)", "~15", dim_at.tolist(),
                 bool(((dim_at >= lo) & (dim_at <= 25)).all()))  # fmt: skip

    pre = (wd["test_acc"] < PRE_GROK_ACC).all(axis=0) & (epochs < grok)
    post = epochs >= grok
    nums["pre_grok_epochs"] = epochs[pre].tolist()
    med = wd["median_abs_eig"][:, pre]
    r2h = wd["r2_holdout"][:, pre]
    nums["pre_grok_max_median_abs_eig"] = float(np.max(med)) if med.size else None
    nums["pre_grok_max_r2_holdout"] = float(np.max(r2h)) if r2h.size else None
    claims.check(f"before grokking (test acc < {PRE_GROK_ACC}): median |λ| < 0.8 at every checkpoint", "inside the disk",
                 nums["pre_grok_max_median_abs_eig"], bool(med.size) and bool((med < 0.8).all()))  # fmt: skip
    claims.check("before grokking: R_h² < 0.6 at every checkpoint", "R² ≈ 0", nums["pre_grok_max_r2_holdout"],
                 bool(r2h.size) and bool((r2h < 0.6).all()))  # fmt: skip
    frac = wd["frac_unit_circle"][:, post]
    r2p = wd["r2_holdout"][:, post]
    keep_gap = (wd["test_acc"] - wd["keep_acc"])[:, post]
    rem = wd["remove_acc"][:, post]
    nums.update(post_grok_min_frac_unit_circle=float(frac.min()), post_grok_min_r2_holdout=float(r2p.min()),
                post_grok_max_keep_gap=float(keep_gap.max()), post_grok_max_remove_acc=float(rem.max()))  # fmt: skip
    claims.check("from grokking on: ≥ 80 % of eigenvalues within sin(π/p) of the circle", "on the circle",
                 nums["post_grok_min_frac_unit_circle"], bool((frac >= 0.8).all()),
                 known_gap=known_gap(cfg, "post_grok_unit_circle"))  # fmt: skip
    r2_min = 0.9 if paper_task else 0.5
    claims.check(f"from grokking on: R_h² ≥ {r2_min}", "≈ 1", nums["post_grok_min_r2_holdout"], bool((r2p >= r2_min).all()),
                 known_gap=known_gap(cfg, "post_grok_r2_holdout"))  # fmt: skip
    claims.check("from grokking on: core-only acc ≥ base − 0.01 (max shortfall)", "= base",
                 nums["post_grok_max_keep_gap"], bool((keep_gap <= 0.01).all()))  # fmt: skip
    claims.check(f"from grokking on: core-removed acc ≤ 2/p = {2 / p:.4f} (max)", "chance",
                 nums["post_grok_max_remove_acc"], bool((rem <= 2.0 / p).all()))  # fmt: skip
    return claims, not_tested, nums


def inflation_claims(
    run: GrokRun, cfg: Mapping[str, Any], last_epoch: int | None = None
) -> tuple[Any, list[ClaimRow], dict[str, Any]]:
    """Chapter 3 claims: inflation with WD, none without, sufficient flat vs necessary growing.

    The inflation targets (core dim ≥ 40, ≥ 20 of 27 modes, necessary dim growing by ≥ 10)
    are stated for 20 000 epochs at p = 53.  ``last_epoch`` is where the run's checkpoints stop
    (default EPOCHS; less for the stored part of an unfinished run, :func:`load_partial`).  A
    run on the paper's task that stops earlier is checked against them only where it already
    meets them (a target reached by its last epoch is reached "by epoch 20 000"); otherwise
    they are reported as *not tested* with its value.
    """
    from ace_helpers.report import Claims

    p = cfg["P"]
    wd, nowd = run.wd, run.nowd
    claims = Claims()
    not_tested: list[ClaimRow] = []
    grok = grok_epoch(wd.epochs, wd["test_acc"])
    nums: dict[str, Any] = {"grok_epoch": grok}
    last = int(wd.epochs[-1])
    horizon = int(cfg["EPOCHS"] if last_epoch is None else last_epoch)
    dim_last = wd["core_dim"][:, -1]
    modes_last = wd["rotational_modes"][:, -1]
    top = p // 2 + 1  # ⌊p/2⌋ + 1 frequency bins
    nums.update(core_dim_last=dim_last.tolist(), modes_last=modes_last.tolist(),
                nowd_core_dim_last=nowd["core_dim"][:, -1].tolist(), nowd_modes_last=nowd["rotational_modes"][:, -1].tolist())  # fmt: skip
    paper_task = p == 53 and cfg["TRAIN_FRACTION"] == 0.5
    full_run = paper_task and horizon >= 20000
    why = f"needs 20 000 epochs at p = 53 (this run: {horizon} at p = {p})"

    def late_claim(text: str, paper: str, ours: Any, ok: bool, why_not: str, gap: str | None = None) -> None:
        if full_run or (paper_task and ok):
            claims.check(text, paper, ours, ok, known_gap=None if gap is None else known_gap(cfg, gap))
        else:
            not_tested.append(ClaimRow(text, paper, str(ours), why_not))

    late_claim(f"with WD: core dim ≥ 40 by epoch 20 000 (every model; ours at epoch {last})", "~60", dim_last.tolist(),
               bool((dim_last >= 40).all()), why)  # fmt: skip
    late_claim(f"with WD: rotational modes ≥ 20 of 27 (p = 53) by epoch 20 000 (ours at epoch {last}, of {top})", "→ 27",
               modes_last.tolist(), bool((modes_last >= 20).all()), why, gap="modes_20")  # fmt: skip
    if grok is None or grok > cfg["FORK_EPOCH"]:
        claims.check("the run groks before the fork (needed for the WD-off comparison)", "grok 800 < fork 900", grok, False)
        return claims, not_tested, nums
    g_dim = per_model_at(wd, "core_dim", grok)
    ratio = (nowd["core_dim"] / g_dim[:, None]).max(axis=1)
    nums["nowd_max_ratio_to_grok_dim"] = ratio.tolist()
    claims.check("WD-off arm: core dim stays ≤ 1.5× its grokking dim (max ratio per model)", "no inflation",
                 [round(float(r), 3) for r in ratio], bool((ratio <= 1.5).all()),
                 known_gap=known_gap(cfg, "nowd_no_inflation"))  # fmt: skip
    post = wd.epochs >= grok
    suff = wd["suff_dim"][:, post]
    spread = suff.max(axis=1) / np.maximum(suff.min(axis=1), 1)
    nums["suff_dim_post_grok_max_over_min"] = spread.tolist()
    claims.check("with WD: sufficient dim stays flat after grokking (max/min ≤ 1.5 per model)", "flat",
                 [round(float(s), 3) for s in spread], bool((spread <= 1.5).all()),
                 known_gap=known_gap(cfg, "suff_flat"))  # fmt: skip
    growth = (wd["core_dim"][:, -1] - g_dim).tolist()
    nums["core_dim_growth_since_grok"] = growth
    gap_growth = ((wd["core_dim"] - wd["suff_dim"])[:, -1] - (g_dim - per_model_at(wd, "suff_dim", grok))).tolist()
    nums["redundancy_gap_growth_since_grok"] = gap_growth
    late_claim(f"with WD: necessary and sufficient dims separate: their gap grows by ≥ 10 after grokking (epoch {last})",
               "the gap (redundancy) widens", gap_growth, bool((np.asarray(gap_growth) >= 10).all()),
               f"inflation is a late, slow effect; this run stops at epoch {last}")  # fmt: skip
    late_claim(f"with WD: necessary (core) dim grows by ≥ 10 after grokking (last − grok, epoch {last})", "~15 → ~60",
               growth, bool((np.asarray(growth) >= 10).all()), f"inflation is a late, slow effect; this run stops at epoch {last}")  # fmt: skip
    return claims, not_tested, nums


def dimension_table(run: GrokRun, grok: int) -> str:
    """Markdown table: 0.99-energy rank, necessary and sufficient dim per arm and model, at
    grokking (WD-off arm: its first checkpoint, the fork) and at each arm's last checkpoint."""
    lines = ["| arm | model | epoch | energy rank | necessary dim | sufficient dim |", "|---|---|---|---|---|---|"]
    for label, arm, first in (("WD = 1", run.wd, grok), ("WD 1 → 0", run.nowd, int(run.nowd.epochs[0]))):
        for m in range(run.n_models):
            for e in (first, int(arm.epochs[-1])):
                i = arm.index(e)
                lines.append(f"| {label} | {m} | {e} | {int(arm['energy_rank'][m, i])} | {int(arm['core_dim'][m, i])} | "
                             f"{int(arm['suff_dim'][m, i])} |")  # fmt: skip
    return "\n".join(lines)


def not_tested_table(rows: Sequence[ClaimRow]) -> str:
    """Markdown table of the claims a preset cannot test (empty string if none)."""
    if not rows:
        return ""
    lines = ["| claim (not tested at this preset) | paper | ours | why |", "|---|---|---|---|"]
    lines += [f"| {r.claim} | {r.paper} | {r.ours} | {r.why} |" for r in rows]
    return "\n".join(lines)


def clock_panels(arm: ArmResult, epochs: Sequence[int], model: int = 0, label: str = "") -> tuple[list, list, list]:
    """Eigenvalues, titles and notes (acc, R_h², core dim) for :func:`plots.grokking.plot_clocks`."""
    eigs, titles, notes = [], [], []
    for e in epochs:
        i = arm.index(int(e))
        eigs.append(arm.eigenvalues(model, i))
        titles.append(f"{label}epoch {int(e)}")
        notes.append(
            f"acc {arm['test_acc'][model, i]:.2f}\nR_h² {arm['r2_holdout'][model, i]:.2f}\ncore {int(arm['core_dim'][model, i])}"
        )
    return eigs, titles, notes


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: train and store a preset's run in the background, resumable.

    ``python -m ace_helpers.grokking_cores --preset paper --workers 3`` (re-run the same command
    after an interruption: finished models are loaded, the others resume from their snapshots).
    ``--store-partial`` instead stores what an unfinished run has reached (:func:`store_partial`)
    next to the book's artifacts, for the chapters to show.
    """
    import argparse

    ap = argparse.ArgumentParser(description="Train + analyse the modular-addition run of Chapters 2-3 and store it.")
    ap.add_argument("--preset", default="paper", choices=P_.PRESET_NAMES)
    ap.add_argument("--workers", type=int, default=None, help="parallel training processes (default: the preset's)")
    ap.add_argument("--n-models", type=int, default=None, help="number of models (default: the preset's)")
    ap.add_argument("--store-partial", action="store_true", help="store the analyses an unfinished run has reached; no training")
    ap.add_argument("--wd-first", action="store_true", help="train each model's weight-decay arm to the end before its WD-off arm")
    args = ap.parse_args(argv)
    P_.set_threads()
    cfg = resolve_params(PRESET=args.preset, N_MODELS=args.n_models, WORKERS=args.workers)
    if args.store_partial:
        through = store_partial(cfg, snapshot_dir_for(cfg))
        print(f"stored {cfg['N_MODELS']} model(s) through epochs {through} of {cfg['EPOCHS']} in {artifact_dir(cfg)}")
        return
    run = load_or_train(cfg, snapshot_dir=snapshot_dir_for(cfg), workers=cfg["WORKERS"], wd_first=args.wd_first)
    print(f"stored in {run.directory}; grok epoch {grok_epoch(run.wd.epochs, run.wd['test_acc'])}")


if __name__ == "__main__":
    main()
