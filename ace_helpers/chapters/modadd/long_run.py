"""The long run (the paper preset: hours on a CPU): store and load the part an unfinished run has reached.

``python -m ace_helpers.chapters.modadd --preset paper`` trains it in the background (re-run to
resume); ``--store-partial`` stores what it has reached next to the book's artifacts, for the
chapters to show (:func:`stored_long_run`).  Each training segment is seeded by its position
alone, so the stored part holds exactly the numbers the finished run will have at those epochs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ARMS, GrokRun, grok_epoch, grok_run
from ace_helpers.chapters.modadd.checkpoints import row_from_plain, stack_rows
from ace_helpers.chapters.modadd.ensemble_run import ensemble_snapshot_key, ensemble_snapshot_name, snapshot_epochs
from ace_helpers.chapters.modadd.keys import artifact_dir, model_key, run_hash, snapshot_key, snapshot_name
from ace_helpers.repro.artifacts import load_artifact, params_match, save_artifact
from ace_helpers.repro.departures import departures
from ace_helpers.repro.params import Params

#: Printed by the chapters when no long run is stored.
NO_LONG_RUN = (
    "no stored long run to show (at PRESET = 'paper' the run above is the long run). To produce one: "
    "`python -m ace_helpers.chapters.modadd --preset paper` (resumable; hours), or with `--trainer loop`, then the "
    "same with `--store-partial` to store what an unfinished run has reached"
)


def _partial_name(cfg: Mapping[str, Any], model_index: int) -> str:
    return f"partial_{run_hash(cfg)}_m{model_index}"


def _partial_key(cfg: Mapping[str, Any], model_index: int, through: Mapping[str, int]) -> dict[str, Any]:
    return model_key(cfg, model_index) | {"through_epoch": dict(through)}


def _arm_arrays(arm: str, rows: Sequence[tuple[int, Any]], p: int) -> dict[str, np.ndarray]:
    """One arm's ``(epoch, plain row)`` checkpoints as the ``<arm>/<field>`` arrays of a run artifact."""
    stacked = stack_rows([e for e, _ in rows], [row_from_plain(r) for _, r in rows], p)
    return {f"{arm}/{k}": v for k, v in stacked.items()}


def _save_partial(
    cfg: Mapping[str, Any], directory: Path, m: int, arrays: dict[str, np.ndarray], through: dict[str, int], wall_s: float
) -> None:
    """Write model ``m``'s ``partial_<hash>_m<i>`` artifact (see :func:`store_partial`)."""
    save_artifact(
        directory,
        _partial_name(cfg, m),
        params=_partial_key(cfg, m, through),
        arrays=arrays,
        data={"model_index": m, "through_epoch": through},
        wall_s=wall_s,
    )


def store_partial(cfg: Mapping[str, Any], snapshot_dir: str | Path, *, directory: str | Path | None = None) -> dict[str, int]:
    """Store the analyses an unfinished run has reached, from its resume snapshots.

    For every model of ``cfg["N_MODELS"]`` both arms' snapshots (see
    :func:`ace_helpers.chapters.modadd.run.train_one_model`) are read; each arm is cut at the
    smallest epoch that arm has reached over the models, so every stored model covers the same
    checkpoints.  The rows are exactly those the finished run will have at these epochs.

    Writes ``partial_<hash>_m<i>`` artifacts (params: the run knobs, the model index and
    ``through_epoch``) to ``directory`` (default :func:`~ace_helpers.chapters.modadd.keys.artifact_dir`),
    replacing older ones.

    Returns:
        ``through_epoch``: the last epoch stored per arm, ``{"wd": ..., "nowd": ...}``.

    Raises:
        FileNotFoundError: a model lacks a snapshot of either arm (it has not passed FORK_EPOCH).
    """
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    p = cfg["P"]
    per_model = []
    for m in range(cfg["N_MODELS"]):
        snaps = [load_artifact(snapshot_dir, f"{snapshot_name(cfg, m)}_{arm}", snapshot_key(cfg, m)) for arm in ARMS]
        if any(s is None for s in snaps):
            raise FileNotFoundError(
                f"model {m} has no snapshot of both arms in {snapshot_dir} (arm 'nowd' starts at FORK_EPOCH = "
                f"{cfg['FORK_EPOCH']}): run `python -m ace_helpers.chapters.modadd --preset {cfg['PRESET']}` first"
            )
        per_model.append(snaps)
    through = {arm: min(int(snaps[a].data["epoch"]) for snaps in per_model) for a, arm in enumerate(ARMS)}
    for m, snaps in enumerate(per_model):
        arrays: dict[str, np.ndarray] = {}
        for arm, snap in zip(ARMS, snaps):
            keep = [(e, r) for e, r in zip(snap.data["epochs"], snap.data["rows"]) if e <= through[arm]]
            arrays |= _arm_arrays(arm, keep, p)
        wall = sum(float(s.data.get("wall_s", 0.0)) for s in snaps)
        _save_partial(cfg, directory, m, arrays, through, wall)
    return through


