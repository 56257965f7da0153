"""Chapter 6 (notebooks/06_ace_vs_alternatives): ACE against other subspace methods, with ground truth.

Ours, beyond the paper.  For each task, every method of :mod:`ace_helpers.method.subspaces` (and ACE)
returns a rank-r basis at the same hook point from the same activations, for r = 1..R; each basis
is scored by its overlap with the task's ground-truth subspace, by keeping it alone (sufficiency)
and removing it (necessity) about the activation mean through the model's linear tail, and by the
time it took.  Tasks and their ground truth:

* the planted system (chapter 0): the planted active-and-relevant block, beside an active-only
  and a relevant-only distractor block; scored on its own samples;
* the Markov chain (one seed of chapter 1's model, layer output at every position): the n − 1
  dimensional belief state, the span of the activation means per current state; methods fit on
  the training sequences, scored on held-out ones;
* modular addition after grokking (one model of chapter 7's setting, last token of layer 2): the
  Fourier subspace of the key frequencies read from the token embedding, Σ_c h̄_c·(cos, sin)(2πkc/p)
  over the class means h̄_c; fitted on the training pairs, scored on the test pairs.

Subject–verb agreement in the LLMs (no ground truth; causal metrics only) is run by
:mod:`ace_helpers.chapters.ace_vs_alternatives.llm` (``results.json`` key ``llm``).

``results.json``: per task key (``planted``, ``markov``, ``modadd``): ``ranks``, ``gt_rank``,
``base_acc``, ``chance_acc``, ``overlap``/``keep``/``remove`` {method: per rank, None where the
method has fewer directions}, ``ns_rank`` {method: minimal N&S rank or None}, ``seconds``
{method: wall time of all its bases}; ``modadd`` also ``key_freqs`` (the ground truth's
frequencies), ``key_amp`` (each one's amplitude in the class means), ``key_share`` (the share
of each one's plane inside ACE's rank-``gt_rank`` subspace) and ``gt_overlap_interval`` / ``gt_overlap_method``
(the interval of ACE's ground-truth overlap: :func:`overlap_bootstrap`); ``llm`` (see
:mod:`ace_helpers.chapters.ace_vs_alternatives.llm`; None when LLM_MODELS is empty); top level ``wall_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from ace_helpers.chapters.ace_vs_alternatives import llm as llm_part
from ace_helpers.chapters.ace_vs_alternatives.claims import (  # noqa: F401 - the chapter's claims
    KEEP_TOL,
    KNOWN_GAPS,
    METHODS,
    NS_RULE,
    PAPER,
    REMOVE_TOL,
    TASKS,
    WEAK_FREQ_RULE,
    WHERE,
    build_claims,
    ns_markdown,
    ns_table_rows,
)
from ace_helpers.chapters.ace_vs_alternatives.knobs import KNOBS, NOTEBOOK, PARAMS, PRESETS, check  # noqa: F401
from ace_helpers.chapters.markov_run import run as markov
from ace_helpers.chapters.markov_run.jobs import hook_site
from ace_helpers.chapters.modadd import grokked
from ace_helpers.chapters.toy_views import views as toy_views
from ace_helpers.llm.provenance import describe_models
from ace_helpers.method.compare import projector_overlap
from ace_helpers.method.core import extract_core
from ace_helpers.method.devices import resolve_device
from ace_helpers.method.subspaces import (
    class_mean_basis,
    das_basis,
    jacobian_basis,
    keep_remove_accuracy,
    minimal_ns_rank,
    pca_basis,
    probe_basis,
    random_basis,
)
from ace_helpers.repro.departures import departures
from ace_helpers.repro.params import Params
from ace_helpers.repro.untested import not_tested_table
from ace_helpers.toys.tasks.markov import chance_accuracy, markov_dataset
from ace_helpers.toys.tasks.modadd import modadd_dataset
from ace_helpers.toys.tasks.planted import planted_system

__all__ = ["PARAMS", "build_claims", "hook_site", "not_tested_table", "run", "run_departures"]


def run_departures(cfg: Params) -> list[str]:
    """How this run departs from the paper's protocol: the knobs that differ from the ``paper`` preset, and what each
    bundled language model is (:func:`~ace_helpers.llm.provenance.describe_models`)."""
    return departures(cfg, describe_models(cfg["LLM_MODELS"]))


FREQ_POWER = 0.9
#: Activation rows each learned (DAS) basis is trained on (a seeded subsample; ours, for speed).
DAS_ROWS = 8000
#: Resamples and level of the mod-add ground-truth overlap's interval (:func:`overlap_bootstrap`).
GT_BOOT, GT_LEVEL = 200, 0.9
GT_BOOT_METHOD = (
    f"normal bootstrap interval, {GT_LEVEL:.0%}: the overlap ± z·sd of its {GT_BOOT} resamples (test pairs "
    "resampled within each answer class, the ground truth and ACE's basis refitted on each); centred on the "
    "measured overlap, since resampled class means are noisier and lower every resampled overlap"
)


# -------------------- one task ----------------------------------------------------------------
def compare_methods(
    fit_h: np.ndarray,
    fit_y: np.ndarray,
    test_h: np.ndarray,
    test_y: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    ace_basis: Callable[[], np.ndarray],
    truth: np.ndarray,
    ranks: list[int],
    chance: float,
    cfg: Params,
) -> dict[str, Any]:
    """Every method at every rank: overlap with ``truth`` (D, g), keep / remove accuracy on the test rows.

    ``ace_basis()`` returns ACE's full ordered (D, D) basis (timed as ACE's cost); the other methods are
    fitted on (fit_h, fit_y); the Jacobian is the linear tail's ``weight`` (K, D).
    """
    dim = fit_h.shape[1]
    base = float(np.mean((test_h @ weight.T + (0 if bias is None else bias)).argmax(-1) == test_y))
    out: dict[str, Any] = {
        "ranks": ranks,
        "gt_rank": int(truth.shape[1]),
        "base_acc": base,
        "chance_acc": chance,
        "overlap": {},
        "keep": {},
        "remove": {},
        "seconds": {},
        "ns_rank": {},
    }
    t = time.perf_counter()
    full = ace_basis()
    nested = {"ace": (full, time.perf_counter() - t)}
    for name, fn in (
        ("pca", lambda: pca_basis(fit_h, max(ranks))),
        ("jacobian", lambda: jacobian_basis(weight, dim, max(ranks))),
        ("probe", lambda: probe_basis(fit_h, fit_y, max(ranks), seed=cfg["SEED"])),
        ("class_means", lambda: class_mean_basis(fit_h, fit_y, max(ranks))),
    ):
        t = time.perf_counter()
        nested[name] = (fn(), time.perf_counter() - t)
    for m in METHODS:
        out["overlap"][m], out["keep"][m], out["remove"][m] = [], [], []
        spent = 0.0
        for r in ranks:
            t = time.perf_counter()
            if m in nested:
                q = nested[m][0][:, :r] if nested[m][0].shape[1] >= r else None
            elif m == "random":
                q = random_basis(dim, r, cfg["SEED"] + r)
            else:
                q = das_basis(
                    fit_h, weight, bias, r, steps=cfg["DAS_STEPS"], lr=cfg["DAS_LR"], seed=cfg["SEED"] + r, max_rows=DAS_ROWS
                )
            spent += time.perf_counter() - t
            if q is None:
                for key in ("overlap", "keep", "remove"):
                    out[key][m].append(None)
                continue
            keep, remove = keep_remove_accuracy(test_h, weight, bias, test_y, q)
            out["overlap"][m].append(projector_overlap(q, truth))
            out["keep"][m].append(keep)
            out["remove"][m].append(remove)
        out["seconds"][m] = spent + (nested[m][1] if m in nested else 0.0)
        out["ns_rank"][m] = minimal_ns_rank(
            ranks, out["keep"][m], out["remove"][m], base, chance, keep_tol=KEEP_TOL, remove_tol=REMOVE_TOL
        )
    return out


def run_planted(cfg: Params) -> dict[str, Any]:
    """The planted system (chapter 0's, with its readout W as the tail)."""
    s = planted_system(
        n=cfg["N_SAMPLES"],
        dim=cfg["DIM"],
        r_core=cfg["R_CORE"],
        r_active=cfg["R_CORE"],
        r_relevant=cfg["R_CORE"],
        n_classes=4,
        active_std=6.0,
        relevant_weight=20.0,
        seed=cfg["SEED"],
    )
    ace = lambda: extract_core(s.H, s.W, energy=0.99).full_basis
    out = compare_methods(
        s.H, s.labels, s.H, s.labels, s.W, None, ace, s.core, list(range(1, cfg["PLANTED_R_MAX"] + 1)), 0.25, cfg
    )
    out["distractor_overlap"] = {
        m: {"active_only": projector_overlap(q, s.active_only), "relevant_only": projector_overlap(q, s.relevant_only)}
        for m, q in (("pca", pca_basis(s.H, cfg["R_CORE"])), ("jacobian", jacobian_basis(s.W, cfg["DIM"], cfg["R_CORE"])))
    }
    return out


def run_markov(cfg: Params) -> dict[str, Any]:
    """One Markov seed (chapter 1's model), layer output at every position; ground truth: the state means."""
    data = markov_dataset(cfg["T"], cfg["N_TRAIN"], cfg["N_TEST"], cfg["SEQ_LEN"], train_seed=0, test_seed=999)
    model = markov.train_models(
        data,
        [cfg["SEED"]],
        d_model=cfg["D_MODEL"],
        epochs=cfg["EPOCHS"],
        lr=cfg["LR"],
        precision=cfg["PRECISION"],
        device=resolve_device(cfg["DEVICE"]),
    ).models[0]
    view = toy_views.markov_view(model, data, cfg["ENERGY"])
    dim = view.h_train.shape[1]
    test_h = view.h_test.reshape(-1, dim)
    state_now = data.test_inputs.reshape(-1).numpy()
    truth = class_mean_basis(test_h, state_now, data.n_states - 1)
    w = markov.tail_jacobian(model, "centered")  # centred logits: the same argmax as the logits
    bias = model.lm_head.bias.detach().double().numpy()
    out = compare_methods(
        view.h_train,
        data.train_targets.reshape(-1).numpy(),
        test_h,
        data.test_targets.reshape(-1).numpy(),
        w,
        bias - bias.mean(),
        lambda: extract_core(view.h_train, w, energy=cfg["ENERGY"]).full_basis,
        truth,
        list(range(1, cfg["R_MAX"] + 1)),
        chance_accuracy(data.T, data.test_targets),
        cfg,
    )
    out["ace_rank"] = view.core.rank
    return out


def fourier_truth(model: Any, h: np.ndarray, answers: np.ndarray, p: int) -> tuple[np.ndarray, list[int]]:
    """(D, 2k) the Fourier subspace of the key frequencies (from the token embedding) at the hook, and the frequencies."""
    emb = model.tok_emb.weight.detach().double().numpy()  # (p, D)
    spec = np.sum(np.abs(np.fft.rfft(emb - emb.mean(axis=0), axis=0)) ** 2, axis=1)[1:]
    order = np.argsort(spec)[::-1]
    keys = sorted(int(f) + 1 for f in order[: int(np.searchsorted(np.cumsum(spec[order]) / spec.sum(), FREQ_POWER) + 1)])
    u, s, _ = np.linalg.svd(frequency_directions(h, answers, p, keys), full_matrices=False)
    return u[:, : int(np.sum(s > s[0] * 1e-8))], keys


def frequency_directions(h: np.ndarray, answers: np.ndarray, p: int, keys: list[int]) -> np.ndarray:
    """(D, 2K) the cos and sin directions of each frequency in ``keys`` in the class means of ``h`` (N, D):
    column 2i is Σ_c cos(2πk_i c/p)·(h̄_c − h̄), column 2i + 1 the same with sin."""
    means = np.stack([h[answers == c].mean(axis=0) for c in range(p)]) - h.mean(axis=0)  # (p, D)
    c = np.arange(p)
    return np.stack([means.T @ f(2 * np.pi * k * c / p) for k in keys for f in (np.cos, np.sin)], axis=1)


def frequency_shares(
    basis: np.ndarray, h: np.ndarray, answers: np.ndarray, p: int, keys: list[int]
) -> tuple[list[float], list[float]]:
    """Per frequency of ``keys``: (its amplitude in the class means, the share of its plane inside span(``basis``)).

    ``basis`` (D, r) orthonormal. The amplitude is the larger singular value of the frequency's (D, 2)
    cos/sin directions; the share is ‖basisᵀU‖²_F / 2 for U an orthonormal basis of that plane (1: inside).
    """
    dirs = frequency_directions(h, answers, p, keys)
    amps, shares = [], []
    for i in range(len(keys)):
        u, s, _ = np.linalg.svd(dirs[:, 2 * i : 2 * i + 2], full_matrices=False)
        amps.append(float(s[0]))
        shares.append(float(np.linalg.norm(basis.T @ u, "fro") ** 2 / 2))
    return amps, shares


def overlap_bootstrap(
    h: np.ndarray,
    answers: np.ndarray,
    p: int,
    keys: list[int],
    weight: np.ndarray,
    energy: float,
    rank: int,
    point: float,
    *,
    n_boot: int = GT_BOOT,
    level: float = GT_LEVEL,
    seed: int = 0,
) -> list[float]:
    """Interval of the overlap ``point`` of ACE's rank-``rank`` basis of ``h`` (N, D) with the Fourier truth of
    ``keys``: seeded bootstrap over the rows, resampled within each answer class (every class keeps its count),
    both subspaces refitted per resample; ``point ± z·sd`` of the resampled overlaps (z for ``level``), clipped
    to [0, 1].  Centred on ``point``: the resamples' duplicated rows make the refitted class means noisier, which
    lowers every resampled overlap, so their spread measures the noise and their mean does not."""
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(answers == c) for c in range(p)]
    stats = []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(g, size=len(g)) for g in groups if len(g)])
        u, _, _ = np.linalg.svd(frequency_directions(h[idx], answers[idx], p, keys), full_matrices=False)
        q = extract_core(h[idx], weight, energy=energy).full_basis[:, :rank]
        stats.append(projector_overlap(q, u[:, :rank]))
    half = float(scipy_stats.norm.ppf(0.5 + level / 2)) * float(np.std(stats, ddof=1))
    return [float(np.clip(point - half, 0.0, 1.0)), float(np.clip(point + half, 0.0, 1.0))]


