"""One calling style for the store (issue 25): the store first, as ``db``.

The annotation and login-session functions always run their own short transaction (a label is
committed when ``save_label`` returns), so unlike :mod:`qaeval_core.store.repo` they cannot join
a caller's Session: passing one is refused up front, naming the function, and writes nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from _annotation_store import make_store
from sqlalchemy import func, select

from qaeval_core.errors import InputError
from qaeval_core.store import annotation as ann
from qaeval_core.store import login_sessions, repo
from qaeval_core.store.orm import Label
from qaeval_core.store.session import session_scope

ANNOTATION_FUNCTIONS = [
    getattr(ann, name) for name in ann.__all__ if inspect.isfunction(getattr(ann, name))
]
LOGIN_FUNCTIONS = [
    login_sessions.open_session,
    login_sessions.resume_session,
    login_sessions.close_session,
]
OWN_TRANSACTION = ANNOTATION_FUNCTIONS + LOGIN_FUNCTIONS


def _name(function: Callable[..., Any]) -> str:
    return function.__name__


@pytest.mark.parametrize("function", OWN_TRANSACTION, ids=_name)
def test_the_store_comes_first_as_db(function: Callable[..., Any]) -> None:
    params = list(inspect.signature(function).parameters)
    assert params[0] == "db", f"{function.__name__} must take the store first, as db"
    assert "url" not in params
    assert inspect.signature(function).parameters["db"].default is inspect.Parameter.empty


@pytest.mark.parametrize("function", OWN_TRANSACTION, ids=_name)
def test_a_session_is_refused_naming_the_function(
    sqlite_url: str, function: Callable[..., Any]
) -> None:
    expected = (
        f"^{function.__name__} runs its own transaction: pass a store URL or None as db, "
        "not a Session"
    )
    with repo.store_scope(sqlite_url) as session:
        with pytest.raises(InputError, match=expected) as positional:
            function(session)
        with pytest.raises(InputError, match=expected):
            function(db=session)
    assert positional.value.param == "db"


def test_a_label_given_a_session_is_not_written(db_url: str) -> None:
    items = make_store(db_url, n_items=2)
    ann.deal(db_url, "ds", ["ann1"])
    with (
        repo.store_scope(db_url) as session,
        pytest.raises(InputError, match="save_label runs its own transaction"),
    ):
        ann.save_label(session, "ann1", items[0], 2)
    with session_scope(db_url) as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0
    # The same call with the URL saves (and is committed when it returns).
    ann.save_label(db_url, "ann1", items[0], 2)
    assert ann.current_label(db_url, "ann1", items[0]).value == 2  # type: ignore[union-attr]