def store_partial_ensemble(
    cfg: Mapping[str, Any], snapshot_dir: str | Path, *, directory: str | Path | None = None
) -> dict[str, int]:
    """:func:`store_partial` for a run of the ensemble trainer: the analyses its newest intact
    snapshot index holds (every model and arm trains in step, so both arms reach the same epoch).

    Raises:
        FileNotFoundError: no snapshot of this run in ``snapshot_dir``, or it has not passed FORK_EPOCH.
    """
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    models = list(range(cfg["N_MODELS"]))
    stem, key = ensemble_snapshot_name(cfg, models), ensemble_snapshot_key(cfg, models)
    index = None
    for epoch in snapshot_epochs(Path(snapshot_dir), stem):
        index = load_artifact(snapshot_dir, f"{stem}_e{epoch}", dict(key) | {"epoch": epoch})
        if index is not None:
            break
    if index is None or int(index.data["epoch"]) < cfg["FORK_EPOCH"]:
        raise FileNotFoundError(
            f"no snapshot of this ensemble run past FORK_EPOCH = {cfg['FORK_EPOCH']} in {snapshot_dir}: run "
            f"`python -m ace_helpers.chapters.modadd --preset {cfg['PRESET']} --trainer ensemble` first"
        )
    reached = int(index.data["epoch"])
    through = {arm: reached for arm in ARMS}
    wall = float(index.data.get("wall_s", 0.0)) / len(models)  # the ensemble's wall time, shared by its models
    for m in models:
        arrays: dict[str, np.ndarray] = {}
        for a, arm in enumerate(ARMS):
            keep = sorted((int(e["epoch"]), e["row"]) for e in index.data["rows"] if int(e["model"]) == m and int(e["arm"]) == a)
            arrays |= _arm_arrays(arm, keep, cfg["P"])
        _save_partial(cfg, directory, m, arrays, through, wall)
    return through


def load_partial(cfg: Mapping[str, Any], *, directory: str | Path | None = None) -> tuple[GrokRun, dict[str, int]] | None:
    """The stored part of an unfinished run (see :func:`store_partial`), or ``None``.

    Loads the ``partial_<hash>_m<i>`` artifacts of as many models as are stored (up to
    ``cfg["N_MODELS"]``, from model 0 on); they must match ``cfg``'s run knobs.

    Returns:
        ``(run, through_epoch)``: ``run.n_models`` is the number of models found, and each arm's
        checkpoints stop at ``through_epoch[arm]``.
    """
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    found: list[Any] = []
    through: dict[str, int] | None = None
    for m in range(cfg["N_MODELS"]):
        art = load_artifact(directory, _partial_name(cfg, m))
        if art is None:
            break
        reached = {arm: int(e) for arm, e in art.data["through_epoch"].items()}
        if not params_match(art, _partial_key(cfg, m, reached)) or (through is not None and reached != through):
            break
        found.append(art)
        through = reached
    if not found or through is None:
        return None
    return grok_run(found, directory), through


def load_long_run(cfg: Mapping[str, Any], *, directory: str | Path | None = None) -> tuple[GrokRun, dict[str, int]] | None:
    """A stored run without training: its finished models if any, else its stored part.

    Finished models are the ``run_<hash>_m<i>`` artifacts of
    :func:`~ace_helpers.chapters.modadd.run.load_or_train`, taken from model 0 on (up to
    ``cfg["N_MODELS"]``).  The stored part of an unfinished run (:func:`store_partial`) is used
    only when no model has finished.

    Returns ``(run, through_epoch)`` — the last stored epoch per arm, ``{"wd": ..., "nowd": ...}``:
    EPOCHS for finished models — or ``None`` if nothing is stored.
    """
    directory = Path(directory) if directory is not None else artifact_dir(cfg)
    tag = run_hash(cfg)
    found = []
    for m in range(cfg["N_MODELS"]):
        art = load_artifact(directory, f"run_{tag}_m{m}", model_key(cfg, m))
        if art is None:
            break
        found.append(art)
    if found:
        return grok_run(found, directory), {arm: int(cfg["EPOCHS"]) for arm in ARMS}
    return load_partial(cfg, directory=directory)


