"""Chapter 4's sweeps as independent jobs on Dask: ``python -m ace_helpers.chapters.sweep CHAPTER``.

Chapter 4's grokking-time sweeps are dozens of independent training runs (one per ω or prime,
and seed).  Here each run is one :class:`ace_helpers.repro.sweeps.Job` (:func:`grok_jobs`), run by
:func:`ace_helpers.repro.sweeps.run_sweep` on a local cluster, on a running Dask cluster, or
in-process, and stored as a checksummed artifact keyed by its parameters, so an interrupted
sweep resumes where it stopped (on any machine that has the store folder).

Examples::

    python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper --workers 16
    dask scheduler &  dask worker tcp://HOST:8786 --nthreads 1 --nworkers 8 &
    python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper --scheduler tcp://HOST:8786
    python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper --gpus 4   # one worker per GPU
    python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper --sweep p --extra-omegas-p 2.0 \
        --only-omega-p 2.0 --store book/artifacts/04_grokking_scaling_law_sweep/paper_omega2
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ace_helpers.chapters.grokking_scaling_law.knobs import PARAMS, PRESETS
from ace_helpers.chapters.grokking_scaling_law.runs import GrokRecord, p_sweep_omegas, records_from_dicts, run_grok_sweep
from ace_helpers.method.devices import describe_device, device_key, device_kind, resolve_device
from ace_helpers.repro.artifacts import project_root
from ace_helpers.repro.params import Params
from ace_helpers.repro.sweeps import Job, SweepReport, check_gpus, run_sweep
from ace_helpers.toys.precision import precision_line

#: The path :func:`grok_unit` had when the stored runs were made: part of every stored run's key, so kept.
STORED_AS = "ace_helpers.chapters.sweep:grok_unit"

#: Chapters whose sweep this command runs.
CHAPTERS = ("04_grokking_scaling_law",)


def grok_unit(
    sweep: str,
    p: int,
    omega: float,
    seed: int,
    *,
    batch_size: int | None,
    max_steps: int,
    eval_every: int,
    train_fraction: float,
    stop_margin: int,
    lr: float,
    precision: str = "fp32",
    device: str = "cpu",
) -> dict[str, Any]:
    """One grokking run (modulus ``p``, weight decay ``omega``, ``seed``), on a device of kind ``device``
    (``"cpu"``, ``"cuda"``, ``"mps"``; a Dask worker with one GPU sees it as ``cuda``): its :class:`GrokRecord` as a dict."""
    (record,) = run_grok_sweep(
        p,
        [omega],
        [seed],
        batch_size=batch_size,
        max_steps=max_steps,
        eval_every=eval_every,
        train_fraction=train_fraction,
        stop_margin=stop_margin,
        lr=lr,
        sweep=sweep,
        progress=False,
        precision=precision,
        device=resolve_device(device),
    )
    return record.to_dict()


def grok_jobs(cfg: Params) -> list[Job]:
    """One job per run of chapter 4's sweeps under resolved ``cfg``: the ω sweep, then the p sweep at
    each of its weight decays (``OMEGA_P``, then ``EXTRA_OMEGAS_P``).  A job that runs on a GPU carries the kind
    of its device (``"device": "cuda"``), so it is stored beside the CPU runs, whose keys have no device."""
    seeds = [cfg["SEED"] + i for i in range(cfg["N_SEEDS"])]
    common = {
        "max_steps": cfg["MAX_STEPS"],
        "eval_every": cfg["EVAL_EVERY"],
        "stop_margin": cfg["STOP_MARGIN"],
        "lr": cfg["LR"],
        "precision": cfg["PRECISION"],
    }
    common |= device_key(device_kind(cfg["DEVICE"]), "device")
    fn = "ace_helpers.chapters.grokking_scaling_law.jobs:grok_unit"  # not __name__: run as a script, that is "__main__"
    jobs = [
        Job(
            fn,
            {
                "sweep": "omega",
                "p": cfg["P_OMEGA"],
                "omega": float(w),
                "seed": s,
                "batch_size": cfg["BATCH_SIZE_OMEGA"],
                "train_fraction": cfg["TRAIN_FRACTION"],
                **common,
            },
            stored_as=STORED_AS,
        )
        for w in cfg["OMEGAS"]
        for s in seeds
    ]
    jobs += [
        Job(
            fn,
            {
                "sweep": "p",
                "p": int(q),
                "omega": float(w),
                "seed": s,
                "batch_size": None,
                "train_fraction": cfg["TRAIN_FRACTION_P"],
                **common,
            },
            stored_as=STORED_AS,
        )
        for w in p_sweep_omegas(cfg)
        for q in cfg["PRIMES"]
        for s in seeds
    ]
    return jobs


def grok_records(jobs: Sequence[Job], report: SweepReport) -> list[GrokRecord]:
    """The finished runs of ``jobs`` as :class:`GrokRecord` s, in job order."""
    return records_from_dicts([report.results[t.name] for t in jobs if t.name in report.results])


def default_store(chapter: str, preset: str) -> Path:
    """Where a chapter's sweep is stored: ``book/artifacts/<chapter>_sweep/<preset>`` in the project."""
    return project_root() / "book" / "artifacts" / f"{chapter}_sweep" / preset


