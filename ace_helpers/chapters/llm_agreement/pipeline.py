"""Chapter 5 pipeline: per-model analysis, the chapter run and its flat results.

Per model: train-prompt states and margin gradients at every layer (:mod:`ace_helpers.llm.agreement_states`), one 1-D core
per layer, the keep / remove / flip sweep on the test prompts (:mod:`~ace_helpers.llm.agreement_edits`), AUC of the margin
vs the plural label; the chosen layer has the lowest flip AUC (as the official code release chooses
it); the knob fit pooled and within each class (:mod:`.within_class`); the controls at the chosen
layer (:mod:`.controls`); the flip demo with Wilcoxon tests; steered generation under the official
calibration rule and our refined one (:mod:`.generation`); then the cross-model alignment.

``results.json`` keys (``<m>`` is a model name such as ``smollm2-135m``; the claims,
:func:`~ace_helpers.chapters.llm_agreement.claims.flat_claims`, read only these):

* ``<m>.n_layers``, ``<m>.layers`` (swept ℓ), ``<m>.chosen_layer`` (ℓ with min flip AUC),
  ``<m>.spectral_gap`` / ``_per_layer`` (w1/w2)
* ``<m>.auc_base`` / ``auc_keep`` / ``auc_remove`` / ``auc_flip`` at the chosen layer and
  ``<m>.auc_<mode>_per_layer`` (lists over ``<m>.layers``); remove is the mean ablation
  h − qqᵀ(h − μ)
* controls at the chosen layer (:class:`~.controls.Controls`): ``<m>.auc_ace_remove_zero`` (zero
  ablation h − qqᵀh), ``<m>.auc_dom_keep`` / ``_remove`` / ``_flip`` (difference of means),
  ``<m>.cos_core_dom``, ``<m>.auc_random_<e>`` for ``e`` in keep, remove, flip, matched_remove,
  matched_flip (lists over the N_RANDOM directions), ``<m>.auc_free_base`` / ``_keep`` / ``_remove`` /
  ``_flip`` (attractor-free prompts), ``<m>.mean_margin_clean`` / ``_remove`` / ``_remove_zero``
  ([singular, plural] mean test margins), ``<m>.coord_singular`` / ``_plural`` / ``_zero`` (centred
  core coordinates of the class means and of the zero vector)
* knob (:func:`~.within_class.knob_tests`): ``<m>.knob_r2`` (pooled R² of m ≈ a·z + b),
  ``<m>.knob_r2_label_null``, ``<m>.knob_p_label_preserving``, ``<m>.knob_r2_<c>``, ``<m>.knob_r_<c>``,
  ``<m>.knob_p_<c>`` for ``c`` in singular, plural; ``<m>.knob_r2_per_layer``
* flip demo: ``<m>.demo_margin_<cond>`` and ``<m>.demo_share_<cond>`` for ``cond`` in base, removed,
  flipped (per demo prompt: the logit margin m and the share of the prompt's own number among the
  four verbs' probability), ``<m>.demo_coord`` (core coordinate z per demo prompt),
  ``<m>.demo_score_<cond>`` (per demo prompt: log(P(correct number)/max of the four)),
  ``<m>.demo_p_base_vs_removed`` / ``_base_vs_flipped`` / ``_removed_vs_flipped`` (one-sided paired Wilcoxon) and
  ``<m>.demo_p_two_sided_<cmp>`` (the code release's two-sided test; :mod:`.flip_demo`)
* generation, per rule ``g`` in ``official`` (the code release's one secant step to 1 nat) and
  ``refined`` (GEN_REFINE steps to GEN_EPS nats; None when it is the same rule):
  ``<m>.generation_<g>_rate`` (share of steered generations, among those with a number-marked verb,
  most of whose such verbs are the form the clean model likes less), ``<m>.generation_<g>_scored``,
  ``<m>.generation_<g>_landed`` (share of steps whose achieved copula margin is on the other side),
  ``<m>.generation_<g>_push`` (median achieved copula margin towards the other number, nats);
  ``<m>.generation_baseline_rate`` (the same statistic for the clean texts)
* ``demo_prompts``, ``demo_labels``; ``demo_fisher_p_<cmp>`` and ``demo_fisher_p_two_sided_<cmp>`` (Fisher-combined
  over models); ``pairwise_<f>``:
  ``{"<a>~<b>": value}`` for ``f`` in :data:`~.within_class.PAIR_FIELDS`; ``claims_failed``; ``wall_s``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ace_helpers import llm
from ace_helpers.chapters.llm_agreement.controls import Controls, run_controls
from ace_helpers.chapters.llm_agreement.flip_demo import demo_test_entries
from ace_helpers.chapters.llm_agreement.generation import Generation, steered_generations
from ace_helpers.chapters.llm_agreement.within_class import flat_pairs, knob_tests, pairwise_alignment
from ace_helpers.llm.agreement import DEMO_PROMPTS, GENERATION_PROMPTS, AgreementSplit, agreement_split, margin, verb_token_ids
from ace_helpers.llm.agreement_edits import MODES, demo_scores, demo_tests, last_token_probs, sweep_margins
from ace_helpers.llm.agreement_states import collect_states, layer_cores, layer_list, spectral_gap
from ace_helpers.llm.remote_jobs import trace_options
from ace_helpers.method import stats
from ace_helpers.method.core import Core
from ace_helpers.method.interventions import HookSite
from ace_helpers.repro.artifacts import to_plain
from ace_helpers.repro.params import Params

OFFICIAL_RULE = (0, 1.0)
"""The official code release's calibration (``generate_surgical`` in ``SVA_uni.py``): one secant step
from s₀ = 0.2 to a copula margin of 1 nat on the other side: ``(refine, eps)``."""

DEMO_CONDITIONS = (("base", None), ("removed", "remove"), ("flipped", "flip"))


@dataclass
class ModelResult:
    """Everything the chapter reports for one model (arrays over the swept layers).

    ``generations``: calibration rule (``"official"``, and ``"refined"`` when GEN_REFINE / GEN_EPS
    differ from the official rule) -> :class:`~.generation.Generation`; empty in remote runs.
    """

    name: str
    n_layers: int
    layers: list[int]
    auc_base: float
    auc: dict[str, np.ndarray]
    spectral_gaps: np.ndarray
    chosen_layer: int
    knob: stats.KnobFit
    knob_tests: dict[str, float]
    test_coords: np.ndarray
    controls: Controls | None
    demo_probs: dict[str, np.ndarray]
    demo_scores: dict[str, np.ndarray]
    demo_p: dict[str, float]
    demo_coords: np.ndarray
    generations: dict[str, Generation]
    cores: list[Core] = field(repr=False, default_factory=list)
    knob_r2_per_layer: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def at_chosen(self, mode: str) -> float:
        """AUC under ``mode`` at the chosen layer."""
        return float(self.auc[mode][self.layers.index(self.chosen_layer)])

    def flat(self) -> dict[str, Any]:
        """The model's ``results.json`` entries (keys prefixed with ``<name>.``)."""
        out: dict[str, Any] = {
            "n_layers": self.n_layers, "layers": self.layers, "chosen_layer": self.chosen_layer,
            "auc_base": self.auc_base, "spectral_gap_per_layer": self.spectral_gaps,
            "knob_r2_per_layer": self.knob_r2_per_layer,
            "spectral_gap": float(self.spectral_gaps[self.layers.index(self.chosen_layer)]),
        }  # fmt: skip
        out.update({f"knob_{k}": v for k, v in self.knob_tests.items()})
        for mode in MODES:
            out[f"auc_{mode}"] = self.at_chosen(mode)
            out[f"auc_{mode}_per_layer"] = self.auc[mode]
        if self.controls is not None:
            out.update(self.controls.flat())
        out.update(demo_entries(self.demo_probs, np.array([lab for _, lab in DEMO_PROMPTS])) if self.demo_probs else {})
        out["demo_coord"] = self.demo_coords
        for key, p in self.demo_p.items():
            out[f"demo_p_{key}"] = p
        for rule in ("official", "refined"):
            g = self.generations.get(rule)
            rate, scored = g.flip_rate() if g is not None else (None, None)
            out.update({f"generation_{rule}_rate": rate, f"generation_{rule}_scored": scored,
                        f"generation_{rule}_landed": g.landed_share() if g is not None else None,
                        f"generation_{rule}_push": g.median_push() if g is not None else None})  # fmt: skip
        any_gen = next(iter(self.generations.values()), None)
        out["generation_baseline_rate"] = any_gen.baseline_rate()[0] if any_gen is not None else None
        return {f"{self.name}.{k}": v for k, v in out.items()}


