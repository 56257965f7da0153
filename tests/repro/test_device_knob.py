"""The DEVICE knob of every chapter that trains models: refused when absent, never another experiment, and keys
of stored CPU runs unchanged by it."""

from __future__ import annotations

import pytest
import torch

from ace_helpers.chapters import ace_vs_alternatives, core_stitching, grokking_scaling_law, markov_cores
from ace_helpers.chapters.grokking_scaling_law.jobs import grok_jobs
from ace_helpers.chapters.modadd import config as modadd
from ace_helpers.chapters.modadd.keys import run_hash
from ace_helpers.method.devices import describe_device

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
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # "auto" would name the GPU ...
    cfg = modadd.PARAMS.resolve(PRESET="ci", TRAINER="loop")
    assert cfg["DEVICE"] == "cpu" and describe_device(cfg["DEVICE"]).startswith("DEVICE='cpu': cpu (the CPU")  # ... not here
    assert run_hash(cfg) == run_hash(modadd.PARAMS.resolve(PRESET="ci", TRAINER="loop", DEVICE="cpu"))
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


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_precision_auto_is_fp32_on_the_cpu_and_the_same_experiment(name):
    params = CHAPTERS[name]
    for preset in ("ci", "book", "paper"):
        assert params.presets[preset]["PRECISION"] == "auto"
    auto, fp32 = params.resolve(PRESET="ci", DEVICE="cpu"), params.resolve(PRESET="ci", DEVICE="cpu", PRECISION="fp32")
    assert auto["PRECISION"] == "fp32" and auto.is_preset_run() and fp32.is_preset_run()
    assert "PRECISION" not in fp32.changed_knobs()


def test_precision_auto_keeps_the_stored_cpu_runs_keys():
    for preset in ("book", "paper"):
        auto, fp32 = modadd.PARAMS.resolve(PRESET=preset), modadd.PARAMS.resolve(PRESET=preset, PRECISION="fp32")
        assert "PRECISION" not in modadd.run_knob_values(auto) and run_hash(auto) == run_hash(fp32)
        g_auto = grokking_scaling_law.PARAMS.resolve(PRESET=preset)
        assert all(job.kwargs["precision"] == "fp32" for job in grok_jobs(g_auto))


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_precision_auto_is_bf16_where_the_device_has_native_bf16(name, monkeypatch):
    from ace_helpers.toys import precision

    seen: list[torch.device] = []
    monkeypatch.setattr(precision, "native_bf16", lambda device: seen.append(device) or True)  # as on an H100
    cfg = CHAPTERS[name].resolve(PRESET="ci")
    assert cfg["PRECISION"] == "bf16" and seen and all(isinstance(d, torch.device) for d in seen)
    assert cfg.is_preset_run()  # the preset itself resolves the same way there
    fp32 = CHAPTERS[name].resolve(PRESET="ci", PRECISION="fp32")
    assert fp32["PRECISION"] == "fp32" and fp32.changed_knobs() == {"PRECISION": "fp32"}


def test_precision_auto_stays_fp32_for_the_loop_trainer_and_keys_a_bf16_run(monkeypatch):
    from ace_helpers.toys import precision

    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    assert modadd.PARAMS.resolve(PRESET="ci", TRAINER="loop")["PRECISION"] == "fp32"  # the loop trainer has no bf16
    bf16 = modadd.PARAMS.resolve(PRESET="ci")
    assert modadd.run_knob_values(bf16)["PRECISION"] == "bf16"  # stored beside the fp32 runs, not over them
    assert all(job.kwargs["precision"] == "bf16" for job in grok_jobs(grokking_scaling_law.PARAMS.resolve(PRESET="ci")))


@pytest.mark.parametrize("bad", ["fp16", "AUTO ", 16, 0.5])
def test_a_bad_precision_names_the_allowed_values(bad):
    with pytest.raises(ValueError, match=r"PRECISION=.* is not allowed: PRECISION must be one of \['auto', 'fp32', 'bf16'\]"):
        markov_cores.PARAMS.resolve(PRESET="ci", PRECISION=bad)


def test_native_bf16_needs_a_cuda_device_of_capability_8(monkeypatch):
    from ace_helpers.toys import precision

    assert not precision.native_bf16(torch.device("cpu"))  # the CPU keeps fp32 whatever its instructions
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for capability, native in [((7, 5), False), ((8, 0), True), ((9, 0), True)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        assert precision.native_bf16(torch.device("cuda:0")) is native
        assert precision.resolve_precision("PRECISION", "auto", torch.device("cuda:0")) == ("bf16" if native else "fp32")
    assert precision.resolve_precision("PRECISION", "auto", torch.device("cuda:0"), bf16_allowed=False) == "fp32"
    assert "tensor cores" in precision.describe("bf16", torch.device("cuda:0"))
    assert precision.describe("fp32") == precision.describe("fp32", torch.device("cpu"))
