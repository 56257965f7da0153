"""The paper's official code release (``joshseth/cores``), which the benchmarks run beside the book.

Its own numbers for a chapter's claims, rerun here (:mod:`ace_helpers.repro.official_runs`), go into the ``official``
field of the claim rows (:func:`attach_official`).  It is never downloaded: the user gives a checkout (``--official PATH``), which :func:`check_official` checks before
any work and :func:`copy_official` copies to a scratch folder, so that its results and figures are written there
and the checkout is left as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ace_helpers.repro.report import REPRODUCED, Claims
from ace_helpers.repro.rules import Measured, rules_of, verdict_of

#: the files of the release that the benchmarks run: its Markov-chain and modular-addition scripts and its package
OFFICIAL_FILES = ("markov.py", "modadd.py", "src/cores/markov.py")


def check_official(path: str | Path, needs: Sequence[str] = OFFICIAL_FILES) -> Path:
    """``path`` resolved, once it holds every file of ``needs``; raises ``SystemExit`` naming the missing ones."""
    checkout = Path(path).expanduser().resolve()
    missing = [name for name in needs if not (checkout / name).is_file()]
    if missing:
        raise SystemExit(
            f"--official {path} is not a checkout of the paper's code release (joshseth/cores): it lacks {', '.join(missing)}"
        )
    return checkout


def copy_official(checkout: Path, dest: Path) -> Path:
    """Copy a checked ``checkout`` to the new folder ``dest``, without its git history and the results of its earlier
    runs (``experiments/``); returns ``dest``."""
    shutil.copytree(checkout, dest, ignore=shutil.ignore_patterns(".git", "experiments"))
    return dest


def attach_official(claims: Claims, numbers: Mapping[str, Any] | None) -> Claims:
    """Write ``numbers`` (claim id → the code release's own number, rerun here, in the shape of the row's ``value``)
    into the ``official`` field of ``claims``' headline rows with those ids; returns ``claims``.  Rows that repeat a
    claim per model or per part (``headline`` False) keep None: the release's number is for the claim as a whole."""
    for row in claims.rows:
        if numbers and row.headline and row.id in numbers:
            row.official = numbers[row.id]
    return claims


def _numbers(value: Any) -> str:
    return ", ".join(f"{v:.2f}" for v in value) if isinstance(value, list) else f"{value:.2f}"


def triangulate(claims: Claims, specs: Sequence[Any], numbers: Mapping[str, Any] | None, where: str) -> Claims:
    """Judge the code release's own number (``numbers``: claim id → its value, in the shape of the rule's one test
    quantity) by our own rule, for each headline row of ``claims`` that does not reproduce, and set the row's cause
    from the comparison: where the release meets the rule and we do not, our run departs (``ours``); where the release
    fails it too, the claim fails on the paper's own code (``paper``).  Rules with more than one test are left as they
    are.  ``where``: the release's run, in a few words ("epoch 5000, 1 model").  Returns ``claims``."""
    by_id = {r.id: r for r in rules_of(specs) if len(r.tests) == 1}
    for row in claims.rows:
        rule = by_id.get(row.id)
        if not numbers or rule is None or row.id not in numbers or not row.headline or row.verdict == REPRODUCED:
            continue
        theirs = verdict_of(rule, Measured({rule.tests[0].metric: numbers[row.id]}))
        row.cause_class = "ours" if theirs == REPRODUCED else "paper"
        row.cause = (
            f"the code release, rerun here ({where}), {'meets' if theirs == REPRODUCED else 'fails'} the rule: "
            f"{_numbers(numbers[row.id])}; ours: {_numbers(row.value)}"
        )
    return claims
