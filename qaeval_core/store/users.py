"""Accounts: creating users, passwords, logging in, roles, and the public view of an account.

Roles that log in (annotator, researcher, admin) need a password, stored only as an argon2 hash
(:mod:`qaeval_core.store.auth`); ``external`` raters come from imported files and cannot log in.
:class:`UserInfo` never carries the hash.

Security rules kept here: a new password, a deactivation or a re-activation ends every login
session of the account (:mod:`~qaeval_core.store.users`); the last active admin can be
neither deactivated nor demoted; after ``THROTTLE_FAILURES`` failed logins for one name within
``THROTTLE_WINDOW`` further attempts for that name are refused (:class:`LoginThrottled`) for a
delay that doubles with each further failure, counted in the store so that it holds across app
processes; a successful login resets it.

Every attempt is counted *before* its password is checked (:func:`_count_attempt`: one short
write transaction that creates the name's row if needed with ``INSERT ... ON CONFLICT DO
NOTHING``, then locks it, ``SELECT ... FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on
SQLite), so guesses sent at once are counted one after the other and at most
``THROTTLE_FAILURES`` of them reach the password check (issue 21, item 13). What the design
accepts: the count is per *name*, not per client (the app cannot tell clients apart reliably
behind a proxy), so anyone who can reach the login form can keep one name locked out, for up
to ``THROTTLE_MAX_DELAY`` after their last failure; one client can try
``THROTTLE_FAILURES`` guesses on each of many names. The README's Accounts section says so.

Login sessions that survive a page reload. Streamlit keeps its session state per browser tab
connection, so a reload used to log the user out. The app opens a login session at login
(:func:`open_session`), keeps its random token in the page URL (``?session=...``) and resumes
from it after a reload (:func:`resume_session`). Only the token's SHA-256 is stored, so the
table alone cannot be used to log in; a session ends when it expires (``hours`` after login, 12
by default), when it has been idle longer than the idle timeout (30 minutes by default,
``QAEVAL_SESSION_IDLE_MINUTES``), or when its user logs out, and it never outlives the account:
a deactivated user or one who may not log in (an external rater) is not resumed, and a new
password, a deactivation or a re-activation ends every session of the account. Each login gets
a new random token. The login-session functions run their own transaction
(``@own_transaction``).

The writes an annotator makes from a page (a label, a skip, a flag) check the login again in
their own write transaction (:func:`require_live_login`): a page opened before the account was
deactivated, its password changed or the login ended in another tab cannot write any more, even
though its browser still shows the item (issue 21, item 12).

Why it is one module: an account and its logins are one entity; every security rule above
(ending sessions on a new password or a deactivation, the throttle, the live-login check)
reads or writes both tables in one transaction.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, NotFoundError, PermissionDenied, StoreError
from qaeval_core.store import auth
from qaeval_core.store.orm import ROLES, LoginSession, LoginThrottle, User, utcnow
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.scope import Store, check_name, store_scope
from qaeval_core.store.session import session_scope, write_scope
from qaeval_core.vocabulary import LOGIN_ROLES  # re-exported: the roles that log in

__all__ = [
    "DEFAULT_HOURS",
    "DEFAULT_IDLE_MINUTES",
    "IDLE_ENV",
    "LOGIN_ROLES",
    "add_user",
    "authenticate",
    "close_session",
    "find_user",
    "find_user_id",
    "get_user",
    "idle_minutes",
    "list_users",
    "LoginEnded",
    "LoginThrottled",
    "open_session",
    "require_live_login",
    "resume_session",
    "set_active",
    "set_password",
    "set_role",
    "throttled_until",
    "user_info",
    "UserInfo",
    "UserRef",
]


#: Failed logins for one name within ``THROTTLE_WINDOW`` before attempts are refused.
THROTTLE_FAILURES = 5
THROTTLE_WINDOW = timedelta(minutes=15)
#: The first refusal lasts this long; each further failure doubles it, up to the cap.
THROTTLE_DELAY = timedelta(minutes=1)
THROTTLE_MAX_DELAY = timedelta(hours=1)


class LoginThrottled(PermissionDenied):
    """Too many failed logins for a name: ``retry_at`` (UTC) is when it may try again."""

    def __init__(self, name: str, retry_at: datetime) -> None:
        self.retry_at = retry_at
        wait = max(1, int((retry_at - utcnow()).total_seconds() + 59) // 60)
        super().__init__(
            f"Too many failed logins for {name!r}: try again after "
            f"{retry_at:%H:%M} UTC (in about {wait} minute(s))."
        )


@dataclass(frozen=True)
class UserInfo:
    id: int
    name: str
    role: str
    active: bool
    has_password: bool
    created_at: datetime
    must_change_password: bool = False


def user_info(u: User) -> UserInfo:
    """The public view of an account row (never the password hash)."""
    return UserInfo(
        u.id,
        u.name,
        u.role,
        u.active,
        u.password_hash is not None,
        u.created_at,
        bool(u.must_change_password),
    )


def _aware(when: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes (stored in UTC); PostgreSQL aware ones."""
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def add_user(
    db: Store,
    name: str,
    role: str,
    password: str | None = None,
    *,
    must_change_password: bool = False,
) -> UserInfo:
    """Create an account. Roles that log in need a password; ``external`` raters have none.

    Only non-empty is checked here: people choosing a password go through
    :func:`qaeval_core.store.auth.check_new_password` (the CLI and the app do).
    ``must_change_password`` makes it a temporary password, replaced at first login.
    """
    name = check_name(name, "user")
    if role not in ROLES:
        raise ConfigError(f"Unknown role {role!r}: expected one of {', '.join(ROLES)}.")
    if role == "external":
        if password:
            raise ConfigError("External raters cannot log in, so they take no password.")
        password_hash = None
    else:
        if not password:
            raise ConfigError(f"A {role} account needs a password (it is used to log in).")
        password_hash = auth.hash_password(password)
    with store_scope(db, write=True) as s:
        if s.execute(select(User.id).where(User.name == name)).first() is not None:
            raise StoreError(f"A user named {name!r} already exists.")
        user = User(
            name=name,
            role=role,
            password_hash=password_hash,
            active=True,
            must_change_password=bool(must_change_password and password_hash),
        )
        s.add(user)
        s.flush()
        return user_info(user)


