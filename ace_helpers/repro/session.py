"""A chapter run's start and end, one call each in every notebook.

:func:`start` is the notebook's second cell: it resolves and validates every knob (a bad value stops
here, before any compute), sets the threads, removes the previous run's results, prints what runs
(knobs, versions, kernel setting, precision, the command that runs it again and, where the chapter
gives one, its cost estimate) and sets the figure style.  :func:`finish` is its last
computing cell: it glues the verdict summary shown at the top of the page and writes ``results.json``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import torch

from ace_helpers.llm.precision import describe_dtype
from ace_helpers.method.checks import check_int
from ace_helpers.method.devices import describe_device, resolve_device
from ace_helpers.repro.artifacts import clear_results, display_path, write_results
from ace_helpers.repro.departures import departures
from ace_helpers.repro.kernels import describe as describe_kernels
from ace_helpers.repro.machine import versions
from ace_helpers.repro.params import DEVICE_KNOB, Params
from ace_helpers.repro.scorecard import check_records, verdict_summary
from ace_helpers.repro.style import set_style
from ace_helpers.repro.thread_pools import set_threads
from ace_helpers.toys.precision import precision_line


def begin(cfg: Params) -> None:
    """A chapter's validation-cell side effects: set torch threads, remove the previous run's
    ``OUTPUT_DIR/results.json`` (so an interrupted run never leaves an older result looking like
    its own), print the knobs in force, the versions, whether the reproducible kernels are in force
    (:func:`ace_helpers.repro.kernels.describe`) and, in a training chapter, which kernels its ``PRECISION`` runs on this CPU
    and which device its ``DEVICE`` names (:func:`ace_helpers.method.devices.describe_device`)."""
    set_threads()
    shown = display_path(cfg["OUTPUT_DIR"])
    if clear_results(cfg["OUTPUT_DIR"]):
        print(f"removed the previous run's {shown}/results.json (this run writes a new one at its end)")

    def short(value: Any) -> Any:
        text = repr(value)
        return value if len(text) <= 80 else text[:77] + "..."

    print({k: (shown if k == "OUTPUT_DIR" else short(v)) for k, v in cfg.items()})
    print(versions())
    print(describe_kernels())
    if "PRECISION" in cfg:
        device = resolve_device(cfg[DEVICE_KNOB]) if DEVICE_KNOB in cfg else None
        print(precision_line(cfg["PRECISION"], device))
    if DEVICE_KNOB in cfg:
        print(describe_device(cfg[DEVICE_KNOB]))
    if "DTYPE" in cfg:
        print(f"DTYPE={cfg['DTYPE']!r}: {describe_dtype(cfg['DTYPE'], cfg.get(DEVICE_KNOB, 'cpu'))}")
    print(f"this run again, from the repository root: {cfg.command()}")


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch global RNGs (the library itself uses explicit generators)."""
    seed = check_int("SEED", seed, low=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def start(chapter: ModuleType, namespace: Mapping[str, Any]) -> Params:
    """A notebook's prologue: ``chapter.PARAMS`` resolved from the notebook's ``namespace`` (its
    ``globals()``: the parameters cell), then :func:`begin` and the book's figure style.  Returns what runs."""
    cfg = chapter.PARAMS.resolve(namespace)
    begin(cfg)
    estimate = getattr(chapter, "cost_estimate", None)  # a chapter whose cost depends on its knobs says it first
    if estimate is not None:
        print(estimate(cfg))
    set_style()
    return cfg


def with_departures(cfg: Params, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with ``run`` and ``departures`` on each: a record that lists none is of this notebook's own run
    (``"<PRESET> preset"``), whose departures from the paper's protocol are ``cfg``'s
    (:func:`~ace_helpers.repro.departures.departures`); a record of another run that lists none gets ``None``
    (shown as "not listed"), never this run's."""
    own, out = f"{cfg.PRESET} preset", []
    for rec in records:
        rec = dict(rec)
        rec.setdefault("run", rec.get("section", own))
        if "departures" not in rec:
            rec["departures"] = departures(cfg, ours=rec.get("kind") != "paper") if rec["run"] == own else None
        out.append(rec)
    return out


def finish(cfg: Params, results: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
    """A notebook's epilogue: check the claim ``records`` (:func:`~ace_helpers.repro.scorecard.check_records`),
    glue their verdict summary (shown at the top of the page as ``{glue:md}`verdicts```) and write ``OUTPUT_DIR/results.json`` (:func:`write_results`); prints its
    path (and returns nothing, so that the notebook's last cell shows only that line)."""
    from IPython.display import Markdown  # load time: notebook-only libraries, imported when a notebook ends
    from myst_nb import glue  # load time: notebook-only libraries, imported when a notebook ends

    records = with_departures(cfg, records)
    check_records(list(records))  # ids, kinds and one headline per claim and run, before anything is written
    glue("verdicts", Markdown(verdict_summary(list(records))), display=False)
    path = write_results(cfg.OUTPUT_DIR, results, cfg, claims=list(records))
    print(f"wrote {path}")
