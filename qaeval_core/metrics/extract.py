"""Short-answer extraction in front of any metric (multi-layer fusion paper, section 3).

Long, chatty candidates defeat lexical metrics; the fusion paper reads the candidate as a
context with an extractive QA model (deepset/roberta-base-squad2) and scores the returned span
instead (+40-60 points of accuracy for lexical metrics on short answers).

Two extractors:

* ``qa_model=<path or hub name>``: any extractive QA model (``AutoModelForQuestionAnswering``).
  transformers 5 removed the ``question-answering`` pipeline, so the SQuAD decoding it did is
  done here: question + candidate windows (``max_seq_len`` tokens, ``stride`` overlap), the
  best span (start <= end, at most ``max_answer_len`` tokens, inside the candidate) by
  start + end logit over all windows. The null (no-answer) span of SQuAD 2 models is not
  allowed: a metric needs some text to score.
* offline fallback (default; no extractive QA model ships offline): (1) a candidate of at most
  ``short_tokens`` words is returned unchanged; (2) otherwise each sentence is scored by its
  cosine to the question, since answers usually restate the question ("The capital of France
  is Paris."); (3) the spans left after removing the question's words (maximal runs of words
  not in the question, trimmed of function words, and their pieces between function words)
  are scored by a rule for the coarse answer kind from the wh-words (number: digits or number
  words; date: a year or a month; name: a capitalised word) and by cosine to a prototype of
  the expected type ("who" -> "a person's name", "when" -> "a date or a year", "where" -> "a
  place", "how many" -> "a number", else the question itself); the (sentence, span) pair
  maximising ``cos(sentence, question) + kind_match + 0.3 * follows_question_word +
  0.25 * cos(span, prototype) - 0.03 * rank`` wins (answers tend to follow the restated
  question, "... is Paris", and to come early: rank = position of the span in its sentence);
  (4) if no span is left, the sentence most similar to the question is returned.
  **Decision:** the reference is deliberately *not* used to pick the
  span: choosing the span closest to the reference would leak the gold answer and turn every
  lexical metric into "is the reference somewhere in the text".

Use it as the wrapper metric ``extract`` with the inner metric as a parameter:
``get_metric("extract", metric="f1")``.

Why it is one module: short-answer extraction is one pipeline (candidate spans, their ranking,
the wrapped metric) whose stages share the span representation; none is used alone.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from qaeval_core.errors import ConfigError, ModelLoadError
from qaeval_core.metrics.base import Metric, MetricResult, get_metric, metric_class, register
from qaeval_core.models.embedding_cache import EncodingRequest, get_cache
from qaeval_core.models.loading import (
    DEFAULT_EMBEDDING_MODEL,
    choose_device,
    resolve_model_path,
)
from qaeval_core.schema import Item
from qaeval_core.text.numbers import NUMBER_WORDS
from qaeval_core.text.profiles import ProfileParam, check_profile, reader_items
from qaeval_core.text.squad import normalize_answer

__all__ = [
    "Extraction",
    "Extract",
    "answer_kind",
    "answer_type_prototype",
    "best_span",
    "candidate_spans",
    "extract_answers",
    "load_extractive_qa",
    "split_sentences",
    "type_match",
]


class Extraction(NamedTuple):
    text: str
    #: "model", "model-nospan" (no span fitted: the whole candidate), "fallback", "short"
    #: (returned unchanged) or "empty".
    method: str
    score: float


# -- pure helpers -----------------------------------------------------------------------------
def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_SENT_BREAK = re.compile(r"(?<=[.!?;])\s+(?=[\"'(\[A-Z0-9])|\n+")
_WORD = re.compile(r"\S+")
_FUNCTION_WORDS = _wordset(
    """a an the is are was were be been being am do does did has have had of in on at to for
    from by with as and or but so that this these those it its it's he she they them his her
    their there here which who whom whose what when where why how not no yes i you we me my
    your our will would can could should may might must also about into than then around near
    after before during since until over under between through across against among within
    without via per like upon onto off out up down because while although if whether"""
)
_TYPE_PROTOTYPES = (
    (("how", "many"), "a number"),
    (("how", "much"), "an amount or a quantity"),
    (("how", "long"), "a duration or a length"),
    (("how", "old"), "an age in years"),
    (("what", "year"), "a year"),
    (("which", "year"), "a year"),
    (("who",), "a person's name"),
    (("whom",), "a person's name"),
    (("whose",), "a person's name"),
    (("when",), "a date or a year"),
    (("where",), "a place or a location"),
)


#: Words that say an answer holds a number: the number words of :mod:`~qaeval_core.text.numbers`
#: and two quantities they leave out.
_NUMBER_WORDS = NUMBER_WORDS | {"dozen", "half"}
_MONTHS = _wordset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec"""
)
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")


