"""A-VERT's fixed distractor pool: the file, its loading, and the choice of distractors.

What only A-VERT uses, next to it (:mod:`qaeval_core.metrics.avert`, whose docstring gives the
decision: the wrong group's distractors come from a fixed pool, never from the batch, so an
item's score does not depend on what it is scored with). The shipped pool
(``qaeval_core/data/avert_distractors.jsonl``, built by ``scripts/build_avert_distractors.py``)
is the 538 reference answers of the 301 NQ-301 questions; a pool's content hash goes into the
metric's configuration.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.text.squad import contains_on_token_boundary, normalize_answer

__all__ = [
    "DEFAULT_DISTRACTOR_POOL",
    "DistractorPool",
    "load_distractor_pool",
    "select_distractors",
    "top_distractors",
]


def _matches(a_norm: str, b_norm: str) -> bool:
    return bool(a_norm and b_norm) and (
        a_norm == b_norm
        or contains_on_token_boundary(a_norm, b_norm)
        or contains_on_token_boundary(b_norm, a_norm)
    )


def select_distractors(
    references: Sequence[str],
    ref_vectors: np.ndarray,
    pool: Sequence[str],
    pool_vectors: np.ndarray,
    k: int,
) -> list[str]:
    """The ``k`` pool strings most similar to any reference, excluding strings that equal,
    contain or are contained in a reference (after SQuAD normalisation); ties by text."""
    if k <= 0 or not len(pool) or not len(references):
        return []
    refs_norm = [normalize_answer(r) for r in references]
    keep = [
        j
        for j, p in enumerate(pool)
        if not any(_matches(normalize_answer(p), rn) for rn in refs_norm)
    ]
    if not keep:
        return []
    sims = (pool_vectors[keep] @ ref_vectors.T).max(axis=1)
    order = sorted(range(len(keep)), key=lambda j: (-float(sims[j]), pool[keep[j]]))
    return [pool[keep[j]] for j in order[:k]]


#: The shipped distractor pool (``qaeval_core/data``); see the module docstring.
DEFAULT_DISTRACTOR_POOL = "avert_distractors.jsonl"


@dataclass(frozen=True)
class DistractorPool:
    """A fixed list of answers A-VERT draws distractors from, with the normalised questions
    each answers (an answer is never a distractor for its own question), and a content hash
    that goes into the metric's configuration."""

    answers: tuple[str, ...]
    owners: dict[str, frozenset[str]]
    sha256: str


def _pool_rows(path: Path) -> list[tuple[str, list[str]]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".jsonl":
        return [(line.strip(), []) for line in text.splitlines() if line.strip()]
    rows: list[tuple[str, list[str]]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            answer = str(row["answer"]).strip()
            questions = [normalize_answer(str(q)) for q in row.get("questions", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"A-VERT distractor pool {path}, line {n}: expected "
                f'{{"answer": text, "questions": [text, ...]}} ({exc}).'
            ) from None
        if answer:
            rows.append((answer, questions))
    return rows


def load_distractor_pool(path: str | None = None) -> DistractorPool:
    """The pool in ``path`` (``.txt``: one answer per line; ``.jsonl``: ``{"answer",
    "questions"}`` per line), or the shipped one for None. Read once per file version (path,
    modification time and size), so an edited file is read again, with its new hash."""
    where = (
        Path(str(resources.files("qaeval_core.data") / DEFAULT_DISTRACTOR_POOL))
        if path is None
        else Path(path).expanduser()
    )
    try:
        stat = where.stat()
    except OSError as exc:
        raise ConfigError(f"A-VERT cannot read the distractor pool {where}: {exc}.") from None
    return _load_pool(str(where), stat.st_mtime_ns, stat.st_size)


@cache
def _load_pool(where: str, mtime_ns: int, size: int) -> DistractorPool:
    """:func:`load_distractor_pool` of one file version (the last two arguments key the
    cache)."""
    path = Path(where)
    try:
        rows = _pool_rows(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise ConfigError(f"A-VERT cannot read the distractor pool {path}: {exc}.") from None
    owners: dict[str, set[str]] = {}
    for answer, questions in rows:
        owners.setdefault(answer, set()).update(questions)
    if not owners:
        raise ConfigError(f"A-VERT distractor pool {path} holds no answer.")
    return DistractorPool(tuple(owners), {a: frozenset(q) for a, q in owners.items()}, digest)


def top_distractors(
    references: Sequence[str],
    sims: np.ndarray,
    pool: Sequence[str],
    owners: dict[str, frozenset[str]],
    question: str,
    k: int,
) -> list[str]:
    """:func:`select_distractors` given each pool string's best similarity to the references,
    over the pool strings that do not answer ``question``, walking only the most similar
    candidates (``argpartition``) instead of sorting the whole pool."""
    refs_norm = [normalize_answer(r) for r in references]
    m = min(len(pool), 8 * k + 32)
    while True:
        top = np.argpartition(-sims, m - 1)[:m] if m < len(pool) else np.arange(len(pool))
        order = sorted(top.tolist(), key=lambda j: (-float(sims[j]), pool[j]))
        chosen: list[str] = []
        for j in order:
            text = pool[j]
            if question in owners.get(text, frozenset()):
                continue  # an answer of this very question
            if any(_matches(normalize_answer(text), rn) for rn in refs_norm):
                continue
            chosen.append(text)
            if len(chosen) == k:
                return chosen
        if m >= len(pool):
            return chosen
        m = min(len(pool), m * 4)
