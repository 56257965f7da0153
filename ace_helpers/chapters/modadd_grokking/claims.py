"""Chapter 2's claims: grokking, the core at grokking, necessity and sufficiency, the cyclic mechanism and R_h², each a
table of rule specs judged by one evaluator (:func:`~ace_helpers.repro.rules.judge_all`), with the chapter's known
gaps and the numbers it measured.  The tables: :mod:`.grok_rules` (up to the grok checkpoint), :mod:`.circle_rules`
(from grokking on, and the diagnoses of what fails there), :mod:`.keep_remove` (sufficiency and necessity) and
:mod:`.paper_epochs` (where the paper looks).  Each row names the paper claim it tests (``modadd.*``) or is one of
ours (``ours.modadd_grokking.*``; a diagnosis names the paper claim it explains)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_helpers.chapters.modadd import config
from ace_helpers.chapters.modadd.analysis import ArmResult, GrokRun
from ace_helpers.chapters.modadd.stats import SHARE_MIN
from ace_helpers.chapters.modadd_grokking import circle_rules, grok_rules, keep_remove, official, paper_epochs
from ace_helpers.chapters.modadd_grokking.circle_rules import r2_threshold  # noqa: F401 - the chapter's R_h² bound
from ace_helpers.chapters.modadd_grokking.grok_rules import (  # noqa: F401 - the chapter's constants
    CODE_CLOCKS,
    CODE_SHARE,
    OFF_PAPER_TASK,
    PRE_GROK_ACC,
    GrokClaimsRun,
)
from ace_helpers.chapters.modadd_grokking.known_gaps import measured_gap
from ace_helpers.repro.official import attach_official
from ace_helpers.repro.params import Params
from ace_helpers.repro.report import Claims
from ace_helpers.repro.rules import judge_all, untested


def _gap(cfg: Params) -> Any:
    """The chapter's known gap for a rule's ``gap`` key, ``"<key>::<measured detail>"``, with the detail appended."""
    return lambda key: measured_gap(cfg, *key.split("::", 1)) if "::" in key else measured_gap(cfg, key, "")


def build_claims(run: GrokRun, cfg: Params, long: tuple[ArmResult, str] | None | bool = True) -> Claims:
    """Chapter 2 claims: grok epoch, core dim at grokking, spectrum before / at / after grokking, keep / remove, the
    claims judged at the paper's epochs, and the diagnosis rows of the claims that fail.

    The claims this run cannot test are in ``not_tested``, the measured values in ``numbers``.  ``long``: the late
    weight-decay arm for the training-length diagnosis, as :func:`~ace_helpers.chapters.modadd.stats.late_arm` returns
    it (``True``: look it up; ``None`` or ``False``: none).  Every claim gets a verdict: a run that never groks records
    the claims about "at / after grokking" as not tested.  Off the paper's task (a smaller prime, other data) three
    rules have relaxed variants, each saying so in its text (:func:`~ace_helpers.chapters.modadd.config.paper_task`).
    On the paper's task the rows carry the code release's own numbers, rerun here (:mod:`ace_helpers.chapters.modadd_grokking.official`).
    """
    paper_task = config.paper_task(cfg)
    r = GrokClaimsRun(run, cfg, long, paper_epochs.official_shares() if paper_task else {})
    grok_specs, circle_specs = grok_rules.specs_for(cfg), circle_rules.specs_for(cfg)
    before = tuple(s for s in grok_specs if s.id in grok_rules.BEFORE_GROK)
    claims = judge_all(before, r, cfg, _gap(cfg))
    claims.numbers.update(_numbers_before(r))
    if r.grok is None:
        why = f"the run does not grok: no checkpoint up to epoch {int(r.wd.epochs[-1])} has every model at ≥ 0.99 test accuracy"
        after = [
            s
            for s in (*grok_specs, *circle_specs, *keep_remove.SPECS, *paper_epochs.SPECS)
            if s not in before and not getattr(s, "explains", None)
        ]
        claims.not_tested += untested(after, why, ours="no grokking")
        return claims
    later = judge_all(tuple(s for s in grok_specs if s not in before) + circle_specs, r, cfg, _gap(cfg))
    claims.rows += later.rows
    claims.not_tested += later.not_tested
    claims.numbers.update(_numbers_after(r))
    keep_remove.keep_remove_claims(claims, r.wd, cfg, r.gi, r.post, claims.numbers)
    at_epochs = paper_epochs.paper_epoch_claims(r.wd, cfg, r.official)  # where the paper looks
    claims.rows += at_epochs.rows
    claims.not_tested += at_epochs.not_tested
    return attach_official(claims, official.stored_official() if paper_task else None)


def _numbers_before(r: GrokClaimsRun) -> dict[str, Any]:
    """The grok epoch and the spectrum before grokking, for ``results.json``."""
    wd, pre = r.wd, r.pre
    med, r2h = wd["median_abs_eig"][:, pre], wd["r2_holdout"][:, pre]
    return {
        "grok_epoch": r.grok,
        "pre_grok_epochs": wd.epochs[pre].tolist(),
        "pre_grok_max_median_abs_eig": float(med.max()) if med.size else None,
        "pre_grok_max_median_abs_eig_ols": float(wd["median_abs_eig_ols"][:, pre].max()) if med.size else None,
        "pre_grok_max_r2_holdout": float(r2h.max()) if r2h.size else None,
    }


def _numbers_after(r: GrokClaimsRun) -> dict[str, Any]:
    """The core and the share at grokking, the shares and R_h² from grokking on, and the diagnoses' numbers."""
    cfg, wd = r.cfg, r.wd
    head, var = circle_rules.share_stats(r)
    stat = circle_rules.r2_stat(r, cfg)
    nums: dict[str, Any] = {
        "core_dim_at_grok": wd["core_dim"][:, r.gi].tolist(),
        "at_grok_frac_unit_circle_ols": r.at_grok_share.tolist(),
    }
    forming = grok_rules.forming(r)
    if forming is not None:
        nums["diagnosis_at_grok_next"] = forming
    nums.update(
        post_grok_frac_unit_circle_ols=head.as_dict(),
        post_grok_frac_unit_circle_ridge=var.as_dict(),
        post_grok_min_frac_unit_circle=float(wd["frac_unit_circle"][:, r.post].min()),
    )
    if not head.all_ok:
        nums.update(circle_rules.diagnosis_numbers(r))
        late = circle_rules.late_min(r)
        if late is not None:
            nums["diagnosis_late_min_frac_unit_circle_ols"] = late[0]
    nums.update(post_grok_r2_holdout=stat.as_dict(), post_grok_min_r2_holdout=stat.min)
    if not stat.all_ok:
        nums["diagnosis_rho_r2_holdout_core_dim"] = circle_rules.r2_core_rho(r)
    return nums