def main(argv: Sequence[str] | None = None) -> int:
    """Run a chapter's sweep; exit status 1 if any job failed (each failure is printed with its arguments)."""
    ap = argparse.ArgumentParser(prog="python -m ace_helpers.chapters.sweep", description=__doc__.splitlines()[0])
    ap.add_argument("chapter", choices=CHAPTERS)
    ap.add_argument("--preset", default="paper", choices=sorted(PRESETS))
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, help="local worker processes (default: the CPU cores)")
    where.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://host:8786")
    where.add_argument("--in-process", action="store_true", help="run the jobs here, one after another")
    where.add_argument("--gpus", type=int, help="one local worker per GPU, worker i on GPU i (implies --device cuda)")
    ap.add_argument("--store", type=Path, help="folder of the stored runs (default: book/artifacts/<chapter>_sweep/<preset>)")
    ap.add_argument(
        "--n-seeds",
        type=int,
        help="run only the first N seeds (the rest later: each run is keyed by its own "
        "parameters, so the full sweep skips these)",
    )
    ap.add_argument("--sweep", choices=("omega", "p", "both"), default="both", help="run one sweep only (default: both)")
    ap.add_argument(
        "--device",
        default=None,
        help="where each run trains: auto (CUDA when present, else the CPU), cpu, "
        "cuda, mps (default: auto); a GPU run is stored beside the CPU runs, keyed by its device kind",
    )
    ap.add_argument(
        "--only-omega-p",
        type=float,
        default=None,
        metavar="OMEGA",
        help="run only the p sweep's runs at this weight decay (one of OMEGA_P and --extra-omegas-p), e.g. the runs "
        "at a second weight decay, stored in a folder of their own (--store)",
    )
    ap.add_argument(
        "--extra-omegas-p",
        type=float,
        nargs="+",
        default=None,
        metavar="OMEGA",
        help="further weight decays of the p sweep (EXTRA_OMEGAS_P; default: the preset's), e.g. 2.0 for the "
        "p sweep at a second weight decay that the joint law Ω ∝ ω^b needs",
    )
    ap.add_argument(
        "--precision",
        default=None,
        help="auto (bf16 on a GPU with native bf16, else fp32), fp32 or bf16 "
        "(default: the preset's, auto); a run is keyed by the precision it trained in",
    )
    args = ap.parse_args(argv)
    if args.gpus is not None:
        if args.device not in (None, "cuda"):
            ap.error(f"--gpus trains on CUDA: --device {args.device} is not allowed with it (give --device cuda or leave it out)")
        try:
            check_gpus(args.gpus)
        except ValueError as err:
            ap.error(str(err))
    try:
        cfg = PARAMS.resolve(
            PRESET=args.preset,
            N_SEEDS=args.n_seeds,
            DEVICE="cuda" if args.gpus else args.device,
            PRECISION=args.precision,
            EXTRA_OMEGAS_P=args.extra_omegas_p,
        )
    except ValueError as err:
        ap.error(str(err))
    print(describe_device(cfg["DEVICE"]))
    print(precision_line(cfg["PRECISION"], resolve_device(cfg["DEVICE"])))
    jobs = [t for t in grok_jobs(cfg) if args.sweep in ("both", t.kwargs["sweep"])]
    if args.only_omega_p is not None:
        if args.only_omega_p not in p_sweep_omegas(cfg):
            ap.error(f"--only-omega-p {args.only_omega_p} is not a weight decay of the p sweep: allowed {p_sweep_omegas(cfg)}")
        jobs = [t for t in jobs if t.kwargs["sweep"] == "p" and t.kwargs["omega"] == args.only_omega_p]
    report = run_sweep(
        jobs,
        args.store or default_store(args.chapter, args.preset),
        workers=args.workers,
        scheduler=args.scheduler,
        in_process=args.in_process,
        gpus=args.gpus,
        desc=f"{args.chapter} ({args.preset})",
    )
    print(
        f"{len(report.results)} of {len(jobs)} runs stored ({report.skipped} already, {report.ran} now, "
        f"{len(report.failed)} failed) in {report.wall_s:.0f} s"
    )
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
