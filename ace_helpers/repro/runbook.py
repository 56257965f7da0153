"""Execute the book's notebooks at a preset, cached by notebook source; install offline MathJax.

``python -m ace_helpers.runbook --preset book`` re-executes (papermill, in a fresh kernel, with
``ACE_PRESET`` set) every ``notebooks/NN_*.py`` whose source or preset changed since its paired
``.ipynb`` was last executed, writes the executed notebook atomically with an ``ace_book`` metadata
block (cache key, preset, wall time, date, versions), and regenerates the execution-time table
``book/execution_times.md`` that the reproducibility page includes.  ``--force`` re-executes all.

At the ``book`` preset each executed chapter's ``results.json`` (numbers, parameters and claim
records) is stored as ``book/results/<notebook>.json`` (committed), and the scorecard table
``book/scorecard_table.md`` is rebuilt from those files: the book's verdicts, checked by the
tests without re-running anything.

The cache key covers the notebook's own source and the preset, like jupyter-cache; a change
inside ``ace_helpers`` alone does not invalidate it (use ``--force`` after such changes).

``--jobs N`` executes up to N notebooks at once, each kernel with ``cores // N`` torch threads
(the thread budget; ``TORCH_THREADS`` overrides it), longest chain of last wall times first; a
chapter that reads what another stores (:data:`AFTER`) starts when that one has finished.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from ace_helpers.method.checks import check_choice, check_int
from ace_helpers.repro import open_verdicts
from ace_helpers.repro.artifacts import atomic_write_bytes, default_output_dir, project_root, write_json
from ace_helpers.repro.coverage import coverage_markdown
from ace_helpers.repro.kernels import apply
from ace_helpers.repro.machine import versions
from ace_helpers.repro.params import PRESET_NAMES
from ace_helpers.repro.scorecard import findings_markdown, scorecard_markdown, scorecard_rows, untested_records
from ace_helpers.repro.tables import markdown_table
from ace_helpers.repro.thread_pools import cpu_cores, thread_budget

#: Chapters that read what an earlier chapter stores, so run after it: chapter 3 analyses chapter
#: 2's training run, chapter 4 prints chapter 3's redundancy from that run.
AFTER: dict[str, tuple[str, ...]] = {
    "03_core_inflation": ("02_modadd_grokking",),
    "04_grokking_scaling_law": ("02_modadd_grokking",),
}


def cache_key(source: str, preset: str) -> str:
    """sha256 of a notebook's jupytext source and the preset it runs at."""
    return hashlib.sha256(f"{preset}\n{source}".encode()).hexdigest()


def notebook_sources(root: Path) -> list[Path]:
    """The chapter sources ``notebooks/NN_*.py``, in chapter order."""
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.py"))


def stored_key(ipynb: Path) -> str | None:
    """The cache key recorded in an executed notebook, if any."""
    import nbformat  # load time: a heavy import, done on first use

    if not ipynb.exists():
        return None
    return nbformat.read(ipynb, as_version=4).metadata.get("ace_book", {}).get("key")


def run_source(py: Path, parameters: Mapping[str, Any] | None = None) -> tuple[Any, float]:
    """Execute the jupytext source ``py`` in a fresh kernel (papermill, in ``py``'s folder) with
    ``parameters`` injected; returns the executed notebook (nbformat) and the wall time in seconds.

    The kernel starts under the kernel setting asked for (:func:`ace_helpers.repro.kernels.apply`: the
    reproducible kernels unless ``ACE_KERNELS=native``)."""
    import jupytext  # load time: a heavy import, done on first use
    import nbformat  # load time: a heavy import, done on first use
    import papermill  # load time: a heavy import, done on first use

    apply()  # in this process's environment, which every kernel started from here inherits

    nb = jupytext.reads(py.read_text(), fmt="py:percent")
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.ipynb", Path(tmp) / "out.ipynb"
        nbformat.write(nb, src)
        start = time.perf_counter()
        papermill.execute_notebook(
            str(src), str(dst), parameters=dict(parameters or {}), cwd=str(py.parent), kernel_name="python3", progress_bar=False
        )
        wall = time.perf_counter() - start
        return nbformat.read(dst, as_version=4), wall


