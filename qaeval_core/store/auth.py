"""Local accounts: argon2 password hashing, credential checks and the password policy.

Streamlit's ``st.login`` needs an external OIDC provider, so qaeval keeps its own accounts.

Every check costs one argon2 verification, also for a name that does not exist (it is checked
against a dummy hash), so the answer time does not tell which user names exist.
"""

from __future__ import annotations

import secrets
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from qaeval_core.errors import ConfigError

__all__ = ["MIN_PASSWORD_LENGTH", "check_new_password", "hash_password", "verify_password"]

#: The shortest password a person may choose (``qaeval user add/passwd``, the app's forms).
#: The store's own functions accept any non-empty password, for scripts and tests that
#: create accounts programmatically; temporary passwords an admin sets on the Users page may
#: be shorter (``TEMPORARY_MIN_LENGTH``) because their owner must replace them at first login.
MIN_PASSWORD_LENGTH = 8
TEMPORARY_MIN_LENGTH = 6

_hasher = PasswordHasher()


@cache
def _dummy_hash() -> str:
    return _hasher.hash(secrets.token_urlsafe(16))


def check_new_password(password: str, *, min_length: int = MIN_PASSWORD_LENGTH) -> str:
    """``password`` when it meets the policy, else a :class:`ConfigError` that says why."""
    if len(password or "") < min_length:
        raise ConfigError(
            f"The password is too short ({len(password or '')} character(s)): use at least "
            f"{min_length} characters."
        )
    if not password.strip():
        raise ConfigError("The password must not be only spaces.")
    return password


def hash_password(password: str) -> str:
    """An argon2id hash (salted; safe to store)."""
    if not password:
        raise ValueError("password must not be empty")
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """True iff ``password`` matches ``password_hash``; never raises on a bad hash.

    Without a hash (an unknown or disabled account) a dummy hash is verified all the same, so
    every answer costs the same time.
    """
    try:
        ok = _hasher.verify(password_hash or _dummy_hash(), password or "-")
    except (VerificationError, InvalidHashError):
        return False
    return bool(ok and password_hash and password)
