"""Chapter 3 beside the paper's protocol: the weight-decay-off arm forked at epoch 900 against the
first stored run's fork at 1100, the Fourier spectra of the embeddings (weight decay as
redistribution), and which run carries each paper claim's headline verdict.

* :func:`fork_table` — the WD-off arm of both runs at the same epochs after their fork.
* :func:`effective_harmonics` — how many frequencies carry the embedding's weight, and how evenly.
* :func:`assign_headlines` — each paper claim's headline from the run that tests it as the paper ran it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from ace_helpers.chapters.modadd.analysis import ArmResult
from ace_helpers.repro.tables import markdown_table

#: This chapter's paper claims (ids of ``paper-claims.md``).
CHAPTER_IDS: tuple[str, ...] = (
    "inflation.grows",
    "inflation.sufficient_flat",
    "inflation.redundancy",
    "inflation.modes",
    "inflation.no_wd",
    "inflation.no_wd_modes",
    "inflation.redistribution",
)
#: Claims about the WD-off arm, or measured on spectra only the runs forked at 900 store: their
#: headline is the paper-preset run forked at the paper's epoch.
FORK_IDS: tuple[str, ...] = ("inflation.no_wd", "inflation.no_wd_modes", "inflation.redistribution")
#: Claims of the weight-decay arm stated at epoch 20 000 (the fork does not touch that arm in exact arithmetic): their
#: headline is the most complete stored paper-preset run.
LONG_IDS: tuple[str, ...] = tuple(i for i in CHAPTER_IDS if i not in FORK_IDS)


def effective_harmonics(spectrum: np.ndarray) -> np.ndarray:
    """Participation ratio 1 / Σ_k s_k² of Fourier power shares ``spectrum`` (..., F): the number of
    frequencies that carry the weight, counted by how evenly (F when all F share it equally, 1
    when one frequency holds it all).  NaN where the spectrum is NaN (runs stored without spectra)."""
    s = np.asarray(spectrum, dtype=float)
    if s.ndim == 0 or s.shape[-1] < 1:
        raise ValueError(f"spectrum must have a frequency axis last (..., F); got shape {s.shape}")
    return 1.0 / np.sum(s**2, axis=-1)


def has_spectra(arm: ArmResult) -> bool:
    """Whether the arm stores the embedding's and the unembedding's Fourier spectra at every checkpoint of every model."""
    return all(f in arm.arrays and not np.isnan(arm[f]).any() for f in ("emb_spectrum", "unemb_spectrum"))


def _nearest(epochs: np.ndarray, target: int) -> int | None:
    """Index of the checkpoint nearest ``target`` (the earlier on a tie), or None past the last one."""
    if target > int(epochs[-1]):
        return None
    return int(np.argmin(np.abs(np.asarray(epochs) - target)))


def fork_table(new: ArmResult, new_fork: int, old: ArmResult, old_fork: int, after: Sequence[int]) -> str:
    """Markdown table: the WD-off arm's core dim and OLS modes per model in two runs about the same numbers
    of epochs ``after`` their forks: each run's checkpoint nearest fork + d (its epoch is shown; rows that
    either run has not reached are left out)."""
    rows = []
    for d in after:
        i, j = _nearest(new.epochs, new_fork + int(d)), _nearest(old.epochs, old_fork + int(d))
        if i is None or j is None:
            continue
        e_new, e_old = int(new.epochs[i]), int(old.epochs[j])
        rows.append(
            (
                f"{d}",
                f"{e_new} / {e_old}",
                f"{new['core_dim'][:, i].tolist()} / {old['core_dim'][:, j].tolist()}",
                f"{new['rotational_modes_ols'][:, i].tolist()} / {old['rotational_modes_ols'][:, j].tolist()}",
            )
        )
    header = (
        "epochs after the fork",
        f"epoch (fork {new_fork} / fork {old_fork})",
        "WD-off core dim per model",
        "WD-off OLS modes per model",
    )
    return markdown_table(header, rows)


def assign_headlines(sections: Sequence[tuple[list[dict[str, Any]], Collection[str]]]) -> list[dict[str, Any]]:
    """The records of several runs with each paper claim's headline in one place.

    ``sections``: ``(records, ids)`` per run, the records as :meth:`Claims.records` writes them, the
    chapter's own run first; a paper-claim row is the headline exactly when its id is in that run's
    ``ids`` (every other paper-claim row becomes evidence beside it).  Our own and diagnosis rows
    count with the chapter's own run only: on the other runs they are evidence.

    Raises:
        ValueError: an id is given to two runs.
    """
    seen: dict[str, int] = {}
    for k, (_, ids) in enumerate(sections):
        for cid in ids:
            if cid in seen:
                raise ValueError(f"paper claim {cid!r} is given to runs {seen[cid]} and {k}: one headline per claim")
            seen[cid] = k
    out = []
    for k, (records, ids) in enumerate(sections):
        for rec in records:
            rec = dict(rec)
            if rec.get("kind") == "paper":
                rec["headline"] = rec["id"] in ids
                rec["evidence"] = not rec["headline"]
            elif k > 0:
                rec["headline"], rec["evidence"] = False, True
            out.append(rec)
    return out


def headline_ids(stored: Mapping[str, bool]) -> dict[str, tuple[str, ...]]:
    """Which run carries which of this chapter's headlines, given which runs are stored.

    ``stored``: ``{"fork_900": ..., "long": ...}`` — whether the paper-preset run forked at 900, and
    a finished (most complete) paper-preset run, are stored.  Returns ``{"own": ids, "long": ids,
    "fork_900": ids}``: the chapter's own run keeps the claims no stored run carries.
    """
    fork = FORK_IDS if stored.get("fork_900") else ()
    long = LONG_IDS if stored.get("long") else ()
    own = tuple(i for i in CHAPTER_IDS if i not in fork and i not in long)
    return {"own": own, "long": long, "fork_900": fork}
