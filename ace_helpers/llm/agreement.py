"""Subject–verb agreement prompts: the synthetic set, a loader for your own, verb tokens.

Every prompt ends right before the verb; its label is the number of the head noun
(``1`` = plural, ``0`` = singular).  The behaviour is the tense-agnostic logit margin
``m = L[" are"] + L[" were"] − L[" is"] − L[" was"]`` at the last token (plural minus singular).

The word lists, templates, demo and generation prompts are those of the official code release's
``src/cores/SVA_uni.py`` (``joshseth/cores``: ``build_sva_dataset`` and its flip / generation demos),
the code behind the paper's subject–verb agreement experiment (Schiffman 2026, arXiv 2602.22600).

* :func:`synthetic_prompts` — the generator (the same lists, drawn in our own order): 9 singular / 9 plural heads, an attractor of
  the **opposite** number, 6 connectors, 5 templates (base, front pad, back pad, "There", relative
  clause), an optional "In the past," prefix (probability 1/2); exactly half singular heads;
  texts shuffled with ``numpy.random.default_rng(seed)``.
* :func:`split` — the seeded 50/50 train/test split (train: Cov, Obs, μ; test: evaluation).
* :func:`read_prompts_file` / :func:`load_prompts` — a UTF-8 CSV with columns ``prompt,number`` or
  a JSON list of ``{"prompt": ..., "number": ...}``, ``number`` being ``singular`` or ``plural``; a
  malformed row raises ``ValueError`` naming the row (a non-UTF-8 file: the byte offset).  The
  file is read once into a :class:`PromptsFile`, which carries its prompts to :func:`agreement_split`.
* :func:`verb_token_ids` — the ids of `` is / are / was / were`` for a tokenizer (a word that
  splits into several tokens uses its last token, as the official code's ``get_token_id`` does).
* :func:`margin` / :func:`copula_margin` — the behaviour read from logits: the summed margin, and
  the logsumexp copula margin that steered generation calibrates against.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np
import torch

SINGULAR_HEADS = ("key", "label", "author", "pilot", "teacher", "child", "man", "woman", "mouse")
PLURAL_HEADS = ("keys", "labels", "authors", "pilots", "teachers", "children", "men", "women", "mice")
SINGULAR_ATTRACTORS = ("cabinet", "drawer", "door", "folder", "box", "room", "student", "guard", "desk")
PLURAL_ATTRACTORS = ("cabinets", "drawers", "doors", "folders", "boxes", "rooms", "students", "guards", "desks")
CONNECTORS = ("to the", "of the", "near the", "behind the", "next to the", "alongside the")
REL_CHUNKS = ("that the", "that guards the", "that surrounds the", "that hides the")
FRONT_PADS = ("In this ancient kingdom,", "Long ago in a distant land,", "In a busy laboratory,", "Deep under the old castle,")
BACK_PADS = ("in the old kingdom", "in this strange world", "in the present tense", "on most days")
TEMPLATES = ("base", "front", "back", "there", "rel")
PREFIX = "In the past,"

VERBS = ("is", "are", "was", "were")
"""Order of the four verbs everywhere: singular present, plural present, singular past, plural past."""

DEMO_PROMPTS = (
    ("The key next to the cabinets", 0),
    ("The keys next to the cabinet", 1),
    ("The children near the guard", 1),
    ("In this ancient kingdom, the key to the cabinets", 0),
    ("There key near the boxes", 0),
    ("There keys near the box", 1),
)
"""The six prompts of the official code release's flip demo (the paper's SVA figure, panel C), with their labels (1 = plural)."""

GENERATION_PROMPTS = (
    "As a new field of research, artificial intelligence",
    "We hold these truths to be self-evident:",
    "Scientific research",
)
"""The three prompts of the official code release's generation demo."""

NUMBERS = {"singular": 0, "plural": 1}


@dataclass(frozen=True)
class AgreementSplit:
    """Train / test prompts with labels (1 = plural head, 0 = singular)."""

    train_prompts: list[str]
    train_labels: np.ndarray
    test_prompts: list[str]
    test_labels: np.ndarray


