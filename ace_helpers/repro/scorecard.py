"""The scorecard: the paper's claims counted once each, by id, from the chapters' stored claim records.

Every chapter writes its claim records (:meth:`ace_helpers.repro.report.Claims.records`) into its
``results.json``; at the ``book`` preset they are stored in ``book/results/<notebook>.json``.  A
record of kind ``"paper"`` with ``headline: true`` carries its paper claim's verdict; the same id from
another run (a stored long run, a variant) is evidence shown beside it, never counted again.
Our own claims are counted apart, and a diagnosis is never counted: it hangs under the claim it
explains.  Every id of :data:`~ace_helpers.repro.paper_claims.PAPER_CLAIMS` that no chapter tests
gets a "not tested" record with the reason from :data:`~ace_helpers.repro.paper_claims.NOT_TESTED_WHY`
(:func:`untested_records`), stored beside the chapters' results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.repro.badges import ORDER, badge, counts_badges
from ace_helpers.repro.paper_claims import NOT_TESTED_WHY, PAPER_CLAIMS
from ace_helpers.repro.plain import plain_value
from ace_helpers.repro.report import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED, VERDICTS
from ace_helpers.repro.rules_ledger import change_note
from ace_helpers.repro.rules_ledger import load as load_ledger
from ace_helpers.repro.tables import markdown_table, md_cell

#: The section of the records of paper claims that no chapter tests.
UNTESTED_SECTION = "no chapter"


def scorecard_rows(results: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per claim record over chapters: ``results`` maps a notebook stem to its stored ``results.json``.

    Each row carries ``chapter`` (the stem) and ``trained``: the trainer and precision of the
    chapter's run (its ``TRAINER`` / ``PRECISION`` knobs, e.g. ``"loop, fp32"``; empty for chapters
    that have neither), shown in the scorecard's run column.

    Raises ``ValueError`` for a record with an unknown verdict or without an id and kind (a stored
    file edited by hand, or written before records had them).
    """
    rows = []
    for stem in sorted(results):
        knobs = results[stem].get("params", {})
        trained = ", ".join(str(knobs[k]) for k in ("TRAINER", "PRECISION") if k in knobs)
        for rec in results[stem].get("claims", []):
            if rec.get("verdict") not in VERDICTS:
                raise ValueError(f"{stem}: claim {rec.get('claim')!r} has verdict {rec.get('verdict')!r}; allowed: {VERDICTS}")
            if not rec.get("id") or not rec.get("kind"):
                raise ValueError(f"{stem}: claim {rec.get('claim')!r} has no id or kind: re-run the chapter")
            rows.append({"chapter": stem, "trained": rec.get("trained", trained), **rec})
    return rows


def check_records(records: list[dict[str, Any]], chapter: str | None = None) -> set[str]:
    """Raise ``ValueError`` unless every claim record (:meth:`~ace_helpers.repro.report.Claims.records`) has an
    id and a kind, our own ids are ``ours.<chapter>.`` ones (when ``chapter``, a chapter package name, is
    given), a diagnosis names the paper claim it explains, and each id has at most one headline record per
    run (section); every paper id of a run that is not evidence has exactly one.  Returns the paper ids."""
    for r in records:
        if not r.get("id") or r.get("kind") not in ("paper", "ours", "diagnosis"):
            raise ValueError(f"claim {r.get('claim')!r} has id {r.get('id')!r} and kind {r.get('kind')!r}")
        if chapter and r["kind"] != "paper" and not r["id"].startswith(f"ours.{chapter}."):
            raise ValueError(f"claim {r['claim']!r}: our own ids in this chapter read ours.{chapter}.<name>, not {r['id']!r}")
        if r["kind"] == "diagnosis" and r.get("explains") not in PAPER_CLAIMS:
            raise ValueError(f"diagnosis {r['claim']!r} explains {r.get('explains')!r}, not a paper claim id")
    for section in dict.fromkeys(r["section"] for r in records):
        run = [r for r in records if r["section"] == section]
        heads = [r["id"] for r in run if r["headline"]]
        twice = sorted({i for i in heads if heads.count(i) > 1})
        missing = sorted({r["id"] for r in run if r["kind"] == "paper" and not r.get("evidence")} - set(heads))
        if twice or missing:
            raise ValueError(f"{section}: ids with two headline rows {twice}; paper ids without one {missing}")
    return {r["id"] for r in records if r["kind"] == "paper"}