def answer_kind(question: str) -> str:
    """Coarse expected answer kind from the wh-words: number, date, name or other."""
    toks = normalize_answer(question).split()
    joined = f" {' '.join(toks)} "
    if any(f" how {w} " in joined for w in ("many", "much", "old", "long", "far", "tall")):
        return "number"
    if " when " in joined or " what year " in joined or " which year " in joined:
        return "date"
    if any(f" {w} " in joined for w in ("who", "whom", "whose", "where")):
        return "name"
    return "other"


def type_match(span: str, kind: str) -> bool:
    """Whether ``span`` looks like an answer of ``kind`` (digits / number words, a year or a
    month, a capitalised word)."""
    words = [w.strip(",.;:()\"'") for w in span.split()]
    if kind == "number":
        return any(any(ch.isdigit() for ch in w) or w.lower() in _NUMBER_WORDS for w in words)
    if kind == "date":
        return bool(_YEAR.search(span)) or any(w.lower() in _MONTHS for w in words)
    if kind == "name":
        return any(w[:1].isupper() for w in words)
    return False


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines) of a text, without empty pieces."""
    return [s.strip() for s in _SENT_BREAK.split(text.strip()) if s and s.strip()]


def answer_type_prototype(question: str) -> str:
    """A short description of the expected answer type, from the question's wh-words."""
    toks = normalize_answer(question).split()
    for i in range(len(toks)):
        for key, proto in _TYPE_PROTOTYPES:
            if tuple(toks[i : i + len(key)]) == key:
                return proto
    return question


def _spans(sentence: str, question: str) -> list[tuple[str, bool]]:
    """(span, follows a question word) pairs; see :func:`candidate_spans`."""
    qwords = set(normalize_answer(question).split())
    spans: list[tuple[str, bool]] = []

    def trimmed(words: list[str]) -> str:
        a, b = 0, len(words)
        while a < b and normalize_answer(words[a]) in _FUNCTION_WORDS | {""}:
            a += 1
        while b > a and normalize_answer(words[b - 1]) in _FUNCTION_WORDS | {""}:
            b -= 1
        return " ".join(words[a:b]).strip(" ,;:.!?\"'()[]")

    def close(run: list[str], after_question: bool) -> None:
        whole = trimmed(run)
        if not whole:
            return
        piece: list[str] = []
        first = True
        pieces = 0
        for w in [*run, "the"]:  # "the" flushes the last piece
            if normalize_answer(w) in _FUNCTION_WORDS | {""}:
                part = trimmed(piece)
                if part and part != whole:
                    spans.append((part, after_question and first))
                    pieces += 1
                if piece:
                    first = False
                piece = []
            else:
                piece.append(w)
        # the bonus goes to the precise span: the whole run only when it is a single piece
        spans.append((whole, after_question and pieces == 0))

    run: list[str] = []
    after_question = False
    for word in _WORD.findall(sentence):
        norm = normalize_answer(word)
        if norm and all(t in qwords for t in norm.split()):
            close(run, after_question)
            run, after_question = [], True
        else:
            if not run and not norm:
                continue
            run.append(word)
    close(run, after_question)
    seen: dict[str, bool] = {}
    for span, after in spans:
        if span and span not in seen:
            seen[span] = after
    return list(seen.items())


