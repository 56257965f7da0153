"""Chapter 1 rules read against baselines: is the cross-seed CCA specific to the core, and the code release's
consensus (GCCA) subspace.

* :data:`CCA_BASELINES`: the cores' CCA against random subspaces of the same dimension, and against the seeds'
  PCA subspaces.
* :data:`ORACLE`: each seed's one-hot-state oracle subspace (the class-mean subspace of the current state,
  :func:`~ace_helpers.chapters.markov_cores.baselines.state_oracle_basis`) against the core: whether the core
  *is* that subspace, and whether the oracle subspaces align across seeds as well as the cores do (then CCA ≈ 1
  follows from both seeds holding the current state linearly, not from anything particular to the core).
* :data:`CONSENSUS`: the paper-claim row ``markov.consensus``, judged seed by seed.

Each reads only the flat results dict; stored results from before a baseline was computed have no row for it
(the consensus claim is then listed as not tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.repro.rules import Comparison, Measured, NotTested, Rule

CODE = "code release joshseth/cores, markov.py"
OURS = "ours (beyond the paper)"
OBSERVED = "3 seeds of a one-layer transformer (D = 64) trained on the 4-state chain, after training"

#: The core and its seed's oracle subspace count as the same subspace from this projector overlap on.
SAME_SUBSPACE = 0.9
#: CCA "as well as the cores": the oracle's weakest canonical correlation may fall this far below the core's.
CCA_SLACK = 0.01
#: Consensus sufficient: keep ≥ full accuracy − this (as ``markov.sufficient``); not necessary: remove ≥ chance + this.
CONSENSUS_KEEP_TOL, CONSENSUS_REMOVE_MARGIN = 0.005, 0.1


def _weakest(r: Mapping[str, Any], key: str) -> list[float]:
    """Per seed pair, the (n − 1)-th canonical correlation of ``results[key]``: the weakest."""
    return [c[r["n_states"] - 2] for c in r[key]]


def _beats_random(r: Mapping[str, Any], cfg: Any) -> Measured | None:
    if "random_cca" not in r:
        return None
    core, rand = _weakest(r, "cca"), _weakest(r, "random_cca")
    return Measured(
        {"weakest core CCA − random-subspace CCA": [c - x for c, x in zip(core, rand)]},
        ours=[core, rand],
        context={"r": r["n_states"] - 1},
    )


def _pca_aligns(r: Mapping[str, Any], cfg: Any) -> Measured | None:
    if "random_cca" not in r:
        return None
    core, pca = _weakest(r, "cca"), _weakest(r, "pca_cca")
    return Measured({"|weakest core CCA − weakest PCA CCA|": [abs(c - p) for c, p in zip(core, pca)]}, ours=[core, pca])


def _core_is_oracle(r: Mapping[str, Any], cfg: Any) -> Measured | None:
    if "oracle_cca" not in r:
        return None
    return Measured({"overlap(core, own state-oracle subspace)": r["core_oracle_overlap"]})


def _oracle_cca(r: Mapping[str, Any], cfg: Any) -> Measured | None:
    if "oracle_cca" not in r:
        return None
    core, oracle = _weakest(r, "cca"), _weakest(r, "oracle_cca")
    return Measured({"weakest oracle CCA − weakest core CCA": [o - c for o, c in zip(oracle, core)]}, ours=[core, oracle])


def consensus_margins(results: Mapping[str, Any]) -> list[float]:
    """Per seed, the consensus rule's margin (≥ 0 where it holds): the smaller of keep − (full − keep tolerance)
    and remove − (chance + remove margin), both under the code release's zero ablation."""
    base, chance = results["base_acc"], results["chance_acc"]
    keep, remove = results["consensus_keep_acc_zero"], results["consensus_remove_acc_zero"]
    if not len(keep) == len(remove) == len(base):
        raise ValueError(
            f"consensus accuracies for {len(keep)} and {len(remove)} seeds but {len(base)} full-model "
            "accuracies: one of each per seed"
        )
    return [min(k - (b - CONSENSUS_KEEP_TOL), r - (chance + CONSENSUS_REMOVE_MARGIN)) for k, r, b in zip(keep, remove, base)]


def _consensus(r: Mapping[str, Any], cfg: Any) -> Measured | NotTested:
    if "consensus_keep_acc_zero" not in r:
        return NotTested(
            "these stored results predate the consensus baseline", claim="consensus (GCCA) subspace: sufficient, not necessary"
        )
    return Measured(
        {"consensus margin": consensus_margins(r)},
        ours=[r["consensus_keep_acc_zero"], r["consensus_remove_acc_zero"]],
        context={"dim": r["consensus_dim"]},
    )


