"""Chapter 7's thresholds, the knobs that define its runs, and the claims measured not to reproduce (known gaps):
shared by :mod:`~ace_helpers.chapters.core_stitching.claims` and :mod:`~ace_helpers.chapters.core_stitching.paper_rows`."""

from __future__ import annotations

from ace_helpers.repro.known_gaps import KnownGaps

#: Accuracy a working stitch may lose against B's own (ours): 0.01.
TOLERANCE = 0.01
#: Agreement with B's clean predictions that counts as a working stitch (ours).
AGREE_MIN = 0.99
REGIMES = ("same", "crossed")

WHERE, DIAGNOSIS = "ours (beyond the paper)", "ours (diagnosis)"
#: The paper's implication that the stitching and merging rows bear on (§6), and its statement.
MERGING_WHERE = "§6 (implications)"
MERGING_PAPER = ("functionally equivalent models embed their cores in nearly orthogonal subspaces, which explains why naive "
                 "weight interpolation fails; aligning cores, not weights, is a principled route to model merging")
PAPER = "not tested (the paper compares the seeds' cores by CCA, Fig. 1D; it never swaps them)"
MODADD_KNOBS = ("P", "TRAIN_FRACTION", "MODADD_LR", "MODADD_SEED", "MODADD_ENERGY", "MODADD_MAX_STEPS",
                "MODADD_EXTRA_STEPS", "RIDGE", "SEED", "MODADD")
#: Measured at the book preset's own run (p = 31, seeds 1031 and 2031; the numbers are appended
#: from the run itself): the two grokked models use different key frequencies.
KNOWN_GAPS = KnownGaps({"book": {
    "modadd_core": "the two models' cores use different key frequencies, and a linear map cannot carry "
                   "cos(k·c) onto cos(k′·c) for k ≠ k′",
    "modadd_full": "the whole activations are not linear images of each other either: the models compute "
                   "with different key frequencies",
    "invariant": "the two grokked models share only some of their key frequencies (the frequency row): a few "
                 "canonical correlations are high and the rest near zero, so the mean over all the cores' coordinates "
                 "sits at or just above the level of random subspaces, and PCA and class-mean subspaces give the same "
                 "CCA as the cores",
    "merge_0_1": "naive interpolation fails (its midpoint is at chance), but the aligned-core merge fails too as α → 1: "
                 "B's core coordinates are not a linear image of A's (the core stitch fails; different key frequencies)",
}}, run_knobs=MODADD_KNOBS)
MARKOV_KNOBS = ("T", "D_MODEL", "SEQ_LEN", "ENERGY", "BATCH_SIZE", "SEED", "DATA_SEED", "TEST_DATA_SEED", "R_MAX",
                "RIDGE", "N_TRAIN", "N_TEST", "EPOCHS", "LR")
_FULL_TRANSFERS = ("composed full-rank maps of the whole activation transfer too: seed 2's activation is close to a "
                   "linear image of seed 0's, so the core is the smallest route that transfers (an r × r map per pair "
                   "instead of D × D), not the only one")
_NAIVE_HOLDS = ("naive weight interpolation between these one-layer Markov seeds degrades the accuracy but does not fail: "
                "at α = 0.5 it keeps more than half of the above-chance accuracy (the row gives the loss), while the "
                "aligned-core merge keeps all of it")
_MARKOV_MEASURED = {"only_core": _FULL_TRANSFERS} | {f"merge_{i}_{j}": _NAIVE_HOLDS for i, j in ((0, 1), (0, 2), (1, 2))}
#: Measured at the ci and book presets' own Markov runs (the numbers are appended from the run itself).
MARKOV_GAPS = KnownGaps({"ci": _MARKOV_MEASURED, "book": _MARKOV_MEASURED}, run_knobs=MARKOV_KNOBS)


def halfway(floor: float) -> float:
    """The failure line of a swap: agreement halfway between the no-swap floor and 1."""
    return (floor + 1.0) / 2.0


def _works(s: dict[str, float], base: float) -> bool:
    """A working stitch: ``s`` (acc, agree) keeps ``base`` within TOLERANCE and agrees with B at least AGREE_MIN."""
    return s["acc"] >= base - TOLERANCE and s["agree"] >= AGREE_MIN
