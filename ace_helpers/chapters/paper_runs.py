"""The stored paper-protocol runs, one row each: parameters, how trained, how far, CPU-hours, how to resume.

``python -m ace_helpers.chapters.paper_runs`` rebuilds ``book/paper_runs_table.md`` (included by
the reproducibility page) from the committed artifacts; the tests check that the committed table
is what they give.  Nothing is trained.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ace_helpers.chapters import core_inflation as ci
from ace_helpers.chapters import grokking_scaling_law as gsl
from ace_helpers.chapters.grokking_scaling_law.jobs import default_store
from ace_helpers.chapters.modadd import config, ensemble_run
from ace_helpers.chapters.modadd.keys import artifact_dir, run_hash
from ace_helpers.chapters.modadd.long_run import PAPER_RUNS, how_trained, load_long_run, stored_long_run
from ace_helpers.chapters.modadd_grokking import trainers
from ace_helpers.repro.artifacts import atomic_write_bytes, project_root
from ace_helpers.repro.tables import markdown_table

#: The folder of the committed resume snapshots of chapters 2-3's paper runs.
SNAPSHOTS = Path("book") / "artifacts" / "modadd_grokking_snapshots"

HEADER = ("run", "parameters", "trained", "stored", "CPU-hours", "CPU", "shown in", "resume or extend")


def cpu_kinds(manifests: Iterable[Mapping[str, Any]]) -> str:
    """The machines a run's stored parts were made on, from their manifests: ``"Intel(R) Xeon(R) Processor (amx),
    reproducible kernels ×36; AMD EPYC (avx512_bf16) ×33; not recorded ×72"`` (most first), or ``"—"``."""
    kinds: Counter[str] = Counter()
    for manifest in manifests:
        machine = manifest.get("machine") or {}
        if not machine.get("model"):
            kinds["not recorded"] += 1
            continue
        extra = f" ({machine['bf16_kernels']})" if machine.get("bf16_kernels") else ""
        kernels = ", reproducible kernels" if machine.get("kernels") == "reproducible" else ""
        kinds[f"{machine['model']}{extra}{kernels}"] += 1
    return "; ".join(f"{k} ×{n}" for k, n in kinds.most_common()) or "—"