CCA_BASELINES = (
    Rule(
        "ours.markov_cores.cca_beats_random",
        "the cores' CCA beats random {r}-dim subspaces' (weakest canonical correlation, every seed pair)",
        "—",
        OURS,
        OBSERVED,
        (Comparison("weakest core CCA − random-subspace CCA", ">", 0.1),),
        "the (n − 1)-th canonical correlation of the core coordinates exceeds, by more than {t0}, that of the coordinates "
        "in one seeded random (n − 1)-dim subspace of each seed's activations, for every seed pair: the alignment is not "
        "what an arbitrary low-dimensional view of the same activations gives (a view that holds the current state does "
        "give it: the oracle row below)",
        _beats_random,
        {"weakest core CCA − random-subspace CCA": [0.0, 0.0, 0.0]},
        unit="seed pair",
    ),
    Rule(
        "ours.markov_cores.pca_aligns_too",
        "the seeds' PCA subspaces of the same dimension align as well (CCA within {t0} of the cores')",
        "—",
        OURS,
        OBSERVED,
        (Comparison("|weakest core CCA − weakest PCA CCA|", "<=", 0.01),),
        "on this chain the activity's top n − 1 directions hold the same state information as the core, so CCA alignment "
        "across seeds does not single the core out; the core's distinction is the keep/remove test (a PCA subspace that "
        "missed the state would fall far below the cores' CCA and fail this)",
        _pca_aligns,
        {"|weakest core CCA − weakest PCA CCA|": [0.5, 0.5, 0.5]},
        unit="seed pair",
    ),
)

ORACLE = (
    Rule(
        "ours.markov_cores.core_is_state_subspace",
        "each seed's core is its one-hot-state oracle subspace (projector overlap ≥ {t0})",
        "—",
        OURS,
        OBSERVED,
        (Comparison("overlap(core, own state-oracle subspace)", ">=", SAME_SUBSPACE),),
        "in every seed, the projector overlap of the core with the top n − 1 directions of the activations' part "
        "explained by a linear regression on the one-hot current state (the class-mean subspace) is ≥ {t0} (1: the same "
        "subspace; two random subspaces of this size give about r/D)",
        _core_is_oracle,
        {"overlap(core, own state-oracle subspace)": [0.05, 0.05, 0.05]},
    ),
    Rule(
        "ours.markov_cores.cca_not_core_specific",
        "CCA ≈ 1 is not specific to the core: the seeds' one-hot-state oracle "
        "subspaces align as well (weakest canonical correlation ≥ the cores' − {d0}, every seed pair)",
        "—",
        OURS,
        OBSERVED,
        (Comparison("weakest oracle CCA − weakest core CCA", ">=", -CCA_SLACK),),
        "the (n − 1)-th canonical correlation between two seeds' coordinates in their one-hot-state oracle subspaces "
        "(same dimension n − 1) reaches the cores' within {d0}, for every seed pair: any subspace whose coordinates are "
        "linear in the current state gives the cores' alignment, so the paper's CCA row shows that both seeds hold the "
        "state, not that they share a core; it fails if the cores align beyond what the state explains (a core carrying "
        "more shared structure than the current state)",
        _oracle_cca,
        {"weakest oracle CCA − weakest core CCA": [-0.5, -0.5, -0.5]},
        unit="seed pair",
    ),
)

CONSENSUS = Rule(
    "markov.consensus",
    "the seeds' consensus (GCCA, {dim}-D) subspace is sufficient but not necessary (zero ablation, every seed)",
    "a consensus (GCCA) subspace of all seeds (48-D) is sufficient (keep 0.7484) but not necessary "
    "(remove 0.532–0.549), unlike the core",
    f"{CODE} (GCCA baseline; its panel is commented out of the final figure)",
    OBSERVED,
    (Comparison("consensus margin", ">=", 0.0),),
    f"per seed, with its basis orth(pinv(H_c) G) (G: the top min(⌊0.75·D⌋, 0.999-energy rank) left singular vectors of "
    f"all seeds' centred activations side by side) kept alone, the accuracy is ≥ the full model's − {CONSENSUS_KEEP_TOL:g} "
    f"(as markov.sufficient), and with it removed the accuracy is ≥ chance + {CONSENSUS_REMOVE_MARGIN:g} (ten times the "
    "'to chance' tolerance of markov.necessary: removing it leaves the model working, unlike removing the core); the "
    "consensus margin is the smaller of the two excesses; the code release projects the raw activation (zero "
    "ablation); values: [keep per seed, removed per seed]",
    _consensus,
    {"consensus margin": [-0.4, -0.4, -0.4]},
    gap="consensus",
)
