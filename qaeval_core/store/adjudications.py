"""Adjudications: researchers' final labels for items whose raters disagree.

Like labels they are append-only: :func:`add_adjudication` is one ``INSERT`` in a short
``BEGIN IMMEDIATE`` transaction, so the history of who decided what and when is never lost, and
the last row per item is the current decision. The rules about what a decision needs (a valid
value, a reason) live in :mod:`qaeval_core.analysis.adjudication`; this module checks, inside
the write transaction, that the account may still adjudicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from sqlalchemy import select

from qaeval_core.errors import NotFoundError, PermissionDenied
from qaeval_core.store.datasets import dataset_filter
from qaeval_core.store.orm import Adjudication, ItemRecord, User, utcnow
from qaeval_core.store.scope import Store, store_scope

__all__ = ["ADJUDICATION_COLUMNS", "AdjudicationRecord", "add_adjudication", "adjudication_rows"]

ADJUDICATION_COLUMNS = [
    "adjudication_id",
    "item_id",
    "user",
    "value",
    "reason",
    "created_at",
]


@dataclass(frozen=True)
class AdjudicationRecord:
    """One committed adjudication (who decided what, when and why)."""

    id: int
    item_id: int
    user: str
    value: int
    reason: str
    created_at: datetime


def add_adjudication(
    db: Store, item_id: int, user: str, value: int, reason: str, *, roles: Sequence[str]
) -> AdjudicationRecord:
    """Append ``user``'s final label ``value`` for an item, with its ``reason``.

    The account is re-read inside the write transaction, so a user demoted or deactivated since
    logging in cannot adjudicate: :class:`PermissionDenied` unless it is active and has one of
    ``roles``. An unknown item raises :class:`NotFoundError`. ``value`` and ``reason`` are
    stored as given (the caller validates them).
    """
    with store_scope(db, write=True) as s:
        account = s.execute(select(User).where(User.name == user)).scalar_one_or_none()
        if account is None or not account.active or account.role not in roles:
            role = "no active account" if account is None or not account.active else account.role
            raise PermissionDenied(
                f"{user!r} ({role}) cannot adjudicate; only {' or '.join(roles)} accounts can."
            )
        if s.get(ItemRecord, int(item_id)) is None:
            raise NotFoundError(f"No item with id {item_id}.")
        row = Adjudication(
            item_id=int(item_id),
            user_id=account.id,
            value=value,
            reason=reason,
            created_at=utcnow(),
        )
        s.add(row)
        s.flush()
        return AdjudicationRecord(row.id, row.item_id, account.name, value, reason, row.created_at)


def adjudication_rows(db: Store, dataset: str | None, item_id: int | None = None) -> pd.DataFrame:
    """Adjudication rows (oldest first) of a dataset or one item (columns:
    :data:`ADJUDICATION_COLUMNS`; ``value`` as int)."""
    with store_scope(db) as s:
        stmt = (
            select(
                Adjudication.id,
                Adjudication.item_id,
                User.name,
                Adjudication.value,
                Adjudication.reason,
                Adjudication.created_at,
            )
            .join(ItemRecord, ItemRecord.id == Adjudication.item_id)
            .join(User, User.id == Adjudication.user_id)
            .where(dataset_filter(s, dataset))
            .order_by(Adjudication.id)
        )
        if item_id is not None:
            stmt = stmt.where(Adjudication.item_id == item_id)
        rows = [tuple(r) for r in s.execute(stmt).all()]
    frame = pd.DataFrame(rows, columns=ADJUDICATION_COLUMNS)
    frame["value"] = frame["value"].astype(int)
    return frame
