"""Serving items to an annotator: the next one in their queue, back and forward, one by id.

What an annotator is shown (:class:`QueueItem`) is blind by construction: no metric scores, no
QA-model name, no metadata, no other annotator's labels. The next item is one query, built
once, over a covering index, because it runs on every click of the labelling page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, bindparam, exists, func, select
from sqlalchemy.orm import Session, aliased

from qaeval_core.errors import PermissionDenied
from qaeval_core.store.datasets import DatasetRef, find_dataset_id
from qaeval_core.store.orm import Assignment, Dataset, ItemRecord, Label
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.session import session_scope
from qaeval_core.store.users import UserRef, find_user_id

__all__ = [
    "QueueItem",
    "datasets_for_user",
    "following_item",
    "get_item",
    "next_item",
    "previous_item",
]


@dataclass(frozen=True)
class QueueItem:
    """What an annotator sees of an item: the question, references and candidate, nothing more.

    Deliberately absent: metric scores, the QA model's name, free-form metadata, known wrong
    answers and anybody's labels - any of them could bias a blind judgment.
    """

    id: int
    external_id: str
    question: str
    references: tuple[str, ...]
    candidate: str
    context: str | None = None
    choices: tuple[str, ...] | None = None


#: The only item columns an annotator is shown (selected as columns, not ORM entities: the
#: queue is the hot path and skipping the ORM identity map saves about a third of its time).
_SHOWN = (
    ItemRecord.id,
    ItemRecord.external_id,
    ItemRecord.question,
    ItemRecord.references,
    ItemRecord.candidate,
    ItemRecord.context,
    ItemRecord.choices,
)


def _queue_item(row: Any) -> QueueItem:
    return QueueItem(
        id=row.id,
        external_id=row.external_id,
        question=row.question,
        references=tuple(str(r) for r in (row.references or [])),
        candidate=row.candidate,
        context=row.context,
        choices=tuple(str(c) for c in row.choices) if row.choices else None,
    )


def _shown_item(session: Session, item_id: int) -> QueueItem:
    return _queue_item(session.execute(select(*_SHOWN).where(ItemRecord.id == item_id)).one())


#: The next-item query, built once (building it per call cost a third of the call's time).
_NEXT_ITEM = (
    select(*_SHOWN)
    .join(Assignment, Assignment.item_id == ItemRecord.id)
    .where(
        Assignment.user_id == bindparam("uid"),
        ItemRecord.dataset_id == bindparam("did"),
        ~exists().where(Label.item_id == Assignment.item_id, Label.user_id == bindparam("uid")),
        Assignment.skipped_at.is_(None),
        Assignment.item_id.not_in(bindparam("skip", expanding=True)),
    )
    .order_by(Assignment.position, Assignment.item_id)
    .limit(1)
)


@own_transaction
def next_item(
    db: StoreURL,
    user: UserRef,
    dataset: DatasetRef,
    *,
    skip: Iterable[int] = (),
) -> QueueItem | None:
    """The first item in the user's queue that they have not labelled (and did not skip).

    Skips are stored (:mod:`.skips`), so a skipped item stays out of the way across sessions
    until the user revisits it; ``skip`` adds item ids to leave out for this call only.

    One query over the covering index ``(user_id, position, item_id)``; cost grows with the
    number of items the user has labelled before the first gap, not with the dataset size.
    Returns None when the queue is done (or only skipped items remain).
    """
    skip_ids = [int(i) for i in skip]
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        did = find_dataset_id(session, dataset)
        params = {"uid": uid, "did": did, "skip": skip_ids}
        row = session.execute(_NEXT_ITEM, params).first()
        return _queue_item(row) if row is not None else None


def _first_labels(user_id: int, dataset_id: int) -> Select[Any]:
    """The user's first label row per item in the dataset: the order items were labelled in.

    Edits do not reorder (only the first row of each item counts), so back/forward walk a
    stable sequence.
    """
    earlier = aliased(Label)
    return (
        select(Label.id, Label.item_id)
        .join(ItemRecord, ItemRecord.id == Label.item_id)
        .where(
            Label.user_id == user_id,
            ItemRecord.dataset_id == dataset_id,
            ~exists().where(
                earlier.item_id == Label.item_id,
                earlier.user_id == user_id,
                earlier.id < Label.id,
            ),
        )
    )


def _first_label_id(session: Session, user_id: int, item_id: int) -> int | None:
    return session.scalar(
        select(func.min(Label.id)).where(Label.user_id == user_id, Label.item_id == item_id)
    )


@own_transaction
def previous_item(
    db: StoreURL,
    user: UserRef,
    dataset: DatasetRef,
    *,
    before: int | None = None,
) -> QueueItem | None:
    """The item the user labelled just before item ``before`` (the latest one if None).

    ``before`` may be an unlabelled item (the one on screen): then the latest labelled item is
    returned. None when there is nothing earlier.
    """
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        did = find_dataset_id(session, dataset)
        stmt = _first_labels(uid, did)
        if before is not None:
            first = _first_label_id(session, uid, before)
            if first is not None:
                stmt = stmt.where(Label.id < first)
        row = session.execute(stmt.order_by(Label.id.desc()).limit(1)).first()
        return _shown_item(session, row.item_id) if row else None


@own_transaction
def following_item(
    db: StoreURL,
    user: UserRef,
    dataset: DatasetRef,
    *,
    after: int,
) -> QueueItem | None:
    """The item the user labelled just after item ``after``; None when ``after`` is the latest.

    Together with :func:`previous_item` this lets an annotator step back through their own
    labels to edit one and then walk forward again.
    """
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        did = find_dataset_id(session, dataset)
        first = _first_label_id(session, uid, after)
        if first is None:
            return None
        stmt = _first_labels(uid, did).where(Label.id > first).order_by(Label.id).limit(1)
        row = session.execute(stmt).first()
        return _shown_item(session, row.item_id) if row else None


@own_transaction
def get_item(db: StoreURL, user: UserRef, item_id: int) -> QueueItem:
    """An item from the user's own queue (raises PermissionDenied for anything else)."""
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        row = session.execute(
            select(*_SHOWN)
            .join(Assignment, Assignment.item_id == ItemRecord.id)
            .where(Assignment.user_id == uid, ItemRecord.id == item_id)
        ).first()
        if row is None:
            raise PermissionDenied(f"Item {item_id} is not in your queue.")
        return _queue_item(row)


@own_transaction
def datasets_for_user(db: StoreURL, user: UserRef) -> list[str]:
    """Names of the datasets in which the user has a queue, alphabetically."""
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        stmt = (
            select(Dataset.name)
            .where(
                exists()
                .where(Assignment.user_id == uid)
                .where(
                    and_(Assignment.item_id == ItemRecord.id, ItemRecord.dataset_id == Dataset.id)
                )
            )
            .order_by(Dataset.name)
        )
        return list(session.scalars(stmt))
