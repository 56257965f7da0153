"""Statistics over the checkpoints of a modular-addition arm that chapter 2's claims read.

Shares of post-grokking checkpoints meeting a threshold (:func:`post_grok`, :class:`PostGrok`),
core-removed accuracy at the 0.99-energy rank (:func:`remove_at_energy_rank`), the share of
eigenvalues inside a widened band (:func:`wide_band_share`) and the late part of a long run
that continues a shorter one (:func:`late_arm`).  Arrays are (M, C): models × checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult, GrokRun
from ace_helpers.chapters.modadd.long_run import continues, how_trained, load_long_run, stored_long_run
from ace_helpers.repro.tables import markdown_table

#: Share of eigenvalues within sin(π/p) of the unit circle that counts as "on the circle" (ours).
SHARE_MIN = 0.8

#: A claim over post-grokking checkpoints is "partly" reproduced when at least this share of
#: them (pooled over models) meets its threshold.
PARTLY_SHARE = 0.5

#: Necessity test: the necessary dim may be at most this many times the 0.99-energy rank (ours).
NEC_FACTOR = 2.0

#: Threshold diagnosis: the band ||λ| − 1| ≤ WIDE_BAND · sin(π/p).
WIDE_BAND = 3

#: "Late" in a long run: from this epoch on, the second half of the paper's 20 000 epochs.
LATE_EPOCH = 10_000


@dataclass(frozen=True)
class PostGrok:
    """A per-checkpoint value over the post-grokking checkpoints against a lower threshold.

    ``n_ok`` of ``n`` (model, checkpoint) pairs meet it; ``min`` is the lowest value, at
    ``argmin = (model, epoch)``; ``failures`` lists (model, epoch, value) below the threshold,
    by epoch then model; ``per_model`` (M,) how many checkpoints of each model meet it.
    """

    threshold: float
    n: int
    n_ok: int
    min: float
    argmin: tuple[int, int]
    failures: list[tuple[int, int, float]]
    per_model: list[int]

    @property
    def share(self) -> float:
        """Share of the post-grokking (model, checkpoint) pairs that meet the threshold."""
        return self.n_ok / self.n if self.n else 0.0

    @property
    def all_ok(self) -> bool:
        """Every post-grokking checkpoint of every model meets the threshold (and there is one)."""
        return self.n > 0 and self.n_ok == self.n

    def text(self) -> str:
        """'9 of 10 checkpoints (0.90); min 0.75 (model 0, epoch 1400)': the ``ours`` of a claim."""
        return (
            f"{self.n_ok} of {self.n} checkpoints ({self.share:.2f}); min {self.min:.3g} "
            f"(model {self.argmin[0]}, epoch {self.argmin[1]})"
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain values for ``results.json``."""
        return {
            "threshold": self.threshold,
            "n": self.n,
            "n_ok": self.n_ok,
            "share": self.share,
            "min": self.min,
            "argmin": list(self.argmin),
            "per_model_ok": self.per_model,
            "failures": [[m, e, v] for m, e, v in self.failures],
        }


def post_grok(arm: ArmResult, values: np.ndarray, threshold: float, post: np.ndarray) -> PostGrok:
    """How the checkpoints ``post`` (C,) bool of ``values`` (M, C) meet ``value ≥ threshold``.

    A NaN value (e.g. R_h² without a holdout) fails the threshold; ``min`` is NaN when every value is.
    """
    v = np.asarray(values, dtype=float)[:, post]
    epochs = arm.epochs[post]
    ok = v >= threshold
    if not np.isfinite(v).any():
        return PostGrok(
            threshold,
            int(v.size),
            0,
            float("nan"),
            (-1, -1),
            [(int(a), int(epochs[b]), float(v[a, b])) for b, a in zip(*np.nonzero(~ok.T))],
            [0] * v.shape[0],
        )
    m, c = np.unravel_index(int(np.nanargmin(v)), v.shape)
    fails = [(int(a), int(epochs[b]), float(v[a, b])) for b, a in zip(*np.nonzero(~ok.T))]
    return PostGrok(
        threshold=threshold,
        n=int(v.size),
        n_ok=int(ok.sum()),
        min=float(np.nanmin(v)),
        argmin=(int(m), int(epochs[c])),
        failures=fails,
        per_model=ok.sum(axis=1).astype(int).tolist(),
    )


