"""PANDA: tf-idf of (candidate, reference, question) + token overlap, logistic regression
(papers/panda.txt, section 4 and appendix C).

Features per (candidate, reference, question) triple, all SQuAD-normalised:

* unigram tf-idf of the text "candidate [SEP] reference [SEP] question" (l2-normalised, smooth
  idf, as scikit-learn's ``TfidfVectorizer`` defaults); the ``[CLS]``/``[SEP]`` markers of the
  paper's format are constant tokens in every row, so they are left out of the bag of words;
  tokens are whitespace tokens of the normalised text, single characters and digits included
  (``TfidfVectorizer``'s default pattern would drop "8" or "a");
* token F1, precision and recall between candidate and reference (SQuAD bag-of-tokens; the
  ``qa-metrics`` package uses sets and swaps precision and recall, which does not matter for a
  model trained on its own features).

Classifier: ``SGDClassifier(loss="log_loss", penalty="l2", tol=1e-3, random_state=668)``, the
paper's settings. The metric's score is P(correct), max over references; correct when >= 0.5.
The authors' package (PEDANTS) adds rule and question-type classifiers and short-circuits to
correct when the reference is contained in the candidate; PANDA as published does neither, and
neither do we.

Model files are **data**: vocabulary, idf, coefficients and intercept in gzip-compressed JSON
(``PandaClassifier.save`` / ``load``). Loading parses JSON and checks shapes and types; it
cannot run code (no pickle). Prediction does not use scikit-learn at all: the tf-idf dot
product is computed from token ids with numpy (one ``np.unique`` over the batch), which is what
makes batch scoring fast. The shipped default was trained by ``scripts/train_panda.py``.

Why it is one module: PANDA's features, its classifier and the metric that applies the shipped
weights are one method; the features are shared by fitting (scripts/train_panda.py, the refitted
combiner) and scoring, so they live next to each other.
"""

from __future__ import annotations

import gzip
import json
import unicodedata
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import resources
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item
from qaeval_core.text.profiles import (
    ProfileParam,
    check_profile,
    profile_text,
    reader_text,
)
from qaeval_core.text.squad import PUNCTUATION

__all__ = [
    "Panda",
    "PandaClassifier",
    "DEFAULT_MODEL_FILE",
    "Triple",
    "load_default_classifier",
    "overlap_features",
    "panda_tokens",
    "tfidf_dot",
]

DEFAULT_MODEL_FILE = "panda_default.json.gz"
_FORMAT = "qaeval-panda"
_FORMAT_VERSION = 1
#: One PANDA input: (candidate, reference, question).
Triple = tuple[str, str, str]


# -- pure feature functions -------------------------------------------------------------------
def _as_triples(X: Any) -> list[Triple]:
    """(candidate, reference, question) triples from a sequence of triples or a DataFrame with
    those columns."""
    cols = ("candidate", "reference", "question")
    if hasattr(X, "columns"):
        missing = [c for c in cols if c not in X.columns]
        if missing:
            raise ValueError(
                f"expected format: a DataFrame with columns {list(cols)}; missing {missing}"
            )
        rows = zip(*(X[c].tolist() for c in cols), strict=True)
    else:
        rows = X
    out: list[Triple] = []
    for k, row in enumerate(rows):
        if isinstance(row, str) or len(row) != 3:
            raise ValueError(
                f"expected format: (candidate, reference, question) triples; row {k} is {row!r}"
            )
        out.append(tuple("" if v is None else str(v) for v in row))  # type: ignore[arg-type]
    return out


_ARTICLES = frozenset({"a", "an", "the"})
_PUNCT = str.maketrans({c: " " for c in PUNCTUATION})


