"""Sweeps on Dask: the same numbers in-process and on a 2-worker cluster, resumable, failures reported."""

import json

import pytest
import torch

from ace_helpers.chapters import grokking_scaling_law as gsl
from ace_helpers.chapters.grokking_scaling_law.jobs import CHAPTERS, grok_jobs, grok_records, main
from ace_helpers.repro.sweeps import Job, run_sweep, stored

UNIT = "ace_helpers.chapters.grokking_scaling_law.jobs:grok_unit"
SMALL = {"batch_size": None, "max_steps": 60, "eval_every": 10, "train_fraction": 0.8, "stop_margin": 0, "lr": 1e-3}


def small_tasks() -> list[Job]:
    return [
        Job(UNIT, {"sweep": "omega", "p": 11, "omega": 1.0, "seed": 42, **SMALL}),
        Job(UNIT, {"sweep": "omega", "p": 11, "omega": 3.0, "seed": 43, **SMALL}),
        Job(UNIT, {"sweep": "p", "p": 13, "omega": 1.0, "seed": 42, **SMALL}),
    ]


def test_a_sweep_gives_the_same_numbers_in_process_and_on_a_two_worker_cluster(tmp_path):
    tasks = small_tasks()
    here = run_sweep(tasks, tmp_path / "here", in_process=True, progress=False, log=None)
    there = run_sweep(tasks, tmp_path / "there", workers=2, progress=False, log=None)
    assert here.ran == there.ran == 3 and not here.failed and not there.failed
    assert here.results == there.results  # stored numbers, bit for bit
    for name in here.results:  # and the files on disk are the same
        assert (tmp_path / "here" / f"{name}.json").read_bytes() == (tmp_path / "there" / f"{name}.json").read_bytes()
    direct = gsl.run_grok_sweep(11, [3.0], [43], sweep="omega", progress=False, **SMALL)
    assert grok_records(tasks, here)[1] == direct[0]  # a task is the chapter's own run, alone


def test_a_rerun_skips_stored_tasks_and_recomputes_a_corrupt_one(tmp_path):
    tasks = small_tasks()[:2]
    first = run_sweep(tasks, tmp_path, in_process=True, progress=False, log=None)
    again = run_sweep(tasks, tmp_path, in_process=True, progress=False, log=None)
    assert (again.skipped, again.ran) == (2, 0) and again.results == first.results
    (tmp_path / f"{tasks[0].name}.json").write_text('{"tau_grok": 1')  # a half-written file
    assert stored(tasks[0], tmp_path) is None
    healed = run_sweep(tasks, tmp_path, in_process=True, progress=False, log=None)
    assert (healed.skipped, healed.ran) == (1, 1) and healed.results == first.results


def test_a_failing_task_is_reported_with_its_arguments_and_the_others_go_on(tmp_path):
    bad = Job(UNIT, {"sweep": "p", "p": 12, "omega": 1.0, "seed": 42, **SMALL})
    lines: list[str] = []
    report = run_sweep([small_tasks()[0], bad], tmp_path, in_process=True, progress=False, log=lines.append)
    assert report.ran == 1 and len(report.results) == 1
    (task, error), = report.failed
    assert task == bad and "p=12" in error and "prime" in error
    assert any("'p': 12" in line and "failed" in line for line in lines)


def test_bad_sweeps_are_refused_before_any_compute(tmp_path):
    t = small_tasks()[0]
    with pytest.raises(ValueError, match="same job twice"):
        run_sweep([t, t], tmp_path, in_process=True)
    with pytest.raises(ValueError, match="cannot be imported"):
        run_sweep([Job("ace_helpers.nothing:here", {})], tmp_path, in_process=True)
    with pytest.raises(ValueError, match="'package.module:function'"):
        run_sweep([Job("no_colon", {})], tmp_path, in_process=True)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        run_sweep([t], tmp_path, workers=0)
    assert not list(tmp_path.iterdir())