def run_modadd(cfg: Params) -> dict[str, Any]:
    """One grokked mod-add model (chapter 7's training), last token of layer 2."""
    data = modadd_dataset(cfg["P"], cfg["TRAIN_FRACTION"], seed=42)
    models, grok = grokked.train_modadd(cfg, data, n_models=1)
    model = models[0]
    view = toy_views.modadd_view(model, data, cfg["MODADD_ENERGY"])
    answers = data.test_answers.numpy()
    truth, keys = fourier_truth(model, view.h_test, answers, data.p)
    w = model.lm_head.weight.detach().double().numpy()
    b = model.lm_head.bias.detach().double().numpy()
    ace_basis = lambda: extract_core(view.h_test, w, energy=cfg["MODADD_ENERGY"]).full_basis
    out = compare_methods(
        view.h_train,
        data.train_targets[:, -1].numpy(),
        view.h_test,
        answers,
        w,
        b,
        ace_basis,
        truth,
        list(range(1, cfg["MODADD_R_MAX"] + 1)),
        1.0 / data.p,
        cfg,
    )
    g = truth.shape[1]
    amps, shares = frequency_shares(ace_basis()[:, :g], view.h_test, answers, data.p, keys)
    out.update(ace_rank=view.core.rank, key_freqs=keys, key_amp=amps, key_share=shares, grok_step=grok[0])
    if g in out["ranks"]:
        point = out["overlap"]["ace"][out["ranks"].index(g)]
        out["gt_overlap_interval"] = overlap_bootstrap(
            view.h_test, answers, data.p, keys, w, cfg["MODADD_ENERGY"], g, point, seed=cfg["SEED"]
        )
        out["gt_overlap_method"] = GT_BOOT_METHOD
    return out


