"""Chapter 2's known gaps: the claims measured not to reproduce with a preset's exact run, and their
measured causes (each one tested by a diagnosis row of :mod:`ace_helpers.chapters.modadd_grokking.claims`)."""

from __future__ import annotations

from ace_helpers.chapters.modadd import config
from ace_helpers.repro.known_gaps import KnownGaps, seed_sensitive
from ace_helpers.repro.params import Params

#: The gaps of the book run forked at 1100 (claims on its weight-decay arm).
_BOOK_GAPS: dict[str, str] = {
    "at_grok_unit_circle": "the grok checkpoint is the first at which every model has ≥ 0.99 test accuracy; "
    "these models cross it together at epoch 800, so it catches their clocks still forming: one checkpoint "
    "later both the share and the in-sample OLS R² are higher in every model (timing row)",
    "post_grok_unit_circle": "training length: from epoch 1100 the core inflates (its necessary dim jumps to "
    "several times the 0.99-energy rank: the necessity row) and the share dips; the run stops inside the dip. "
    "Neither the fit nor a wider band lifts it, and the stored 20 000-epoch run of this protocol is back above "
    "0.8 late (diagnosis rows)",
    "post_grok_unit_circle_ridge": "the same dip; ridge 1 on a 4-class holdout also pulls weak eigenvalues of "
    "the inflating core off the circle (compare the OLS row)",
    "post_grok_r2_holdout": "R_h² falls as the core inflates after grokking (diagnosis row): the inflated "
    "core's operator, fitted on 49 class pairs, predicts the 4 held-out ones poorly",
    "necessary_within_factor": "inflation is redundancy (Fig. 2B): where the necessary dim outgrows twice "
    "the 0.99-energy rank, keeping the energy core alone keeps the accuracy (diagnosis row)",
}

#: The gaps of the paper-preset runs on the ensemble trainer in bf16 (forked at 1100, and at 900 as in the paper):
#: each measured on its own run, with the same diagnosis rows holding in both.
_ENSEMBLE_GAPS: dict[str, str] = {
    "at_grok_unit_circle": "the grok checkpoint is the first at which every model has ≥ 0.99 test accuracy; "
    "these models cross it together, so it catches their clocks still forming: one checkpoint later both the "
    "share and the in-sample OLS R² are higher in every model (timing row)",
    "post_grok_unit_circle": "a dip after grokking while the core inflates, which recovers late in the run "
    "(training-length row); the ridge fit does not lift it (fit row), but at some of the low checkpoints the "
    "eigenvalues lie just outside the band (threshold row)",
    "post_grok_unit_circle_ridge": "the same dip, and late in the run ridge 1 on a 4-class holdout keeps "
    "eigenvalues of the inflated core off the circle that the OLS fit puts on it (compare the OLS row)",
    "diagnosis_threshold": "at some of the low checkpoints a band 3× as wide counts ≥ 0.8 of the eigenvalues: "
    "there they sit just outside sin(π/p), so in this run the band's width is part of the cause",
    "post_grok_r2_holdout": "R_h² falls as the core inflates (diagnosis row): the inflated core's operator, "
    "fitted on 49 class pairs, predicts the 4 held-out ones poorly while its in-sample OLS R² stays high",
    "necessary_within_factor": "inflation is redundancy (Fig. 2B): where the necessary dim outgrows twice "
    "the 0.99-energy rank, keeping the energy core alone keeps the accuracy (diagnosis row)",
    "paper_epoch_circle": "at epoch 2000 the clock is inside the dip that follows grokking while the core inflates "
    "(the every-checkpoint row and its diagnoses); at epoch 20 000 every model is back on the circle",
}

