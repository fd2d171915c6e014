"""The shared encoder pass (:func:`qaeval_core.models.embedding_cache.encode_shared`) with a fake
encoder: every requested string goes through the model once, in one call per cache, and only
the token vectors asked for are kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qaeval_core.models.embedding_cache import EmbeddingCache, EncodingRequest, encode_shared
from qaeval_core.models.encoder import Encoded


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
