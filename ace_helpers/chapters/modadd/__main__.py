"""Command line: train and store a preset's modular-addition run in the background, resumable.

``python -m ace_helpers.chapters.modadd --preset paper --workers 3`` (re-run the same command
after an interruption: finished models are loaded, the others resume from their snapshots).
``--preset book --epochs 2000 --n-models 6 --trainer ensemble --precision fp32`` trains one arm of the trainers'
comparison (seeds 1031 to 1036).
``--store-partial`` instead stores what an unfinished run has reached
(:func:`~ace_helpers.chapters.modadd.long_run.store_partial`) next to the book's artifacts, for
the chapters to show.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import grok_epoch
from ace_helpers.chapters.modadd.keys import artifact_dir, snapshot_dir_for
from ace_helpers.chapters.modadd.long_run import store_partial, store_partial_ensemble
from ace_helpers.chapters.modadd.run import load_or_train
from ace_helpers.method.devices import describe_device
from ace_helpers.repro import params as P_
from ace_helpers.repro import thread_pools


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the flags, resolve the preset once, then train (or ``--store-partial``)."""
    ap = argparse.ArgumentParser(description="Train + analyse the modular-addition run of Chapters 2-3 and store it.")
    ap.add_argument("--preset", default="paper", choices=P_.PRESET_NAMES)
    ap.add_argument("--workers", type=int, default=None, help="parallel training processes (default: the preset's)")
    ap.add_argument("--n-models", type=int, default=None, help="number of models (default: the preset's)")
    ap.add_argument("--store-partial", action="store_true", help="store the analyses an unfinished run has reached; no training")
    ap.add_argument(
        "--wd-first", action="store_true", help="train each model's weight-decay arm to the end before its WD-off arm"
    )
    ap.add_argument(
        "--trainer", choices=config.TRAINERS, default=None, help="loop (the stored runs) or ensemble (default: the preset's)"
    )
    ap.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="epochs of the weight-decay arm (default: the preset's; the trainers' comparison: 2000 at the book preset)",
    )
    ap.add_argument(
        "--fork-epoch",
        type=int,
        default=None,
        help="epoch the WD-off arm forks at (default: the preset's; the first stored runs: 1100)",
    )
    ap.add_argument(
        "--precision",
        default=None,
        help="auto (bf16 on a GPU with native bf16, else fp32), fp32 or bf16 (bf16 needs --trainer ensemble; default: the preset's, auto)",
    )
    ap.add_argument(
        "--device",
        default=None,
        help="where the ensemble trainer runs: auto (CUDA when present, else the "
        "CPU), cpu, cuda, cuda:N, mps (default: the preset's, auto)",
    )
    ap.add_argument(
        "--snapshot-dir",
        default=None,
        help="resume snapshots (default: outputs/modadd_grokking_snapshots; "
        "book/artifacts/modadd_grokking_snapshots to commit them, so another machine resumes from a clone)",
    )
    ap.add_argument(
        "--artifact-dir",
        default=None,
        help="where the run is stored (default: book/artifacts/modadd_grokking "
        "for the book and paper presets, where the chapters read it)",
    )
    args = ap.parse_args(argv)
    thread_pools.set_threads()
    cfg = config.PARAMS.resolve(
        PRESET=args.preset,
        N_MODELS=args.n_models,
        WORKERS=args.workers,
        TRAINER=args.trainer,
        PRECISION=args.precision,
        FORK_EPOCH=args.fork_epoch,
        DEVICE=args.device,
        EPOCHS=args.epochs,
        ARTIFACT_DIR=args.artifact_dir,
    )
    print(describe_device(cfg["DEVICE"]))  # the loop trainer's DEVICE is resolved to "cpu", where it trains
    snapshots = args.snapshot_dir if args.snapshot_dir is not None else snapshot_dir_for(cfg)
    if args.store_partial:
        store = store_partial if cfg["TRAINER"] == "loop" else store_partial_ensemble
        through = store(cfg, snapshots)
        print(f"stored {cfg['N_MODELS']} model(s) through epochs {through} of {cfg['EPOCHS']} in {artifact_dir(cfg)}")
        return
    run = load_or_train(cfg, snapshot_dir=snapshots, workers=cfg["WORKERS"], wd_first=args.wd_first)
    print(f"stored in {run.directory}; grok epoch {grok_epoch(run.wd.epochs, run.wd['test_acc'])}")


if __name__ == "__main__":
    main()
