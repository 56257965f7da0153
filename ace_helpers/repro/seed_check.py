"""Seed check: a chapter run at one preset over several seeds, and each claim's verdict on every one.

Identical kernels fix the machine, not the sample: a claim that holds at the preset's own seeds
can fail at the next ones.  This runs each chapter ``n`` times at a preset (run 0 is the preset
itself; run ``k`` shifts every seed knob of :data:`SEED_KNOBS` by ``k`` × :data:`OFFSET`, the data
seeds kept), each in a fresh kernel under the kernel setting in force, and writes one table per
chapter (``OUT/<notebook>.md``): every claim's verdict and measured value on every seed, and on how
many it held; ``OUT/summary.md`` has the claims on each run itself (not on stored runs a chapter
shows beside it), every chapter.  Where a
claim of the ``ci`` run does not hold on every seed, the chapter's ``KNOWN_GAPS`` name it at the
``ci`` preset with the counts measured here (:func:`ace_helpers.repro.known_gaps.seed_sensitive`): it is
printed with its verdict, and the preset's test line does not assert it::

    python -m ace_helpers.kernels -- python -m ace_helpers.seed_check --preset ci --seeds 5 --out seeds/
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ace_helpers.method.checks import check_choice, check_int
from ace_helpers.repro.artifacts import project_root, write_json
from ace_helpers.repro.params import PRESET_NAMES
from ace_helpers.repro.runbook import run_source
from ace_helpers.repro.tables import markdown_table

#: The knobs that seed a chapter's models, prompts and random controls (not its data split).
SEED_KNOBS: dict[str, tuple[str, ...]] = {
    "00_ace_planted_system": ("SEED",),
    "01_markov_cores": ("SEED",),
    "02_modadd_grokking": ("SEED",),
    "03_core_inflation": ("SEED",),
    "04_grokking_scaling_law": ("SEED",),
    "05_llm_agreement": ("SEED",),
    "06_ace_vs_alternatives": ("SEED", "MODADD_SEED"),
    "07_core_stitching": ("SEED", "MODADD_SEED"),
}
#: How far apart the seeds of two runs are (chapters derive their models' seeds as SEED + small offsets).
OFFSET = 10_000


def chapter_module(stem: str) -> Any:
    """The ``ace_helpers.chapters`` module the notebook ``stem`` imports as ``chapter``."""
    source = (project_root() / "notebooks" / f"{stem}.py").read_text()
    match = re.search(r"^from ace_helpers\.chapters import (\w+) as chapter$", source, re.MULTILINE)
    if match is None:
        raise ValueError(f"notebooks/{stem}.py does not import its chapter module as `chapter`")
    return importlib.import_module(f"ace_helpers.chapters.{match.group(1)}")


def seed_knobs(stem: str, preset: str, k: int) -> dict[str, int]:
    """The seed knobs of run ``k`` of chapter ``stem`` at ``preset``: the preset's values + ``k`` × :data:`OFFSET`."""
    check_choice("chapter", stem, tuple(SEED_KNOBS))
    table = chapter_module(stem).PARAMS.presets[preset]
    return {name: int(table[name]) + check_int("k", k, low=0) * OFFSET for name in SEED_KNOBS[stem]}


def run_seeds(stem: str, preset: str, n: int, out: Path) -> list[dict[str, Any]]:
    """Execute chapter ``stem`` at ``preset`` for runs 0..n-1 (:func:`seed_knobs`); returns each run's
    ``{"knobs", "claims", "wall_s"}`` and writes it to ``out/<stem>/seed<k>.json`` as it goes (a run
    already stored there with the same knobs is read, not run again)."""

    py = project_root() / "notebooks" / f"{stem}.py"
    runs = []
    for k in range(n):
        knobs, stored = seed_knobs(stem, preset, k), out / stem / f"seed{k}.json"
        if stored.exists() and json.loads(stored.read_text())["knobs"] == knobs:  # resumable: a finished run is kept
            runs.append(json.loads(stored.read_text()))
            continue
        with tempfile.TemporaryDirectory() as tmp:
            _, wall = run_source(py, {"PRESET": preset, "OUTPUT_DIR": tmp, **knobs})
            results = json.loads((Path(tmp) / "results.json").read_text())
        run = {"knobs": knobs, "claims": results.get("claims", []), "wall_s": round(wall, 1)}
        write_json(stored, run)
        print(
            f"{stem} {knobs}: {sum(c['verdict'] == 'reproduced' for c in run['claims'])} of "
            f"{len(run['claims'])} claims reproduced ({wall:.0f} s)",
            flush=True,
        )
        runs.append(run)
    return runs


def claim_table(runs: Sequence[Mapping[str, Any]], section: str | None = None) -> list[dict[str, Any]]:
    """Per claim (keyed by section and claim text, in first-seen order): its verdict and value on every run,
    and on how many runs it held.  ``section``: keep only that run section (e.g. ``"ci preset"``)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for i, run in enumerate(runs):
        for c in run["claims"]:
            if section is not None and c["section"] != section:
                continue
            row = rows.setdefault(
                (c["section"], c["claim"]),
                {
                    "section": c["section"],
                    "claim": c["claim"],
                    "rule": c.get("rule", ""),
                    "verdicts": [None] * len(runs),
                    "ours": [None] * len(runs),
                },
            )
            row["verdicts"][i], row["ours"][i] = c["verdict"], c["ours"]
    for row in rows.values():
        row["held"] = sum(v == "reproduced" for v in row["verdicts"])
        row["tested"] = sum(v in ("reproduced", "partly", "not reproduced") for v in row["verdicts"])
    return list(rows.values())


def markdown(stem: str, runs: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> str:
    """One chapter's table: claim, rule, then each run's verdict mark and value, then held / tested."""
    marks = {"reproduced": "✓", "partly": "~", "not reproduced": "✗", "not tested": "–", None: "?"}
    heads = [", ".join(f"{k} {v}" for k, v in r["knobs"].items()) for r in runs]
    cells = [
        (r["claim"], r["rule"], *(f"{marks[v]} {o}" for v, o in zip(r["verdicts"], r["ours"])), f"{r['held']} of {r['tested']}")
        for r in rows
    ]
    return f"### {stem}\n\n" + markdown_table(("claim", "rule", *heads, "held"), cells) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m ace_helpers.seed_check", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="ci", help="ci | book | paper (default: ci)")
    parser.add_argument("--seeds", type=int, default=5, help="runs per chapter, the preset's own first (default: 5)")
    parser.add_argument("--only", nargs="*", default=None, help="notebook stems (default: every chapter)")
    parser.add_argument("--out", type=Path, required=True, help="folder for each run's claims and the tables")
    args = parser.parse_args(argv)
    check_choice("--preset", args.preset, PRESET_NAMES)
    n = check_int("--seeds", args.seeds, low=1, high=100)
    stems = list(SEED_KNOBS) if args.only is None else [check_choice("--only", s, tuple(SEED_KNOBS)) for s in args.only]
    parts = []
    for stem in stems:
        runs = run_seeds(stem, args.preset, n, args.out)
        (args.out / f"{stem}.md").write_text(markdown(stem, runs, claim_table(runs)))
        print(f"wrote {args.out / f'{stem}.md'}", flush=True)
        parts.append(markdown(stem, runs, claim_table(runs, section=f"{args.preset} preset")))
    summary = args.out / "summary.md"
    summary.write_text("\n".join(parts))
    print(f"wrote {summary} (the claims on each run itself)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
