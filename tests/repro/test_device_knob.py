"""The DEVICE knob of every chapter that trains models: refused when absent, never another experiment, and keys
of stored CPU runs unchanged by it."""

from __future__ import annotations

import pytest
import torch

from ace_helpers.chapters import ace_vs_alternatives, core_stitching, grokking_scaling_law, markov_cores
from ace_helpers.chapters.grokking_scaling_law.jobs import grok_jobs
from ace_helpers.chapters.modadd import config as modadd
from ace_helpers.chapters.modadd.keys import run_hash

CHAPTERS = {
    "01_markov_cores": markov_cores.PARAMS,
    "02/03 modadd": modadd.PARAMS,
    "04_grokking_scaling_law": grokking_scaling_law.PARAMS,
    "06_ace_vs_alternatives": ace_vs_alternatives.PARAMS,
    "07_core_stitching": core_stitching.PARAMS,
}
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: nothing to refuse")


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_every_preset_defaults_to_auto_and_cpu_is_the_same_experiment(name):
    params = CHAPTERS[name]
    for preset in ("ci", "book", "paper"):
        assert params.presets[preset]["DEVICE"] == "auto"
    cfg = params.resolve(PRESET="ci", DEVICE="CPU")
    assert cfg["DEVICE"] == "cpu" and cfg.is_preset_run()


@no_cuda
@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_an_absent_gpu_stops_the_validation(name):
    with pytest.raises(ValueError, match=r"DEVICE='cuda' is not allowed here: .*this machine has \['cpu'"):
        CHAPTERS[name].resolve(PRESET="ci", DEVICE="cuda")


@pytest.mark.parametrize("bad", ["gpu", 1, "cuda:"])
def test_a_malformed_device_names_the_forms(bad):
    with pytest.raises(ValueError, match=r"DEVICE=.* is not allowed: DEVICE must be one of \['auto', 'cpu', 'cuda', 'cuda:N', 'mps'\]"):
        markov_cores.PARAMS.resolve(PRESET="ci", DEVICE=bad)


def test_stored_cpu_runs_keep_their_keys():
    for preset in ("book", "paper"):
        auto, cpu = modadd.PARAMS.resolve(PRESET=preset), modadd.PARAMS.resolve(PRESET=preset, DEVICE="cpu")
        assert "DEVICE" not in modadd.run_knob_values(auto) and run_hash(auto) == run_hash(cpu)
        g_auto = grokking_scaling_law.PARAMS.resolve(PRESET=preset)
        assert "DEVICE" not in grokking_scaling_law.artifact_key(g_auto)
        assert all("device" not in job.kwargs for job in grok_jobs(g_auto))


def test_the_loop_trainer_refuses_a_gpu_but_runs_on_the_cpu_under_auto(monkeypatch):
    cfg = modadd.PARAMS.resolve(PRESET="ci", TRAINER="loop")
    assert modadd.train_device(cfg) == torch.device("cpu")
    monkeypatch.setattr(modadd, "check_device", lambda name, value: value)  # as on a machine that has the GPU
    with pytest.raises(ValueError, match="DEVICE='cuda' is not allowed with TRAINER='loop': the loop trainer runs on the CPU"):
        modadd.PARAMS.resolve(PRESET="ci", TRAINER="loop", DEVICE="cuda")


def test_a_gpu_run_is_keyed_by_its_device_kind(monkeypatch):
    from ace_helpers.chapters.grokking_scaling_law import jobs

    monkeypatch.setattr(jobs, "device_kind", lambda device: "cuda")
    cfg = grokking_scaling_law.PARAMS.resolve(PRESET="ci")
    assert all(job.kwargs["device"] == "cuda" for job in jobs.grok_jobs(cfg))
    monkeypatch.setattr(modadd, "train_device", lambda cfg: torch.device("cuda"))
    assert modadd.run_knob_values(modadd.PARAMS.resolve(PRESET="ci"))["DEVICE"] == "cuda"
