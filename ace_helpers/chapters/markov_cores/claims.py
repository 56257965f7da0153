"""Chapter 1 claims: each of the paper's Markov results, where it states it, our rule, and the known gaps.

:func:`build_claims` reads only the flat results dict, so a stored ``results.json`` gives the same
verdicts.  Thresholds are the paper's values where it gives one (the rule says where ours
differs, and why); a weaker form that still means something is reported as ``partly``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ace_helpers.chapters.markov_cores.baseline_claims import consensus_claims, oracle_claims
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import PARTLY, Claims, KnownGaps, seed_sensitive
from ace_helpers.toys.tasks.markov import is_paper_chain

#: The paper's Markov figure (panels A–E) and its results text; the rank rule and the chance line
#: come from the code release.
FIG = "Markov-chain figure"
CODE = "code release joshseth/cores, markov.py"
OURS, DIAGNOSIS = "ours (beyond the paper)", "ours (diagnosis)"

EIG_TOL, EIG_PARTLY = 0.01, 0.05  # relative eigenvalue error: the paper's "< 1 %", and our weaker bound
REMOVE_TOL, REMOVE_PARTLY = 0.01, 0.03  # core removed: accuracy points above chance
OVERLAP_PAPER, PAPER_RANDOM = 0.04, 3 / 64  # the paper's largest overlap, at its random level r/D (r = 3, D = 64)
CCA_PAPER, CCA_WEAK = (0.999, 0.999, 0.929), (0.99, 0.99, 0.90)  # the paper's triple; our weaker per-pair bounds
R2_ORACLE_MIN, R2_ORACLE_PARTLY = 0.98, 0.95
FLOOR_FACTOR = 2.0
ACC_TOL = 0.005  # Bayes accuracy minus this: within the test set's sampling noise (3.5 standard errors)
WEIGHT_SLACK = 0.05  # trained-pair weight cosine may exceed the same pair's cosine at initialisation by this  # the diagnosis: an error this many times the sampling floor is not sampling noise

#: Claims measured not to reproduce at a preset's own run (every knob as the preset sets it), and why.
KNOWN_GAPS = KnownGaps(
    gaps={
        "ci": {
            "rank_paper_tail": "after 8 epochs the softmax-invariant direction holds 0.13 % and 0.11 % of the raw-logit "
            "balanced energy, above the 1 − 0.999 = 0.1 % cut, so both seeds get rank 4 (the centered tail: 3)",
            "cca_top2": "the one pair of 8-epoch ci models reaches 0.9983 and 0.9976, under 0.999 at three decimals "
            "(the 40-epoch book models: 0.9986–0.9990)",
            "eigenvalues": "seed 1 fits λ = 0.5 3.2 % off (seed 2: 0.3 %; the rotation pair 0.7–0.9 %); the test "
            "steps' sampling floor is 0.94 %, and the fit on the coordinates' current-state means reaches it "
            "(diagnosis row)",
            "remove": seed_sensitive(4, 5, "the larger mean-ablated accuracy 0.2408, 0.2533, 0.2644, 0.2507, 0.2552 "
                                     "against chance + 0.01 = 0.26"),
            "overlap": seed_sensitive(4, 5, "0.036, 0.081, 0.050, 0.026, 0.100 against 0.084, the 95th "
                                      "percentile of two random 3-dim subspaces of 64 dims: two 8-epoch models, one pair"),
            "eigen_diagnosis": seed_sensitive(3, 5, "largest errors 3.15, 1.76, 3.56, 1.53, 3.94 % against twice the "
                                              "0.94 % sampling floor"),
        },
        "book": {
            "eigenvalues": "the weak real mode λ = 0.5 (0.6–0.8 % of the balanced energy) is fitted 1.0, 2.9 and "
            "3.7 % off in seeds 1–3, the rotation pair within 0.3–0.5 %; the test steps' own sampling floor for "
            "λ = 0.5 is 0.84 %, and the fit on the coordinates' current-state means reaches it (diagnosis row): the "
            "gap is the 5–8 % of that coordinate's variance that the current state does not set; our reruns of the "
            "official code release put this mode 1.6–4.2 % off too",
        },
    },
)


def r2_ratios(results: dict[str, Any], suffix: str = "") -> tuple[list[float], list[float]]:
    """Per seed ``(R²/R²_oracle, R²/r2_state)`` of a variant (``suffix`` "" or "_paper")."""
    r2, r2s = results[f"r2{suffix}"], results[f"r2_state{suffix}"]
    return [v / results["r2_oracle"] for v in r2], [a / b for a, b in zip(r2, r2s)]


def eigen_summary(results: dict[str, Any], prefix: str = "", chain: int | None = None) -> dict[str, Any]:
    """The eigenvalue numbers of one chain (main: ``prefix=""``; extra chain c: ``prefix="extra_", chain=c``).

    Keys: ``max`` (largest relative error over seeds and true eigenvalues), ``per_seed`` (each seed's
    largest), ``per_eig`` (per true
    eigenvalue, the largest over seeds), ``floor`` (per true eigenvalue, the sampling floor),
    ``floor_max``, ``state_max`` (largest error of the fit on current-state means; ``None`` where
    not stored), ``abs_eig`` (``|λ|`` per true eigenvalue).
    """
    def get(key: str) -> Any:
        value = results.get(prefix + key)
        return value if value is None or chain is None else value[chain]

    rel = np.asarray(get("eig_rel_error"), dtype=float)  # (seeds, eigenvalues)
    state = get("eig_rel_error_state")
    floor = [float(v) for v in get("eig_rel_floor")]
    return {
        "max": float(rel.max()),
        "per_seed": rel.max(axis=1).tolist(),
        "per_eig": rel.max(axis=0).tolist(),
        "floor": floor,
        "floor_max": max(floor),
        "state_max": None if state is None else float(np.max(state)),
        "abs_eig": [float(np.hypot(re, im)) for re, im in get("true_eigs")],
    }


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _eig_claims(claims: Claims, results: dict[str, Any], cfg: Params) -> None:
    """The paper's "< 1 %" row, and, when it does not hold, the diagnosis row."""
    eig = eigen_summary(results)
    holds = eig["max"] <= EIG_TOL
    lams = [f"{re:.3g}{im:+.3g}i" if abs(im) > 1e-9 else f"{re:.3g}" for re, im in results["true_eigs"]]
    per_eig = ", ".join(f"λ = {lam}: {_pct(e)}" for lam, e in zip(lams, eig["per_eig"]))
    claims.check(
        "core-operator eigenvalues within 1 % of the chain's (relative, every non-unit eigenvalue, every seed)",
        "the eigenvalues of the operator fitted to the core coordinates match the chain's spectrum to < 1 %",
        f"max {_pct(eig['max'])} ({per_eig})", holds, KNOWN_GAPS.reason(cfg, "eigenvalues"),
        id="markov.spectrum", where=f"{FIG}, panel E; Markov results", per_seed=eig["per_seed"], threshold=EIG_TOL,
        op="<=", short=f"every seed: max relative eigenvalue error ≤ {EIG_TOL:g}",
        rule=f"max over seeds and true non-unit eigenvalues λ of |λ̂ − λ|/|λ| ≤ {EIG_TOL:g}, λ̂ the fitted eigenvalue "
        f"matched to λ (optimal matching from the true set: a spurious extra one is left out); as the paper states it; "
        f"partly: ≤ {EIG_PARTLY:g}",
        partly=eig["max"] <= EIG_PARTLY,
    )  # fmt: skip
    if holds or eig["state_max"] is None:
        return
    claims.check(
        "diagnosis: the eigenvalue gap is in the core coordinates, not in the fit's sampling noise",
        "—",
        f"max error {_pct(eig['max'])}; sampling floor {_pct(eig['floor_max'])}; fit on current-state means "
        f"{_pct(eig['state_max'])}",
        eig["max"] >= FLOOR_FACTOR * eig["floor_max"] and eig["state_max"] <= eig["floor_max"] + 1e-3,
        KNOWN_GAPS.reason(cfg, "eigen_diagnosis"),
        id="ours.markov_cores.eigen_gap_in_core", explains="markov.spectrum", where=DIAGNOSIS,
        rule=f"the largest error is ≥ {FLOOR_FACTOR:g}× the test steps' sampling floor (the eigenvalues of the "
        "transition matrix counted on them: what a core holding exactly the current state gives; sampling noise would "
        "put the error at the floor), and the operator fitted to each coordinate's current-state mean is at that floor "
        "(≤ floor + 0.1 %)",
    )  # fmt: skip


