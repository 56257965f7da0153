"""Chapter 5 steered generation: sampling with the calibrated per-step flip, and scoring verb number.

At every step the flip h + s·(−2qqᵀ(h − μ)) is applied at the chosen layer and the last position,
with s calibrated per step so that the copula margin lands on the other side; a generation is
scored by whether its number-marked verbs are the forms the clean model likes less (teacher forced).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ace_helpers import llm
from ace_helpers.llm.agreement import copula_margin, verb_token_ids
from ace_helpers.llm.edits import clean_block_outputs, tail_edit
from ace_helpers.llm.agreement_states import verb_head
from ace_helpers.method import interventions
from ace_helpers.method.core import Core


@dataclass
class Generation:
    """Clean and steered continuations (same seed), their token ids and the per-step flip scales.

    Attributes:
        prompts: the B prompt rows (each generation prompt repeated ``n_samples`` times).
        clean, steered: the B decoded continuations.
        clean_ids, steered_ids: (B, n_new) generated token ids.
        scales: (n_new, B) calibrated flip scales s* of the steered run.
        clean_margins, steered_margins: (n_new, B) copula margin of the logits each token was sampled from.
        steered_clean_margins: (n_new, B) copula margin of the **clean** model in the steered run's
            context at each step (m0, the margin the calibration pushes to the other side).
        clean_disagree, steered_disagree: per row, (number-marked verbs the clean model likes less
            than their other-number form in the same context, number-marked verbs generated).
    """

    prompts: list[str]
    clean: list[str]
    steered: list[str]
    clean_ids: np.ndarray
    steered_ids: np.ndarray
    scales: np.ndarray
    clean_disagree: list[tuple[int, int]]
    steered_disagree: list[tuple[int, int]]
    clean_margins: np.ndarray
    steered_margins: np.ndarray
    steered_clean_margins: np.ndarray | None = None

    def landed_share(self) -> float:
        """Fraction of (step, row) of the steered run whose achieved copula margin lies on the other
        side of the clean model's margin in the same context (1.0 when every calibration reaches the
        other side; the official one-step rule falls short when the margin is not linear in s)."""
        if self.steered_clean_margins is None:
            return float("nan")
        return float(np.mean(np.sign(self.steered_margins) == -np.sign(self.steered_clean_margins)))

    def median_push(self) -> float:
        """Median over (step, row) of the steered run's achieved copula margin towards the other number
        (nats; the calibration's target is its ``eps``): how far each step actually pushed."""
        if self.steered_clean_margins is None:
            return float("nan")
        return float(np.median(-np.sign(self.steered_clean_margins) * self.steered_margins))

    def margin_sign_flip(self) -> float:
        """Fraction of (step, row) whose steered copula margin has the opposite sign of the clean run's
        margin at the same step (only comparable while the texts agree; an internal check)."""
        return float(np.mean(np.sign(self.steered_margins) != np.sign(self.clean_margins)))

    @staticmethod
    def _rate(counts: list[tuple[int, int]]) -> tuple[float, int]:
        scored = [(d, n) for d, n in counts if n > 0]
        if not scored:
            return float("nan"), 0
        return float(np.mean([2 * d > n for d, n in scored])), len(scored)

    def flip_rate(self) -> tuple[float, int]:
        """(fraction of steered generations most of whose number-marked verbs are the form the clean
        model would *not* choose in that context, number of steered generations with such a verb)."""
        return self._rate(self.steered_disagree)

    def baseline_rate(self) -> tuple[float, int]:
        """The same statistic for the clean generations (sampling noise; should be near 0)."""
        return self._rate(self.clean_disagree)


def sample_top_k(logits: torch.Tensor, gen: torch.Generator | None, top_k: int) -> torch.Tensor:
    """Next token ids (B,) from last-token logits (B, V) at temperature 1 among the ``top_k`` most
    likely tokens (ties at the k-th logit broken by ``torch.topk``); argmax if ``gen`` is None.

    The draw is made among the k candidates only: a multinomial over the whole vocabulary draws one
    random number per vocabulary entry (262k per row for Gemma-3), which cost more than the model's
    single-token forward. Same distribution, other random numbers than the full-vocabulary draw.

    ``gen`` is a CPU generator: the tokens are chosen on the CPU, so logits on a GPU give the CPU's tokens,
    returned on the logits' device.
    """
    rows = logits.cpu()
    if gen is None:
        return rows.argmax(-1).to(logits.device)
    values, index = torch.topk(rows, min(top_k, rows.shape[-1]), dim=-1)  # (B, k)
    pick = torch.multinomial(torch.softmax(values, -1), 1, generator=gen)  # (B, 1) positions among the k
    return index.gather(-1, pick)[:, 0].to(logits.device)


def generate_with_flip(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layer: int,
    core: Core | None,
    *,
    n_new: int,
    seed: int | None = 0,
    top_k: int = 50,
    s0: float = 0.2,
    eps: float = 1.0,
    clip: float = 50.0,
    refine: int = 0,
) -> tuple[torch.Tensor, np.ndarray, np.ndarray, np.ndarray]:
    """Sample ``n_new`` tokens (temperature 1, top-k; greedy if ``seed`` is None), optionally steered.

    Semantics are those of generation **without a KV cache** with the edit applied at the last
    position of every step (earlier positions stay clean). Because only the last position is
    edited, the clean states of earlier positions are exactly a clean KV cache, so each step runs
    one token: clean (m0, and the cache for the next step), with s0 (m1), then with
    s* = clip((−sign(m0)·eps − m0)/g, ±clip), g = (m1 − m0)/s0, and samples from that last run.
    The edited runs recompute only blocks ℓ−1.. (the clean run's output of block ℓ−2 is fed past
    the earlier blocks, :func:`~ace_helpers.llm.edits.tail_edit`: the same numbers, a fraction of the work at the
    late layers where the core lives). The calibration runs (m0, m1 and the secant steps) need only
    the copula margin, so they run under the four-verb head (:func:`~.states.verb_head`); only the
    run that is sampled from computes the whole vocabulary (its unembedding is most of a small
    model's weights: Gemma-3-270M's 262k × 640).
    ``refine`` > 0 adds that many secant steps towards the target (one single-token run each):
    the official code release's one-step rule (``generate_surgical`` in ``SVA_uni.py``: ``refine=0``,
    s0 = 0.2, eps = 1) undershoots when the margin grows faster than
    linearly in s, which it does in the last layers of both offline models.
    ``core=None`` samples clean (one full run per step, :func:`ace_helpers.method.interventions.run_with_edit`).

    Returns:
        ``(tokens (B, n_new) long, scales (n_new, B), achieved copula margins (n_new, B), clean copula
        margins m0 in the same contexts (n_new, B))``.
    """
    ids = verb_token_ids(tokenizer)
    paths = llm.block_paths(lm)
    path = paths[layer - 1]
    batch = llm.encode(tokenizer, prompts, device=llm.input_device(lm))
    cache = llm.prefix_cache(lm, batch)
    gen = None if seed is None else torch.Generator().manual_seed(int(seed))
    token, pos, mask = batch["input_ids"][:, -1:], batch["position_ids"][:, -1:], batch["attention_mask"]
    out, scales, achieved, clean_m = [], [], [], []

    def inputs(c) -> dict:
        return llm.with_cache(lm, {"input_ids": token, "attention_mask": mask, "position_ids": pos, "use_cache": True,
                                   "logits_to_keep": 1}, c)

    def run(c, fn):
        return interventions.run_with_edit(lm, inputs(c), path, fn, positions=-1)[:, -1].double()

    def flipped(c, scale, skip_with):
        fn = lambda h: core.flip(h, scale=scale if isinstance(scale, float) else scale.to(h.dtype))  # noqa: E731
        return tail_edit(lm, inputs(c), paths, layer, fn, skip_with)[:, -1].double()

    for _ in range(n_new):
        if core is None:
            logits = run(cache, None)
            scale = torch.zeros(token.shape[0], dtype=torch.float64, device=token.device)
            m0 = copula_margin(logits, ids)
        else:
            before = copy.deepcopy(cache)
            with verb_head(lm, tokenizer) as cols:  # calibration: 4 logits per run
                clean_logits, outs = clean_block_outputs(lm, paths[: layer - 1], inputs(cache))  # also extends `cache`
                skip_with = outs[-1] if outs else None  # block ℓ−2's output (None when ℓ = 1)
                m0 = copula_margin(clean_logits[:, -1].double(), cols)
                m1 = copula_margin(flipped(copy.deepcopy(before), float(s0), skip_with), cols)
                slope = (m1 - m0) / s0
                slope = torch.where(slope.abs() < 1e-8, torch.full_like(slope, 1e-8), slope)
                target = torch.where(m0 > 0, -eps, eps)
                scale = ((target - m0) / slope).clamp(-clip, clip)
                s_prev, m_prev = torch.full_like(scale, s0), m1
                for _ in range(refine):
                    m_now = copula_margin(flipped(copy.deepcopy(before), scale.float()[:, None], skip_with), cols)
                    step = scale - s_prev
                    dm = m_now - m_prev
                    ok = dm.abs() > 1e-8
                    new = torch.where(ok, scale + (target - m_now) * step / torch.where(ok, dm, torch.ones_like(dm)), scale)
                    s_prev, m_prev, scale = scale, m_now, new.clamp(-clip, clip)
            logits = flipped(before, scale.float()[:, None], skip_with)  # the whole vocabulary: sampled from
        nxt = sample_top_k(logits, gen, top_k).to(token.device)  # drawn on the CPU: the same tokens on any device
        out.append(nxt)
        scales.append(scale.cpu().numpy())
        achieved.append(copula_margin(logits, ids).cpu().numpy())
        clean_m.append(m0.cpu().numpy())
        token = nxt[:, None]
        pos = pos + 1
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    return torch.stack(out, 1).cpu(), np.array(scales), np.array(achieved), np.array(clean_m)


NUMBER_PAIRS = (("is", "are"), ("was", "were"), ("has", "have"), ("does", "do"))
"""Number-marked verb forms (singular, plural) scored in generated text."""


def number_pair_ids(tokenizer) -> dict[int, int]:
    """Token id -> id of the other-number form, for the pairs of :data:`NUMBER_PAIRS` whose two
    forms (with a leading space) are single known tokens."""
    out: dict[int, int] = {}
    for sing, plur in NUMBER_PAIRS:
        a = tokenizer.encode(" " + sing, add_special_tokens=False)
        b = tokenizer.encode(" " + plur, add_special_tokens=False)
        unk = tokenizer.unk_token_id
        if len(a) == 1 and len(b) == 1 and a[0] != b[0] and unk not in (a[0], b[0]):
            out[a[0]], out[b[0]] = b[0], a[0]
    return out


def copula_disagreements(lm, tokenizer, prompts: Sequence[str], generated: torch.Tensor) -> list[tuple[int, int]]:
    """Per row: (generated number-marked verbs that the **clean** model likes less than their
    other-number form at that position, number-marked verbs generated), by teacher forcing.

    Scored forms: is/are, was/were, has/have, does/do (each with a leading space, see
    :func:`number_pair_ids`); a generated "is" disagrees when the clean logit of "are" is higher.
    The teacher-forced pass computes only those forms' logits (:func:`ace_helpers.llm.batching.restricted_head`).
    """
    other = number_pair_ids(tokenizer)
    if not other:
        return [(0, 0)] * generated.shape[0]
    column = {tok: i for i, tok in enumerate(other)}  # the head is cut to these rows: (B, T, len(other)) logits
    batch = llm.encode(tokenizer, prompts, device=llm.input_device(lm))
    generated = generated.to(batch["input_ids"].device)
    full = {
        "input_ids": torch.cat([batch["input_ids"], generated], 1),
        "attention_mask": torch.cat([batch["attention_mask"], torch.ones_like(generated)], 1),
    }
    full["position_ids"] = (full["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad(), llm.restricted_head(lm, list(other)):
        logits = llm.torch_module(lm)(**full).logits.cpu()
    t0 = batch["input_ids"].shape[1]
    counts = []
    for b in range(generated.shape[0]):
        d = n = 0
        for t, tok in enumerate(generated[b].tolist()):
            if tok in other:
                row = logits[b, t0 - 1 + t]
                n += 1
                d += int(row[column[other[tok]]] > row[column[tok]])
        counts.append((d, n))
    return counts


def steered_generations(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layer: int,
    core: Core,
    rules: Mapping[str, tuple[int, float]],
    *,
    n_new: int = 50,
    n_samples: int = 1,
    seed: int = 0,
) -> dict[str, Generation]:
    """Clean and calibrated-flip continuations of each prompt (``n_samples`` rows each, same seed),
    one steered run per calibration rule: ``rules`` maps a name to ``(refine, eps)`` (see
    :func:`generate_with_flip`); the clean run is shared by all rules."""
    rows = [p for p in prompts for _ in range(n_samples)]
    clean, _, clean_m, _ = generate_with_flip(lm, tokenizer, rows, layer, None, n_new=n_new, seed=seed)
    clean_counts = copula_disagreements(lm, tokenizer, rows, clean)
    decode = lambda t: [tokenizer.decode(r, skip_special_tokens=True) for r in t]  # noqa: E731
    out = {}
    for name, (refine, eps) in rules.items():
        steered, scales, steered_m, steered_m0 = generate_with_flip(lm, tokenizer, rows, layer, core, n_new=n_new, seed=seed,
                                                                    refine=refine, eps=eps)
        out[name] = Generation(
            list(rows), decode(clean), decode(steered), clean.numpy(), steered.numpy(), scales, clean_counts,
            copula_disagreements(lm, tokenizer, rows, steered), clean_m, steered_m, steered_m0,
        )
    return out


def steered_generate(
    lm,
    tokenizer,
    prompts: Sequence[str],
    layer: int,
    core: Core,
    *,
    n_new: int = 50,
    n_samples: int = 1,
    seed: int = 0,
    refine: int = 0,
    eps: float = 1.0,
) -> Generation:
    """Clean and calibrated-flip continuations of each prompt (``n_samples`` rows each, same seed): one rule
    of :func:`steered_generations`."""
    return steered_generations(lm, tokenizer, prompts, layer, core, {"rule": (refine, eps)}, n_new=n_new,
                               n_samples=n_samples, seed=seed)["rule"]


def generation_samples(generations: Mapping[str, Mapping[str, Generation]], every: int) -> str:
    """Text: for each model and calibration rule (``generations[model][rule]``, a :class:`Generation`), every
    ``every``-th prompt row with its clean and flipped continuation (``every`` ≥ 1)."""
    if every < 1:
        raise ValueError(f"every={every} is not allowed: every must be ≥ 1 (one sample of each prompt: GEN_SAMPLES)")
    lines = []
    for name, rules in generations.items():
        for rule, g in rules.items():
            lines.append(f"{name}, {rule} calibration:")
            for prompt, clean, steered in list(zip(g.prompts, g.clean, g.steered))[::every]:
                lines += [f"  PROMPT  {prompt!r}", f"  clean   {clean!r}", f"  flipped {steered!r}"]
    return "\n".join(lines)