@lru_cache(maxsize=200_000)
def panda_tokens(text: str) -> tuple[str, ...]:
    """SQuAD-normalised tokens (lowercase, punctuation -> space, no articles), computed
    without regular expressions: the tokens of :func:`qaeval_core.text.squad.normalize_answer`
    (NFKC only for non-ASCII text), about 4x faster, which is most of PANDA's cost."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return tuple(w for w in text.lower().translate(_PUNCT).split() if w not in _ARTICLES)


def panda_token_lists(texts: Sequence[str]) -> list[tuple[str, ...]]:
    return [panda_tokens(t) for t in texts]


def overlap_features(cands: Sequence[Sequence[str]], refs: Sequence[Sequence[str]]) -> np.ndarray:
    """(n, 3) array of SQuAD token F1, precision and recall per (candidate, reference) pair of
    token lists, vectorised over the batch. Two empty sides give 1, one empty side gives 0."""
    n = len(cands)
    if n == 0:
        return np.zeros((0, 3))
    local: dict[str, int] = {}
    c_ids = [local.setdefault(t, len(local)) for toks in cands for t in toks]
    r_ids = [local.setdefault(t, len(local)) for toks in refs for t in toks]
    len_c = np.fromiter((len(t) for t in cands), dtype=np.int64, count=n)
    len_r = np.fromiter((len(t) for t in refs), dtype=np.int64, count=n)
    width = max(1, len(local))
    kc = np.repeat(np.arange(n, dtype=np.int64), len_c) * width + np.asarray(c_ids, np.int64)
    kr = np.repeat(np.arange(n, dtype=np.int64), len_r) * width + np.asarray(r_ids, np.int64)
    uc, cc = np.unique(kc, return_counts=True)
    ur, cr = np.unique(kr, return_counts=True)
    _, ic, ir = np.intersect1d(uc, ur, assume_unique=True, return_indices=True)
    common = np.bincount(uc[ic] // width, weights=np.minimum(cc[ic], cr[ir]), minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(len_c > 0, common / np.maximum(len_c, 1), 0.0)
        recall = np.where(len_r > 0, common / np.maximum(len_r, 1), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    both_empty = (len_c == 0) & (len_r == 0)
    one_empty = (len_c == 0) ^ (len_r == 0)
    out = np.column_stack([f1, precision, recall])
    out[both_empty] = 1.0
    out[one_empty] = 0.0
    return out


def tfidf_dot(
    docs: Sequence[Sequence[str]],
    vocabulary: dict[str, int],
    idf: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    """``l2_normalise(tf * idf) @ weights`` per document, without building the matrix.

    Equals ``TfidfVectorizer(norm="l2").transform(docs) @ weights`` for a vectorizer with this
    vocabulary and idf; unknown tokens are ignored, as there.
    """
    n = len(docs)
    if n == 0:
        return np.zeros(0)
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=n)
    flat = [t for d in docs for t in d]
    ids = np.fromiter(map(vocabulary.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))
    doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
    known = ids >= 0
    size = max(1, len(vocabulary))
    keys, counts = np.unique(doc[known] * size + ids[known], return_counts=True)
    d, t = keys // size, keys % size
    w = counts * idf[t]
    norm = np.sqrt(np.bincount(d, weights=w * w, minlength=n))
    dot = np.bincount(d, weights=w * weights[t], minlength=n)
    return np.divide(dot, norm, out=np.zeros(n), where=norm > 0)


# -- the estimator ----------------------------------------------------------------------------
class PandaClassifier(ClassifierMixin, BaseEstimator):
    """PANDA answer-correctness classifier, a scikit-learn estimator.

    ``fit`` / ``predict`` / ``predict_proba`` / ``decision_function`` / ``score`` (accuracy,
    from ``ClassifierMixin``); ``get_params`` / ``set_params`` / ``clone`` work as for any
    scikit-learn estimator. ``save`` / ``load`` write and read the fitted model as JSON data.

    ``X`` is a sequence of (candidate, reference, question) triples (or a DataFrame with those
    columns); ``y`` is 1 (correct) / 0 (incorrect).

    Parameters (the paper's: log loss, l2, tol=1e-3, random_state=668; the rest are
    scikit-learn's defaults): loss, penalty, alpha, tol, max_iter, random_state; min_df and
    max_features of the tf-idf vocabulary.

    Examples
    --------
    >>> X = [("Paris", "Paris", "capital of France?"), ("Lyon", "Paris", "capital of France?"),
    ...      ("It is Paris.", "Paris", "capital of France?"), ("Rome", "Paris", "capital?")]
    >>> clf = PandaClassifier().fit(X, [1, 0, 1, 0])
    >>> clf.predict([("Paris", "Paris", "capital of France?")]).tolist()
    [1]
    """

    def __init__(
        self,
        *,
        loss: str = "log_loss",
        penalty: str = "l2",
        alpha: float = 1e-4,
        tol: float = 1e-3,
        max_iter: int = 1000,
        random_state: int | None = 668,
        min_df: int = 1,
        max_features: int | None = None,
    ) -> None:
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.min_df = min_df
        self.max_features = max_features

    @staticmethod
    def _docs(
        triples: Sequence[Triple],
    ) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
        cands = panda_token_lists([t[0] for t in triples])
        refs = panda_token_lists([t[1] for t in triples])
        qs = panda_token_lists([t[2] for t in triples])
        return cands, refs, qs

    def fit(self, X: Any, y: Any) -> PandaClassifier:
        """Learn the vocabulary, idf and the logistic-regression weights; returns self."""
        from scipy.sparse import csr_matrix, hstack
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import SGDClassifier

        triples = _as_triples(X)
        y = np.asarray(y).astype(int).ravel()
        if len(triples) != len(y):
            raise ValueError(f"X has {len(triples)} rows but y has {len(y)} labels")
        if not set(np.unique(y)) <= {0, 1} or len(np.unique(y)) < 2:
            raise ValueError(f"y must contain both labels 0 and 1, got {sorted(set(y.tolist()))}")
        cands, refs, qs = self._docs(triples)
        docs = [" ".join(c + r + q) for c, r, q in zip(cands, refs, qs, strict=True)]
        vec = TfidfVectorizer(
            lowercase=False,
            token_pattern=r"\S+",
            min_df=self.min_df,
            max_features=self.max_features,
        )
        text = vec.fit_transform(docs)
        feats = hstack([text, csr_matrix(overlap_features(cands, refs))]).tocsr()
        clf = SGDClassifier(
            loss=self.loss,
            penalty=self.penalty,
            alpha=self.alpha,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=self.random_state,
        ).fit(feats, y)
        terms = vec.get_feature_names_out().tolist()
        self.vocabulary_ = {t: k for k, t in enumerate(terms)}
        self.idf_ = np.asarray(vec.idf_, dtype=float)
        coef = np.asarray(clf.coef_, dtype=float).ravel()
        self.coef_text_ = coef[: len(terms)]
        self.coef_overlap_ = coef[len(terms) :]
        self.intercept_ = float(np.asarray(clf.intercept_).ravel()[0])
        self.classes_ = np.array([0, 1])
        self.n_iter_ = int(np.max(clf.n_iter_))
        return self

    def _check_fitted(self) -> None:
        check_is_fitted(self, ["coef_text_", "coef_overlap_", "idf_", "vocabulary_"])

    def decision_function(self, X: Any) -> np.ndarray:
        """Log-odds of 'correct' per row (vectorised over the batch)."""
        self._check_fitted()
        triples = _as_triples(X)
        cands, refs, qs = self._docs(triples)
        docs = [c + r + q for c, r, q in zip(cands, refs, qs, strict=True)]
        text = tfidf_dot(docs, self.vocabulary_, self.idf_, self.coef_text_)
        return text + overlap_features(cands, refs) @ self.coef_overlap_ + self.intercept_

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2) array: P(incorrect), P(correct)."""
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]

    # -- persistence (data only) --------------------------------------------------------------
    def to_dict(self, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        self._check_fitted()
        terms = sorted(self.vocabulary_, key=self.vocabulary_.__getitem__)
        return {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "params": self.get_params(),
            "features": ["tfidf(candidate reference question)", "f1", "precision", "recall"],
            "vocabulary": terms,
            "idf": [float(f"{v:.7g}") for v in self.idf_],
            "coef_text": [float(f"{v:.7g}") for v in self.coef_text_],
            "coef_overlap": [float(v) for v in self.coef_overlap_],
            "intercept": self.intercept_,
            "metadata": metadata or {},
        }

    def save(self, path: str | Path, metadata: dict[str, Any] | None = None) -> Path:
        """Write the model as gzip-compressed JSON (``.json.gz``) or plain JSON."""
        path = Path(path)
        blob = json.dumps(self.to_dict(metadata), separators=(",", ":")).encode("utf-8")
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(blob, compresslevel=9, mtime=0))
        else:
            path.write_bytes(blob)
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PandaClassifier:
        """Rebuild a fitted classifier from :meth:`to_dict` output, checking every field."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ConfigError(f"Not a qaeval PANDA model: expected format {_FORMAT!r}.")
        if data.get("format_version") != _FORMAT_VERSION:
            raise ConfigError(
                f"PANDA model format_version {data.get('format_version')!r} is not supported "
                f"(expected {_FORMAT_VERSION}); retrain with scripts/train_panda.py."
            )
        vocab = data.get("vocabulary")
        if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
            raise ConfigError("PANDA model: 'vocabulary' must be a list of strings.")
        arrays = {}
        for key, size in (("idf", len(vocab)), ("coef_text", len(vocab)), ("coef_overlap", 3)):
            values = data.get(key)
            if not isinstance(values, list) or len(values) != size:
                raise ConfigError(f"PANDA model: {key!r} must be a list of {size} numbers.")
            arr = np.asarray(values, dtype=float)
            if not np.all(np.isfinite(arr)):
                raise ConfigError(f"PANDA model: {key!r} contains non-finite numbers.")
            arrays[key] = arr
        intercept = data.get("intercept")
        if not isinstance(intercept, (int, float)) or not np.isfinite(intercept):
            raise ConfigError("PANDA model: 'intercept' must be a finite number.")
        known = cls().get_params()
        params = {k: v for k, v in (data.get("params") or {}).items() if k in known}
        clf = cls(**params)
        clf.vocabulary_ = {t: k for k, t in enumerate(vocab)}
        clf.idf_ = arrays["idf"]
        clf.coef_text_ = arrays["coef_text"]
        clf.coef_overlap_ = arrays["coef_overlap"]
        clf.intercept_ = float(intercept)
        clf.classes_ = np.array([0, 1])
        clf.metadata_ = dict(data.get("metadata") or {})
        return clf

    @classmethod
    def load(cls, path: str | Path) -> PandaClassifier:
        """Load a model written by :meth:`save` (JSON only; nothing is executed)."""
        path = Path(path)
        try:
            raw = path.read_bytes()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            data = json.loads(raw.decode("utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"PANDA model file not found: {str(path)!r}.") from None
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"PANDA model {str(path)!r} is not valid (gzip) JSON: {exc}"
            ) from None
        return cls.from_dict(data)


@cache
def load_default_classifier() -> PandaClassifier:
    """The shipped default model (``qaeval_core/data/panda_default.json.gz``)."""
    ref = resources.files("qaeval_core.data") / DEFAULT_MODEL_FILE
    with resources.as_file(ref) as path:
        return PandaClassifier.load(path)


@cache
def _load_path(path: str) -> PandaClassifier:
    return PandaClassifier.load(path)


# -- the metric -------------------------------------------------------------------------------
@register
class Panda(ProfileParam, Metric):
    """PANDA: P(correct) from the shipped (or a given) classifier, max over references.

    Parameters
    ----------
    model_path : a model file written by ``PandaClassifier.save``; None uses the shipped
        default (trained on the PANDA augmented training set, see scripts/train_panda.py).
    threshold : correct when P(correct) >= threshold.
    normalize : "spaced" (default) or "squad" feeds the raw strings; "robust" feeds the candidate as
        read against the item's references (:func:`qaeval_core.text.profiles.reader_text`:
        formatting removed, glued tokens split, footnote digits dropped) and candidate and
        references with numbers and dates canonical
        (:func:`qaeval_core.text.profiles.profile_text`); no lemmas, which would move the tf-idf
        features away from the ones the classifier was trained on.
    """

    id = "panda"
    family = "panda"
    calibrate_by_default = True
    version = "1"
    kind = "learned"
    description = "PANDA: tf-idf + token F1/precision/recall logistic regression (Li et al.)"
    needs_models = False
    repairs_glue = True

    def __init__(
        self, *, model_path: str | None = None, threshold: float = 0.5, normalize: str = "spaced"
    ) -> None:
        self.model_path = model_path
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def classifier(self) -> PandaClassifier:
        return _load_path(str(self.model_path)) if self.model_path else load_default_classifier()

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        clf = self.classifier()
        owner: list[int] = []
        triples: list[Triple] = []
        prof = self.normalize
        for i, it in enumerate(items):
            refs = [str(r) for r in it.references if r is not None and str(r).strip()] or [""]
            cand = it.candidate or ""
            if prof == "robust":
                cand = profile_text(reader_text(cand, refs), prof)
            for r in refs:
                owner.append(i)
                triples.append((cand, profile_text(r, prof), it.question or ""))
        n = len(items)
        scores = np.zeros(n)
        if not triples:
            return MetricResult(scores, self.decide(scores), [{} for _ in range(n)])
        probs = clf.predict_proba(triples)[:, 1]
        owner_arr = np.asarray(owner)
        np.maximum.at(scores, owner_arr, probs)
        # best reference per item: the first pair reaching the item's max
        best: dict[int, int] = {}
        for p, i in enumerate(owner):
            if i not in best and probs[p] >= scores[i]:
                best[i] = p
        details = [
            {"best_reference": triples[best[i]][1], "probability": round(float(scores[i]), 6)}
            if i in best
            else {}
            for i in range(n)
        ]
        return MetricResult(scores, self.decide(scores), details)