def demo_entries(probs: dict[str, np.ndarray], labels: np.ndarray) -> dict[str, list[float]]:
    """Per demo prompt and condition: ``demo_margin_<cond>`` (the logit margin m, exact from the
    probabilities: log P(are) + log P(were) − log P(is) − log P(was)) and ``demo_share_<cond>`` (the
    share of the prompt's own number in the four verbs' probability). ``probs``: cond -> (P, 4)."""
    out = {}
    for cond, p in probs.items():
        p = np.asarray(p, float)
        out[f"demo_margin_{cond}"] = (np.log(p[:, 1]) + np.log(p[:, 3]) - np.log(p[:, 0]) - np.log(p[:, 2])).tolist()
        own = np.where(labels == 1, p[:, 1] + p[:, 3], p[:, 0] + p[:, 2])
        out[f"demo_share_{cond}"] = (own / p.sum(1)).tolist()
    return out


def generation_rules(refine: int, eps: float) -> dict[str, tuple[int, float]]:
    """``{"official": OFFICIAL_RULE}``, plus ``"refined": (refine, eps)`` when that is another rule."""
    rules = {"official": OFFICIAL_RULE}
    if (refine, float(eps)) != OFFICIAL_RULE:
        rules["refined"] = (refine, float(eps))
    return rules


