"""An annotator flags an item for review, with a reason a researcher can read.

A flag is how an annotator says "this item is broken / I cannot judge it" without inventing a
label: it is stored with its reason, and the item is skipped in the annotator's queue (so it
stops coming back) until they revisit it. Researchers list and resolve flags through
:mod:`qaeval_core.store.repo.flags`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select, update

from qaeval_core.errors import InputError, PermissionDenied
from qaeval_core.store.login_sessions import require_live_login
from qaeval_core.store.orm import Assignment, Flag, utcnow
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.repo.users import UserRef, find_user_id
from qaeval_core.store.session import session_scope, write_scope

__all__ = ["MAX_FLAG_REASON_CHARS", "FlagRecord", "flag_item", "open_flags_for"]

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
    not (or no longer) in the user's queue, or (:class:`~qaeval_core.store.login_sessions.
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
