"""Saving a label and reading one's own labels back (history, current label, earlier items).

Labels are appended, never updated: saving is a single ``INSERT ... SELECT`` that also checks the
item is in the user's queue, so a label whose id was returned is committed and can never be lost
or overwritten. The readers only ever return the asking user's own rows (labelling is blind).

Reading labels as tables (researchers' side): :func:`current_labels` (the current label per
item and user) and :func:`label_history_frame` (every label ever written), for exports,
comparisons and calibration; imports write labels too (:mod:`.items.imports`).
:func:`labelled_by` is the one "has this user labelled it" test of the queues.

Why it is one module: a label is one entity whichever side reads it; the annotator's own rows
(blind) and the researchers' tables read the same append-only history by the same rule (the
latest row per item and user is the current label), so they stay next to each other.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import (
    DateTime,
    Float,
    Integer,
    String,
    Text,
    bindparam,
    exists,
    func,
    insert,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased

from qaeval_core.errors import ConfigError, PermissionDenied
from qaeval_core.schema import RULES, LabelValue, parse_label_value
from qaeval_core.store.datasets import DatasetRef, find_dataset, find_dataset_id
from qaeval_core.store.orm import (
    Assignment,
    Dataset,
    ItemRecord,
    Label,
    User,
    utcnow,
    visible_dataset,
)
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.scope import Store, store_scope
from qaeval_core.store.session import session_scope, write_scope
from qaeval_core.store.users import UserRef, find_user_id, require_live_login

__all__ = [
    "LABEL_COLUMNS",
    "MAX_NOTE_CHARS",
    "current_label",
    "current_labels",
    "label_history",
    "label_history_frame",
    "labelled_by",
    "labelled_items",
    "LabelledEntry",
    "LabelRecord",
    "save_label",
]


#: Serialises this process's label writes. Threads of one server (Streamlit sessions) then
#: queue on a fair in-process lock instead of SQLite's busy handler, which sleeps in growing
#: steps (up to 100 ms) while another connection holds the write lock; other processes are
#: still kept apart by BEGIN IMMEDIATE.
_WRITE_LOCK = threading.Lock()
#: Notes longer than this are cut (a note is a remark, not a document).
MAX_NOTE_CHARS = 5000


@dataclass(frozen=True)
class LabelRecord:
    """One row of a user's label history for an item (the latest row is the current label)."""

    id: int
    item_id: int
    user_id: int
    value: LabelValue
    rule: int | None
    note: str | None
    seconds: float | None
    created_at: datetime | None
    source: str = "app"
    wall_seconds: float | None = None


@dataclass(frozen=True)
class LabelledEntry:
    """A row of "my earlier labels": enough to find an item again and see one's current label."""

    item_id: int
    external_id: str
    question: str
    value: LabelValue
    rule: int | None
    edits: int
    labelled_at: datetime | None


def _record(label: Label) -> LabelRecord:
    return LabelRecord(
        id=label.id,
        item_id=label.item_id,
        user_id=label.user_id,
        value=LabelValue(label.value),
        rule=label.rule,
        note=label.note,
        seconds=label.seconds,
        created_at=label.created_at,
        source=label.source,
        wall_seconds=label.wall_seconds,
    )


def _clean_label(
    value: int | LabelValue,
    rule: int | None,
    note: str | None,
    seconds: float | None,
    rules: Collection[int] | None = None,
) -> tuple[int, int | None, str | None, float | None]:
    val = parse_label_value(value)
    numbers = set(rules) if rules is not None else {r.number for r in RULES}
    if rule is not None and int(rule) not in numbers:
        raise ConfigError(f"Rule must be one of 1-{max(numbers)} or none, got {rule!r}.")
    text = (note or "").strip()[:MAX_NOTE_CHARS] or None
    secs = float(seconds) if seconds is not None and float(seconds) >= 0 else None
    return val, (int(rule) if rule is not None else None), text, secs


def _label_insert(*, require_assignment: bool) -> Any:
    """``INSERT INTO labels ... SELECT <values> [WHERE EXISTS (assignment)] RETURNING id``."""
    cols = {
        "item_id": Integer,
        "user_id": Integer,
        "value": Integer,
        "rule": Integer,
        "note": Text,
        "seconds": Float,
        "wall_seconds": Float,
        "source": String,
        "created_at": DateTime(timezone=True),
    }
    params = {name: bindparam(name, type_=type_) for name, type_ in cols.items()}
    values = select(*(p.label(name) for name, p in params.items()))
    if require_assignment:
        values = values.where(
            exists().where(
                Assignment.item_id == params["item_id"], Assignment.user_id == params["user_id"]
            )
        )
    table = Label.__table__
    return insert(table).from_select(list(cols), values).returning(table.c.id, table.c.created_at)


