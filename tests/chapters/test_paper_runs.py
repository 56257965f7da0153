"""The stored paper runs load from a fresh clone: checksums, parameters and shapes verified, nothing retrained."""

from __future__ import annotations

from ace_helpers.chapters.modadd import config, ensemble_run
from ace_helpers.chapters.modadd.keys import run_hash


def test_the_committed_paper_run_is_intact_and_resumable() -> None:
    """The paper run of chapters 2-3 on the ensemble (3 models, bf16) is committed as resume snapshots
    until it finishes, then as one artifact per model: either way it loads, checksums and keys verified."""
    from ace_helpers.chapters.modadd.keys import artifact_dir, model_key
    from ace_helpers.repro.artifacts import load_artifact, project_root

    cfg = config.PARAMS.resolve(PRESET="paper", TRAINER="ensemble", PRECISION="bf16")
    models = list(range(cfg["N_MODELS"]))
    finished = [load_artifact(artifact_dir(cfg), f"run_{run_hash(cfg)}_m{m}", model_key(cfg, m)) for m in models]
    if all(a is not None for a in finished):
        assert all(a.arrays["wd/epochs"][-1] == cfg["EPOCHS"] for a in finished)
        return
    folder = project_root() / "book" / "artifacts" / "modadd_grokking_snapshots"
    found = ensemble_run.load_snapshot(folder, ensemble_run.ensemble_snapshot_name(cfg, models),
                                       ensemble_run.ensemble_snapshot_key(cfg, models), log=print)  # fmt: skip
    assert found is not None, f"neither the finished paper run nor an intact snapshot of it is in {folder}"
    data, arrays = found
    assert cfg["FORK_EPOCH"] < data["epoch"] < cfg["EPOCHS"] and data["epoch"] % 500 == 0
    assert arrays["model/tok_emb"].shape == (2 * len(models), cfg["P"], 128)  # both arms of every model
    assert max(f.stat().st_size for f in folder.iterdir()) < 10 * 2**20  # the repository stays small


def test_the_stored_paper_sweep_runs_are_intact_and_consistent() -> None:
    """Every run stored for chapter 4's paper protocol is a task of that protocol, loads with its checksums
    and parameters, and its grokking times add up (τ_grok = τ_test − τ_mem; trained to τ_test + STOP_MARGIN)."""
    from ace_helpers.chapters import grokking_scaling_law as gsl
    from ace_helpers.chapters.grokking_scaling_law.jobs import default_store, grok_jobs
    from ace_helpers.repro.sweeps import stored

    cfg = gsl.PARAMS.resolve(PRESET="paper")
    tasks = {t.name: t for t in grok_jobs(cfg)}
    store = default_store(gsl.NOTEBOOK, "paper")
    names = sorted(p.name.removesuffix(".manifest.json") for p in store.glob("*.manifest.json"))
    assert names, f"no stored run of the paper sweep in {store}"
    for name in names:
        assert name in tasks, f"{name} in {store} is not a run of the paper preset's sweeps"
        found = stored(tasks[name], store)
        assert found is not None, f"{name}: checksum or parameters do not match"
        rec = gsl.GrokRecord(**found)
        assert (rec.sweep, rec.p, rec.omega, rec.seed) == tuple(tasks[name].kwargs[k] for k in ("sweep", "p", "omega", "seed"))
        if not rec.censored:
            assert rec.tau_grok == rec.tau_test - rec.tau_mem and rec.steps_trained == rec.tau_test + cfg["STOP_MARGIN"]


def test_chapter_4_shows_every_stored_paper_sweep_run() -> None:
    """Chapter 4's committed results hold exactly the runs of the paper sweep store (else it is stale)."""
    import json

    from ace_helpers.chapters import grokking_scaling_law as gsl
    from ace_helpers.repro.artifacts import project_root

    stored = gsl.stored_paper_sweeps(gsl.PARAMS.resolve(PRESET="book"))
    result = json.loads((project_root() / "book" / "results" / f"{gsl.NOTEBOOK}.json").read_text())
    shown = (result.get("paper_settings") or {}).get("runs", [])
    in_store = [] if stored is None else [r.to_dict() for s in stored.runs for r in stored.runs[s]]
    assert shown == in_store, (f"chapter 4 shows {len(shown)} paper-settings runs, the store holds {len(in_store)}: "
                               "re-run the chapter (python -m ace_helpers.runbook --preset book --only 04_grokking_scaling_law)")  # fmt: skip


def test_the_paper_runs_table_is_what_the_stored_artifacts_give() -> None:
    """book/paper_runs_table.md (the reproducibility page's table of paper runs) is regenerated, not typed."""
    from ace_helpers.chapters.paper_runs import paper_runs_markdown
    from ace_helpers.repro.artifacts import project_root

    committed = (project_root() / "book" / "paper_runs_table.md").read_text()
    assert committed == paper_runs_markdown(), "book/paper_runs_table.md is stale: python -m ace_helpers.chapters.paper_runs"
