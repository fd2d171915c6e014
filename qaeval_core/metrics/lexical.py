"""Lexical answer-correctness metrics: EM, containment, token P/R/F1, ROUGE, BLEU, METEOR, VQA.

Every metric compares the candidate with each reference and keeps the best reference (max over
references, as SQuAD and LAVE do), reporting it in ``details["best_reference"]`` together with
the subscores. Text goes through the SQuAD normalisation of :mod:`qaeval_core.metrics.normalize`
(lowercase, punctuation to spaces, articles dropped, spaces collapsed) before any comparison.

Speed matters because lexical metrics run on every item of every dataset and inside
calibration loops. The math lives in pure functions over memoised per-string data (the
normalised string, its token bag): references are shared by many candidates, and several
metrics reuse one normalisation. Plain ASCII text, the common case, is normalised through a
byte translation table, which is about twice as fast as the regex path and gives identical
results (checked in the tests against :func:`qaeval_core.text.normalize_answer`).

Conventions (and where they differ from the ``qa-metrics`` package of the PANDA authors):

* ``em``: normalised candidate == a normalised reference (SQuAD). qa-metrics' ``em_match``
  is substring containment instead; that is closer to our ``contains``.
* ``contains`` (Kamalloo et al.'s "lexical matching", METHODS.md's easy match): a normalised
  reference occurs in the normalised candidate on token boundaries ("paris" is in "it is
  paris" but not in "parisian").
* ``precision`` / ``recall`` / ``f1``: SQuAD bag of tokens with multiplicity
  (``Counter`` intersection), precision = overlap / candidate tokens. qa-metrics uses token
  *sets*, lemmatises, and swaps precision and recall.
* Empty token lists follow SQuAD: 1.0 when both sides are empty, else 0.0.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from itertools import chain
from operator import attrgetter
from typing import Any, ClassVar

import numpy as np

from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.metrics.normalize import (
    clear_caches,
    norm_tokens,
    normalize,
    normalize_column,
    normalize_many,
    token_bag,
)
from qaeval_core.metrics.wordnet import (
    NoSynonyms,
    StemAwareWordNet,
    wordnet,
    wordnet_present,
    wordnet_status,
)
from qaeval_core.schema import Item

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
    "vqa_accuracy",
    "soft_vqa_accuracy",
    "wordnet_status",
    "ExactMatch",
    "Contains",
    "TokenPrecision",
    "TokenRecall",
    "TokenF1",
    "Rouge1",
    "Rouge2",
    "RougeL",
    "Bleu",
    "Meteor",
    "WordMatch",
    "VQAAccuracy",
    "SoftVQAAccuracy",
]

# --------------------------------------------------------------------------------------------
# Normalisation: see qaeval_core.metrics.normalize
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

    Every string is normalised once, in bulk (:func:`normalize_column`), and the comparisons
    are one elementwise equality of two object arrays (candidate repeated per reference):
    no per-item Python loop, which matters because EM is cheap enough that the loop was most
    of its cost.
    """
    n = len(candidates)
    scores = np.zeros(n)
    best = np.full(n, -1, dtype=np.int64)
    counts = np.fromiter(map(len, references), dtype=np.int64, count=n)
    flat = list(chain.from_iterable(references))
    if not flat:
        return scores, best
    norm = normalize_column([*candidates, *flat])
    owner = np.repeat(np.arange(n), counts)
    cand = np.array(norm[:n], dtype=object)
    hit = np.flatnonzero(cand[owner] == np.array(norm[n:], dtype=object))
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
    """SQuAD token precision, recall and F1 of one candidate against one reference.

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


def _vqa_aggregate(sims: Sequence[float], *, full_at: int, loo_min: int) -> float:
    """VQA accuracy from per-reference match values: min(sum / full_at, 1), averaged over the
    leave-one-out subsets when there are at least ``loo_min`` references (Antol et al.)."""
    n = len(sims)
    if n == 0:
        return 0.0
    total = float(sum(sims))
    if n >= loo_min:
        # Rounded so that one match among ten gives exactly 0.3 (the default threshold).
        return round(sum(min((total - s) / full_at, 1.0) for s in sims) / n, 12)
    return min(total / full_at, 1.0)


def vqa_accuracy(
    candidate: str, references: Sequence[str], *, full_at: int = 3, loo_min: int = 10
) -> tuple[float, int]:
    """VQA accuracy: min(#references equal to the candidate / 3, 1), averaged over the
    leave-one-out subsets with 10 references. Returns (accuracy, number of matches).

    >>> vqa_accuracy("two", ["2", "two", "two"])
    (0.6666666666666666, 2)
    """
    cand = normalize(candidate)
    sims = [1.0 if normalize(r) == cand else 0.0 for r in references]
    return _vqa_aggregate(sims, full_at=full_at, loo_min=loo_min), int(sum(sims))


def soft_vqa_accuracy(
    candidate: str, references: Sequence[str], *, full_at: int = 3, loo_min: int = 10
) -> tuple[float, list[float]]:
    """Soft VQA accuracy (Hu et al. 2022, the LAVE baseline): VQA accuracy with the equality
    replaced by ``max(0, 1 - CER)``, CER = Levenshtein distance / reference length (characters,
    normalised text). Returns (accuracy, per-reference similarity)."""
    from rapidfuzz.distance import Levenshtein

    cand = normalize(candidate)
    sims: list[float] = []
    for ref in references:
        r = normalize(ref)
        if not r:
            sims.append(1.0 if not cand else 0.0)
            continue
        cer = Levenshtein.distance(cand, r) / len(r)
        sims.append(max(0.0, 1.0 - cer))
    return _vqa_aggregate(sims, full_at=full_at, loo_min=loo_min), sims


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


def _best_refs(refs: Sequence[Sequence[str]], best: np.ndarray) -> list[dict[str, Any]]:
    return [
        {"best_reference": rs[j] if j >= 0 else None}
        for rs, j in zip(refs, best.tolist(), strict=True)
    ]


def _ref_at(refs: Sequence[str], j: int) -> str | None:
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


class _LexicalMetric(Metric):
    """Shared ``score_batch`` plumbing: subclasses implement ``_compute``."""

    kind: ClassVar[str] = "lexical"
    #: Whether ``_compute`` reads the memoised normalisations (then the batch is primed in
    #: bulk first); a metric that normalises each string once itself sets it to False.
    uses_memo: ClassVar[bool] = True

    def _compute(
        self, cands: list[str], refs: list[tuple[str, ...]]
    ) -> tuple[np.ndarray, list[dict[str, Any]]]:
        raise NotImplementedError

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        with _gc_paused():
            cands, refs = _columns(items)
            if self.uses_memo:
                _prime(cands, refs)
            scores, details = self._compute(cands, refs)
        return MetricResult(scores, self.decide(scores), details)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


@register
class ExactMatch(_LexicalMetric):
    """Exact match after SQuAD normalisation (1 or 0)."""

    id = "em"
    description = "Exact match: normalised candidate equals a normalised reference (SQuAD)."
    uses_memo = False

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def _compute(self, cands, refs):
        scores, best = exact_match_batch(cands, refs)
        return scores, _best_refs(refs, best)


@register
class Contains(_LexicalMetric):
    """Easy match: a normalised reference appears in the normalised candidate on token
    boundaries. Kamalloo et al. (2023) found it the most human-aligned lexical check for long
    LLM answers; it fails on answers that also list wrong alternatives."""

    id = "contains"
    description = "Easy match: a normalised reference occurs in the candidate on token boundaries."

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def _compute(self, cands, refs):
        scores, best = contains_batch(cands, refs)
        return scores, _best_refs(refs, best)


class _TokenOverlap(_LexicalMetric):
    """Token precision / recall / F1; ``key`` names the score kept and maximised."""

    key: ClassVar[str] = "f1"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def _compute(self, cands, refs):
        prf, best = token_prf_batch(cands, refs, key=self.key)
        k = _PRF_INDEX[self.key]
        details = [
            {"best_reference": rs[j] if j >= 0 else None, "precision": p, "recall": r, "f1": f}
            for rs, j, (p, r, f) in zip(refs, best.tolist(), prf.tolist(), strict=True)
        ]
        return prf[:, k].copy(), details


@register
class TokenPrecision(_TokenOverlap):
    """Share of the candidate's tokens found in the reference (SQuAD bag, max over refs)."""

    id = "precision"
    key = "precision"
    description = "Token precision: overlap / candidate tokens (SQuAD bag, max over references)."


@register
class TokenRecall(_TokenOverlap):
    """Share of the reference's tokens found in the candidate; robust to verbose answers
    (Adlakha et al. 2024), at the price of rewarding answers that list many options."""

    id = "recall"
    key = "recall"
    description = "Token recall: overlap / reference tokens (SQuAD bag, max over references)."


@register
class TokenF1(_TokenOverlap):
    """SQuAD token F1, max over references."""

    id = "f1"
    key = "f1"
    description = "Token F1 (SQuAD bag of tokens with multiplicity, max over references)."


@register
class WordMatch(_LexicalMetric):
    """Share of distinct reference words present in the candidate (multi-layer fusion)."""

    id = "word_match"
    description = "Share of the reference's distinct words present in the candidate."

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def _compute(self, cands, refs):
        scores, best = word_match_batch(cands, refs)
        return scores, _best_refs(refs, best)


class _TokenizerAdapter:
    """rouge-score tokenizer interface over our memoised SQuAD tokens.

    rouge-score's default tokenizer drops every non-ASCII letter ("München" -> "m nchen");
    SQuAD tokens keep them and match what the other lexical metrics see.
    """

    def tokenize(self, text: str) -> tuple[str, ...]:
        return norm_tokens(text)


@lru_cache(maxsize=8)
def _rouge_scorer(rouge_type: str) -> Any:
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer([rouge_type], tokenizer=_TokenizerAdapter())


class _Rouge(_LexicalMetric):
    """ROUGE F-measure from the ``rouge-score`` package, max over references."""

    rouge_type: ClassVar[str] = "rouge1"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def _compute(self, cands, refs):
        scorer = _rouge_scorer(self.rouge_type)
        rt = self.rouge_type
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            top, top_j, top_s = -1.0, -1, None
            for j, ref in enumerate(rs):
                s = scorer.score(ref, cand)[rt]
                if s.fmeasure > top:
                    top, top_j, top_s = s.fmeasure, j, s
            if top_s is None:
                details.append({"best_reference": None})
                continue
            scores[i] = top
            details.append(
                {
                    "best_reference": rs[top_j],
                    "precision": top_s.precision,
                    "recall": top_s.recall,
                    "fmeasure": top_s.fmeasure,
                }
            )
        return scores, details


@register
class Rouge1(_Rouge):
    """ROUGE-1 F-measure (unigram overlap) on SQuAD tokens."""

    id = "rouge1"
    rouge_type = "rouge1"
    description = "ROUGE-1 F-measure (rouge-score, SQuAD tokens, max over references)."


@register
class Rouge2(_Rouge):
    """ROUGE-2 F-measure (bigram overlap); 0 when either side has a single token."""

    id = "rouge2"
    rouge_type = "rouge2"
    description = "ROUGE-2 F-measure (rouge-score, SQuAD tokens, max over references)."


@register
class RougeL(_Rouge):
    """ROUGE-L F-measure (longest common subsequence)."""

    id = "rougeL"
    rouge_type = "rougeL"
    description = "ROUGE-L F-measure (rouge-score, SQuAD tokens, max over references)."


@register
class Bleu(_LexicalMetric):
    """Sentence BLEU from NLTK with smoothing, max over references.

    With ``auto_order`` (default) the n-gram order is ``min(max_order, len(candidate),
    len(reference))`` with uniform weights: QA references are often one or two tokens, and
    plain BLEU-4 gives an exact one-word match 0.18 even with smoothing, which no threshold can
    use. ``auto_order=False`` is textbook BLEU-``max_order``. Smoothing is Chen & Cherry's
    method 1 (``epsilon`` added to zero n-gram counts).
    """

    id = "bleu"
    description = "Sentence BLEU (NLTK, smoothing method 1, order adapted to short answers)."

    def __init__(
        self,
        *,
        max_order: int = 4,
        auto_order: bool = True,
        epsilon: float = 0.1,
        threshold: float = 0.5,
    ) -> None:
        self.max_order = max_order
        self.auto_order = auto_order
        self.epsilon = epsilon
        self.threshold = threshold

    def _compute(self, cands, refs):
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        smooth = SmoothingFunction(epsilon=self.epsilon).method1
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            hyp = list(norm_tokens(cand))
            top, top_j, top_n = -1.0, -1, 0
            for j, ref in enumerate(rs):
                rtoks = list(norm_tokens(ref))
                order = self.max_order
                if self.auto_order:
                    order = min(self.max_order, len(hyp), len(rtoks))
                if order <= 0 or not hyp:
                    value = 0.0
                else:
                    weights = (1.0 / order,) * order
                    value = float(
                        sentence_bleu([rtoks], hyp, weights=weights, smoothing_function=smooth)
                    )
                if value > top:
                    top, top_j, top_n = value, j, order
            scores[i] = max(top, 0.0)
            details.append({"best_reference": _ref_at(rs, top_j), "order": top_n})
        return scores, details


@register
class Meteor(_LexicalMetric):
    """METEOR (Banerjee & Lavie 2005) from NLTK: unigram alignment on exact words, Porter
    stems and WordNet synonyms, F-mean weighted to recall with a fragmentation penalty.

    WordNet comes from ``QAEVAL_WORDNET_DIR``, Debian's ``wordnet-base`` (copied into the cache
    with a generated ``lexnames``) or NLTK's data path; it is consulted through
    :class:`StemAwareWordNet` because NLTK looks synonyms up on Porter stems. Without
    WordNet the metric still runs with exact and stem matching only and says so in every
    item's ``details``; whether WordNet is available is part of :meth:`config`, so stored
    scores of the two modes never mix.
    """

    id = "meteor"
    description = "METEOR (NLTK; exact, stem and WordNet-synonym matches), max over references."

    def __init__(
        self,
        *,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        synonyms: bool = True,
        threshold: float = 0.5,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.synonyms = synonyms
        self.threshold = threshold

    def _wordnet_reader(self) -> tuple[Any, bool, str]:
        if not self.synonyms:
            return NoSynonyms(), False, "synonyms disabled (synonyms=False)"
        reader, note = wordnet()
        if reader is None:
            return NoSynonyms(), False, note
        return reader, True, note

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg["wordnet"] = bool(self.synonyms and wordnet_present())
        return cfg

    def _compute(self, cands, refs):
        from nltk.stem.porter import PorterStemmer
        from nltk.translate.meteor_score import single_meteor_score

        lexicon, has_wn, note = self._wordnet_reader()
        stemmer = PorterStemmer()
        if has_wn:
            lexicon = StemAwareWordNet(lexicon, stemmer)
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            hyp = list(norm_tokens(cand))
            top, top_j = -1.0, -1
            for j, ref in enumerate(rs):
                rtoks = list(norm_tokens(ref))
                if not hyp or not rtoks:
                    value = 0.0
                else:
                    value = float(
                        single_meteor_score(
                            rtoks,
                            hyp,
                            stemmer=stemmer,
                            wordnet=lexicon,
                            alpha=self.alpha,
                            beta=self.beta,
                            gamma=self.gamma,
                        )
                    )
                if value > top:
                    top, top_j = value, j
            scores[i] = max(top, 0.0)
            detail: dict[str, Any] = {"best_reference": _ref_at(rs, top_j), "wordnet": has_wn}
            if not has_wn:
                detail["note"] = note
            details.append(detail)
        return scores, details


# --------------------------------------------------------------------------------------------
# VQA accuracy
# --------------------------------------------------------------------------------------------


class _VQA(_LexicalMetric):
    """VQA accuracy family. ``full_at`` references must agree for a score of 1 (3 in VQA);
    with at least ``loo_min`` references (10 in VQA) the score is averaged over the
    leave-one-out subsets. The default threshold 0.3 is what one matching reference gets
    among 10 (and 1/3 >= 0.3 with fewer), i.e. "at least one reference agrees"."""

    _fn: ClassVar[Callable[..., tuple[float, Any]]]

    def __init__(self, *, full_at: int = 3, loo_min: int = 10, threshold: float = 0.3) -> None:
        self.full_at = full_at
        self.loo_min = loo_min
        self.threshold = threshold


@register
class VQAAccuracy(_VQA):
    """VQA accuracy (Antol et al. 2015) on SQuAD-normalised strings."""

    id = "vqa_accuracy"
    description = "VQA accuracy: min(#equal references / 3, 1), leave-one-out with 10 refs."

    def _compute(self, cands, refs):
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            acc, matches = vqa_accuracy(cand, rs, full_at=self.full_at, loo_min=self.loo_min)
            scores[i] = acc
            cn = normalize(cand)
            best = next((r for r in rs if normalize(r) == cn), None)
            details.append({"best_reference": best, "matches": matches, "n_references": len(rs)})
        return scores, details


@register
class SoftVQAAccuracy(_VQA):
    """Soft VQA accuracy (Hu et al. 2022): equality replaced by 1 - character error rate."""

    id = "soft_vqa_accuracy"
    description = "Soft VQA accuracy: VQA accuracy with 1 - CER (rapidfuzz) instead of equality."

    def _compute(self, cands, refs):
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            acc, sims = soft_vqa_accuracy(cand, rs, full_at=self.full_at, loo_min=self.loo_min)
            scores[i] = acc
            j = int(np.argmax(sims)) if sims and max(sims) > 0 else -1
            details.append(
                {
                    "best_reference": _ref_at(rs, j),
                    "best_similarity": sims[j] if j >= 0 else 0.0,
                    "n_references": len(rs),
                }
            )
        return scores, details
