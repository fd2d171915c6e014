"""ROUGE-1/2/L, BLEU and METEOR: the reference implementations (rouge-score, NLTK) on the
tokens every lexical metric shares (``spaced`` by default, ``squad`` or ``robust`` on request).

These are the n-gram and alignment metrics of machine translation and summarisation that the
papers report as baselines. They are not re-written: rouge-score and NLTK compute them, fed
with our memoised, normalised tokens (so "München" stays one token and the comparison sees what
EM and F1 see), max over references like the other lexical metrics. With
``normalize="robust"`` they read the robust profile's tokens
(:mod:`qaeval_core.text.profiles`); ROUGE then scores the token lists with rouge-score's own
n-gram and LCS functions.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from qaeval_core.metrics.base import register
from qaeval_core.metrics.lexical import LexicalMetric, reference_at
from qaeval_core.text.normalize import norm_tokens
from qaeval_core.text.profiles import ProfileParam, check_profile, pair_tokens
from qaeval_core.text.wordnet import (
    NoSynonyms,
    StemAwareWordNet,
    wordnet,
    wordnet_present,
)

__all__ = ["Rouge1", "Rouge2", "RougeL", "Bleu", "Meteor"]


class _TokenizerAdapter:
    """rouge-score tokenizer interface over our memoised ``spaced`` tokens.

    rouge-score's default tokenizer drops every non-ASCII letter ("München" -> "m nchen");
    ``spaced`` tokens keep them and match what the other lexical metrics see.
    """

    def tokenize(self, text: str) -> tuple[str, ...]:
        return norm_tokens(text)


@lru_cache(maxsize=8)
def _rouge_scorer(rouge_type: str) -> Any:
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer([rouge_type], tokenizer=_TokenizerAdapter())


def _rouge_on_tokens(rouge_type: str, ref: tuple[str, ...], cand: tuple[str, ...]) -> Any:
    """rouge-score's Score of two token lists (its scorer only accepts text)."""
    from rouge_score.rouge_scorer import _create_ngrams, _score_lcs, _score_ngrams

    if rouge_type == "rougeL":
        return _score_lcs(ref, cand)
    n = int(rouge_type[5:])
    return _score_ngrams(_create_ngrams(ref, n), _create_ngrams(cand, n))


class _Rouge(ProfileParam, LexicalMetric):
    """ROUGE F-measure from the ``rouge-score`` package, max over references."""

    rouge_type: ClassVar[str] = "rouge1"

    def __init__(self, *, threshold: float = 0.5, normalize: str = "spaced") -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def _compute(self, cands, refs):
        scorer = _rouge_scorer(self.rouge_type)
        rt = self.rouge_type
        prof = self.normalize
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            top, top_j, top_s = -1.0, -1, None
            for j, ref in enumerate(rs):
                if prof == "spaced":
                    s = scorer.score(ref, cand)[rt]
                else:
                    ctoks, rtoks = pair_tokens(cand, ref, prof)
                    s = _rouge_on_tokens(rt, rtoks, ctoks)
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
    family = "ngram"
    calibrate_by_default = True
    rouge_type = "rouge1"
    description = "ROUGE-1 F-measure (rouge-score, spaced tokens, max over references)."


@register
class Rouge2(_Rouge):
    """ROUGE-2 F-measure (bigram overlap); 0 when either side has a single token."""

    id = "rouge2"
    family = "ngram"
    calibrate_by_default = True
    rouge_type = "rouge2"
    description = "ROUGE-2 F-measure (rouge-score, spaced tokens, max over references)."


@register
class RougeL(_Rouge):
    """ROUGE-L F-measure (longest common subsequence)."""

    id = "rougeL"
    family = "ngram"
    calibrate_by_default = True
    rouge_type = "rougeL"
    description = "ROUGE-L F-measure (rouge-score, spaced tokens, max over references)."


@register
class Bleu(ProfileParam, LexicalMetric):
    """Sentence BLEU from NLTK with smoothing, max over references.

    With ``auto_order`` (default) the n-gram order is ``min(max_order, len(candidate),
    len(reference))`` with uniform weights: QA references are often one or two tokens, and
    plain BLEU-4 gives an exact one-word match 0.18 even with smoothing, which no threshold can
    use. ``auto_order=False`` is textbook BLEU-``max_order``. Smoothing is Chen & Cherry's
    method 1 (``epsilon`` added to zero n-gram counts).
    """

    id = "bleu"
    family = "ngram"
    calibrate_by_default = True
    description = "Sentence BLEU (NLTK, smoothing method 1, order adapted to short answers)."

    def __init__(
        self,
        *,
        max_order: int = 4,
        auto_order: bool = True,
        epsilon: float = 0.1,
        threshold: float = 0.5,
        normalize: str = "spaced",
    ) -> None:
        self.max_order = max_order
        self.auto_order = auto_order
        self.epsilon = epsilon
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def _compute(self, cands, refs):
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        smooth = SmoothingFunction(epsilon=self.epsilon).method1
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            hyp = list(norm_tokens(cand))
            top, top_j, top_n = -1.0, -1, 0
            for j, ref in enumerate(rs):
                if self.normalize == "spaced":
                    rtoks = list(norm_tokens(ref))
                else:
                    hyp, rtoks = map(list, pair_tokens(cand, ref, self.normalize))
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
            details.append({"best_reference": reference_at(rs, top_j), "order": top_n})
        return scores, details


@register
class Meteor(ProfileParam, LexicalMetric):
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
    family = "ngram"
    calibrate_by_default = True
    description = "METEOR (NLTK; exact, stem and WordNet-synonym matches), max over references."

    def __init__(
        self,
        *,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        synonyms: bool = True,
        threshold: float = 0.5,
        normalize: str = "spaced",
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.synonyms = synonyms
        self.threshold = threshold
        self.normalize = check_profile(normalize)

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
                if self.normalize == "spaced":
                    rtoks = list(norm_tokens(ref))
                else:
                    hyp, rtoks = map(list, pair_tokens(cand, ref, self.normalize))
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
            detail: dict[str, Any] = {"best_reference": reference_at(rs, top_j), "wordnet": has_wn}
            if not has_wn:
                detail["note"] = note
            details.append(detail)
        return scores, details
