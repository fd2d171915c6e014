"""An ended login writes nothing (issue 21, item 12), on SQLite and PostgreSQL.

A page opened before its account was deactivated, its password changed or its login ended in
another tab still shows the item; its next key + Enter must store nothing. ``save_label``,
``skip_item`` and ``flag_item`` check the account and the page's login session (``login``, the
session token) in the same transaction as the write. On PostgreSQL a deactivation that is
still in progress when the save starts is waited for, and the save is then refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text, update

from qaeval_core import store
from qaeval_core.errors import PermissionDenied
from qaeval_core.store import session as store_session
from qaeval_core.store import users as accounts
from qaeval_core.store.orm import Assignment, Flag, Label, LoginSession, User, utcnow
from qaeval_core.store.users import LoginEnded


def _store(url: str) -> tuple[int, list[int], str]:
    """A dataset of 4 items dealt to ``ann1`` (logged in: its token) and an admin."""
    rows = [
        {"id": f"q{i}", "question": f"Q{i}?", "references": [f"a{i}"], "candidate": f"c{i}"}
        for i in range(4)
    ]
    store.import_items(url, "ds", rows, source="test")
    store.add_user(url, "boss", "admin", "pw-boss-long")
    user = store.add_user(url, "ann1", "annotator", "pw-ann1-long")
    store.deal(url, "ds", ["ann1"])
    items = [e.item_id for e in store.queue_entries(url, "ann1", "ds", "pending")]
    return user.id, items, store.open_session(url, user.id)


def _written(url: str) -> tuple[int, int, int]:
    """(labels, flags, skipped assignments) in the store."""
    with store_session.session_scope(url) as s:
        labels = s.scalar(select(func.count(Label.id)))
        flags = s.scalar(select(func.count(Flag.id)))
        skipped = s.scalar(
            select(func.count()).select_from(Assignment).where(Assignment.skipped_at.is_not(None))
        )
    return int(labels or 0), int(flags or 0), int(skipped or 0)


def _writes(uid: int, item: int, token: str | None, url: str) -> list[Callable[[], Any]]:
    return [
        lambda: store.save_label(url, uid, item, 2, rule=1, login=token),
        lambda: store.skip_item(url, uid, item, login=token),
        lambda: store.flag_item(url, uid, item, "broken", login=token),
    ]


ENDINGS: dict[str, Callable[[str, str], None]] = {
    "deactivated": lambda url, token: accounts.set_active(url, "ann1", False),
    "password changed by an admin": lambda url, token: accounts.set_password(
        url, "ann1", "a-new-password"
    ),
    "logged out in another tab": lambda url, token: store.close_session(url, token),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_page_whose_login_ended_writes_nothing(db_url: str, ending: str) -> None:
    uid, items, token = _store(db_url)
    store.save_label(db_url, uid, items[0], 1, login=token)  # live: saved
    assert _written(db_url) == (1, 0, 0)
    ENDINGS[ending](db_url, token)
    for write in _writes(uid, items[1], token, db_url):
        with pytest.raises(LoginEnded, match="nothing was saved"):
            write()
    assert _written(db_url) == (1, 0, 0)
    assert issubclass(LoginEnded, PermissionDenied)  # the page shows it like any refusal


def test_a_live_login_writes_and_a_forged_or_foreign_token_does_not(db_url: str) -> None:
    uid, items, token = _store(db_url)
    boss = store.get_user(db_url, "boss")
    foreign = store.open_session(db_url, boss.id)  # live, but not ann1's
    for bad in ("", "forged-token", "x" * 500, foreign):
        with pytest.raises(LoginEnded):
            store.save_label(db_url, uid, items[0], 2, login=bad)
    assert _written(db_url) == (0, 0, 0)
    for write in _writes(uid, items[0], token, db_url):
        write()
    assert _written(db_url) == (1, 1, 1)


def test_an_idle_login_writes_nothing(db_url: str) -> None:
    uid, items, token = _store(db_url)
    an_hour_ago = utcnow() - timedelta(hours=1)  # idle longer than the 30 minutes allowed
    with store_session.write_scope(db_url) as s:
        s.execute(update(LoginSession).values(created_at=an_hour_ago, last_seen_at=an_hour_ago))
    with pytest.raises(LoginEnded):
        store.save_label(db_url, uid, items[0], 2, login=token)
    assert _written(db_url) == (0, 0, 0)


def test_without_a_token_a_deactivated_account_still_writes_nothing(db_url: str) -> None:
    uid, items, _ = _store(db_url)
    accounts.set_active(db_url, "ann1", False)
    for write in _writes(uid, items[0], None, db_url):
        with pytest.raises(LoginEnded, match="deactivated"):
            write()
    assert _written(db_url) == (0, 0, 0)
    accounts.set_active(db_url, "ann1", True)
    store.save_label(db_url, "ann1", items[0], 0)  # scripts and the CLI pass no token
    assert _written(db_url) == (1, 0, 0)


@pytest.mark.postgres
def test_a_deactivation_in_progress_is_waited_for_then_the_save_is_refused(
    postgres_url: str,
) -> None:
    """The deactivation has updated the account row but not committed when the save starts:
    the save waits for it (the account row is read FOR SHARE) and is then refused."""
    url = postgres_url
    uid, items, token = _store(url)
    engine = store_session.get_engine(url)
    outcome: list[BaseException | object] = []
    with engine.connect() as admin:
        admin.execute(update(User).where(User.id == uid).values(active=False))  # not committed

        def save() -> None:
            try:
                outcome.append(store.save_label(url, uid, items[0], 2, login=token))
            except BaseException as exc:  # inspected below
                outcome.append(exc)

        worker = threading.Thread(target=save)
        worker.start()
        _wait_until_blocked(url, worker)
        admin.commit()
    worker.join()
    assert len(outcome) == 1 and isinstance(outcome[0], LoginEnded), outcome
    assert _written(url) == (0, 0, 0)


def _wait_until_blocked(url: str, worker: threading.Thread) -> None:
    """Return once another connection of this database waits for a lock (the save); fail if
    the worker finished instead (it did not wait for the uncommitted deactivation)."""
    probe = store_session.get_engine(url)
    waiting = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'"
    )
    while True:
        with probe.connect() as conn:
            if conn.execute(waiting).scalar_one():
                return
        if not worker.is_alive():
            pytest.fail("the save finished without waiting for the deactivation in progress")
        worker.join(0.05)
