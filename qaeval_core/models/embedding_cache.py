"""Unique-string embedding cache: each (model, text) is run through the model once, then reused.

Metrics ask for embeddings of many repeated strings (references shared by many candidates,
SMILE's synthetic answers, A-VERT's templated targets), and several metrics ask for the same
strings (every embedding metric encodes the candidates). The cache deduplicates within a call,
keeps vectors in memory for the run, and persists sentence vectors in a small SQLite file under
the cache directory, so rescoring after adding a metric or a dataset only embeds new strings.
Sentence vectors are L2-normalised float32, so a dot product is the cosine similarity.

**Encode once.** One forward pass gives a text's sentence vector and its token vectors
(:mod:`.encoder`). :meth:`EmbeddingCache.encode` with ``keep_tokens=True`` (``embed_cosine``:
candidates and references) also keeps the token vectors, and
:meth:`EmbeddingCache.token_embeddings` (BERTScore) stores the sentence vectors of what it
encodes; so ``embed_cosine`` and ``bertscore`` on the same items share one pass in either
order. Token vectors stay in memory only (hundreds of 384-d rows for a long answer), least
recently used first out beyond ``QAEVAL_TOKEN_MEMO_MB`` (default 512 MiB); an evicted text is
simply encoded again when asked for.

**One pass for a run.** A metric that knows ahead which texts it will ask for offers
``encoding_requests(items)`` (:class:`SharesEncoding`); the scoring loop collects every such
request of a run's metrics and :func:`encode_shared` sends all of them through each model in
one call, length-sorted across metrics, before any metric scores. The metrics then find their
vectors in memory. Measured on 300 NQ301 rows (bench/bench_encode_once.py): one pass over the
2,014 strings of six MiniLM metrics took ~25% less than the same strings in one call per
metric (batches fuller and fewer distinct shapes), with the same vectors up to float rounding.

One cache per (model, device, backend) in a process (:func:`get_cache`); the backends that
give torch's vectors up to float rounding share the persistent store (:mod:`.backends`).

**Every stored vector says what made it** (``source``: ``torch``, or ``onnx:<seal>`` for the
ONNX export whose sealed record made it, :mod:`.onnx_encoder`). When an export fails its
verification, :func:`~qaeval_core.caches.vector_store.drop_vectors` deletes its vectors and
records the source as revoked, so no backend reads them again (a torch run once reused the
vectors of a tampered export). The vectors of the store's first layout (table ``emb``) carry
no source and cannot be traced to a verified encoder: they are dropped, and their texts are
simply encoded again.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from qaeval_core.caches.location import cache_dir
from qaeval_core.caches.vector_store import (
    drop_vectors,
    open_store,
    read_vectors,
    store_path,
    write_vectors,
)
from qaeval_core.models.backends import check_backend, load_encoder, store_key
from qaeval_core.models.encoder import Encoded, TextEncoder
from qaeval_core.models.loading import DEFAULT_EMBEDDING_MODEL, choose_device

__all__ = [
    "EmbeddingCache",
    "EncodingRequest",
    "SharesEncoding",
    "drop_vectors",
    "encode_shared",
    "get_cache",
    "store_path",
]

_SQL_CHUNK = 500
_TOKEN_MEMO_MB = 512


def _token_budget_bytes() -> int:
    try:
        mb = float(os.environ.get("QAEVAL_TOKEN_MEMO_MB", _TOKEN_MEMO_MB))
    except ValueError:
        mb = _TOKEN_MEMO_MB
    return int(max(mb, 0) * 2**20)


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class EmbeddingCache:
    """Embeddings of unique strings for one model, memoised in memory and on disk.

    Parameters
    ----------
    model : local path, packaged alias or hub name of a sentence-transformers model.
    device : ``None`` picks CUDA when available, else CPU.
    path : SQLite file for persistence; ``None`` uses ``<cache_dir>/embeddings.sqlite``;
        ``False`` keeps the cache in memory only.
    batch_size : ``None`` adapts to the device.
    backend : encoder backend (:mod:`.backends`); ``None`` means ``"auto"``.
    token_budget : bytes of token vectors kept in memory; ``None`` reads
        ``QAEVAL_TOKEN_MEMO_MB`` (default 512).
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        device: str | None = None,
        path: str | Path | bool | None = None,
        batch_size: int | None = None,
        backend: str | None = None,
        token_budget: int | None = None,
    ) -> None:
        self.model = model
        self.device = choose_device(device)
        self.batch_size = batch_size
        self.backend = check_backend(backend)
        self.store_key = store_key(model, self.backend)
        self._encoder: TextEncoder | None = None
        self._mem: dict[str, np.ndarray] = {}
        self._tokens: OrderedDict[str, np.ndarray] = OrderedDict()
        self._token_bytes = 0
        self.token_budget = _token_budget_bytes() if token_budget is None else int(token_budget)
        self._lock = threading.Lock()
        self.encoded_count = 0  # strings actually run through the model (for tests/benchmarks)
        if path is False:
            self._db_path: Path | None = None
        else:
            self._db_path = Path(path) if path else store_path()
        self._db: sqlite3.Connection | None = None

    # -- persistence -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection | None:
        if self._db_path is None:
            return None
        if self._db is None:
            self._db = open_store(self._db_path)
        return self._db

    def _load_persisted(self, texts: list[str]) -> None:
        conn = self._conn()
        if conn is None or not texts:
            return
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            for key, blob in read_vectors(conn, self.store_key, chunk):
                self._mem[by_key[key]] = np.frombuffer(blob, dtype=np.float32)

    def _persist(self, texts: list[str], vecs: np.ndarray) -> None:
        conn = self._conn()
        if conn is None:
            return
        encoder = self.encoder
        source = str(getattr(encoder, "vector_source", encoder.backend))
        rows = [
            (self.store_key, _key(t), v.astype(np.float32).tobytes(), source)
            for t, v in zip(texts, vecs, strict=True)
        ]
        write_vectors(conn, rows)

    # -- encoding ----------------------------------------------------------------------------
    @property
    def encoder(self) -> TextEncoder:
        if self._encoder is None:
            self._encoder = load_encoder(self.model, self.device, self.backend, self.batch_size)
        return self._encoder

    def _forward(self, texts: list[str], tokens: bool, batch_size: int | None = None) -> Encoded:
        """One pass of the model over ``texts`` (each text once); the hook benchmarks time."""
        out = self.encoder.encode(texts, tokens=tokens, batch_size=batch_size)
        self.encoded_count += len(texts)
        return out

    def _remember(
        self, texts: list[str], enc: Encoded, *, keep_tokens: bool, keep: set[str]
    ) -> None:
        """Store a pass's sentence vectors (memory and disk) and, if asked, its token vectors
        (evicting the least recently used beyond the budget, never those in ``keep``)."""
        new = [(t, v) for t, v in zip(texts, enc.sentences, strict=True) if t not in self._mem]
        for t, v in new:
            self._mem[t] = v
        if new:
            self._persist([t for t, _ in new], np.stack([v for _, v in new]))
        if keep_tokens and enc.tokens is not None:
            self._remember_tokens(texts, enc.tokens, keep=keep)

    def _remember_tokens(
        self, texts: Sequence[str], mats: Sequence[np.ndarray], *, keep: set[str]
    ) -> None:
        """Keep token vectors, least recently used out beyond the budget (never ``keep``)."""
        for t, mat in zip(texts, mats, strict=True):
            if t not in self._tokens:
                self._tokens[t] = mat
                self._token_bytes += mat.nbytes
        for t in list(self._tokens):
            if self._token_bytes <= self.token_budget:
                break
            if t not in keep:
                self._token_bytes -= self._tokens.pop(t).nbytes

    def encode(self, texts: Sequence[str], *, keep_tokens: bool = False) -> np.ndarray:
        """Unit-norm sentence embeddings aligned with ``texts`` (repeats embedded once).

        ``keep_tokens``: also keep the token vectors of the texts this call encodes, for a
        BERTScore on the same texts (``embed_cosine`` sets it; metrics whose texts BERTScore
        never reads, such as SMILE's n-grams, leave it off).
        """
        with self._lock:
            unique = list(dict.fromkeys(texts))
            missing = [t for t in unique if t not in self._mem]
            if missing:
                self._load_persisted(missing)
                missing = [t for t in missing if t not in self._mem]
            if missing:
                enc = self._forward(missing, keep_tokens)
                self._remember(missing, enc, keep_tokens=keep_tokens, keep=set(missing))
            if not texts:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return np.stack([self._mem[t] for t in texts])

    def prefetch(self, texts: Sequence[str], token_texts: Iterable[str] = ()) -> int:
        """Encode in one pass every text of ``texts`` not yet in memory or on disk, and
        every text of ``token_texts`` whose token vectors are not in memory; keep the token
        vectors of ``token_texts`` only. Returns how many strings went through the model."""
        with self._lock:
            want_tokens = set(token_texts)
            unique = list(dict.fromkeys([*texts, *want_tokens]))
            missing = [t for t in unique if t not in self._mem]
            if missing:
                self._load_persisted(missing)
            todo = [
                t
                for t in unique
                if t not in self._mem or (t in want_tokens and t not in self._tokens)
            ]
            if not todo:
                return 0
            tokens = any(t in want_tokens for t in todo)
            enc = self._forward(todo, tokens)
            if tokens and enc.tokens is not None:
                kept = [(t, m) for t, m in zip(todo, enc.tokens, strict=True) if t in want_tokens]
                keep = [t for t, _ in kept]
                self._remember(todo, Encoded(enc.sentences, None), keep_tokens=False, keep=set())
                self._remember_tokens(keep, [m for _, m in kept], keep=set(keep))
            else:
                self._remember(todo, enc, keep_tokens=False, keep=set())
            return len(todo)

    def token_embeddings(
        self, texts: Sequence[str], batch_size: int | None = None
    ) -> dict[str, np.ndarray]:
        """Unit-norm token vectors ([CLS]/[SEP] dropped) of each unique text, from the token
        memo or one pass (``batch_size`` texts per batch, ``None``: the encoder's) that also
        stores the texts' sentence vectors."""
        with self._lock:
            unique = list(dict.fromkeys(texts))
            found = {t: self._tokens[t] for t in unique if t in self._tokens}
            for t in found:
                self._tokens.move_to_end(t)
            missing = [t for t in unique if t not in found]
            if missing:
                enc = self._forward(missing, True, batch_size)
                assert enc.tokens is not None
                found.update(zip(missing, enc.tokens, strict=True))
                self._remember(missing, enc, keep_tokens=True, keep=set(unique))
            return found

    @property
    def dimension(self) -> int:
        if self._mem:
            return len(next(iter(self._mem.values())))
        return int(self.encoder.dimension)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


