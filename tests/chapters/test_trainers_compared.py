"""Chapter 2's trainers compared: the per-model statistics, the two-sample test, and the stored comparison."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ace_helpers.chapters.modadd_grokking import trainers

ROOT = Path(__file__).resolve().parents[2]


def test_a_model_that_groks_at_700_with_a_clock_forming_and_a_burst():
    epochs = np.arange(0, 2100, 100)
    acc = np.where(epochs >= 700, 1.0, 0.1)
    share = np.where(epochs >= 800, 0.95, np.where(epochs == 700, 0.7, 0.2))
    nec = np.where(epochs >= 1000, 40.0, 15.0)
    energy = np.full(epochs.shape, 14.0)
    s = trainers.model_stats(epochs, acc, share, np.linspace(0, 1, epochs.size), nec, r2h=None, energy=energy)
    assert s["grok_epoch"] == 700 and s["share_at_grok"] == 0.7 and s["share_next"] == 0.95 and s["final_acc"] == 1.0
    assert s["burst"] == pytest.approx(40 / 15) and s["nec_over_energy"] == pytest.approx(40 / 14)
    assert s["r2_ols_300"] == pytest.approx(0.15) and math.isnan(s["r2h_900"])
    never = trainers.model_stats(epochs, acc * 0, share, share, nec)
    assert all(math.isnan(never[k]) for k in ("grok_epoch", "share_at_grok", "burst"))


def test_the_test_tells_separated_samples_apart_and_not_equal_ones():
    far = trainers.mann_whitney([1, 2, 3, 4, 5, 6], [10, 11, 12])
    assert far["p"] == pytest.approx(2 / 84) and far["n"] == [6, 3]  # the smallest p-value 6 against 3 can give
    assert trainers.mann_whitney([1, 3, 5], [2, 4, 6])["p"] > 0.5
    assert trainers.mann_whitney([1, float("nan")], [2, 3]) is None  # one value left on a side: no test


def test_the_trainers_are_named():
    with pytest.raises(ValueError, match="allowed: \\['ensemble', 'loop'\\]"):
        trainers.run_config("adam")


def test_the_stored_comparison_is_what_the_stored_runs_give():
    """The committed comparison file is recomputed from the stored runs it was made from (nothing is trained)."""
    path = ROOT / trainers.RESULTS
    stored = json.loads(path.read_text())
    stats = trainers.gather()
    assert stored["models"] == {t: len(v) for t, v in stats.items()} and stored["test"] == trainers.TEST
    fresh = json.loads(json.dumps(trainers.compare(stats), allow_nan=False))
    assert stored["statistics"] == fresh
    assert trainers.table(stored).count("\n") == len(trainers.STATISTICS) + 1