#: Built once: the write path is hot and holds the write lock, so it should do no extra work.
_INSERT_LABEL = _label_insert(require_assignment=True)
_INSERT_LABEL_ANYWHERE = _label_insert(require_assignment=False)


def _lock_for_label(
    conn: Connection, user_id: int, item_id: int, require_assignment: bool
) -> tuple[bool, datetime]:
    """Serialise a label write; (may it be written, its ``created_at``), read after the locks.

    SQLite: the caller's ``BEGIN IMMEDIATE`` already holds the database's write lock, so this
    only reads the clock. PostgreSQL: a transaction advisory lock on (user, item) orders saves
    of one item by one user, and ``FOR SHARE`` on the assignment row waits for a reassignment
    in progress (which holds it ``FOR UPDATE``) and then sees whether the row survived it.
    """
    if conn.dialect.name != "postgresql":
        return True, utcnow()
    conn.execute(select(func.pg_advisory_xact_lock(user_id, item_id)))
    allowed = True
    if require_assignment:
        held = select(Assignment.item_id).where(
            Assignment.item_id == item_id, Assignment.user_id == user_id
        )
        allowed = conn.execute(held.with_for_update(read=True)).first() is not None
    return allowed, conn.execute(select(func.clock_timestamp())).scalar_one()


@own_transaction
def save_label(
    db: StoreURL,
    user: UserRef,
    item_id: int,
    value: int | LabelValue,
    *,
    rule: int | None = None,
    note: str | None = None,
    seconds: float | None = None,
    wall_seconds: float | None = None,
    rules: Collection[int] | None = None,
    require_assignment: bool = True,
    source: str = "app",
    login: str | None = None,
) -> LabelRecord:
    """Append a label to the user's history for an item and return it once committed.

    ``seconds`` is the active time on the item (idle gaps already cut to the project's cap),
    ``wall_seconds`` the wall time; ``rules`` are the rule numbers the item's project allows
    (default: the NAQT-derived 1-7).

    A single ``INSERT ... SELECT ... WHERE EXISTS (assignment)`` inside ``BEGIN IMMEDIATE``: the
    queue check and the write are one statement, the lock is held for microseconds, and an edit
    is simply a newer row. When this returns, the label is durable; nothing ever updates or
    deletes it.

    On PostgreSQL, which has no database-wide write lock, :func:`_lock_for_label` first takes
    a transaction lock on (user, item), so two saves of one item by one user run one after the
    other, and a share lock on the assignment row, which :func:`.reassign` locks for update: a
    label lands before a reassignment (the item then stays the user's) or is refused after it.
    ``created_at`` is read after those locks, so the newest row (highest id) is also the latest
    in time: "current" and the time order agree.

    The account must be active, and with ``login`` (the token of the page's login session) that
    session must be live: both are checked in the same transaction as the insert
    (:func:`~qaeval_core.store.users.require_live_login`), so a page left open after a
    deactivation, a password change or a logout elsewhere stores nothing
    (:class:`~qaeval_core.store.users.LoginEnded`).
    """
    val, rule_n, text, secs = _clean_label(value, rule, note, seconds, rules)
    wall = float(wall_seconds) if wall_seconds is not None and float(wall_seconds) >= 0 else None
    with _WRITE_LOCK, write_scope(db) as session:
        uid = find_user_id(session, user)
        conn = session.connection()  # begins the transaction: BEGIN IMMEDIATE holds the lock
        allowed, created_at = _lock_for_label(conn, uid, item_id, require_assignment)
        require_live_login(session, uid, login)
        params = {
            "item_id": item_id,
            "user_id": uid,
            "value": val,
            "rule": rule_n,
            "note": text,
            "seconds": secs,
            "wall_seconds": wall,
            "source": source,
            "created_at": created_at,
        }
        stmt = _INSERT_LABEL if require_assignment else _INSERT_LABEL_ANYWHERE
        row = conn.execute(stmt, params).first() if allowed else None
        if row is None:
            raise PermissionDenied(
                f"Item {item_id} is not (or no longer) in your queue, so the label was not "
                "saved. It may have been reassigned; open the next item."
            )
        return LabelRecord(
            id=row.id,
            item_id=item_id,
            user_id=uid,
            value=LabelValue(val),
            rule=rule_n,
            note=text,
            seconds=secs,
            created_at=row.created_at,
            source=source,
            wall_seconds=wall,
        )


