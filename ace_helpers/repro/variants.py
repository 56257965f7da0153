"""Re-run a chapter with other training knobs (precision, trainer) and compare its verdicts claim by claim.

``python -m ace_helpers.variants 02_modadd_grokking --preset book --name ensemble-bf16 --set TRAINER=ensemble PRECISION=bf16``
executes the chapter (papermill, a fresh kernel, as :mod:`ace_helpers.repro.runbook` does) with those
parameters into ``outputs/variants/<notebook>/<preset>-<name>/`` and stores its ``results.json``
as ``book/results/variants/<notebook>/<preset>-<name>.json`` (committed with the book, beside the
chapter's own ``book`` run in ``book/results/<notebook>.json``).  The executed notebook itself is
not kept: the book shows the chapter's own run.

:func:`write_variant_table` rebuilds ``book/variants_table.md`` (included by the reproducibility
page) from the stored files: per chapter and preset, every claim with the verdict of each run
and whether the verdicts agree.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ace_helpers.method.checks import check_choice
from ace_helpers.repro.artifacts import atomic_write_bytes, project_root, write_json
from ace_helpers.repro.departures import NOT_PROTOCOL
from ace_helpers.repro.params import PRESET_NAMES
from ace_helpers.repro.runbook import run_source, stored_book_results
from ace_helpers.repro.tables import markdown_table

#: The chapter's own run, shown first in every comparison.
OWN_RUN = "own run"

#: Claim sections about the run a notebook trained itself (others are about stored runs it shows).
OWN_SECTIONS = ("book preset", "ci preset", "paper preset")


def variants_dir(root: Path) -> Path:
    """Where the stored variant results live: ``book/results/variants``."""
    return root / "book" / "results" / "variants"


def parse_assignments(items: Sequence[str]) -> dict[str, Any]:
    """``["TRAINER=ensemble", "N_MODELS=3"]`` -> ``{"TRAINER": "ensemble", "N_MODELS": 3}`` (values as Python literals, else strings)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.isupper():
            raise ValueError(f"--set {item!r} is not allowed: give KNOB=VALUE with an UPPER_CASE knob, e.g. PRECISION=bf16")
        try:
            out[name] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[name] = raw
    return out


def run_variant(stem: str, preset: str, name: str, knobs: Mapping[str, Any], *, root: Path | None = None) -> Path:
    """Execute notebook ``stem`` at ``preset`` with ``knobs``; store its results as variant ``name``.

    Returns the stored results file.  Raises ``ValueError`` for an unknown notebook, preset or
    a name that is not a plain word (it becomes a file name).
    """

    root = root or project_root()
    check_choice("preset", preset, PRESET_NAMES)
    py = _notebook_source(root, stem, f"notebook {stem!r} not found")
    _check_name(name)
    out_dir = root / "outputs" / "variants" / stem / f"{preset}-{name}"
    out_dir.mkdir(parents=True, exist_ok=True)
    _, wall = run_source(py, {"PRESET": preset, "OUTPUT_DIR": str(out_dir), **knobs})
    results = json.loads((out_dir / "results.json").read_text())
    return _store(root, stem, results, {"name": name, "preset": preset, "knobs": dict(knobs), "wall_s": round(wall, 1)})


def _notebook_source(root: Path, stem: str, problem: str) -> Path:
    """``notebooks/<stem>.py`` under ``root``; ``ValueError`` starting with ``problem`` (and the allowed stems) if missing."""
    py = root / "notebooks" / f"{stem}.py"
    if not py.is_file():
        known = sorted(p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.py"))
        raise ValueError(f"{problem}; allowed: {known}")
    return py


def _check_name(name: str) -> None:
    """A variant name becomes a file name: letters, digits, '-' and '_' only (``ValueError`` otherwise)."""
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"variant name {name!r} is not allowed: letters, digits, '-' and '_' only (it names a file)")


def _store(root: Path, stem: str, results: dict[str, Any], variant: dict[str, Any]) -> Path:
    """Write ``results`` with its ``variant`` record as ``book/results/variants/<stem>/<preset>-<name>.json``."""
    results["variant"] = variant
    return write_json(variants_dir(root) / stem / f"{variant['preset']}-{variant['name']}.json", results)


def import_variant(results_file: Path, name: str, note: str, *, root: Path | None = None) -> Path:
    """Store a chapter's ``results.json`` computed elsewhere (e.g. the same preset on another kind of
    CPU) as variant ``name``, with ``note`` saying where it comes from; returns the stored file.

    The file is named after its notebook, as the runbook stores them (``book/results/<notebook>.json``);
    the preset is the file's ``params.PRESET``, the knobs those of that preset (none set), the wall
    time the file's ``wall_s``.  Raises ``ValueError`` for a file not named after a notebook, one that
    is not a chapter's results, or a name that is not a plain word.
    """
    root = root or project_root()
    _check_name(name)
    notebook = Path(results_file).stem
    _notebook_source(root, notebook, f"{results_file} is not named after a notebook (<notebook>.json)")
    results = json.loads(Path(results_file).read_text())
    preset = results.get("params", {}).get("PRESET")
    if preset not in PRESET_NAMES or "claims" not in results:
        raise ValueError(f"{results_file} is not a chapter's results.json (it needs 'params.PRESET' and 'claims')")
    return _store(
        root, notebook, results, {"name": name, "preset": preset, "knobs": {}, "wall_s": results.get("wall_s"), "note": note}
    )


