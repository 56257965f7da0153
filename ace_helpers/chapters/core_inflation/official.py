"""The code release's own numbers for chapter 3's weight-decay-off claims: its ``modadd.py``, rerun here as released
to epoch 5000 (one model), the arm without weight decay forked at epoch 900 as in the release.

:func:`ace_helpers.repro.official_runs.run_modadd` stores the release's own analysis of both arms.  For
``inflation.no_wd`` and ``inflation.no_wd_modes`` :func:`official_numbers` reads the release's numbers in the shape
of our records' ``value``: per model, the weight-decay-off arm's value at the run's last epoch ÷ the weight-decay
arm's value at grokking, our rule's ratio (:data:`~.rules.NOWD_FACTOR`), on the release's necessary dimension
(``r_nec``) and its count of occupied rotational-mode bins (``present`` of ``mode_spread``, ⌊p/2⌋ + 1 bins).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ace_helpers.chapters.core_inflation.measures import NOWD_FACTOR
from ace_helpers.repro.artifacts import load_artifact, project_root
from ace_helpers.repro.tables import markdown_table

#: Where the release's 5000-epoch run is stored (relative to the project root), and its artifact name.
OFFICIAL_STORE, OFFICIAL_RUN = Path("book") / "artifacts" / "official_modadd", "official_modadd_e5000_k1"


def _ratio(wd: np.ndarray, nowd: np.ndarray, epochs: list[int], grok: int) -> list[float]:
    """Per model: ``nowd`` at the last epoch ÷ ``wd`` at the grok epoch (arrays (models, epochs))."""
    return [float(b / a) for a, b in zip(wd[:, epochs.index(grok)], nowd[:, -1])]


def official_numbers(arrays: Mapping[str, np.ndarray]) -> dict[str, object]:
    """The release's ratios for ``inflation.no_wd`` (necessary dimension) and ``inflation.no_wd_modes`` (occupied
    mode bins), and ``epoch``: the last epoch, where the ratios are read."""
    epochs = [int(e) for e in arrays["wd1/core_formation/epochs"]]
    if [int(e) for e in arrays["wd0/core_formation/epochs"]] != epochs:
        raise ValueError("the release's two arms are analysed at different epochs")
    grok = int(arrays["wd1/core_formation/grok_ep"])
    modes = {arm: arrays[f"{arm}/mode_spread/present"].sum(axis=1) for arm in ("wd1", "wd0")}
    return {
        "inflation.no_wd": _ratio(arrays["wd1/core_formation/r_nec"], arrays["wd0/core_formation/r_nec"], epochs, grok),
        "inflation.no_wd_modes": _ratio(modes["wd1"], modes["wd0"], epochs, grok),
        "epoch": epochs[-1],
    }


def stored_arrays(root: Path | None = None) -> dict[str, np.ndarray] | None:
    """The stored release run's arrays (its own analysis of both arms), or None where it is not stored."""
    found = load_artifact((root or project_root()) / OFFICIAL_STORE, OFFICIAL_RUN)
    return None if found is None else found.arrays


def stored_official(root: Path | None = None) -> dict[str, object] | None:
    """:func:`official_numbers` of the stored release run to epoch 5000, or None where it is not stored."""
    arrays = stored_arrays(root)
    return None if arrays is None else official_numbers(arrays)


def trajectory_table(arrays: Mapping[str, np.ndarray], fork: int = 900) -> str:
    """The release's two arms from its grok epoch on, as a markdown table: per checkpoint, each arm's necessary
    dimension and occupied mode bins (mean over its models), and the weight-decay-off arm's dimension ÷ the
    weight-decay arm's at grokking."""
    epochs = [int(e) for e in arrays["wd1/core_formation/epochs"]]
    grok = int(arrays["wd1/core_formation/grok_ep"])
    nec = {arm: arrays[f"{arm}/core_formation/r_nec"].mean(axis=0) for arm in ("wd1", "wd0")}
    modes = {arm: arrays[f"{arm}/mode_spread/present"].sum(axis=1).mean(axis=0) for arm in ("wd1", "wd0")}
    at_grok = nec["wd1"][epochs.index(grok)]
    rows = [
        (
            f"{e}" + (" (grok)" if e == grok else " (fork)" if e == fork else ""),
            f"{nec['wd1'][i]:.1f}",
            f"{nec['wd0'][i]:.1f}",
            f"{nec['wd0'][i] / at_grok:.2f}",
            f"{modes['wd1'][i]:.1f}",
            f"{modes['wd0'][i]:.1f}",
        )
        for i, e in enumerate(epochs)
        if e >= grok and (e <= 2000 and e % 200 == 0 or e > 2000 or e in (grok, fork))
    ]
    head = (
        "epoch",
        "necessary dim, WD 1",
        "necessary dim, WD off",
        "WD off ÷ WD 1 at grokking",
        "mode bins, WD 1",
        "mode bins, WD off",
    )
    return markdown_table(head, rows)


def summary(arrays: Mapping[str, np.ndarray]) -> str:
    """One sentence: the release's weight-decay-off ratios at its last epoch against our rule's bound."""
    n = official_numbers(arrays)
    dims, modes = ", ".join(f"{v:.2f}" for v in n["inflation.no_wd"]), ", ".join(f"{v:.2f}" for v in n["inflation.no_wd_modes"])
    return (
        f"At epoch {n['epoch']} the release's arm without weight decay has a necessary dimension {dims}× its size at "
        f"grokking and {modes}× its occupied mode bins, against our rule's bound of {NOWD_FACTOR}× for both."
    )
