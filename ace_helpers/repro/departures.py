"""How a run departs from the paper's protocol, computed from its knobs.

Every chapter's ``paper`` preset holds the paper's protocol (its epochs, models, seeds, settings).  A claim record
names the run that carries it (``run``) and lists each knob on which that run differs from the paper's preset
(``departures``, :func:`departures`): an empty list means the paper's protocol.  Knobs that say where or how fast a
run computes (the device, worker processes) are not departures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ace_helpers.repro.params import Params

#: Knobs that never change what is computed, only where or how fast.
NOT_PROTOCOL = frozenset({"DEVICE", "OUTPUT_DIR", "PRESET", "WORKERS"})


def _show(value: Any, limit: int = 40) -> str:
    text = str(value).replace("'", "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def departures(cfg: Params, extra: Sequence[str] = (), *, ours: bool = True) -> list[str]:
    """``["EPOCHS = 1400 (paper: 20000)", …]``: each knob of ``cfg`` whose value is not the chapter's ``paper``
    preset's, then ``extra`` (departures that no knob shows, e.g. a model's quantisation).  A chapter without a
    ``paper`` preset gives ``extra`` only.  ``ours=False`` (for a paper claim) leaves out the ``EXTRA_*`` knobs:
    they add runs of our own beside the paper's (extra chains, extra weight decays), which no paper claim reads."""
    paper = cfg.chapter.presets.get("paper")
    out = []
    if paper is not None:
        try:
            paper = cfg.chapter.check_copy(paper)  # normalised as the run's own knobs are
        except ValueError:  # a paper preset that cannot be checked here (its models' weights are not installed)
            paper = dict(paper)
        for knob, value in cfg.knob_values().items():
            if knob not in NOT_PROTOCOL and knob in paper and value != paper[knob] and (ours or not knob.startswith("EXTRA_")):
                out.append(f"{knob} = {_show(value)} (paper: {_show(paper[knob])})")
    return out + list(extra)
