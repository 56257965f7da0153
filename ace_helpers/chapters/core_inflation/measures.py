"""What chapter 3's rules read from a run: each rule's ``measure`` (the run's :class:`~.readings.Facts` in, a
:class:`~ace_helpers.repro.rules.Measured` out) and the chapter's bounds that they read; the rules themselves, their
prose and tests, are the table in :mod:`ace_helpers.chapters.core_inflation.rules`."""

from __future__ import annotations

import numpy as np

from ace_helpers.chapters.core_inflation.fork import has_spectra
from ace_helpers.chapters.core_inflation.readings import after_grok, always, late, span, window_mask, window_quartiles
from ace_helpers.chapters.modadd.analysis import ArmResult, per_model_at
from ace_helpers.chapters.modadd.reference import mode_cap
from ace_helpers.repro.rules import Measured

#: How a window of checkpoints is read into an interval.
WINDOW_METHOD = (
    "the models' smallest lower and smallest upper quartile of the quantity over the last quarter of the run's checkpoints"
)
#: The paper's ~60 dims read as within 20 %, and the bound this chapter used before (its partly form).
DIM_MIN, DIM_PARTLY = 48, 40
#: Largest ratio of the WD-off arm's core dim (or OLS modes) to the value at grokking read as "no inflation" ("no
#: proliferation"): ours, the paper gives no number.
NOWD_FACTOR = 1.5
#: "Weight decay redistributes weight across all harmonics": the effective number of harmonics under weight decay
#: reaches this share of ⌊p/2⌋, and this multiple of the WD-off arm's (ours; no number in the paper).
REDIST_SHARE, REDIST_FACTOR = 0.5, 1.5
#: Necessary-dim growth after grokking called inflation (and the smallest WD vs WD-off contrast in dimensions): ours,
#: a margin above the checkpoint-to-checkpoint scatter of the necessary dim (a few dimensions), a fraction of ~45.
MIN_GROWTH = 10


@late
def grows(f, cfg):
    q25, med, q75, why = window_quartiles(f.wd, "core_dim", DIM_MIN, "core dim")
    n = int(window_mask(f.wd.epochs).sum())
    return Measured(
        {
            "the models' smallest window quartiles of the core dim": [min(q25), min(q75)],
            "the smallest lower quartile of the core dim": min(q25),
        },
        ours=[round(v, 1) for v in med],
        per_seed=med,
        method=WINDOW_METHOD,
        context={"points": f"{n} checkpoint{'s' * (n != 1)}", "last": f.last, "why": why},
    )


@always
def stopped(f, cfg):
    dim_last = f.wd["core_dim"][:, -1]
    if not (f.paper_task and f.full_run) or (dim_last >= DIM_MIN).all():
        return None
    half = int(f.wd.epochs[np.abs(f.wd.epochs - f.last / 2).argmin()])
    short = np.flatnonzero(dim_last < DIM_MIN)
    change = (dim_last - per_model_at(f.wd, "core_dim", half))[short].tolist()
    return Measured(
        {"|change of the core dim over the second half|": np.abs(change).tolist()},
        ours=change,
        context={"half": half, "last": f.last, "models": short.tolist()},
    )


@always
def groks_before_fork(f, cfg):
    if f.before_fork:
        return None
    return Measured({"grok epoch − FORK_EPOCH": float("inf") if f.grok is None else f.grok - f.fork}, ours=f.grok)


@late
@after_grok
def growth(f, cfg):
    growth = f.growth().tolist()
    return Measured({"core dim growth since grokking": growth}, ours=growth, context={"last": f.last})


def nowd_ratio(field: str):
    @late
    @after_grok
    def measure(f, cfg):
        end = f.nowd_ratio(field).tolist()
        return Measured(
            {"WD-off value at the last shared epoch ÷ at grokking": end},
            ours=[round(float(r), 3) for r in end],
            context={"e_end": f.e_end, "span": span(end)},
        )

    measure.__qualname__ = f"nowd_ratio[{field}]"
    return measure


@always
@after_grok
def energy_rank_flat(f, cfg):
    ratio = (f.nowd["energy_rank"] / f.nowd["energy_rank"][:, :1]).max(axis=1).tolist()
    return Measured(
        {"WD-off energy rank's largest ratio to its value at the fork": ratio}, ours=[round(float(r), 3) for r in ratio]
    )


def contrast(field: str):
    @late
    @after_grok
    def measure(f, cfg):
        if not f.shared:
            return None
        diff = f.contrast(field).tolist()
        return Measured({"WD − WD-off at the last shared epoch": diff}, ours=diff, context={"e_end": f.e_end})

    measure.__qualname__ = f"contrast[{field}]"
    return measure