def execute(py: Path, preset: str) -> float:
    """Execute ``py`` at ``preset`` into its paired ``.ipynb``; returns the wall time in seconds.

    The kernel reads the preset from ``$ACE_PRESET``, which is set here and left set, so notebooks
    executed at once (all at one preset, :func:`run_all`) never see another value.
    """
    import nbformat  # load time: a heavy import, done on first use

    source = py.read_text()
    os.environ["ACE_PRESET"] = preset
    out, wall = run_source(py)
    out.metadata["ace_book"] = {
        "key": cache_key(source, preset),
        "preset": preset,
        "wall_s": round(wall, 1),
        "executed": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "versions": versions(),
    }
    out.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    atomic_write_bytes(py.with_suffix(".ipynb"), nbformat.writes(out).encode())
    return wall


def write_execution_table(root: Path) -> Path:
    """Regenerate ``book/execution_times.md`` from the notebooks' ``ace_book`` metadata."""
    import nbformat  # load time: a heavy import, done on first use

    rows = []
    for py in notebook_sources(root):
        ipynb = py.with_suffix(".ipynb")
        if not ipynb.exists():
            continue
        meta = nbformat.read(ipynb, as_version=4).metadata.get("ace_book", {})
        v = meta.get("versions", {})
        rows.append(
            (
                f"`{py.stem}`",
                meta.get("preset", "?"),
                meta.get("wall_s", "?"),
                meta.get("executed", "?"),
                v.get("torch", "?"),
                v.get("nnsight", "?"),
            )
        )
    header = ("notebook", "preset", "wall time (s)", "executed", "torch", "nnsight")
    path = root / "book" / "execution_times.md"
    atomic_write_bytes(path, (markdown_table(header, rows) + "\n").encode())
    return path


#: Where the records of the paper's claims that no chapter tests are stored (beside the chapters' results).
UNTESTED_RESULTS = Path("book", "results", "untested", "paper_claims.json")


def store_book_results(root: Path, stem: str) -> Path:
    """Copy the ``results.json`` a ``book``-preset run of ``stem`` just wrote to ``book/results/<stem>.json``."""

    source = default_output_dir(stem) / "results.json"
    if not source.is_file():
        raise SystemExit(f"{stem} did not write {source}: its last cell must call artifacts.write_results")
    return write_json(root / "book" / "results" / f"{stem}.json", json.loads(source.read_text()))


def stored_book_results(root: Path) -> dict[str, dict]:
    """The stored ``book``-preset results, ``{notebook stem: results.json contents}``."""

    return {p.stem: json.loads(p.read_text()) for p in sorted((root / "book" / "results").glob("*.json"))}


def write_scorecard(root: Path) -> Path:
    """Regenerate ``book/scorecard_table.md`` (included by the scorecard page), ``book/findings_table.md`` (the
    landing page's), ``book/coverage_table.md`` and ``book/open_verdicts_table.md`` (the reproducibility page's) from
    ``book/results/``, and the
    records of the paper's claims that no chapter tests, ``book/results/untested/paper_claims.json``."""

    rows = scorecard_rows(stored_book_results(root))
    untested = untested_records(rows)
    write_json(root / UNTESTED_RESULTS, {"claims": untested})
    path = root / "book" / "scorecard_table.md"
    atomic_write_bytes(path, scorecard_markdown(rows + untested).encode())
    atomic_write_bytes(root / "book" / "findings_table.md", findings_markdown(rows + untested).encode())
    atomic_write_bytes(root / "book" / "coverage_table.md", coverage_markdown(rows).encode())
    atomic_write_bytes(root / "book" / "open_verdicts_table.md", open_verdicts.table(rows).encode())
    return path


def install_mathjax(dest: Path) -> Path:
    """Copy MathJax 3 (es5 build) from the installed django-static-mathjax wheel into ``dest``."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("MathJax files not found: pip install django-static-mathjax==3.2.2.1 (see requirements.txt)")
    src = Path(spec.submodule_search_locations[0]) / "static" / "mathjax" / "es5"
    if not (src / "tex-mml-chtml.js").is_file():
        raise SystemExit(f"{src} does not contain tex-mml-chtml.js; reinstall django-static-mathjax")
    if not (dest / "tex-mml-chtml.js").is_file():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        os.replace(tmp, dest)
    return dest


def last_wall(py: Path) -> float:
    """The wall time (s) recorded by ``py``'s last execution, 0 when it has none."""
    import nbformat  # load time: a heavy import, done on first use

    ipynb = py.with_suffix(".ipynb")
    if not ipynb.exists():
        return 0.0
    return float(nbformat.read(ipynb, as_version=4).metadata.get("ace_book", {}).get("wall_s", 0.0))


