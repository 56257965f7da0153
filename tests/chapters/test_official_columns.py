"""Chapters 2 and 3's third column: the code release's mod-add runs, rerun here, read into the claim records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ace_helpers.chapters.core_inflation import official as three
from ace_helpers.chapters.modadd_grokking import official as two
from ace_helpers.repro.artifacts import load_artifact

ROOT = Path(__file__).parents[2]


def test_chapter_2_reads_the_releases_grok_epoch_and_necessary_dimension() -> None:
    numbers = two.stored_official(ROOT)
    assert numbers == {"modadd.grok_epoch": 800.0, "modadd.core_at_grok": [11.0, 15.0, 19.0]}


def _arrays(r_nec_wd: list[list[float]], r_nec_nowd: list[list[float]], present_wd: int, present_nowd: int) -> dict:
    epochs = np.array([0, 800, 2000])
    models = len(r_nec_wd)
    bins = lambda n: np.repeat((np.arange(27) < n)[None, :, None], models, 0).repeat(3, 2)  # noqa: E731
    return {"wd1/core_formation/epochs": epochs, "wd0/core_formation/epochs": epochs,
            "wd1/core_formation/grok_ep": np.array(800),
            "wd1/core_formation/r_nec": np.array(r_nec_wd), "wd0/core_formation/r_nec": np.array(r_nec_nowd),
            "wd1/mode_spread/present": bins(present_wd), "wd0/mode_spread/present": bins(present_nowd)}


def test_chapter_3_reads_the_weight_decay_off_ratios_at_the_last_epoch_over_grokking() -> None:
    numbers = three.official_numbers(_arrays([[40, 10, 60]], [[40, 10, 12]], 8, 10))
    assert numbers["inflation.no_wd"] == [1.2] and numbers["inflation.no_wd_modes"] == [1.25] and numbers["epoch"] == 2000
    bad = _arrays([[40, 10, 60]], [[40, 10, 12]], 8, 10) | {"wd0/core_formation/epochs": np.array([0, 900, 2000])}
    with pytest.raises(ValueError, match="different epochs"):
        three.official_numbers(bad)
    stored = load_artifact(ROOT / "book/artifacts/official_modadd", "official_modadd_e2000_k3")
    at_2000 = three.official_numbers(stored.arrays)  # the 3-model run to epoch 2000: in the rule's shape
    assert len(at_2000["inflation.no_wd"]) == 3 and at_2000["epoch"] == 2000


def test_the_releases_weight_decay_off_arm_to_epoch_5000_is_stored_with_its_provenance() -> None:
    """The code release rerun here unmodified to epoch 5000 (one model), its arm without weight decay forked at 900:
    its own analysis keeps that arm's necessary dimension flat while the weight-decay arm's grows."""
    import json

    manifest = json.loads((ROOT / three.OFFICIAL_STORE / f"{three.OFFICIAL_RUN}.manifest.json").read_text())
    assert manifest["params"]["commit"] == "da253a0769d3bf35048404c46d87205846262bfc"
    assert (manifest["params"]["TOTAL_EPOCHS"], manifest["params"]["K_MODELS"]) == (5000, 1)
    arrays = three.stored_arrays(ROOT)
    assert arrays is not None, "book/artifacts/official_modadd/official_modadd_e5000_k1 does not load"
    numbers = three.official_numbers(arrays)
    assert numbers["epoch"] == 5000 and numbers["inflation.no_wd"][0] < 1.5  # the release's arm does not inflate
    wd = arrays["wd1/core_formation/r_nec"][0]
    assert wd[-1] > 1.5 * wd[list(arrays["wd1/core_formation/epochs"]).index(int(arrays["wd1/core_formation/grok_ep"]))]
