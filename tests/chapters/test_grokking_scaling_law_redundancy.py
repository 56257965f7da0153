"""Chapter 4's redundancy intervention (ace_helpers.chapters.grokking_scaling_law.redundancy): the projector,
the projected training, the slope and its verdicts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ace_helpers.chapters.grokking_scaling_law import PARAMS, ScalingRun, build_claims, fit_sweeps, redundancy_from_rows
from ace_helpers.chapters.grokking_scaling_law.redundancy import (
    RedundancyRun,
    draw_freqs,
    fourier_projector,
    redundancy_runs,
    redundancy_slope,
)
from ace_helpers.repro.thread_pools import set_threads

set_threads(1)


def test_fourier_projector_spans_the_constant_and_its_frequencies() -> None:
    p = 11
    proj = fourier_projector(p, [2])
    assert torch.allclose(proj, proj.T, atol=1e-12) and torch.allclose(proj @ proj, proj, atol=1e-12)
    assert round(float(torch.trace(proj))) == 3  # constant, cos, sin
    t = torch.arange(p, dtype=torch.float64)
    inside, outside = torch.cos(2 * torch.pi * 2 * t / p), torch.cos(2 * torch.pi * 3 * t / p)
    assert torch.allclose(proj @ inside, inside, atol=1e-12) and float((proj @ outside).norm()) < 1e-12
    assert torch.allclose(fourier_projector(p, range(1, 6)), torch.eye(p, dtype=torch.float64), atol=1e-12)
    with pytest.raises(ValueError, match=r"freqs must be a non-empty set in \[1, 5\]"):
        fourier_projector(p, [6])


def test_draw_freqs_is_seeded_and_all_at_the_top() -> None:
    assert draw_freqs(53, 6, 42) == draw_freqs(53, 6, 42) and len(set(draw_freqs(53, 6, 42))) == 6
    assert draw_freqs(53, 26, 1) == list(range(1, 27))
    with pytest.raises(ValueError, match=r"k must be in \[1, 26\]"):
        draw_freqs(53, 27, 0)


def test_projected_training_keeps_each_embedding_in_its_span() -> None:
    runs = redundancy_runs(p=11, ks=(1, 5), seeds=(0,), train_fraction=0.5, batch_size=64, max_steps=20, eval_every=10)
    assert [(r.k, r.steps_trained) for r in runs] == [(1, 20), (5, 20)] and all(r.censored for r in runs)
    # the constraint itself: a member trained under it ends inside its span
    from ace_helpers.chapters.grokking_scaling_law.runs import sweep_config
    from ace_helpers.toys.ensemble_runs import train_ensemble
    from ace_helpers.toys.tasks.modadd import modadd_dataset

    data, proj = modadd_dataset(11, 0.5, 42), fourier_projector(11, [3]).float()

    def constrain(ensemble, ids):
        ensemble.tok_emb.copy_(proj @ ensemble.tok_emb)

    run = train_ensemble(sweep_config(11), data.train_inputs, data.train_targets, seeds=[0], weight_decays=[1.0],
                         batch_size=64, lr=1e-3, max_steps=5, eval_every=5, keep_models=True, progress=False,
                         constrain=constrain)  # fmt: skip
    emb = run.models[0].tok_emb.weight.detach()  # (p, D)
    assert float((emb - proj @ emb).norm()) < 1e-4 * float(emb.norm())


def _runs(taus: dict[int, list[int]]) -> list[RedundancyRun]:
    return [RedundancyRun(k, s, tuple(range(1, k + 1)), 100, 100 + t, t, False, 100 + t)
            for k, ts in taus.items() for s, t in enumerate(ts)]  # fmt: skip


def test_slope_verdicts_follow_the_direction_of_tau_in_k() -> None:
    cfg = PARAMS.resolve(PRESET="ci")
    res = ScalingRun(None, fit_sweeps([], []))  # type: ignore[arg-type]
    assert "scaling.redundancy_cause" in [r.id for r in build_claims(res, cfg).not_tested]
    falling = _runs({2: [800, 900, 1000], 6: [300, 320, 350], 26: [90, 100, 110]})
    fit = redundancy_slope(falling)
    assert fit.slope < 0 and fit.interval[1] < 0 and fit.ks == (2, 6, 26) and fit.means[0] == pytest.approx(900)

    def verdict(runs, claim_id="scaling.redundancy_cause"):
        rows = build_claims(res, cfg, redundancy=runs).records("s")
        return next(r["verdict"] for r in rows if r["id"] == claim_id)

    assert verdict(falling) == "reproduced"
    assert verdict(_runs({2: [90, 100, 110], 6: [300, 320, 350], 26: [800, 900, 1000]})) == "not reproduced"
    assert verdict(_runs({2: [50, 900, 300], 6: [300, 40, 600], 26: [90, 800, 200]})) == "inconclusive"
    # the confined arms alone: τ falls from k = 2 to 6 though the unconstrained arm is slow
    mixed = _runs({2: [800, 900, 1000], 6: [100, 120, 90], 26: [900, 1000, 1100]})
    assert verdict(mixed) == "not reproduced"
    assert verdict(mixed, "ours.grokking_scaling_law.redundancy_constrained") == "reproduced"
    rows = [r.to_dict() for r in mixed]
    assert redundancy_from_rows(rows) == mixed and isinstance(rows[0]["freqs"], list)
    with pytest.raises(ValueError, match="two or more k"):
        redundancy_slope(_runs({2: [1, 2]}))
    never = [RedundancyRun(2, 0, (1, 2), None, None, None, True, 10)] + _runs({6: [5]})
    with pytest.raises(ValueError, match="never memorised"):
        redundancy_slope(never)
    assert np.isfinite(fit.slope)
