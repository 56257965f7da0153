"""The dimension-matched reference of Fig. 2D (chapter 3): modes of the core against any subspace of its dimension.

One model of a stored run (model 0 of the first paper run, each model alone in fp32) is retrained
(weight-decay arm only) to :data:`REFERENCE_EPOCHS` and its activations kept there
(:func:`train_reference`, :func:`store_reference`, :func:`stored_reference`); at each epoch the
rotational modes of the OLS shift fit on the first d ACE directions are compared with those of
random d-dimensional subspaces of the same activations and of Gaussian class means
(:func:`reference_rows`), bounded by what a d-dimensional fit can fill (:func:`mode_cap`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ace_helpers.chapters.modadd import config, limits
from ace_helpers.chapters.modadd.analysis import GrokRun
from ace_helpers.chapters.modadd.checkpoints import SCALAR_FIELDS, analyse_activations, last_token_activations
from ace_helpers.chapters.modadd.keys import model_key, run_hash, snapshot_key, snapshot_name
from ace_helpers.chapters.modadd.run import train_one_model
from ace_helpers.method.operators import class_means, fit_shift_operator, rotational_modes
from ace_helpers.repro.artifacts import default_output_dir, load_artifact, project_root, save_artifact
from ace_helpers.repro.tables import markdown_table
from ace_helpers.toys.models import build_model
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.train import load_state


def mode_cap(dim: int, p: int) -> int:
    """Most folded frequency bins an OLS shift fit on a ``dim``-dimensional core can fill.

    The fit runs in k = min(dim, p − 1) dimensions; its k eigenvalues come in conjugate pairs
    (one bin each) plus real ones (bins 0 and ⌊p/2⌋), so at most ⌊k/2⌋ + 1 bins, and never more
    than the ⌊p/2⌋ + 1 there are.  A core of 60 dimensions at p = 53: 27; of 42: 22.
    """
    k = min(int(dim), p - 1)
    return min(k // 2 + 1, p // 2 + 1)


#: The reference: model 0 of the paper preset's run retrained (WD arm only) to these epochs, at
#: which its activations are kept: grokking (core ~15) and after the inflation (core ~42).
REFERENCE_EPOCHS: tuple[int, ...] = (1000, 6000)
#: How the reference's run (the first stored paper run) was trained; :func:`train_reference` retrains so.
REFERENCE_TRAINING: dict[str, Any] = {"TRAINER": "loop", "PRECISION": "fp32", "FORK_EPOCH": 1100}
#: Random subspaces (and random class means) drawn per dimension; their seed.
REFERENCE_DRAWS, REFERENCE_SEED = 50, 0


def ols_modes(means: np.ndarray, basis: np.ndarray, p: int) -> int:
    """Rotational modes of the OLS shift fit (ridge 0, all classes: the code release's sweep fit)
    on class means (p, D) of activations projected onto ``basis`` (D, d)."""
    fit = fit_shift_operator(np.asarray(means) @ np.asarray(basis), ridge=0.0, holdout=None)
    return rotational_modes(fit.eigenvalues, p, math.sin(math.pi / p))


def random_subspace_modes(means: np.ndarray, dim: int, p: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(draws,) :func:`ols_modes` of ``dim``-dimensional subspaces of the activation space (D) with random
    orthonormal bases (QR of a Gaussian D × dim matrix): what any subspace of that size holds."""
    d_act = np.asarray(means).shape[1]
    return np.asarray([ols_modes(means, np.linalg.qr(rng.standard_normal((d_act, dim)))[0], p) for _ in range(draws)])


def random_means_modes(dim: int, p: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(draws,) rotational modes of the OLS shift fit on Gaussian class means (p, dim): no model at all."""
    return np.asarray([ols_modes(rng.standard_normal((p, dim)), np.eye(dim), p) for _ in range(draws)])


def reference_run_cfg(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The run whose weight-decay arm the reference retrains: ``cfg`` with the fork moved to EPOCHS − 1.

    The WD arm does not depend on FORK_EPOCH (segments are seeded by position; the fork copies
    the model without touching a random state), so this trains the same WD arm without training
    a WD-off arm first (:func:`reference_claims` compares its grok epoch with the stored run's).
    """
    return dict(cfg) | {"FORK_EPOCH": int(cfg["EPOCHS"]) - 1}


def train_reference(
    cfg: Mapping[str, Any],
    epochs: Sequence[int] = REFERENCE_EPOCHS,
    *,
    model_index: int = 0,
    snapshot_dir: str | Path | None = None,
    log: Callable[[str], None] | None = print,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Retrain model ``model_index``'s WD arm of run ``cfg`` and keep its activations at ``epochs``.

    Each epoch must end a training segment (a multiple of ``SEGMENT_EPOCHS``, or EPOCHS).  The
    model state at each epoch is kept in ``snapshot_dir`` (default
    ``outputs/core_inflation_reference_snapshots``), so an interrupted call resumes.

    Returns ``(data, arrays)`` for :func:`store_reference`: ``data["epochs"]``, per epoch the
    analysis scalars (``data["analysis"][str(epoch)]``), ``data["train_wall_s"]`` (training and
    checkpoint analyses of the arm, over resumes); arrays ``e<epoch>/means`` (p, D) class
    means of the layer-2 last-token activations on the test split, ``e<epoch>/basis`` (D, D) the
    ACE basis, and ``wd/<field>`` (C,) the WD arm's per-checkpoint scalars up to the last epoch.
    """

    if cfg["TRAINER"] != "loop" or cfg["PRECISION"] != "fp32":
        raise ValueError(
            f"TRAINER={cfg['TRAINER']!r}, PRECISION={cfg['PRECISION']!r} is not allowed for the reference: it retrains one model alone (TRAINER='loop', PRECISION='fp32')"
        )
    run_cfg = reference_run_cfg(cfg)
    p = int(cfg["P"])
    snap_dir = Path(snapshot_dir) if snapshot_dir is not None else default_output_dir("core_inflation_reference_snapshots")
    data = modadd_dataset(p, cfg["TRAIN_FRACTION"], cfg["DATA_SEED"])
    holdout = config.holdout_classes(p, cfg["HOLDOUT_FRACTION"])
    out: dict[str, Any] = {"epochs": sorted({int(e) for e in epochs}), "analysis": {}}
    arrays: dict[str, np.ndarray] = {}
    for e in out["epochs"]:
        name, key = f"reference_state_{run_hash(run_cfg)}_m{model_index}_e{e}", snapshot_key(run_cfg, model_index) | {"epoch": e}
        state = load_artifact(snap_dir, name, key)
        if state is None:
            train_one_model(run_cfg, model_index, snapshot_dir=snap_dir, stop_after=e, wd_first=True, log=log)
            snap = load_artifact(snap_dir, f"{snapshot_name(run_cfg, model_index)}_wd", snapshot_key(run_cfg, model_index))
            if snap is None or int(snap.data["epoch"]) != e:
                raise RuntimeError(
                    f"the WD arm's snapshot in {snap_dir} is not at epoch {e} (epochs must end a training "
                    "segment, in increasing order; delete the folder to start again)"
                )
            save_artifact(snap_dir, name, params=key, arrays={k: v for k, v in snap.arrays.items() if k.startswith("model/")})
            state = load_artifact(snap_dir, name, key)
        model = build_model(limits.model_config(p), int(cfg["SEED"]) + model_index)
        load_state(model, None, state.arrays, "")
        H = last_token_activations(model, data.test_inputs)
        row, core = analyse_activations(
            H,
            model.lm_head.weight,
            model.lm_head.bias,
            data.test_answers,
            p,
            energy=cfg["ENERGY"],
            ridge=cfg["RIDGE"],
            holdout=holdout,
        )
        out["analysis"][str(e)] = {f: getattr(row, f) for f in SCALAR_FIELDS}
        arrays[f"e{e}/means"] = class_means(H.double().numpy(), data.test_answers.numpy(), p)
        arrays[f"e{e}/basis"] = core.full_basis
    rows = train_one_model(run_cfg, model_index, snapshot_dir=snap_dir, stop_after=out["epochs"][-1], wd_first=True, log=log)
    arrays |= {
        k: np.asarray(v) for k, v in rows.items() if k.startswith("wd/") and k.split("/", 1)[1] in (*SCALAR_FIELDS, "epochs")
    }
    snap = load_artifact(snap_dir, f"{snapshot_name(run_cfg, model_index)}_wd", snapshot_key(run_cfg, model_index))
    out["train_wall_s"] = float(snap.data.get("wall_s", 0.0)) if snap is not None else None
    return out, arrays


def reference_dir() -> Path:
    """Where the reference is stored with the book: ``book/artifacts/core_inflation_reference``."""
    return project_root() / "book" / "artifacts" / "core_inflation_reference"


def _reference_key(cfg: Mapping[str, Any], model_index: int, epochs: Sequence[int]) -> tuple[str, dict[str, Any]]:
    return f"reference_{run_hash(cfg)}_m{model_index}", model_key(cfg, model_index) | {"reference_epochs": list(epochs)}


def store_reference(cfg: Mapping[str, Any], epochs: Sequence[int] = REFERENCE_EPOCHS, **kw: Any) -> Path:
    """:func:`train_reference` (model 0) stored as an artifact in :func:`reference_dir`; returns its manifest path."""
    tic = time.perf_counter()
    data, arrays = train_reference(cfg, epochs, **kw)
    name, key = _reference_key(cfg, 0, data["epochs"])
    wall = data["train_wall_s"] if data["train_wall_s"] is not None else time.perf_counter() - tic
    return save_artifact(reference_dir(), name, params=key, data=data, arrays=arrays, wall_s=wall)


def stored_reference(cfg: Mapping[str, Any], epochs: Sequence[int] = REFERENCE_EPOCHS) -> Any:
    """The stored reference of run ``cfg`` (an :class:`~ace_helpers.repro.artifacts.Artifact`), or ``None``; trains nothing."""
    name, key = _reference_key(cfg, 0, sorted(epochs))
    return load_artifact(reference_dir(), name, key)


def reference_rows(
    ref: Any, p: int, dims: Sequence[int] | None = None, *, draws: int = REFERENCE_DRAWS, seed: int = REFERENCE_SEED
) -> list[dict[str, Any]]:
    """Modes vs subspace dimension d at each stored epoch of the reference ``ref`` (:func:`stored_reference`).

    One row per (epoch, d), d in ``dims`` (default: that epoch's own core dim).  Keys: ``epoch``,
    ``dim``, ``cap`` (:func:`mode_cap`), ``ace`` (modes of the first d ACE directions: at the core
    dim, the core's), ``random`` ((draws,) random d-dimensional subspaces of the same
    activations) and ``gaussian`` ((draws,) Gaussian class means, no model).  Seeded.
    """

    rng = np.random.default_rng(seed)
    rows = []
    with threadpool_limits(limits=1):  # thousands of tiny fits: one BLAS thread is several times faster on a busy machine
        for e in ref.data["epochs"]:
            means, basis = ref.arrays[f"e{e}/means"], ref.arrays[f"e{e}/basis"]
            for d in dims if dims is not None else [int(ref.data["analysis"][str(e)]["core_dim"])]:
                rows.append(
                    {
                        "epoch": int(e),
                        "dim": int(d),
                        "cap": mode_cap(d, p),
                        "ace": ols_modes(means, basis[:, :d], p),
                        "random": random_subspace_modes(means, d, p, draws, rng),
                        "gaussian": random_means_modes(d, p, draws, rng),
                    }
                )
    return rows


def reference_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown table of :func:`reference_rows` (one line per epoch and dimension)."""
    header = (
        "epoch",
        "dim d",
        "cap ⌊d/2⌋ + 1",
        "modes: first d ACE directions",
        "random subspaces of dim d: median (min–max)",
        "95th percentile",
        "share reaching the ACE count",
        "random class means: median",
    )
    lines = []
    for r in rows:
        rnd = np.asarray(r["random"])
        lines.append(
            (
                f"{r['epoch']}",
                f"{r['dim']}",
                f"{r['cap']}",
                f"{r['ace']}",
                f"{np.median(rnd):g} ({rnd.min()}–{rnd.max()})",
                f"{np.quantile(rnd, 0.95):g}",
                f"{np.mean(rnd >= r['ace']):.2f}",
                f"{np.median(r['gaussian']):g}",
            )
        )
    return markdown_table(header, lines)


def reference_comparison(ref: Any, lrun: GrokRun) -> str:
    """Markdown table: the retrained model beside the stored run's model 0 at each reference epoch
    (test acc, energy rank, core dim, modes of the OLS fit), and their grok epochs."""
    wd = lrun.wd
    lines = []
    for e in ref.data["epochs"]:
        a = ref.data["analysis"][str(e)]
        i = wd.index(int(e))
        lines.append(
            (
                f"{e}",
                "retrained here",
                f"{a['test_acc']:.4f}",
                f"{a['energy_rank']}",
                f"{a['core_dim']}",
                f"{a['rotational_modes_ols']}",
            )
        )
        lines.append(
            (
                f"{e}",
                "stored model 0",
                f"{wd['test_acc'][0, i]:.4f}",
                f"{int(wd['energy_rank'][0, i])}",
                f"{int(wd['core_dim'][0, i])}",
                f"{int(wd['rotational_modes_ols'][0, i])}",
            )
        )
    return markdown_table(("epoch", "model", "test acc", "energy rank", "core dim", "modes (OLS)"), lines)


#: The share of the core's modes that random subspaces of its dimension must hold (median) for
#: the count to be "the dimension's" rather than the core's: ours, three-quarters.
RESTATES = 0.75