def candidate_spans(sentence: str, question: str) -> list[str]:
    """Answer-span candidates of ``sentence``, in order: for each maximal run of words that are
    not question words, its pieces between function words, then the whole run trimmed of
    function words at both ends. Original spelling; edge punctuation stripped."""
    return [span for span, _ in _spans(sentence, question)]


def best_span(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    allowed: np.ndarray,
    max_answer_len: int,
) -> tuple[int, int, float]:
    """(start, end, score) of the best span: start <= end < start + max_answer_len, both at
    allowed positions, maximising start + end logit. (-1, -1, -inf) when none is allowed."""
    s = np.where(allowed, start_logits, -np.inf)
    e = np.where(allowed, end_logits, -np.inf)
    total = s[:, None] + e[None, :]
    n = len(s)
    i, j = np.indices((n, n))
    total[(j < i) | (j - i >= max_answer_len)] = -np.inf
    flat = int(np.argmax(total))
    a, b = divmod(flat, n)
    score = float(total[a, b])
    if not np.isfinite(score):
        return -1, -1, float("-inf")
    return a, b, score


# -- extractive QA model ----------------------------------------------------------------------
_LOCK = threading.Lock()


@cache
def _qa_model(path: str, device: str) -> tuple[Any, Any]:
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForQuestionAnswering.from_pretrained(path)
    if device.startswith("cuda"):
        model.half()
    model.to(device)
    model.eval()
    return model, tok


def load_extractive_qa(name_or_path: str, device: str | None = None) -> tuple[Any, Any]:
    """(model, fast tokenizer) of an extractive QA model by path or hub name; loaded once."""
    dev = choose_device(device)
    path = resolve_model_path(name_or_path)
    with _LOCK:
        try:
            model, tok = _qa_model(path, dev)
        except Exception as exc:
            raise ModelLoadError(
                f"Could not load extractive QA model {name_or_path!r}: {exc}. Give a local "
                "folder or a hub name (e.g. deepset/roberta-base-squad2) while online, or "
                "leave qa_model unset for the offline fallback."
            ) from exc
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(
            f"Extractive QA model {name_or_path!r} needs a fast tokenizer (offset mapping)."
        )
    return model, tok


def _extract_with_model(
    questions: Sequence[str],
    contexts: Sequence[str],
    qa_model: str,
    device: str | None,
    *,
    max_answer_len: int = 30,
    max_seq_len: int = 384,
    stride: int = 128,
    batch_size: int = 16,
) -> list[Extraction]:
    import torch

    model, tok = load_extractive_qa(qa_model, device)
    enc = tok(
        list(questions),
        list(contexts),
        truncation="only_second",
        max_length=max_seq_len,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=True,
        return_tensors="pt",
    )
    sample_of = enc.pop("overflow_to_sample_mapping").tolist()
    offsets = enc.pop("offset_mapping").tolist()
    seq_ids = [enc.sequence_ids(k) for k in range(len(sample_of))]
    inputs = {
        k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")
    }
    best: dict[int, tuple[float, int, int]] = {}
    with torch.inference_mode():
        for s in range(0, len(sample_of), batch_size):
            batch = {k: v[s : s + batch_size].to(model.device) for k, v in inputs.items()}
            out = model(**batch)
            starts = out.start_logits.float().cpu().numpy()
            ends = out.end_logits.float().cpu().numpy()
            for row in range(starts.shape[0]):
                f = s + row
                allowed = np.array([sid == 1 for sid in seq_ids[f]])
                a, b, score = best_span(starts[row], ends[row], allowed, max_answer_len)
                if a < 0:
                    continue
                smp = sample_of[f]
                c0, c1 = offsets[f][a][0], offsets[f][b][1]
                if smp not in best or score > best[smp][0]:
                    best[smp] = (score, c0, c1)
    result = []
    for k, ctx in enumerate(contexts):
        if k in best:
            score, c0, c1 = best[k]
            result.append(Extraction(ctx[c0:c1].strip(), "model", score))
        else:
            result.append(Extraction(ctx, "model-nospan", 0.0))
    return result


