"""Token-level answer-correctness metrics (EM, containment, token P/R/F1, word match) and the
plumbing every lexical metric shares (:class:`LexicalMetric`); ROUGE / BLEU / METEOR live in
:mod:`qaeval_core.metrics.ngram` and the VQA accuracies in :mod:`qaeval_core.metrics.vqa`.

Every metric compares the candidate with each reference and keeps the best reference (max over
references, as SQuAD and LAVE do), reporting it in ``details["best_reference"]`` together with
the subscores. By default (``normalize="spaced"``) text goes through SQuAD's steps with
punctuation read as a space (:mod:`qaeval_core.text.normalize`: lowercase, punctuation to
spaces, articles dropped, spaces collapsed) before any comparison; ``normalize="squad"`` is the
official SQuAD v1.1 rules exactly (punctuation deleted: "Ben-Gurion" one token, "2.5" reads
"25"; :func:`qaeval_core.text.squad.squad_v1_normalize`, equal to torchmetrics' SQuAD in the
tests). The spaced reading stays the default because it measures better on the shared labelled
data (``experiments/results/squad_vs_spaced.md``).

Speed matters because lexical metrics run on every item of every dataset and inside
calibration loops. The math lives in pure functions over memoised per-string data (the
normalised string, its token bag): references are shared by many candidates, and several
metrics reuse one normalisation (:mod:`qaeval_core.text.normalize`; identical to
:func:`qaeval_core.text.squad.normalize_answer`, checked in the tests).

Conventions (and where they differ from the ``qa-metrics`` package of the PANDA authors):

* ``em``: normalised candidate == a normalised reference (SQuAD). qa-metrics' ``em_match``
  is substring containment instead; that is closer to our ``contains``. Items go through a
  small C kernel when it was built (``_squad.c``: one pass per item, no Python object per
  string); without it, and for cells that are not text, through fingerprints and bulk
  normalisation in numpy.
* ``contains`` (Kamalloo et al.'s "lexical matching", METHODS.md's easy match): a normalised
  reference occurs in the normalised candidate on token boundaries ("paris" is in "it is
  paris" but not in "parisian").
* ``precision`` / ``recall`` / ``f1``: SQuAD bag of tokens with multiplicity
  (``Counter`` intersection), precision = overlap / candidate tokens. qa-metrics uses token
  *sets*, lemmatises, and swaps precision and recall.
* Empty token lists follow SQuAD (and torchmetrics): 1.0 when both sides are empty, else 0.0.
* ``normalize="robust"`` (every metric here) reads both sides through the robust profile of
  :mod:`qaeval_core.text.profiles` (formatting removed, numbers and dates canonical, lemmas, glued
  tokens repaired against each reference); it goes one pair at a time in Python, so it is
  slower than the default ``spaced`` paths, which stay untouched; ``normalize="squad"`` goes
  the same pair-at-a-time way with the official tokens.

Why it is one module: EM, containment and token precision / recall / F1 share the batch
normalisation, the reference bookkeeping and EM's two paths (the optional C kernel and the numpy
fingerprint path), which must give identical results.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from operator import attrgetter
from typing import Any, ClassVar

import numpy as np

from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item
from qaeval_core.text.fingerprint import fingerprints
from qaeval_core.text.normalize import (
    bag_of_tokens,
    clear_caches,
    norm_tokens,
    normalize,
    normalize_column,
    normalize_many,
    token_bag,
)
from qaeval_core.text.profiles import ProfileParam, check_profile, pair_tokens

try:  # the optional C kernel of exact match (setup.py builds it when a compiler is there)
    import qaeval_core.metrics._squad as _squad
except ImportError:
    _squad = None

__all__ = [
    "normalize",
    "normalize_many",
    "norm_tokens",
    "clear_caches",
    "exact_match_batch",
    "contains_batch",
    "token_prf",
    "token_prf_batch",
    "word_match_batch",
    "robust_batch",
    "LexicalMetric",
    "best_references",
    "reference_at",
    "ExactMatch",
    "Contains",
    "TokenPrecision",
    "TokenRecall",
    "TokenF1",
    "WordMatch",
]

# --------------------------------------------------------------------------------------------
# Normalisation: see qaeval_core.text.normalize
# --------------------------------------------------------------------------------------------


def _prime(cands: Sequence[str], refs: Sequence[Sequence[str]]) -> None:
    """Normalise every string of a batch at once (the metric loops then hit the memo)."""
    normalize_many([*cands, *(r for rs in refs for r in rs)])


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


# --------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------


def exact_match_batch(
    candidates: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: 1.0 if the normalised candidate equals a normalised reference, and the index
    of the first matching reference (-1 when none).

    Most pairs are told apart by their fingerprints (:mod:`qaeval_core.text.fingerprint`,
    computed for the whole batch with a few array passes); only the strings of the pairs whose
    fingerprints agree are normalised (:func:`normalize_column`) and compared. No per-item
    Python loop runs: EM is cheap enough that such a loop was most of its cost.
    """
    n = len(candidates)
    scores = np.zeros(n)
    best = np.full(n, -1, dtype=np.int64)
    counts = np.fromiter(map(len, references), dtype=np.int64, count=n)
    texts = [*candidates, *chain.from_iterable(references)]
    if len(texts) == n:
        return scores, best
    owner = np.repeat(np.arange(n), counts)
    prints = fingerprints(texts)  # None: a string holds \x00 or \x01, so check every pair
    pairs = np.arange(len(owner)) if prints is None else np.flatnonzero(prints[owner] == prints[n:])
    if not pairs.size:
        return scores, best
    cand_at, ref_at = owner[pairs], pairs + n
    needed = np.unique(np.concatenate((cand_at, ref_at)))
    norm = np.empty(len(texts), dtype=object)
    norm[needed] = normalize_column([texts[i] for i in needed.tolist()])
    hit = pairs[norm[cand_at] == norm[ref_at]]
    if hit.size:
        matched, first = np.unique(owner[hit], return_index=True)
        starts = np.cumsum(counts) - counts
        best[matched] = hit[first] - starts[matched]
        scores[matched] = 1.0
    return scores, best


