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
