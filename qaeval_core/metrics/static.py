"""Static-embedding metrics: MiniLM's signal at lexical speed (issue 35).

The packaged MiniLM costs ~75 s per 1,000 rows on the 2-core CPU as three judge inputs
(``embed_cosine``, SMILE, A-VERT), and PEDANTS ~3 s. These metrics read
:mod:`qaeval_core.models.static_encoder` instead: MiniLM distilled into one vector per token
(model2vec), so a text's vector is the mean of its tokens' rows, with no transformer at
scoring time. They form their own cost family (``static``), cheap enough for the cost-aware
selection to keep next to the lexical inputs.

* ``static_cosine``: the cosine of the candidate's and each reference's static vectors, max
  over references, clipped to [0, 1] (``embed_cosine`` with the static model).
* ``static_keyword``: SMILE's keyword score with static vectors: the best cosine between a
  reference's vector and the mean vector of any window of the candidate's tokens as long as
  the reference's (the whole candidate when it is shorter), max over references. A long
  answer that contains the reference scores near 1 where the whole-answer cosine is diluted.
  Windows are differences of a running sum, so every window of every answer costs one pass.

How close to MiniLM, and how fast, is measured in bench/bench_encode_once.py and
``tests/metrics/test_static.py`` (cosine correlation with MiniLM's on real rows above a floor).
Scores depend on each item alone (``tests/metrics/test_batch_independence.py``).

``normalize="robust"`` reads each candidate as :func:`qaeval_core.text.profiles.reader_text`
does; ``"spaced"`` (default) and ``"squad"`` as given. The configuration records the model
file's SHA-256, so a different model never reuses stored scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.models.static_encoder import STATIC_MODEL, StaticEncoder, load_static_encoder
from qaeval_core.schema import Item
from qaeval_core.text.profiles import ProfileParam, check_profile, reader_items

__all__ = ["StaticCosine", "StaticKeyword", "window_cosines"]


def window_cosines(tokens: np.ndarray, ref: np.ndarray, width: int) -> np.ndarray:
    """Cosine of ``ref`` (a unit vector) with the mean of every run of ``width`` consecutive
    rows of ``tokens`` (all rows when there are fewer).

    >>> t = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> window_cosines(t, np.array([0.0, 1.0]), 2).round(3).tolist()
    [0.707, 1.0]
    """
    return _window_cosines(_running_sum(tokens), ref, width)


def _running_sum(tokens: np.ndarray) -> np.ndarray:
    """Row ``k`` is the sum of the first ``k`` token rows (row 0 is zeros)."""
    run = np.zeros((len(tokens) + 1, tokens.shape[1]))
    np.cumsum(tokens, axis=0, out=run[1:])
    return run


def _window_cosines(run: np.ndarray, ref: np.ndarray, width: int) -> np.ndarray:
    n = len(run) - 1
    if n <= 0:
        return np.zeros(0)
    width = max(1, min(int(width), n))
    sums = run[width:] - run[:-width]
    norms = np.sqrt(np.einsum("ij,ij->i", sums, sums))
    dots = sums @ ref
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


class _StaticMetric(ProfileParam, Metric):
    kind: ClassVar[str] = "embedding"
    needs_models: ClassVar[bool] = False  # numpy + tokenizers, no torch: its own cost family

    model: str
    normalize: str

    def encoder(self) -> StaticEncoder:
        return load_static_encoder(self.model)

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg["model_sha256"] = self.encoder().sha256
        return cfg

    def _pairs(self, items: Sequence[Item]) -> tuple[list[str], list[tuple[str, ...]]]:
        read = reader_items(items, self.normalize)
        cands = [str(it.candidate or "").strip() for it in read]
        refs = [tuple(s for s in (str(r).strip() for r in it.references) if s) for it in read]
        return cands, refs


@register
class StaticCosine(_StaticMetric):
    """Cosine of static (distilled MiniLM) sentence vectors, max over references.

    Parameters
    ----------
    model : ``"static_minilm"`` (packaged, default) or a model2vec folder with a ``meta.json``.
    threshold : decision threshold on the clipped cosine.
    normalize : ``"spaced"`` (default, like every metric), ``"squad"`` or ``"robust"``.
    """

    id = "static_cosine"
    family = "static"
    calibrate_by_default = True
    version = "1"
    description = "Cosine of static token-mean embeddings (MiniLM distilled), max over references"

    def __init__(
        self, *, model: str = STATIC_MODEL, threshold: float = 0.7, normalize: str = "spaced"
    ) -> None:
        self.model = model
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        cands, refs = self._pairs(items)
        enc = self.encoder()
        flat = [r for rs in refs for r in rs]
        unique = list(dict.fromkeys([*cands, *flat]))
        vecs = enc.encode(unique)
        index = {t: i for i, t in enumerate(unique)}
        scores = np.zeros(len(items))
        details: list[dict[str, Any]] = []
        for i, (c, rs) in enumerate(zip(cands, refs, strict=True)):
            if not c or not rs:
                details.append({"best_reference": None, "cosine": None})
                continue
            cos = vecs[[index[r] for r in rs]] @ vecs[index[c]]
            j = int(np.argmax(cos))
            scores[i] = float(np.clip(cos[j], 0.0, 1.0))
            details.append({"best_reference": rs[j], "cosine": round(float(cos[j]), 6)})
        return MetricResult(scores, self.decide(scores), details)


@register
class StaticKeyword(_StaticMetric):
    """Best cosine between a reference and a same-length window of the candidate's tokens
    (SMILE's keyword score with static vectors), max over references.

    Parameters
    ----------
    model : as for ``static_cosine``.
    threshold : decision threshold on the clipped cosine.
    normalize : ``"spaced"`` (default, like every metric), ``"squad"`` or ``"robust"``.
    """

    id = "static_keyword"
    family = "static"
    calibrate_by_default = True
    version = "1"
    description = "Best static cosine of a reference with a same-length window of the answer"

    def __init__(
        self, *, model: str = STATIC_MODEL, threshold: float = 0.8, normalize: str = "spaced"
    ) -> None:
        self.model = model
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        cands, refs = self._pairs(items)
        enc = self.encoder()
        ref_list = list(dict.fromkeys(r for rs in refs for r in rs))
        ref_vecs = dict(zip(ref_list, enc.encode(ref_list), strict=True))
        ref_len = dict(zip(ref_list, map(len, enc.token_ids(ref_list)), strict=True))
        cand_ids = dict(zip(cands, enc.token_ids(cands), strict=True))
        scores = np.zeros(len(items))
        details: list[dict[str, Any]] = []
        for i, (c, rs) in enumerate(zip(cands, refs, strict=True)):
            ids = cand_ids[c]
            if not ids or not rs:
                details.append({"best_reference": None, "keyword_cosine": None})
                continue
            run = _running_sum(enc.token_vectors(ids))
            best, best_j = -1.0, 0
            for j, r in enumerate(rs):
                cos = _window_cosines(run, ref_vecs[r], ref_len[r])
                top = float(cos.max()) if len(cos) else 0.0
                if top > best:
                    best, best_j = top, j
            scores[i] = float(np.clip(best, 0.0, 1.0))
            details.append({"best_reference": rs[best_j], "keyword_cosine": round(best, 6)})
        return MetricResult(scores, self.decide(scores), details)