def _cca_rows(claims: Claims, results: dict[str, Any], n: int, cfg: Params) -> None:
    cca = results["cca"]
    for key, label, idx, cond in (("cca_top2", "top two", range(min(2, n - 1)), ""),
                                  ("cca_third", "third", [2], " (checked when n − 1 ≥ 3)")):
        if max(idx, default=-1) >= n - 1:
            continue
        paper = [CCA_PAPER[i] for i in idx]
        means = [float(np.mean([c[i] for c in cca])) for i in idx]
        lows = [min(c[i] for c in cca) for i in idx]
        weak = all(lo >= CCA_WEAK[i] for lo, i in zip(lows, idx))
        target = ", ".join(f"{p:g}" for p in paper)
        claims.check(
            f"CCA between seeds' core coordinates: {label} canonical correlation{'s' if len(paper) > 1 else ''} "
            f"{target}{cond}",
            f"canonical correlations 0.999, 0.999 and 0.929 between two seeds' cores",
            f"mean over pairs {[round(m, 4) for m in means]}, lowest pair {[round(x, 4) for x in lows]}",
            weak and all(m >= p - 5e-4 for m, p in zip(means, paper)), KNOWN_GAPS.reason(cfg, key),
            id="markov.cca", where=f"{FIG}, panel D; Markov results",
            rule=f"mean over seed pairs ≥ {target} at the paper's three decimals (≥ value − 0.0005: the paper gives one "
            f"triple and does not say for which pair) and every pair ≥ {', '.join(f'{CCA_WEAK[i]:g}' for i in idx)}; "
            f"top n − 1 of the chosen tail's cores (the paper's top 3: the variant table); partly: only every pair ≥ "
            f"{', '.join(f'{CCA_WEAK[i]:g}' for i in idx)}",
            partly=weak,
        )  # fmt: skip
    if sum(r.id == "markov.cca" for r in claims.rows) > 1:
        claims.combine("markov.cca", "CCA between seeds' core coordinates: the paper's three canonical correlations",
                       "canonical correlations 0.999, 0.999 and 0.929 between two seeds' cores",
                       where=f"{FIG}, panel D; Markov results", unit="parts (top two, third)", mixed=PARTLY,
                       rule="the two rows above (top two; third) both hold; partly: one of them holds",
                       short="top two and third canonical correlations both hold")  # fmt: skip


