"""Unique-string embedding cache: each (model, text) is embedded once, then reused.

Metrics ask for embeddings of many repeated strings (references shared by many candidates,
SMILE's synthetic answers, A-VERT's templated targets). The cache deduplicates within a call,
keeps vectors in memory for the run, and persists them in a small SQLite file under the cache
directory, so rescoring after adding a metric or a dataset only embeds new strings.
Vectors are L2-normalised float32, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qaeval_core.metrics._support.loading import (
    DEFAULT_EMBEDDING_MODEL,
    cache_dir,
    choose_device,
    default_batch_size,
    load_sentence_encoder,
)

__all__ = ["EmbeddingCache", "get_cache"]

_SQL_CHUNK = 500


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
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        device: str | None = None,
        path: str | Path | bool | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.model = model
        self.device = choose_device(device)
        self.batch_size = batch_size or default_batch_size(self.device)
        self._encoder: Any = None
        self._mem: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.encoded_count = 0  # strings actually run through the model (for tests/benchmarks)
        if path is False:
            self._db_path: Path | None = None
        else:
            self._db_path = Path(path) if path else cache_dir() / "embeddings.sqlite"
        self._db: sqlite3.Connection | None = None

    # -- persistence -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection | None:
        if self._db_path is None:
            return None
        if self._db is None:
            self._db_path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self._db_path, timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS emb (model TEXT, key BLOB, vec BLOB, "
                "PRIMARY KEY (model, key))"
            )
        return self._db

    def _load_persisted(self, texts: list[str]) -> None:
        conn = self._conn()
        if conn is None or not texts:
            return
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT key, vec FROM emb WHERE model = ? AND key IN ({marks})",
                [self.model, *chunk],
            ).fetchall()
            for key, blob in rows:
                self._mem[by_key[key]] = np.frombuffer(blob, dtype=np.float32)

    def _persist(self, texts: list[str], vecs: np.ndarray) -> None:
        conn = self._conn()
        if conn is None:
            return
        rows = [
            (self.model, _key(t), v.astype(np.float32).tobytes())
            for t, v in zip(texts, vecs, strict=True)
        ]
        with conn:
            conn.executemany("INSERT OR IGNORE INTO emb VALUES (?, ?, ?)", rows)

    # -- encoding ----------------------------------------------------------------------------
    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            self._encoder = load_sentence_encoder(self.model, self.device)
        return self._encoder

    def _embed(self, texts: list[str]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vecs = self.encoder.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(vecs, dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm embeddings aligned with ``texts`` (repeats embedded once)."""
        with self._lock:
            unique = list(dict.fromkeys(texts))
            missing = [t for t in unique if t not in self._mem]
            if missing:
                self._load_persisted(missing)
                missing = [t for t in missing if t not in self._mem]
            if missing:
                vecs = self._embed(missing)
                self.encoded_count += len(missing)
                for t, v in zip(missing, vecs, strict=True):
                    self._mem[t] = v
                self._persist(missing, vecs)
            if not texts:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return np.stack([self._mem[t] for t in texts])

    @property
    def dimension(self) -> int:
        if self._mem:
            return len(next(iter(self._mem.values())))
        enc = self.encoder
        # sentence-transformers 6 renamed get_sentence_embedding_dimension.
        getter = getattr(enc, "get_embedding_dimension", None)
        getter = getter or enc.get_sentence_embedding_dimension
        return int(getter())

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


_CACHES: dict[tuple[str, str | None, str], EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()


def get_cache(model: str = DEFAULT_EMBEDDING_MODEL, device: str | None = None) -> EmbeddingCache:
    """The process-wide cache for a model, so all metrics share embeddings within a run."""
    key = (model, device, str(cache_dir()))
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = EmbeddingCache(model, device=device)
        return _CACHES[key]