def _stage_clock(name: str, log: Callable[[str], None]) -> Callable[[str], None]:
    """A logger that appends the seconds since its previous call (or its creation) to each stage line."""
    last = time.perf_counter()

    def stage(what: str) -> None:
        nonlocal last
        now = time.perf_counter()
        log(f"{name}: {what} in {now - last:.0f} s")
        last = now

    return stage


def analyse_model(
    name: str,
    lm,
    tokenizer,
    data: AgreementSplit,
    *,
    layers: str | Sequence[int] = "all",
    batch_size: int = 25,
    gen_tokens: int = 50,
    gen_samples: int = 1,
    gen_refine: int = 0,
    gen_eps: float = 1.0,
    gen_prompts: Sequence[str] = (),
    demo_prompts: Sequence[tuple[str, int]] = (),
    n_random: int = 16,
    n_permutations: int = 10000,
    seed: int = 0,
    remote: bool | str = False,
    log: Callable[[str], None] = lambda s: None,
) -> ModelResult:
    """Run the chapter's whole pipeline on one model (``data``: an :class:`AgreementSplit`).

    ``n_random`` random directions in the controls (0: no controls); ``n_permutations`` for the
    within-class knob p-values.
    """
    n = llm.n_layers(lm)
    ells = layer_list(layers, n)
    verb_token_ids(tokenizer)  # fail early on a tokenizer without the verbs
    stage = _stage_clock(name, log)
    train = collect_states(lm, tokenizer, data.train_prompts, ells, batch_size=batch_size, remote=remote)
    stage("train states and gradients collected")
    test = collect_states(lm, tokenizer, data.test_prompts, ells, gradients=False, batch_size=batch_size, remote=remote)
    stage("test states collected")
    cores = layer_cores(train)
    stage(f"cores of {len(ells)} layers extracted")
    sweep = sweep_margins(lm, tokenizer, data.test_prompts, ells, cores, batch_size=batch_size, remote=remote)
    stage("keep/remove/flip sweep done")
    labels = data.test_labels
    auc = {mode: np.array([stats.roc_auc(sweep[mode][li], labels) for li in range(len(ells))]) for mode in MODES}
    li = int(np.argmin(auc["flip"]))
    chosen, core = ells[li], cores[li]
    z = core.coords(test.H[li], centered=True)[:, 0]
    knob = stats.knob_fit(z, test.margin)
    tests = knob_tests(z, test.margin, labels, n_permutations=n_permutations, seed=seed)
    knob_r2 = np.array([stats.knob_fit(c.coords(test.H[k], centered=True)[:, 0], test.margin).r2 for k, c in enumerate(cores)])
    controls = None
    if n_random > 0:
        controls = run_controls(lm, tokenizer, data, chosen, core, train.H[li], test.margin, n_random=n_random, seed=seed,
                                batch_size=batch_size, remote=remote)
        stage("controls done")
    probs, scores, demo_z = {}, {}, np.zeros(0)
    if demo_prompts:
        texts = [p for p, _ in demo_prompts]
        dl = np.array([lab for _, lab in demo_prompts])
        for cond, mode in DEMO_CONDITIONS:
            probs[cond] = last_token_probs(lm, tokenizer, texts, chosen, core, mode, remote=remote)
            scores[cond] = demo_scores(probs[cond], dl)
        demo_h = collect_states(lm, tokenizer, texts, [chosen], gradients=False, batch_size=batch_size, remote=remote).H[0]
        demo_z = core.coords(demo_h, centered=True)[:, 0]
        stage("demo prompts done")
    demo_p = demo_tests(scores) if demo_prompts else {}
    generations: dict[str, Generation] = {}
    if gen_prompts and not remote:
        generations = steered_generations(lm, tokenizer, gen_prompts, chosen, core, generation_rules(gen_refine, gen_eps),
                                          n_new=gen_tokens, n_samples=gen_samples, seed=seed)
        stage("steered generation done")
    return ModelResult(
        name=name, n_layers=n, layers=ells, auc_base=stats.roc_auc(test.margin, labels), auc=auc,
        spectral_gaps=np.array([spectral_gap(c) for c in cores]), chosen_layer=chosen, knob=knob, knob_tests=tests,
        test_coords=z, controls=controls, demo_probs=probs, demo_scores=scores, demo_p=demo_p, demo_coords=demo_z,
        generations=generations, cores=cores, knob_r2_per_layer=knob_r2,
    )