_CACHES: dict[tuple[str, str | None, str, str], EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()


def get_cache(
    model: str = DEFAULT_EMBEDDING_MODEL, device: str | None = None, backend: str | None = None
) -> EmbeddingCache:
    """The process-wide cache for a model, so all metrics share embeddings within a run."""
    key = (model, device, check_backend(backend), str(cache_dir()))
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = EmbeddingCache(model, device=device, backend=backend)
        return _CACHES[key]


@dataclass(frozen=True)
class EncodingRequest:
    """Texts a metric will ask ``cache`` for; ``keep_tokens``: their token vectors too."""

    cache: EmbeddingCache
    texts: Sequence[str]
    keep_tokens: bool = False


@runtime_checkable
class SharesEncoding(Protocol):
    """A metric that can say ahead which texts it will encode (module docstring)."""

    def encoding_requests(self, items: Sequence[Any]) -> list[EncodingRequest]: ...


def encode_shared(requests: Iterable[EncodingRequest]) -> int:
    """One pass per cache over every requested text (repeats and cached texts skipped);
    returns how many strings went through a model."""
    by_cache: dict[int, tuple[EmbeddingCache, dict[str, None], dict[str, None]]] = {}
    for req in requests:
        cache, texts, tokens = by_cache.setdefault(id(req.cache), (req.cache, {}, {}))
        for t in req.texts:
            texts[t] = None
            if req.keep_tokens:
                tokens[t] = None
    return sum(cache.prefetch(list(t), list(k)) for cache, t, k in by_cache.values())