def _manifests(folder: Path, pattern: str) -> list[dict[str, Any]]:
    """The manifests of ``folder`` matching ``pattern`` (a glob of ``*.manifest.json`` names)."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(pattern))]


def _modadd_rows() -> list[tuple[str, ...]]:

    shown = stored_long_run(config.PARAMS.resolve(PRESET="book"))
    rows = []
    for how in PAPER_RUNS:
        cfg = config.PARAMS.resolve(PRESET="paper", **how)
        params = (
            f"p = {cfg['P']}, train fraction {cfg['TRAIN_FRACTION']}, {cfg['EPOCHS']} epochs, WD {cfg['WEIGHT_DECAY']}, "
            f"fork to WD 0 at epoch {cfg['FORK_EPOCH']}, seeds {cfg['SEED']}+m, lr {cfg['LR']}, batch {cfg['BATCH_SIZE']}"
        )
        found = load_long_run(cfg)
        models = list(range(cfg["N_MODELS"]))
        snap = None
        if how["TRAINER"] == "ensemble" and (found is None or found[0].n_models < cfg["N_MODELS"]):
            snap = ensemble_run.load_snapshot(
                project_root() / SNAPSHOTS,
                ensemble_run.ensemble_snapshot_name(cfg, models),
                ensemble_run.ensemble_snapshot_key(cfg, models),
                lambda _msg: None,
            )
        if snap is not None:
            stored = f"resume snapshot at epoch {snap[0]['epoch']} of {cfg['EPOCHS']}, {len(models)} models, both arms"
            hours, cpu = float(snap[0]["wall_s"]) / 3600, "—"
        elif found is not None:
            run, through = found
            state = "finished" if min(through.values()) >= cfg["EPOCHS"] else "stored part"
            stored = (
                f"{state}: {run.n_models} of {cfg['N_MODELS']} models; WD arm to epoch {through['wd']}, "
                f"WD-off arm to {through['nowd']}"
            )
            hours = sum(run.wall_s) / 3600
            tag = run_hash(cfg)
            cpu = cpu_kinds(
                _manifests(artifact_dir(cfg), f"run_{tag}_m*.manifest.json")
                or _manifests(artifact_dir(cfg), f"partial_{tag}_m*.manifest.json")
            )
        else:
            continue
        is_shown = shown is not None and all(shown[0][k] == cfg[k] for k in ("TRAINER", "PRECISION", "FORK_EPOCH"))
        at_paper_fork = cfg["TRAINER"] == "ensemble" and cfg["FORK_EPOCH"] == config.PRESETS["paper"]["FORK_EPOCH"]
        flags = f"--trainer {cfg['TRAINER']} --precision {cfg['PRECISION']}"
        if cfg["FORK_EPOCH"] != config.PRESETS["paper"]["FORK_EPOCH"]:
            flags += f" --fork-epoch {cfg['FORK_EPOCH']}"
        resume = (
            f"`python -m ace_helpers.chapters.modadd --preset paper {flags} --snapshot-dir {SNAPSHOTS.as_posix()}` "
            + (
                "(resumes from the committed snapshot; one process, both arms of every model)"
                if snap is not None
                else "(one process, both arms of every model; no snapshot of this run is committed, so it trains from "
                "the start, writing resumable snapshots into that folder)"
            )
            if cfg["TRAINER"] == "ensemble"
            else f"`python -m ace_helpers.chapters.modadd --preset paper {flags} --workers {cfg['N_MODELS']}` (one process per "
            "model; this run's snapshots were not committed, so its unfinished arms retrain from their start)"
        )
        rows.append(
            (
                f"chapters 2–3, {'all models as one ensemble' if cfg['TRAINER'] == 'ensemble' else 'each model alone'}",
                params,
                how_trained(cfg),
                stored,
                f"{hours:.2f}",
                cpu,
                "chapters 2 and 3 (long-run sections)"
                if is_shown
                else "chapter 3 (the fork at the paper's epoch)"
                if at_paper_fork
                else "not shown (a more complete run is)",
                resume,
            )
        )
    return rows


def _reference_row() -> list[tuple[str, ...]]:

    cfg = ci.PARAMS.resolve(PRESET="paper", **ci.REFERENCE_TRAINING)
    ref = ci.stored_reference(cfg)
    if ref is None:
        return []
    return [
        (
            "chapter 3, dimension-matched reference",
            f"model 0 of the each-model-alone run above, WD arm, activations kept at epochs {ref.data['epochs']}",
            ci.how_trained(cfg),
            "finished",
            f"{ref.manifest['wall_s'] / 3600:.2f}",
            cpu_kinds([ref.manifest]),
            "chapter 3",
            "`python -m ace_helpers.chapters.core_inflation` (retrains it)",
        )
    ]


def _sweep_rows() -> list[tuple[str, ...]]:

    paper = gsl.stored_paper_sweeps(gsl.PARAMS.resolve(PRESET="book"))
    if paper is None:
        return []
    cfg = paper.cfg
    rows = []
    for sweep in ("omega", "p"):
        if sweep == "omega":
            params = (
                f"ω ∈ {cfg['OMEGAS']} at p = {cfg['P_OMEGA']}, batch {cfg['BATCH_SIZE_OMEGA']}, train fraction "
                f"{cfg['TRAIN_FRACTION']}"
            )
        else:
            params = f"p ∈ {cfg['PRIMES']} at ω = {cfg['OMEGA_P']}, full batch, train fraction {cfg['TRAIN_FRACTION_P']}"
        every = "every step" if cfg["EVAL_EVERY"] == 1 else f"every {cfg['EVAL_EVERY']} steps"
        params += f", evaluated {every}, at most {cfg['MAX_STEPS']} steps, lr {cfg['LR']}"
        stored = paper.coverage(sweep)
        shown = "chapter 4 (paper settings)" + ("" if paper.tested(sweep) else ", as not tested yet")
        resume = (
            f"`python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper --sweep {sweep}` "
            "(skips the stored runs; `--workers N` for a local cluster, `--scheduler tcp://HOST:8786` for a running one)"
        )
        folder = default_store(gsl.NOTEBOOK, "paper")
        cpu = cpu_kinds(
            m
            for m in _manifests(folder, "grok_unit_*.manifest.json")
            if m.get("params", {}).get("kwargs", {}).get("sweep") == sweep
        )
        rows.append(
            (
                f"chapter 4, {'ω' if sweep == 'omega' else 'p'} sweep",
                params,
                paper.trained,
                stored,
                f"{paper.wall_by_sweep.get(sweep, 0.0) / 3600:.2f}",
                cpu,
                shown,
                resume,
            )
        )
    return rows


#: Where the code release's own runs are stored (:mod:`ace_helpers.repro.official_runs`).
OFFICIAL = Path("book") / "artifacts" / "official_modadd"


def _official_rows() -> list[tuple[str, ...]]:

    rows = []
    for manifest in _manifests(project_root() / OFFICIAL, "official_modadd_*.manifest.json"):
        prm = manifest["params"]
        # the run to epoch 2000 is chapter 2's third column; the longer one, chapter 3's arm without weight decay
        chapter = "chapter 2" if prm["TOTAL_EPOCHS"] <= 2000 else "chapter 3"
        rows.append(
            (
                f"{chapter}, the code release rerun here ({prm['release']} at {prm['commit'][:7]})",
                (
                    f"its mod-add protocol as released (p = 53, train fraction 0.5, WD 1.0, fork to WD 0 at epoch 900), "
                    f"{prm['TOTAL_EPOCHS']} epochs, {prm['K_MODELS']} models"
                ),
                f"the release's own trainer and analysis, {prm['threads']} thread",
                "finished",
                f"{manifest['wall_s'] / 3600:.2f}",
                cpu_kinds([manifest]),
                f"{chapter} (the code release's column)",
                (
                    f"`python -m ace_helpers.repro.official_runs --official CHECKOUT --epochs {prm['TOTAL_EPOCHS']} "
                    f"--models {prm['K_MODELS']} --work NEW_FOLDER --store {OFFICIAL.as_posix()}` (the release does not "
                    "resume: it trains from the start)"
                ),
            )
        )
    return rows


def _trainer_rows() -> list[tuple[str, ...]]:

    rows = []
    for trainer in trainers.OURS:
        cfg = trainers.run_config(trainer)
        found = load_long_run(cfg)
        if found is None:
            continue
        run, through = found
        tag = run_hash(cfg)
        state = "finished" if min(through.values()) >= cfg["EPOCHS"] else "stored part"
        rows.append(
            (
                f"chapter 2, trainers compared ({trainer} trainer)",
                (
                    f"the book protocol: p = {cfg['P']}, train fraction {cfg['TRAIN_FRACTION']}, {cfg['EPOCHS']} epochs, WD "
                    f"{cfg['WEIGHT_DECAY']}, fork to WD 0 at epoch {cfg['FORK_EPOCH']}, seeds {cfg['SEED']}+m, lr {cfg['LR']}"
                ),
                how_trained(cfg),
                f"{state}: {run.n_models} of {cfg['N_MODELS']} models",
                f"{sum(run.wall_s) / 3600:.2f}",
                cpu_kinds(_manifests(artifact_dir(cfg), f"run_{tag}_m*.manifest.json")),
                "chapter 2 (trainers compared)",
                (
                    f"`python -m ace_helpers.chapters.modadd --preset book --epochs {cfg['EPOCHS']} --n-models "
                    f"{cfg['N_MODELS']} --trainer {trainer} --precision {cfg['PRECISION']} --artifact-dir "
                    f"{trainers.STORE.as_posix()}`, then `python -m ace_helpers.chapters.modadd_grokking.trainers`"
                ),
            )
        )
    return rows


def paper_runs_markdown() -> str:
    """The table of every stored paper-protocol run (markdown)."""
    rows = [*_modadd_rows(), *_reference_row(), *_sweep_rows(), *_trainer_rows(), *_official_rows()]
    return markdown_table(HEADER, rows) + "\n"


def write_paper_runs_table(root: Path | None = None) -> Path:
    """Regenerate ``book/paper_runs_table.md``; returns its path."""
    path = (root or project_root()) / "book" / "paper_runs_table.md"
    atomic_write_bytes(path, paper_runs_markdown().encode())
    return path


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m ace_helpers.chapters.paper_runs``: rebuild the table from the committed artifacts."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    print(f"wrote {write_paper_runs_table()}")


if __name__ == "__main__":
    main()
