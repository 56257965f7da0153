"""Nothing moved that a user or a stored artifact names: the short commands, the sweep key of chapter 4's
stored runs and the stored training runs of chapters 2-3 are found at their new homes, nothing retrained."""

from __future__ import annotations

import importlib
import runpy
import sys

import pytest

from ace_helpers.chapters import grokking_scaling_law as gsl
from ace_helpers.chapters.grokking_scaling_law import jobs
from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.keys import artifact_dir, model_key, run_hash
from ace_helpers.repro.artifacts import load_artifact, project_root
from ace_helpers.repro.sweeps import Job, resolve, stored

#: ``python -m`` commands named in the README, the Makefile, .ci/run and the book, and the module whose main they run.
COMMANDS = {
    "ace_helpers.kernels": "ace_helpers.repro.kernels",
    "ace_helpers.fingerprint": "ace_helpers.repro.fingerprint",
    "ace_helpers.runbook": "ace_helpers.repro.runbook",
    "ace_helpers.seed_check": "ace_helpers.repro.seed_check",
    "ace_helpers.variants": "ace_helpers.repro.variants",
    "ace_helpers.chapters.sweep": "ace_helpers.chapters.grokking_scaling_law.jobs",
    "ace_helpers.chapters.paper_runs": "ace_helpers.chapters.paper_runs",
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_documented_command_still_runs(command, monkeypatch, capsys):
    if COMMANDS[command] != command:
        assert importlib.import_module(command).main is importlib.import_module(COMMANDS[command]).main
    monkeypatch.setattr(sys, "argv", [command, "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module(command, run_name="__main__")
    assert done.value.code == 0 and "usage" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["ace_helpers.chapters.modadd", "ace_helpers.chapters.core_inflation"])
def test_the_chapter_commands_still_answer(command, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [command, "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module(command, run_name="__main__")
    assert done.value.code == 0 and "usage" in capsys.readouterr().out


def test_chapter_4_keys_its_runs_by_the_path_they_were_stored_under():
    (job, *_) = jobs.grok_jobs(gsl.PARAMS.resolve(PRESET="ci"))
    assert job.params["fn"] == jobs.STORED_AS == "ace_helpers.chapters.sweep:grok_unit"
    assert resolve(job.fn) is jobs.grok_unit and resolve(jobs.STORED_AS) is jobs.grok_unit
    moved = Job(job.fn, job.kwargs)  # keyed by where the function lives now: another name, not found
    assert moved.name != job.name


def test_all_105_stored_paper_sweep_runs_are_found():
    all_jobs = jobs.grok_jobs(gsl.PARAMS.resolve(PRESET="paper"))
    store = jobs.default_store(gsl.NOTEBOOK, "paper")
    found = [t for t in all_jobs if stored(t, store) is not None]
    assert len(found) >= 105, f"{len(found)} of the stored paper runs found in {store}"


@pytest.mark.parametrize("preset, overrides", [
    ("book", {}), ("book", {"FORK_EPOCH": 1100}), ("paper", {"TRAINER": "ensemble", "PRECISION": "bf16"}),
    ("paper", {"TRAINER": "ensemble", "PRECISION": "bf16", "FORK_EPOCH": 1100}),
])  # fmt: skip
def test_the_stored_modadd_runs_are_found(preset, overrides):
    """The committed runs of chapters 2-3 (finished, or their resume snapshots) load under the current keys."""
    cfg = config.PARAMS.resolve(PRESET=preset, **overrides)
    folder = artifact_dir(cfg)
    names = {p.name.split(".")[0] for p in folder.glob("*.manifest.json")}
    mine = sorted(n for n in names if run_hash(cfg) in n)
    assert mine, f"no stored run of the {preset} preset in {folder} (run hash {run_hash(cfg)})"
    for m in range(cfg["N_MODELS"]):
        name = f"run_{run_hash(cfg)}_m{m}"
        if name in names:
            assert load_artifact(folder, name, model_key(cfg, m)) is not None, f"{name} does not load under its key"
    assert folder.is_relative_to(project_root() / "book" / "artifacts")