# -- offline fallback -------------------------------------------------------------------------
def _fallback_plans(
    questions: Sequence[str], contexts: Sequence[str]
) -> tuple[list[tuple[list[str], list[Any], str]], list[str]]:
    """Per context its sentences, their candidate spans and the question's answer-type
    prototype; and every text the fallback embeds (unique, in order)."""
    plans: list[tuple[list[str], list[Any], str]] = []
    texts: list[str] = []
    for q, c in zip(questions, contexts, strict=True):
        sents = split_sentences(c) or [c]
        spans = [_spans(s, q) for s in sents]
        proto = answer_type_prototype(q)
        plans.append((sents, spans, proto))
        texts.extend([q, proto, *sents, *(sp for group in spans for sp, _ in group)])
    return plans, list(dict.fromkeys(t for t in texts if t))


def _extract_fallback(
    questions: Sequence[str],
    contexts: Sequence[str],
    *,
    model: str,
    device: str | None,
    short_tokens: int,
) -> list[Extraction]:
    plans, unique = _fallback_plans(questions, contexts)
    emb = get_cache(model, device).encode(unique) if unique else np.zeros((0, 1))
    pos = {t: k for k, t in enumerate(unique)}
    out = []
    for q, (sents, spans, proto) in zip(questions, plans, strict=True):
        qv = emb[pos[q]] if q in pos else np.zeros(emb.shape[1])
        pv = emb[pos[proto]] if proto in pos else qv
        # joint choice: a sentence relevant to the question and, in it, an early span of the
        # expected answer kind (rule) and type (embedding, as a tie-breaker)
        kind = answer_kind(q)
        best: tuple[float, str] | None = None
        for sent, group in zip(sents, spans, strict=True):
            rel = float(emb[pos[sent]] @ qv)
            for rank, (sp, after_question) in enumerate(group):
                score = (
                    rel
                    + float(type_match(sp, kind))
                    + 0.3 * after_question
                    + 0.25 * float(emb[pos[sp]] @ pv)
                    - 0.03 * rank
                )
                if best is None or score > best[0]:
                    best = (score, sp)
        if best is None:
            k = int(np.argmax([float(emb[pos[s]] @ qv) for s in sents]))
            out.append(Extraction(sents[k], "fallback", 0.0))
        else:
            out.append(Extraction(best[1], "fallback", best[0]))
    return out


def _to_extract(
    candidates: Sequence[str],
    qa_model: str | None,
    short_tokens: int,
    out: list[Extraction | None] | None = None,
) -> list[int]:
    """Positions of the candidates that need extracting; the others' results go in ``out``
    (empty, or already short enough without a QA model)."""
    todo: list[int] = []
    for k, c in enumerate(candidates):
        c = (c or "").strip()
        if not c:
            if out is not None:
                out[k] = Extraction("", "empty", 0.0)
        elif qa_model is None and len(normalize_answer(c).split()) <= short_tokens:
            if out is not None:
                out[k] = Extraction(c, "short", 1.0)
        else:
            todo.append(k)
    return todo


def extract_answers(
    questions: Sequence[str],
    candidates: Sequence[str],
    *,
    qa_model: str | None = None,
    model: str = DEFAULT_EMBEDDING_MODEL,
    device: str | None = None,
    short_tokens: int = 5,
    max_answer_len: int = 30,
) -> list[Extraction]:
    """The short answer inside each candidate (see the module docstring for both methods)."""
    out: list[Extraction | None] = [None] * len(candidates)
    todo = _to_extract(candidates, qa_model, short_tokens, out)
    if todo:
        qs = [questions[k] or "" for k in todo]
        cs = [candidates[k].strip() for k in todo]
        if qa_model:
            got = _extract_with_model(qs, cs, qa_model, device, max_answer_len=max_answer_len)
        else:
            got = _extract_fallback(qs, cs, model=model, device=device, short_tokens=short_tokens)
        for k, g in zip(todo, got, strict=True):
            out[k] = g
    return [o if o is not None else Extraction("", "empty", 0.0) for o in out]


