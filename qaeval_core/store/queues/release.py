"""Releasing a queue: take back the items someone was dealt but has not labelled.

"Queue it for me" deals a whole dataset to one researcher; every item then already has its one
annotator, and a later deal to the team tops nothing up (it says so: :meth:`.DealResult.notes`).
Releasing that queue removes the holder's *unlabelled* assignments, so the next deal can give
those items to others. What they labelled stays theirs: a label is never touched here, and its
assignment stays so the label keeps counting as done in progress.

It runs like :func:`~.assignment.reassign`: one write transaction, the dataset locked
(:func:`~.dealing.lock_dataset`) and, on PostgreSQL, the holder's assignment rows locked first,
so a label saved at the same moment either lands first (its item stays) or is refused as "no
longer assigned" - never lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select

from qaeval_core.errors import ConfigError
from qaeval_core.store.datasets import DatasetRef, find_dataset
from qaeval_core.store.labels import labelled_by
from qaeval_core.store.orm import Assignment, ItemRecord
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.queues.assignment import lock_queue
from qaeval_core.store.queues.dealing import lock_dataset
from qaeval_core.store.session import write_scope
from qaeval_core.store.users import find_user

__all__ = ["RELEASER_ROLES", "ReleaseResult", "release_queue"]

#: Who may release a queue (their own or anyone's): the people who deal queues.
RELEASER_ROLES = ("researcher", "admin")


@dataclass(frozen=True)
class ReleaseResult:
    """What :func:`release_queue` did: ``released`` unlabelled items taken out of ``user``'s
    queue in ``dataset``; ``kept`` labelled items that stay in it."""

    dataset: str
    user: str
    released: int
    kept: int

    def summary(self) -> str:
        kept = f"; {self.kept} labelled item(s) stay theirs" if self.kept else ""
        return (
            f"Released {self.released} unlabelled item(s) from {self.user}'s queue in "
            f"{self.dataset}{kept}. Deal the dataset again to give them to others."
        )


@own_transaction
def release_queue(
    db: StoreURL,
    dataset: DatasetRef,
    user: str,
    *,
    by: str | None = None,
) -> ReleaseResult:
    """Remove ``user``'s unlabelled assignments in ``dataset`` (see the module docstring).

    ``by`` (a user name) is who asks: a researcher or admin, who may release their own queue
    or anyone's; None is a trusted caller (CLI, tests). Releasing an empty queue releases 0.
    """
    with write_scope(db) as session:
        ds = find_dataset(session, dataset)
        holder = find_user(session, user)
        if by is not None:
            asker = find_user(session, by)
            if asker.role not in RELEASER_ROLES or not asker.active:
                raise ConfigError(
                    f"User {asker.name!r} (role {asker.role}) cannot release queues; ask a "
                    f"{' or '.join(RELEASER_ROLES)}."
                )
        lock_dataset(session, ds.id)
        lock_queue(session, ds.id, holder.id)
        in_dataset = (
            select(Assignment.item_id, labelled_by(holder.id, Assignment.item_id))
            .join(ItemRecord, ItemRecord.id == Assignment.item_id)
            .where(ItemRecord.dataset_id == ds.id, Assignment.user_id == holder.id)
        )
        rows = session.execute(in_dataset).all()
        free = [int(item_id) for item_id, labelled in rows if not labelled]
        for start in range(0, len(free), 500):
            chunk = free[start : start + 500]
            session.execute(
                delete(Assignment).where(
                    Assignment.user_id == holder.id,
                    Assignment.item_id.in_(chunk),
                    ~labelled_by(holder.id, Assignment.item_id),
                )
            )
        return ReleaseResult(ds.name, holder.name, len(free), len(rows) - len(free))
