"""Chapter 1's third column: the code release's own Markov run, rerun here, read into the claim records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace_helpers.chapters.markov_cores.official import OFFICIAL_RUN, OFFICIAL_STORE, official_numbers, stored_official
from ace_helpers.repro.official import attach_official
from ace_helpers.repro.artifacts import load_artifact
from ace_helpers.repro.plain import plain_value
from ace_helpers.repro.report import Claims

ROOT = Path(__file__).parents[2]


def test_the_stored_release_run_has_its_provenance_and_the_papers_settings() -> None:
    manifest = json.loads((ROOT / OFFICIAL_STORE / f"{OFFICIAL_RUN}.manifest.json").read_text())
    assert manifest["params"]["commit"] == "da253a0769d3bf35048404c46d87205846262bfc"
    assert manifest["params"]["kernels"] == "reproducible" and manifest["wall_s"] > 0
    config = load_artifact(ROOT / OFFICIAL_STORE, OFFICIAL_RUN).data["results"]["config"]
    assert (config["d_model"], config["epochs"], config["k_models"], config["lr"]) == (64, 40, 3, 1e-4)


def test_the_release_numbers_read_in_our_shapes() -> None:
    numbers = stored_official(ROOT)
    assert numbers is not None, "book/artifacts/official_markov does not load"
    assert numbers["markov.core_rank"] == [3.0, 3.0, 3.0]
    assert len(numbers["markov.overlap"]) == 3 and all(0 < v < 0.1 for v in numbers["markov.overlap"])
    # its weak real mode λ = 0.5 is fitted 1.6–4.2 % off, as the book's eigenvalue row says
    assert [round(100 * e, 1) for e in numbers["markov.spectrum"]] == [1.6, 3.2, 4.1]
    assert all(len(triple) == 3 for triple in numbers["markov.cca"])
    assert numbers["markov.weights_differ"][1] is None


def test_pairs_are_read_in_our_order_and_eigenvalues_are_matched() -> None:
    results = {
        "ablations": [{"base": 1.0, "keep": 1.0, "remove": 0.2}] * 3,
        "pairwise": [{"pair": f"M{a}-M{b}", "overlap": float(10 * a + b), "cca_corrs": [1.0]} for a, b in ((1, 2), (0, 2), (0, 1))],
        "weight_cosine_similarity": [[1, 0.1, 0.2], [0.1, 1, 0.3], [0.2, 0.3, 1]],
        "ensemble_gcca": {"ablations": [{"keep": 1.0, "remove": 0.5}] * 3},
        "ground_truth": {"transition_evals": {"values": [[1.0, 0.0], [0.5, 0.0]]}},
        "dynamics": [{"evals": [[0.55, 0.0]], "r2_over_oracle": 1.0}] * 3,
    }
    numbers = official_numbers(results)
    assert numbers["markov.overlap"] == [1.0, 2.0, 12.0]
    assert numbers["markov.weights_differ"][0] == pytest.approx([0.1, 0.2, 0.3])
    assert numbers["markov.spectrum"] == pytest.approx([0.1, 0.1, 0.1])


def test_only_headline_rows_of_known_ids_get_the_column() -> None:
    claims = Claims()
    claims.check("a", "p", 1.0, True, id="markov.r2")
    claims.check("b", "p", 1.0, True, id="markov.r2", headline=False)
    claims.check("c", "p", 1.0, True, id="ours.markov_cores.r2_state")
    attach_official(claims, {"markov.r2": [1.01, 0.99]})
    assert [r.official for r in claims.rows] == [[1.01, 0.99], None, None]
    assert plain_value(claims.rows[0].official) == "1.01 / 0.99"
