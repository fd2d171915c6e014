"""A new dataset imported under a hidden name, in short transactions, then renamed (issue 13);
an import into an existing dataset staged the same way, then moved in (issue 21).

Importing a file into a *new* dataset must not hold the store's write lock for the whole copy
(annotators would wait seconds to save). So the dataset is created first under a reserved name
(:data:`~qaeval_core.store.orm.IMPORTING_PREFIX` + host, process id, tag) that every reader skips
(:func:`~qaeval_core.store.orm.visible_dataset`); its items and labels go straight into the real
tables in transactions of :data:`CHUNK` rows; the last transaction only renames that one row.

An import into an *existing* dataset (:mod:`.import_existing`) stages its rows in such a hidden
dataset too, then *adopts* them: a short transaction marks the hidden dataset as adopting (the
commit point: from then on the import is finished, never undone), and :func:`adopt` moves its
items into the dataset :data:`CHUNK` at a time, each move its own short transaction, so a save
never waits for more than one chunk. Items the dataset already had are staged as *shadows*
(same id, only the labels to add): adopting moves their labels onto the dataset's item and
drops the shadow.

A failed import deletes what it wrote. A killed one leaves a hidden dataset that nobody sees;
:func:`cleanup_imports` (run by every import and by ``qaeval db upgrade``) deletes it once its
process is gone (same host) or it has not written for :data:`STALE_AFTER`, except one killed
while adopting, whose adoption it finishes. Rater accounts the import created are listed in the
hidden dataset's description and deleted with it when they have no labels.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, exists, func, insert, select, update
from sqlalchemy.orm import Session

from qaeval_core import io
from qaeval_core.errors import StoreError
from qaeval_core.store.orm import IMPORTING_PREFIX, Dataset, ItemRecord, Label, User, utcnow
from qaeval_core.store.repo._common import _scope
from qaeval_core.store.repo.import_staging import CHUNK, IMPORT_SOURCE, item_values
from qaeval_core.store.session import get_engine

__all__ = [
    "STALE_AFTER",
    "WRITER_PAUSE_S",
    "adopt",
    "cleanup_imports",
    "import_new_dataset",
    "let_writers_in",
    "marker",
]

#: A hidden import dataset not written for this long is abandoned (its process may run on
#: another host, where its process id cannot be checked).
STALE_AFTER = timedelta(minutes=15)


def _rater_ids(s: Session, names: set[str]) -> tuple[dict[str, int], list[str]]:
    """User ids by name; unknown raters become ``external`` users (they cannot log in)."""
    known = dict(s.execute(select(User.name, User.id)).tuples().all())
    missing = sorted(names - known.keys())
    if missing:
        s.execute(
            insert(User), [{"name": n, "role": "external", "password_hash": None} for n in missing]
        )
        known = dict(s.execute(select(User.name, User.id)).tuples().all())
    return known, missing


def _hidden_name() -> str:
    host = socket.gethostname()[:60].replace(":", "-")
    return f"{IMPORTING_PREFIX}{host}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _stage_chunk(url: str | None, ds_id: int, chunk: list[io.ItemRow], users: dict) -> int:
    """One short write transaction: a chunk of items and their labels; the labels added.

    The rows are built before the transaction starts (hashing and copying every field is most
    of the Python work), so the write lock is held only for the statements themselves."""
    items = [{"dataset_id": ds_id, **item_values(r)} for r in chunk]
    labels = [
        {
            "external_id": r.external_id,
            "user_id": users[lab.rater],
            "value": lab.value,
            "rule": lab.rule,
            "note": lab.note,
            "seconds": lab.seconds,
            "source": IMPORT_SOURCE,
        }
        for r in chunk
        for lab in r.labels
    ]
    with _scope(url, write=True) as s:
        conn = s.connection()  # Core inserts: the ORM's bulk path costs 3x the time in the lock
        last = conn.scalar(select(func.max(ItemRecord.id)).where(ItemRecord.dataset_id == ds_id))
        conn.execute(insert(ItemRecord.__table__), items)
        new = select(ItemRecord.external_id, ItemRecord.id).where(
            ItemRecord.dataset_id == ds_id, ItemRecord.id > (last or 0)
        )
        ids = {ext: item_id for ext, item_id in conn.execute(new)}
        for lab in labels:
            lab["item_id"] = ids[lab.pop("external_id")]
        if labels:
            conn.execute(insert(Label.__table__), labels)
        conn.execute(update(Dataset).where(Dataset.id == ds_id).values(created_at=utcnow()))
    return len(labels)


def import_new_dataset(
    url: str | None,
    name: str,
    items: Iterable[io.ItemRow],
    raters: set[str],
    *,
    source: str | None,
    description: str | None,
) -> tuple[int, list[str]]:
    """Import ``items`` into the new dataset ``name``: (labels added, raters created)."""
    hidden = _hidden_name()
    with _scope(url, write=True) as s:
        users, created = _rater_ids(s, raters)
        ds = Dataset(name=hidden, description=json.dumps(created), source=source)
        s.add(ds)
        s.flush()
        ds_id = ds.id
    try:
        n_labels, chunk = 0, []
        for item in items:
            chunk.append(item)
            if len(chunk) == CHUNK:
                n_labels += _stage_chunk(url, ds_id, chunk, users)
                chunk = []
        if chunk:
            n_labels += _stage_chunk(url, ds_id, chunk, users)
        with _scope(url, write=True) as s:
            if s.scalar(select(Dataset.id).where(Dataset.name == name)) is not None:
                raise StoreError(
                    f"Dataset {name!r} changed while the file was being imported (another "
                    "import?); nothing was imported. Run the import again."
                )
            renamed = s.execute(
                update(Dataset)
                .where(Dataset.id == ds_id, Dataset.name == hidden)
                .values(name=name, description=description, created_at=utcnow())
            ).rowcount
            if renamed != 1:
                raise StoreError(f"The import of {name!r} was cancelled; run it again.")
    except BaseException:
        _discard(url, ds_id, created)
        raise
    return n_labels, created


def _discard(url: str | None, ds_id: int, raters: list[str]) -> None:
    """Delete a hidden dataset in short transactions, then the raters it created (unused)."""
    try:
        while True:
            with _scope(url, write=True) as s:
                stmt = select(ItemRecord.id).where(ItemRecord.dataset_id == ds_id).limit(CHUNK)
                ids = s.scalars(stmt).all()
                if ids:
                    s.execute(delete(Label).where(Label.item_id.in_(ids)))
                    s.execute(delete(ItemRecord).where(ItemRecord.id.in_(ids)))
                    continue
                s.execute(
                    delete(Dataset).where(
                        Dataset.id == ds_id, Dataset.name.startswith(IMPORTING_PREFIX)
                    )
                )
                if raters:
                    used = exists().where(Label.user_id == User.id)
                    s.execute(
                        delete(User).where(User.name.in_(raters), User.role == "external", ~used)
                    )
                return
    except StoreError:
        pass  # left for the next cleanup


def _abandoned(name: str, written: Any) -> bool:
    host, _, rest = name[len(IMPORTING_PREFIX) :].partition(":")
    pid = rest.partition(":")[0]
    here = host == socket.gethostname()[:60].replace(":", "-")
    if here and pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True  # its process is gone
        except OSError:
            pass
    if written.tzinfo is None:
        written = written.replace(tzinfo=UTC)
    return utcnow() - written > STALE_AFTER


def cleanup_imports(url: str | None) -> int:
    """Delete the hidden datasets of imports that were killed; how many."""
    with _scope(url) as s:
        stmt = select(Dataset.id, Dataset.name, Dataset.description, Dataset.created_at)
        hidden = s.execute(stmt.where(Dataset.name.startswith(IMPORTING_PREFIX))).all()
    n = 0
    for ds_id, name, desc, written in hidden:
        if _abandoned(name, written):
            state = marker(desc)
            if state.get("adopting") and isinstance(state.get("into"), int):
                adopt(url, ds_id, state["into"], state["raters"])  # past its commit point
            else:
                _discard(url, ds_id, state["raters"])
            n += 1
    return n


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


def adopt(
    url: str | None,
    hidden_id: int,
    target_id: int,
    raters: list[str],
    *,
    chunk: int | None = None,
) -> None:
    """Move every item of the hidden dataset into the dataset ``target_id``, ``chunk`` (default
    :data:`CHUNK`) at a time, each chunk its own short write transaction with a pause for
    waiting writers after it (:data:`WRITER_PAUSE_S`); then delete the hidden dataset. Run
    after the commit point (the import's own process, or the cleanup of a killed one). Should
    the target have been deleted meanwhile, what is left is discarded instead."""
    while True:
        left = _adopt_chunk(url, hidden_id, target_id, chunk or CHUNK)
        if left is None:
            _discard(url, hidden_id, raters)
            return
        if not left:
            return
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


_MOVE_LABELS = (
    update(Label.__table__)
    .where(Label.__table__.c.item_id == bindparam("shadow"))
    .values(item_id=bindparam("real"))
)


def _adopt_chunk(url: str | None, hidden_id: int, target_id: int, chunk: int) -> bool | None:
    """Move the next ``chunk`` items of the hidden dataset into the target: True when some
    were moved, False when none was left (the hidden dataset is then deleted), None when the
    target no longer exists.

    An item whose id the target already has is a shadow: its labels move onto the target's
    item and the shadow is deleted. Every other item moves by changing its dataset. PostgreSQL:
    the hidden dataset's row is locked first, so two processes adopting it (the import and a
    cleanup) take turns; SQLite's ``BEGIN IMMEDIATE`` does the same.
    """
    with _scope(url, write=True) as s:
        conn = s.connection()
        lock = select(Dataset.id).where(Dataset.id == hidden_id).with_for_update()
        if conn.execute(lock).first() is None:
            return False  # another process finished it
        if conn.execute(select(Dataset.id).where(Dataset.id == target_id)).first() is None:
            return None
        stmt = (
            select(ItemRecord.id, ItemRecord.external_id)
            .where(ItemRecord.dataset_id == hidden_id)
            .order_by(ItemRecord.id)
            .limit(chunk)
        )
        rows = conn.execute(stmt).all()
        if not rows:
            conn.execute(delete(Dataset).where(Dataset.id == hidden_id))
            return False
        known = select(ItemRecord.external_id, ItemRecord.id).where(
            ItemRecord.dataset_id == target_id,
            ItemRecord.external_id.in_([ext for _, ext in rows]),
        )
        real = {ext: item_id for ext, item_id in conn.execute(known)}
        shadows = [{"shadow": i, "real": real[ext]} for i, ext in rows if ext in real]
        moved = [i for i, ext in rows if ext not in real]
        if shadows:
            conn.execute(_MOVE_LABELS, shadows)
            gone = [p["shadow"] for p in shadows]
            conn.execute(delete(ItemRecord).where(ItemRecord.id.in_(gone)))
        if moved:
            conn.execute(
                update(ItemRecord).where(ItemRecord.id.in_(moved)).values(dataset_id=target_id)
            )
        conn.execute(update(Dataset).where(Dataset.id == hidden_id).values(created_at=utcnow()))
        return True
