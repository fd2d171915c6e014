"""The shared encoder pass (:func:`qaeval_core.models.embedding_cache.encode_shared`) with a fake
encoder: every requested string goes through the model once, in one call per cache, and only
the token vectors asked for are kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qaeval_core.metrics.base import Metric, MetricResult
from qaeval_core.models.embedding_cache import EmbeddingCache, EncodingRequest, encode_shared
from qaeval_core.models.encoder import Encoded
from qaeval_core.schema import Item
from qaeval_core.scoring import ScoringJob, run_jobs


class FakeEncoder:
    """Vectors from the text's characters; records every call."""

    backend = "fake"
    model = "fake"
    device = "cpu"
    dimension = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def _vec(self, text: str) -> np.ndarray:
        v = np.array([len(text), sum(map(ord, text)) % 97, text.count(" "), 1.0], np.float32)
        return v / np.linalg.norm(v)

    def encode(
        self, texts: Sequence[str], *, tokens: bool, batch_size: int | None = None
    ) -> Encoded:
        self.calls.append(list(texts))
        sent = np.stack([self._vec(t) for t in texts])
        mats = [np.stack([self._vec(w) for w in t.split() or [t]]) for t in texts]
        return Encoded(sent, mats if tokens else None)


def _cache() -> tuple[EmbeddingCache, FakeEncoder]:
    cache = EmbeddingCache("fake", device="cpu", path=False)
    fake = FakeEncoder()
    cache._encoder = fake  # type: ignore[assignment]
    return cache, fake


def test_one_call_per_cache_for_every_metric_request() -> None:
    a, fake_a = _cache()
    b, fake_b = _cache()
    n = encode_shared(
        [
            EncodingRequest(a, ["Paris", "It is Paris.", "Paris"], keep_tokens=True),
            EncodingRequest(a, ["It is Paris.", "the capital is paris"]),
            EncodingRequest(b, ["Tokyo"]),
            EncodingRequest(a, []),
        ]
    )
    assert n == 4
    assert fake_a.calls == [["Paris", "It is Paris.", "the capital is paris"]]
    assert fake_b.calls == [["Tokyo"]]
    # The metrics then read from memory: no further call.
    got = a.encode(["the capital is paris", "Paris"])
    np.testing.assert_allclose(got[1], fake_a._vec("Paris"), atol=1e-7)
    assert a.token_embeddings(["Paris", "It is Paris."]).keys() == {"Paris", "It is Paris."}
    assert len(fake_a.calls) == 1
    # Token vectors only for the texts whose request asked for them.
    assert set(a._tokens) == {"Paris", "It is Paris."}


def test_a_second_shared_pass_encodes_only_what_is_new() -> None:
    cache, fake = _cache()
    encode_shared([EncodingRequest(cache, ["one", "two"])])
    # "two" now also needs its token vectors: it goes through the model again, once.
    n = encode_shared([EncodingRequest(cache, ["two", "three"], keep_tokens=True)])
    assert n == 2
    assert fake.calls == [["one", "two"], ["two", "three"]]
    again = [EncodingRequest(cache, ["one"]), EncodingRequest(cache, ["two", "three"], True)]
    assert encode_shared(again) == 0
    assert cache.encoded_count == 4


class CosineToFirst(Metric):
    """A test metric on a fake cache: cosine of candidate and first reference."""

    id = "test_cosine_to_first"
    version = "1"
    kind = "embedding"
    description = "test double"

    def __init__(self, *, cache: object = None, tokens: bool = False) -> None:
        self.cache = cache
        self.tokens = tokens
        self.threshold = 0.5

    def encoding_requests(self, items: Sequence[Item]) -> list[EncodingRequest]:
        texts = [t for it in items for t in (it.candidate, it.references[0])]
        return [EncodingRequest(self.cache, texts, self.tokens)]  # type: ignore[arg-type]

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        cands = self.cache.encode([it.candidate for it in items])  # type: ignore[attr-defined]
        refs = self.cache.encode([it.references[0] for it in items])  # type: ignore[attr-defined]
        scores = np.clip((cands * refs).sum(axis=1), 0, 1)
        return MetricResult(scores, scores >= self.threshold)


ITEMS = [
    Item("q1", ("Paris",), "It is Paris."),
    Item("q2", ("Tokyo",), "tokyo"),
    Item("q3", ("Paris",), "Lyon"),
]


def test_the_scoring_loop_encodes_every_metrics_texts_in_one_call() -> None:
    cache, fake = _cache()
    jobs = [
        ScoringJob("a", CosineToFirst(cache=cache), ITEMS),
        ScoringJob("b", CosineToFirst(cache=cache, tokens=True), ITEMS[:2]),
    ]
    out = run_jobs(jobs)
    assert fake.calls == [["It is Paris.", "Paris", "tokyo", "Tokyo", "Lyon"]]
    alone, _ = _cache()
    want = CosineToFirst(cache=alone).score_batch(ITEMS).scores
    np.testing.assert_allclose(out["a"].scores, want, atol=1e-7)


def test_no_shared_pass_when_a_batch_size_splits_the_items() -> None:
    cache, fake = _cache()
    run_jobs([ScoringJob("a", CosineToFirst(cache=cache), ITEMS)], batch_size=2)
    assert fake.calls == [["It is Paris.", "tokyo"], ["Paris", "Tokyo"], ["Lyon"]]


def test_a_failing_request_leaves_the_metric_to_encode_for_itself() -> None:
    cache, fake = _cache()

    class Broken(CosineToFirst):
        def encoding_requests(self, items: Sequence[Item]) -> list[EncodingRequest]:
            raise RuntimeError("planning failed")

    out = run_jobs([ScoringJob("a", Broken(cache=cache), ITEMS)])
    assert len(out["a"]) == 3 and fake.calls == [
        ["It is Paris.", "tokyo", "Lyon"],
        ["Paris", "Tokyo"],
    ]
