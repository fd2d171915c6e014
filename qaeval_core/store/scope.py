"""What every store module shares: the ``Store`` type, opening a transaction, error messages.

Every store function takes ``db`` first: a store URL, ``None`` for the default store, or (unless
it is ``@own_transaction``) an open :class:`~sqlalchemy.orm.Session`. :func:`store_scope`, the one
context manager of the store, turns that into a session (a new transaction on the URL, or the
caller's, so several calls can commit together) and turns driver errors into
:class:`~qaeval_core.errors.StoreError` messages that say what to do; callers outside the store
use it to run several store calls in one transaction without importing SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import IntegrityError, NoSuchModuleError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, StoreError
from qaeval_core.store.nul_guard import refuse_nul
from qaeval_core.store.orm import IMPORTING_PREFIX
from qaeval_core.store.session import session_scope, write_scope

__all__ = ["Store", "check_name", "store_error", "store_scope"]

#: A store URL, ``None`` for the default store, or an open Session (joins its transaction).
Store = str | Session | None


def store_error(exc: Exception) -> StoreError:
    text = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
    if any(s in text for s in ("no such table", "does not exist", "UndefinedTable")):
        return StoreError(
            f"The store has no qaeval schema (or an outdated one): {text}. "
            "Run `qaeval db upgrade` first."
        )
    if isinstance(exc, IntegrityError):
        return StoreError(
            f"The store refused the change ({text}); another process may have written the same "
            "data at the same time. Run the command again."
        )
    return StoreError(f"Store error: {text}")


@contextmanager
def store_scope(db: Store, *, write: bool = False) -> Iterator[Session]:
    """The caller's session (joins its transaction), or a new transaction on the URL.

    ``write``: a short transaction that takes the write lock first (``BEGIN IMMEDIATE`` on
    SQLite). Pass the yielded session as ``db`` to store functions to read several frames, or
    read and then write, in one transaction. Driver errors of a new transaction become
    :class:`~qaeval_core.errors.StoreError` messages that say what to do (``qaeval db
    upgrade`` for a store without the schema, run again after a concurrent write).
    """
    if isinstance(db, Session):
        yield db
        return
    scope = write_scope if write else session_scope
    try:
        with scope(db) as session:
            yield session
    except (OperationalError, ProgrammingError, IntegrityError) as exc:
        raise store_error(exc) from exc
    except NoSuchModuleError as exc:
        raise ConfigError(
            f"Invalid database URL: {exc}. Expected e.g. sqlite:///path/to/file.sqlite or "
            "postgresql+psycopg2://user:pass@host/dbname."
        ) from exc


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"The {what} name must not be empty.")
    name = name.strip()
    refuse_nul(name, f"The {what} name")  # before any work (an import stages rows first)
    if len(name) > 200:
        raise ConfigError(f"The {what} name has {len(name)} characters; the limit is 200.")
    if name.lower().startswith(IMPORTING_PREFIX):  # LIKE ignores case on SQLite
        raise ConfigError(
            f"The {what} name must not start with {IMPORTING_PREFIX!r} (it marks imports in "
            "progress)."
        )
    return name