def remove_at_energy_rank(arm: ArmResult) -> np.ndarray:
    """(M, C) core-removed accuracy with the first ``energy_rank`` ACE directions removed (from ``remove_curve``)."""
    rank = np.asarray(arm["energy_rank"], dtype=int)
    return np.take_along_axis(np.asarray(arm["remove_curve"]), rank[..., None], axis=2)[..., 0]


def wide_band_share(arm: ArmResult, model: int, checkpoint: int, p: int, factor: float) -> float:
    """Share of the stored (ridge-fit) eigenvalues of one model at checkpoint index ``checkpoint``
    within ``factor · sin(π/p)`` of the unit circle (0 when there are none)."""
    z = arm.eigenvalues(model, checkpoint)
    if not z.size:
        return 0.0
    return float((np.abs(np.abs(z) - 1.0) <= factor * np.sin(np.pi / p)).mean())


def late_arm(run: GrokRun, cfg: Any, late_epoch: int = LATE_EPOCH) -> tuple[ArmResult, str] | None:
    """The weight-decay arm that reaches ``late_epoch``: this run's, or the stored paper-preset run's
    when that run continues this one (same run knobs, more epochs: the same models trained on),
    else the most complete stored paper-preset run of this protocol trained another way (TRAINER,
    PRECISION: another sample of the same seeds and knobs; ``source`` says so).

    Returns ``(arm, source)`` (``source`` names it for a claim) or None; trains nothing.
    """
    if int(run.wd.epochs[-1]) >= late_epoch:
        return run.wd, "this run"
    if cfg["PRESET"] == "paper":
        return None
    paper_cfg = config.PARAMS.resolve(PRESET="paper", TRAINER=cfg["TRAINER"], PRECISION=cfg["PRECISION"])  # trained as this run
    found = load_long_run(paper_cfg)
    if found is not None and continues(paper_cfg, cfg) and int(found[0].wd.epochs[-1]) >= late_epoch:
        return found[0].wd, f"the stored paper-preset run (these seeds continued to epoch {int(found[0].wd.epochs[-1])})"
    other = stored_long_run(cfg)  # no continuation stored: the most complete stored run of this protocol
    if (
        other is None
        or not continues(other[0], cfg, same_training=False, wd_arm=True)
        or int(other[1].wd.epochs[-1]) < late_epoch
    ):
        return None
    return other[1].wd, (
        f"the stored paper-preset run of this protocol, trained {how_trained(other[0])} (these seeds and "
        f"knobs to epoch {int(other[1].wd.epochs[-1])}: another sample, not this run continued)"
    )


def post_grok_table(arm: ArmResult, grok: int, rows: dict[str, tuple[np.ndarray, float]]) -> str:
    """Markdown table, one row per model: its post-grokking checkpoints and, for each named
    ``rows[name] = (values (M, C), threshold)``, how many meet ``value ≥ threshold`` and the minimum."""
    post = arm.epochs >= grok
    names = list(rows)
    lines = []
    for m in range(arm["test_acc"].shape[0]):
        cells = []
        for n in names:
            v = np.asarray(rows[n][0], dtype=float)[m, post]
            low = float(np.nanmin(v)) if np.isfinite(v).any() else float("nan")
            cells.append(f"{int((v >= rows[n][1]).sum())} (min {low:.2f})")
        lines.append((f"{m}", f"{int(post.sum())}", *cells))
    return markdown_table(("model", "checkpoints from grokking on", *(f"{n} ≥ {rows[n][1]:g}" for n in names)), lines)
