"""Store functions that always run their own transaction, and the ``db`` they take.

Every store function takes the store first, as ``db``. Most accept an open Session and join
the caller's transaction. Some must not: the labelling workflow (deals, serving, labels, skips,
flags), imports and login sessions are short transactions whose effect is committed when they
return (a label whose id was returned can never be lost), which joining a caller's transaction
would break. They take a :data:`StoreURL` and are marked :func:`own_transaction`,
which refuses a Session up front with a message naming the function, instead of letting it fail
later as a URL that does not parse.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from sqlalchemy.orm import Session

from qaeval_core.errors import InputError

__all__ = ["StoreURL", "owns_transaction", "own_transaction"]

#: A store URL, or ``None`` for the default store (``QAEVAL_DATABASE_URL`` or the SQLite file
#: under ``.qaeval/``): the ``db`` of a function that runs its own transaction.
StoreURL = str | None

_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def own_transaction(function: Callable[_Params, _Result]) -> Callable[_Params, _Result]:
    """Mark ``function`` (the store first, as ``db``) as running its own transaction.

    Passing a Session as ``db`` raises :class:`~qaeval_core.errors.InputError` naming the
    function: it cannot join the caller's transaction, and silently opening another one would
    make the caller believe it had.
    """
    name = function.__name__

    @wraps(function)
    def checked(*args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        db = args[0] if args else kwargs.get("db")
        if isinstance(db, Session):
            raise InputError(
                f"{name} runs its own transaction: pass a store URL or None as db, not a Session.",
                param="db",
            )
        return function(*args, **kwargs)

    checked.__own_transaction__ = True  # type: ignore[attr-defined]
    return checked


def owns_transaction(function: Callable[..., object]) -> bool:
    """Whether ``function`` is marked :func:`own_transaction` (the mark the store's modules
    carry instead of a folder per transaction style)."""
    return getattr(function, "__own_transaction__", False) is True
