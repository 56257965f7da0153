"""Alternatives to ACE: rank-r subspaces found by other methods from the same activations, and their scores.

Every method returns a (D, r) basis with orthonormal columns at the same hook point, from the same
data: activations H (N, D), the tail's Jacobian J (K, D) and the task labels y (N,):

* :func:`pca_basis` — top-r principal directions (activity only; scikit-learn ``PCA``);
* :func:`jacobian_basis` — top-r eigen-directions of the Jacobian Gram JᵀJ (relevance only);
* :func:`probe_basis` — the weight rows of a multinomial logistic-regression probe for the labels
  (scikit-learn ``LogisticRegression``), orthonormalised (at most K directions);
* :func:`class_mean_basis` — differences of the class means (at most K − 1 directions);
* :func:`random_basis` — a uniformly random subspace;
* :func:`das_basis` — a learned subspace: an orthonormal basis optimised by gradient descent so that
  keeping only it (about the mean) keeps the model's own answers, as distributed alignment search
  (DAS) does; written on torch (a differentiable QR keeps the basis orthonormal).

:func:`keep_remove_accuracy` scores a basis through a linear tail (logits = h Wᵀ + b), keeping or
removing it about the activation mean; :func:`minimal_ns_rank` is the smallest rank that is both
sufficient and necessary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ace_helpers.method import portable
from ace_helpers.method.baselines import jacobian_directions
from ace_helpers.method.core import Core, _as_float64

MAX_PROBE_ROWS = 20_000


def _orthonormal_rows(rows: np.ndarray, r: int) -> np.ndarray:
    """(D, min(r, rank)) leading right singular vectors of ``rows`` (K, D)."""
    _, s, vt = np.linalg.svd(rows, full_matrices=False)
    k = min(r, int(np.sum(s > s[0] * 1e-10)))
    return vt[:k].T


def pca_basis(h: Any, r: int) -> np.ndarray:
    """(D, r) top-r principal directions of H (N, D) (scikit-learn ``PCA``, full SVD)."""
    from sklearn.decomposition import PCA  # load time: a heavy import, done on first use

    a = _as_float64("H", h)
    return PCA(n_components=r, svd_solver="full").fit(a).components_.T.copy()


def jacobian_basis(j: Any, dim: int, r: int) -> np.ndarray:
    """(D, r) top-r eigen-directions of the Jacobian Gram (J (K, D), (N, K, D) or (N, D))."""
    return jacobian_directions(j, dim, r)


def _subsample(h: np.ndarray, y: np.ndarray, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if h.shape[0] <= rows:
        return h, y
    idx = np.random.default_rng(seed).choice(h.shape[0], rows, replace=False)
    return h[idx], y[idx]


def probe_basis(h: Any, y: Any, r: int, *, seed: int = 0, max_rows: int = MAX_PROBE_ROWS) -> np.ndarray:
    """(D, ≤ r) the weight rows of a logistic-regression probe for labels y (N,), orthonormalised (SVD order).

    scikit-learn ``LogisticRegression`` (lbfgs, multinomial, C = 1) on the centred activations
    themselves: standardising each coordinate first would let the L2 penalty favour weights on
    low-variance coordinates, whose images in activation space then dominate the rows.  At most
    ``max_rows`` rows are used (a seeded subsample).
    """
    from sklearn.linear_model import LogisticRegression  # load time: a heavy import, done on first use

    a, labels = _subsample(_as_float64("H", h), np.asarray(y).reshape(-1), max_rows, seed)
    clf = LogisticRegression(max_iter=1000).fit(a - a.mean(axis=0), labels)
    return _orthonormal_rows(clf.coef_, r)


def class_mean_basis(h: Any, y: Any, r: int) -> np.ndarray:
    """(D, ≤ min(r, K − 1)) directions spanned by the class means of H minus the grand mean."""
    a, labels = _as_float64("H", h), np.asarray(y).reshape(-1)
    classes = np.unique(labels)
    means = np.stack([a[labels == c].mean(axis=0) for c in classes]) - a.mean(axis=0)
    return _orthonormal_rows(means, r)


def random_basis(dim: int, r: int, seed: int) -> np.ndarray:
    """(D, r) a uniformly random subspace (QR of a seeded Gaussian matrix)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, r)))
    return q


def das_basis(
    h: Any,
    weight: Any,
    bias: Any | None,
    r: int,
    *,
    steps: int = 300,
    lr: float = 0.02,
    seed: int = 0,
    max_rows: int = MAX_PROBE_ROWS,
) -> np.ndarray:
    """(D, r) an orthonormal basis trained so that keeping only it (about the mean) keeps the model's answers.

    The tail is linear (logits = h Wᵀ + b, W (K, D)); the loss is the cross-entropy of the kept
    activations' logits against the model's own argmax answers, minimised with Adam over a (D, r)
    matrix orthonormalised at every step by :func:`~ace_helpers.method.portable.orthonormalize` (full batch of
    at most ``max_rows`` rows, ``steps`` steps).
    """
    a = torch.as_tensor(_as_float64("H", h), dtype=torch.float32)
    w = torch.as_tensor(_as_float64("W", weight), dtype=torch.float32)
    b = torch.zeros(w.shape[0]) if bias is None else torch.as_tensor(_as_float64("b", bias), dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    if a.shape[0] > max_rows:
        a = a[torch.randperm(a.shape[0], generator=gen)[:max_rows]]
    mu = a.mean(dim=0)
    with torch.no_grad():
        target = (a @ w.T + b).argmax(-1)
    raw = torch.nn.Parameter(torch.randn(a.shape[1], r, generator=gen))
    opt = portable.adam([raw], lr=lr)
    for _ in range(int(steps)):
        q = portable.orthonormalize(raw)  # (D, r) orthonormal, differentiable
        kept = mu + ((a - mu) @ q) @ q.T
        loss = torch.nn.functional.cross_entropy(kept @ w.T + b, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        q = portable.orthonormalize(raw).double().numpy()
    return np.linalg.qr(q)[0]


def keep_remove_accuracy(h: Any, weight: Any, bias: Any | None, y: Any, q: np.ndarray) -> tuple[float, float]:
    """(keep, remove) argmax accuracy against y (N,) through the linear tail, with basis Q (D, r) kept
    alone (``μ + P(h − μ)``) or removed (``h − P(h − μ)``) about the activation mean μ."""
    a = _as_float64("H", h)
    core = Core(full_basis=np.linalg.qr(q)[0], weights=np.ones(q.shape[1]), rank=q.shape[1], mean=a.mean(axis=0))
    w = _as_float64("W", weight)
    b = np.zeros(w.shape[0]) if bias is None else _as_float64("b", bias)
    labels = np.asarray(y).reshape(-1)
    out = []
    for edited in (core.keep(a, centered=True), core.remove(a, centered=True)):
        out.append(float(np.mean((edited @ w.T + b).argmax(-1) == labels)))
    return out[0], out[1]


def minimal_ns_rank(
    ranks: Sequence[int],
    keep: Sequence[float | None],
    remove: Sequence[float | None],
    base: float,
    chance: float,
    *,
    keep_tol: float = 0.01,
    remove_tol: float = 0.05,
) -> int | None:
    """Smallest rank r with keep ≥ base − keep_tol (sufficient) and remove ≤ chance + remove_tol (necessary); None if none."""
    for r, k, m in zip(ranks, keep, remove):
        if k is not None and m is not None and k >= base - keep_tol and m <= chance + remove_tol:
            return int(r)
    return None
