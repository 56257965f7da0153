"""What is measured at one checkpoint of a modular-addition model, and the per-arm arrays it fills.

At every checkpoint of the schedule the model is analysed on the **test split**, at the **last
token of layer 2** (:func:`analyse_checkpoint`), so full checkpoints are never stored:

* ACE (energy ``ENERGY``) with tail = ``lm_head``, so ``J = W_U`` and ``Obs = W_Uᵀ W_U``;
* a scan over every rank r = 0..D of keep-only / core-removed accuracy, done for all r at once
  (:func:`ace_helpers.method.scans.rank_scan`: the tail after layer 2 is linear);
* ``core_dim`` = max(energy rank, smallest r ≥ energy rank whose removal drops accuracy to
  ≤ 2/p) and ``suff_dim`` = smallest r ≥ 1 whose keep-only accuracy is ≥ base − 1e-3;
* the cyclic shift operator on the class means of the core coordinates (ridge ``RIDGE``,
  block-edge holdout of round(``HOLDOUT_FRACTION``·p) classes): holdout R_h², eigenvalues,
  fraction within sin(π/p) of the unit circle, rotational modes out of ⌊p/2⌋ + 1.  The
  in-sample OLS fit (ridge 0, no holdout: the paper's sweep arrays) is stored beside it.

Per-checkpoint arrays of an arm (:class:`ArmResult`, shape (n_models, n_checkpoints) unless
noted), also the keys of the chapters' ``results.json`` (the WD-off arm with prefix ``nowd_``):

``epochs`` (n_checkpoints,) checkpoint epochs; ``test_acc`` base test accuracy;
``energy_rank`` the 0.99-energy rank; ``core_dim`` necessary dimension (above); ``suff_dim``
sufficient dimension; ``keep_acc`` / ``remove_acc`` accuracy with only / without the first
``core_dim`` directions; ``r2_holdout`` holdout R_h² of the ridge shift fit; ``r2_ols``
in-sample R² of the OLS fit; ``frac_unit_circle`` fraction of the ridge-fit eigenvalues within
sin(π/p) of the unit circle; ``rotational_modes`` folded frequency bins holding such an
eigenvalue; ``median_abs_eig`` median ``|λ|``; ``*_ols`` the same from the OLS fit;
``eig_real``/``eig_imag`` (n_models, n_checkpoints, p) ridge-fit eigenvalues, NaN-padded;
``keep_curve``/``remove_curve`` (n_models, n_checkpoints, D + 1) accuracy at every rank r.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ace_helpers.method.core import Core, extract_core
from ace_helpers.method.operators import class_means, fit_shift_operator, near_unit_circle, rotational_modes
from ace_helpers.method.scans import necessary_dim, rank_scan, sufficient_dim
from ace_helpers.repro.artifacts import to_plain
from ace_helpers.toys.models import ToyTransformer
from ace_helpers.toys.tasks.modadd import ModAddData


@torch.no_grad()
def last_token_activations(model: ToyTransformer, inputs: torch.Tensor, layer: int = -1) -> torch.Tensor:
    """Output of block ``layer`` at the last position: (N, 2) long -> (N, D) float (eval mode)."""
    store: list[torch.Tensor] = []
    handle = model.layers[layer].register_forward_hook(lambda _m, _i, out: store.append(out[:, -1].detach()))
    was_training = model.training
    try:
        model.eval()
        model(inputs)
    finally:
        handle.remove()
        model.train(was_training)
    return store[0]


@dataclass(frozen=True)
class CheckpointAnalysis:
    """Everything measured at one checkpoint of one model (plain numbers and numpy arrays)."""

    test_acc: float
    energy_rank: int
    core_dim: int
    suff_dim: int
    keep_acc: float
    remove_acc: float
    r2_holdout: float
    r2_ols: float
    frac_unit_circle: float
    rotational_modes: int
    median_abs_eig: float
    frac_unit_circle_ols: float
    rotational_modes_ols: int
    median_abs_eig_ols: float
    eigenvalues: np.ndarray  # (k,) complex, ridge + holdout fit
    keep_curve: np.ndarray  # (D + 1,)
    remove_curve: np.ndarray  # (D + 1,)
    #: (⌊p/2⌋,) share of the embedding's / unembedding's non-constant Fourier power per frequency
    #: 1..⌊p/2⌋ over the p number tokens (:func:`fourier_spectrum`); None in runs stored before it.
    emb_spectrum: np.ndarray | None = None
    unemb_spectrum: np.ndarray | None = None


SCALAR_FIELDS: tuple[str, ...] = (
    "test_acc",
    "energy_rank",
    "core_dim",
    "suff_dim",
    "keep_acc",
    "remove_acc",
    "r2_holdout",
    "r2_ols",
    "frac_unit_circle",
    "rotational_modes",
    "median_abs_eig",
    "frac_unit_circle_ols",
    "rotational_modes_ols",
    "median_abs_eig_ols",
)


#: Per-checkpoint Fourier spectra of the embedding and unembedding (:func:`fourier_spectrum`).
SPECTRUM_FIELDS: tuple[str, ...] = ("emb_spectrum", "unemb_spectrum")


def analyse_activations(
    H: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    answers: torch.Tensor,
    p: int,
    *,
    energy: float = 0.99,
    ridge: float = 1.0,
    holdout: int = 4,
) -> tuple[CheckpointAnalysis, Core]:
    """The per-checkpoint analysis from layer-2 last-token activations H (N, D) and lm_head (W (K, D), b (K,)).

    Returns the :class:`CheckpointAnalysis` and the ACE :class:`Core` truncated to ``core_dim``.
    """
    y = answers.detach().cpu().long().numpy()
    w = weight.detach().double()
    core = extract_core(H, w, energy=energy)  # tail = lm_head: J = W_U for every row
    keep_curve, remove_curve = rank_scan(H, w, bias, core.full_basis, y)
    base = remove_curve[0]
    floor = 2.0 / p
    r_nec = necessary_dim(remove_curve, core.rank, floor)
    r_suf = sufficient_dim(keep_curve, base)
    core_nec = core.truncate(r_nec)
    z = core_nec.coords(H.detach().cpu().double().numpy())
    means = class_means(z, y, p)
    eps = math.sin(math.pi / p)
    ridge_fit = fit_shift_operator(means, ridge=ridge, holdout=holdout or None)
    ols_fit = fit_shift_operator(means, ridge=0.0, holdout=None)
    eig, eig_ols = ridge_fit.eigenvalues, ols_fit.eigenvalues
    analysis = CheckpointAnalysis(
        test_acc=float(base),
        energy_rank=int(core.rank),
        core_dim=int(r_nec),
        suff_dim=int(r_suf),
        keep_acc=float(keep_curve[r_nec]),
        remove_acc=float(remove_curve[r_nec]),
        r2_holdout=float(ridge_fit.r2_holdout),
        r2_ols=float(ols_fit.r2),
        frac_unit_circle=float(near_unit_circle(eig, eps).mean()),
        rotational_modes=int(rotational_modes(eig, p, eps)),
        median_abs_eig=float(np.median(np.abs(eig))),
        frac_unit_circle_ols=float(near_unit_circle(eig_ols, eps).mean()),
        rotational_modes_ols=int(rotational_modes(eig_ols, p, eps)),
        median_abs_eig_ols=float(np.median(np.abs(eig_ols))),
        eigenvalues=np.asarray(eig, dtype=np.complex128),
        keep_curve=keep_curve,
        remove_curve=remove_curve,
    )
    return analysis, core_nec


def fourier_spectrum(rows: torch.Tensor | np.ndarray, p: int) -> np.ndarray:
    """Share of Fourier power per frequency of a weight over the ``p`` number tokens.

    ``rows`` (≥ p, D): one row per token (the embedding, or the unembedding's output rows); the
    first ``p`` are the numbers 0..p−1.  The discrete Fourier transform along the token axis gives
    power ``|F_k|²`` summed over the D columns; frequencies k and p − k are folded into one bin.

    Returns:
        (⌊p/2⌋,) shares of the non-constant power held by frequencies 1..⌊p/2⌋ (summing to 1).
    """
    w = rows.detach().cpu().double().numpy() if isinstance(rows, torch.Tensor) else np.asarray(rows, dtype=float)
    if w.ndim != 2 or w.shape[0] < p:
        raise ValueError(f"rows must be (≥ p, D) with p = {p}; got shape {w.shape}")
    power = (np.abs(np.fft.fft(w[:p], axis=0)) ** 2).sum(axis=1)  # (p,)
    half = p // 2
    folded = power[1 : half + 1] + power[p - half :][::-1]  # bins 1..⌊p/2⌋ (p odd: k and p − k)
    total = folded.sum()
    return folded / total if total > 0 else np.full(half, np.nan)


def analyse_checkpoint(
    model: ToyTransformer,
    data: ModAddData,
    *,
    energy: float = 0.99,
    ridge: float = 1.0,
    holdout: int = 4,
) -> CheckpointAnalysis:
    """Analyse ``model`` on the test split of ``data`` at the last token of its last block (layer 2).

    See the module docstring for what is measured.
    """
    H = last_token_activations(model, data.test_inputs)
    analysis, _ = analyse_activations(
        H,
        model.lm_head.weight,
        model.lm_head.bias,
        data.test_answers,
        data.p,
        energy=energy,
        ridge=ridge,
        holdout=holdout,
    )
    spectra = {
        "emb_spectrum": fourier_spectrum(model.tok_emb.weight, data.p),
        "unemb_spectrum": fourier_spectrum(model.lm_head.weight, data.p),
    }
    return dataclasses.replace(analysis, **spectra)


def stack_rows(epochs: list[int], rows: list[CheckpointAnalysis], p: int) -> dict[str, np.ndarray]:
    """Per-checkpoint analyses of one arm as arrays (C,) / (C, k): ``epochs``, the scalar fields, eigenvalues, curves."""
    out: dict[str, np.ndarray] = {"epochs": np.asarray(epochs, dtype=np.int64)}
    for name in SCALAR_FIELDS:
        out[name] = np.asarray([getattr(r, name) for r in rows])
    eig = np.full((len(rows), p), np.nan + 0j)
    for i, r in enumerate(rows):
        eig[i, : len(r.eigenvalues)] = r.eigenvalues
    out["eig_real"], out["eig_imag"] = eig.real.copy(), eig.imag.copy()
    out["keep_curve"] = np.stack([r.keep_curve for r in rows])
    out["remove_curve"] = np.stack([r.remove_curve for r in rows])
    for name in SPECTRUM_FIELDS:
        if any(getattr(r, name) is not None for r in rows):
            blank = np.full(p // 2, np.nan)
            out[name] = np.stack([blank if getattr(r, name) is None else getattr(r, name) for r in rows])
    return out


def row_to_plain(row: CheckpointAnalysis) -> dict[str, Any]:
    """A :class:`CheckpointAnalysis` as plain JSON values (a snapshot's rows)."""
    d = {name: getattr(row, name) for name in SCALAR_FIELDS}
    d["eig"] = [[float(z.real), float(z.imag)] for z in row.eigenvalues]
    d["keep_curve"] = row.keep_curve.tolist()
    d["remove_curve"] = row.remove_curve.tolist()
    for name in SPECTRUM_FIELDS:
        if getattr(row, name) is not None:
            d[name] = getattr(row, name).tolist()
    return to_plain(d)


def row_from_plain(d: Mapping[str, Any]) -> CheckpointAnalysis:
    """Inverse of :func:`row_to_plain`."""
    kwargs = {name: (float("nan") if d[name] is None else d[name]) for name in SCALAR_FIELDS}
    return CheckpointAnalysis(
        **kwargs,
        eigenvalues=np.asarray([complex(a, b) for a, b in d["eig"]], dtype=np.complex128),
        keep_curve=np.asarray(d["keep_curve"], dtype=float),
        remove_curve=np.asarray(d["remove_curve"], dtype=float),
        **{name: np.asarray(d[name], dtype=float) for name in SPECTRUM_FIELDS if d.get(name) is not None},
    )