@late
@after_grok
def redistribution(f, cfg):
    if not (f.shared and has_spectra(f.wd) and has_spectra(f.nowd)):
        return None
    half = f.p // 2
    q = {name: f.harmonics(field) for field, name in (("emb_spectrum", "embedding"), ("unemb_spectrum", "unembedding"))}
    ok = {n: bool(((h >= REDIST_SHARE * half) & (h >= REDIST_FACTOR * off)).all()) for n, (h, off) in q.items()}
    held = [n for n in ok if ok[n]]
    smaller = np.minimum(q["embedding"][0], q["unembedding"][0])
    return Measured(
        {
            "the smaller effective number of harmonics": smaller.tolist(),
            "⌊p/2⌋": half,
            **{
                f"the {n}'s effective harmonics ÷ the WD-off arm's": (h / np.maximum(off, 1e-12)).tolist()
                for n, (h, off) in q.items()
            },
            "weights whose harmonics spread": len(held),
        },
        ours=[[round(float(h), 2) for h in q[n][0]] for n in ("embedding", "unembedding")],
        context={
            "e_end": f.e_end,
            "half": half,
            "held": ", ".join(held) or "neither",
            "off_emb": np.round(q["embedding"][1], 2).tolist(),
            "off_unemb": np.round(q["unembedding"][1], 2).tolist(),
            "unemb": span(np.round(q["unembedding"][0], 2)),
            "emb": span(np.round(q["embedding"][0], 2)),
        },
    )


@always
@after_grok
def sufficient_flat(f, cfg):
    spread = f.suff_spread().tolist()
    why = ""
    if f.full_run and "keep_curve" in f.wd.arrays:  # the cause of a miss at 20 000 epochs, with the diagnosis row's reading
        loose = sufficient_dims(f.wd, 0.01)[:, f.wd.epochs >= f.grok]
        grows = bool((loose.max(axis=1) / np.maximum(loose.min(axis=1), 1) > 1.5).all())
        why = (
            f"the sufficient dim grows {span(spread)}× after grokking in our {cfg['PRECISION']} {cfg['TRAINER']} run, "
            f"{'at' if grows else 'but not at'} a 1 % keep tolerance too"
        )
    return Measured(
        {"max ÷ min of the sufficient dim after grokking": spread},
        ours=[round(float(s), 3) for s in spread],
        context={"why": why},
    )


def sufficient_dims(arm: ArmResult, tolerance: float) -> np.ndarray:
    """(M, C) sufficient dim at another keep tolerance: smallest r ≥ 1 with keep acc ≥ base − ``tolerance``,
    read from the stored ``keep_curve`` (M, C, D + 1); D when no rank qualifies."""
    keep, base = np.asarray(arm["keep_curve"], float), np.asarray(arm["test_acc"], float)
    ok = keep[:, :, 1:] >= base[:, :, None] - tolerance
    return np.where(ok.any(axis=2), ok.argmax(axis=2) + 1, keep.shape[2] - 1)


@always
@after_grok
def loose_tolerance(f, cfg):
    if not f.full_run or "keep_curve" not in f.wd.arrays:
        return None
    post = f.wd.epochs >= f.grok
    loose = sufficient_dims(f.wd, 0.01)[:, post]
    spread = (loose.max(axis=1) / np.maximum(loose.min(axis=1), 1)).tolist()
    return Measured(
        {"max ÷ min of the sufficient dim at a 1 % keep tolerance": spread}, ours=[round(float(s), 3) for s in spread]
    )


@late
@after_grok
def redundancy(f, cfg):
    growth = f.gap_growth().tolist()
    return Measured({"growth of (necessary − sufficient dim) since grokking": growth}, ours=growth, context={"last": f.last})


@late
@after_grok
def modes(f, cfg):
    top = f.p // 2 + 1
    q25, med, q75, why = window_quartiles(f.wd, "rotational_modes_ols", top - 3, "OLS mode count")
    n = int(window_mask(f.wd.epochs).sum())
    return Measured(
        {
            "the models' smallest window quartiles of the OLS modes": [min(q25), min(q75)],
            "the smallest lower quartile of the OLS modes": min(q25),
            "⌊p/2⌋ + 1": top,
        },
        ours=[round(v, 1) for v in med],
        per_seed=med,
        method=WINDOW_METHOD,
        context={"points": f"{n} checkpoint{'s' * (n != 1)}", "last": f.last, "top": top, "why": why},
    )


@always
@after_grok
def modes_cap(f, cfg):
    top, dim_last, modes_last = f.p // 2 + 1, f.wd["core_dim"][:, -1], f.wd["rotational_modes_ols"][:, -1]
    if not f.full_run or (modes_last >= top - 3).all():
        return None
    cap = np.asarray([mode_cap(int(d), f.p) for d in dim_last])
    return Measured(
        {"modes − cap": (modes_last - cap).tolist()},
        ours=[[int(a), int(b)] for a, b in zip(modes_last, cap)],
        context={"last": f.last},
    )
