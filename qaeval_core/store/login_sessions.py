"""Login sessions that survive a page reload.

Streamlit keeps its session state per browser tab connection, so a reload used to log the user
out. The app now opens a login session at login, keeps its random token in the page URL
(``?session=...``) and resumes from it after a reload. Only the token's SHA-256 is stored, so
the table alone cannot be used to log in; a session ends when it expires (``hours`` after
login, 12 by default), when it has been idle longer than the idle timeout (30 minutes by
default, ``QAEVAL_SESSION_IDLE_MINUTES``), or when its user logs out, and it never outlives the
account: a deactivated user or one who may not log in (an external rater) is not resumed, and a
new password, a deactivation or a re-activation ends every session of the account
(:mod:`qaeval_core.store.repo.users`). Each login gets a new random token.

The writes an annotator makes from a page (a label, a skip, a flag) check the login again in
their own write transaction (:func:`require_live_login`): a page opened before the account was
deactivated, its password changed or the login ended in another tab cannot write any more, even
though its browser still shows the item (issue 21, item 12).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, PermissionDenied
from qaeval_core.store.orm import LoginSession, User, utcnow
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.repo.users import UserInfo, user_info
from qaeval_core.store.session import session_scope, write_scope

__all__ = [
    "DEFAULT_HOURS",
    "DEFAULT_IDLE_MINUTES",
    "IDLE_ENV",
    "LoginEnded",
    "close_session",
    "idle_minutes",
    "open_session",
    "require_live_login",
    "resume_session",
]

#: How long a login lasts without logging in again.
DEFAULT_HOURS = 12.0
#: A login session unused for this long ends (``QAEVAL_SESSION_IDLE_MINUTES`` overrides it).
DEFAULT_IDLE_MINUTES = 30.0
IDLE_ENV = "QAEVAL_SESSION_IDLE_MINUTES"
#: ``last_seen_at`` is written at most this often per session (not on every click).
_TOUCH_EVERY = timedelta(seconds=30)


def idle_minutes() -> float:
    """The idle timeout in minutes: ``QAEVAL_SESSION_IDLE_MINUTES`` or 30."""
    raw = os.environ.get(IDLE_ENV, "").strip()
    if not raw:
        return DEFAULT_IDLE_MINUTES
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ConfigError(f"{IDLE_ENV}={raw!r}: expected a positive number of minutes.")
    return value


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@own_transaction
def open_session(db: StoreURL, user_id: int, *, hours: float = DEFAULT_HOURS) -> str:
    """Start a login session for ``user_id``; returns the token to give the browser."""
    if hours <= 0:
        raise ValueError("hours must be positive")
    token = secrets.token_urlsafe(32)
    now = utcnow()
    with write_scope(db) as s:
        s.add(
            LoginSession(
                token_hash=_digest(token),
                user_id=user_id,
                created_at=now,
                expires_at=now + timedelta(hours=hours),
            )
        )
    return token


class LoginEnded(PermissionDenied):
    """A write from a page whose login has ended (logged out, expired, idle, password changed,
    account deactivated): nothing was written, the person must log in again."""


def _last_seen() -> Any:
    return func.coalesce(LoginSession.last_seen_at, LoginSession.created_at)


def _live(token: str, now: datetime, idle: float | None) -> list[Any]:
    """The conditions of a live login session of ``token`` (one definition for resuming a page
    and for the check every annotator write makes): not logged out, not expired, not idle
    longer than ``idle`` minutes (default :func:`idle_minutes`)."""
    idle_for = timedelta(minutes=idle_minutes() if idle is None else idle)
    return [
        LoginSession.token_hash == _digest(token),
        LoginSession.revoked_at.is_(None),
        LoginSession.expires_at > now,
        _last_seen() > now - idle_for,
    ]


def _usable() -> list[Any]:
    """The conditions of an account that may log in and write (active, not an external rater)."""
    return [User.active.is_(True), User.role != "external"]


@own_transaction
def resume_session(db: StoreURL, token: str, *, idle: float | None = None) -> UserInfo | None:
    """The account of a live session (not expired, not idle longer than ``idle`` minutes
    (default :func:`idle_minutes`), not logged out, account still allowed to log in), else
    None; a live session counts as used now. Any string is accepted: a forged or stale token
    just gives None."""
    if not token or len(token) > 200:
        return None
    now = utcnow()
    last_seen = _last_seen()
    stmt = (
        select(User, LoginSession.id, last_seen)
        .join(LoginSession, LoginSession.user_id == User.id)
        .where(*_live(token, now, idle), *_usable())
    )
    with session_scope(db) as s:
        row = s.execute(stmt).one_or_none()
        if row is None:
            return None
        info, session_id, seen = user_info(row[0]), row[1], row[2]
    if isinstance(seen, datetime):
        seen = seen if seen.tzinfo is not None else seen.replace(tzinfo=UTC)
        if seen > now - _TOUCH_EVERY:
            return info  # touched recently: no write on every click
    with write_scope(db) as s:
        s.execute(
            update(LoginSession)
            .where(LoginSession.id == session_id, last_seen < now - _TOUCH_EVERY)
            .values(last_seen_at=now)
        )
    return info


def require_live_login(session: Session, user_id: int, token: str | None) -> None:
    """Raise :class:`LoginEnded` unless ``user_id`` is an active account and, with a ``token``
    (a page's login), that login session is live and belongs to it.

    Called inside the write transaction of the annotator's write, so the check and the write
    commit together. SQLite: the caller's ``BEGIN IMMEDIATE`` already excludes every other
    writer. PostgreSQL: the account row and then the session row are read ``FOR SHARE``; a
    deactivation, a password change (both update the account row first, then its sessions) or a
    logout (updates the session row) in progress is waited for and its result seen, and one
    that starts later waits for this write to commit. Either order is a clean history: the
    label is written while the login was live, or refused after it ended. Scripts and the CLI
    pass no token: only the account is checked (a deactivated account writes nothing).
    """
    share = session.get_bind().dialect.name == "postgresql"
    account = select(User.id).where(User.id == user_id, User.active.is_(True))
    if token is not None:
        account = account.where(User.role != "external")
    if share:
        account = account.with_for_update(read=True)
    if session.execute(account).first() is None:
        raise LoginEnded(
            "Your account is deactivated (or was removed), so nothing was saved. Ask an admin."
            if token is None
            else _ENDED
        )
    if token is None:
        return
    if not token or len(token) > 200:
        raise LoginEnded(_ENDED)
    live = select(LoginSession.id).where(
        LoginSession.user_id == user_id, *_live(token, utcnow(), None)
    )
    if share:
        live = live.with_for_update(read=True)
    if session.execute(live).first() is None:
        raise LoginEnded(_ENDED)


_ENDED = (
    "Your login has ended (logged out, expired, password changed or account deactivated), so "
    "nothing was saved. Log in again."
)


@own_transaction
def close_session(db: StoreURL, token: str) -> None:
    """End the session of ``token`` (logging out); unknown tokens are ignored."""
    if not token:
        return
    with write_scope(db) as s:
        s.execute(
            update(LoginSession)
            .where(LoginSession.token_hash == _digest(token), LoginSession.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
