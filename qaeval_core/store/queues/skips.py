"""Skipping items and the annotator's own queue filters (pending / done / skipped / flagged).

A skip is stored on the assignment (``skipped_at``), not kept in the browser: a skipped item
stays out of the pending queue across reloads and sessions until the annotator revisits it
(one item, or all of them). Labelling a skipped item simply makes it done. The filters only
read the asking user's own rows, like everything the annotator sees (labelling is blind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from sqlalchemy import and_, exists, select, update

from qaeval_core.errors import InputError, PermissionDenied
from qaeval_core.store.datasets import DatasetRef, find_dataset_id
from qaeval_core.store.labels import labelled_by
from qaeval_core.store.orm import Assignment, Flag, ItemRecord, utcnow
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.session import session_scope, write_scope
from qaeval_core.store.users import UserRef, find_user_id, require_live_login

__all__ = [
    "QUEUE_FILTERS",
    "QueueEntry",
    "QueueFilter",
    "queue_entries",
    "revisit_skipped",
    "skip_item",
    "skipped_count",
]

QueueFilter = Literal["pending", "done", "skipped", "flagged"]
#: The annotator's queue filters, in the order the page shows them.
QUEUE_FILTERS: tuple[QueueFilter, ...] = get_args(QueueFilter)


@dataclass(frozen=True)
class QueueEntry:
    """One row of an annotator's filtered queue: enough to recognise and open the item."""

    item_id: int
    external_id: str
    question: str
    status: QueueFilter


@own_transaction
def skip_item(db: StoreURL, user: UserRef, item_id: int, *, login: str | None = None) -> None:
    """Mark an item of the user's queue as skipped (kept until :func:`revisit_skipped`).

    Raises :class:`PermissionDenied` when the item is not (or no longer) in the queue, and
    :class:`~qaeval_core.store.users.LoginEnded` when the account is deactivated or
    ``login`` (the page's login session token) has ended; checked in the same transaction.
    """
    with write_scope(db) as session:
        uid = find_user_id(session, user)
        require_live_login(session, uid, login)
        done = session.execute(
            update(Assignment)
            .where(Assignment.user_id == uid, Assignment.item_id == int(item_id))
            .values(skipped_at=utcnow())
        )
        if done.rowcount == 0:
            raise PermissionDenied(f"Item {item_id} is not (or no longer) in your queue.")


@own_transaction
def revisit_skipped(
    db: StoreURL,
    user: UserRef,
    dataset: DatasetRef,
    *,
    item_id: int | None = None,
) -> int:
    """Put the user's skipped items of a dataset (or just ``item_id``) back in the pending
    queue; returns how many came back."""
    with write_scope(db) as session:
        uid = find_user_id(session, user)
        did = find_dataset_id(session, dataset)
        in_dataset = select(ItemRecord.id).where(ItemRecord.dataset_id == did)
        stmt = (
            update(Assignment)
            .where(
                Assignment.user_id == uid,
                Assignment.skipped_at.is_not(None),
                Assignment.item_id.in_(in_dataset),
            )
            .values(skipped_at=None)
        )
        if item_id is not None:
            stmt = stmt.where(Assignment.item_id == int(item_id))
        return int(session.execute(stmt).rowcount or 0)


@own_transaction
def skipped_count(db: StoreURL, user: UserRef, dataset: DatasetRef) -> int:
    """How many of the user's unlabelled items in the dataset are skipped."""
    return len(queue_entries(db, user, dataset, "skipped", limit=None))


@own_transaction
def queue_entries(
    db: StoreURL,
    user: UserRef,
    dataset: DatasetRef,
    status: QueueFilter,
    *,
    limit: int | None = 200,
) -> list[QueueEntry]:
    """The user's own items of a dataset with one status, in queue order.

    ``pending``: not labelled, not skipped (what :func:`.next_item` serves next); ``done``:
    labelled; ``skipped``: not labelled and skipped (flagging skips too); ``flagged``: the user
    has an open (unresolved) flag on it, labelled or not.
    """
    if status not in QUEUE_FILTERS:
        raise InputError(
            f"Unknown queue filter {status!r}; choose one of: {', '.join(QUEUE_FILTERS)}."
        )
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        did = find_dataset_id(session, dataset)
        done = labelled_by(uid, Assignment.item_id)
        flagged = exists().where(
            and_(Flag.item_id == Assignment.item_id, Flag.user_id == uid),
            Flag.resolved_at.is_(None),
        )
        where = {
            "pending": and_(~done, Assignment.skipped_at.is_(None)),
            "done": done,
            "skipped": and_(~done, Assignment.skipped_at.is_not(None)),
            "flagged": flagged,
        }[status]
        stmt = (
            select(ItemRecord.id, ItemRecord.external_id, ItemRecord.question)
            .join(Assignment, Assignment.item_id == ItemRecord.id)
            .where(Assignment.user_id == uid, ItemRecord.dataset_id == did, where)
            .order_by(Assignment.position, Assignment.item_id)
        )
        if limit is not None:
            stmt = stmt.limit(limit)
        return [QueueEntry(i, e, q, status) for i, e, q in session.execute(stmt)]
