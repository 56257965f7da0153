"""The paper's claims, one id each: the list the scorecard counts against.

Every claim that the paper (Schiffman 2026, arXiv 2602.22600) and its official code release make
gets an id (``"markov.core_rank"``) and one line saying what it states.  A chapter's claim row names
the id it tests (:meth:`ace_helpers.repro.report.Claims.check`); our own claims are named
``ours.<chapter>.<name>`` and diagnosis rows name the id whose failure they explain.  An id that no
chapter tests is reported as "not tested".
"""

from __future__ import annotations

import re

#: Every paper claim: id -> the claim in one line (the section of the paper in the id's prefix).
PAPER_CLAIMS: dict[str, str] = {
    # Markov chains (one-layer transformers, 4-state chain, 3 seeds): §2, Fig. 1B
    "markov.accuracy": "every seed reaches near-optimal next-state accuracy (0.7501; Bayes 0.75)",
    "markov.weights_differ": "the seeds' weights differ: near-zero cosine between parameter vectors",
    "markov.core_rank": "ACE finds a 3-D core (of 64) in every seed",
    "markov.sufficient": "keeping only the core keeps the full model's accuracy",
    "markov.necessary": "removing the core drops accuracy to chance",
    "markov.overlap": "the seeds' cores lie in nearly orthogonal subspaces (projector overlap 0.02-0.04)",
    "markov.cca": "yet they are statistically aligned (canonical correlations 0.999, 0.999, 0.929)",
    "markov.spectrum": "an operator fitted in core coordinates has the chain's eigenvalues, to < 1 %",
    "markov.r2": "R²_core / R²_oracle > 0.98",
    "markov.consensus": "a consensus (GCCA) subspace is sufficient but not necessary, unlike the core (code release)",
    # Modular addition (two-layer transformers, p = 53, 3 seeds): §3, Fig. 1A, 1C, 1D
    "modadd.grok_epoch": "grokking at epoch ~800",
    "modadd.core_at_grok": "a ~15-dimensional core, necessary and sufficient, forms at grokking",
    "modadd.sufficient": "the core is sufficient from grokking on",
    "modadd.necessary": "the core is necessary: removing it drops accuracy to chance (1/p)",
    "modadd.pre_grok_disk": "before grokking the operator's eigenvalues scatter inside the unit disk",
    "modadd.pre_grok_r2": "before grokking R_h² ≈ 0",
    "modadd.snap": "at grokking the eigenvalues snap onto the unit circle",
    "modadd.r2_jump": "R_h² jumps from ≈ 0 to ≈ 1 at grokking",
    "modadd.stays_on_circle": "the clock stays on the circle later (epoch 2 000, Fig. 1C; 20 000, Fig. 2C)",
    "modadd.invariant": "the cores of independently trained models are invariant",
    # Core inflation under weight decay: Fig. 2A, 2B, 2D
    "inflation.grows": "under continued weight decay the core inflates from ~15 to ~60 dimensions",
    "inflation.no_wd": "without weight decay (the arm forked at epoch 900) the core does not inflate",
    "inflation.sufficient_flat": "the sufficient dimension stays roughly flat while the core inflates",
    "inflation.redundancy": "inflation is redundancy: the gap between necessary and sufficient dimension widens",
    "inflation.modes": "rotational modes spread up to ⌊p/2⌋ + 1 = 27 bins under weight decay",
    "inflation.no_wd_modes": "without weight decay the modes do not proliferate",
    "inflation.redistribution": "weight decay spreads weight across all functionally equivalent harmonics",
    # Grokking time: Fig. 3, §4
    "scaling.omega": "τ_grok ∝ 1/ω (fitted exponent about −1.02)",
    "scaling.log_law": "τ(p) follows −Ω·log(1 − p_crit/p)",
    "scaling.p": "τ_grok ∝ 1/p for p well above p_crit",
    "scaling.Omega": "Ω ∝ 1/ω, hence τ ∝ 1/(ω·p)",
    "scaling.margin_ode": "the theory's margin dynamics dm/dt = −ω m + c ω ‖ψ‖²",
    "scaling.redundancy_cause": "functional redundancy (more equivalent modes) is what speeds grokking up",
    # Subject-verb agreement in LLMs: §5, Fig. 4
    "sva.roster": "the results hold in six models of four families over two orders of magnitude of scale",
    "sva.one_dim": "one causal axis (a 1-D core) in late layers of every model",
    "sva.keep": "keeping only the axis keeps agreement",
    "sva.remove": "removing it destroys agreement",
    "sva.flip": "flipping its sign inverts grammatical number",
    "sva.knob": "the axis coordinate predicts the singular-plural logit margin",
    "sva.generation": "flipping inverts number throughout open-ended generation",
    "sva.flip_demo_tests": "flip-demo significance: base vs removed, base vs flipped, removed vs flipped",
    "sva.alignment": "core coordinates align across models (Spearman up to 0.93)",
    "sva.scale_invariance": "the core stays one-dimensional from GPT-2 Small to Large (6.6× parameters, 3× depth)",
    # Implications: §6
    "implication.merging": "cores in nearly orthogonal subspaces explain why naive weight interpolation fails",
    "implication.world_model": "the recovered structures show that cores encode the data-generating process",
}

#: Why no chapter tests a paper claim: id -> one line (compute, missing weights, not yet built).
NOT_TESTED_WHY: dict[str, str] = {
    "sva.roster": "missing weights: the paper's six models (GPT-2 S/M/L, Llama-3.1, Gemma-2, Qwen2.5, to 32B) are not "
    "available offline; chapter 5 runs four offline models of three families instead (SmolLM2-135M, Gemma-3-270M, "
    "Qwen2.5-Coder 0.5B and 1.5B: 135M to 1.5B), per model and combined",
    "implication.world_model": "an interpretation, not a measurement: its evidence is tested as markov.spectrum and modadd.snap",
}

#: The id of one of our own claims or diagnoses: ``ours.<chapter package>.<name>``.
OURS = re.compile(r"ours\.[a-z_]+\.[a-z0-9_]+")

#: Kinds of claim row: a claim of the paper, one of ours, or a diagnosis of a paper claim's failure.
KINDS = ("paper", "ours", "diagnosis")


def check_id(claim_id: str, kind: str, explains: str | None = None) -> None:
    """Raise ``ValueError`` unless ``claim_id`` fits ``kind``: a paper row names an id of
    :data:`PAPER_CLAIMS`; an ``"ours"`` row an ``ours.<chapter>.<name>`` id; a diagnosis row an
    ``ours.`` id of its own and, in ``explains``, the paper id whose failure it diagnoses."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not allowed; allowed: {list(KINDS)}")
    if kind == "paper":
        if claim_id not in PAPER_CLAIMS:
            raise ValueError(f"{claim_id!r} is not a paper claim id; ids: {sorted(PAPER_CLAIMS)}")
    elif not OURS.fullmatch(claim_id):
        raise ValueError(f"{claim_id!r}: a {kind} row's id must read ours.<chapter>.<name> (lower case)")
    if kind == "diagnosis" and explains not in PAPER_CLAIMS:
        raise ValueError(f"diagnosis {claim_id!r} explains {explains!r}, which is not a paper claim id")
    if kind != "diagnosis" and explains is not None:
        raise ValueError(f"{claim_id!r}: only a diagnosis row explains another claim (kind={kind!r})")