def stored_variants(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``{notebook: {"<preset>-<name>": results}}`` of every stored variant."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(variants_dir(root).glob("*/*.json")):
        out.setdefault(path.parent.name, {})[path.stem] = json.loads(path.read_text())
    return out


def comparison_rows(
    own: Mapping[str, Any] | None, variants: Mapping[str, Mapping[str, Any]], preset: str, *, with_own: bool | None = None
) -> list[dict[str, Any]]:
    """One row per claim of one chapter at one preset: ``{"claim", "section", <run name>: verdict, "agree"}``.

    ``own`` is the chapter's own run (compared when ``with_own``, by default at the ``book``
    preset only: the stored own run is a book run), ``variants`` its stored variants; only the variants of ``preset`` are compared.  Only the claims on the run itself are
    compared (the sections in :data:`OWN_SECTIONS`), not those on stored runs a chapter shows beside
    it (e.g. the 20 000-epoch run), which a variant does not retrain.  Claims are matched by claim
    text; a claim missing from a run shows "—" and counts as disagreement.
    """
    runs: dict[str, Mapping[str, Any]] = {}
    if own is not None and (preset == "book" if with_own is None else with_own):
        runs[OWN_RUN] = own
    runs |= {key.split("-", 1)[1]: res for key, res in sorted(variants.items()) if key.split("-", 1)[0] == preset}
    order: list[str] = []
    verdicts: dict[str, dict[str, str]] = {}
    for run, res in runs.items():
        verdicts[run] = {}
        for rec in res.get("claims", []):
            if rec["section"] not in OWN_SECTIONS:
                continue  # a stored run shown beside this one (e.g. the 20 000-epoch run): not what the variant trained
            verdicts[run][rec["claim"]] = rec["verdict"]
            if rec["claim"] not in order:
                order.append(rec["claim"])
    rows = []
    for claim in order:
        row: dict[str, Any] = {"section": "this run", "claim": claim}
        got = [verdicts[run].get(claim, "—") for run in runs]
        row |= dict(zip(runs, got))
        row["agree"] = len(set(got)) == 1 and "—" not in got
        rows.append(row)
    return rows


def _verdict_table(rows: Sequence[Mapping[str, Any]], runs: Sequence[str], shown=lambda run, row: row[run]) -> list[str]:
    """Markdown lines of a claim-by-claim table: one column per run (``shown(run, row)`` fills a cell), then whether they agree."""
    cells = [(r["claim"], *(shown(run, r) for run in runs), "yes" if r["agree"] else "**no**") for r in rows]
    return markdown_table(("claim", *runs, "same verdict"), cells).split("\n")


def _described(variant: Mapping[str, Any]) -> str:
    """A stored variant's knobs as ``K=V, ...``; without knobs, its note (where it comes from) or "the chapter's preset"."""
    return ", ".join(f"{k}={v}" for k, v in variant["knobs"].items()) or variant.get("note") or "the chapter's preset"


def _other_knobs(params: Mapping[str, Any], own: Mapping[str, Any], set_knobs: Mapping[str, Any]) -> str:
    """``"; also FORK_EPOCH=1100 (this run: 900)"``: the knobs on which a stored variant differs from the chapter's own
    run beyond those it set (a variant stored before the preset changed), or ``""``."""
    diff = [
        f"{k}={params[k]} (this run: {own[k]})"
        for k in sorted(params)
        if k in own and k not in set_knobs and k not in NOT_PROTOCOL and params[k] != own[k]
    ]
    return "; also " + ", ".join(diff) if diff else ""


def variant_markdown(root: Path) -> str:
    """The reproducibility page's comparison: per chapter and preset, runs' knobs and wall times, then the claim rows."""

    own_all = stored_book_results(root)
    lines: list[str] = []
    for stem, variants in stored_variants(root).items():
        for preset in sorted({k.split("-", 1)[0] for k in variants}):
            rows = comparison_rows(own_all.get(stem), variants, preset)
            if not rows:
                continue
            runs = [k for k in rows[0] if k not in ("section", "claim", "agree")]
            agree = sum(r["agree"] for r in rows)
            lines += [f"**`{stem}` at the `{preset}` preset**: verdicts agree on {agree} of {len(rows)} claims.", ""]
            table = []
            for run in runs:
                res = own_all[stem] if run == OWN_RUN else variants[f"{preset}-{run}"]
                knobs = {} if run == OWN_RUN else res["variant"]["knobs"]
                wall = res.get("wall_s") if run == OWN_RUN else res["variant"]["wall_s"]
                precision = res.get("params", {}).get("PRECISION", knobs.get("PRECISION", "fp32"))
                shown = "the chapter's preset" if run == OWN_RUN else _described(res["variant"])
                own_params = (own_all.get(stem) or {}).get("params", {})
                if run != OWN_RUN and own_params and res["variant"]["preset"] == own_params.get("PRESET"):
                    shown += _other_knobs(res.get("params", {}), own_params, res["variant"]["knobs"])
                table.append((run, shown, precision, f"{wall:.0f}" if wall is not None else "—"))
            lines += [markdown_table(("run", "knobs", "precision", "wall time (s)"), table), "", *_verdict_table(rows, runs), ""]
    if not lines:
        lines = ["No variant runs are stored."]
    return "\n".join(lines) + "\n"


def chapter_comparison(stem: str, records: Sequence[Mapping[str, Any]], preset: str, *, root: Path | None = None) -> str:
    """Markdown for a chapter's own page: this run's verdicts (``records``, the claims it just checked)
    beside the stored variants of ``stem`` at ``preset``, claim by claim; a sentence when none is stored."""
    root = root or project_root()
    stored = {k: v for k, v in stored_variants(root).get(stem, {}).items() if k.split("-", 1)[0] == preset}
    if not stored:
        return f"No other run of this chapter is stored at the `{preset}` preset."
    rows = comparison_rows({"claims": list(records)}, stored, preset, with_own=True)
    for r in rows:  # at every preset the first column is this run
        r["this run"] = r.pop(OWN_RUN, "—")
    names = [k.split("-", 1)[1] for k in sorted(stored)]
    knobs = "; ".join(f"{k.split('-', 1)[1]}: {_described(res['variant'])}" for k, res in sorted(stored.items()))
    agree = sum(r["agree"] for r in rows)
    ours = {"this run": _ours(records)} | {k.split("-", 1)[1]: _ours(res.get("claims", [])) for k, res in stored.items()}

    def shown(run: str, r: Mapping[str, Any]) -> str:  # where verdicts differ, the measured values too
        verdict = r.get(run, "—")
        value = ours[run].get(r["claim"])
        return f"{verdict}: {value}" if not r["agree"] and value and verdict != "—" else verdict

    lines = [
        f"Verdicts agree on **{agree} of {len(rows)}** claims ({knobs}).",
        "",
        *_verdict_table(rows, ["this run", *names], shown),
    ]
    return "\n".join(lines) + "\n"


def comparison_for(cfg: Any, records: Sequence[Mapping[str, Any]], protocol: Sequence[str], *, root: Path | None = None) -> str:
    """A notebook's comparison cell: which trainer and precision this run used, then
    :func:`chapter_comparison` when the run's ``protocol`` knobs are the preset's (the stored runs
    are of the preset's protocol), else a sentence saying there is nothing to compare with.

    ``cfg`` is the chapter's resolved :class:`~ace_helpers.repro.params.Params`.
    """
    how = ", ".join(f"{k} = {cfg[k]!r}" for k in ("TRAINER", "PRECISION") if k in cfg)
    head = f"This run: {how}." if how else ""
    if not cfg.is_preset_run(protocol):
        return f"{head} The stored runs are of the `{cfg['PRESET']}` preset's protocol; this run changes it, so there is nothing to compare with.\n"
    return f"{head}\n\n" + chapter_comparison(cfg.chapter.notebook, records, cfg["PRESET"], root=root)


def _ours(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Measured value (``ours``) of each claim on the run itself, by claim text."""
    return {r["claim"]: str(r.get("ours", "")) for r in records if r["section"] in OWN_SECTIONS}


def write_variant_table(root: Path | None = None) -> Path:
    """Regenerate ``book/variants_table.md`` from the stored variant results."""
    root = root or project_root()
    path = root / "book" / "variants_table.md"
    atomic_write_bytes(path, variant_markdown(root).encode())
    return path


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", help="notebook stem, e.g. 02_modadd_grokking (omit with --table-only)")
    parser.add_argument("--preset", default="book", help="ci | book | paper (default: book)")
    parser.add_argument("--name", help="the variant's name, e.g. bf16")
    parser.add_argument("--set", nargs="*", default=[], metavar="KNOB=VALUE", help="knobs of the variant")
    parser.add_argument("--table-only", action="store_true", help="only rebuild book/variants_table.md")
    parser.add_argument(
        "--from-results",
        nargs="*",
        default=[],
        metavar="RESULTS_JSON",
        help="store these results.json files (computed elsewhere, e.g. on another CPU) as variant --name",
    )
    parser.add_argument("--note", default="", help="with --from-results: where the results come from (shown in the tables)")
    args = parser.parse_args(argv)
    root = project_root()
    if args.from_results:
        if not args.name or not args.note:
            parser.error("--from-results needs --name and --note")
        for path in args.from_results:
            print(f"stored {import_variant(Path(path), args.name, args.note, root=root)}")
    elif not args.table_only:
        if not args.notebook or not args.name:
            parser.error("give a notebook and --name (or --table-only)")
        os.environ.setdefault("TORCH_THREADS", "1")
        print(f"stored {run_variant(args.notebook, args.preset, args.name, parse_assignments(args.set), root=root)}")
    print(f"wrote {write_variant_table(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
