"""Markov-chain next-state prediction (the paper's first experiment): any row-stochastic, irreducible chain.

A chain is an ``(n, n)`` transition matrix ``T`` with rows = current state, ``T[x, y] =
P(next = y | current = x)``.  Sequences start in a uniformly drawn state and then follow
``T``; a model sees ``x = s[:-1]`` and predicts ``y = s[1:]`` at every position.

Reference quantities (all float64):

* :func:`stationary_distribution` π (``π T = π``, ``Σ π = 1``);
* :func:`spectrum` / :func:`nontrivial_eigenvalues` (the eigenvalues other than the
  stationary 1 — the ones a learned core operator should reproduce);
* :func:`bayes_accuracy` ``Σ_x π(x) max_y T[x, y]`` (the "Optimal" bar, 0.75 on the paper chain);
* :func:`chance_accuracy` (always predicting ``argmax π``; empirical on a target set, or ``max π``);
* :func:`oracle_r2` ``1 − (1/n) Σ_j m_j / v_j`` with ``m = (diag(π)(T∘(1−T)))ᵀ 1`` and
  ``v = π(1−π)``: the R² of the best one-step predictor of the one-hot next state from the
  one-hot current state (0.5 on the paper chain);
* :func:`state_r2`: the R² of regressing any per-step quantity on the one-hot current state
  (a basis-free oracle for a learned representation); :func:`is_paper_chain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ace_helpers.method.checks import check_int

#: The paper's chain: circulant, stay 0.75, step forward 0.25.
PAPER_CHAIN: list[list[float]] = [
    [0.75, 0.25, 0.0, 0.0],
    [0.0, 0.75, 0.25, 0.0],
    [0.0, 0.0, 0.75, 0.25],
    [0.25, 0.0, 0.0, 0.75],
]

ROW_SUM_TOL = 1e-6


def validate_transition(T: Any, name: str = "T") -> np.ndarray:
    """Check that ``T`` is a transition matrix of an irreducible chain; return it as float64.

    Args:
        T: list of rows or array-like, shape (n, n), n >= 2.
        name: parameter name used in error messages.

    Returns:
        ``(n, n)`` float64 array.

    Raises:
        ValueError: naming ``name``, the problem and what is allowed, if ``T`` is not square,
            has fewer than 2 states, has non-finite or negative entries, has a row not summing
            to 1 (tolerance 1e-6), or is reducible (some state cannot reach another).
    """
    try:
        arr = np.array(T, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}={T!r} is not allowed: {name} must be a square list of rows of numbers ({exc})") from None
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} has shape {arr.shape}: {name} must be a square (n, n) list of rows")
    n = arr.shape[0]
    if n < 2:
        raise ValueError(f"{name} has {n} state(s): a chain needs at least 2 states")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite entries: every entry must be a finite probability")
    if np.any(arr < 0):
        i, j = np.argwhere(arr < 0)[0]
        raise ValueError(f"{name}[{i}][{j}]={float(arr[i, j])!r} is negative: transition probabilities must be >= 0")
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        raise ValueError(
            f"row {int(bad[0])} of {name} sums to {float(sums[bad[0]])!r}: every row of {name} must sum to 1 "
            f"(rows are the current state; tolerance {ROW_SUM_TOL})"
        )
    reach = _reachability(arr > 0)
    if not reach.all():
        i, j = np.argwhere(~reach)[0]
        raise ValueError(
            f"{name} is reducible: state {int(i)} can never reach state {int(j)}; "
            f"{name} must describe an irreducible chain (every state reachable from every state)"
        )
    return arr


def _reachability(adjacency: np.ndarray) -> np.ndarray:
    """(n, n) bool: ``[i, j]`` = j reachable from i in >= 0 steps (transitive closure)."""
    n = adjacency.shape[0]
    reach = adjacency | np.eye(n, dtype=bool)
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    return reach


def stationary_distribution(T: Any) -> np.ndarray:
    """Stationary distribution π, shape (n,), of an irreducible chain (unique, positive)."""
    T = validate_transition(T)
    n = T.shape[0]
    system = np.vstack([T.T - np.eye(n), np.ones((1, n))])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def spectrum(T: Any) -> np.ndarray:
    """All eigenvalues of ``T``, complex128 (n,), sorted by modulus (descending) then angle."""
    T = validate_transition(T)
    eigs = np.linalg.eigvals(T).astype(np.complex128)
    order = np.lexsort((np.angle(eigs), -np.abs(eigs).round(12)))
    return eigs[order]


def nontrivial_eigenvalues(T: Any) -> np.ndarray:
    """The n − 1 eigenvalues left after removing the stationary eigenvalue 1, complex128."""
    eigs = spectrum(T)
    drop = int(np.argmin(np.abs(eigs - 1.0)))
    return np.delete(eigs, drop)


def bayes_accuracy(T: Any) -> float:
    """Accuracy of the optimal predictor at stationarity: ``Σ_x π(x) max_y T[x, y]``."""
    T = validate_transition(T)
    return float(stationary_distribution(T) @ T.max(axis=1))


def chance_accuracy(T: Any, targets: torch.Tensor | np.ndarray | None = None) -> float:
    """Accuracy of always predicting ``argmax π``: empirical on ``targets`` if given, else ``max π``.

    Args:
        T: the chain.
        targets: any-shape int array of next states (e.g. the test targets), optional.
    """
    pi = stationary_distribution(T)
    if targets is None:
        return float(pi.max())
    y = targets.detach().cpu().numpy() if isinstance(targets, torch.Tensor) else np.asarray(targets)
    return float(np.mean(y == int(np.argmax(pi))))


def oracle_r2(T: Any) -> float:
    """The paper's R²_oracle (0.5 on its chain): ``1 − (1/n) Σ_j m_j / v_j``, ``m = (diag(π)(T∘(1−T)))ᵀ1``, ``v = π(1−π)``.

    It is the R² of the best one-step predictor of the one-hot next state from the one-hot current state.
    """
    T = validate_transition(T)
    pi = stationary_distribution(T)
    m = (pi[:, None] * T * (1.0 - T)).sum(axis=0)
    v = pi * (1.0 - pi)
    return float(1.0 - np.mean(m / v))


def is_paper_chain(T: Any) -> bool:
    """Whether ``T`` is the paper's chain: the same (4, 4) shape and the same values (``np.allclose``).

    Safe for any input: a chain of another size is simply not the paper's chain.
    """
    arr = np.asarray(T, dtype=np.float64)
    ref = np.asarray(PAPER_CHAIN, dtype=np.float64)
    return arr.shape == ref.shape and bool(np.allclose(arr, ref))


def state_r2(z_next: np.ndarray, states: np.ndarray, n_states: int) -> float:
    """R² (mean over columns) of regressing ``z_next`` (N, r) on the one-hot of ``states`` (N,).

    The least-squares fit on a one-hot design is the per-state mean; SS_tot is about the
    overall mean.  This is the best any function of the current state can do.
    """
    z = np.asarray(z_next, dtype=np.float64)
    s = np.asarray(states).reshape(-1)
    counts = np.bincount(s, minlength=n_states).astype(np.float64)
    sums = np.zeros((n_states, z.shape[1]))
    np.add.at(sums, s, z)
    means = sums / np.maximum(counts, 1.0)[:, None]
    resid = z - means[s]
    tot = z - z.mean(axis=0)
    return float(np.mean(1.0 - (resid**2).sum(axis=0) / np.maximum((tot**2).sum(axis=0), 1e-300)))


def sample_sequences(T: Any, n_seq: int, seq_len: int, seed: int) -> np.ndarray:
    """Sample ``n_seq`` state sequences of length ``seq_len`` from ``numpy.random.RandomState(seed)``.

    The first state is uniform over the n states; each later state is drawn from the row of
    ``T`` of the previous one.  Returns an ``(n_seq, seq_len)`` int64 array.
    """
    T = validate_transition(T)
    n_seq = check_int("n_seq", n_seq, low=1)
    seq_len = check_int("seq_len", seq_len, low=2)
    n = T.shape[0]
    rng = np.random.RandomState(check_int("seed", seed, low=0))
    cdf = np.cumsum(T, axis=1)
    cdf[:, -1] = 1.0
    states = np.empty((n_seq, seq_len), dtype=np.int64)
    states[:, 0] = rng.randint(0, n, size=n_seq)
    for t in range(1, seq_len):
        u = rng.random_sample(n_seq)
        nxt = (u[:, None] >= cdf[states[:, t - 1]]).sum(axis=1)
        states[:, t] = np.minimum(nxt, n - 1)
    return states


@dataclass(frozen=True)
class MarkovData:
    """Train/test next-state data.

    Attributes:
        T: (n, n) float64 transition matrix.
        train_inputs, train_targets, test_inputs, test_targets: (N, L−1) long tensors,
            inputs ``s[:, :-1]`` and targets ``s[:, 1:]``.
    """

    T: np.ndarray
    train_inputs: torch.Tensor
    train_targets: torch.Tensor
    test_inputs: torch.Tensor
    test_targets: torch.Tensor

    @property
    def n_states(self) -> int:
        """Number of states n (= the vocabulary size)."""
        return int(self.T.shape[0])


def markov_dataset(T: Any, n_train: int, n_test: int, seq_len: int, *, train_seed: int = 0, test_seed: int = 999) -> MarkovData:
    """Sample train (``RandomState(train_seed)``) and test (``RandomState(test_seed)``) sequences.

    Paper settings: 3000 + 3000 sequences of length 32, seeds 0 and 999.
    """
    T = validate_transition(T)
    train = torch.from_numpy(sample_sequences(T, n_train, seq_len, train_seed))
    test = torch.from_numpy(sample_sequences(T, n_test, seq_len, test_seed))
    return MarkovData(
        T=T,
        train_inputs=train[:, :-1].contiguous(),
        train_targets=train[:, 1:].contiguous(),
        test_inputs=test[:, :-1].contiguous(),
        test_targets=test[:, 1:].contiguous(),
    )


def chain_summary(T: Sequence[Sequence[float]] | np.ndarray) -> dict[str, Any]:
    """Plain dict of the chain's reference quantities (for tables and ``results.json``)."""
    T = validate_transition(T)
    eigs = nontrivial_eigenvalues(T)
    return {
        "n_states": int(T.shape[0]),
        "stationary": stationary_distribution(T).tolist(),
        "true_eigs": [[float(e.real), float(e.imag)] for e in eigs],
        "bayes_acc": bayes_accuracy(T),
        "chance_acc_pi": chance_accuracy(T),
        "r2_oracle": oracle_r2(T),
    }
