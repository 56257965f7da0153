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

from ace_helpers.repro.artifacts import load_artifact, project_root

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


def stored_official(root: Path | None = None) -> dict[str, object] | None:
    """:func:`official_numbers` of the stored release run to epoch 5000, or None where it is not stored."""
    found = load_artifact((root or project_root()) / OFFICIAL_STORE, OFFICIAL_RUN)
    return None if found is None else official_numbers(found.arrays)
