"""An annotator flags an item for review, with a reason a researcher can read.

A flag is how an annotator says "this item is broken / I cannot judge it" without inventing a
label: it is stored with its reason, and the item is skipped in the annotator's queue (so it
stops coming back) until they revisit it. Researchers list and resolve flags through
:mod:`qaeval_core.store.flags`.

Researchers list flags (open or all, :func:`list_flags`) and resolve one (:func:`resolve_flag`).
Resolving keeps the flag (who resolved it, when, and what they decided): the list of flags is a
record of the problems the team met, never rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from sqlalchemy import insert, select, update
from sqlalchemy.orm import aliased

from qaeval_core.errors import InputError, NotFoundError, PermissionDenied
from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import (
    Assignment,
    Dataset,
    Flag,
    ItemRecord,
    User,
    utcnow,
    visible_dataset,
)
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.scope import Store, store_scope
from qaeval_core.store.session import session_scope, write_scope
from qaeval_core.store.users import UserRef, find_user_id, require_live_login

__all__ = [
    "FLAG_COLUMNS",
    "MAX_FLAG_REASON_CHARS",
    "flag_item",
    "FlagRecord",
    "list_flags",
    "open_flags_for",
    "resolve_flag",
]


#: A reason is a remark for the researcher, not a document.
MAX_FLAG_REASON_CHARS = 2000


@dataclass(frozen=True)
class FlagRecord:
    """One committed flag."""

    id: int
    item_id: int
    user_id: int
    reason: str
    created_at: datetime


@own_transaction
def flag_item(
    db: StoreURL,
    user: UserRef,
    item_id: int,
    reason: str,
    *,
    login: str | None = None,
) -> FlagRecord:
    """Flag an item of the user's queue for review with ``reason``; also skips it there.

    Raises :class:`InputError` without a reason and :class:`PermissionDenied` when the item is
    not (or no longer) in the user's queue, or (:class:`~qaeval_core.store.users.
    LoginEnded`) when the account is deactivated or ``login`` (the page's login session token)
    has ended. The check, the flag and the skip commit together.
    """
    text = (reason or "").strip()[:MAX_FLAG_REASON_CHARS]
    if not text:
        raise InputError("Say why the item needs review (the reason is what a researcher reads).")
    with write_scope(db) as session:
        uid = find_user_id(session, user)
        require_live_login(session, uid, login)
        now = utcnow()
        skipped = session.execute(
            update(Assignment)
            .where(Assignment.user_id == uid, Assignment.item_id == int(item_id))
            .values(skipped_at=now)
        )
        if skipped.rowcount == 0:
            raise PermissionDenied(f"Item {item_id} is not (or no longer) in your queue.")
        row = session.execute(
            insert(Flag)
            .values(item_id=int(item_id), user_id=uid, reason=text, created_at=now)
            .returning(Flag.id)
        ).one()
        return FlagRecord(row.id, int(item_id), uid, text, now)


@own_transaction
def open_flags_for(db: StoreURL, user: UserRef, item_id: int) -> list[FlagRecord]:
    """The user's own unresolved flags on an item, oldest first."""
    with session_scope(db) as session:
        uid = find_user_id(session, user)
        rows = session.scalars(
            select(Flag)
            .where(Flag.user_id == uid, Flag.item_id == int(item_id), Flag.resolved_at.is_(None))
            .order_by(Flag.id)
        )
        return [FlagRecord(f.id, f.item_id, f.user_id, f.reason, f.created_at) for f in rows]


FLAG_COLUMNS = [
    "flag_id",
    "dataset",
    "item_id",
    "external_id",
    "question",
    "user",
    "reason",
    "created_at",
    "resolved_at",
    "resolved_by",
    "resolution",
]


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
