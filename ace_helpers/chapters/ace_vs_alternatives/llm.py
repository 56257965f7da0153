"""Chapter 6, LLM part: ACE against the alternatives on subject–verb agreement (no ground truth).

Ours, beyond the paper.  At one layer per model (the block output at the last token, chapter 5's
hook), every method returns a rank-r basis from the **same train prompts** — activations H (N, D)
and the agreement margin's gradients G = ∂m/∂h (N, D), with m = L[are] + L[were] − L[is] − L[was]
(chapter 5's :func:`~ace_helpers.llm.agreement_states.collect_states`):

* ACE from Cov(H), mean(H) and Obs = mean g gᵀ (its ordered basis, the first r columns);
* PCA of H (activity only); the top eigen-directions of the gradient Gram mean g gᵀ (relevance only);
* a logistic-regression probe and the class-mean difference for the number label (one direction each:
  two classes);
* a random subspace;
* a learned (DAS-like) basis: trained so that keeping it alone keeps the model's own margin sign,
  through the tail's first-order expansion m̃ᵢ = mᵢ − gᵢ·(I − P)(hᵢ − μ) (a backward pass through the
  real model per step would cost minutes per basis on CPU); it is *scored* through the real model.

Every basis is scored on the held-out test prompts through the real model (chapter 5's
:func:`~ace_helpers.llm.agreement_edits.sweep_margins`: keep, remove and flip about the
train mean at the last token): the accuracy of the margin's sign against the subject's number, and
the flip's margin shift toward the other number, mean of −sᵢ (m_flip − m), sᵢ = ±1 the number.

``results.json`` (``llm`` key): {model: {``layer``, ``n_layers``, ``ranks``, ``base_acc``,
``chance_acc``, ``n_params`` (the model's parameter count), ``keep`` / ``remove`` / ``flip`` {method: accuracy per rank, None where the method
has fewer directions}, ``flip_shift`` {method: per rank}, ``ns_rank`` {method: rank or None},
``seconds`` {method: fit time of all its bases}, ``eval_s``, ``n_train``, ``n_test``} or
{``unavailable``: reason}}.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import AgreementSplit, agreement_split
from ace_helpers.llm.agreement_edits import sweep_margins
from ace_helpers.llm.agreement_states import collect_states
from ace_helpers.method import portable
from ace_helpers.method.core import Core, GramianAccumulator
from ace_helpers.method.subspaces import (
    class_mean_basis,
    jacobian_basis,
    minimal_ns_rank,
    pca_basis,
    probe_basis,
    random_basis,
)
from ace_helpers.repro.verdicts import bootstrap_interval

METHODS = ("ace", "pca", "jacobian", "probe", "class_means", "random", "das")
#: The layer per model: the one chapter 5's rule (lowest flip AUC over all layers) chose at its
#: book run; any other model uses its last block.
LAYER = {"smollm2-135m": 29, "gemma3-270m": 18, "qwen2.5-0.5b": 24, "qwen2.5-1.5b": 28}
#: N&S on the agreement task: keep accuracy ≥ base − KEEP_TOL, remove accuracy ≤ 0.5 + REMOVE_TOL.
KEEP_TOL, REMOVE_TOL = 0.05, 0.10
#: A basis flips the number when at most this share of test prompts keeps the right number.
FLIP_MAX = 0.25


def layer_for(name: str, n_layers: int) -> int:
    """The 1-based layer ℓ compared on model ``name`` (:data:`LAYER`, else its last block)."""
    return min(LAYER.get(name, n_layers), n_layers)


def das_margin_basis(
    h: np.ndarray, g: np.ndarray, m: np.ndarray, r: int, *, steps: int = 300, lr: float = 0.02, seed: int = 0
) -> np.ndarray:
    """(D, r) an orthonormal basis trained so that keeping it alone keeps the sign of the model's margin.

    h, g: (N, D) activations and margin gradients; m: (N,) clean margins. The kept margin is the
    first-order m̃ = m − g·(I − P)(h − μ) with P = QQᵀ; the loss is softplus(−sign(m)·m̃ / std(m))
    (Adam over a (D, r) matrix orthonormalised at every step by :func:`~ace_helpers.method.portable.orthonormalize`).
    """
    a = torch.as_tensor(h, dtype=torch.float64)
    gr = torch.as_tensor(g, dtype=torch.float64)
    mm = torch.as_tensor(m, dtype=torch.float64)
    x = a - a.mean(dim=0)
    target, scale = torch.sign(mm), mm.std().clamp_min(1e-8)
    gen = torch.Generator().manual_seed(seed)
    raw = torch.nn.Parameter(torch.randn(a.shape[1], r, generator=gen, dtype=torch.float64))
    opt = portable.adam([raw], lr=lr)
    gx = (gr * x).sum(dim=1)  # g·(h − μ)
    for _ in range(int(steps)):
        q = portable.orthonormalize(raw)
        kept = mm - (gx - ((gr @ q) * (x @ q)).sum(dim=1))
        loss = torch.nn.functional.softplus(-target * kept / scale).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return np.linalg.qr(portable.orthonormalize(raw).numpy())[0]


def fit_bases(
    h: np.ndarray,
    g: np.ndarray,
    m: np.ndarray,
    y: np.ndarray,
    ranks: Sequence[int],
    *,
    seed: int = 0,
    das_steps: int = 300,
    das_lr: float = 0.02,
) -> tuple[dict[str, list[np.ndarray | None]], dict[str, float]]:
    """Every method's (D, r) basis for r in ``ranks`` (None where it has fewer directions) and its fit time (s).

    h, g: (N, D) train activations and margin gradients; m: (N,) margins; y: (N,) number labels.
    """
    dim, top = h.shape[1], max(ranks)
    nested: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    fits = {
        "ace": lambda: GramianAccumulator(dim).add_activations(h).add_jacobians(g).core(rank=1).full_basis,
        "pca": lambda: pca_basis(h, top),
        "jacobian": lambda: jacobian_basis(g, dim, top),
        "probe": lambda: probe_basis(h, y, top, seed=seed),
        "class_means": lambda: class_mean_basis(h, y, top),
    }
    for name, fn in fits.items():
        t = time.perf_counter()
        nested[name] = fn()
        seconds[name] = time.perf_counter() - t
    out: dict[str, list[np.ndarray | None]] = {}
    for name in METHODS:
        t = time.perf_counter()
        if name in nested:
            out[name] = [nested[name][:, :r] if nested[name].shape[1] >= r else None for r in ranks]
        elif name == "random":
            out[name] = [random_basis(dim, r, seed + r) for r in ranks]
        else:
            out[name] = [das_margin_basis(h, g, m, r, steps=das_steps, lr=das_lr, seed=seed + r) for r in ranks]
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t
    return out, seconds


def _core(q: np.ndarray, mean: np.ndarray) -> Core:
    return Core(full_basis=q, weights=np.ones(q.shape[1]), rank=q.shape[1], mean=mean)


def score_bases(
    lm,
    tokenizer,
    data: AgreementSplit,
    layer: int,
    bases: dict[str, list[np.ndarray | None]],
    mean: np.ndarray,
    base_margin: np.ndarray,
    *,
    batch_size: int = 50,
) -> dict[str, dict[str, list[float | None]]]:
    """Keep / remove / flip accuracy and the flip's margin shift per method and rank, on the test prompts.

    All bases go through one :func:`sweep_margins` call (the same layer listed once per basis).
    """

    flat = [(m, i, q) for m in METHODS for i, q in enumerate(bases[m]) if q is not None]
    sweep = sweep_margins(
        lm,
        tokenizer,
        data.test_prompts,
        [layer] * len(flat),
        [_core(q.astype(np.float32), mean.astype(np.float32)) for _, _, q in flat],
        batch_size=batch_size,
    )
    sign = 2.0 * np.asarray(data.test_labels) - 1.0
    n = {m: len(bases[m]) for m in METHODS}
    out = {key: {m: [None] * n[m] for m in METHODS} for key in ("keep", "remove", "flip", "flip_shift")}
    for k, (m, i, _) in enumerate(flat):
        for mode in ("keep", "remove", "flip"):
            out[mode][m][i] = float(np.mean(sign * sweep[mode][k] > 0))
        out["flip_shift"][m][i] = float(np.mean(-sign * (sweep["flip"][k] - base_margin)))
    return out


def compare_model(name: str, lm, tokenizer, data: AgreementSplit, ranks: list[int], cfg: Any) -> dict[str, Any]:
    """One model: states at its layer, every method's bases, their scores, the minimal N&S ranks."""

    n_layers = llm.n_layers(lm)
    layer = layer_for(name, n_layers)
    bs = cfg["LLM_BATCH_SIZE"]
    train = collect_states(lm, tokenizer, data.train_prompts, [layer], batch_size=bs)
    test = collect_states(lm, tokenizer, data.test_prompts, [layer], gradients=False, batch_size=bs)
    h, g = train.H[0].astype(np.float64), train.G[0].astype(np.float64)
    bases, seconds = fit_bases(
        h,
        g,
        train.margin.astype(np.float64),
        np.asarray(data.train_labels),
        ranks,
        seed=cfg["SEED"],
        das_steps=cfg["DAS_STEPS"],
        das_lr=cfg["DAS_LR"],
    )
    t = time.perf_counter()
    scores = score_bases(lm, tokenizer, data, layer, bases, h.mean(axis=0), test.margin.astype(np.float64), batch_size=bs)
    base = float(np.mean((2.0 * np.asarray(data.test_labels) - 1.0) * test.margin > 0))
    named = list(llm.torch_module(lm).named_parameters())
    n_params = sum(p.numel() for _, p in named)
    n_blocks = sum(p.numel() for k, p in named if "embed" not in k and "lm_head" not in k)  # the scale the paper compares
    out = {
        "layer": layer,
        "n_layers": n_layers,
        "n_params": n_params,
        "n_params_blocks": n_blocks,
        "ranks": ranks,
        "base_acc": base,
        "chance_acc": 0.5,
        "n_train": len(data.train_prompts),
        "n_test": len(data.test_prompts),
        **scores,
        "seconds": seconds,
        "eval_s": time.perf_counter() - t,
    }
    out["ns_rank"] = {
        m: minimal_ns_rank(ranks, out["keep"][m], out["remove"][m], base, 0.5, keep_tol=KEEP_TOL, remove_tol=REMOVE_TOL)
        for m in METHODS
    }
    return out


