"""Embedding metrics: sentence-embedding cosine and BERTScore-style token matching.

Both compare the candidate with every reference and keep the best (max over references, as
LAVE's S-BERTScore and BERTScore baselines do). Models load by local path, packaged alias or
hub name through :mod:`qaeval_core.models.loading`; the default ``minilm`` is
all-MiniLM-L6-v2 shipped inside a PyPI package, so both work offline. ``device=None`` picks
CUDA when present; ``backend`` picks torch or ONNX Runtime (:mod:`qaeval_core.models.backends`;
ONNX on CPU by default, same scores to float rounding, so neither is part of the configuration
hash).

Both read the shared :mod:`qaeval_core.models.embedding_cache`: one forward pass per unique
string and model gives ``embed_cosine`` its sentence vectors and ``bertscore`` its token
vectors, whichever runs first (the other finds them cached).

* ``embed_cosine``: cosine of unit-normalised sentence embeddings from the shared
  :mod:`qaeval_core.models.embedding_cache` (each unique string is embedded once and
  persisted). The score is the raw cosine clipped to [0, 1] by default (``scale="clip"``),
  because that is what the S-BERTScore baseline and the multi-layer-fusion paper threshold;
  ``scale="shift"`` gives SMILE's ``(1 + cos) / 2`` instead (then a threshold near 0.8
  corresponds to cosine 0.6).
* ``bertscore``: Zhang et al. (2020) greedy matching of contextual token embeddings (the
  model's last layer, [CLS]/[SEP] dropped, no idf weighting, no baseline rescaling): precision
  = mean over candidate tokens of the best cosine with a reference token, recall the other
  way, F1 their harmonic mean. F1 penalises verbose candidates (every extra token lowers
  precision); ``score="recall"`` asks only whether the reference is covered.

``normalize="robust"`` encodes each candidate as read against its references
(:func:`qaeval_core.text.profiles.reader_text`: formatting removed, glued tokens split, footnote
digits dropped); the default ``"spaced"`` (and ``"squad"``) encodes the candidate as given
(the default keeps the config hash both metrics had before the parameter existed). Both
metrics read the same text, so they still share one forward pass per unique string.

Default thresholds (0.6 for ``embed_cosine``, 0.7 for ``bertscore`` F1) are round values in
the flat optimum of balanced accuracy against the human labels of the NQ-301 and MMLU-Pro
rows in ``../shared/data`` (embed_cosine 0.73 / 0.70, bertscore 0.73 / 0.72 there; any value
0.5-0.8 is within 0.035 of the best). Calibrate them for your data rather than trusting them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import BY_MODEL, Metric, MetricResult, register
from qaeval_core.models.backends import hash_params
from qaeval_core.models.embedding_cache import EncodingRequest, get_cache
from qaeval_core.models.loading import DEFAULT_EMBEDDING_MODEL
from qaeval_core.schema import Item
from qaeval_core.text.profiles import ProfileParam, check_profile, reader_items

__all__ = [
    "cosine_max",
    "greedy_match",
    "EmbeddingCosine",
    "BERTScore",
]

#: Parameters that change how fast a metric runs but not what it computes; left out of the
#: config hash so the same scores are reused across devices and batch sizes.
_RUNTIME_PARAMS = ("device", "batch_size")


def _texts(items: Sequence[Item]) -> tuple[list[str], list[tuple[str, ...]]]:
    cands = [c if isinstance(c := it.candidate, str) else str(c) for it in items]
    refs = [tuple(r if isinstance(r, str) else str(r) for r in it.references) for it in items]
    return cands, refs


def cosine_max(
    cand_vecs: np.ndarray, ref_vecs: np.ndarray, ref_owner: np.ndarray, n_items: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per item, the best cosine between its candidate and its references, and which one.

    ``cand_vecs`` is ``(n_items, d)``, ``ref_vecs`` ``(n_refs, d)`` with ``ref_owner[k]`` the
    item of reference row ``k`` (rows grouped by item, in order). Vectors are unit-norm, so
    the row-wise dot product is the cosine. Items without references get NaN and -1.
    """
    best = np.full(n_items, np.nan)
    arg = np.full(n_items, -1, dtype=np.int64)
    if len(ref_vecs) == 0:
        return best, arg
    sims = np.einsum("ij,ij->i", cand_vecs[ref_owner], ref_vecs)
    starts = np.flatnonzero(np.r_[True, ref_owner[1:] != ref_owner[:-1]])
    owners = ref_owner[starts]
    best[owners] = np.maximum.reduceat(sims, starts)
    # First reference reaching the maximum, as a position within its item's list.
    for owner, start, stop in zip(owners, starts, np.r_[starts[1:], len(sims)], strict=True):
        arg[owner] = int(np.argmax(sims[start:stop]))
    return best, arg


