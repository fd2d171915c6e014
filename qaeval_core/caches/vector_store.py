"""The persistent embedding store: sentence vectors tagged with what made them, and revoked
sources; every SQL statement on ``<cache_dir>/embeddings.sqlite``.

Kept apart from :mod:`qaeval_core.models.embedding_cache` (which reads and writes vectors
through an encoder) so that :mod:`qaeval_core.models.onnx_encoder` can drop the vectors of an
export it finds bad without importing the cache, which imports the encoders (an import cycle).
The conventions (raw ``sqlite3``, WAL, a busy timeout) are those of :mod:`qaeval_core.caches`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from qaeval_core.caches.location import cache_dir

__all__ = ["drop_vectors", "open_store", "read_vectors", "store_path", "write_vectors"]


def store_path() -> Path:
    """The persistent embedding store shared by every metric (under the cache directory)."""
    return cache_dir() / "embeddings.sqlite"


def open_store(path: Path) -> sqlite3.Connection:
    """The store at ``path``, its tables created (and the untagged first layout dropped)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    with db:
        db.execute("DROP TABLE IF EXISTS emb")
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, key BLOB, vec BLOB, "
            "source TEXT NOT NULL, PRIMARY KEY (model, key))"
        )
        db.execute("CREATE TABLE IF NOT EXISTS revoked (source TEXT PRIMARY KEY)")
    return db


def read_vectors(db: sqlite3.Connection, model: str, keys: Sequence[bytes]) -> list[tuple]:
    """``(key, vector bytes)`` of the stored vectors of ``model`` among ``keys`` (at most a few
    hundred: one ``IN`` list), never one made by a revoked source."""
    marks = ",".join("?" * len(keys))
    return db.execute(
        f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({marks}) "
        "AND source NOT IN (SELECT source FROM revoked)",
        [model, *keys],
    ).fetchall()


def write_vectors(db: sqlite3.Connection, rows: Iterable[tuple[str, bytes, bytes, str]]) -> None:
    """Store ``(model, key, vector bytes, source)`` rows in one transaction. A row of a revoked
    source (written by a process still running an export found bad) is replaced; any other
    stored vector is kept."""
    with db:
        db.executemany(
            "INSERT INTO vectors VALUES (?, ?, ?, ?) ON CONFLICT (model, key) DO UPDATE "
            "SET vec = excluded.vec, source = excluded.source "
            "WHERE vectors.source IN (SELECT source FROM revoked)",
            rows,
        )


def drop_vectors(sources: Iterable[str], path: str | Path | None = None) -> int:
    """Delete the stored vectors made by ``sources`` and revoke them (a vector with a revoked
    source is never read, even if a process still running writes one later); the number
    deleted. ``path``: the store (default :func:`store_path`)."""
    sources = sorted(set(sources))
    target = Path(path) if path else store_path()
    if not sources or not target.exists():
        return 0
    db = open_store(target)
    try:
        with db:
            db.executemany("INSERT OR IGNORE INTO revoked VALUES (?)", [(s,) for s in sources])
            marks = ",".join("?" * len(sources))
            cur = db.execute(f"DELETE FROM vectors WHERE source IN ({marks})", sources)
            return int(cur.rowcount)
    finally:
        db.close()
