"""Adopting an import into an existing dataset after its commit point: its rows' marks cleared.

:mod:`.import_existing` writes the rows of an import into an existing dataset straight into
``items`` and ``labels``, marked with the import's hidden dataset (``import_id``, migration 0010;
:mod:`.import_pending`), and every reader skips marked rows while that hidden dataset is pending
(:func:`~qaeval_core.store.orm.pending_imports`). The import's commit point, one short
transaction, marks the hidden dataset committed
(:data:`~qaeval_core.store.orm.IMPORT_COMMITTED_SUFFIX` on its name): from then on all its rows
are visible at once. :func:`adopt` then clears the marks,
a chunk per short write transaction with a pause for waiting saves between them on SQLite
(:func:`let_writers_in`), and deletes the hidden dataset. Nothing a reader sees changes while it
runs. The import's own process adopts; the cleanup of a killed one
(:func:`.import_pending.cleanup_imports`) finishes it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import delete, select, update

from qaeval_core.store.items.import_staging import IMPORT_CHUNK_ROWS
from qaeval_core.store.orm import IMPORT_COMMITTED_SUFFIX, Dataset, ItemRecord, Label
from qaeval_core.store.scope import store_scope
from qaeval_core.store.session import get_engine

__all__ = ["WRITER_PAUSE_S", "adopt", "committed", "let_writers_in", "marked", "marker"]


def marker(description: str | None) -> dict[str, Any]:
    """What a hidden dataset's description records: ``raters`` it created, and for an import
    into an existing dataset, that dataset's id (``into``). (A new dataset's import writes the
    bare list of raters.)"""
    try:
        value = json.loads(description or "[]")
    except (ValueError, TypeError):
        value = []
    if isinstance(value, dict):
        raters = value.get("raters")
        return {**value, "raters": [str(r) for r in raters] if isinstance(raters, list) else []}
    return {"raters": [str(r) for r in value] if isinstance(value, list) else []}


def committed(name: str) -> bool:
    """Whether the hidden dataset ``name`` is an import past its commit point."""
    return name.endswith(IMPORT_COMMITTED_SUFFIX)


def marked(table: Any, hidden_id: int, chunk: int) -> Any:
    """SELECT of up to ``chunk`` ids of the rows of ``table`` (items or labels) marked with an
    import, found by the partial index ``ix_<table>_import_id`` (a Core statement: the readers'
    filter of :mod:`~qaeval_core.store.orm` does not hide them)."""
    return select(table.c.id).where(table.c.import_id == hidden_id).limit(chunk)


def adopt(url: str | None, hidden_id: int, *, chunk: int | None = None) -> None:
    """Clear the marks of the committed import ``hidden_id``, ``chunk`` rows (default
    :data:`IMPORT_CHUNK_ROWS`) of each table per short write transaction with a pause for
    waiting writers after each (:data:`WRITER_PAUSE_S`); then delete its hidden dataset.
    Run after the commit point (the import's own process, or the cleanup of a killed one)."""
    while _adopt_chunk(url, hidden_id, chunk or IMPORT_CHUNK_ROWS):
        let_writers_in(url)


def _adopt_chunk(url: str | None, hidden_id: int, chunk: int) -> bool:
    """Clear the marks of the next ``chunk`` labels and items of an import: True when some were
    left, False when none was (the hidden dataset is then deleted). PostgreSQL: the hidden
    dataset's row is locked first, so two processes adopting it (the import and a cleanup)
    take turns; SQLite's ``BEGIN IMMEDIATE`` does the same."""
    with store_scope(url, write=True) as s:
        conn = s.connection()
        lock = select(Dataset.id).where(Dataset.id == hidden_id).with_for_update()
        if conn.execute(lock).first() is None:
            return False  # another process finished it
        some = False
        for table in (Label.__table__, ItemRecord.__table__):
            ids = marked(table, hidden_id, chunk)
            clear = update(table).where(table.c.id.in_(ids)).values(import_id=None)
            some = conn.execute(clear).rowcount > 0 or some
        if not some:
            conn.execute(delete(Dataset).where(Dataset.id == hidden_id))
        return some


#: How long the adoption of an import pauses after each chunk on SQLite. Its chunks run back
#: to back (no file to read between them), and SQLite's busy handler lets a waiting writer
#: retry only every 25-100 ms, so without a pause the import, always ready, could take the
#: lock again chunk after chunk while a save waits. (Writing needs none: the next chunk is
#: read and checked between two of its writes.)
WRITER_PAUSE_S = 0.05


def let_writers_in(url: str | None, *, pause: bool = True) -> None:
    """After a chunk's commit on SQLite: checkpoint the write-ahead log, then (``pause``) wait
    :data:`WRITER_PAUSE_S`. PostgreSQL has no store-wide write lock: nothing to do there.

    Why the checkpoint: SQLite copies the log into the database (and syncs it) in whichever
    connection commits once the log has grown past 1,000 pages. An import writes megabytes per
    chunk, so without this that was often an annotator's save, which then took seconds for the
    import's pages. A ``PASSIVE`` checkpoint by the import itself, outside any transaction,
    blocks no one and keeps the log short for the saves.
    """
    engine = get_engine(url)
    if engine.dialect.name != "sqlite":
        return
    raw = engine.raw_connection()
    try:
        raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)")  # type: ignore[union-attr]
    finally:
        raw.close()
    if pause:
        time.sleep(WRITER_PAUSE_S)
