"""Trainers compared: chapter 2's book protocol trained by our batched ensemble trainer, by our loop trainer (each model
alone with ``torch.optim.AdamW``, as the code release trains) and by the code release itself, to epoch 2000.

Each statistic is measured per model, on every trainer that records it, and each pair of trainers is compared with a
two-sided Mann–Whitney U test (exact null distribution; ties are rare here, and the p-value is exact only without
them).  With 12 + 6 + 3 models the smallest p-values it can give are 0.0001 (12 against 6), 0.004 (12 against 3) and
0.024 (6 against 3): a p-value above 0.05 says the samples do not tell the trainers apart, not that they agree.

The statistics (each model's own grok checkpoint: the first with test accuracy ≥ 0.99):

- ``grok_epoch``; ``final_acc``, the test accuracy at epoch 2000;
- ``share_at_grok`` and ``share_next``: the OLS unit-circle share (within sin(π/p)) at the grok checkpoint and one
  checkpoint later;
- ``r2_ols_300``, ``r2_ols_900``, ``r2_ols_2000``: the in-sample OLS R² of the shift operator at the paper's clock
  epochs; ``r2h_900``, ``r2h_2000``: the held-out R_h² (both ours only: :func:`official_stats` says why);
- ``burst``: the largest necessary dim from grokking to epoch 2000 over the necessary dim at grokking (the code
  release stores its necessary rank, so this is the one core-size statistic all three have); ``nec_over_energy``: the
  largest necessary dim ÷ 0.99-energy rank after grokking (ours only: the release does not store an energy rank).

``python -m ace_helpers.chapters.modadd_grokking.trainers`` reads the stored runs (trains nothing) and writes
:data:`RESULTS` atomically; the chapter and its test read that file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult
from ace_helpers.chapters.modadd.long_run import load_long_run
from ace_helpers.chapters.modadd.stats import SHARE_MIN
from ace_helpers.chapters.modadd_grokking.paper_epochs import official_arrays
from ace_helpers.repro.artifacts import project_root, write_json
from ace_helpers.repro.tables import markdown_table

#: Where the compared runs are stored, and the comparison written.
STORE = Path("book") / "artifacts" / "trainers_compared"
RESULTS = STORE / "comparison.json"
#: The trainers of ours and their runs' settings (chapter 2's book preset, to epoch 2000, fp32): 12 models of the
#: ensemble trainer, which trains the headline runs (the snap claim is judged on them), 6 of the loop trainer.
OURS = {
    "ensemble": {"TRAINER": "ensemble", "PRECISION": "fp32", "N_MODELS": 12},
    "loop": {"TRAINER": "loop", "PRECISION": "fp32", "N_MODELS": 6},
}
EPOCHS, GROK_ACC = 2000, 0.99
STATISTICS = (
    "grok_epoch",
    "final_acc",
    "share_at_grok",
    "share_next",
    "r2_ols_300",
    "r2_ols_900",
    "r2_ols_2000",
    "r2h_900",
    "r2h_2000",
    "burst",
    "nec_over_energy",
)
TEST = "two-sided Mann–Whitney U, exact null distribution (scipy.stats.mannwhitneyu)"


def run_config(trainer: str) -> Any:
    """The settings of our ``trainer``'s run (``"ensemble"`` or ``"loop"``)."""
    if trainer not in OURS:
        raise ValueError(f"trainer={trainer!r}; allowed: {sorted(OURS)}")
    return config.PARAMS.resolve(
        PRESET="book", EPOCHS=EPOCHS, WORKERS=1, ARTIFACT_DIR=str(project_root() / STORE), **OURS[trainer]
    )


def _grok_index(epochs: np.ndarray, acc: np.ndarray) -> int | None:
    """The index of the first checkpoint with accuracy ≥ :data:`GROK_ACC` (None if none)."""
    hit = np.flatnonzero(acc >= GROK_ACC)
    return int(hit[0]) if hit.size else None


def _at(epochs: np.ndarray, values: np.ndarray, epoch: int) -> float:
    hit = np.flatnonzero(epochs == epoch)
    return float(values[hit[0]]) if hit.size else math.nan


