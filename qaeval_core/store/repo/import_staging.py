"""The staging area of an import that joins a caller's transaction: rows written where no one
sees them, then copied in; and the ``items`` columns every import path writes (:func:`item_values`).

(An import on a store URL takes the chunked paths instead: a new dataset is written under a
hidden name and renamed at the end (:mod:`.import_pending`); an existing dataset gets its rows
staged in such a hidden dataset and moved in a chunk per transaction (:mod:`.import_existing`),
because the final copy below held SQLite's write lock for the whole file: 12.8 s of waiting
saves for 200,000 rows, issue 21.)

Rows go first into temporary tables of the import's connection (:class:`ImportStage`), in batches
of :data:`IMPORT_CHUNK_ROWS` rows; the final write of
:func:`~qaeval_core.store.repo.imports.import_items` copies them into ``items`` and ``labels``
with one ``INSERT ... SELECT`` each, inside the caller's transaction (which then decides). A
killed import leaves only temporary tables, which vanish with its connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    insert,
    literal,
    select,
)
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from qaeval_core import io
from qaeval_core.store.orm import ItemRecord, Label, User, utcnow
from qaeval_core.store.repo._common import Store, store_error
from qaeval_core.store.session import get_engine, map_busy

__all__ = ["IMPORT_CHUNK_ROWS", "IMPORT_SOURCE", "ITEM_COLUMNS_WRITTEN", "item_values"]

#: ``labels.source`` of labels that came from a file.
IMPORT_SOURCE = "import"


#: Rows per short write transaction of an import: staged here (each touches only this
#: connection's temp tables), written into a new dataset, adopted into an existing one or
#: deleted with a discarded import. (An import into an existing dataset reads and stages
#: :data:`~.import_existing.EXISTING_IMPORT_CHUNK_ROWS` items at a time.)
IMPORT_CHUNK_ROWS = 5000


class ImportStage:
    """Temporary tables of one connection holding an import's new items and labels.

    Temporary tables are private to the connection and disappear with it, so rows staged by an
    import that crashes or is killed are never visible and need no cleanup; writing them takes
    no lock on the store (SQLite keeps them in a separate temp database). :meth:`publish` copies
    them into ``items`` and ``labels`` in one ``INSERT ... SELECT`` each, inside the final
    write transaction. With a caller's Session (``db``) everything joins its transaction.
    """

    def __init__(self, db: Store) -> None:
        self._session = db if isinstance(db, Session) else None
        self._db = None if isinstance(db, Session) else db
        self._conn: Connection | None = None
        tag = uuid.uuid4().hex[:12]
        meta = MetaData()
        self.items = Table(
            f"qaeval_stage_items_{tag}",
            meta,
            Column("seq", Integer, primary_key=True),
            *(
                Column(c.name, c.type)
                for c in ItemRecord.__table__.columns
                if c.name in ITEM_COLUMNS_WRITTEN
            ),
            prefixes=["TEMPORARY"],
        )
        self.labels = Table(
            f"qaeval_stage_labels_{tag}",
            meta,
            Column("seq", Integer, primary_key=True),
            Column("external_id", String(300)),
            Column("rater", String(200)),
            *(Column(c, Label.__table__.c[c].type) for c in ("value", "rule", "note", "seconds")),
            prefixes=["TEMPORARY"],
        )
        self._meta = meta

    def __enter__(self) -> ImportStage:
        try:
            if self._session is not None:
                self._conn = self._session.connection()
            else:
                self._conn = get_engine(self._db).connect()
            with self._txn():
                self._meta.create_all(self._conn)
        except Exception:
            self._close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None or self._session is None:
                with self._txn():
                    self._meta.drop_all(self._conn)
        finally:
            self._close()

    def _close(self) -> None:
        if self._session is None and self._conn is not None:
            self._conn.close()  # a broken or killed import: the temp tables go with it

    @contextmanager
    def _txn(self) -> Iterator[None]:
        assert self._conn is not None
        if self._session is not None:
            yield
            return
        try:
            with self._conn.begin():
                yield
        except (OperationalError, ProgrammingError, IntegrityError) as exc:
            raise map_busy(exc) or store_error(exc) from exc

    def write(self, rows: list[io.ItemRow]) -> None:
        """Stage the items and their labels, one short transaction per
        :data:`IMPORT_CHUNK_ROWS` rows."""
        assert self._conn is not None
        seq = 0
        for start in range(0, len(rows), IMPORT_CHUNK_ROWS):
            chunk = rows[start : start + IMPORT_CHUNK_ROWS]
            labels = []
            for r in chunk:
                for lab in r.labels:
                    seq += 1
                    labels.append(
                        {
                            "seq": seq,
                            "external_id": r.external_id,
                            "rater": lab.rater,
                            "value": lab.value,
                            "rule": lab.rule,
                            "note": lab.note,
                            "seconds": lab.seconds,
                        }
                    )
            with self._txn():
                self._conn.execute(
                    insert(self.items),
                    [{"seq": start + k, **item_values(r)} for k, r in enumerate(chunk)],
                )
                if labels:
                    self._conn.execute(insert(self.labels), labels)

    @contextmanager
    def publish(self) -> Iterator[Session]:
        """The final, short write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
        if self._session is not None:
            yield self._session
            return
        assert self._conn is not None
        self._conn.execution_options(sqlite_begin="IMMEDIATE")
        try:
            with self._txn(), Session(bind=self._conn) as s:
                yield s
                s.flush()
        finally:
            self._conn.execution_options(sqlite_begin="DEFERRED")

    def insert_items(self, dataset_id: int) -> None:
        cols = [self.items.c[c] for c in ITEM_COLUMNS_WRITTEN]
        rows = select(
            literal(dataset_id, Integer), literal(utcnow(), DateTime(timezone=True)), *cols
        ).order_by(self.items.c.seq)
        stmt = insert(ItemRecord).from_select(
            ["dataset_id", "created_at", *ITEM_COLUMNS_WRITTEN], rows
        )
        self._execute(stmt)

    def insert_labels(self, dataset_id: int) -> int:
        lab, it = self.labels, ItemRecord.__table__
        rows = (
            select(
                it.c.id,
                User.__table__.c.id,
                lab.c.value,
                lab.c.rule,
                lab.c.note,
                lab.c.seconds,
                literal(IMPORT_SOURCE, String(20)),
                literal(utcnow(), DateTime(timezone=True)),
            )
            .join(it, (it.c.dataset_id == dataset_id) & (it.c.external_id == lab.c.external_id))
            .join(User.__table__, User.__table__.c.name == lab.c.rater)
            .order_by(lab.c.seq)
        )
        cols = ["item_id", "user_id", "value", "rule", "note", "seconds", "source", "created_at"]
        return self._execute(insert(Label).from_select(cols, rows)).rowcount

    def _execute(self, stmt: Any) -> Any:
        assert self._conn is not None
        return self._conn.execute(stmt)


#: The ``items`` columns an import writes (also those of its staging tables).
ITEM_COLUMNS_WRITTEN = (
    "external_id",
    "question",
    "references",
    "candidate",
    "context",
    "choices",
    "wrong_answers",
    "qa_model",
    "meta",
    "content_hash",
)
_ITEM_VALUES = attrgetter(*ITEM_COLUMNS_WRITTEN)


def item_values(row: Any) -> dict[str, Any]:
    """The ``items`` columns an import writes, from a parsed row (:class:`io.ItemRow`); the one
    mapping shared by the staged, the chunked and the single-transaction import paths."""
    return dict(zip(ITEM_COLUMNS_WRITTEN, _ITEM_VALUES(row), strict=True))
