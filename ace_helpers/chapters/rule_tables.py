"""Every chapter's rule table, for the rules ledger: ``python -m ace_helpers.chapters.rule_tables register --why "..."``.

:func:`tables` gathers the :class:`~ace_helpers.repro.rules.Rule` rows of each chapter whose claims are declared as
data; ``register`` appends a ledger entry (:mod:`ace_helpers.repro.rules_ledger`) for every rule that is new or
changed since its last entry, with the stored verdict it had before; ``check`` lists them and exits 1 if any;
``record --id ID --rule "..." --why "..."`` records a change of a rule that is still code (chapters not yet tables).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence

from ace_helpers.chapters.ace_planted_system.claims import SPECS as PLANTED
from ace_helpers.chapters.ace_vs_alternatives.claims import SPECS as ALTERNATIVES
from ace_helpers.chapters.ace_vs_alternatives.llm_rules import SPECS as ALTERNATIVES_LLM
from ace_helpers.chapters.core_inflation.claims import CONTINUATION_SPECS as INFLATION_CONTINUATION
from ace_helpers.chapters.core_inflation.reference_rules import SPECS as INFLATION_REFERENCE
from ace_helpers.chapters.core_inflation.rules import SPECS as INFLATION
from ace_helpers.chapters.core_stitching.claims import SPECS as STITCHING
from ace_helpers.chapters.core_stitching.paper_rows import SPECS as STITCHING_PAPER
from ace_helpers.chapters.grokking_scaling_law.claims_limits import LIMIT_SPECS, MARGIN_SPECS, REDUNDANCY_SPECS
from ace_helpers.chapters.grokking_scaling_law.sweep_rules import JOINT_SPECS, OMEGA_SPECS, P_SPECS
from ace_helpers.chapters.llm_agreement.claims import SPECS as LLM_AGREEMENT
from ace_helpers.chapters.markov_cores.claims import SPECS as MARKOV
from ace_helpers.chapters.modadd_grokking.circle_rules import SPECS as MODADD_CIRCLE
from ace_helpers.chapters.modadd_grokking.grok_rules import SPECS as MODADD_GROK
from ace_helpers.chapters.modadd_grokking.keep_remove import SPECS as MODADD_KEEP_REMOVE
from ace_helpers.chapters.modadd_grokking.paper_epochs import SPECS as MODADD_EPOCHS
from ace_helpers.chapters.modadd_grokking.snap_models import SPECS as MODADD_SNAP_MODELS
from ace_helpers.repro.artifacts import git_commit, project_root
from ace_helpers.repro.rules import Rule, rules_of
from ace_helpers.repro.rules_ledger import LEDGER, load, record_change, register, save, unregistered


def tables() -> dict[str, list[Rule]]:
    """``{notebook stem: its rules}`` for every chapter whose claims are a spec table."""
    return {
        "00_ace_planted_system": rules_of(PLANTED),
        "01_markov_cores": rules_of(MARKOV),
        "02_modadd_grokking": rules_of(MODADD_GROK)
        + rules_of(MODADD_CIRCLE)
        + rules_of(MODADD_EPOCHS)
        + rules_of(MODADD_KEEP_REMOVE)
        + rules_of(MODADD_SNAP_MODELS),
        "03_core_inflation": rules_of(INFLATION) + rules_of(INFLATION_REFERENCE) + rules_of(INFLATION_CONTINUATION),
        "04_grokking_scaling_law": rules_of(OMEGA_SPECS + P_SPECS + LIMIT_SPECS + JOINT_SPECS + MARGIN_SPECS + REDUNDANCY_SPECS),
        "05_llm_agreement": rules_of(LLM_AGREEMENT),
        "06_ace_vs_alternatives": rules_of(ALTERNATIVES) + rules_of(ALTERNATIVES_LLM),
        "07_core_stitching": rules_of(STITCHING) + rules_of(STITCHING_PAPER),
    }


def stored_headlines() -> dict[str, dict]:
    """The headline record of every claim id in the book's stored results (``book/results/*.json``)."""
    out: dict[str, dict] = {}
    for path in sorted((project_root() / "book" / "results").glob("*.json")):
        for rec in json.loads(path.read_text()).get("claims", []):
            if rec.get("headline") and rec.get("id"):
                out.setdefault(rec["id"], rec)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ace_helpers.chapters.rule_tables", description=__doc__)
    parser.add_argument("action", choices=["check", "register", "record"])
    parser.add_argument("--id", default="", help="record: the claim id of a rule that is still code, not a spec")
    parser.add_argument("--rule", default="", help="record: the new rule in one line")
    parser.add_argument("--why", default="", help="why the rules changed (required by register)")
    parser.add_argument(
        "--restated",
        action="store_true",
        help="the rules' code changed, not what they decide (every stored verdict and value the same)",
    )
    args = parser.parse_args(argv)
    ledger = load(LEDGER)
    todo = unregistered(tables(), ledger)
    if args.action == "check":
        print("\n".join(todo) or "every rule is registered")
        return 1 if todo else 0
    if not args.why.strip():
        parser.error(f"{args.action} needs --why: say what changed and why")
    if args.action == "record":
        if not args.id or not args.rule:
            parser.error("record needs --id and --rule")
        record_change(
            ledger,
            args.id,
            rule=args.rule,
            why=args.why,
            commit=git_commit().removesuffix("-dirty"),
            date=dt.date.today().isoformat(),
            stored=stored_headlines(),
        )
        save(ledger, LEDGER)
        print(f"recorded a change of {args.id}")
        return 0
    added = register(
        tables(),
        ledger,
        why=args.why,
        commit=git_commit().removesuffix("-dirty"),
        date=dt.date.today().isoformat(),
        stored=stored_headlines(),
        change="restated" if args.restated else "changed",
    )
    save(ledger, LEDGER)
    print(f"registered {len(added)} rule(s): {', '.join(added) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
