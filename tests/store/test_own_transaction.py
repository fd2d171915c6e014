"""One calling style for the store (issue 25): the store first, as ``db``.

The functions marked ``@own_transaction`` (labelling, deals, imports, login sessions) always run
their own short transaction (a label is committed when ``save_label`` returns), so unlike the
others they cannot join a caller's Session: passing one is refused up front, naming the
function, and writes nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from _annotation_store import make_store
from sqlalchemy import func, select

from qaeval_core import store
from qaeval_core.errors import InputError
from qaeval_core.store.orm import Label
from qaeval_core.store.own_transaction import owns_transaction
from qaeval_core.store.session import session_scope

PUBLIC_FUNCTIONS = [
    getattr(store, name) for name in store.__all__ if inspect.isfunction(getattr(store, name))
]
#: The functions marked ``@own_transaction``: the mark, not a folder, says which they are.
OWN_TRANSACTION = [function for function in PUBLIC_FUNCTIONS if owns_transaction(function)]
#: Functions that must run their own transaction (they commit before returning).
MUST_OWN = {
    "deal",
    "reassign",
    "release_queue",
    "save_label",
    "skip_item",
    "flag_item",
    "next_item",
    "import_items",
    "import_file",
    "import_scan",
    "open_session",
    "resume_session",
    "close_session",
}


def test_the_functions_that_commit_on_return_are_marked() -> None:
    assert {function.__name__ for function in OWN_TRANSACTION} >= MUST_OWN
    assert not owns_transaction(store.list_datasets)  # joins a caller's Session


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
    with store.store_scope(sqlite_url) as session:
        with pytest.raises(InputError, match=expected) as positional:
            function(session)
        with pytest.raises(InputError, match=expected):
            function(db=session)
    assert positional.value.param == "db"


def test_a_label_given_a_session_is_not_written(db_url: str) -> None:
    items = make_store(db_url, n_items=2)
    store.deal(db_url, "ds", ["ann1"])
    with (
        store.store_scope(db_url) as session,
        pytest.raises(InputError, match="save_label runs its own transaction"),
    ):
        store.save_label(session, "ann1", items[0], 2)
    with session_scope(db_url) as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0
    # The same call with the URL saves (and is committed when it returns).
    store.save_label(db_url, "ann1", items[0], 2)
    assert store.current_label(db_url, "ann1", items[0]).value == 2  # type: ignore[union-attr]