def unit_circle_sentence(nums: Mapping[str, Any], p: int) -> str:
    """One computed sentence on the unit-circle claims (for the notebook's prose)."""
    at = nums.get("at_grok_frac_unit_circle_ols")
    head = nums.get("post_grok_frac_unit_circle_ols")
    if at is None or head is None:
        return "This run does not grok, so there is no 'at grokking' clock to compare with the paper's."
    at_ok = min(at) >= SHARE_MIN
    first = (
        f"At the grok checkpoint {'every model has' if at_ok else 'not every model has'} ≥ {SHARE_MIN:.0%} of its "
        f"OLS eigenvalues within sin(π/{p}) of the circle (per model: {', '.join(f'{v:.2f}' for v in at)})."
    )
    second = f" From grokking on, {head['n_ok']} of {head['n']} checkpoints (model × epoch) keep that share" + (
        "."
        if head["n_ok"] == head["n"]
        else f"; the lowest is {head['min']:.2f} (model {head['argmin'][0]}, epoch {head['argmin'][1]})."
    )
    return first + second


def long_clock_epochs(arm: ArmResult, grok: int | None) -> list[int]:
    """Clock epochs of the long run: the paper's (0, 300, 800, 900, 2000) shifted by our grokking:
    0, 300, grok, grok + 100, 2000 (those that are checkpoints)."""
    return [e for e in (0, 300, grok, (grok or 0) + 100, 2000) if e is not None and e in arm.epochs]
