"""Accounts: creating users, passwords, logging in, and the public view of an account.

Roles that log in (annotator, researcher, admin) need a password, stored only as an argon2 hash
(:mod:`qaeval_core.store.auth`); ``external`` raters come from imported files and cannot log in.
:class:`UserInfo` never carries the hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, NotFoundError, StoreError
from qaeval_core.store import auth
from qaeval_core.store.orm import ROLES, User
from qaeval_core.store.repo._common import Store, _check_name, _scope

__all__ = [
    "UserInfo",
    "add_user",
    "authenticate",
    "get_user",
    "list_users",
    "set_password",
    "user_info",
]


@dataclass(frozen=True)
class UserInfo:
    id: int
    name: str
    role: str
    active: bool
    has_password: bool
    created_at: datetime


def user_info(u: User) -> UserInfo:
    """The public view of an account row (never the password hash)."""
    return UserInfo(u.id, u.name, u.role, u.active, u.password_hash is not None, u.created_at)


def add_user(db: Store, name: str, role: str, password: str | None = None) -> UserInfo:
    """Create an account. Roles that log in need a password; ``external`` raters have none."""
    name = _check_name(name, "user")
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
    with _scope(db, write=True) as s:
        if s.execute(select(User.id).where(User.name == name)).first() is not None:
            raise StoreError(f"A user named {name!r} already exists.")
        user = User(name=name, role=role, password_hash=password_hash, active=True)
        s.add(user)
        s.flush()
        return user_info(user)


def _find_user(s: Session, name: str) -> User:
    user = s.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None:
        raise NotFoundError(f"No user named {name!r} (see `qaeval user list`).")
    return user


def get_user(db: Store, name: str) -> UserInfo:
    with _scope(db) as s:
        return user_info(_find_user(s, name))


def list_users(db: Store, *, role: str | None = None) -> list[UserInfo]:
    stmt = select(User).order_by(User.name)
    if role is not None:
        stmt = stmt.where(User.role == role)
    with _scope(db) as s:
        return [user_info(u) for u in s.execute(stmt).scalars()]


def set_password(db: Store, name: str, password: str) -> None:
    if not password:
        raise ConfigError("The password must not be empty.")
    with _scope(db, write=True) as s:
        user = _find_user(s, name)
        if user.role == "external":
            raise ConfigError(f"{name!r} is an external rater and cannot log in.")
        user.password_hash = auth.hash_password(password)


def authenticate(db: Store, name: str, password: str) -> UserInfo | None:
    """The user when the name and password match an active account that may log in."""
    with _scope(db) as s:
        user = s.execute(select(User).where(User.name == name)).scalar_one_or_none()
        if user is None or not user.active or user.role == "external":
            auth.verify_password(None, password)
            return None
        return user_info(user) if auth.verify_password(user.password_hash, password) else None