def greedy_match(cand: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    """BERTScore precision, recall and F1 of two unit-norm token matrices (rows = tokens).

    >>> import numpy as np
    >>> e = np.eye(3)
    >>> greedy_match(e[:2], e[:1])
    (0.5, 1.0, 0.6666666666666666)
    """
    if len(cand) == 0 or len(ref) == 0:
        return 0.0, 0.0, 0.0
    sim = cand @ ref.T
    p = float(sim.max(axis=1).mean())
    r = float(sim.max(axis=0).mean())
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


class _EmbeddingMetric(ProfileParam, Metric):
    kind: ClassVar[str] = "embedding"
    needs_models: ClassVar[bool] = True
    repairs_glue: ClassVar[bool] = True

    def encoding_requests(self, items: Sequence[Item]) -> list[EncodingRequest]:
        """What ``score_batch`` will encode: candidates and references, with their token
        vectors (kept for a BERTScore on the same items; :mod:`qaeval_core.scoring`)."""
        cands, refs = _texts(reader_items(items, self.normalize))
        cache = get_cache(self.model, self.device, getattr(self, "backend", None))
        return [EncodingRequest(cache, [*cands, *(r for rs in refs for r in rs)], True)]

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        for name in _RUNTIME_PARAMS:
            cfg["params"].pop(name, None)
        hash_params(cfg["params"])
        return cfg


@register
class EmbeddingCosine(_EmbeddingMetric):
    """Cosine similarity of sentence embeddings (S-BERTScore), max over references.

    Parameters
    ----------
    model : sentence-transformers model by local path, packaged alias or hub name.
    scale : ``"clip"`` (raw cosine clipped to [0, 1], default) or ``"shift"`` ((1 + cos) / 2).
    threshold : decision threshold on the scaled score.
    device : ``None`` = CUDA when available, else CPU.
    backend : encoder backend, ``"auto"`` (default), ``"torch"``, ``"onnx"`` or
        ``"onnx-int8"`` (only this last one changes scores, and the configuration hash).
    normalize : ``"spaced"`` (default) or ``"squad"`` encodes the candidate as given;
        ``"robust"`` encodes its :func:`qaeval_core.text.profiles.reader_text`.
    """

    id = "embed_cosine"
    family = BY_MODEL
    calibrate_by_default = True
    description = "Cosine of sentence embeddings (MiniLM by default), max over references."

    def __init__(
        self,
        *,
        model: str = DEFAULT_EMBEDDING_MODEL,
        scale: Literal["clip", "shift"] = "clip",
        threshold: float = 0.6,
        device: str | None = None,
        backend: str = "auto",
        normalize: str = "spaced",
    ) -> None:
        self.model = model
        self.scale = scale
        self.threshold = threshold
        self.device = device
        self.backend = backend
        self.normalize = check_profile(normalize)

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        if self.scale not in ("clip", "shift"):
            raise ConfigError(f"embed_cosine: scale must be 'clip' or 'shift', got {self.scale!r}.")
        cands, refs = _texts(reader_items(items, self.normalize))
        flat = [r for rs in refs for r in rs]
        owner = np.repeat(np.arange(len(refs)), [len(rs) for rs in refs])
        cache = get_cache(self.model, self.device, self.backend)
        unique = list(dict.fromkeys([*cands, *flat]))
        # Token vectors of the same pass are kept for a BERTScore on these items.
        vecs = cache.encode(unique, keep_tokens=True)
        index = {t: i for i, t in enumerate(unique)}
        cand_vecs = vecs[[index[c] for c in cands]] if cands else vecs[:0]
        ref_vecs = vecs[[index[r] for r in flat]] if flat else vecs[:0]
        cos, arg = cosine_max(cand_vecs, ref_vecs, owner, len(items))
        raw = np.nan_to_num(cos, nan=-1.0)
        scores = (1.0 + raw) / 2.0 if self.scale == "shift" else np.clip(raw, 0.0, 1.0)
        details = [
            {"best_reference": rs[j] if j >= 0 else None, "cosine": float(c) if j >= 0 else None}
            for rs, j, c in zip(refs, arg.tolist(), cos.tolist(), strict=True)
        ]
        return MetricResult(scores, self.decide(scores), details)


_BS_INDEX = {"precision": 0, "recall": 1, "f1": 2}


@register
class BERTScore(_EmbeddingMetric):
    """BERTScore-style greedy token matching with a sentence-transformers model's tokens.

    Parameters
    ----------
    model : sentence-transformers model (its token outputs are used).
    score : which of ``precision``, ``recall``, ``f1`` (default) is the score and is
        maximised over references.
    threshold : decision threshold on that score.
    device, batch_size : where and how fast to encode (not part of the config hash).
    backend : encoder backend, as for ``embed_cosine``.
    normalize : as for ``embed_cosine``.
    """

    id = "bertscore"
    family = BY_MODEL
    calibrate_by_default = True
    description = "BERTScore-style greedy token-embedding matching (MiniLM tokens), F1."

    def __init__(
        self,
        *,
        model: str = DEFAULT_EMBEDDING_MODEL,
        score: Literal["precision", "recall", "f1"] = "f1",
        threshold: float = 0.7,
        device: str | None = None,
        batch_size: int | None = None,
        backend: str = "auto",
        normalize: str = "spaced",
    ) -> None:
        self.model = model
        self.score = score
        self.threshold = threshold
        self.device = device
        self.batch_size = batch_size
        self.backend = backend
        self.normalize = check_profile(normalize)

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        if self.score not in _BS_INDEX:
            raise ConfigError(
                f"bertscore: score must be one of precision, recall, f1; got {self.score!r}."
            )
        k = _BS_INDEX[self.score]
        cands, refs = _texts(reader_items(items, self.normalize))
        cache = get_cache(self.model, self.device, self.backend)
        mats = cache.token_embeddings([*cands, *(r for rs in refs for r in rs)], self.batch_size)
        scores = np.zeros(len(items))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            top: tuple[float, float, float] | None = None
            top_j = -1
            for j, ref in enumerate(rs):
                prf = greedy_match(mats[cand], mats[ref])
                if top is None or prf[k] > top[k]:
                    top, top_j = prf, j
            if top is None:
                details.append({"best_reference": None})
                continue
            scores[i] = top[k]
            details.append(
                {"best_reference": rs[top_j], "precision": top[0], "recall": top[1], "f1": top[2]}
            )
        return MetricResult(scores, self.decide(scores), details)