def run(cfg: Params) -> dict[str, Any]:
    """All tasks (mod-add only with MODADD; the LLMs of LLM_MODELS)."""
    start = time.perf_counter()
    res = {"planted": run_planted(cfg), "markov": run_markov(cfg), "modadd": run_modadd(cfg) if cfg["MODADD"] else None}
    res["llm"] = llm_part.run_llm(cfg)
    res["wall_s"] = time.perf_counter() - start
    return res


def finding_text(res: dict[str, Any]) -> str:
    """Markdown: per task, which methods reach N&S first, and what the learned basis cost against ACE (from the results)."""
    parts = []
    for task in TASKS:
        s = res.get(task)
        if s is None:
            continue
        ns = s["ns_rank"]
        reached = {m: r for m, r in ns.items() if r is not None}
        if not reached:
            parts.append(f"**{task}**: no method is necessary and sufficient at any swept rank.")
            continue
        best = min(reached.values())
        winners = sorted(m for m, r in reached.items() if r == best)
        ratio = s["seconds"]["das"] / max(s["seconds"]["ace"], 1e-9)
        text = (
            f"**{task}** (ground-truth rank {s['gt_rank']}): N&S first at rank {best}, by {', '.join(winners)}; "
            f"ACE: {'never' if ns['ace'] is None else ns['ace']}, DAS: {'never' if ns['das'] is None else ns['das']} "
            f"(DAS took {ratio:.0f}× ACE's time over the sweep)."
        )
        if winners != ["ace"] and "ace" in winners:
            text += " ACE ties here; it does not win alone."
        elif "ace" not in winners:
            text += " ACE does not win on this task."
        parts.append(text)
    return " ".join(parts + ([llm_part.finding_text(res.get("llm"))] if res.get("llm") else []))