#: Claims measured *not* to reproduce with a preset's exact run (seeds and N_MODELS included),
#: and their measured cause; the checkpoints and values are appended when the claim is checked.
#: The causes are tested by the diagnosis rows (``where = "ours (diagnosis)"``).  Evidence: the
#: runs stored in ``book/artifacts/modadd_grokking``: the book run (both models and arms as one
#: ensemble, fp32), the paper run trained the same way in bf16 (all 3 models to 20 000 epochs),
#: and the first stored runs (each model alone, fp32: the book run and the paper run's 2 of 3
#: models, the book run continued to 20 000 epochs), each measured on its own.
KNOWN_GAPS = KnownGaps(
    gaps={
        "ci": {
            "at_grok_unit_circle": seed_sensitive(
                4,
                5,
                "the OLS share at the grok checkpoint 0.769, 0.909, 0.909, "
                "0.833, 1.0 against 0.8; below it, the clock is still forming: "
                "timing row",
            ),
            "post_grok_unit_circle": seed_sensitive(
                4, 5, "the lowest post-grokking OLS share 0.769, 0.909, 0.909, 0.833, 0.8 against 0.8: the grok checkpoint's"
            ),
            "post_grok_unit_circle_ridge": seed_sensitive(
                4, 5, "the lowest post-grokking ridge share 0.769 at the preset's seed, ≥ 0.8 at the four others"
            ),
            "post_grok_r2_holdout": "CPU-sensitive at this preset, so its test line does not assert it: under the "
            "reproducible kernels it holds on AMD CPUs (every checkpoint at all 5 seeds of the seed check; lowest R_h² "
            "0.689 at the preset's seed), while on an Intel Xeon with AMX, whose matrix products differ in the last "
            "bits, 5 of 6 checkpoints hold (lowest R_h² 0.428, model 0, epoch 400)",
        },
        # the run trained on an Intel Xeon (its fp32 products differ in the last bits from the AMD CPU's
        # that trained the stored run forked at 1100, so its weight-decay arm is a sibling of that one)
        "book": _BOOK_GAPS
        | {
            "post_grok_unit_circle": "training length: after grokking the core bursts (its necessary dim jumps to "
            "several times the 0.99-energy rank: the necessity row) and the share dips; the run stops inside the dip. "
            "The ridge fit does not lift it (fit row), but at some of the low checkpoints the eigenvalues lie just "
            "outside the band (threshold row); the stored 20 000-epoch run of this protocol is back above 0.8 late",
            "diagnosis_threshold": "at some of the low checkpoints a band 3× as wide counts ≥ 0.8 of the eigenvalues: "
            "there they sit just outside sin(π/p), so in this run the band's width is part of the cause",
        },
        config.BOOK_1100: _BOOK_GAPS,
        # the first stored book run: each model alone, fp32
        config.BOOK_LOOP: {
            "post_grok_unit_circle": "training length: the book run stops inside a dip that follows grokking while the "
            "core grows past its 0.99-energy rank; neither the fit nor a wider band lifts it, and the stored "
            "20 000-epoch run with these seeds is back above 0.8 late (diagnosis rows)",
            "post_grok_unit_circle_ridge": "as the OLS row (the same dip at the end of the book run); ridge 1 on a "
            "4-class holdout also pulls weak eigenvalues off the circle",
            "post_grok_r2_holdout": "R_h² falls as the core grows after grokking (diagnosis row), and the late grokker "
            "(model 1) is still sharpening its clock at the grok checkpoint",
        },
        # the first stored paper run (2 of its 3 models): each model alone, fp32
        config.PAPER_LOOP: {
            "post_grok_unit_circle": "a dip after grokking while the core inflates, which recovers late in the run; "
            "neither the fit nor a wider band lifts it (diagnosis rows)",
            "post_grok_unit_circle_ridge": "the same dip, and late in the run ridge 1 on a 4-class holdout keeps "
            "eigenvalues of the inflated core off the circle that the OLS fit puts on it (compare the OLS row)",
            "post_grok_r2_holdout": "R_h² falls as the core inflates (diagnosis row): the inflated core's operator, "
            "fitted on 49 class pairs, predicts the 4 held-out ones poorly while its in-sample OLS R² stays high",
            "necessary_within_factor": "inflation is redundancy (Fig. 2B): where the necessary dim outgrows twice "
            "the 0.99-energy rank, keeping the energy core alone keeps the accuracy (diagnosis row)",
        },
        # the same protocol on the ensemble trainer in bf16 (all 3 models, both arms), forked at 1100:
        # measured on its own
        config.PAPER_ENSEMBLE_1100: _ENSEMBLE_GAPS,
        # the same protocol forked at 900 as in the paper (all 3 models, both arms, 20 000 epochs): measured on its
        # own, with the same diagnoses holding
        config.PAPER_ENSEMBLE: _ENSEMBLE_GAPS,
    },
    run_knobs=(*config.RUN_KNOBS, "N_MODELS"),
    runs={**config.FORK_1100_RUNS, config.PAPER_ENSEMBLE: config.PAPER_ENSEMBLE_RUN},
)


def measured_gap(cfg: Params, key: str, measured: str) -> str | None:
    """The known gap ``key`` at this preset's exact run (:data:`KNOWN_GAPS`), with the measured values
    appended; else None."""
    why = KNOWN_GAPS.reason(cfg, key)
    return None if why is None else f"{why}; measured: {measured}"
