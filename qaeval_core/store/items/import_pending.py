"""A new dataset imported under a hidden name, in short transactions, then renamed (issue 13);
the hidden dataset that also keys an import into an existing dataset (issue 21).

Importing a file into a *new* dataset must not hold the store's write lock for the whole copy
(annotators would wait seconds to save). So the dataset is created first under a reserved name
(:data:`~qaeval_core.store.orm.IMPORTING_PREFIX` + host, process id, tag) that every reader skips
(:func:`~qaeval_core.store.orm.visible_dataset`); its items and labels go straight into the real
tables in transactions of :data:`~.import_staging.IMPORT_CHUNK_ROWS` rows; the last transaction
only renames that one row.

An import into an *existing* dataset (:mod:`.import_existing`) is keyed by such a hidden
dataset too: it writes its rows into the target dataset marked with the hidden dataset's id
(``import_id``, migration 0010), and every reader skips them until a short transaction marks the
hidden dataset committed (its commit point); then :mod:`.import_adopt` clears the marks.

A failed import deletes what it wrote. A killed one leaves a hidden dataset that nobody sees;
:func:`cleanup_imports` (run by every import and by ``qaeval db upgrade``) deletes it and its
rows once its process is gone (same host) or it has not written for :data:`STALE_AFTER`, except
one killed past its commit point, whose adoption it finishes; its :class:`ImportCleanup` says
which. Rater accounts the import created are listed in the hidden dataset's description and
deleted with it when they have no labels.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

from sqlalchemy import (
    delete,
    exists,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Session

from qaeval_core import io
from qaeval_core.errors import StoreError
from qaeval_core.store.items.import_adopt import adopt, committed, marked, marker
from qaeval_core.store.items.import_staging import IMPORT_CHUNK_ROWS, IMPORT_SOURCE, item_values
from qaeval_core.store.orm import (
    IMPORTING_PREFIX,
    Dataset,
    ItemRecord,
    Label,
    User,
    utcnow,
)
from qaeval_core.store.scope import store_scope

__all__ = ["STALE_AFTER", "ImportCleanup", "cleanup_imports", "import_new_dataset"]

#: A hidden import dataset not written for this long is abandoned (its process may run on
#: another host, where its process id cannot be checked).
STALE_AFTER = timedelta(minutes=15)


def rater_ids(s: Session, names: set[str]) -> tuple[dict[str, int], list[str]]:
    """User ids by name; unknown raters become ``external`` users (they cannot log in)."""
    known = dict(s.execute(select(User.name, User.id)).tuples().all())
    missing = sorted(names - known.keys())
    if missing:
        s.execute(
            insert(User), [{"name": n, "role": "external", "password_hash": None} for n in missing]
        )
        known = dict(s.execute(select(User.name, User.id)).tuples().all())
    return known, missing


def hidden_name() -> str:
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
    with store_scope(url, write=True) as s:
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
    hidden = hidden_name()
    with store_scope(url, write=True) as s:
        users, created = rater_ids(s, raters)
        ds = Dataset(name=hidden, description=json.dumps(created), source=source)
        s.add(ds)
        s.flush()
        ds_id = ds.id
    try:
        n_labels, chunk = 0, []
        for item in items:
            chunk.append(item)
            if len(chunk) == IMPORT_CHUNK_ROWS:
                n_labels += _stage_chunk(url, ds_id, chunk, users)
                chunk = []
        if chunk:
            n_labels += _stage_chunk(url, ds_id, chunk, users)
        with store_scope(url, write=True) as s:
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
        discard_import(url, ds_id, created)
        raise
    return n_labels, created


def discard_import(url: str | None, ds_id: int, raters: list[str]) -> None:
    """Delete a hidden dataset in short transactions: the rows an import into an existing
    dataset marked with it, or a new dataset's items; then the raters it created (unused)."""
    try:
        while True:
            with store_scope(url, write=True) as s:
                conn = s.connection()  # Core statements: the marked rows are hidden otherwise
                lt, it = Label.__table__, ItemRecord.__table__
                if conn.execute(
                    delete(lt).where(lt.c.id.in_(marked(lt, ds_id, IMPORT_CHUNK_ROWS)))
                ).rowcount:
                    continue
                if conn.execute(
                    delete(it).where(it.c.id.in_(marked(it, ds_id, IMPORT_CHUNK_ROWS)))
                ).rowcount:
                    continue
                stmt = (
                    select(ItemRecord.id)
                    .where(ItemRecord.dataset_id == ds_id)
                    .limit(IMPORT_CHUNK_ROWS)
                )
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


@dataclass(frozen=True)
class ImportCleanup:
    """What :func:`cleanup_imports` found: imports of killed processes ``removed`` (killed
    before their commit point: nothing of them was ever visible, and nothing is left), and the
    datasets whose import was ``finished`` (killed past its commit point: its rows were all
    visible already; only the marks were left to clear)."""

    removed: int = 0
    finished: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.removed or self.finished)

    def summary(self) -> str:
        """One line for people ('' when nothing was found)."""
        parts = []
        if self.removed:
            parts.append(
                f"Removed {self.removed} unfinished import(s) of killed processes (nothing of "
                "them had been visible)."
            )
        if self.finished:
            names = ", ".join(repr(n) for n in self.finished)
            parts.append(
                f"Finished {len(self.finished)} committed import(s) of killed processes into "
                f"{names} (their rows were already all visible)."
            )
        return " ".join(parts)


def cleanup_imports(url: str | None) -> ImportCleanup:
    """Delete the hidden datasets (and rows) of imports that were killed before their commit
    point, and finish the adoption of those killed after it; what it did."""
    with store_scope(url) as s:
        stmt = select(Dataset.id, Dataset.name, Dataset.description, Dataset.created_at)
        hidden = s.execute(stmt.where(Dataset.name.startswith(IMPORTING_PREFIX))).all()
        names = dict(s.execute(select(Dataset.id, Dataset.name)).tuples().all())
    removed, finished = 0, []
    for ds_id, name, desc, written in hidden:
        if not _abandoned(name, written):
            continue
        state = marker(desc)
        if committed(name):
            adopt(url, ds_id)  # past its commit point
            finished.append(names.get(state.get("into"), "(deleted since)"))
        else:
            discard_import(url, ds_id, state["raters"])
            removed += 1
    return ImportCleanup(removed, tuple(finished))