def run_all(todo: list[Path], preset: str, jobs: int, run: Callable[[Path], Any] | None = None) -> list[str]:
    """Execute ``todo`` with up to ``jobs`` at once (``run(py)``, default :func:`execute` plus storing the
    book results); a notebook waits for its :data:`AFTER` chapters in ``todo``; of the ready ones, the one
    with the longest chain of last wall times (:func:`last_wall`: its own plus those waiting for it) starts
    first.  Returns the stems that failed or were skipped because one they wait for failed."""

    def default(py: Path) -> None:
        print(f"{py.stem}: executing at preset {preset} ...", flush=True)
        print(f"{py.stem}: done in {execute(py, preset):.0f} s", flush=True)
        if preset == "book":
            print(f"{py.stem}: stored {store_book_results(project_root(), py.stem).relative_to(project_root())}", flush=True)

    run = run or default
    stems = {py.stem for py in todo}
    waiting = {py.stem: {d for d in AFTER.get(py.stem, ()) if d in stems} for py in todo}
    walls = {py.stem: last_wall(py) for py in todo}

    def path(stem: str) -> float:  # its own time plus the longest chain of notebooks that wait for it
        return walls[stem] + max((path(s) for s, deps in waiting.items() if stem in deps), default=0.0)

    pending = sorted(todo, key=lambda py: -path(py.stem))
    done: set[str] = set()
    failed: list[str] = []
    running: dict[Any, str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while pending or running:
            for py in [py for py in pending if waiting[py.stem] & set(failed)]:
                print(f"{py.stem}: skipped ({', '.join(sorted(waiting[py.stem] & set(failed)))} failed)", flush=True)
                failed.append(py.stem)
                pending.remove(py)
            for py in [py for py in pending if waiting[py.stem] <= done][: jobs - len(running)]:
                running[pool.submit(run, py)] = py.stem
                pending.remove(py)
            if not running:
                continue
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                stem = running.pop(future)
                if future.exception() is not None:
                    print(f"{stem}: FAILED: {future.exception()}", flush=True)
                    failed.append(stem)
                else:
                    done.add(stem)
    return failed


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="book", help="ci | book | paper (default: book)")
    parser.add_argument("--force", action="store_true", help="re-execute even when the cache key matches")
    parser.add_argument("--only", nargs="*", default=None, help="notebook stems to consider (default: all)")
    parser.add_argument("--install-mathjax", type=Path, default=None, metavar="DEST")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="notebooks executed at once, each with cores // JOBS torch threads unless TORCH_THREADS is set (default: 1)",
    )
    args = parser.parse_args(argv)
    root = project_root()
    if args.install_mathjax is not None:
        print(f"MathJax in {install_mathjax(args.install_mathjax)}")
        return 0
    check_choice("--preset", args.preset, PRESET_NAMES)
    jobs, cores = check_int("--jobs", args.jobs, low=1, high=64), cpu_cores()
    if jobs > cores:  # the thread budget: notebooks × torch threads ≤ cores
        print(f"--jobs {jobs} is more than this machine's {cores} cores: {cores} at once", flush=True)
        jobs = cores
    todo = []
    for py in notebook_sources(root):
        if args.only is not None and py.stem not in args.only:
            continue
        key = cache_key(py.read_text(), args.preset)
        if not args.force and stored_key(py.with_suffix(".ipynb")) == key:
            print(f"{py.stem}: up to date ({args.preset})")
            continue
        todo.append(py)
    jobs = max(1, min(jobs, len(todo)))  # one stale notebook gets every core
    if jobs > 1 and not os.environ.get("TORCH_THREADS"):
        os.environ["TORCH_THREADS"] = str(thread_budget(jobs, cores))  # inherited by every kernel
        print(f"{jobs} notebooks at once, {os.environ['TORCH_THREADS']} torch thread(s) each", flush=True)
    failed = run_all(todo, args.preset, jobs)
    print(f"wrote {write_execution_table(root)}")
    print(f"wrote {write_scorecard(root)}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