def _one_prompt(rng: np.random.Generator, plural: bool) -> str:
    heads, attractors = (PLURAL_HEADS, SINGULAR_ATTRACTORS) if plural else (SINGULAR_HEADS, PLURAL_ATTRACTORS)
    head = heads[rng.integers(len(heads))]
    attr = attractors[rng.integers(len(attractors))]
    conn = CONNECTORS[rng.integers(len(CONNECTORS))]
    template = TEMPLATES[rng.integers(len(TEMPLATES))]
    if template == "base":
        text = f"The {head} {conn} {attr}"
    elif template == "front":
        text = f"{FRONT_PADS[rng.integers(len(FRONT_PADS))]} the {head} {conn} {attr}"
    elif template == "back":
        text = f"The {head} {conn} {attr} {BACK_PADS[rng.integers(len(BACK_PADS))]}"
    elif template == "there":
        text = f"There {head} {conn} {attr}"
    else:
        text = f"The {head} {REL_CHUNKS[rng.integers(len(REL_CHUNKS))]} {attr}"
    if rng.random() < 0.5:
        text = f"{PREFIX} {text[0].lower()}{text[1:]}"
    return text


def synthetic_prompts(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``n`` synthetic agreement prompts (exactly ``n // 2`` singular heads), shuffled.

    Args:
        n: number of prompts, even, >= 4.
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        ``(prompts, labels)``: list of n strings; (n,) int array, 1 = plural.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 4 or n % 2:
        raise ValueError(f"n={n!r} is not allowed: n must be an even integer >= 4")
    rng = np.random.default_rng(seed)
    labels = np.array([0] * (n // 2) + [1] * (n // 2))
    prompts = [_one_prompt(rng, bool(label)) for label in labels]
    order = rng.permutation(n)
    return [prompts[i] for i in order], labels[order]


def split(prompts: list[str], labels: np.ndarray, seed: int = 0) -> AgreementSplit:
    """Seeded 50/50 split into train (first half of a permutation) and test (the rest)."""
    labels = np.asarray(labels)
    if len(prompts) != len(labels) or len(prompts) < 4:
        raise ValueError(f"need >= 4 prompts with one label each; got {len(prompts)} prompts, {len(labels)} labels")
    order = np.random.default_rng(seed + 1).permutation(len(prompts))
    half = len(prompts) // 2
    tr, te = order[:half], order[half:]
    out = AgreementSplit([prompts[i] for i in tr], labels[tr], [prompts[i] for i in te], labels[te])
    for name, lab in (("train", out.train_labels), ("test", out.test_labels)):
        if lab.min() == lab.max():
            raise ValueError(
                f"the {name} half has only one number ({'plural' if lab[0] else 'singular'}); add prompts of both numbers"
            )
    return out


def agreement_split(n: int, seed: int = 0, prompts_file: str | os.PathLike | None = None) -> AgreementSplit:
    """The synthetic set of ``n`` prompts (or the prompts of ``prompts_file``), split 50/50 with ``seed``.

    A :class:`PromptsFile` (what the chapter's check read) is used as it is, not read again.
    """
    if prompts_file is not None:
        prompts, labels = load_prompts(prompts_file)
    else:
        prompts, labels = synthetic_prompts(n, seed)
    return split(prompts, labels, seed)


def _parse_row(where: str, row: object) -> tuple[str, int]:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object with keys 'prompt' and 'number', got {row!r}")
    prompt, number = row.get("prompt"), row.get("number")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"{where}: 'prompt' must be a non-empty string, got {prompt!r}")
    if not isinstance(number, str) or number.strip().lower() not in NUMBERS:
        raise ValueError(f"{where}: 'number' must be 'singular' or 'plural', got {number!r}")
    return prompt.strip(), NUMBERS[number.strip().lower()]


class PromptsFile(str):
    """A prompts-file path (it compares, prints and serialises as the path) carrying the prompts read from it.

    Made by :func:`read_prompts_file`; :func:`agreement_split` uses the carried prompts instead of
    reading the file again, so what was checked is what runs.
    """

    prompts: tuple[str, ...]
    labels: tuple[int, ...]

    def __new__(cls, path: str, prompts, labels) -> Self:
        self = super().__new__(cls, path)
        self.prompts = tuple(prompts)
        self.labels = tuple(int(v) for v in labels)
        return self

    def __reduce__(self):
        return (PromptsFile, (str(self), self.prompts, self.labels))


def _decode(path: Path) -> str:
    """The file's text as UTF-8 (a leading byte-order mark dropped); ValueError naming the byte offset if not."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"PROMPTS_FILE={str(path)!r} is not allowed: it is not UTF-8 text (byte {exc.start} is "
            f"{data[exc.start : exc.start + 1]!r}: {exc.reason}); save it as UTF-8"
        ) from None


def read_prompts_file(path: str | os.PathLike) -> PromptsFile:
    """Read your own prompts once: ``.csv`` (header ``prompt,number``) or ``.json`` (list of objects).

    Each prompt must end right before the verb; ``number`` is ``singular`` or ``plural``.  The file
    must be UTF-8.  Raises ``ValueError`` naming the file and the bad row (or byte offset).

    Returns:
        a :class:`PromptsFile`: the path as given, with ``.prompts`` and ``.labels`` (1 = plural).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"PROMPTS_FILE={str(path)!r} is not allowed: it must be an existing .csv or .json file")
    if path.suffix.lower() not in (".csv", ".json"):
        raise ValueError(f"PROMPTS_FILE={str(path)!r} is not allowed: the file must end in .csv or .json")
    try:
        text = _decode(path)
    except OSError as exc:
        raise ValueError(f"PROMPTS_FILE={str(path)!r} is not allowed: it cannot be read ({exc.strerror or exc})") from None
    rows: list[tuple[str, int]] = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if reader.fieldnames is None or not {"prompt", "number"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: the CSV header must contain the columns 'prompt,number'; got {reader.fieldnames}")
        for i, row in enumerate(reader, start=2):
            if None in row or any(v is None for v in row.values()):
                raise ValueError(f"{path}, row {i}: wrong number of fields: {row!r}")
            rows.append(_parse_row(f"{path}, row {i}", row))
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of {{'prompt': ..., 'number': ...}} objects")
        rows = [_parse_row(f"{path}, item {i}", row) for i, row in enumerate(data)]
    if len(rows) < 4:
        raise ValueError(f"{path}: need at least 4 prompts, found {len(rows)}")
    return PromptsFile(str(path), [p for p, _ in rows], [n for _, n in rows])


def load_prompts(path: str | os.PathLike) -> tuple[list[str], np.ndarray]:
    """``(prompts, labels)`` of a prompts file (labels 1 = plural); a :class:`PromptsFile` is not read again.

    See :func:`read_prompts_file` for the format; raises ``ValueError`` naming the bad row.
    """
    found = path if isinstance(path, PromptsFile) else read_prompts_file(path)
    return list(found.prompts), np.array(found.labels)


def verb_token_ids(tokenizer) -> dict[str, int]:
    """Token ids of `` is``, `` are``, `` was``, `` were`` (leading space; last sub-token if split).

    Raises ``ValueError`` if a verb maps to the unknown token or two verbs share an id.
    """
    ids: dict[str, int] = {}
    for verb in VERBS:
        pieces = tokenizer.encode(" " + verb, add_special_tokens=False)
        if not pieces:
            raise ValueError(f"tokenizer encodes {' ' + verb!r} to no tokens")
        ids[verb] = int(pieces[-1])
        if tokenizer.unk_token_id is not None and ids[verb] == tokenizer.unk_token_id:
            raise ValueError(f"tokenizer maps {' ' + verb!r} to its unknown token")
    if len(set(ids.values())) != 4:
        raise ValueError(f"verbs share token ids: {ids}")
    return ids


def margin(logits, ids: dict[str, int]):
    """m = L[are] + L[were] − L[is] − L[was] from last-token logits (..., V) (a tensor or an array)."""
    return logits[..., ids["are"]] + logits[..., ids["were"]] - logits[..., ids["is"]] - logits[..., ids["was"]]


def margin_metric(ids: dict[str, int]):
    """The margin as a :data:`~ace_helpers.llm.readout.Metric`: logits (B, T, V) -> (B,) at the last token."""
    return lambda logits: margin(logits[:, -1], ids)


def copula_margin(logits, ids: dict[str, int]):
    """logsumexp(L[are], L[were]) − logsumexp(L[is], L[was]) from logits (..., V), a torch tensor."""

    plural = torch.logsumexp(torch.stack([logits[..., ids["are"]], logits[..., ids["were"]]], -1), -1)
    singular = torch.logsumexp(torch.stack([logits[..., ids["is"]], logits[..., ids["was"]]], -1), -1)
    return plural - singular


def vocabulary() -> list[str]:
    """Every word (and punctuation mark) the synthetic set, the demos and the verbs use (for tiny tokenizers)."""
    texts = [
        *SINGULAR_HEADS,
        *PLURAL_HEADS,
        *SINGULAR_ATTRACTORS,
        *PLURAL_ATTRACTORS,
        *CONNECTORS,
        *REL_CHUNKS,
        *FRONT_PADS,
        *BACK_PADS,
        PREFIX,
        "The There the there in",
        *VERBS,
        *(p for p, _ in DEMO_PROMPTS),
        *GENERATION_PROMPTS,
    ]
    words: list[str] = []
    for text in texts:
        for word in text.replace(",", " , ").replace(":", " : ").replace("-", " - ").split():
            if word not in words:
                words.append(word)
    return words
