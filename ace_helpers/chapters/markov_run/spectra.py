"""Eigenvalues of Markov chains and of operators fitted to them: matched relative errors, the chain counted on
a sample (the sampling floor of any fit), and core coordinates replaced by their current-state means."""

from __future__ import annotations

from typing import Any

import numpy as np

from ace_helpers.method.operators import match_eigenvalues
from ace_helpers.toys.tasks.markov import (
    nontrivial_eigenvalues,
    validate_transition,
)

#: Relative eigenvalue errors divide by ``max(|λ|, EIG_SCALE_MIN)``, so a chain eigenvalue at 0 has a defined error.
EIG_SCALE_MIN = 0.01


def sorted_eigs(eigs: Any) -> np.ndarray:
    """Complex eigenvalues (k,) in the order of the ``true_eigs`` / ``core_eigs`` results: real part, then imaginary, descending."""
    eigs = np.asarray(eigs, dtype=np.complex128).reshape(-1)
    return eigs[np.lexsort((-eigs.imag, -eigs.real))]


def relative_eig_errors(true: Any, fitted: Any) -> list[float]:
    """Per true eigenvalue (in the order given), ``|λ̂ − λ| / max(|λ|, EIG_SCALE_MIN)``.

    λ̂ is the fitted eigenvalue matched to λ by :func:`ace_helpers.method.operators.match_eigenvalues`
    (optimal one-to-one matching from the true set: a spurious extra fitted eigenvalue is left
    out); with fewer fitted than true eigenvalues the missing ones count as fitted at 0.
    """
    t = np.asarray(true, dtype=np.complex128).reshape(-1)
    f = np.asarray(fitted, dtype=np.complex128).reshape(-1)
    f = np.concatenate([f, np.zeros(max(0, t.size - f.size), dtype=np.complex128)])
    pairs, _ = match_eigenvalues(t, f)
    matched = {i: fit for i, (_, fit) in enumerate(pairs)}  # rows come back in the order of t
    return [float(abs(matched[i] - lam) / max(abs(lam), EIG_SCALE_MIN)) for i, lam in enumerate(t)]


def empirical_transition(states: np.ndarray, n_states: int) -> np.ndarray:
    """(n, n) transition matrix counted on the steps ``s_t → s_{t+1}`` of state sequences (N, L);
    a state never left on these steps gets a uniform row."""
    s = np.asarray(states)
    counts = np.zeros((n_states, n_states))
    np.add.at(counts, (s[:, :-1].reshape(-1), s[:, 1:].reshape(-1)), 1.0)
    rows = counts.sum(axis=1, keepdims=True)
    return np.where(rows > 0, counts / np.maximum(rows, 1.0), 1.0 / n_states)


def sampling_floor(T: Any, states: np.ndarray) -> list[float]:
    """Relative eigenvalue errors (per true eigenvalue, :func:`sorted_eigs` order) of the transition
    matrix counted on the test steps (:func:`empirical_transition`) against ``T``'s own.

    An operator fitted to coordinates that hold exactly the current state (any n − 1 dimensional
    linear image of the one-hot state) has these eigenvalues, so this is the error that the test
    set's finite sample alone leaves, the floor of the fit.
    """
    T = validate_transition(T)
    est = np.linalg.eigvals(empirical_transition(states, T.shape[0])).astype(np.complex128)
    est = np.delete(est, int(np.argmin(np.abs(est - 1.0))))
    return relative_eig_errors(sorted_eigs(nontrivial_eigenvalues(T)), est)


def state_mean_coords(z: np.ndarray, states: np.ndarray, n_states: int) -> tuple[np.ndarray, list[float]]:
    """Each row of ``z`` (N, L, r) replaced by the mean of ``z`` over the rows with the same current
    state (``states`` (N, L)), and the share of each coordinate's variance that the current state
    sets (per-coordinate R² of ``z`` on the one-hot state, r values)."""
    flat, s = z.reshape(-1, z.shape[-1]), np.asarray(states).reshape(-1)
    sums = np.zeros((n_states, flat.shape[1]))
    np.add.at(sums, s, flat)
    means = sums / np.maximum(np.bincount(s, minlength=n_states), 1)[:, None]
    resid = ((flat - means[s]) ** 2).sum(axis=0)
    total = np.maximum(((flat - flat.mean(axis=0)) ** 2).sum(axis=0), 1e-300)
    return means[np.asarray(states)], (1.0 - resid / total).tolist()
