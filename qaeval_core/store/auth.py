"""Local accounts: argon2 password hashing and credential checks.

Streamlit's ``st.login`` needs an external OIDC provider, so qaeval keeps its own accounts.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

__all__ = ["hash_password", "verify_password"]

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    """An argon2id hash (salted; safe to store)."""
    if not password:
        raise ValueError("password must not be empty")
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """True iff ``password`` matches ``password_hash``; never raises on a bad hash."""
    if not password_hash or not password:
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False
