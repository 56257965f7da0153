"""A modular-addition run as the chapters read it: each arm's per-checkpoint arrays (:class:`ArmResult`, filled by
:mod:`ace_helpers.chapters.modadd.checkpoints`, whose docstring defines them), the grok epoch, and the tables and
entries the chapters show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd.checkpoints import SPECTRUM_FIELDS
from ace_helpers.repro.artifacts import to_plain
from ace_helpers.repro.tables import markdown_table


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


#: The two arms, in segment-seed order: weight decay on, and off after the fork.
ARMS: tuple[str, str] = ("wd", "nowd")


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

    def upto(self, last: int) -> ArmResult:
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


def grok_run(found: Sequence[Any], directory: Path, cached: list[bool] | None = None) -> GrokRun:
    """A :class:`GrokRun` from per-model artifacts holding ``<arm>/<field>`` arrays (as training returns)."""
    per_model = [a.arrays for a in found]
    arms = {}
    for name in ARMS:
        fields = sorted({k.split("/", 1)[1] for k in per_model[0] if k.startswith(name + "/")} - {"epochs"})
        arms[name] = ArmResult(
            epochs=np.asarray(per_model[0][f"{name}/epochs"]),
            arrays={f: np.stack([pm[f"{name}/{f}"] for pm in per_model]) for f in fields},
        )
    return GrokRun(
        wd=arms["wd"],
        nowd=arms["nowd"],
        n_models=len(found),
        cached=cached or [True] * len(found),
        wall_s=[float(a.manifest.get("wall_s") or 0.0) for a in found],
        directory=directory,
    )


# --------------------------------------------------------------------------------------------
# summaries used by both chapters


def per_model_at(arm: ArmResult, name: str, epoch: int) -> np.ndarray:
    """(M,) values of field ``name`` at checkpoint ``epoch`` for every model."""
    return arm[name][:, arm.index(epoch)]


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


def run_entries(run: GrokRun, counts: Mapping[str, Any], wall_s: float) -> dict[str, Any]:
    """The ``results.json`` entries both modadd chapters share: the weight-decay arm's grok epoch,
    the claim ``counts`` (:meth:`ace_helpers.repro.report.Claims.counts`), where the models came from, the
    training wall times, ``long_run`` (None until a chapter fills it) and this notebook's ``wall_s``."""
    return {
        "grok_epoch": grok_epoch(run.wd.epochs, run.wd["test_acc"]),
        **counts,
        "models_from_artifact": run.cached,
        "train_wall_s": run.wall_s,
        "long_run": None,
        "wall_s": wall_s,
    }


def arm_results(arm: ArmResult, prefix: str = "") -> dict[str, Any]:
    """Flat results.json entries of one arm: per-checkpoint arrays as (M, C) nested lists."""
    keys = (
        "test_acc",
        "core_dim",
        "suff_dim",
        "keep_acc",
        "remove_acc",
        "r2_holdout",
        "frac_unit_circle",
        "rotational_modes",
        "energy_rank",
        "median_abs_eig",
        "r2_ols",
        "frac_unit_circle_ols",
        "rotational_modes_ols",
    )
    out: dict[str, Any] = {f"{prefix}epochs": arm.epochs.tolist()}
    for k in keys + tuple(f for f in SPECTRUM_FIELDS if f in arm.arrays):  # spectra: runs that store them
        out[f"{prefix}{k}"] = to_plain(arm.arrays[k])
    return out


def clock_panels(arm: ArmResult, epochs: Sequence[int], model: int = 0, label: str = "") -> tuple[list, list, list]:
    """Eigenvalues, titles and notes (acc, R_h², core dim) for ``ace_helpers.chapters.modadd.figures.plot_clocks``."""
    eigs, titles, notes = [], [], []
    for e in epochs:
        i = arm.index(int(e))
        eigs.append(arm.eigenvalues(model, i))
        titles.append(f"{label}epoch {int(e)}")
        notes.append(
            f"acc {arm['test_acc'][model, i]:.2f}\nR_h² {arm['r2_holdout'][model, i]:.2f}\ncore {int(arm['core_dim'][model, i])}"
        )
    return eigs, titles, notes


def dimension_table(run: GrokRun, grok: int) -> str:
    """Markdown table: 0.99-energy rank, necessary and sufficient dim per arm and model, at
    grokking (WD-off arm: its first checkpoint, the fork) and at each arm's last checkpoint."""
    lines = []
    for label, arm, first in (("WD = 1", run.wd, grok), ("WD 1 → 0", run.nowd, int(run.nowd.epochs[0]))):
        for m in range(run.n_models):
            for e in (first, int(arm.epochs[-1])):
                i = arm.index(e)
                lines.append(
                    (
                        label,
                        f"{m}",
                        f"{e}",
                        f"{int(arm['energy_rank'][m, i])}",
                        f"{int(arm['core_dim'][m, i])}",
                        f"{int(arm['suff_dim'][m, i])}",
                    )
                )
    return markdown_table(("arm", "model", "epoch", "energy rank", "necessary dim", "sufficient dim"), lines)
