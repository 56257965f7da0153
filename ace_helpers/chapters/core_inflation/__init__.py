"""Chapter 3 (notebooks/03_core_inflation): the modular-addition core inflates under weight decay.

The chapter protocol: :data:`PARAMS` (the presets and check of
:mod:`ace_helpers.chapters.modadd.config`, shared with chapter 2, so both chapters load one
training run), :func:`run` (that run, stored or trained) and :func:`build_claims` (in
:mod:`ace_helpers.chapters.core_inflation.claims`, with the :data:`KNOWN_GAPS` measured at the book and paper presets, and
:func:`long_run_claims` for the stored long run).  Also the run behind the dimension-matched reference for
Fig. 2D (:func:`reference_source`; the reference itself is :mod:`ace_helpers.chapters.modadd.reference`,
re-exported here for the notebook), its ``results.json``
(:func:`results`), and :func:`stored_redundancy_gap`, the book run's redundancy for chapter 4.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ace_helpers.chapters.core_inflation import official  # noqa: F401 - the code release's own arm, for the notebook
from ace_helpers.chapters.core_inflation.claims import (  # noqa: F401 - the chapter's claims
    KNOWN_GAPS,
    MIN_GROWTH,
    build_claims,
    long_run_claims,
    sufficient_dims,
)
from ace_helpers.chapters.core_inflation.fork import (  # noqa: F401 - the fork at 900, spectra, headlines
    assign_headlines,
    effective_harmonics,
    fork_table,
    has_spectra,
    headline_ids,
)
from ace_helpers.chapters.core_inflation.reference_rules import reference_claims  # noqa: F401 - the chapter's face
from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import (  # noqa: F401 - the chapter's analysis, for the notebook
    ArmResult,
    GrokRun,
    arm_results,
    clock_panels,
    dimension_table,
    grok_epoch,
    per_model_at,
    run_entries,
)
from ace_helpers.chapters.modadd.grokked import hook_site  # noqa: F401 - ACE in plain sight, for the notebook
from ace_helpers.chapters.modadd.long_run import (  # noqa: F401
    NO_LONG_RUN,
    continues,
    describe_long_run,
    fork_pair,
    how_trained,
    load_long_run,
    run_departures,
    same_prefix,
    stored_long_run,
    stored_redundancy_gap,
)
from ace_helpers.chapters.modadd.reference import (  # noqa: F401 - the reference of Fig. 2D, for the notebook
    REFERENCE_DRAWS,
    REFERENCE_EPOCHS,
    REFERENCE_SEED,
    REFERENCE_TRAINING,
    RESTATES,
    mode_cap,
    ols_modes,
    random_means_modes,
    random_subspace_modes,
    reference_comparison,
    reference_dir,
    reference_rows,
    reference_run_cfg,
    reference_table,
    store_reference,
    stored_reference,
    train_reference,
)
from ace_helpers.chapters.modadd.run import load_run as run  # noqa: F401 - the chapter protocol's run(cfg)
from ace_helpers.repro import thread_pools
from ace_helpers.repro.params import ChapterParams, Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.tables import markdown_table

PARAMS = ChapterParams("03_core_inflation", config.PRESETS, config.check)


def mode_caps(dims: np.ndarray, p: int) -> np.ndarray:
    """:func:`mode_cap` of every entry of an integer array of core dims (any shape, e.g. (M, C))."""
    return np.vectorize(lambda d: mode_cap(int(d), p), otypes=[int])(np.asarray(dims))


def residue_rows(arm: ArmResult, p: int, epochs: Sequence[int]) -> list[dict[str, Any]]:
    """Per model and epoch: energy rank, necessary dim and the accuracy left after removing the
    energy-rank directions, in units of the 2/p floor (read from the stored ``remove_curve``)."""
    rows = []
    for m in range(arm["energy_rank"].shape[0]):
        for e in epochs:
            i = arm.index(int(e))
            r = int(arm["energy_rank"][m, i])
            rows.append(
                {
                    "model": m,
                    "epoch": int(e),
                    "energy_rank": r,
                    "core_dim": int(arm["core_dim"][m, i]),
                    "residue_in_floors": round(float(arm["remove_curve"][m, i, r]) * p / 2, 2),
                }
            )
    return rows


def residue_table(arm: ArmResult, p: int, epochs: Sequence[int], *, most: int = 6) -> str:
    """Markdown table of :func:`residue_rows` at up to ``most`` of ``epochs``, evenly spread (first and last kept)."""
    epochs = sorted({int(e) for e in epochs})
    pick = [epochs[i] for i in np.unique(np.linspace(0, len(epochs) - 1, min(most, len(epochs))).round().astype(int))]
    header = ("model", "epoch", "energy rank", "necessary dim", "accuracy left at the energy rank (× 2/p)")
    return markdown_table(
        header,
        [
            (f"{r['model']}", f"{r['epoch']}", f"{r['energy_rank']}", f"{r['core_dim']}", f"{r['residue_in_floors']}")
            for r in residue_rows(arm, p, pick)
        ],
    )


def compare_with_long_run(cfg: Params, grok_run: GrokRun, long_cfg: Params, lrun: GrokRun) -> tuple[bool, list[int], float]:
    """Whether the long run reproduces this chapter's run where they overlap: ``(same, shared epochs, largest difference)``.

    ``(False, [], nan)`` when the long run is not this run continued (other run knobs).
    """
    return same_prefix(grok_run, lrun) if continues(long_cfg, cfg) else (False, [], float("nan"))


# --------------------------------------------------------------------------------------------
# the dimension-matched reference of Fig. 2D (ace_helpers.chapters.modadd.reference): its stored run


def reference_source(cfg: Params, grok_run: GrokRun) -> tuple[Params, GrokRun]:
    """The run whose model 0 the stored reference retrains, with that run: ``(cfg, run)`` itself when
    it is the paper preset trained as :data:`REFERENCE_TRAINING`, else that paper run when stored (the
    reference was retrained from it), or ``(cfg, run)`` when that is not stored.  Trains nothing."""
    if cfg["PRESET"] == "paper" and all(cfg[k] == v for k, v in REFERENCE_TRAINING.items()):
        return cfg, grok_run
    paper_cfg = PARAMS.resolve(PRESET="paper", **REFERENCE_TRAINING)
    found = load_long_run(paper_cfg)
    return (paper_cfg, found[0]) if found is not None else (cfg, grok_run)


def results(
    cfg: Params,
    grok_run: GrokRun,
    claims: Claims,
    long: tuple[Params, GrokRun, Mapping[str, int]] | None,
    long_claims: Claims | None,
    wall_s: float,
    reference: Sequence[Mapping[str, Any]] | None = None,
    fork: tuple[Params, GrokRun, Mapping[str, int]] | None = None,
    fork_claims: Claims | None = None,
) -> dict[str, Any]:
    """The chapter's ``results.json`` entries (keys listed in the notebook's Results section);
    ``long_claims``: the claims on the stored long run ``long``, when there is one; ``fork_claims``:
    on the stored paper-preset run forked at 900, ``fork``."""
    wd, nowd = grok_run.wd, grok_run.nowd
    out = (
        arm_results(wd)
        | arm_results(nowd, prefix="nowd_")
        | {
            "fork_epoch": cfg["FORK_EPOCH"],
            "not_tested": [r.claim for r in claims.not_tested],
        }
        | run_entries(grok_run, claims.counts(), wall_s)
    )
    if long is not None:
        long_cfg, lrun, through = long
        out["long_run"] = (
            {
                "preset": "paper",
                "trainer": long_cfg["TRAINER"],
                "precision": long_cfg["PRECISION"],
                "n_models": lrun.n_models,
                "through_epoch": through,
                "numbers": long_claims.numbers,
                "not_tested": [r.claim for r in long_claims.not_tested],
                "claims_failed": long_claims.counts()["claims_failed"],
            }
            | arm_results(lrun.wd)
            | arm_results(lrun.nowd, prefix="nowd_")
        )
    out["fork_run"] = None
    if fork is not None and fork_claims is not None:
        f_cfg, frun, f_through = fork
        out["fork_run"] = (
            {
                "fork_epoch": f_cfg["FORK_EPOCH"],
                "trainer": f_cfg["TRAINER"],
                "precision": f_cfg["PRECISION"],
                "n_models": frun.n_models,
                "through_epoch": dict(f_through),
                "numbers": fork_claims.numbers,
            }
            | arm_results(frun.wd)
            | arm_results(frun.nowd, prefix="nowd_")
        )
    out["mode_reference"] = (
        None
        if reference is None
        else [
            {
                "epoch": r["epoch"],
                "dim": r["dim"],
                "cap": r["cap"],
                "ace": r["ace"],
                "random": np.asarray(r["random"]).tolist(),
                "gaussian": np.asarray(r["gaussian"]).tolist(),
            }
            for r in reference
        ]
    )
    return out


def finished_at_paper_fork(grok_run: tuple[Params, GrokRun, Mapping[str, int]]) -> bool:
    """Whether a stored ``(cfg, run, through)`` is the paper preset's run forked at the paper's epoch (900) and finished."""
    run_cfg, _, through = grok_run
    return run_cfg["FORK_EPOCH"] == config.PRESETS["paper"]["FORK_EPOCH"] and min(through.values()) >= run_cfg["EPOCHS"]


def fork_shown(
    long: tuple[Params, GrokRun, Mapping[str, int]] | None,
    pair: tuple[tuple[Params, GrokRun, Mapping[str, int]], tuple[Params, GrokRun, Mapping[str, int]]] | None,
) -> tuple[Params, GrokRun, Mapping[str, int]] | None:
    """The run the fork section shows from ``pair`` (:func:`fork_pair`, or None): the run forked at 1100, as a named
    variant, once the long run ``long`` is the finished run forked at 900 (:func:`finished_at_paper_fork`); else the
    run forked at 900."""
    if pair is None:
        return None
    return pair[1] if long is not None and finished_at_paper_fork(long) else pair[0]


def chapter_records(
    cfg: Params,
    claims: Claims,
    long: tuple[Params, GrokRun, Mapping[str, int]] | None = None,
    long_claims: Claims | None = None,
    fork: tuple[Params, GrokRun, Mapping[str, int]] | None = None,
    fork_claims: Claims | None = None,
    reference: tuple[Claims, Sequence[int]] | None = None,
) -> list[dict[str, Any]]:
    """The chapter's claim records, one section per run, with each paper claim's headline on the run
    that tests it (:func:`~ace_helpers.chapters.core_inflation.fork.headline_ids`): the stored long
    run ``long`` for the weight-decay claims, the paper-preset run forked at 900 ``fork`` for the
    WD-off and harmonics claims, this run for what no stored run carries.  ``reference``: the
    dimension-matched reference's claims and its epochs (our own rows only)."""
    long_at_900 = long is not None and finished_at_paper_fork(long)
    own = headline_ids({"fork_900": fork is not None or long_at_900, "long": long is not None})
    sections = [(claims.records(f"{cfg['PRESET']} preset", departures=run_departures(cfg)), own["own"])]
    if long is not None and long_claims is not None:
        long_cfg, _, through = long
        carried = own["long"] + (own["fork_900"] if long_at_900 else ())  # the finished run forked at 900 carries both
        sections.append(
            (
                long_claims.records(
                    f"stored paper-preset run, through epoch {through['wd']}",
                    how_trained(long_cfg),
                    departures=run_departures(long_cfg),
                ),
                carried,
            )
        )
    if fork is not None and fork_claims is not None:
        f_cfg, _, f_through = fork
        carried = () if long_at_900 else own["fork_900"]  # beside a finished run forked at 900: evidence only
        sections.append(
            (
                fork_claims.records(
                    f"stored paper-preset run forked at {f_cfg['FORK_EPOCH']}, through epoch {f_through['wd']}",
                    how_trained(f_cfg),
                    departures=run_departures(f_cfg),
                ),
                carried,
            )
        )
    if reference is not None:
        ref_claims, ref_epochs = reference
        sections.append(
            (
                ref_claims.records(
                    f"dimension-matched reference: model 0 retrained to epochs {list(ref_epochs)}",
                    departures=["model 0 only, retrained to a few epochs (ours)"],
                ),
                (),
            )
        )
    return assign_headlines(sections)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m ace_helpers.chapters.core_inflation``: retrain the paper run's model 0 (WD arm) to
    :data:`REFERENCE_EPOCHS` and store the reference (tens of minutes on a CPU; resumable)."""
    argparse.ArgumentParser(description=main.__doc__).parse_args(argv)
    thread_pools.set_threads()
    print(f"stored {store_reference(PARAMS.resolve(PRESET='paper', **REFERENCE_TRAINING))}")