def carry(
    own: list[dict[str, Any]],
    carrier: list[dict[str, Any]],
    ids: set[str] | frozenset[str] | tuple[str, ...],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hand the headline of each paper claim in ``ids`` from a run's ``own`` records to another run's (``carrier``: a
    run closer to the paper's protocol, its records made as a headline run's).  The own records of those ids become
    evidence (the replica shown beside the headline); of the carrier's, only the headline rows of those ids stay
    headlines, the rest is evidence.  Returns ``(own, carrier)``."""
    ids, evidence = set(ids), {"headline": False, "evidence": True}
    mine = [r | evidence if r["kind"] == "paper" and r["id"] in ids else r for r in own]
    theirs = [r if r["kind"] == "paper" and r["id"] in ids and r["headline"] else r | evidence for r in carrier]
    return mine, theirs


def headlines(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{paper id: its headline row}`` over ``rows`` (:func:`scorecard_rows`); ``ValueError`` when an id
    has two headline rows (two chapters, or two rows of one run, claiming the same verdict)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["kind"] == "paper" and r.get("headline"):
            if r["id"] in out:
                first = out[r["id"]]
                raise ValueError(
                    f"paper claim {r['id']!r} has two headline rows: {first['chapter']} "
                    f"{first['claim']!r} and {r['chapter']} {r['claim']!r}"
                )
            out[r["id"]] = r
    return out


def untested_records(rows: list[dict[str, Any]], why: Mapping[str, str] = NOT_TESTED_WHY) -> list[dict[str, Any]]:
    """A "not tested" record for each paper claim id that no row of ``rows`` carries as a headline, with
    the reason ``why`` gives (default :data:`NOT_TESTED_WHY`; ``ValueError`` when it gives none)."""
    carried = headlines(rows)
    missing = [cid for cid in PAPER_CLAIMS if cid not in carried]
    unexplained = [cid for cid in missing if cid not in why]
    if unexplained:
        raise ValueError(f"paper claims no chapter tests, without a reason in NOT_TESTED_WHY: {unexplained}")
    return [
        {
            "section": UNTESTED_SECTION,
            "id": cid,
            "kind": "paper",
            "claim": PAPER_CLAIMS[cid],
            "paper": PAPER_CLAIMS[cid],
            "where": "",
            "rule": "—",
            "details": "",
            "ours": "—",
            "value": None,
            "verdict": NOT_TESTED,
            "headline": True,
            "evidence": False,
            "note": why[cid],
        }
        for cid in missing
    ]


def paper_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Verdict counts of the paper's claims, each id once (its headline row; ``rows`` must include the
    :func:`untested_records` for the counts to cover every id)."""
    heads = headlines(rows)
    return {v: sum(r["verdict"] == v for r in heads.values()) for v in VERDICTS}


def ours_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Verdict counts of our own claims (kind ``"ours"``) in the chapters' headline runs."""
    own = [r for r in rows if r["kind"] == "ours" and not r.get("evidence")]
    return {v: sum(r["verdict"] == v for r in own) for v in VERDICTS}


def counts_line(counts: Mapping[str, int]) -> str:
    """``"4 reproduced, 1 partly, 0 not reproduced, 2 inconclusive, 3 not tested"``."""
    return ", ".join(f"{counts[v]} {v}" for v in (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED))


def _run(r: Mapping[str, Any]) -> str:
    return r["section"] + (f" ({t})" if (t := r.get("trained")) else "")


def _folded(parts: list[tuple[str, str]]) -> str:
    """Inline ``<details>`` with the non-empty ``(name, text)`` parts (markdown inside; a table cell stays one line)."""
    shown = [f"**{name}:** {md_cell(text)}" for name, text in parts if text]
    return f" <details><summary>rule and details</summary>{'<br>'.join(shown)}</details>" if shown else ""


def _badge(r: Mapping[str, Any]) -> str:
    return badge(r["verdict"])


def ours_cell(r: Mapping[str, Any]) -> str:
    """A record's measured value as the scorecard shows it: a bare list of numbers (per seed, per model) in plain
    words (:func:`~ace_helpers.repro.plain.plain_value`), any other text as the chapter wrote it."""
    ours = str(r.get("ours", ""))
    if ours.startswith("[") and isinstance(r.get("value"), list):
        return md_cell(plain_value(r["value"]))
    return ours


def departures_text(r: Mapping[str, Any]) -> str:
    """A record's run and how it departs from the paper's protocol: ``"book preset; departs: EPOCHS = 1400 (paper:
    20000)"``, ``"… ; the paper's protocol"`` for none, ``"…; departures not listed"`` where the record has none."""
    deps = r.get("departures")
    tail = "departures not listed" if deps is None else "the paper's protocol" if not deps else "departs: " + "; ".join(deps)
    return f"{r.get('run', _run(r))}; {tail}"


def cause_text(r: Mapping[str, Any], words: int = 20) -> str:
    """``"cause (class)"`` of a record that has a measured cause; else, for a verdict other than reproduced, the start of
    its known gap's measured cause (its first ``words`` words); else ``""``."""
    if r.get("cause"):
        return f"{r['cause']} ({r['cause_class']})"
    note = (r.get("note") or "").split("; ")[0].split()
    if r.get("verdict") in (REPRODUCED, NOT_TESTED) or not note:
        return ""
    return " ".join(note[:words]) + (" …" if len(note) > words else "")


def why_cell(r: Mapping[str, Any], ledger: Mapping[str, Any]) -> str:
    """What a reader needs beside a verdict: the measured cause where it is not reproduced, and a rule changed after
    its data was seen (:func:`~ace_helpers.repro.rules_ledger.change_note`)."""
    parts = [cause_text(r), change_note(ledger, r.get("id", ""))]
    return "; ".join(p for p in parts if p)


def scorecard_markdown(rows: list[dict[str, Any]], ledger: Mapping[str, Any] | None = None) -> str:
    """The scorecard page's tables (markdown; MyST renders them): the paper's claims by id, each with its headline
    verdict as a badge and, folded under it, our rule, the note, the evidence of other runs and the diagnoses that
    explain it; the counts per chapter; then our own claims, chapter by chapter.  ``rows``: :func:`scorecard_rows`
    plus :func:`untested_records`; ``ledger``: the rules ledger (default: :func:`~ace_helpers.repro.rules_ledger.load`)."""
    ledger = load_ledger() if ledger is None else ledger
    heads = headlines(rows)
    paper = []
    for cid in PAPER_CLAIMS:
        h = heads[cid]
        others = [r for r in rows if r["kind"] == "paper" and r["id"] == cid and r is not h]
        diagnoses = [r for r in rows if r.get("explains") == cid and not r.get("evidence")]
        evidence = "; ".join(f"{r['verdict']} ({_run(r)}: {r['claim']})" for r in others)
        folded = _folded(
            [
                ("our rule", h["rule"]),
                ("run", departures_text(h)),
                ("note", h["note"]),
                ("other runs (evidence)", evidence),
                ("diagnoses", "; ".join(r["claim"] for r in diagnoses)),
                ("id", f"`{cid}`"),
            ]
        )
        why = why_cell(h, ledger) if h["verdict"] != REPRODUCED or change_note(ledger, cid) else ""
        paper.append(
            (
                PAPER_CLAIMS[cid] + folded,
                _badge(h),
                md_cell(why) or "—",
                h["chapter"][:2] if "chapter" in h else "—",
                ours_cell(h),
                md_cell(plain_value(h.get("official"))),
            )
        )
    stems = sorted({r["chapter"] for r in rows if "chapter" in r})
    per_chapter = []
    for stem in stems:
        mine = [r for r in rows if r.get("chapter") == stem]
        per_chapter.append(
            (f"[{stem}](../notebooks/{stem}.ipynb)", counts_line(paper_counts(mine)), counts_line(ours_counts(mine)))
        )
    per_chapter.append(
        (
            "**all chapters**",
            f"**{counts_line(paper_counts(rows))}** (of {len(PAPER_CLAIMS)} ids)",
            f"**{counts_line(ours_counts(rows))}**",
        )
    )
    out = [
        markdown_table(("the paper's claim", "verdict", "why", "ch.", "ours", "official code, rerun here"), paper),
        "",
        markdown_table(("chapter", "paper claims (headline run)", "our own claims"), per_chapter),
        "",
        "## Our own claims, chapter by chapter",
        "",
    ]
    for stem in stems:
        mine = [r for r in rows if r["kind"] == "ours" and r.get("chapter") == stem]
        ours = [
            (
                r["claim"] + _folded([("our rule", r["rule"]), ("run", _run(r)), ("note", r["note"]), ("id", f"`{r['id']}`")]),
                _badge(r),
                ours_cell(r),
            )
            for r in mine
        ]
        if ours:  # folded: the summary line carries the chapter's counts, so a failure shows with the table closed
            out += [
                f'<details class="ace-fold"><summary>{stem}: {len(ours)} claims {counts_badges(ours_counts(mine))}</summary>',
                "",
                f"[Open the chapter](../notebooks/{stem}.ipynb)",
                "",
                markdown_table(("our claim", "verdict", "ours"), ours),
                "",
                "</details>",
                "",
            ]
    return "\n".join(out)


def findings_markdown(rows: list[dict[str, Any]], ledger: Mapping[str, Any] | None = None) -> str:
    """The landing page's table: each of the paper's claims once (its headline verdict as a badge), those that did
    not reproduce first, each with its measured cause (:func:`why_cell`) and linked to the chapter that tests it.
    ``rows`` and ``ledger``: as :func:`scorecard_markdown`."""
    ledger = load_ledger() if ledger is None else ledger
    heads = headlines(rows)
    order = sorted(PAPER_CLAIMS, key=lambda cid: (ORDER.index(heads[cid]["verdict"]), heads[cid].get("chapter", "~")))
    table = []
    for cid in order:
        h = heads[cid]
        where = f"[chapter {int(h['chapter'][:2])}](../notebooks/{h['chapter']}.ipynb)" if "chapter" in h else "—"
        table.append((PAPER_CLAIMS[cid], _badge(h), md_cell(why_cell(h, ledger)) or "—", where))
    counts = f"The paper's {len(PAPER_CLAIMS)} claims, each judged once: {counts_badges(paper_counts(rows))}"
    return counts + "\n\n" + markdown_table(("the paper's claim", "verdict here", "why", "chapter"), table) + "\n"


def verdict_summary(records: list[dict[str, Any]]) -> str:
    """One markdown paragraph for a chapter's verdict box (counts as badges: :func:`~ace_helpers.repro.badges.counts_badges`), from its claim ``records``
    (:meth:`~ace_helpers.repro.report.Claims.records`): the paper's claims it carries, counted once
    each by id; our own claims apart; the other runs' evidence named; which claims did not reproduce."""
    rows = [dict(r, chapter="") for r in records]
    heads = headlines(rows)
    own = [r for r in rows if r["kind"] == "ours" and not r.get("evidence")]
    parts = []
    if heads:
        parts.append(f"Paper claims ({len(heads)}, one verdict each): {counts_badges(paper_counts(rows))}")
    if own:
        parts.append(f"our own claims ({len(own)}): {counts_badges(ours_counts(rows))}")
    evidence = list(dict.fromkeys(r["section"] for r in rows if r.get("evidence")))
    if evidence:
        parts.append("evidence beside them, not counted again: " + "; ".join(evidence))
    text = "; ".join(parts) + "."
    for verdict, label in ((PARTLY, "Partly reproduced"), (NOT_REPRODUCED, "Not reproduced"), (INCONCLUSIVE, "Inconclusive")):
        missed = list(dict.fromkeys(r["claim"] for r in heads.values() if r["verdict"] == verdict))
        if missed:
            text += f" {label}: " + "; ".join(missed) + "."
    if any(r["verdict"] in (PARTLY, NOT_REPRODUCED, INCONCLUSIVE) for r in heads.values()):
        text += " The measured causes are in the claims tables below."
    return text
