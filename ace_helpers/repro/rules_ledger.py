"""The rules ledger: when each claim's rule was registered, whether data for it existed then, and every later change.

``book/rules_ledger.json`` holds, per rule (:func:`ledger_key`), a list of entries, oldest first.  Each entry has
``change`` (``"registered"``; ``"changed"``: the rule's substance moved; ``"declared"``: the same rule written
as a spec; ``"restated"``: its code changed, not what it decides, every stored verdict and value the same), ``commit`` and ``date`` (the commit the change was made on), ``data_existed`` (whether a verdict for the
claim had been recorded before), ``rule`` (the rule in words), the ``verdict_before`` and ``value_before`` the
stored results held under the old rule, ``why``, and ``fingerprint`` (:meth:`~ace_helpers.repro.rules.Rule.fingerprint`
of a spec; ``null`` for history from before the rules were data).

``make test`` fails when a rule's fingerprint is not the latest entry of its rule (:func:`unregistered`), so a rule
cannot change without a ledger entry; ``python -m ace_helpers.chapters.rule_tables register --why "..."`` writes the
entries.  The scorecard shows "rule changed after data" on every claim with a ``changed`` entry made after data
existed (:func:`changes_after_data`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ace_helpers.repro.artifacts import atomic_write_bytes
from ace_helpers.repro.rules import Rule

#: The ledger, in the book's folder.
LEDGER = Path(__file__).resolve().parents[2] / "book" / "rules_ledger.json"
CHANGES = ("registered", "changed", "declared", "restated")


def ledger_key(rule: Rule, table: Sequence[Rule]) -> str:
    """The rule's key: its id, with its first test's quantity where the table has several rules of that id."""
    same = [r for r in table if r.id == rule.id]
    return rule.id if len(same) == 1 else f"{rule.id} / {rule.tests[0].metric}"


def load(path: Path = LEDGER) -> dict[str, list[dict[str, Any]]]:
    """The ledger: ``{key: [entry, …]}`` (empty when the file does not exist)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    for key, entries in data.items():
        if not isinstance(entries, list) or not entries or any(e.get("change") not in CHANGES for e in entries):
            raise ValueError(f"{path}: the entries of {key!r} must be a non-empty list, each with change in {CHANGES}")
    return data


def unregistered(tables: Mapping[str, Sequence[Rule]], ledger: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The keys of rules whose fingerprint is not their latest ledger entry's (a rule changed, or new, unregistered).
    ``tables``: each chapter's rules."""
    out = []
    for rules in tables.values():
        for rule in rules:
            key = ledger_key(rule, rules)
            entries = ledger.get(key, [])
            if not entries or entries[-1].get("fingerprint") != rule.fingerprint():
                out.append(key)
    return out


def register(
    tables: Mapping[str, Sequence[Rule]],
    ledger: dict[str, list[dict[str, Any]]],
    *,
    why: str,
    commit: str,
    date: str,
    stored: Mapping[str, Mapping[str, Any]],
    change: str = "changed",
) -> list[str]:
    """Append an entry for every unregistered rule (:func:`unregistered`) and return their keys.  ``stored``: the
    headline record of each claim id in the stored results (its verdict and value become ``verdict_before``);
    ``change``: the kind of a change to a registered rule (``"changed"`` or ``"restated"``)."""
    if change not in ("changed", "restated"):
        raise ValueError(f"change={change!r}; allowed: ['changed', 'restated']")
    added = []
    for rules in tables.values():
        for rule in rules:
            key = ledger_key(rule, rules)
            if key not in unregistered({"": rules}, ledger):
                continue
            before = stored.get(rule.id)
            entries = ledger.setdefault(key, [])
            previous = {"rule_before": entries[-1]["rule"]} if entries else {}
            entries.append(
                {
                    **previous,
                    "change": change if entries else "registered",
                    "commit": commit,
                    "date": date,
                    "data_existed": before is not None,
                    "rule": rule.short_text(),
                    "fingerprint": rule.fingerprint(),
                    "verdict_before": None if before is None else before.get("verdict"),
                    "value_before": None if before is None else before.get("value"),
                    "why": why,
                }
            )
            added.append(key)
    return added


def record_change(
    ledger: dict[str, list[dict[str, Any]]],
    claim_id: str,
    *,
    rule: str,
    why: str,
    commit: str,
    date: str,
    stored: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Append a ``changed`` entry for a rule that is still code, not a spec (no fingerprint): its new ``rule`` in
    words, ``why``, and the verdict the stored results held under the old rule (``stored``: headline records)."""
    if not rule.strip() or not why.strip():
        raise ValueError("a rule change needs the new rule and why it changed")
    before, entries = stored.get(claim_id), ledger.setdefault(claim_id, [])
    entry = {
        "rule_before": entries[-1]["rule"] if entries else (before or {}).get("rule"),
        "change": "changed",
        "commit": commit,
        "date": date,
        "data_existed": before is not None,
        "rule": rule,
        "fingerprint": None,
        "verdict_before": None if before is None else before.get("verdict"),
        "value_before": None if before is None else before.get("value"),
        "why": why,
    }
    entries.append(entry)
    return entry


def save(ledger: Mapping[str, Any], path: Path = LEDGER) -> None:
    """Write the ledger atomically (keys sorted, one entry per block)."""
    atomic_write_bytes(path, (json.dumps(dict(sorted(ledger.items())), indent=1, ensure_ascii=False) + "\n").encode())


def changes_after_data(ledger: Mapping[str, list[dict[str, Any]]], claim_id: str) -> list[dict[str, Any]]:
    """The ``changed`` entries of ``claim_id``'s rules made when a verdict for it had been recorded."""
    return [
        e
        for key, entries in ledger.items()
        if key.split(" / ")[0] == claim_id
        for e in entries
        if e["change"] == "changed" and e.get("data_existed")
    ]


def change_note(ledger: Mapping[str, list[dict[str, Any]]], claim_id: str) -> str:
    """``"rule changed after data (date, commit): was …; verdict then …"`` for each such change, or ``""``."""
    notes = []
    for e in changes_after_data(ledger, claim_id):
        was = e.get("rule_before") or "see the ledger"
        notes.append(
            f"rule changed after data ({e['date']}, {e['commit'][:7]}): was {was}; verdict then "
            f"{e.get('verdict_before') or 'none'}"
        )
    return "; ".join(notes)
