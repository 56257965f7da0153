"""Chapter 4's pipeline: the ω and p sweeps of one run (:class:`Sweeps`: read from the stored artifact or the sweep
store, else trained), the margin-ODE and redundancy runs, and the fits over them (:func:`run` returns a
:class:`ScalingRun`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ace_helpers.chapters.grokking_scaling_law.claims import SweepFits, fit_sweeps
from ace_helpers.chapters.grokking_scaling_law.jobs import default_store, grok_jobs
from ace_helpers.chapters.grokking_scaling_law.knobs import NOTEBOOK
from ace_helpers.chapters.grokking_scaling_law.margin_ode import MarginTrace, OdeFit, fit_margin_ode, trace_margins
from ace_helpers.chapters.grokking_scaling_law.redundancy import RedundancyRun, redundancy_runs
from ace_helpers.chapters.grokking_scaling_law.runs import GrokRecord, records_from_dicts, run_omega_sweep, run_p_sweep
from ace_helpers.method.devices import device_key, device_kind, resolve_device
from ace_helpers.repro.artifacts import load_artifact, project_root, save_artifact
from ace_helpers.repro.params import Params
from ace_helpers.repro.sweeps import stored

ARTIFACT_NAME = "sweeps"


def artifact_dir() -> Path:
    """Where the paper-preset sweeps are stored: ``book/artifacts/04_grokking_scaling_law``."""
    return project_root() / "book" / "artifacts" / NOTEBOOK


def artifact_key(cfg: Params) -> dict:
    """The artifact's parameters: every knob of the run (not ``PRESET`` or ``OUTPUT_DIR``) but ``DEVICE``, whose kind
    is recorded only when it is not the CPU (the stored CPU sweeps keep their keys; a GPU sweep is stored as another
    sample of the same runs)."""
    knobs = cfg.knob_values()
    return knobs | device_key(device_kind(knobs.pop("DEVICE")))


class Sweeps:
    """The ω and p sweeps of one run: read from the stored artifact when its knobs match, else
    from the sweep store when it holds every run, else trained.

    ``Sweeps(cfg)`` looks the artifact up, then the store that ``python -m
    ace_helpers.chapters.grokking_scaling_law.jobs 04_grokking_scaling_law --preset PRESET`` fills (one checksummed
    artifact per run, keyed by its parameters: ``book/artifacts/<notebook>_sweep/<preset>``);
    :meth:`omega` and :meth:`p` return each sweep's records (timing what they train); :meth:`save`
    stores a paper-preset run's freshly trained sweeps as the artifact (other presets store nothing).
    """

    def __init__(self, cfg: Params, directory: str | Path | None = None, store: str | Path | None = None) -> None:
        self.cfg = cfg
        self.directory = Path(directory) if directory is not None else artifact_dir()
        self.stored = load_artifact(self.directory, ARTIFACT_NAME, artifact_key(cfg))
        self.swept: list[GrokRecord] | None = None
        self.store_count = (0, 0)
        if self.stored is None:
            self.swept = self._from_store(store)
        self.omega_runs: list[GrokRecord] | None = None
        self.p_runs: list[GrokRecord] | None = None
        self.omega_wall_s = 0.0
        self.p_wall_s = 0.0

    def _from_store(self, store: str | Path | None) -> list[GrokRecord] | None:
        """Every run of this configuration from the sweep store, or None when any is missing."""

        tasks = grok_jobs(self.cfg)
        folder = Path(store) if store is not None else default_store(NOTEBOOK, self.cfg["PRESET"])
        found = [stored(t, folder) for t in tasks] if folder.is_dir() else []
        self.store_count = (sum(f is not None for f in found), len(tasks))
        return records_from_dicts(found) if found and all(f is not None for f in found) else None

    @property
    def from_artifact(self) -> bool:
        """Whether the records come from the stored artifact or the sweep store (nothing is trained)."""
        return self.stored is not None or self.swept is not None

    def describe(self) -> str:
        """One line: where the records come from."""
        if self.stored:
            return "using the stored artifact (params match)"
        done, total = self.store_count
        if self.swept is not None:
            return f"using the sweep store: all {total} runs of these knobs are stored there"
        return f"no matching stored artifact; the sweep store holds {done} of {total} runs of these knobs: training now"

    def _stored(self, sweep: str) -> list[GrokRecord]:
        rows = records_from_dicts(self.stored.data["runs"]) if self.stored else list(self.swept or [])
        return [r for r in rows if r.sweep == sweep]

    def omega(self, progress: bool = False) -> list[GrokRecord]:
        """The ω sweep's records (stored, or trained now)."""
        start = time.perf_counter()
        self.omega_runs = self._stored("omega") if self.from_artifact else run_omega_sweep(self.cfg, progress)
        self.omega_wall_s = time.perf_counter() - start
        return self.omega_runs

    def p(self, progress: bool = False) -> list[GrokRecord]:
        """The p sweep's records (stored, or trained now)."""
        start = time.perf_counter()
        self.p_runs = self._stored("p") if self.from_artifact else run_p_sweep(self.cfg, progress)
        self.p_wall_s = time.perf_counter() - start
        return self.p_runs

    @property
    def runs(self) -> list[GrokRecord]:
        """All records, ω sweep first."""
        if self.omega_runs is None or self.p_runs is None:
            raise RuntimeError("run Sweeps.omega() and Sweeps.p() first")
        return self.omega_runs + self.p_runs

    def save(self) -> Path | None:
        """Store freshly trained paper-preset sweeps as the artifact; returns its manifest path (else None)."""
        if self.cfg["PRESET"] != "paper" or self.from_artifact:
            return None
        return save_artifact(
            self.directory,
            ARTIFACT_NAME,
            params=artifact_key(self.cfg),
            data={"runs": [r.to_dict() for r in self.runs]},
            wall_s=self.omega_wall_s + self.p_wall_s,
        )


@dataclass
class ScalingRun:
    """One run of the chapter: its sweeps (where they came from, their records) and the fits over them."""

    sweeps: Sweeps
    fits: SweepFits
    #: The margin-ODE runs (:func:`trace_margins`) and their fits (:func:`fit_margin_ode`); empty when not made.
    margin_traces: list[MarginTrace] = field(default_factory=list)
    margin: list[OdeFit] = field(default_factory=list)
    #: The redundancy intervention's runs (:func:`redundancy_runs`); empty when not made.
    redundancy: list[RedundancyRun] = field(default_factory=list)

    @property
    def omega_runs(self) -> list[GrokRecord]:
        """The ω sweep's records."""
        return self.sweeps.omega_runs or []

    @property
    def p_runs(self) -> list[GrokRecord]:
        """The p sweep's records."""
        return self.sweeps.p_runs or []


def run(cfg: Params, progress: bool = False) -> ScalingRun:
    """Both sweeps of ``cfg`` (stored, or trained now) and their fits; a paper-preset run stores
    what it trained as the artifact (:meth:`Sweeps.save`)."""
    sweeps = Sweeps(cfg)
    omega_runs, p_runs = sweeps.omega(progress), sweeps.p(progress)
    sweeps.save()
    device = resolve_device(cfg["DEVICE"])
    traces = trace_margins(device=device)  # the margin ODE's four small runs (the same at every preset; minutes)
    redundancy = redundancy_runs(device=device)  # the redundancy intervention's twelve small runs (every preset)
    return ScalingRun(
        sweeps, fit_sweeps(omega_runs, p_runs, cfg["OMEGA_P"]), traces, [fit_margin_ode(t) for t in traces], redundancy
    )
