"""Chapter 3's knobs: the modular-addition run's table (:data:`ace_helpers.chapters.modadd.config.KNOB_TABLE`), shared
with chapter 2 so that both chapters read one training run, restated with this chapter's comments.  The notebook's
parameters cell derives from it (:data:`CELL`; a test holds the notebook to it)."""

from __future__ import annotations

from ace_helpers.chapters.modadd.config import KNOB_TABLE, PRESET_DOC
from ace_helpers.repro.knobs import Knob, parameters_cell, restate

NOTEBOOK = "03_core_inflation"

#: Chapter 3's comments where they differ from chapter 2's.
_DOCS = {
    "EPOCHS": "training epochs of both arms (paper: 20000)",
    "FORK_EPOCH": "epoch at which the weight-decay-off arm forks, fresh optimizer (paper: 900)",
    "RIDGE": "ridge of the variant shift-operator fit (code release clocks: 1.0)",
    "HOLDOUT_FRACTION": "fraction of classes held out (block at the cycle's edge) for R_h^2 (paper: 0.075)",
    "CLOCK_EPOCHS": "unused here (Chapter 2's clock panels); kept so both chapters share one run",
}

KNOBS: tuple[Knob, ...] = tuple(
    restate(k, _DOCS[k.name], ci=k.ci, book=k.book, **({} if k.paper_is_book else {"paper": k.paper})) if k.name in _DOCS else k
    for k in KNOB_TABLE
)
#: The lines of the notebook's parameters cell.
CELL = parameters_cell(KNOBS, NOTEBOOK, PRESET_DOC)
