"""The code release's own numbers for chapter 2's claims: its ``modadd.py``, rerun here as released to epoch 2000.

:func:`ace_helpers.repro.official_runs.run_modadd` stores the release's own analysis (``core_formation.npz``,
``mode_spread.npz`` per arm) of its 3 models at p = 53; :func:`official_numbers` reads, for the claims that analysis
computes, the release's number in the shape of our record's ``value``.  The unit-circle shares (``modadd.snap``,
``modadd.stays_on_circle``) are read by their rules themselves (:func:`~.paper_epochs.official_shares`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ace_helpers.chapters.modadd_grokking.paper_epochs import official_arrays


def official_numbers(arrays: Mapping[str, np.ndarray]) -> dict[str, object]:
    """``modadd.grok_epoch``: the release's grok epoch (its ``grok_ep``); ``modadd.core_at_grok``: its necessary
    dimension (``r_nec``) of each model at that epoch, from the weight-decay arm's ``core_formation`` arrays."""
    epochs = [int(e) for e in arrays["wd1/core_formation/epochs"]]
    grok = int(arrays["wd1/core_formation/grok_ep"])
    at = epochs.index(grok)
    return {
        "modadd.grok_epoch": float(grok),
        "modadd.core_at_grok": [float(v) for v in arrays["wd1/core_formation/r_nec"][:, at]],
    }


def stored_official(root: Path | None = None) -> dict[str, object] | None:
    """:func:`official_numbers` of the stored release run to epoch 2000, or None where it is not stored."""
    arrays = official_arrays(root)
    return None if arrays is None else official_numbers(arrays)