def model_stats(
    epochs: np.ndarray,
    acc: np.ndarray,
    share: np.ndarray,
    r2_ols: np.ndarray,
    nec: np.ndarray,
    r2h: np.ndarray | None = None,
    energy: np.ndarray | None = None,
) -> dict[str, float]:
    """One model's statistics from its per-checkpoint arrays, each (C,) over ``epochs`` (C,) (NaN where not measured)."""
    gi = _grok_index(epochs, acc)
    nan = math.nan
    out = {
        "grok_epoch": float(epochs[gi]) if gi is not None else nan,
        "final_acc": _at(epochs, acc, EPOCHS),
        "share_at_grok": float(share[gi]) if gi is not None else nan,
        "share_next": float(share[gi + 1]) if gi is not None and gi + 1 < len(epochs) else nan,
        **{f"r2_ols_{e}": _at(epochs, r2_ols, e) for e in (300, 900, 2000)},
        **{f"r2h_{e}": _at(epochs, r2h, e) if r2h is not None else nan for e in (900, 2000)},
    }
    post = (epochs >= epochs[gi]) & (epochs <= EPOCHS) if gi is not None else np.zeros(len(epochs), bool)
    out["burst"] = float(nec[post].max() / max(nec[gi], 1)) if gi is not None else nan
    out["nec_over_energy"] = (
        float((nec[post] / np.maximum(energy[post], 1)).max()) if gi is not None and energy is not None else nan
    )
    return out


def ours_stats(arm: ArmResult) -> list[dict[str, float]]:
    """Per model, the statistics of one of our runs' weight-decay arm."""
    e = arm.epochs
    return [
        model_stats(
            e,
            arm["test_acc"][m],
            arm["frac_unit_circle_ols"][m],
            arm["r2_ols"][m],
            arm["core_dim"][m],
            arm["r2_holdout"][m],
            arm["energy_rank"][m],
        )
        for m in range(arm["test_acc"].shape[0])
    ]


def official_stats(arrays: Mapping[str, np.ndarray]) -> list[dict[str, float]]:
    """Per model, the statistics of the code release's stored run (its ``wd1`` arm's core-formation and mode-spread
    arrays, on one epoch grid).  Its R² is left out: the release stores the in-sample R² of its own fit on its own core
    basis and test split, which differs from ours before grokking (0.87–0.94 against our 0.69–0.74 at epoch 300, on
    cores of the same size), so it is not the statistic our trainers are measured with."""
    e = np.asarray(arrays["wd1/core_formation/epochs"])
    if not np.array_equal(e, arrays["wd1/mode_spread/epochs"]):
        raise ValueError("the release's core-formation and mode-spread epochs differ; expected one grid")
    acc, nec = arrays["wd1/core_formation/test_acc"], arrays["wd1/core_formation/r_nec"]
    share, no_r2 = arrays["wd1/mode_spread/frac_near"], np.full(e.shape, math.nan)
    return [model_stats(e, acc[m], share[m], no_r2, nec[m]) for m in range(acc.shape[0])]


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> dict[str, Any] | None:
    """``{"U", "p", "n"}`` of the two-sided exact Mann–Whitney U test of ``a`` against ``b`` (NaNs left out), or None
    with fewer than 2 values on a side."""
    x, y = [v for v in a if math.isfinite(v)], [v for v in b if math.isfinite(v)]
    if len(x) < 2 or len(y) < 2:
        return None
    res = mannwhitneyu(x, y, alternative="two-sided", method="exact")
    return {"U": float(res.statistic), "p": float(res.pvalue), "n": [len(x), len(y)]}