def load_options(cfg: Params) -> dict[str, Any]:
    """``device`` and ``dtype`` of :func:`ace_helpers.llm.loading.load_model` from the knobs ``DEVICE`` and ``DTYPE``
    (none for a remote run: the server places the model)."""
    return {} if cfg.REMOTE else {"device": cfg.DEVICE, "dtype": cfg.DTYPE}


def hook_site(cfg: Params) -> HookSite:
    """The chapter's first model (``MODELS[0]``) as ACE sees it, at the middle one of its ``LAYERS``: the
    training prompts (left-padded, so position −1 is every prompt's last token), that block's output there,
    the margin gradients ∂m/∂h of each prompt as the Jacobian (N, D), and the share of prompts whose margin
    m = L[are] + L[were] − L[is] − L[was] has the sign of the subject's number."""
    data = agreement_split(cfg.N_PROMPTS, cfg.SEED, cfg.PROMPTS_FILE)
    lm, tok = llm.load_model(cfg.MODELS[0], remote=cfg.REMOTE, **load_options(cfg))
    ells = layer_list(cfg.LAYERS, llm.n_layers(lm))
    layer = ells[len(ells) // 2]
    grads = collect_states(lm, tok, data.train_prompts, [layer], batch_size=cfg.BATCH_SIZE, remote=cfg.REMOTE).G[0]
    device = llm.input_device(lm)
    ids, plural = verb_token_ids(tok), torch.as_tensor(data.train_labels == 1, device=device)

    def score(logits: torch.Tensor) -> float:
        return float(((margin(logits[:, -1], ids) > 0) == plural).double().mean())

    trace = trace_options(lm, cfg.REMOTE)
    return HookSite(lm, llm.encode(tok, data.train_prompts, device=device), llm.block_paths(lm)[layer - 1], grads, score,
                    positions=-1, trace=trace)


def run_models(
    cfg: Params, *, log: Callable[[str], None] = print, read_stored: Callable[[str], ModelResult | None] = lambda label: None
) -> dict[str, ModelResult]:
    """Load each model of ``cfg.MODELS`` in turn and run :func:`analyse_model` on the chapter's data; the results
    are keyed by each model's short label (:func:`ace_helpers.llm.labels.model_labels`), never a machine path.
    ``read_stored(label)``: a model's stored analysis to use instead of computing it (None: compute it).

    ``cfg``: the chapter's resolved :class:`~ace_helpers.repro.params.Params`. Models are freed after their analysis.
    """
    data = agreement_split(cfg.N_PROMPTS, cfg.SEED, cfg.PROMPTS_FILE)
    out: dict[str, ModelResult] = {}
    for source, name in zip(cfg.MODELS, llm.model_labels(list(cfg.MODELS))):  # results name a model by its label
        stored = read_stored(name)
        if stored is not None:
            out[name] = stored
            continue
        start = time.perf_counter()
        lm, tok = llm.load_model(source, remote=cfg.REMOTE, **load_options(cfg))
        log(f"{name}: loaded in {time.perf_counter() - start:.0f} s")
        out[name] = analyse_model(
            name, lm, tok, data, layers=cfg.LAYERS, batch_size=cfg.BATCH_SIZE, gen_tokens=cfg.GEN_TOKENS,
            gen_samples=cfg.GEN_SAMPLES, gen_refine=cfg.GEN_REFINE, gen_eps=cfg.GEN_EPS,
            gen_prompts=GENERATION_PROMPTS, demo_prompts=DEMO_PROMPTS, n_random=cfg.N_RANDOM,
            n_permutations=cfg.N_PERMUTATIONS, seed=cfg.SEED, remote=cfg.REMOTE, log=log,
        )
        log(f"{name}: done in {time.perf_counter() - start:.0f} s")
        del lm, tok
        gc.collect()
    return out


def cross_model_alignment(results: dict[str, ModelResult], cfg: Params) -> list[dict[str, Any]]:
    """:func:`~.within_class.pairwise_alignment` of the models' test-prompt core coordinates, pooled and
    within each number class (``cfg.N_PERMUTATIONS``, ``cfg.SEED``; the test labels of the chapter's split)."""
    labels = agreement_split(cfg.N_PROMPTS, cfg.SEED, cfg.PROMPTS_FILE).test_labels
    return pairwise_alignment({n: r.test_coords for n, r in results.items()}, labels,
                              n_permutations=cfg.N_PERMUTATIONS, seed=cfg.SEED)


def flat_results(models: dict[str, ModelResult], pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The chapter's flat ``results.json`` entries (see the module docstring for the keys); plain
    Python values (:func:`ace_helpers.repro.artifacts.to_plain`), so that the claims read the same numbers
    from it as from a stored ``results.json``."""

    out: dict[str, Any] = {}
    for res in models.values():
        out.update(res.flat())
    out.update(flat_pairs(pairs))
    out["demo_prompts"] = [p for p, _ in DEMO_PROMPTS]
    out["demo_labels"] = [lab for _, lab in DEMO_PROMPTS]
    out.update(demo_test_entries({n: r.demo_scores for n, r in models.items() if r.demo_scores}))
    return to_plain(out)


@dataclass
class AgreementRun:
    """One run of the chapter: each model's analysis (by name, ``cfg.MODELS`` order), the
    cross-model alignments (one dict per pair) and the flat ``results.json`` entries."""

    models: dict[str, ModelResult]
    pairs: list[dict[str, Any]]
    flat: dict[str, Any]


def run(
    cfg: Params, *, log: Callable[[str], None] = print, read_stored: Callable[[str], ModelResult | None] = lambda label: None
) -> AgreementRun:
    """The chapter's run: :func:`run_models` (``read_stored`` as there), :func:`cross_model_alignment`, :func:`flat_results`."""
    models = run_models(cfg, log=log, read_stored=read_stored)
    pairs = cross_model_alignment(models, cfg)
    return AgreementRun(models, pairs, flat_results(models, pairs))
