"""Variant runs (other precision / trainer) and their claim-by-claim comparison with the chapter's own run."""

from __future__ import annotations

import json

import pytest

from ace_helpers.repro import variants
from ace_helpers.repro.report import PARTLY, REPRODUCED


def _claims(*verdicts: str, section: str = "book preset") -> dict:
    return {"claims": [{"claim": f"claim {i}", "section": section, "verdict": v} for i, v in enumerate(verdicts)]}


def test_parse_assignments_reads_literals_and_refuses_malformed() -> None:
    assert variants.parse_assignments(["PRECISION=bf16", "N_MODELS=3", "OMEGAS=[0.5, 1.0]"]) == {
        "PRECISION": "bf16", "N_MODELS": 3, "OMEGAS": [0.5, 1.0]}
    for bad in ("PRECISION", "precision=bf16"):
        with pytest.raises(ValueError, match="KNOB=VALUE"):
            variants.parse_assignments([bad])


def test_rows_agree_and_disagree_per_claim() -> None:
    own = _claims(REPRODUCED, PARTLY)
    stored = {"book-bf16": _claims(REPRODUCED, REPRODUCED), "ci-bf16": _claims(PARTLY, section="ci preset")}
    rows = variants.comparison_rows(own, stored, "book")
    assert [(r["claim"], r[variants.OWN_RUN], r["bf16"], r["agree"]) for r in rows] == [
        ("claim 0", REPRODUCED, REPRODUCED, True), ("claim 1", PARTLY, REPRODUCED, False)]
    # at ci the chapter's own (book) run is not part of the comparison; a claim one run lacks is a disagreement
    ci = variants.comparison_rows(own, stored | {"ci-fp32": _claims(PARTLY, PARTLY, section="ci preset")}, "ci")
    assert [(r["bf16"], r["fp32"], r["agree"]) for r in ci] == [(PARTLY, PARTLY, True), ("—", PARTLY, False)]


def test_claims_on_stored_runs_shown_beside_are_not_compared() -> None:
    """A variant does not retrain the stored 20 000-epoch run a chapter shows: agreeing there proves nothing."""
    own = {"claims": _claims(REPRODUCED)["claims"] + _claims(PARTLY, section="stored paper-preset run")["claims"]}
    rows = variants.comparison_rows(own, {"book-bf16": own}, "book")
    assert [r["section"] for r in rows] == ["this run"]


def test_table_is_built_from_stored_files(tmp_path) -> None:
    (tmp_path / "book" / "results" / "variants" / "09_x").mkdir(parents=True)
    (tmp_path / "book" / "results" / "09_x.json").write_text(json.dumps(_claims(REPRODUCED) | {"wall_s": 3.0}))
    stored = _claims(PARTLY) | {"variant": {"name": "bf16", "preset": "book", "knobs": {"PRECISION": "bf16"}, "wall_s": 2.0},
                                "params": {"PRECISION": "bf16"}}
    (tmp_path / "book" / "results" / "variants" / "09_x" / "book-bf16.json").write_text(json.dumps(stored))
    text = variants.variant_markdown(tmp_path)
    assert "verdicts agree on 0 of 1 claims" in text
    assert "| bf16 | PRECISION=bf16 | bf16 | 2 |" in text and "**no**" in text


def test_run_variant_refuses_unknown_notebook_and_bad_name(tmp_path) -> None:
    (tmp_path / "notebooks").mkdir()
    with pytest.raises(ValueError, match="not found"):
        variants.run_variant("99_nothing", "ci", "bf16", {}, root=tmp_path)
    (tmp_path / "notebooks" / "09_x.py").write_text("")
    with pytest.raises(ValueError, match="variant name"):
        variants.run_variant("09_x", "ci", "../up", {}, root=tmp_path)
    with pytest.raises(ValueError, match="preset"):
        variants.run_variant("09_x", "huge", "bf16", {}, root=tmp_path)


def test_results_computed_elsewhere_are_stored_as_a_variant_with_their_note(tmp_path) -> None:
    """A run of the book preset on another kind of CPU: stored as a variant, the table says where it comes from."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "09_x.py").write_text("")
    (tmp_path / "book" / "results").mkdir(parents=True)
    (tmp_path / "book" / "results" / "09_x.json").write_text(json.dumps(_claims(REPRODUCED) | {"wall_s": 3.0}))
    elsewhere = tmp_path / "other" / "09_x.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text(json.dumps(_claims(PARTLY) | {"wall_s": 4.4, "params": {"PRESET": "book", "PRECISION": "fp32"}}))
    path = variants.import_variant(elsewhere, "amd", "the book preset on an AMD CPU", root=tmp_path)
    assert path == tmp_path / "book" / "results" / "variants" / "09_x" / "book-amd.json"
    assert json.loads(path.read_text())["variant"] == {"name": "amd", "preset": "book", "knobs": {}, "wall_s": 4.4,
                                                       "note": "the book preset on an AMD CPU"}
    text = variants.variant_markdown(tmp_path)
    assert "| amd | the book preset on an AMD CPU | fp32 | 4 |" in text and "verdicts agree on 0 of 1 claims" in text
    # a file not named after a notebook, or without a preset and claims, is refused before anything is written
    with pytest.raises(ValueError, match="not named after a notebook"):
        variants.import_variant(elsewhere.with_name("results.json"), "amd", "x", root=tmp_path)
    bad = tmp_path / "other2" / "09_x.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"wall_s": 1.0}))
    with pytest.raises(ValueError, match="params.PRESET"):
        variants.import_variant(bad, "amd2", "x", root=tmp_path)
    assert not (tmp_path / "book" / "results" / "variants" / "09_x" / "book-amd2.json").exists()


def test_a_chapter_shows_its_run_beside_the_stored_variants_of_its_protocol(tmp_path) -> None:
    from ace_helpers.chapters import modadd_grokking as chapter

    folder = tmp_path / "book" / "results" / "variants" / "02_modadd_grokking"
    folder.mkdir(parents=True)
    stored = {"claims": [{"claim": "c0", "section": "ci preset", "verdict": PARTLY, "ours": "0.5"}],
              "variant": {"name": "bf16", "preset": "ci", "knobs": {"PRECISION": "bf16"}, "wall_s": 1.0}}
    (folder / "ci-bf16.json").write_text(json.dumps(stored))
    records = [{"claim": "c0", "section": "ci preset", "verdict": REPRODUCED, "ours": "0.9"}]
    cfg = chapter.PARAMS.resolve(PRESET="ci")
    text = variants.comparison_for(cfg, records, chapter.config.PROTOCOL_KNOBS, root=tmp_path)
    assert "TRAINER = 'ensemble', PRECISION = 'fp32'" in text and "agree on **0 of 1**" in text
    assert "| c0 | reproduced: 0.9 | partly: 0.5 | **no** |" in text
    other = variants.comparison_for(cfg.replace(P=37), records, chapter.config.PROTOCOL_KNOBS, root=tmp_path)
    assert "nothing to compare with" in other  # another protocol: the stored runs do not apply
    none = variants.comparison_for(chapter.PARAMS.resolve(PRESET="book"), records, chapter.config.PROTOCOL_KNOBS, root=tmp_path)
    assert "No other run" in none
