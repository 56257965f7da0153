"""What chapter 1's rules read from a run: each rule's ``measure`` (the flat results dict in, a
:class:`~ace_helpers.repro.rules.Measured` out) and the per-seed summaries they share (:func:`r2_ratios`,
:func:`eigen_summary`).  The rules themselves, their thresholds and prose, are the table in :mod:`ace_helpers.chapters.markov_cores.claims`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ace_helpers.repro.params import Params
from ace_helpers.repro.rules import NOISE_Z, ONE, Comparison, Measured
from ace_helpers.toys.tasks.markov import is_paper_chain

EIG_TOL, EIG_PARTLY = 0.01, 0.05  # relative eigenvalue error: the paper's "< 1 %", and our weaker bound
CCA_PAPER, CCA_WEAK = (0.999, 0.999, 0.929), (0.99, 0.99, 0.90)  # the paper's triple; our weaker per-pair bounds
CCA_ROUND = 5e-4  # the paper's three decimals: a mean ≥ value − 0.0005 rounds to it
FLOOR_FACTOR = 2.0  # the diagnosis: an error this many times the sampling floor is not sampling noise


def r2_ratios(results: Mapping[str, Any], suffix: str = "") -> tuple[list[float], list[float]]:
    """Per seed ``(R²/R²_oracle, R²/r2_state)`` of a variant (``suffix`` "" or "_paper")."""
    r2, r2s = results[f"r2{suffix}"], results[f"r2_state{suffix}"]
    return [v / results["r2_oracle"] for v in r2], [a / b for a, b in zip(r2, r2s)]


def eigen_summary(results: Mapping[str, Any], prefix: str = "", chain: int | None = None) -> dict[str, Any]:
    """The eigenvalue numbers of one chain (main: ``prefix=""``; extra chain c: ``prefix="extra_", chain=c``).

    Keys: ``max`` (largest relative error over seeds and true eigenvalues), ``per_seed`` (each seed's
    largest), ``per_eig`` (per true eigenvalue, the largest over seeds), ``floor`` (per true eigenvalue, the
    sampling floor), ``floor_max``, ``state_max`` (largest error of the fit on current-state means; ``None`` where
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


# --- measurements: each reads the flat results dict ------------------------------------------------------------


def accuracy(r: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured({"test accuracy": r["base_acc"], "Bayes accuracy": r["bayes_acc"]}, context={"bayes": r["bayes_acc"]})


def rank_paper(r: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured(
        {"energy rank (J = W_U)": r["core_ranks_paper"], "n": r["n_states"]},
        context={"n1": r["n_states"] - 1, "energy": cfg["ENERGY"]},
    )


def softmax_direction(r: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured({"|cos(W_U q_n, 1)|": r["softmax_cos"]})


def rank_chosen(r: Mapping[str, Any], cfg: Params) -> Measured | None:
    if cfg["TAIL"] == "logits":
        return None
    return Measured(
        {"energy rank (chosen tail)": r["core_ranks"], "n": r["n_states"]}, context={"n1": r["n_states"] - 1, "tail": cfg["TAIL"]}
    )


def keep_chosen(r: Mapping[str, Any], cfg: Params) -> Measured:
    ratio = [k / b for k, b in zip(r["keep_acc"], r["base_acc"])]
    return Measured(
        {"core only / full model": ratio},
        ours=[r["keep_acc"], r["base_acc"]],
        context={"tail": cfg["TAIL"], "ablation": cfg["ABLATION"]},
    )


def sufficient(r: Mapping[str, Any], cfg: Params) -> Measured | None:
    if not is_paper_chain(cfg["T"]):
        return None
    diff = [abs(k - b) for k, b in zip(r["keep_acc_paper"], r["base_acc"])]
    return Measured({"|core only − full|": diff}, ours=r["keep_acc_paper"])


def necessary(r: Mapping[str, Any], cfg: Params) -> Measured:
    removed, n_pred = r["remove_acc_paper"], cfg["N_TEST"] * (cfg["SEQ_LEN"] - 1)
    se = [float(np.sqrt(a * (1 - a) / n_pred)) for a in removed]
    top = int(np.argmax(removed))
    return Measured(
        {"core removed": removed, "chance": r["chance_acc"], "sampling s.e.": se},
        context={"chance": r["chance_acc"], "n_pred": n_pred, "z": NOISE_Z, "top": removed[top], "top_se": NOISE_Z * se[top]},
    )


def remove_chosen(r: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured(
        {"core removed": r["remove_acc"], "chance": r["chance_acc"]}, context={"ablation": cfg["ABLATION"], "tail": cfg["TAIL"]}
    )


def overlap(r: Mapping[str, Any], cfg: Params) -> Measured:
    rand = r["random_overlap"]
    q95 = r.get("random_overlap_q95", 2 * rand)  # older stored results: twice the random mean
    pca, oracle = r.get("pca_overlap"), r.get("oracle_overlap")
    extra = (f"; beside it, the seeds' top n − 1 PCA subspaces overlap {_fmt_list(pca)}" if pca else "") + (
        f" and their one-hot-state oracle subspaces {_fmt_list(oracle)} (the low overlap is not specific to the core either)"
        if oracle
        else ""
    )
    return Measured(
        {"core overlap": r["projector_overlap"], "random 95th percentile": q95},
        context={"q95": q95, "rand": rand, "beside": extra},
    )


def _fmt_list(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


def cca(idx: tuple[int, ...]) -> Any:
    def measure(r: Mapping[str, Any], cfg: Params) -> Measured | None:
        n, cca = r["n_states"], r["cca"]
        if max(idx) >= n - 1:
            return None
        means = [float(np.mean([c[i] for c in cca])) for i in idx]
        lows = [min(c[i] for c in cca) for i in idx]
        q = {f"mean CCA {i + 1}": m for i, m in zip(idx, means)} | {f"lowest pair CCA {i + 1}": x for i, x in zip(idx, lows)}
        return Measured(q, ours=f"mean over pairs {[round(m, 4) for m in means]}, lowest pair {[round(x, 4) for x in lows]}")

    measure.__qualname__ = f"_cca_{'_'.join(map(str, idx))}"
    return measure


def cca_tests(idx: tuple[int, ...]) -> tuple[tuple[Comparison, ...], tuple[Comparison, ...]]:
    weak = tuple(Comparison(f"lowest pair CCA {i + 1}", ">=", CCA_WEAK[i], over=ONE) for i in idx)
    return tuple(Comparison(f"mean CCA {i + 1}", ">=", CCA_PAPER[i] - CCA_ROUND, over=ONE) for i in idx) + weak, weak


def weights(r: Mapping[str, Any], cfg: Params) -> Measured:
    wc, init = r["weight_cosine"], r.get("init_weight_cosine")
    excess = [abs(w) - abs(i) for w, i in zip(wc, init if init is not None else [0.0] * len(wc))]
    return Measured({"|cos trained| − |cos init|": excess}, ours=[wc, init] if init else wc)


def spectrum(r: Mapping[str, Any], cfg: Params) -> Measured:
    eig = eigen_summary(r)
    lams = [f"{re:.3g}{im:+.3g}i" if abs(im) > 1e-9 else f"{re:.3g}" for re, im in r["true_eigs"]]
    per_eig = ", ".join(f"λ = {lam}: {_pct(e)}" for lam, e in zip(lams, eig["per_eig"]))
    worst = int(np.argmax(eig["per_eig"]))
    return Measured(
        {"max relative eigenvalue error": eig["per_seed"]},
        ours=f"max {_pct(eig['max'])} ({per_eig})",
        context={"worst_lam": lams[worst], "worst": _pct(eig["per_eig"][worst]), "floor": _pct(eig["floor"][worst])},
    )


def eigen_gap(r: Mapping[str, Any], cfg: Params) -> Measured | None:
    eig = eigen_summary(r)
    if eig["state_max"] is None:
        return None
    return Measured(
        {
            "largest error / sampling floor": eig["max"] / eig["floor_max"],
            "state-means fit − floor": eig["state_max"] - eig["floor_max"],
        },
        ours=f"max error {_pct(eig['max'])}; sampling floor {_pct(eig['floor_max'])}; fit on current-state means "
        f"{_pct(eig['state_max'])}",
    )


def r2(r: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured({"R²/R²_oracle": r2_ratios(r)[0]})


def r2_state(r: Mapping[str, Any], cfg: Params) -> Measured:
    return Measured({"R²/r2_state": r2_ratios(r)[1]})


def extra_chains(r: Mapping[str, Any], cfg: Params) -> list[Measured]:
    out = []
    for c, m in enumerate(r.get("extra_n_states", [])):
        ratios = [a / b for a, b in zip(r["extra_r2"][c], r["extra_r2_state"][c])]
        eig = eigen_summary(r, "extra_", c)
        ranks = r["extra_core_ranks"][c]
        out.append(
            Measured(
                {"energy rank": ranks, "n": m, "max relative eigenvalue error": eig["max"], "R²/r2_state": ratios},
                ours=[ranks, round(eig["max"], 4), [round(x, 4) for x in ratios]],
                key=str(c + 1),
                context={"m": m, "floor": _pct(eig["floor_max"])},
            )
        )
    return out


TOP2, TOP2_WEAK = cca_tests((0, 1))
THIRD, THIRD_WEAK = cca_tests((2,))

#: The chapter's rules, in the order of its claims table.