# -- wrapper metric ---------------------------------------------------------------------------
@register
class Extract(ProfileParam, Metric):
    """Any metric applied to the short answer extracted from each candidate.

    Parameters
    ----------
    metric : id of the inner metric (e.g. "em", "f1", "smile").
    metric_params : parameters of the inner metric.
    qa_model : extractive QA model (path or hub name); None uses the offline fallback.
    model : embedding model of the fallback.
    threshold : None keeps the inner metric's decision and threshold.
    normalize : "robust" reads each candidate against its references
        (:func:`qaeval_core.text.profiles.reader_text`: formatting removed, glued tokens split,
        footnote digits dropped) before extraction and hands ``normalize="robust"`` to the
        inner metric when it takes that parameter and ``metric_params`` does not set it;
        "squad" hands ``normalize="squad"`` (the official SQuAD v1.1 rules) to the inner metric
        the same way; "spaced" (default) does neither.
    """

    id = "extract"
    version = "1"
    kind = "embedding"
    description = "short-answer extraction (extractive QA model or fallback) before a metric"
    needs_models = True
    repairs_glue = True

    def __init__(
        self,
        *,
        metric: str = "f1",
        metric_params: dict[str, Any] | None = None,
        qa_model: str | None = None,
        model: str = DEFAULT_EMBEDDING_MODEL,
        short_tokens: int = 5,
        threshold: float | None = None,
        device: str | None = None,
        normalize: str = "spaced",
    ) -> None:
        self.normalize = check_profile(normalize)
        self.metric = metric
        self.metric_params = metric_params
        self.qa_model = qa_model
        self.model = model
        self.short_tokens = short_tokens
        self.threshold = threshold  # type: ignore[assignment]
        self.device = device

    def inner(self) -> Metric:
        if self.metric == self.id:
            raise ConfigError("extract cannot wrap itself; give metric=<another metric id>.")
        params = dict(self.metric_params or {})
        takes = "normalize" in metric_class(self.metric)._param_names()
        if self.normalize != "spaced" and "normalize" not in params and takes:
            params["normalize"] = self.normalize
        return get_metric(self.metric, **params)

    def decide(self, scores: np.ndarray) -> np.ndarray:
        threshold = self.threshold if self.threshold is not None else self.inner().threshold
        return np.asarray(scores, dtype=float) >= float(threshold)

    def encoding_requests(self, items: Sequence[Item]) -> list[EncodingRequest]:
        """What the offline fallback will embed (nothing with an extractive QA model; the
        inner metric's own texts depend on what is extracted and are not asked ahead)."""
        if self.qa_model:
            return []
        items = reader_items(items, self.normalize)
        todo = _to_extract([it.candidate for it in items], None, int(self.short_tokens))
        qs = [items[k].question or "" for k in todo]
        cs = [items[k].candidate.strip() for k in todo]
        _, texts = _fallback_plans(qs, cs)
        return [EncodingRequest(get_cache(self.model, self.device), texts)] if texts else []

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        inner = self.inner()
        items = reader_items(items, self.normalize)
        got = extract_answers(
            [it.question for it in items],
            [it.candidate for it in items],
            qa_model=self.qa_model,
            model=self.model,
            device=self.device,
            short_tokens=int(self.short_tokens),
        )
        short_items = [
            replace(it, candidate=g.text or it.candidate) for it, g in zip(items, got, strict=True)
        ]
        res = inner.score_batch(short_items)
        decisions = res.decisions if self.threshold is None else self.decide(res.scores)
        details = [
            {**d, "extracted": g.text, "extraction": g.method, "extraction_score": g.score}
            for d, g in zip(res.details, got, strict=True)
        ]
        return MetricResult(res.scores, decisions, details)
