"""Queue order: reading the unlabelled part of annotators' queues and re-positioning it.

:func:`qaeval_core.workflows.reorder_queue` decides the order (pure ranking code); these two
functions are its reads and its write. It runs them in one ``BEGIN IMMEDIATE`` transaction
(:func:`~qaeval_core.store.scope.store_scope` with ``write=True``), so a label saved
meanwhile is either committed before the read (its assignment is left alone) or after the
write. Only ``assignments.position`` changes; labels are never touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import exists, select, update

from qaeval_core.errors import ConfigError
from qaeval_core.store.orm import Assignment, Dataset, ItemRecord, Label, User, visible_dataset
from qaeval_core.store.scope import Store, store_scope

__all__ = ["QueueSlot", "set_assignment_positions", "unlabelled_assignments"]


@dataclass(frozen=True)
class QueueSlot:
    """One assignment whose annotator has not labelled its item yet."""

    assignment_id: int
    item_id: int
    position: float
    user: str


def unlabelled_assignments(db: Store, dataset: str, user: str | None = None) -> list[QueueSlot]:
    """The assignments of ``dataset`` not yet labelled by their annotator (``user``: only that
    annotator's), in no particular order. A missing position reads as 0.

    Raises :class:`ConfigError` for an unknown dataset, or an unknown ``user`` (a known user
    with nothing left to label gets an empty list).
    """
    with store_scope(db, write=True) as s:
        ds_id = s.scalar(select(Dataset.id).where(Dataset.name == dataset, visible_dataset()))
        if ds_id is None:
            raise ConfigError(f"No dataset {dataset!r}.")
        stmt = (
            select(Assignment.id, Assignment.item_id, Assignment.position, User.name)
            .join(ItemRecord, ItemRecord.id == Assignment.item_id)
            .join(User, User.id == Assignment.user_id)
            .where(
                ItemRecord.dataset_id == ds_id,
                ~exists().where(
                    Label.item_id == Assignment.item_id, Label.user_id == Assignment.user_id
                ),
            )
        )
        if user is not None:
            stmt = stmt.where(User.name == user)
        slots = [
            QueueSlot(aid, item_id, float(pos or 0.0), name)
            for aid, item_id, pos, name in s.execute(stmt)
        ]
        if user is not None and not slots:
            exists_user = s.scalar(select(User.id).where(User.name == user))
            if exists_user is None:
                raise ConfigError(f"No user {user!r}.")
    return slots


def set_assignment_positions(db: Store, positions: Iterable[tuple[int, float]]) -> int:
    """Give each ``(assignment id, position)`` its new position; returns how many were given."""
    updates = [{"id": aid, "position": pos} for aid, pos in positions]
    if updates:
        with store_scope(db, write=True) as s:
            s.execute(update(Assignment), updates)
    return len(updates)