def run_llm(cfg: Any) -> dict[str, Any] | None:
    """Every model of ``cfg["LLM_MODELS"]`` in turn (None when the list is empty); an unavailable model
    records ``{"unavailable": reason}`` (:func:`ace_helpers.llm.loading.unavailable_reason`)."""
    if not cfg["LLM_MODELS"]:
        return None
    data = agreement_split(cfg["LLM_N_PROMPTS"], cfg["SEED"])
    ranks = list(range(1, cfg["LLM_R_MAX"] + 1))
    out: dict[str, Any] = {}
    for name in cfg["LLM_MODELS"]:
        why = llm.unavailable_reason(name)
        if why is not None:
            out[name] = {"unavailable": why}
            continue
        start = time.perf_counter()
        lm, tok = llm.load_model(name, device=cfg["DEVICE"])  # float32 on any device: the chapter compares methods
        out[name] = compare_model(name, lm, tok, data, ranks, cfg)
        out[name]["wall_s"] = time.perf_counter() - start
        del lm, tok
        gc.collect()
    return out


# -------------------- text ---------------------------------------------------------------------
def _ok(res_llm: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in (res_llm or {}).items() if "unavailable" not in s}


def rate_interval(rate: float, n: int) -> tuple[float, float]:
    """Percentile-bootstrap interval (:func:`~ace_helpers.repro.verdicts.bootstrap_interval`, seed 0) of a share
    ``rate`` of ``n`` prompts: its per-prompt outcomes are round(rate·n) ones and the rest zeros."""
    k = round(rate * n)
    return bootstrap_interval([1.0] * k + [0.0] * (n - k), np.mean, seed=0)