@own_transaction
def label_history(db: StoreURL, user: UserRef, item_id: int) -> list[LabelRecord]:
    """The user's own labels for an item, oldest first (the last one is current)."""
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        rows = session.scalars(
            select(Label).where(Label.user_id == uid, Label.item_id == item_id).order_by(Label.id)
        )
        return [_record(r) for r in rows]


@own_transaction
def current_label(db: StoreURL, user: UserRef, item_id: int) -> LabelRecord | None:
    """The user's latest label for an item, or None."""
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        row = session.scalars(
            select(Label)
            .where(Label.user_id == uid, Label.item_id == item_id)
            .order_by(Label.id.desc())
            .limit(1)
        ).first()
        return _record(row) if row is not None else None


@own_transaction
def labelled_items(
    db: StoreURL,
    user: UserRef,
    dataset: DatasetRef,
    *,
    limit: int = 50,
    offset: int = 0,
) -> list[LabelledEntry]:
    """The user's own labelled items in a dataset, most recently labelled first.

    Backs the "my earlier labels" list, from which any own label can be reopened and edited.
    Walks the user's labels newest first over ``ix_labels_user_id`` and keeps the rows no newer
    label supersedes, so it stops after ``limit`` items instead of grouping the whole history.
    """
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        did = find_dataset_id(session, dataset)
        newer = aliased(Label)
        older = aliased(Label)
        edits = (
            select(func.count())
            .where(older.item_id == Label.item_id, older.user_id == uid, older.id < Label.id)
            .scalar_subquery()
        )
        rows = session.execute(
            select(ItemRecord.id, ItemRecord.external_id, ItemRecord.question, Label, edits)
            .join(ItemRecord, ItemRecord.id == Label.item_id)
            .where(
                Label.user_id == uid,
                ItemRecord.dataset_id == did,
                ~exists().where(
                    newer.item_id == Label.item_id, newer.user_id == uid, newer.id > Label.id
                ),
            )
            .order_by(Label.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return [
            LabelledEntry(
                item_id=r[0],
                external_id=r[1],
                question=r[2],
                value=LabelValue(r[3].value),
                rule=r[3].rule,
                edits=int(r[4]),
                labelled_at=r[3].created_at,
            )
            for r in rows
        ]


LABEL_COLUMNS = [
    "label_id",
    "item_id",
    "external_id",
    "dataset",
    "user",
    "role",
    "value",
    "rule",
    "note",
    "seconds",
    "source",
    "created_at",
]


def _labels_frame(db: Store, dataset: str | None, *, current: bool) -> pd.DataFrame:
    stmt = (
        select(
            Label.id,
            Label.item_id,
            ItemRecord.external_id,
            Dataset.name,
            User.name,
            User.role,
            Label.value,
            Label.rule,
            Label.note,
            Label.seconds,
            Label.source,
            Label.created_at,
        )
        .join(ItemRecord, ItemRecord.id == Label.item_id)
        .join(Dataset, (Dataset.id == ItemRecord.dataset_id) & visible_dataset())
        .join(User, User.id == Label.user_id)
        .order_by(Label.id)
    )
    with store_scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Dataset.id == find_dataset(s, dataset).id)
        if current:
            latest = select(func.max(Label.id)).group_by(Label.item_id, Label.user_id)
            stmt = stmt.where(Label.id.in_(latest))
        rows = s.execute(stmt).all()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=LABEL_COLUMNS)
    frame["rule"] = frame["rule"].astype("Int64")
    return frame


def current_labels(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """The current label per (item, user): the latest row of the append-only history."""
    return _labels_frame(db, dataset, current=True)


def label_history_frame(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """Every label ever written, oldest first (columns: :data:`LABEL_COLUMNS`)."""
    return _labels_frame(db, dataset, current=False)


def labelled_by(user_id: Any, item_col: Any) -> Any:
    """``EXISTS`` a label by ``user_id`` for the item in ``item_col`` (uses ix_labels_item_user):
    the one "has this user labelled it" test of reassigning, releasing and the progress counts."""
    return exists().where(Label.item_id == item_col, Label.user_id == user_id)