def compare(stats: Mapping[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Per statistic: each trainer's per-model values, their median, and the test of every pair of trainers."""
    names = list(stats)
    out: dict[str, Any] = {}
    for s in STATISTICS:
        values = {t: [m[s] for m in stats[t]] for t in names}
        medians = {
            t: (float(np.median([v for v in vals if math.isfinite(v)])) if any(math.isfinite(v) for v in vals) else None)
            for t, vals in values.items()
        }
        tests = {f"{a} vs {b}": mann_whitney(values[a], values[b]) for i, a in enumerate(names) for b in names[i + 1 :]}
        out[s] = {
            "values": {t: [v if math.isfinite(v) else None for v in vals] for t, vals in values.items()},
            "median": medians,
            "tests": tests,
        }
    return out


#: How the chapter names each statistic.
LABELS = {
    "grok_epoch": "grok epoch",
    "final_acc": "test accuracy at epoch 2000",
    "share_at_grok": "OLS share on the circle at grokking",
    "share_next": "OLS share one checkpoint later",
    "r2_ols_300": "in-sample OLS R² at epoch 300",
    "r2_ols_900": "in-sample OLS R² at epoch 900",
    "r2_ols_2000": "in-sample OLS R² at epoch 2000",
    "r2h_900": "held-out R_h² at epoch 900",
    "r2h_2000": "held-out R_h² at epoch 2000",
    "burst": "largest necessary dim after grokking ÷ at grokking",
    "nec_over_energy": "largest necessary dim ÷ 0.99-energy rank after grokking",
}


def table(comparison: Mapping[str, Any]) -> str:
    """The comparison (as :func:`main` writes it) as a markdown table: per statistic, each trainer's median and range
    over its models, and the p-value of every pair of trainers."""
    stats = comparison["statistics"]
    trainers = list(comparison["models"])
    pairs = [f"{a} vs {b}" for i, a in enumerate(trainers) for b in trainers[i + 1 :]]
    rows = []
    for s in STATISTICS:
        cells = []
        for t in trainers:
            vals = [v for v in stats[s]["values"][t] if v is not None]
            cells.append(f"{np.median(vals):.3g} ({min(vals):.3g}–{max(vals):.3g})" if vals else "—")
        tests = [stats[s]["tests"][p] for p in pairs]
        rows.append((LABELS[s], *cells, *(f"{t['p']:.3f}" if t else "—" for t in tests)))
    head = (
        "statistic",
        *(f"{t} ({comparison['models'][t]} models): median (range)" for t in trainers),
        *(f"p, {p}" for p in pairs),
    )
    return markdown_table(head, rows)


def load(root: Path | None = None) -> dict[str, Any] | None:
    """The stored comparison (:data:`RESULTS`), or None where it has not been made."""
    path = (root or project_root()) / RESULTS
    return json.loads(path.read_text()) if path.exists() else None


def differences(comparison: Mapping[str, Any], alpha: float = 0.05) -> dict[str, list[str]]:
    """Per pair of trainers, the statistics whose test gives p < ``alpha``, each as ``"label (median a vs b)"``."""
    out: dict[str, list[str]] = {}
    for s in STATISTICS:
        entry = comparison["statistics"][s]
        for pair, test in entry["tests"].items():
            a, b = pair.split(" vs ")
            if test is not None and test["p"] < alpha:
                out.setdefault(pair, []).append(
                    f"{LABELS[s]} ({entry['median'][a]:.3g} vs {entry['median'][b]:.3g}, p = {test['p']:.3f})"
                )
    return out


def summary(comparison: Mapping[str, Any], alpha: float = 0.05) -> str:
    """One computed paragraph: for every pair of trainers, the statistics that tell them apart at ``alpha``."""
    found = differences(comparison, alpha)
    trainers = list(comparison["models"])
    pairs = [f"{a} vs {b}" for i, a in enumerate(trainers) for b in trainers[i + 1 :]]
    lines = []
    for pair in pairs:
        if pair in found:
            lines.append(f"**{pair}**: " + "; ".join(found[pair]))
            continue
        tested = [(t["p"], LABELS[s]) for s in STATISTICS if (t := comparison["statistics"][s]["tests"][pair]) is not None]
        low = min(tested) if tested else None
        lines.append(
            f"**{pair}**: no statistic differs at p < {alpha:g}"
            + (f" (the smallest p is {low[0]:.3f}, for the {low[1]})" if low else "")
        )
    return "\n\n".join(lines)


def snap_sentence(comparison: Mapping[str, Any], bound: float = SHARE_MIN) -> str:
    """How many models of each trainer have an OLS share ≥ ``bound`` at their own grok checkpoint, as a sentence."""
    values = comparison["statistics"]["share_at_grok"]["values"]
    parts = [
        f"{sum(v is not None and v >= bound for v in vals)} of {len(vals)} {trainer} models" for trainer, vals in values.items()
    ]
    return (
        f"At each model's own grok checkpoint the OLS share on the circle is at least {bound:g} in "
        + ", ".join(parts[:-1])
        + f" and {parts[-1]}."
    )


def gather(root: Path | None = None) -> dict[str, list[dict[str, float]]]:
    """Per trainer (``ensemble``, ``loop``, ``official``), its models' statistics; a trainer whose run is not stored
    is left out."""
    root = root or project_root()
    out: dict[str, list[dict[str, float]]] = {}
    for trainer in OURS:
        found = load_long_run(run_config(trainer))
        if found is not None and found[1]["wd"] >= EPOCHS:
            out[trainer] = ours_stats(found[0].wd.upto(EPOCHS))
    official = official_arrays(root)
    if official is not None:
        out["official"] = official_stats(official)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ace_helpers.chapters.modadd_grokking.trainers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", default=str(project_root() / RESULTS), help="where to write the comparison (JSON)")
    args = parser.parse_args(argv)
    stats = gather()
    if len(stats) < 2:
        print(f"only {sorted(stats)} stored: nothing to compare", file=sys.stderr)
        return 1
    path = write_json(
        args.out, {"test": TEST, "epochs": EPOCHS, "models": {t: len(v) for t, v in stats.items()}, "statistics": compare(stats)}
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
