"""The code release's own numbers for chapter 1's claims: its ``markov.py``, rerun here as released.

:func:`ace_helpers.repro.official_runs.run_markov` stores the release's ``results.json`` (3 models at the paper's
settings, seed 0) as the artifact ``official_markov``.  :func:`official_numbers` reads, for each claim of the paper
that this file computes, the release's number in the shape of our record's ``value`` (per seed, per seed pair);
:func:`~ace_helpers.repro.official.attach_official` writes them into the ``official`` field of a run's claim rows, the third column of the
claims table and the scorecard.  Claims the release does not compute (the energy rank's softmax tail, the CCA
baselines, our diagnoses) keep ``official = None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from ace_helpers.chapters.markov_run.spectra import relative_eig_errors
from ace_helpers.repro.artifacts import load_artifact, project_root

#: Where the release's Markov run is stored (relative to the project root), and its artifact name.
OFFICIAL_STORE, OFFICIAL_RUN = Path("book") / "artifacts" / "official_markov", "official_markov"


def _pairwise(results: Mapping[str, Any], key: str) -> list[Any]:
    """``key`` of each seed pair of the release's ``pairwise`` list, in our pair order ((0, 1), (0, 2), (1, 2), ...)."""
    by_pair = {tuple(int(s) for s in p["pair"].replace("M", "").split("-")): p[key] for p in results["pairwise"]}
    k = len(results["ablations"])
    return [by_pair[pair] for pair in combinations(range(k), 2)]


def _eig_errors(results: Mapping[str, Any]) -> list[float]:
    """Per model, the largest relative error of the release's fitted eigenvalues against the chain's non-unit ones
    (matched as ours are: :func:`ace_helpers.chapters.markov_run.spectra.relative_eig_errors`)."""
    pairs = results["ground_truth"]["transition_evals"]["values"]
    true = [complex(re, im) for re, im in pairs if abs(complex(re, im) - 1.0) > 1e-9]
    out = []
    for d in results["dynamics"]:
        fitted = [complex(re, im) for re, im in d["evals"]]
        out.append(max(relative_eig_errors(true, fitted)))
    return out


def official_numbers(results: Mapping[str, Any]) -> dict[str, Any]:
    """The release's number per claim id, from its ``results.json`` (``results``), each in our ``value``'s shape.

    ``markov.weights_differ`` carries ``[trained cosines per pair, None]``: the release does not store the
    initial cosines.  ``markov.cca`` (our row counts its two parts) carries the release's canonical correlations
    per pair.  ``markov.spectrum`` carries the largest relative eigenvalue error per model.
    """
    abl = results["ablations"]
    cos = np.asarray(results["weight_cosine_similarity"], dtype=float)
    ens = results["ensemble_gcca"]["ablations"]
    return {
        "markov.accuracy": [a["base"] for a in abl],
        "markov.core_rank": [float(len(d["evals"])) for d in results["dynamics"]],
        "markov.sufficient": [a["keep"] for a in abl],
        "markov.necessary": [a["remove"] for a in abl],
        "markov.consensus": [[a["keep"] for a in ens], [a["remove"] for a in ens]],
        "markov.overlap": _pairwise(results, "overlap"),
        "markov.cca": _pairwise(results, "cca_corrs"),
        "markov.weights_differ": [[float(cos[i, j]) for i, j in combinations(range(len(abl)), 2)], None],
        "markov.spectrum": _eig_errors(results),
        "markov.r2": [d["r2_over_oracle"] for d in results["dynamics"]],
    }


def stored_official(root: Path | None = None) -> dict[str, Any] | None:
    """:func:`official_numbers` of the stored release run, or None where it is not stored (or fails its checksums)."""
    found = load_artifact((root or project_root()) / OFFICIAL_STORE, OFFICIAL_RUN)
    return None if found is None else official_numbers(found.data["results"])
