"""Adopting an import into an existing dataset: its staged rows moved in, a chunk at a time.

:mod:`.import_existing` stages the rows of an import into an existing dataset in the tables
``import_stage_items`` and ``import_stage_labels`` (migration 0007), keyed by the import's hidden
dataset (:mod:`.import_pending`), whose description records the target dataset and, from the
import's commit point on, that it is *adopting* (:func:`marker`). :func:`adopt` then moves the
rows into ``items`` and ``labels`` a chunk per short write transaction, pausing between chunks
on SQLite so that waiting saves get the write lock (:func:`let_writers_in`). The import's own
process adopts; the cleanup of a killed one (:func:`.import_pending.cleanup_imports`) finishes
it, so once past its commit point an import is never undone.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import (
    DateTime,
    Integer,
    String,
    and_,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)

from qaeval_core.store.orm import (
    Dataset,
    ImportStageItem,
    ImportStageLabel,
    ItemRecord,
    Label,
    utcnow,
)
from qaeval_core.store.repo._common import store_scope
from qaeval_core.store.repo.import_staging import (
    IMPORT_CHUNK_ROWS,
    IMPORT_SOURCE,
    ITEM_COLUMNS_WRITTEN,
)
from qaeval_core.store.session import get_engine

__all__ = ["WRITER_PAUSE_S", "adopt", "chunk_end", "let_writers_in", "marker"]


def marker(description: str | None) -> dict[str, Any]:
    """What a hidden dataset's description records: ``raters`` it created, and for an import
    into an existing dataset, that dataset's id (``into``) and whether it is ``adopting``.
    (A new dataset's import writes the bare list of raters.)"""
    try:
        value = json.loads(description or "[]")
    except (ValueError, TypeError):
        value = []
    if isinstance(value, dict):
        raters = value.get("raters")
        return {**value, "raters": [str(r) for r in raters] if isinstance(raters, list) else []}
    return {"raters": [str(r) for r in value] if isinstance(value, list) else []}


def adopt(url: str | None, hidden_id: int, target_id: int, *, chunk: int | None = None) -> bool:
    """Move every staged row of the import ``hidden_id`` into the dataset ``target_id``,
    ``chunk`` items (default :data:`IMPORT_CHUNK_ROWS`) at a time, each chunk its own short write
    transaction with a pause for waiting writers after it (:data:`WRITER_PAUSE_S`); then delete
    the hidden dataset. Run after the commit point (the import's own process, or the cleanup of
    a killed one). False when the target was deleted meanwhile: the caller discards the rest."""
    while True:
        left = _adopt_chunk(url, hidden_id, target_id, chunk or IMPORT_CHUNK_ROWS)
        if left is None:
            return False
        if not left:
            return True
        let_writers_in(url)


#: How long the adoption of an import pauses after each chunk on SQLite. The moves run back to
#: back (no file to read between them), and SQLite's busy handler lets a waiting writer retry
#: only every 25-100 ms, so without a pause the import, always ready, could take the lock again
#: chunk after chunk while a save waits. (Staging needs none: the next chunk is read and checked
#: between two of its writes.)
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


def chunk_end(conn: Any, hidden_id: int, chunk: int) -> int | None:
    """The ``seq`` of the last of the next ``chunk`` staged items of an import (None: none)."""
    seqs = select(ImportStageItem.seq).where(ImportStageItem.import_id == hidden_id)
    end = conn.scalar(seqs.order_by(ImportStageItem.seq).offset(chunk - 1).limit(1))
    if end is None:
        end = conn.scalar(
            select(func.max(ImportStageItem.seq)).where(ImportStageItem.import_id == hidden_id)
        )
    return end


def _adopt_chunk(url: str | None, hidden_id: int, target_id: int, chunk: int) -> bool | None:
    """Move the next ``chunk`` staged items of an import into the target: True when some were
    moved, False when none was left (the hidden dataset is then deleted), None when the target
    no longer exists.

    Three statements the database runs by itself (no row passes through Python): the new items
    are copied into ``items``; the labels into ``labels``, onto the item just copied (found by
    its id in the target) or, for an item the target already had, onto that one
    (``known_item_id``); then the chunk's staged rows are deleted. PostgreSQL: the hidden
    dataset's row is locked first, so two processes adopting it (the import and a cleanup)
    take turns; SQLite's ``BEGIN IMMEDIATE`` does the same.
    """
    with store_scope(url, write=True) as s:
        conn = s.connection()
        lock = select(Dataset.id).where(Dataset.id == hidden_id).with_for_update()
        if conn.execute(lock).first() is None:
            return False  # another process finished it
        if conn.execute(select(Dataset.id).where(Dataset.id == target_id)).first() is None:
            return None
        end = chunk_end(conn, hidden_id, chunk)
        if end is None:
            conn.execute(delete(Dataset).where(Dataset.id == hidden_id))
            return False
        now = utcnow()
        st, sl, it = ImportStageItem.__table__, ImportStageLabel.__table__, ItemRecord.__table__
        in_chunk = (st.c.import_id == hidden_id) & (st.c.seq <= end)
        new_items = (
            select(
                literal(target_id, Integer),
                literal(now, DateTime(timezone=True)),
                *(st.c[c] for c in ITEM_COLUMNS_WRITTEN),
            )
            .where(in_chunk, st.c.known_item_id.is_(None))
            .order_by(st.c.seq)
        )
        cols = ["dataset_id", "created_at", *ITEM_COLUMNS_WRITTEN]
        conn.execute(insert(it).from_select(cols, new_items))
        copied = and_(
            st.c.known_item_id.is_(None),
            it.c.dataset_id == target_id,
            it.c.external_id == st.c.external_id,
        )
        labels = (
            select(
                func.coalesce(st.c.known_item_id, it.c.id),
                sl.c.user_id,
                sl.c.value,
                sl.c.rule,
                sl.c.note,
                sl.c.seconds,
                literal(IMPORT_SOURCE, String(20)),
                literal(now, DateTime(timezone=True)),
            )
            .select_from(
                sl.join(
                    st, (st.c.import_id == sl.c.import_id) & (st.c.seq == sl.c.item_seq)
                ).outerjoin(it, copied)
            )
            .where(sl.c.import_id == hidden_id, sl.c.item_seq <= end)
            .order_by(sl.c.seq)
        )
        label_cols = ["item_id", "user_id", "value", "rule", "note", "seconds", "source"]
        conn.execute(insert(Label.__table__).from_select([*label_cols, "created_at"], labels))
        conn.execute(delete(sl).where(sl.c.import_id == hidden_id, sl.c.item_seq <= end))
        conn.execute(delete(st).where(in_chunk))
        conn.execute(update(Dataset).where(Dataset.id == hidden_id).values(created_at=now))
        return True
