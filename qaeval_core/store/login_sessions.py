"""Login sessions that survive a page reload.

Streamlit keeps its session state per browser tab connection, so a reload used to log the user
out. The app now opens a login session at login, keeps its random token in the page URL
(``?session=...``) and resumes from it after a reload. Only the token's SHA-256 is stored, so
the table alone cannot be used to log in; a session ends when it expires (``hours`` after
login, 12 by default) or when its user logs out, and it never outlives the account: a
deactivated user or one who may not log in (an external rater) is not resumed.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import select, update

from qaeval_core.store.orm import LoginSession, User, utcnow
from qaeval_core.store.repo.users import UserInfo, user_info
from qaeval_core.store.session import session_scope, write_scope

__all__ = ["DEFAULT_HOURS", "open_session", "resume_session", "close_session"]

#: How long a login lasts without logging in again.
DEFAULT_HOURS = 12.0


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def open_session(url: str, user_id: int, *, hours: float = DEFAULT_HOURS) -> str:
    """Start a login session for ``user_id``; returns the token to give the browser."""
    if hours <= 0:
        raise ValueError("hours must be positive")
    token = secrets.token_urlsafe(32)
    now = utcnow()
    with write_scope(url) as s:
        s.add(
            LoginSession(
                token_hash=_digest(token),
                user_id=user_id,
                created_at=now,
                expires_at=now + timedelta(hours=hours),
            )
        )
    return token


def resume_session(url: str, token: str) -> UserInfo | None:
    """The account of a live session (not expired, not logged out, account still allowed to
    log in), else None. Any string is accepted: a forged or stale token just gives None."""
    if not token or len(token) > 200:
        return None
    stmt = (
        select(User)
        .join(LoginSession, LoginSession.user_id == User.id)
        .where(
            LoginSession.token_hash == _digest(token),
            LoginSession.revoked_at.is_(None),
            LoginSession.expires_at > utcnow(),
            User.active.is_(True),
            User.role != "external",
        )
    )
    with session_scope(url) as s:
        user = s.execute(stmt).scalar_one_or_none()
        return user_info(user) if user is not None else None


def close_session(url: str, token: str) -> None:
    """End the session of ``token`` (logging out); unknown tokens are ignored."""
    if not token:
        return
    with write_scope(url) as s:
        s.execute(
            update(LoginSession)
            .where(LoginSession.token_hash == _digest(token), LoginSession.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