def _overlap_claims(claims: Claims, results: dict[str, Any], gap: Any) -> None:
    """The paper's "nearly orthogonal" row, judged against two random subspaces of the core's dimension."""
    ov, rand = results["projector_overlap"], results["random_overlap"]
    q95 = results.get("random_overlap_q95", 2 * rand)  # older stored results: twice the random mean
    pca, oracle = results.get("pca_overlap"), results.get("oracle_overlap")
    claims.check(
        f"seeds' cores no more aligned than random subspaces: projector overlap ≤ {q95:.3f} (95 % of random pairs)",
        "nearly orthogonal cores: projector overlap 0.02–0.04", ov, max(ov) <= q95, gap("overlap"),
        id="markov.overlap", where=f"{FIG}, panel C", per_seed=ov, threshold=q95, op="<=",
        short="every seed pair: core overlap ≤ 95th percentile of two random r-dim subspaces",
        rule=f"every seed pair's overlap ≤ the 95th percentile of the overlap of two independent random (n − 1)-dim "
        f"subspaces of R^D (seeded Monte Carlo, 4000 pairs; mean r/D = {rand:.3f}; the paper's 0.02–0.04 sit at this "
        "random level, so a fixed 0.04 bound would fail random subspaces half the time); aligned cores (overlap near 1) "
        "fail it" + (f"; beside it, the seeds' top n − 1 PCA subspaces overlap {_fmt_list(pca)}" if pca else "")
        + (f" and their one-hot-state oracle subspaces {_fmt_list(oracle)} (the low overlap is not specific to the core "
           "either)" if oracle else ""),
    )  # fmt: skip


