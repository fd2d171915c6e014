"""Flags for review as researchers see them: list them (open or all) and resolve one.

Annotators write flags through :func:`qaeval_core.store.annotation.flag_item`. Resolving keeps
the flag (who resolved it, when, and what they decided): the list of flags is a record of the
problems the team met, never rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy import select, update
from sqlalchemy.orm import aliased

from qaeval_core.errors import NotFoundError, PermissionDenied
from qaeval_core.store.orm import Dataset, Flag, ItemRecord, User, utcnow, visible_dataset
from qaeval_core.store.repo._common import Store, store_scope
from qaeval_core.store.repo.datasets import find_dataset

__all__ = ["FLAG_COLUMNS", "list_flags", "resolve_flag"]

FLAG_COLUMNS = [
    "flag_id", "dataset", "item_id", "external_id", "question", "user", "reason", "created_at",
    "resolved_at", "resolved_by", "resolution",
]  # fmt: skip


def list_flags(db: Store, dataset: str | None = None, *, open_only: bool = True) -> pd.DataFrame:
    """Flags, newest first (columns :data:`FLAG_COLUMNS`); ``open_only``: unresolved ones."""
    resolver = aliased(User)
    stmt = (
        select(
            Flag.id,
            Dataset.name,
            Flag.item_id,
            ItemRecord.external_id,
            ItemRecord.question,
            User.name,
            Flag.reason,
            Flag.created_at,
            Flag.resolved_at,
            resolver.name,
            Flag.resolution,
        )
        .join(ItemRecord, ItemRecord.id == Flag.item_id)
        .join(Dataset, (Dataset.id == ItemRecord.dataset_id) & visible_dataset())
        .join(User, User.id == Flag.user_id)
        .outerjoin(resolver, resolver.id == Flag.resolved_by)
        .order_by(Flag.id.desc())
    )
    if open_only:
        stmt = stmt.where(Flag.resolved_at.is_(None))
    with store_scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Dataset.id == find_dataset(s, dataset).id)
        rows = s.execute(stmt).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=FLAG_COLUMNS)


def resolve_flag(
    db: Store, flag_id: int, user: str, resolution: str, *, roles: Sequence[str]
) -> None:
    """Mark a flag resolved by ``user`` with what they decided (kept with the flag).

    The account is re-read inside the write transaction (:class:`PermissionDenied` unless it
    is active and has one of ``roles``); an unknown or already resolved flag raises
    :class:`NotFoundError`.
    """
    with store_scope(db, write=True) as s:
        account = s.execute(select(User).where(User.name == user)).scalar_one_or_none()
        if account is None or not account.active or account.role not in roles:
            raise PermissionDenied(
                f"{user!r} cannot resolve flags; only {' or '.join(roles)} accounts can."
            )
        done = s.execute(
            update(Flag)
            .where(Flag.id == int(flag_id), Flag.resolved_at.is_(None))
            .values(
                resolved_at=utcnow(),
                resolved_by=account.id,
                resolution=(resolution or "").strip() or None,
            )
        )
        if done.rowcount == 0:
            raise NotFoundError(f"No open flag {flag_id}; it may have been resolved already.")