#: A user by name (from the UI or the CLI) or by id (hot paths that already resolved it).
UserRef = int | str


def find_user(s: Session, user: UserRef) -> User:
    """The account with this name (or id): the one resolver of users, so every function says
    the same when a name is unknown."""
    key = User.id == user if isinstance(user, int) else User.name == user
    found = s.execute(select(User).where(key)).scalar_one_or_none()
    if found is None:
        what = f"with id {user}" if isinstance(user, int) else f"named {user!r}"
        raise NotFoundError(
            f"No user {what} in this store (list_users names them; an admin adds a person, "
            "with a role such as annotator)."
        )
    return found


def find_user_id(s: Session, user: UserRef) -> int:
    """The id of ``user``; an int is trusted as an id (hot paths skip the lookup)."""
    return user if isinstance(user, int) else find_user(s, user).id


def get_user(db: Store, name: str) -> UserInfo:
    with store_scope(db) as s:
        return user_info(find_user(s, name))


def list_users(db: Store, *, role: str | None = None) -> list[UserInfo]:
    stmt = select(User).order_by(User.name)
    if role is not None:
        stmt = stmt.where(User.role == role)
    with store_scope(db) as s:
        return [user_info(u) for u in s.execute(stmt).scalars()]


def _end_sessions(s: Session, user_id: int) -> None:
    s.execute(
        update(LoginSession)
        .where(LoginSession.user_id == user_id, LoginSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


def set_password(
    db: Store, name: str, password: str, *, must_change_password: bool = False
) -> None:
    """Replace the password; every login session of the account ends (a copied URL or another
    browser stops working). ``must_change_password``: a temporary password (see add_user)."""
    if not password:
        raise ConfigError("The password must not be empty.")
    with store_scope(db, write=True) as s:
        user = find_user(s, name)
        if user.role == "external":
            raise ConfigError(f"{name!r} is an external rater and cannot log in.")
        user.password_hash = auth.hash_password(password)
        user.must_change_password = must_change_password
        _end_sessions(s, user.id)


def _other_active_admins(s: Session, user: User) -> int:
    stmt = select(func.count(User.id)).where(
        User.role == "admin", User.active.is_(True), User.id != user.id
    )
    return int(s.execute(stmt).scalar_one())


def set_active(db: Store, name: str, active: bool) -> UserInfo:
    """Deactivate (cannot log in, queues and labels kept) or re-activate an account. Either way
    its login sessions end, so re-activating never revives an old login. The last active admin
    cannot be deactivated."""
    with store_scope(db, write=True) as s:
        user = find_user(s, name)
        if user.role == "external":
            raise ConfigError(f"{name!r} is an external rater: it never logs in.")
        last_admin = user.role == "admin" and user.active and not _other_active_admins(s, user)
        if not active and last_admin:
            raise ConfigError(
                f"{name!r} is the last active admin: make another account admin first, "
                "or nobody could manage accounts."
            )
        user.active = active
        _end_sessions(s, user.id)
        s.flush()
        return user_info(user)


def set_role(db: Store, name: str, role: str) -> UserInfo:
    """Change the role of an account that logs in (takes effect on its next click). The last
    active admin cannot be demoted."""
    if role not in LOGIN_ROLES:
        raise ConfigError(f"Unknown role {role!r}: expected one of {', '.join(LOGIN_ROLES)}.")
    with store_scope(db, write=True) as s:
        user = find_user(s, name)
        if user.role == "external":
            raise ConfigError(f"{name!r} is an external rater: it has no login role.")
        last_admin = user.role == "admin" and user.active and not _other_active_admins(s, user)
        if role != "admin" and last_admin:
            raise ConfigError(
                f"{name!r} is the last active admin: make another account admin first."
            )
        user.role = role
        s.flush()
        return user_info(user)


def _stale(row: LoginThrottle, now: datetime) -> bool:
    """Whether a throttle row is quiet for THROTTLE_WINDOW (its count starts again)."""
    locked = _aware(row.locked_until)
    since = locked if locked is not None else _aware(row.first_failed_at)
    return since is not None and since < now - THROTTLE_WINDOW


def throttled_until(db: Store, name: str) -> datetime | None:
    """When ``name`` may try to log in again (UTC), or None when it may now."""
    if "\x00" in (name or ""):
        return None  # no account can have this name (see authenticate)
    now = utcnow()
    with store_scope(db) as s:
        row = s.get(LoginThrottle, name[:200])
        locked = _aware(row.locked_until) if row is not None else None
        return locked if locked is not None and locked > now else None


def _insert_throttle_row(s: Session, name: str, now: datetime) -> None:
    """Create ``name``'s throttle row unless it exists, in one statement, so two first attempts
    at once never both insert it (a duplicate-key error on PostgreSQL)."""
    values = {"name": name, "failures": 0, "first_failed_at": now}
    dialect = s.get_bind().dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        s.execute(dialect_insert(LoginThrottle).values(values).on_conflict_do_nothing())
    elif s.get(LoginThrottle, name) is None:  # pragma: no cover - other backends
        s.execute(insert(LoginThrottle).values(values))


def _count_attempt(db: Store, name: str) -> None:
    """Count a login attempt for ``name`` as a failure before its password is checked, or raise
    :class:`LoginThrottled` while the name is locked out (that attempt is not counted).

    One short write transaction: the row is created if missing, then locked (``FOR UPDATE`` on
    PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already excludes other writers), so attempts sent
    at once are counted one after the other: the ``THROTTLE_FAILURES``-th sets the lock, and
    every later one is refused without a password check. A success then deletes the row.
    """
    now = utcnow()
    with store_scope(db, write=True) as s:
        _insert_throttle_row(s, name, now)
        stmt = select(LoginThrottle).where(LoginThrottle.name == name).with_for_update()
        row = s.execute(stmt).scalar_one()
        if _stale(row, now):
            row.failures, row.first_failed_at, row.locked_until = 0, now, None
        locked = _aware(row.locked_until)
        if locked is not None and locked > now:
            raise LoginThrottled(name, locked)
        row.failures += 1
        extra = row.failures - THROTTLE_FAILURES
        if extra >= 0:
            delay = min(THROTTLE_DELAY * (2 ** min(extra, 20)), THROTTLE_MAX_DELAY)
            row.locked_until = now + delay


def authenticate(db: Store, name: str, password: str) -> UserInfo | None:
    """The user when the name and password match an active account that may log in.

    Raises :class:`LoginThrottled` (without checking the password) while ``name`` is locked
    out after repeated failures. The attempt is counted before the password is checked
    (:func:`_count_attempt`), so at most ``THROTTLE_FAILURES`` guesses sent at once are
    checked. Unknown names cost the same argon2 check as known ones. A name with a NUL
    character (no account can have one: PostgreSQL cannot store it) is refused like a wrong
    password, after the same check, and not counted.
    """
    if "\x00" in (name or ""):
        auth.verify_password(None, password)  # the same cost as any other answer
        return None
    key = (name or "")[:200]
    _count_attempt(db, key)
    with store_scope(db) as s:
        user = s.execute(select(User).where(User.name == name)).scalar_one_or_none()
        usable = user is not None and user.active and user.role != "external"
        password_hash = user.password_hash if usable else None
        info = user_info(user) if usable else None
    if auth.verify_password(password_hash, password) and info is not None:
        with store_scope(db, write=True) as s:
            s.execute(delete(LoginThrottle).where(LoginThrottle.name == key))
        return info
    return None


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