def finding_text(res_llm: dict[str, Any] | None) -> str:
    """Markdown: per model, who is N&S at the smallest rank, and which 1-D basis flips the number most (from the results)."""
    parts = []
    for name, s in _ok(res_llm).items():
        ns = s["ns_rank"]
        reached = {m: r for m, r in ns.items() if r is not None}
        shift = {m: s["flip_shift"][m][0] for m in METHODS}
        top = max(shift, key=shift.get)
        if not reached:
            parts.append(f"**{name}** (ℓ = {s['layer']}): no method is N&S at any swept rank.")
            continue
        best = min(reached.values())
        winners = sorted(m for m, r in reached.items() if r == best)
        text = (
            f"**{name}** (ℓ = {s['layer']}, base accuracy {s['base_acc']:.2f}): N&S first at rank {best}, by "
            f"{', '.join(winners)}; ACE: {'never' if ns['ace'] is None else ns['ace']}."
        )
        if "ace" in winners and len(winners) > 1:
            text += " ACE ties here; it does not win alone."
        elif "ace" not in winners:
            text += " ACE does not win on this model."
        text += (
            f" The largest 1-D flip shift is {top}'s ({shift[top]:.1f} logits toward the other number; "
            f"ACE {shift['ace']:.1f})" + ("." if top == "ace" else ": ACE's flip is not the strongest.")
        )
        parts.append(text)
    return " ".join(parts)


def ns_columns(res_llm: dict[str, Any] | None) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """Extra columns of the N&S table: (headers, {method: cells}, ground-truth-row cells) per model that ran."""
    heads, cells, truth = [], {m: [] for m in METHODS}, []
    for name, s in _ok(res_llm).items():
        heads += [f"{name} ℓ={s['layer']}: N&S rank", f"{name}: 1-D flip acc. / shift", f"{name}: s"]
        for m in METHODS:
            v, f, sh = s["ns_rank"][m], s["flip"][m][0], s["flip_shift"][m][0]
            cells[m] += ["never" if v is None else str(v), "—" if f is None else f"{f:.2f} / {sh:.1f}", f"{s['seconds'][m]:.2f}"]
        truth += ["none (causal only)", "", ""]
    return heads, cells, truth
