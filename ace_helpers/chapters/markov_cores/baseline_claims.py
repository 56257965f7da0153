"""Chapter 1 claims read against baselines: is the cross-seed CCA specific to the core, and the code
release's consensus (GCCA) subspace.

* :func:`oracle_claims`: each seed's one-hot-state oracle subspace (the class-mean subspace of the current
  state, :func:`~ace_helpers.chapters.toy_models.markov_baselines.state_oracle_basis`) against the core:
  whether the core *is* that subspace, and whether the oracle subspaces align across seeds as well as
  the cores do (then CCA ≈ 1 follows from both seeds holding the current state linearly, not from
  anything particular to the core).
* :func:`consensus_claims`: the paper-claim row ``markov.consensus``, judged seed by seed.

Both read only the flat results dict; stored results from before a baseline was computed have no
row for it (the consensus claim is then listed as not tested).
"""

from __future__ import annotations

from typing import Any

from ace_helpers.repro.report import Claims, ClaimRow

CODE = "code release joshseth/cores, markov.py"
OURS = "ours (beyond the paper)"

#: The core and its seed's oracle subspace count as the same subspace from this projector overlap on.
SAME_SUBSPACE = 0.9
#: CCA "as well as the cores": the oracle's weakest canonical correlation may fall this far below the core's.
CCA_SLACK = 0.01
#: Consensus sufficient: keep ≥ full accuracy − this (as ``markov.sufficient``); not necessary: remove ≥ chance + this.
CONSENSUS_KEEP_TOL, CONSENSUS_REMOVE_MARGIN = 0.005, 0.1


def oracle_claims(claims: Claims, results: dict[str, Any], n: int) -> None:
    """The two oracle rows (skipped for results without ``oracle_cca``)."""
    if "oracle_cca" not in results:
        return
    same = results["core_oracle_overlap"]
    claims.check(
        f"each seed's core is its one-hot-state oracle subspace (projector overlap ≥ {SAME_SUBSPACE:g})", "—", same,
        min(same) >= SAME_SUBSPACE, id="ours.markov_cores.core_is_state_subspace", where=OURS, per_seed=same,
        threshold=SAME_SUBSPACE, op=">=", short=f"every seed: overlap(core, own state-oracle subspace) ≥ {SAME_SUBSPACE:g}",
        rule=f"in every seed, the projector overlap of the core with the top n − 1 directions of the activations' part "
        f"explained by a linear regression on the one-hot current state (the class-mean subspace) is ≥ {SAME_SUBSPACE:g} "
        "(1: the same subspace; two random subspaces of this size give about r/D)",
    )  # fmt: skip
    core = [c[n - 2] for c in results["cca"]]  # the (n − 1)-th canonical correlation of each pair: the weakest
    oracle = [c[n - 2] for c in results["oracle_cca"]]
    diff = [o - c for o, c in zip(oracle, core)]
    claims.check(
        "CCA ≈ 1 is not specific to the core: the seeds' one-hot-state oracle subspaces align as well "
        f"(weakest canonical correlation ≥ the cores' − {CCA_SLACK:g}, every seed pair)", "—", [core, oracle],
        min(diff) >= -CCA_SLACK, id="ours.markov_cores.cca_not_core_specific", where=OURS, per_seed=diff,
        threshold=-CCA_SLACK, op=">=", short=f"every pair: weakest oracle CCA ≥ weakest core CCA − {CCA_SLACK:g}",
        rule="the (n − 1)-th canonical correlation between two seeds' coordinates in their one-hot-state oracle "
        f"subspaces (same dimension n − 1) reaches the cores' within {CCA_SLACK:g}, for every seed pair: any subspace "
        "whose coordinates are linear in the current state gives the cores' alignment, so the paper's CCA row shows that "
        "both seeds hold the state, not that they share a core; it fails if the cores align beyond what the state "
        "explains (a core carrying more shared structure than the current state)",
    )  # fmt: skip


def consensus_margins(results: dict[str, Any]) -> list[float]:
    """Per seed, the consensus rule's margin (≥ 0 where it holds): the smaller of keep − (full − keep tolerance)
    and remove − (chance + remove margin), both under the code release's zero ablation."""
    base, chance = results["base_acc"], results["chance_acc"]
    keep, remove = results["consensus_keep_acc_zero"], results["consensus_remove_acc_zero"]
    if not len(keep) == len(remove) == len(base):
        raise ValueError(f"consensus accuracies for {len(keep)} and {len(remove)} seeds but {len(base)} full-model "
                         "accuracies: one of each per seed")
    return [min(k - (b - CONSENSUS_KEEP_TOL), r - (chance + CONSENSUS_REMOVE_MARGIN))
            for k, r, b in zip(keep, remove, base)]


def consensus_claims(claims: Claims, results: dict[str, Any], gap: Any) -> None:
    """The ``markov.consensus`` row (listed as not tested for results without the consensus baseline)."""
    paper = ("a consensus (GCCA) subspace of all seeds (48-D) is sufficient (keep 0.7484) but not necessary (remove "
             "0.532–0.549), unlike the core")
    where = f"{CODE} (GCCA baseline; its panel is commented out of the final figure)"
    if "consensus_keep_acc_zero" not in results:
        claims.not_tested.append(ClaimRow("consensus (GCCA) subspace: sufficient, not necessary", paper, "—",
                                          "these stored results predate the consensus baseline", where=where,
                                          id="markov.consensus"))  # fmt: skip
        return
    margins = consensus_margins(results)
    keep, remove = results["consensus_keep_acc_zero"], results["consensus_remove_acc_zero"]
    claims.check(
        f"the seeds' consensus (GCCA, {results['consensus_dim']}-D) subspace is sufficient but not necessary "
        "(zero ablation, every seed)", paper, [keep, remove], min(margins) >= 0, gap("consensus"),
        id="markov.consensus", where=where, per_seed=margins, threshold=0.0, op=">=",
        short=f"every seed: consensus keep ≥ full − {CONSENSUS_KEEP_TOL:g} and consensus removed ≥ chance + "
        f"{CONSENSUS_REMOVE_MARGIN:g}",
        rule=f"per seed, with its basis orth(pinv(H_c) G) (G: the top min(⌊0.75·D⌋, 0.999-energy rank) left singular "
        f"vectors of all seeds' centred activations side by side) kept alone, the accuracy is ≥ the full model's − "
        f"{CONSENSUS_KEEP_TOL:g} (as markov.sufficient), and with it removed the accuracy is ≥ chance + "
        f"{CONSENSUS_REMOVE_MARGIN:g} (ten times the 'to chance' tolerance of markov.necessary: removing it leaves "
        "the model working, unlike removing the core); the code release projects the raw activation (zero ablation); "
        "values: [keep per seed, removed per seed]",
    )  # fmt: skip