def _fmt_list(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


def _cca_baselines(claims: Claims, results: dict[str, Any], n: int) -> None:
    """The CCA row's baselines (stored results from before they were computed have none): coordinates
    in random subspaces of the core's dimension, and in the seeds' PCA subspaces."""
    if "random_cca" not in results:
        return
    core = [c[n - 2] for c in results["cca"]]  # the (n − 1)-th canonical correlation of each pair: the weakest
    rand = [c[n - 2] for c in results["random_cca"]]
    claims.check(
        f"the cores' CCA beats random {n - 1}-dim subspaces' (weakest canonical correlation, every seed pair)", "—",
        [core, rand], all(c > r + 0.1 for c, r in zip(core, rand)), id="ours.markov_cores.cca_beats_random", where=OURS,
        per_seed=[c - r for c, r in zip(core, rand)], threshold=0.1, op=">",
        short="every pair: weakest core CCA > random-subspace CCA + 0.1",
        rule="the (n − 1)-th canonical correlation of the core coordinates exceeds, by more than 0.1, that of the "
        "coordinates in one seeded random (n − 1)-dim subspace of each seed's activations, for every seed pair: "
        "the alignment is not what an arbitrary low-dimensional view of the same activations gives (a view that holds "
        "the current state does give it: the oracle row below)",
    )  # fmt: skip
    pca = [c[n - 2] for c in results["pca_cca"]]
    claims.check(
        "the seeds' PCA subspaces of the same dimension align as well (CCA within 0.01 of the cores')", "—",
        [core, pca], all(abs(c - p) <= 0.01 for c, p in zip(core, pca)), id="ours.markov_cores.pca_aligns_too",
        where=OURS, per_seed=[abs(c - p) for c, p in zip(core, pca)], threshold=0.01, op="<=",
        short="every pair: |weakest core CCA − weakest PCA CCA| ≤ 0.01",
        rule="on this chain the activity's top n − 1 directions hold the same state information as the core, so CCA "
        "alignment across seeds does not single the core out; the core's distinction is the keep/remove test "
        "(a PCA subspace that missed the state would fall far below the cores' CCA and fail this)",
    )  # fmt: skip


def _weight_claims(claims: Claims, results: dict[str, Any], gap: Any) -> None:
    """The paper's "different weights" row, judged against the same seeds' weights at initialisation."""
    wc = results["weight_cosine"]
    init = results.get("init_weight_cosine")
    base = init if init is not None else [0.0] * len(wc)
    excess = [abs(w) - abs(i) for w, i in zip(wc, base)]
    claims.check(
        f"training leaves the seeds' weights as far apart as at initialisation (|cosine| ≤ |initial| + {WEIGHT_SLACK:g})",
        "models with different weights: near-zero cosine of the parameter vectors", [wc, init] if init else wc,
        max(excess) <= WEIGHT_SLACK, gap("weights"), id="markov.weights_differ", where=f"{FIG}, panel A",
        per_seed=excess, threshold=WEIGHT_SLACK, op="<=", short=f"every pair: |cos trained| − |cos init| ≤ {WEIGHT_SLACK:g}",
        rule="for every seed pair, the cosine of the flattened parameter vectors after training exceeds the same pair's "
        f"cosine at initialisation by at most {WEIGHT_SLACK:g} (the paper gives no number; independent initialisations "
        "are near-orthogonal by construction, so the test is that training does not bring the seeds together; "
        "copies of one model give 1)",
    )  # fmt: skip


def build_claims(results: dict[str, Any], cfg: Params) -> Claims:
    """The chapter's claims, written for a general n-state chain; each rule states its threshold.

    The paper's equal-accuracy check of its own variant (zero ablation, raw-logit tail) is made
    only when ``T`` is the paper chain (:func:`ace_helpers.toys.tasks.markov.is_paper_chain`), the
    third canonical correlation only when n − 1 ≥ 3, the eigenvalue diagnosis only when the
    eigenvalue row does not hold.  No threshold depends on the preset.
    """
    claims = Claims()
    gap = lambda key: KNOWN_GAPS.reason(cfg, key)  # noqa: E731 - the measured cause, where one is known
    n = results["n_states"]
    base = results["base_acc"]
    bayes = results["bayes_acc"]
    claims.check(f"every seed reaches the Bayes accuracy {bayes:.4f} (within {ACC_TOL:g})",
                 "every seed reaches near-optimal next-state accuracy (0.7501; the Bayes optimum 0.75)", base,
                 min(base) >= bayes - ACC_TOL, gap("accuracy"), id="markov.accuracy", where="Markov results",
                 per_seed=base, threshold=bayes - ACC_TOL, op=">=", short=f"every seed: test acc ≥ Bayes − {ACC_TOL:g}",
                 rule=f"every seed's test accuracy (all positions) ≥ Σ_x π(x) max_y T[x, y] − {ACC_TOL:g}: the finite test "
                 "set's own sampling noise (about 0.0014 at 93,000 predictions, so 0.005 is 3.5 of it); an untrained model "
                 "sits near chance")  # fmt: skip
    ranks_paper = results["core_ranks_paper"]
    claims.check(f"core rank = n − 1 = {n - 1} in every seed (raw-logit tail, the paper's)",
                 "3-D cores out of the 64-D residual stream, in every model", ranks_paper,
                 all(r == n - 1 for r in ranks_paper), gap("rank_paper_tail"), id="markov.core_rank", where=f"abstract; {FIG}",
                 per_seed=ranks_paper, short="every seed: energy rank (J = W_U) = n − 1",
                 rule=f"energy rank (τ = ENERGY = {cfg['ENERGY']:g}; the {CODE} uses 0.999) with J = W_U equals n − 1 in "
                 "every seed; partly: n − 1 or n (the n-th is the softmax-invariant direction, next row)",
                 partly=all(r in (n - 1, n) for r in ranks_paper))  # fmt: skip
    cos = results["softmax_cos"]
    claims.check("the raw-logit tail's n-th direction shifts all logits equally (softmax-invariant)", "—", cos,
                 min(cos) >= 0.9, gap("softmax_direction"), id="ours.markov_cores.softmax_direction", explains="markov.core_rank", where=DIAGNOSIS,
                 rule="|cos(W_U q_n, 1)| ≥ 0.9 in every seed, q_n the n-th balanced direction (1: a pure shift of every "
                 "logit, which changes no probability; a random logit direction gives about 0.5 for n = 4); it explains "
                 "why the raw-logit rank sits at the 0.999 cut")  # fmt: skip
    if cfg["TAIL"] != "logits":
        claims.check(f"core rank = n − 1 = {n - 1} in every seed ({cfg['TAIL']} tail, ours)", "—", results["core_ranks"],
                     all(r == n - 1 for r in results["core_ranks"]), gap("rank"), id="ours.markov_cores.rank_chosen_tail", where=OURS,
                     rule="energy rank equals n − 1 in every seed; the centered tail J = (I − 11ᵀ/n) W_U has the "
                     "softmax-invariant direction in its null space, so no weaker form is allowed")  # fmt: skip
    claims.check(f"core only ≥ 0.99 × full model ({cfg['TAIL']} tail, {cfg['ABLATION']} ablation)",
                 "the core alone keeps the full model's accuracy (0.7501)", [results["keep_acc"], base],
                 all(k >= 0.99 * b for k, b in zip(results["keep_acc"], base)), gap("keep"), id="ours.markov_cores.keep_chosen_variant", where=f"{FIG}, panel B",
                 rule="every seed's core-only accuracy ≥ 0.99 × its full-model accuracy, for the chosen tail and "
                 "ablation on any chain (1 % slack; the paper's own variant on the paper chain: next row)")  # fmt: skip
    if is_paper_chain(cfg["T"]):
        claims.check("core only = full model (zero ablation, raw-logit tail: the paper's variant, on the paper chain)",
                     "the core alone keeps the full model's accuracy (0.7501)", results["keep_acc_paper"],
                     all(abs(k - b) <= 0.005 for k, b in zip(results["keep_acc_paper"], base)), gap("keep_paper"),
                     id="markov.sufficient", where=f"{FIG}, panel B", short="every seed: |core only − full| ≤ 0.005",
                     per_seed=[abs(k - b) for k, b in zip(results["keep_acc_paper"], base)], threshold=0.005, op="<=",
                     rule="|core only − full model| ≤ 0.005 in every seed (465 of the 93,000 test predictions; the paper "
                     "reports equality), checked when T is the paper chain (its 4 × 4 shape and values)")  # fmt: skip
    chance, removed = results["chance_acc"], results["remove_acc"]
    claims.check(f"core removed: accuracy to chance ({cfg['ABLATION']} ablation)",
                 f"removing the core drops accuracy to chance (the chance line: targets equal to argmax π, here {chance:.4f})",
                 removed, all(r <= chance + REMOVE_TOL for r in removed), gap("remove"),
                 id="markov.necessary", where=f"{FIG}, panel B; chance line from the {CODE}",
                 per_seed=removed, threshold=chance + REMOVE_TOL, op="<=", short=f"every seed: core removed ≤ chance + {REMOVE_TOL:g}",
                 rule=f"every seed ≤ chance + {REMOVE_TOL:g} (ours: 'to chance' read as within one accuracy point; no lower "
                 f"bound, a model without its core may predict one fixed state, at or below chance); partly: ≤ chance + "
                 f"{REMOVE_PARTLY:g}", partly=all(r <= chance + REMOVE_PARTLY for r in removed))  # fmt: skip
    consensus_claims(claims, results, gap)
    _overlap_claims(claims, results, gap)
    _cca_rows(claims, results, n, cfg)
    _cca_baselines(claims, results, n)
    oracle_claims(claims, results, n)
    _weight_claims(claims, results, gap)
    _eig_claims(claims, results, cfg)
    ratio_o, ratio_s = r2_ratios(results)
    claims.check(f"R²/R²_oracle > {R2_ORACLE_MIN:g} in every seed", "R²_core / R²_oracle > 0.98 (R²_oracle = 0.5)",
                 ratio_o, min(ratio_o) > R2_ORACLE_MIN, gap("r2_oracle"), id="markov.r2", where="Markov results",
                 per_seed=ratio_o, threshold=R2_ORACLE_MIN, op=">", short=f"every seed: R²/R²_oracle > {R2_ORACLE_MIN:g}",
                 rule=f"every seed > {R2_ORACLE_MIN:g}, as the paper states it (no upper bound: the oracle averages over "
                 f"one-hot coordinates, so the ratio can exceed 1); partly: > {R2_ORACLE_PARTLY:g}",
                 partly=min(ratio_o) > R2_ORACLE_PARTLY)  # fmt: skip
    claims.check("R²/r2_state in [0.95, 1.05] in every seed (basis-free oracle)", "—", ratio_s,
                 all(0.95 <= r <= 1.05 for r in ratio_s), gap("r2_state"), id="ours.markov_cores.r2_state", where=OURS,
                 rule="r2_state: R² of the next core coordinates regressed on the one-hot current state, the most any "
                 "function of the state explains; a core that evolves as the chain does reaches it (±0.05)")  # fmt: skip
    for c, m in enumerate(results.get("extra_n_states", [])):
        ratios = [a / b for a, b in zip(results["extra_r2"][c], results["extra_r2_state"][c])]
        eig = eigen_summary(results, "extra_", c)
        ok = (all(r == m - 1 for r in results["extra_core_ranks"][c]) and eig["max"] <= EIG_PARTLY
              and all(0.95 <= r <= 1.05 for r in ratios))
        claims.check(f"extra chain {c + 1} (n = {m}): rank n − 1, eigenvalues within {EIG_PARTLY:.0%}, R²/r2_state in "
                     "[0.95, 1.05]", "—",
                     [results["extra_core_ranks"][c], round(eig["max"], 4), [round(r, 4) for r in ratios]], ok,
                     gap(f"extra_{c + 1}"), id=f"ours.markov_cores.extra_chain_{c + 1}", where=OURS,
                     rule=f"chosen tail: rank n − 1 in every seed, max relative eigenvalue error ≤ {EIG_PARTLY:g} (the main "
                     f"chain's weaker bound; this chain's sampling floor: {_pct(eig['floor_max'])}), R²/r2_state in "
                     "[0.95, 1.05]")  # fmt: skip
    return claims
