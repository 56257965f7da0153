"""The paper-claim ids: 45 of them, one line each, and the rules a claim row's id and kind follow."""

import pytest

from ace_helpers.repro.paper_claims import KINDS, OURS, PAPER_CLAIMS, check_id

SECTIONS = {"markov": 10, "modadd": 10, "inflation": 7, "scaling": 6, "sva": 10, "implication": 2}


def test_every_section_has_its_claims():
    counts = {s: sum(i.startswith(f"{s}.") for i in PAPER_CLAIMS) for s in SECTIONS}
    assert counts == SECTIONS and len(PAPER_CLAIMS) == 45
    assert all(text and "\n" not in text and len(text) <= 110 for text in PAPER_CLAIMS.values())


def test_ids_fit_their_kind():
    check_id("markov.core_rank", "paper")
    check_id("ours.core_inflation.plateau", "diagnosis", explains="inflation.grows")
    check_id("ours.ace_planted_system.recovers_core", "ours")
    assert OURS.fullmatch("ours.markov_cores.r2_ratio") and set(KINDS) == {"paper", "ours", "diagnosis"}


@pytest.mark.parametrize("args, message", [
    (("markov.core_ranks", "paper"), "not a paper claim id"),
    (("markov.core_rank", "ours"), "ours.<chapter>.<name>"),
    (("ours.x.y", "diagnosis"), "explains None"),
    (("ours.x.y", "diagnosis", "markov.nope"), "explains 'markov.nope'"),
    (("ours.x.y", "ours", "markov.r2"), "only a diagnosis row explains"),
    (("ours.x.y", "evidence"), "kind='evidence' is not allowed"),
])  # fmt: skip
def test_a_wrong_id_or_kind_is_refused(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_id(*args)


def test_a_claim_row_carries_its_id_and_kind():
    from ace_helpers.repro.report import Claims

    claims = Claims()
    claims.check("rank 3", "3-D cores", 3, True, id="markov.core_rank")
    claims.check("why", "—", 0.99, True, id="ours.markov_cores.softmax_direction", explains="markov.core_rank")
    claims.check("extra", "—", 1, True, id="ours.markov_cores.extra_chain_1")
    got = [(r["id"], r["kind"], r.get("explains")) for r in claims.records("s")]
    assert got == [("markov.core_rank", "paper", None), ("ours.markov_cores.softmax_direction", "diagnosis", "markov.core_rank"),
                   ("ours.markov_cores.extra_chain_1", "ours", None)]
    with pytest.raises(ValueError, match="not a paper claim id"):
        claims.check("typo", "—", 1, True, id="markov.core_rnak")


@pytest.mark.parametrize("stem", ["ace_planted_system", "markov_cores"])
def test_every_row_of_a_tagged_chapter_has_an_id(stem):
    import importlib
    import json
    from pathlib import Path

    mod = importlib.import_module(f"ace_helpers.chapters.{stem}")
    root = Path(__file__).resolve().parents[2]
    num = {"ace_planted_system": "00", "markov_cores": "01"}[stem]
    stored = json.loads((root / "book" / "results" / f"{num}_{stem}.json").read_text())
    cfg = mod.PARAMS.resolve(PRESET="book", **{k: stored["params"][k] for k in mod.PARAMS.knobs})
    records = mod.build_claims(stored, cfg).records("book preset")
    assert records and all(r["id"] and r["kind"] in ("paper", "ours", "diagnosis") for r in records)
