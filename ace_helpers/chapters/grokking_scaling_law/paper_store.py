"""Chapter 4 at the paper's settings: the runs of the paper preset's sweeps stored so far.

The paper's protocol (train fraction 0.5, evaluation every step, 12 seeds, primes to 101) is
trained run by run with ``python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset
paper`` (resumable, on any number of machines); every finished run is a checksummed artifact in
``book/artifacts/04_grokking_scaling_law_sweep/paper``.  :func:`stored_paper_sweeps` reads what
is there (:func:`sweeps_from_runs` rebuilds the same from a ``results.json``), and :func:`paper_claims` checks the chapter's claims on it: a sweep with fewer than
:data:`MIN_SEEDS` seeds at some setting is reported as not tested.  Nothing here trains.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ace_helpers.chapters.grokking_scaling_law.claims import (
    SWEEPS,
    SweepFits,
    fit_claims,
    fit_sweeps,
    untested_sweep,
)
from ace_helpers.chapters.grokking_scaling_law.jobs import default_store, grok_jobs
from ace_helpers.chapters.grokking_scaling_law.knobs import NOTEBOOK, PARAMS
from ace_helpers.chapters.grokking_scaling_law.runs import GrokRecord, records_from_dicts
from ace_helpers.repro.artifacts import load_artifact
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims, not_tested_records
from ace_helpers.repro.scorecard import carry
from ace_helpers.repro.untested import ClaimRow

#: The fewest seeds per setting at which a sweep at the paper's settings is tested (ours).
MIN_SEEDS: dict[str, int] = {"omega": 4, "p": 3}

#: Printed when nothing of the paper preset's sweeps is stored.
NO_PAPER_SWEEPS = (
    "no run of the paper preset's sweeps is stored in book/artifacts/04_grokking_scaling_law_sweep/paper. To add runs: "
    "`python -m ace_helpers.chapters.sweep 04_grokking_scaling_law --preset paper` (resumable; --n-seeds, --sweep)"
)


@dataclass(frozen=True)
class StoredSweeps:
    """The stored runs of the paper preset's sweeps.

    ``cfg``: the paper preset; ``runs``: per sweep (``"omega"``, ``"p"``) the stored records, in
    task order; ``settings``: per sweep every setting (ω, or (ω, p)) of the preset; ``wall_s``:
    the stored runs' training seconds (one torch thread each, so also their CPU-seconds), and
    ``wall_by_sweep`` the same per sweep (where known).
    """

    cfg: Params
    runs: dict[str, list[GrokRecord]]
    settings: dict[str, list[Any]]
    wall_s: float
    wall_by_sweep: dict[str, float] = field(default_factory=dict)

    @property
    def trained(self) -> str:
        """How the runs were trained, as the scorecard shows it (the chapter's ensemble trainer)."""
        return f"ensemble, {self.cfg['PRECISION']}"

    def seeds(self, sweep: str) -> tuple[int, int]:
        """(fewest, most) seeds stored per setting of ``sweep`` (0 where a setting has none)."""
        count = Counter(_setting(r.sweep, r.omega, r.p) for r in self.runs[sweep])
        per = [count.get(s, 0) for s in self.settings[sweep]]
        return (min(per), max(per)) if per else (0, 0)

    def tested(self, sweep: str) -> bool:
        """Whether every setting of ``sweep`` has at least :data:`MIN_SEEDS` stored seeds."""
        return self.seeds(sweep)[0] >= MIN_SEEDS[sweep]

    def coverage(self, sweep: str) -> str:
        """'33 of 84 runs (4–6 of 12 seeds per setting)': how far ``sweep`` has got."""
        lo, hi = self.seeds(sweep)
        total = len(self.settings[sweep]) * self.cfg["N_SEEDS"]
        seeds = f"{lo}" if lo == hi else f"{lo}–{hi}"
        return f"{len(self.runs[sweep])} of {total} runs ({seeds} of {self.cfg['N_SEEDS']} seeds per setting)"

    def describe(self) -> str:
        """One line per sweep: runs stored of the preset's, seeds per setting, and the CPU-hours."""
        parts = [
            f"{sweep} sweep: {self.coverage(sweep)}"
            + ("" if self.tested(sweep) else f" (tested from {MIN_SEEDS[sweep]} seeds on)")
            for sweep in SWEEPS
        ]
        return f"stored runs at the paper's settings: {'; '.join(parts)}; {self.wall_s / 3600:.2f} CPU-hours of training"


def _setting(sweep: str, omega: float, p: int) -> Any:
    """The setting a run belongs to: ω in the ω sweep, (ω, p) in the p sweep."""
    return omega if sweep == "omega" else (omega, p)


def sweeps_from_runs(runs: list[GrokRecord], wall_s: float, wall_by_sweep: dict[str, float] | None = None) -> StoredSweeps:
    """:class:`StoredSweeps` of the paper preset holding ``runs`` (e.g. rebuilt from a chapter's
    ``results.json``), with the preset's settings of each sweep; ``wall_s``: their training seconds."""

    paper = PARAMS.resolve(PRESET="paper")
    settings: dict[str, list[Any]] = {s: [] for s in SWEEPS}
    for task in _tasks(paper):
        kw = task.kwargs
        setting = _setting(kw["sweep"], kw["omega"], kw["p"])
        if setting not in settings[kw["sweep"]]:
            settings[kw["sweep"]].append(setting)
    return StoredSweeps(
        paper, {s: [r for r in runs if r.sweep == s] for s in SWEEPS}, settings, wall_s, dict(wall_by_sweep or {})
    )


def _tasks(paper: Params) -> list[Any]:

    return grok_jobs(paper)


def stored_paper_sweeps(cfg: Params) -> StoredSweeps | None:
    """The paper preset's stored sweep runs, to show beside ``cfg``'s run; trains nothing.

    ``None`` when ``cfg`` is itself the paper preset (its own sweeps are the paper's) or no run
    is stored.  Each run is loaded with its checksums and parameters verified; runs come in task
    order (the ω sweep, then the p sweep).
    """

    if cfg["PRESET"] == "paper":
        return None
    folder = default_store(NOTEBOOK, "paper")
    if not folder.is_dir():
        return None
    runs: list[GrokRecord] = []
    wall = {s: 0.0 for s in SWEEPS}
    for task in _tasks(PARAMS.resolve(PRESET="paper")):
        found = load_artifact(folder, task.name, task.params)
        if found is not None:
            runs += records_from_dicts([found.data])
            wall[task.kwargs["sweep"]] += float(found.manifest.get("wall_s") or 0.0)
    return sweeps_from_runs(runs, sum(wall.values()), wall) if runs else None


def paper_claims(stored: StoredSweeps) -> tuple[Claims, list[ClaimRow], SweepFits]:
    """The chapter's claims on the stored runs at the paper's settings: ``(claims, not tested, fits)``.

    A sweep is checked when :meth:`StoredSweeps.tested`, else its claims are not tested (with
    how many runs are stored).  The rules are the chapter's, with each sweep's stored seeds (the
    fewest per setting) in place of the preset's ``N_SEEDS``.
    """
    fits = fit_sweeps(stored.runs["omega"], stored.runs["p"], stored.cfg["OMEGA_P"])
    present = [s for s in SWEEPS if stored.tested(s)]
    claims = Claims()
    untested: list[ClaimRow] = []
    for sweep in SWEEPS:
        cfg = stored.cfg.replace(N_SEEDS=max(1, stored.seeds(sweep)[0]))  # each sweep's rules name its own seeds
        judged = fit_claims(fits, cfg, sweeps=(sweep,))
        if sweep in present:
            claims.rows += judged.rows
        else:
            lo, _ = stored.seeds(sweep)
            why = (
                f"the paper-settings {sweep} sweep is not stored far enough yet: {len(stored.runs[sweep])} runs, "
                f"{lo} seeds at its least-covered setting (tested from {MIN_SEEDS[sweep]} seeds per setting)"
            )
            untested += untested_sweep(fits, cfg, sweep, why)
        untested += judged.not_tested  # what neither sweep can test (p ≫ p_crit, Ω ∝ 1/ω)
    return claims, untested, fits


def own_as_evidence(records: list[dict[str, Any]], promoted: set[str] | frozenset[str]) -> list[dict[str, Any]]:
    """The run's own claim ``records`` with those of the ``promoted`` paper ids (whose headline the paper-settings
    runs carry) turned into evidence: the replica shown beside the headline, not a headline."""
    return carry(records, [], promoted)[0]


def stored_departures(stored: StoredSweeps, sweeps: tuple[str, ...] = SWEEPS) -> list[str]:
    """How the stored paper-settings runs depart from the paper's protocol: the sweeps with fewer seeds stored
    at some setting than the paper's (``"p sweep: 4–6 of 12 seeds per setting"``); none once complete."""
    out = []
    for sweep in sweeps:
        lo, hi = stored.seeds(sweep)
        if lo < stored.cfg["N_SEEDS"]:
            out.append(f"{sweep} sweep: {lo if lo == hi else f'{lo}–{hi}'} of {stored.cfg['N_SEEDS']} seeds per setting")
    return out


def with_paper_evidence(
    records: list[dict[str, Any]],
    claims: Claims,
    untested: list[ClaimRow],
    section: str,
    trained: str,
    departures: list[str] | tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """The chapter run's claim ``records`` followed by the paper-settings ones (``claims`` and ``untested``
    from :func:`paper_claims`, recorded under ``section``).  The paper-settings runs follow the paper's protocol
    more closely than the chapter's preset (train fraction 0.5, evaluation every step, 12 seeds, primes to 101), so
    for every paper claim they test, their headline row carries the verdict (with the diagnoses that explain it)
    and the chapter run's record of it is the replica shown beside it as evidence (:func:`own_as_evidence`); the
    paper-settings rows of the claims they do not test are evidence.  (This is the rule :meth:`~ace_helpers.repro.report.Claims.records` describes
    for evidence; each id keeps one headline per run, as :func:`~ace_helpers.repro.scorecard.check_records`
    requires.)  ``departures``: how the stored runs depart from the paper's protocol (:func:`stored_departures`)."""
    promoted = {r.id for r in claims.rows if r.headline and r.kind == "paper"}
    kept = own_as_evidence(records, promoted)
    head = claims.records(section, trained, departures=departures)  # headline flags as this run's own
    evidence = []
    for rec, row in zip(head, claims.rows):
        if row.id in promoted or row.explains in promoted:
            evidence.append(rec)  # carries its id's verdict (headline) or explains it (a diagnosis)
        else:
            evidence.append(rec | {"headline": False, "evidence": True})
    rest = not_tested_records(untested, section, trained, evidence=True)
    return kept + evidence + [r | {"run": section, "departures": list(departures)} for r in rest]