#: How the stored paper-preset runs were trained, in the order the chapters prefer them when two
#: are equally complete: the ensemble run in bf16 forked at 900 as the paper does, the same forked
#: at 1100 (the first ensemble run), then the first stored run (each model alone, fp32, fork 1100).
PAPER_RUNS: tuple[dict[str, Any], ...] = (
    {k: v for k, v in config.PAPER_ENSEMBLE_RUN.items() if k != "PRESET"},
    {k: v for k, v in config.FORK_1100_RUNS[config.PAPER_ENSEMBLE_1100].items() if k != "PRESET"},
    {k: v for k, v in config.FORK_1100_RUNS[config.PAPER_LOOP].items() if k != "PRESET"},
)


def stored_long_runs(cfg: Params) -> list[tuple[Params, GrokRun, dict[str, int]]]:
    """Every stored ``paper``-preset run of :data:`PAPER_RUNS` (in that order), as ``(paper_cfg,
    run, last_epoch)`` (see :func:`load_long_run`); trains nothing.  Empty when ``cfg`` is itself
    the paper preset (its own run is the long run) or nothing is stored."""
    if cfg["PRESET"] == "paper":
        return []
    found = []
    for how in PAPER_RUNS:
        paper_cfg = config.PARAMS.resolve(PRESET="paper", **how)
        got = load_long_run(paper_cfg)
        if got is not None:
            found.append((paper_cfg, *got))
    return found


def stored_long_run(cfg: Params) -> tuple[Params, GrokRun, dict[str, int]] | None:
    """The most complete stored ``paper``-preset run, to show beside a shorter preset's run; trains nothing.

    Of :func:`stored_long_runs`, the run shown is the one that is finished, then has the most
    models, then reaches furthest, the first of :data:`PAPER_RUNS` on a tie.  Returns
    ``(paper_cfg, run, last_epoch)``, or ``None`` when ``cfg`` is itself the paper preset or
    nothing is stored.
    """
    best: tuple[tuple[bool, int, int], tuple[Params, GrokRun, dict[str, int]]] | None = None
    for paper_cfg, run, through in stored_long_runs(cfg):
        reached = min(through.values())
        rank = (reached >= paper_cfg["EPOCHS"], run.n_models, reached)
        if best is None or rank > best[0]:
            best = (rank, (paper_cfg, run, through))
    return None if best is None else best[1]


def fork_pair(cfg: Params) -> tuple[tuple[Params, GrokRun, dict[str, int]], tuple[Params, GrokRun, dict[str, int]]] | None:
    """The stored ensemble paper runs forked at 900 and at 1100, ``(at_900, at_1100)``, when both are
    stored (the 900 one may be the stored part of an unfinished run); else ``None``."""
    runs = {
        paper_cfg["FORK_EPOCH"]: (paper_cfg, run, through)
        for paper_cfg, run, through in stored_long_runs(cfg)
        if paper_cfg["TRAINER"] == "ensemble"
    }
    new, old = runs.get(config.PRESETS["paper"]["FORK_EPOCH"]), runs.get(config.OLD_FORK)
    return None if new is None or old is None else (new, old)


def how_trained(cfg: Mapping[str, Any]) -> str:
    """How run ``cfg`` was trained, as the scorecard's run column shows it: ``"<TRAINER>, <PRECISION>"``."""
    return f"{cfg['TRAINER']}, {cfg['PRECISION']}"


def run_departures(cfg: Params) -> list[str]:
    """How a mod-add run departs from the paper's protocol: its knobs (:func:`~ace_helpers.repro.departures.departures`)
    and its trainer (the code release trains each model alone)."""
    extra = ["ensemble trainer (the code release trains each model alone)"] if cfg["TRAINER"] == "ensemble" else []
    return departures(cfg, extra)