def test_chapter_four_sweep_has_one_task_per_run():
    cfg = gsl.PARAMS.resolve(PRESET="paper")
    tasks = grok_jobs(cfg)
    n = cfg["N_SEEDS"]
    p_runs = len(cfg["PRIMES"]) * (1 + len(cfg["EXTRA_OMEGAS_P"]))
    assert len(tasks) == (len(cfg["OMEGAS"]) + p_runs) * n == len({t.name for t in tasks})
    book = grok_jobs(gsl.PARAMS.resolve(PRESET="book"))
    assert {t.kwargs["omega"] for t in book if t.kwargs["sweep"] == "p"} == set(gsl.p_sweep_omegas(gsl.PARAMS.resolve(PRESET="book")))
    assert {t.kwargs["train_fraction"] for t in tasks} == {0.5} and {t.kwargs["eval_every"] for t in tasks} == {1}
    assert json.dumps(tasks[0].params)  # plain, so the store key is stable
    assert CHAPTERS == ("04_grokking_scaling_law",)
    with pytest.raises(SystemExit):
        main(["04_grokking_scaling_law", "--workers", "2", "--in-process"])


def test_the_chapter_reads_a_complete_sweep_store_and_trains_when_a_run_is_missing(tmp_path, monkeypatch):
    cfg = gsl.PARAMS.resolve(PRESET="ci", OMEGAS=[1.0], PRIMES=[11], N_SEEDS=1, MAX_STEPS=60, EVAL_EVERY=10, P_OMEGA=11,
                             EXTRA_OMEGAS_P=[], TRAIN_FRACTION=0.8, TRAIN_FRACTION_P=0.8)
    tasks = grok_jobs(cfg)
    report = run_sweep(tasks, tmp_path / "store", in_process=True, progress=False, log=None)
    monkeypatch.setattr(gsl.pipeline, "run_omega_sweep", None)  # reading the store trains nothing
    monkeypatch.setattr(gsl.pipeline, "run_p_sweep", None)
    sweeps = gsl.Sweeps(cfg, tmp_path / "artifact", store=tmp_path / "store")
    assert sweeps.from_artifact and "all 2 runs" in sweeps.describe()
    assert sweeps.omega() + sweeps.p() == grok_records(tasks, report)
    (tmp_path / "store" / f"{tasks[1].name}.json").unlink()
    partial = gsl.Sweeps(cfg, tmp_path / "artifact", store=tmp_path / "store")
    assert not partial.from_artifact and "holds 1 of 2 runs" in partial.describe()


def test_a_partial_sweep_runs_the_first_seeds_of_one_sweep_and_its_runs_belong_to_the_full_one(tmp_path, monkeypatch):
    import ace_helpers.chapters.grokking_scaling_law.jobs as sweep_cli
    from ace_helpers.repro.sweeps import SweepReport

    seen: list[list[Job]] = []
    monkeypatch.setattr(sweep_cli, "run_sweep", lambda tasks, store, **kw: seen.append(list(tasks)) or SweepReport())
    assert main(["04_grokking_scaling_law", "--preset", "paper", "--in-process", "--n-seeds", "4", "--sweep", "omega",
                 "--store", str(tmp_path)]) == 0  # fmt: skip
    full = {t.name for t in grok_jobs(gsl.PARAMS.resolve(PRESET="paper"))}
    (tasks,) = seen
    assert len(tasks) == 6 * 4 and {t.kwargs["sweep"] for t in tasks} == {"omega"} and {t.name for t in tasks} <= full