def contains_batch(
    candidates: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: 1.0 if a normalised, non-empty reference occurs in the normalised candidate on
    token boundaries, and the index of the longest such reference (-1 when none)."""
    n = len(candidates)
    scores = np.zeros(n)
    best = np.full(n, -1, dtype=np.int64)
    norm = normalize
    for i in range(n):
        padded = f" {norm(candidates[i])} "
        found_len = -1
        for j, ref in enumerate(references[i]):
            r = norm(ref)
            if r and len(r) > found_len and f" {r} " in padded:
                found_len = len(r)
                best[i] = j
        if found_len >= 0:
            scores[i] = 1.0
    return scores, best


def token_prf(candidate: str, reference: str) -> tuple[float, float, float]:
    """Token precision, recall and F1 (``spaced`` tokens) of one candidate against one reference.

    >>> token_prf("It is Paris", "Paris")
    (0.3333333333333333, 1.0, 0.5)
    """
    cbag, clen = token_bag(candidate)
    rbag, rlen = token_bag(reference)
    return _prf(cbag, clen, rbag, rlen)


def _prf(
    cbag: dict[str, int], clen: int, rbag: dict[str, int], rlen: int
) -> tuple[float, float, float]:
    if clen == 0 or rlen == 0:
        same = float(clen == rlen)
        return same, same, same
    small, large = (rbag, cbag) if len(rbag) <= len(cbag) else (cbag, rbag)
    common = 0
    for tok, cnt in small.items():
        other = large.get(tok)
        if other:
            common += cnt if cnt < other else other
    if common == 0:
        return 0.0, 0.0, 0.0
    return common / clen, common / rlen, 2.0 * common / (clen + rlen)


_PRF_INDEX = {"precision": 0, "recall": 1, "f1": 2}


def token_prf_batch(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    key: str = "f1",
) -> tuple[np.ndarray, np.ndarray]:
    """Per item, the (precision, recall, F1) row of the reference that maximises ``key``.

    Returns an ``(n, 3)`` array and the best reference index per item (-1 without references).
    Ties keep the first reference, as SQuAD's ``max`` does.
    """
    k = _PRF_INDEX[key]
    n = len(candidates)
    out = np.zeros((n, 3))
    best = np.full(n, -1, dtype=np.int64)
    bag = token_bag
    prf = _prf
    for i in range(n):
        cbag, clen = bag(candidates[i])
        top = -1.0
        for j, ref in enumerate(references[i]):
            rbag, rlen = bag(ref)
            row = prf(cbag, clen, rbag, rlen)
            if row[k] > top:
                top = row[k]
                best[i] = j
                out[i] = row
    return out, best


def word_match_batch(
    candidates: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Share of the reference's distinct normalised words present in the candidate, max over
    references (the multi-layer-fusion paper's "word matching"). Sets, not bags: a word the
    reference repeats is present or not."""
    n = len(candidates)
    scores = np.zeros(n)
    best = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        cset = token_bag(candidates[i])[0]
        top = -1.0
        for j, ref in enumerate(references[i]):
            rset = token_bag(ref)[0]
            share = sum(1 for t in rset if t in cset) / len(rset) if rset else 0.0
            if share > top:
                top = share
                best[i] = j
                scores[i] = share
    return scores, best


def robust_batch(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    kind: str,
    *,
    profile: str = "robust",
) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``(n, 3)`` and best reference per item for ``kind`` in em / contains / prf /
    word_match (prf keeps F1 in column 2 and the reference maximising ``kind``'s column:
    "precision", "recall" or "f1"), with tokens from :func:`pair_tokens` under ``profile``."""
    k = _PRF_INDEX.get(kind, 2)
    n = len(candidates)
    out = np.zeros((n, 3))
    best = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        cand = candidates[i]
        top = -1.0
        for j, ref in enumerate(references[i]):
            ctoks, rtoks = pair_tokens(cand, ref, profile)
            if kind == "em":
                row = (1.0,) * 3 if ctoks == rtoks else (0.0,) * 3
            elif kind == "contains":
                hit = bool(rtoks) and f" {' '.join(rtoks)} " in f" {' '.join(ctoks)} "
                row = (1.0,) * 3 if hit else (0.0,) * 3
            elif kind == "word_match":
                rset = set(rtoks)
                share = len(rset & set(ctoks)) / len(rset) if rset else 0.0
                row = (share,) * 3
            else:
                row = _prf(*bag_of_tokens(list(ctoks)), *bag_of_tokens(list(rtoks)))
            if row[k] > top and (kind not in ("em", "contains") or row[k] > 0):
                top = row[k]
                best[i] = j
                out[i] = row
    return out, best


# --------------------------------------------------------------------------------------------
# Helpers shared by the metric classes
# --------------------------------------------------------------------------------------------


def _columns(items: Sequence[Item]) -> tuple[list[str], list[tuple[str, ...]]]:
    """Candidates and references as strings (numbers from CSV cells become text)."""
    cands = list(map(attrgetter("candidate"), items))
    refs = list(map(attrgetter("references"), items))
    if set(map(type, cands)) - {str}:
        cands = [_as_text(c) for c in cands]
    if set(map(type, chain.from_iterable(refs))) - {str}:
        refs = [tuple(_as_text(r) for r in rs) for rs in refs]
    return cands, refs


def best_references(refs: Sequence[Sequence[str]], best: np.ndarray) -> list[dict[str, Any]]:
    """``{"best_reference": ...}`` per item from the index of its best reference (-1: none).

    Only the matched items are looked up (one details dict per item is the interface's price;
    the lookups need not be)."""
    chosen: list[str | None] = [None] * len(refs)
    for i in np.flatnonzero(best >= 0).tolist():
        chosen[i] = refs[i][best[i]]
    return [{"best_reference": r} for r in chosen]


def reference_at(refs: Sequence[str], j: int) -> str | None:
    return refs[j] if j >= 0 else None


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch allocates many small objects.

    The memoised normalisations hold hundreds of thousands of tracked objects; every
    collection triggered by the details dicts walks them, which halved throughput. The batch
    creates no reference cycles, so pausing is safe; the previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class LexicalMetric(Metric):
    """Shared ``score_batch`` plumbing: subclasses implement ``_compute``."""

    kind: ClassVar[str] = "lexical"
    #: Whether ``_compute`` reads the memoised normalisations (then the batch is primed in
    #: bulk first); a metric that normalises each string once itself sets it to False.
    uses_memo: ClassVar[bool] = True
    #: The robust profile repairs glued tokens against the references (:func:`pair_tokens`),
    #: so the robust config records the repair's version (:class:`ProfileParam`).
    repairs_glue: ClassVar[bool] = True

    def _compute(
        self, cands: list[str], refs: list[tuple[str, ...]]
    ) -> tuple[np.ndarray, list[dict[str, Any]]]:
        raise NotImplementedError

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        with _gc_paused():
            cands, refs = _columns(items)
            if self.uses_memo and getattr(self, "normalize", "spaced") == "spaced":
                _prime(cands, refs)
            scores, details = self._compute(cands, refs)
        return MetricResult(scores, self.decide(scores), details)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


@register
class ExactMatch(ProfileParam, LexicalMetric):
    """Exact match after normalisation (1 or 0; ``spaced`` by default, SQuAD's EM at
    ``normalize="squad"``)."""

    id = "em"
    family = "lexical"
    calibrate_by_default = True
    description = (
        "Exact match: normalised candidate equals a normalised reference (punctuation read as "
        "spaces; normalize='squad': official SQuAD v1.1 EM)."
    )
    uses_memo = False

    def __init__(self, *, threshold: float = 0.5, normalize: str = "spaced") -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        with _gc_paused():
            if self.normalize != "spaced":
                cands, refs = _columns(items)
                _, best = robust_batch(cands, refs, "em", profile=self.normalize)
                details = best_references(refs, best)
            elif _squad is None:
                best, details = _exact_match_numpy(items)
            else:
                best, details = _exact_match_compiled(items)
        scores = (best >= 0).astype(float)
        return MetricResult(scores, self.decide(scores), details)


def _exact_match_numpy(items: Sequence[Item]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Best reference index and details per item with :func:`exact_match_batch`.

    The shared path checks every cell's type first; here a non-text cell (a number or None
    from a CSV) makes exact_match_batch raise TypeError instead, and only then are the columns
    converted: the check would cost a tenth of the metric.
    """
    cands = list(map(attrgetter("candidate"), items))
    refs = list(map(attrgetter("references"), items))
    try:
        _, best = exact_match_batch(cands, refs)
    except TypeError:
        cands, refs = _columns(items)
        _, best = exact_match_batch(cands, refs)
    return best, best_references(refs, best)


def _exact_match_compiled(items: Sequence[Item]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """The C kernel (``_squad.c``) for the items it accepts (str values, a tuple of them), the
    numpy path for the ones it declines (numbers or None from a CSV, str subclasses)."""
    buffer, details, declined = _squad.exact_match_items(items)
    best = np.frombuffer(buffer, dtype=np.int64)
    if declined:  # cells that are not plain str: convert them as every lexical metric does
        cands, refs = _columns([items[i] for i in declined])
        _, best[declined] = exact_match_batch(cands, refs)
        for i, detail in zip(declined, best_references(refs, best[declined]), strict=True):
            details[i] = detail
    return best, details


@register
class Contains(ProfileParam, LexicalMetric):
    """Easy match: a normalised reference appears in the normalised candidate on token
    boundaries. Kamalloo et al. (2023) found it the most human-aligned lexical check for long
    LLM answers; it fails on answers that also list wrong alternatives."""

    id = "contains"
    family = "lexical"
    calibrate_by_default = True
    description = "Easy match: a normalised reference occurs in the candidate on token boundaries."

    def __init__(self, *, threshold: float = 0.5, normalize: str = "spaced") -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def _compute(self, cands, refs):
        if self.normalize != "spaced":
            rows, best = robust_batch(cands, refs, "contains", profile=self.normalize)
            return rows[:, 0].copy(), best_references(refs, best)
        scores, best = contains_batch(cands, refs)
        return scores, best_references(refs, best)


class _TokenOverlap(ProfileParam, LexicalMetric):
    """Token precision / recall / F1; ``key`` names the score kept and maximised."""

    key: ClassVar[str] = "f1"

    def __init__(self, *, threshold: float = 0.5, normalize: str = "spaced") -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def _compute(self, cands, refs):
        if self.normalize != "spaced":
            prf, best = robust_batch(cands, refs, self.key, profile=self.normalize)
        else:
            prf, best = token_prf_batch(cands, refs, key=self.key)
        k = _PRF_INDEX[self.key]
        details = [
            {"best_reference": rs[j] if j >= 0 else None, "precision": p, "recall": r, "f1": f}
            for rs, j, (p, r, f) in zip(refs, best.tolist(), prf.tolist(), strict=True)
        ]
        return prf[:, k].copy(), details


@register
class TokenF1(_TokenOverlap):
    """Token F1, max over references: SQuAD's formula on ``spaced`` tokens by default; the
    official SQuAD v1.1 F1 at ``normalize="squad"``."""

    id = "f1"
    family = "lexical"
    calibrate_by_default = True
    key = "f1"
    description = (
        "Token F1 (bag of tokens with multiplicity, punctuation read as spaces, max over "
        "references; normalize='squad': official SQuAD v1.1 F1)."
    )


@register
class TokenPrecision(_TokenOverlap):
    """Share of the candidate's tokens found in the reference (bag of tokens, max over refs)."""

    id = "precision"
    family = "lexical"
    calibrate_by_default = True
    key = "precision"
    description = (
        "Token precision: overlap / candidate tokens (bag of tokens, punctuation read as spaces, "
        "max over references)."
    )


@register
class TokenRecall(_TokenOverlap):
    """Share of the reference's tokens found in the candidate; robust to verbose answers
    (Adlakha et al. 2024), at the price of rewarding answers that list many options."""

    id = "recall"
    family = "lexical"
    calibrate_by_default = True
    key = "recall"
    description = (
        "Token recall: overlap / reference tokens (bag of tokens, punctuation read as spaces, "
        "max over references)."
    )


@register
class WordMatch(ProfileParam, LexicalMetric):
    """Share of distinct reference words present in the candidate (multi-layer fusion)."""

    id = "word_match"
    family = "lexical"
    calibrate_by_default = True
    description = "Share of the reference's distinct words present in the candidate."

    def __init__(self, *, threshold: float = 0.5, normalize: str = "spaced") -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def _compute(self, cands, refs):
        if self.normalize != "spaced":
            rows, best = robust_batch(cands, refs, "word_match", profile=self.normalize)
            return rows[:, 0].copy(), best_references(refs, best)
        scores, best = word_match_batch(cands, refs)
        return scores, best_references(refs, best)
