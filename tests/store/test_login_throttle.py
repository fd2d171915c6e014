"""Login throttling holds when guesses arrive at once (issue 21, item 13), on SQLite and
PostgreSQL; a NUL in a login name is refused cleanly.

Every attempt is counted before its password is checked, in one write transaction that locks
the name's row, so of 20 guesses sent at once at most ``THROTTLE_FAILURES`` reach the argon2
check, every failure is counted, and none ends in a duplicate-key error.

The test does not rely on timing: each password check waits until all 20 attempts have either
reached a password check or been refused, so with a check-then-count design all 20 would be
checked, every time.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from qaeval_core import store
from qaeval_core.errors import InputError
from qaeval_core.store import auth
from qaeval_core.store import session as store_session
from qaeval_core.store import users as accounts
from qaeval_core.store.orm import LoginThrottle

GUESSES = 20


class _Gate:
    """Counts arrivals (an attempt at its password check, or refused) and holds every
    password check until all attempts have arrived."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.arrived = 0
        self.checked = 0
        self.cond = threading.Condition()

    def arrive(self, *, checking: bool) -> None:
        with self.cond:
            self.arrived += 1
            self.checked += int(checking)
            self.cond.notify_all()
            # The timeout is a generous bound only so that a broken build fails, not hangs.
            all_in = checking and self.cond.wait_for(lambda: self.arrived >= self.total, 120)
            if checking and not all_in:
                raise AssertionError(f"only {self.arrived} of {self.total} attempts arrived")


def _fire(url: str, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[_Gate, list[Any]]:
    """``GUESSES`` wrong passwords for ``name`` from as many threads at once."""
    gate = _Gate(GUESSES)
    real = auth._hasher

    class Gated:
        def hash(self, password: str) -> str:
            return real.hash(password)

        def verify(self, password_hash: str, password: str) -> bool:
            gate.arrive(checking=True)
            return real.verify(password_hash, password)

    monkeypatch.setattr(auth, "_hasher", Gated())
    start = threading.Barrier(GUESSES)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def guess(k: int) -> None:
        start.wait()
        try:
            result: Any = store.authenticate(url, name, f"wrong-{k}")
        except accounts.LoginThrottled as exc:
            gate.arrive(checking=False)
            result = exc
        except BaseException as exc:  # reported by the assertions
            gate.arrive(checking=False)
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=guess, args=(k,)) for k in range(GUESSES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return gate, outcomes


@pytest.mark.parametrize("known", [True, False], ids=["known name", "unknown name"])
def test_twenty_guesses_at_once_check_at_most_the_limit(
    db_url: str, monkeypatch: pytest.MonkeyPatch, known: bool
) -> None:
    if known:
        store.add_user(db_url, "alice", "annotator", "right-password")
    gate, outcomes = _fire(db_url, "alice", monkeypatch)
    errors = [o for o in outcomes if not isinstance(o, accounts.LoginThrottled) and o is not None]
    assert errors == []  # no duplicate-key error, nothing else
    assert gate.checked == accounts.THROTTLE_FAILURES  # at most 5 (and exactly 5) checked
    refused = [o for o in outcomes if isinstance(o, accounts.LoginThrottled)]
    assert len(refused) == GUESSES - accounts.THROTTLE_FAILURES
    with store_session.session_scope(db_url) as s:
        row = s.get(LoginThrottle, "alice")
        assert row is not None and row.failures == accounts.THROTTLE_FAILURES  # all counted
    assert accounts.throttled_until(db_url, "alice") is not None
    monkeypatch.undo()
    with pytest.raises(accounts.LoginThrottled):  # even the right password now waits
        store.authenticate(db_url, "alice", "right-password")


def test_a_nul_in_a_login_name_is_refused_cleanly(db_url: str) -> None:
    store.add_user(db_url, "alice", "annotator", "right-password")
    for name in ("ali\x00ce", "\x00", "alice\x00"):
        assert store.authenticate(db_url, name, "right-password") is None
        assert accounts.throttled_until(db_url, name) is None
    with pytest.raises(InputError, match="NUL"):
        store.add_user(db_url, "bad\x00name", "annotator", "a-password")
    assert store.authenticate(db_url, "alice", "right-password") is not None
