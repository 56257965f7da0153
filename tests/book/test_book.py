"""The book's wiring: every chapter is paired, executed from its current source, listed in the TOC."""

import re
from pathlib import Path

import nbformat
import pytest
import yaml

from ace_helpers.repro import runbook

ROOT = Path(__file__).resolve().parents[2]
SOURCES = runbook.notebook_sources(ROOT)


def test_cache_key_tracks_source_and_preset():
    assert runbook.cache_key("a", "book") == runbook.cache_key("a", "book")
    assert runbook.cache_key("a", "book") != runbook.cache_key("b", "book")
    assert runbook.cache_key("a", "book") != runbook.cache_key("a", "ci")


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_chapter_is_executed_from_its_current_source(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{py.name} has no paired notebook: run jupytext --to ipynb and make notebooks"
    nb = nbformat.read(ipynb, as_version=4)
    meta = nb.metadata.get("ace_book", {})
    assert meta.get("preset") in ("book", "paper"), f"{ipynb.name} was not executed at the book preset"
    assert meta.get("key") == runbook.cache_key(py.read_text(), meta["preset"]), (
        f"{ipynb.name} is stale: its source changed since it was executed (make notebooks)"
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and "parameters" in code[0].metadata.get("tags", []), "first code cell must be tagged parameters"
    assert all(c.get("outputs") is not None for c in code)
    errors = [o for c in code for o in c["outputs"] if o.get("output_type") == "error"]
    assert not errors, f"{ipynb.name} was committed with an error output"


def test_every_chapter_is_in_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {ch["file"] for part in toc["parts"] for ch in part["chapters"]}
    for py in SOURCES:
        assert f"notebooks/{py.stem}" in files, f"{py.stem} is missing from _toc.yml"


def _chapter_module(py: Path):
    import importlib

    return importlib.import_module(f"ace_helpers.chapters.{py.stem.split('_', 1)[1]}")


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_parameters_cell_declares_exactly_the_chapters_knobs(py, tmp_path):
    """papermill sees every knob (``--help-notebook`` lists it), and the cell matches the chapter's PARAMS."""
    import jupytext
    import papermill

    chapter = _chapter_module(py).PARAMS
    assert chapter.notebook == py.stem, f"{py.stem}'s chapter module names notebook {chapter.notebook!r}"
    path = tmp_path / f"{py.stem}.ipynb"
    nbformat.write(jupytext.reads(py.read_text(), fmt="py:percent"), path)
    inferred = papermill.inspect_notebook(str(path))
    assert set(inferred) == {*chapter.knobs, "PRESET", "OUTPUT_DIR"}, (
        f"{py.name}: papermill infers {sorted(inferred)}; the chapter's knobs are {sorted(chapter.knobs)} + PRESET, "
        "OUTPUT_DIR (a parameter whose comment papermill cannot parse is dropped: avoid '=' in the comment)"
    )
    assert all(p["default"] == "None" and p["help"] for p in inferred.values()), "every knob: None plus a one-line comment"


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_jupytext_source_carries_no_execution_metadata(py):
    header = py.read_text().split("# ---", 2)[1]
    assert "papermill" not in header and "execution" not in header, f"{py.name}'s header changes at every run"


INTERNAL = re.compile(r"spec §|spec's|appendix b|must reach|issue [0-9]", re.IGNORECASE)


def test_reader_facing_text_cites_the_paper_not_internal_documents():
    """Chapters, book pages, the README and the library cite the paper, its code release or our own
    measurements; never a reproduction spec, an appendix of one, a target list or an issue."""
    files = [*ROOT.glob("notebooks/*.py"), *ROOT.glob("book/*.md"), ROOT / "README.md", *ROOT.glob("ace_helpers/**/*.py")]
    hits = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
            for n, line in enumerate(f.read_text().splitlines(), 1) if INTERNAL.search(line)]  # fmt: skip
    assert not hits, "internal references in reader-facing text:\n" + "\n".join(hits)
    assert INTERNAL.search("as the Must reach list says")  # the pattern itself can fail


def _fake_chapters(tmp_path, stems):
    return [tmp_path / f"{s}.py" for s in stems]


def test_parallel_runbook_waits_for_the_chapters_a_notebook_reads(tmp_path):
    """Two at once: chapter 3 starts only after chapter 2 has finished; independent ones overlap."""
    import threading
    import time

    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def run(py):
        with lock:
            events.append(("start", py.stem))
        time.sleep(0.3 if py.stem.startswith("02") else 0.05)
        with lock:
            events.append(("end", py.stem))

    todo = _fake_chapters(tmp_path, ["01_a", "02_modadd_grokking", "03_core_inflation", "05_b"])
    assert runbook.run_all(todo, "ci", 2, run) == []
    assert events.index(("end", "02_modadd_grokking")) < events.index(("start", "03_core_inflation"))
    starts = [e for e in events[:2]]
    assert all(kind == "start" for kind, _ in starts)  # two ran at once from the start
    assert {s for k, s in events if k == "end"} == {py.stem for py in todo}


def test_parallel_runbook_starts_the_longest_chain_first(tmp_path, monkeypatch):
    """Chapter 2 is quick when it loads its stored run, but chapters 3 and 4 wait for it: it goes first."""
    walls = {"01_a": 300.0, "02_modadd_grokking": 10.0, "03_core_inflation": 10.0, "04_grokking_scaling_law": 500.0}
    monkeypatch.setattr(runbook, "last_wall", lambda py: walls[py.stem])
    order: list[str] = []
    runbook.run_all(_fake_chapters(tmp_path, list(walls)), "ci", 1, lambda py: order.append(py.stem))
    assert order == ["02_modadd_grokking", "04_grokking_scaling_law", "01_a", "03_core_inflation"]


def test_parallel_runbook_skips_what_waits_for_a_failed_chapter(tmp_path):
    def run(py):
        if py.stem.startswith("02"):
            raise RuntimeError("boom")

    todo = _fake_chapters(tmp_path, ["02_modadd_grokking", "03_core_inflation", "04_grokking_scaling_law", "05_b"])
    assert sorted(runbook.run_all(todo, "ci", 2, run)) == ["02_modadd_grokking", "03_core_inflation", "04_grokking_scaling_law"]


def test_jobs_share_the_cores_unless_torch_threads_is_set(monkeypatch):
    """--jobs N gives every kernel cores // N torch threads (at least 1); TORCH_THREADS wins."""
    seen = {}

    def fake_run_all(todo, preset, jobs):
        seen.update(threads=__import__("os").environ.get("TORCH_THREADS"), jobs=jobs, n=len(todo))
        return []

    monkeypatch.setattr(runbook, "run_all", fake_run_all)
    monkeypatch.setattr(runbook, "write_execution_table", lambda root: "t")
    monkeypatch.setattr(runbook, "write_scorecard", lambda root: "s")
    monkeypatch.setattr(runbook, "cpu_cores", lambda: 8)
    monkeypatch.delenv("TORCH_THREADS", raising=False)
    monkeypatch.setenv("ACE_PRESET", "ci")
    four = ["--only", "00_ace_planted_system", "01_markov_cores", "02_modadd_grokking", "03_core_inflation"]
    assert runbook.main(["--preset", "ci", "--force", "--jobs", "4", *four]) == 0
    assert seen == {"threads": "2", "jobs": 4, "n": 4}
    monkeypatch.setenv("TORCH_THREADS", "3")
    runbook.main(["--preset", "ci", "--force", "--jobs", "4", *four])
    assert seen["threads"] == "3"
    monkeypatch.delenv("TORCH_THREADS")
    monkeypatch.setattr(runbook, "cpu_cores", lambda: 2)
    runbook.main(["--preset", "ci", "--force", "--jobs", "4", "--only", "00_ace_planted_system"])
    assert seen["jobs"] == 1 and seen["threads"] is None  # one notebook to run: it gets every core
    runbook.main(["--preset", "ci", "--force", "--jobs", "4", "--only", "00_ace_planted_system", "01_markov_cores", "02_modadd_grokking"])
    assert seen["jobs"] == 2 and seen["threads"] == "1"  # never more notebooks than cores
    with pytest.raises(ValueError, match="--jobs"):
        runbook.main(["--preset", "ci", "--jobs", "0"])


def test_a_misspelt_papermill_parameter_stops_the_notebook(tmp_path):
    """papermill only warns about a parameter the notebook does not declare; the chapter refuses it
    in its validation cell, naming it and the knob meant, before any compute."""
    import papermill

    src = ROOT / "notebooks" / "00_ace_planted_system.ipynb"
    with pytest.raises(papermill.PapermillExecutionError, match="DIMS: no such knob; did you mean DIM"):
        papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"), parameters={"DIMS": 32, "PRESET": "ci",
                                   "OUTPUT_DIR": str(tmp_path / "results")}, cwd=str(src.parent), progress_bar=False)
    # a lower-case name (`-p dim 32`) used to run at the preset's value: it is refused by name too
    with pytest.raises(papermill.PapermillExecutionError, match="dim: no such knob; did you mean DIM"):
        papermill.execute_notebook(str(src), str(tmp_path / "out2.ipynb"), parameters={"dim": 32, "PRESET": "ci",
                                   "OUTPUT_DIR": str(tmp_path / "results")}, cwd=str(src.parent), progress_bar=False)