def test_a_second_weight_decay_adds_its_p_sweep_and_keeps_the_first_ones_runs(tmp_path, monkeypatch):
    import ace_helpers.chapters.grokking_scaling_law.jobs as sweep_cli
    from ace_helpers.repro.sweeps import SweepReport

    seen: list[list[Job]] = []
    monkeypatch.setattr(sweep_cli, "run_sweep", lambda tasks, store, **kw: seen.append(list(tasks)) or SweepReport())
    assert main(["04_grokking_scaling_law", "--preset", "paper", "--in-process", "--n-seeds", "2", "--sweep", "p",
                 "--extra-omegas-p", "2.0", "--store", str(tmp_path)]) == 0  # fmt: skip
    (tasks,) = seen
    first = {t.name for t in grok_jobs(gsl.PARAMS.resolve(PRESET="paper", N_SEEDS=2)) if t.kwargs["sweep"] == "p"}
    assert len(tasks) == 2 * 7 * 2 and {t.kwargs["omega"] for t in tasks} == {1.0, 2.0}
    assert first == {t.name for t in tasks if t.kwargs["omega"] == 1.0}  # the stored ω = 1 runs are found, not rerun
    with pytest.raises(SystemExit):
        main(["04_grokking_scaling_law", "--preset", "paper", "--extra-omegas-p", "1.0", "--store", str(tmp_path)])
    seen.clear()
    assert main(["04_grokking_scaling_law", "--preset", "paper", "--in-process", "--n-seeds", "2", "--sweep", "p",
                 "--extra-omegas-p", "2.0", "--only-omega-p", "2.0", "--store", str(tmp_path)]) == 0  # fmt: skip
    (only,) = seen
    assert len(only) == 2 * 7 and {t.kwargs["omega"] for t in only} == {2.0}  # its own store: the ω = 1 runs are not rerun
    with pytest.raises(SystemExit):
        main(["04_grokking_scaling_law", "--preset", "paper", "--only-omega-p", "3.0", "--store", str(tmp_path)])


def test_the_command_line_stores_runs_under_the_names_the_chapter_reads(tmp_path, monkeypatch):
    """Run as ``python -m``, the module is ``__main__``: its tasks must still name the importable function,
    or the chapter (which imports it) looks for other names than the command stored."""
    import runpy
    import sys

    import ace_helpers.repro.sweeps
    from ace_helpers.repro.sweeps import SweepReport

    seen: list[list[Job]] = []
    monkeypatch.setattr(ace_helpers.repro.sweeps, "run_sweep", lambda tasks, store, **kw: seen.append(list(tasks)) or SweepReport())
    monkeypatch.setattr(sys, "argv", ["sweep", "04_grokking_scaling_law", "--preset", "ci", "--in-process", "--store", str(tmp_path)])
    with pytest.raises(SystemExit) as stop:
        runpy.run_module("ace_helpers.chapters.grokking_scaling_law.jobs", run_name="__main__")
    assert stop.value.code == 0
    assert {t.name for t in seen[0]} == {t.name for t in grok_jobs(gsl.PARAMS.resolve(PRESET="ci"))}


def test_one_worker_per_gpu_is_checked_before_any_compute_and_pins_worker_i_to_gpu_i(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from ace_helpers.repro import sweeps

    t = small_tasks()[0]
    with pytest.raises(ValueError, match=r"gpus=3 is not allowed here: torch sees 2 CUDA device\(s\)"):
        sweeps.check_gpus(3, available=2)
    with pytest.raises(ValueError, match="gpus must be a positive integer"):
        sweeps.check_gpus(0, available=2)
    assert sweeps.check_gpus(2, available=2) == 2
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"gpus=1 is not allowed here: torch sees 0 CUDA device\(s\)"):
            run_sweep([t], tmp_path / "gpus", gpus=1)
    with pytest.raises(ValueError, match="exclude each other"):
        run_sweep([t], tmp_path / "both", gpus=1, in_process=True)
    assert not (tmp_path / "gpus").exists() and not (tmp_path / "both").exists()
    assert [sweeps.gpu_of(name, 4) for name in (0, "1", 3)] == [0, 1, 3]
    with pytest.raises(ValueError, match="worker 4 has no GPU"):
        sweeps.gpu_of(4, 4)
    chosen = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    assert sweeps.pin_gpu(SimpleNamespace(name=1)) == 1 and chosen == [1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal cannot be seen here")
def test_the_sweep_command_refuses_gpus_it_does_not_have(capsys):
    with pytest.raises(SystemExit):
        main(["04_grokking_scaling_law", "--gpus", "2"])
    assert "gpus=2 is not allowed here: torch sees 0 CUDA device(s)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["04_grokking_scaling_law", "--gpus", "1", "--device", "cpu"])
    assert "--device cpu is not allowed with it" in capsys.readouterr().err