def describe_long_run(paper_cfg: Mapping[str, Any], run: GrokRun, through: Mapping[str, int]) -> str:
    """One line on what a stored long run holds: models, epochs reached per arm, CPU time, grok epoch."""
    epochs = paper_cfg["EPOCHS"]
    state = "finished" if min(through.values()) >= epochs else "unfinished; stored part"
    return (
        f"stored long run ({state}; {paper_cfg['TRAINER']} trainer, {paper_cfg['PRECISION']}): {run.n_models} of "
        f"{paper_cfg['N_MODELS']} models; checkpoints through epoch "
        f"{through['wd']} (WD = 1) and {through['nowd']} (WD 1 → 0) of {epochs}; {sum(run.wall_s) / 3600:.1f} "
        f"CPU-hours of training + analysis; grok epoch {grok_epoch(run.wd.epochs, run.wd['test_acc'])}, "
        f"fork {paper_cfg['FORK_EPOCH']}"
    )


def continues(long_cfg: Mapping[str, Any], cfg: Mapping[str, Any], *, same_training: bool = True, wd_arm: bool = False) -> bool:
    """Whether run ``long_cfg`` is run ``cfg`` continued: the same run knobs except a larger EPOCHS.

    ``same_training=False`` also lets TRAINER and PRECISION differ: ``long_cfg`` is then a longer
    sample of ``cfg``'s protocol (the same seeds and knobs, trained another way), not ``cfg`` continued.
    ``wd_arm=True`` also lets FORK_EPOCH differ: for a claim on the weight-decay arm alone, which the
    fork does not touch in exact arithmetic
    (a batched ensemble's sums may still differ after it: then the runs are siblings).
    """
    free = {"EPOCHS"} | (set() if same_training else set(config.KEYED_WHEN_CHANGED)) | ({"FORK_EPOCH"} if wd_arm else set())
    same = all(long_cfg[k] == cfg[k] for k in config.RUN_KNOBS if k not in free)
    return same and long_cfg["EPOCHS"] >= cfg["EPOCHS"]


def same_prefix(short: GrokRun, long: GrokRun, atol: float = 1e-9) -> tuple[bool, list[int], float]:
    """Whether two runs agree on their shared models and checkpoint epochs.

    A run continued for more epochs (same run knobs otherwise) must reproduce the shorter one's
    numbers: every segment is seeded by its position alone.  Training is bitwise reproducible;
    the shift-operator fits of a run stored by an earlier version of the code may differ from a
    fresh one at the level of floating-point rounding, hence ``atol``.

    Returns:
        ``(equal, epochs, max_abs_diff)``: ``equal`` is True when every per-checkpoint array of
        both arms agrees within ``atol`` (NaN exactly where the other has NaN) on the first
        min(n_models) models at the shared epochs ``epochs`` of the weight-decay arm (False if
        there are none); ``max_abs_diff`` is the largest difference found.
    """
    n = min(short.n_models, long.n_models)
    shared: list[int] = []
    worst = 0.0
    for name in ARMS:
        a, b = getattr(short, name), getattr(long, name)
        common = np.intersect1d(a.epochs, b.epochs)
        if name == "wd":
            shared = common.tolist()
        ia = [a.index(int(e)) for e in common]
        ib = [b.index(int(e)) for e in common]
        for field in a.arrays:
            x = np.asarray(a.arrays[field][:n, ia], dtype=float)
            y = np.asarray(b.arrays[field][:n, ib], dtype=float)
            nan = np.isnan(x)
            if x.shape != y.shape or not np.array_equal(nan, np.isnan(y)):
                return False, shared, float("inf")
            if x.size:
                worst = max(worst, float(np.max(np.abs(x[~nan] - y[~nan]), initial=0.0)))
    equal = worst <= atol
    return equal and bool(shared), shared, worst


def stored_redundancy_gap() -> dict[str, Any] | None:
    """The book run's redundancy, read from its stored artifact (``book/artifacts/modadd_grokking``); trains nothing.

    Returns ``{"preset": "book", "epoch": last checkpoint epoch, "mean_gap": mean over models of
    (core_dim − suff_dim) of the weight-decay arm at that checkpoint}``, or ``None`` when the
    book run is not stored (every model of it, to its last epoch).
    """
    cfg = config.PARAMS.resolve(PRESET="book")
    found = load_long_run(cfg)
    if found is None:
        return None
    run, through = found
    if run.n_models < cfg["N_MODELS"] or through["wd"] < cfg["EPOCHS"]:
        return None
    gap = np.asarray(run.wd["core_dim"], float) - np.asarray(run.wd["suff_dim"], float)
    return {"preset": "book", "epoch": int(run.wd.epochs[-1]), "mean_gap": float(gap[:, -1].mean())}
