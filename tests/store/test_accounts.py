"""Account security: throttling, equal-cost unknown names, sessions ended by password changes
and (de)activation, the password policy, the demo's forced password change, managing accounts
from the CLI and the Users page, the idle timeout and a new token per login."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from _paths import REPO_ROOT
from streamlit.testing.v1 import AppTest

from qaeval_core import store
from qaeval_core.cli.main import main
from qaeval_core.errors import ConfigError
from qaeval_core.store import auth
from qaeval_core.store import session as store_session
from qaeval_core.store import users as accounts
from qaeval_core.store.orm import LoginSession, LoginThrottle, utcnow

APP = REPO_ROOT / "app"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _unlock(url: str) -> None:
    """Pretend the lockout has run out (instead of sleeping)."""
    with store_session.write_scope(url) as s:
        s.query(LoginThrottle).update({"locked_until": utcnow() - timedelta(seconds=1)})


def test_repeated_failures_lock_the_name_with_a_growing_delay(db_url: str):
    store.add_user(db_url, "alice", "annotator", "right-password")
    for _ in range(accounts.THROTTLE_FAILURES):
        assert store.authenticate(db_url, "alice", "wrong") is None
    with pytest.raises(accounts.LoginThrottled, match="try again after .* UTC") as first:
        store.authenticate(db_url, "alice", "right-password")  # even the right one is refused
    assert first.value.retry_at > utcnow()
    assert accounts.throttled_until(db_url, "alice") is not None
    _unlock(db_url)
    assert store.authenticate(db_url, "alice", "wrong") is None  # one more failure: locked again
    with pytest.raises(accounts.LoginThrottled) as second:
        store.authenticate(db_url, "alice", "right-password")
    assert second.value.retry_at - utcnow() > timedelta(seconds=90)  # 2 min after 1 min
    _unlock(db_url)
    assert store.authenticate(db_url, "alice", "right-password") is not None
    with store_session.session_scope(db_url) as s:  # a success resets the count
        assert s.get(LoginThrottle, "alice") is None
    # Unknown names are throttled the same way, so the lockout does not reveal them.
    for _ in range(accounts.THROTTLE_FAILURES):
        assert store.authenticate(db_url, "nobody", "guess") is None
    with pytest.raises(accounts.LoginThrottled):
        store.authenticate(db_url, "nobody", "guess")


def test_unknown_names_cost_one_argon2_check_like_known_ones(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
):
    store.add_user(sqlite_url, "alice", "annotator", "right-password")
    store.add_user(sqlite_url, "rater", "external")
    calls: list[str] = []
    real = auth._hasher

    class Counting:
        def hash(self, password: str) -> str:
            return real.hash(password)

        def verify(self, password_hash: str, password: str) -> bool:
            calls.append(password_hash)
            return real.verify(password_hash, password)

    monkeypatch.setattr(auth, "_hasher", Counting())
    for name in ("alice", "nobody", "rater"):
        calls.clear()
        assert store.authenticate(sqlite_url, name, "wrong") is None
        assert len(calls) == 1 and calls[0].startswith("$argon2"), name


def test_a_new_password_or_deactivation_ends_every_login_session(db_url: str):
    store.add_user(db_url, "admin", "admin", "pw-admin-1")
    ann = store.add_user(db_url, "ann", "annotator", "pw-ann-123")
    token = store.open_session(db_url, ann.id)
    assert store.resume_session(db_url, token) is not None
    accounts.set_password(db_url, "ann", "another-password")
    assert store.resume_session(db_url, token) is None
    token = store.open_session(db_url, ann.id)
    accounts.set_active(db_url, "ann", False)
    assert store.authenticate(db_url, "ann", "another-password") is None
    accounts.set_active(db_url, "ann", True)
    assert store.resume_session(db_url, token) is None  # not revived
    assert store.authenticate(db_url, "ann", "another-password") is not None


def test_the_last_active_admin_stays(db_url: str):
    store.add_user(db_url, "boss", "admin", "pw-boss-12")
    store.add_user(db_url, "ann", "annotator", "pw-ann-123")
    with pytest.raises(ConfigError, match="last active admin"):
        accounts.set_active(db_url, "boss", False)
    with pytest.raises(ConfigError, match="last active admin"):
        accounts.set_role(db_url, "boss", "researcher")
    assert accounts.set_role(db_url, "ann", "admin").role == "admin"
    assert accounts.set_role(db_url, "boss", "researcher").role == "researcher"
    with pytest.raises(ConfigError, match="Unknown role"):
        accounts.set_role(db_url, "ann", "external")


def test_password_policy():
    for short in ["", "a", "1234567"]:
        with pytest.raises(ConfigError, match="at least 8 characters"):
            auth.check_new_password(short)
    with pytest.raises(ConfigError, match="only spaces"):
        auth.check_new_password(" " * 8)
    assert auth.check_new_password("eight-ch") == "eight-ch"


def test_cli_manages_accounts(capsys, db_url: str):
    code, _, err = cli(capsys, "user", "add", "bob", "--password", "x", "--db", db_url)
    assert code == 1 and "at least 8 characters" in err
    assert (
        cli(
            capsys,
            "user",
            "add",
            "boss",
            "--role",
            "admin",
            "--password",
            "pw-boss-12",
            "--db",
            db_url,
        )[0]
        == 0
    )
    assert cli(capsys, "user", "add", "bob", "--password", "pw-bob-123", "--db", db_url)[0] == 0
    code, _, err = cli(capsys, "user", "passwd", "bob", "--password", "short", "--db", db_url)
    assert code == 1 and "at least 8" in err
    code, out, _ = cli(capsys, "user", "passwd", "bob", "--password", "new-bob-pw", "--db", db_url)
    assert code == 0 and store.authenticate(db_url, "bob", "new-bob-pw") is not None
    code, out, _ = cli(capsys, "user", "deactivate", "bob", "--db", db_url)
    assert code == 0 and not store.get_user(db_url, "bob").active
    code, out, _ = cli(capsys, "user", "list", "--db", db_url)
    assert "(inactive)" in out
    assert cli(capsys, "user", "activate", "bob", "--db", db_url)[0] == 0
    assert store.get_user(db_url, "bob").active
    code, out, _ = cli(capsys, "user", "role", "bob", "researcher", "--db", db_url)
    assert code == 0 and store.get_user(db_url, "bob").role == "researcher"
    code, _, err = cli(capsys, "user", "deactivate", "boss", "--db", db_url)
    assert code == 1 and "last active admin" in err


def test_idle_sessions_end(sqlite_url: str, monkeypatch: pytest.MonkeyPatch):
    user = store.add_user(sqlite_url, "ann", "annotator", "pw-ann-123")
    token = store.open_session(sqlite_url, user.id)
    assert store.resume_session(sqlite_url, token) is not None
    with store_session.write_scope(sqlite_url) as s:
        s.query(LoginSession).update({"last_seen_at": utcnow() - timedelta(minutes=20)})
    assert store.resume_session(sqlite_url, token) is not None  # default 30 min
    with store_session.session_scope(sqlite_url) as s:  # ... and that use counts as activity
        seen = s.query(LoginSession.last_seen_at).scalar()
    assert abs((seen - utcnow().replace(tzinfo=None)).total_seconds()) < 60
    with store_session.write_scope(sqlite_url) as s:
        s.query(LoginSession).update({"last_seen_at": utcnow() - timedelta(minutes=20)})
    monkeypatch.setenv(store.IDLE_ENV, "15")
    assert store.resume_session(sqlite_url, token) is None
    monkeypatch.setenv(store.IDLE_ENV, "soon")
    with pytest.raises(ConfigError, match="QAEVAL_SESSION_IDLE_MINUTES"):
        store.idle_minutes()


def test_demo_admin_must_choose_a_new_password_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    url = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    assert main(["demo", "--db", url]) == 0
    assert store.get_user(url, "admin").must_change_password
    monkeypatch.setenv("QAEVAL_DATABASE_URL", url)
    at = AppTest.from_file(str(APP / "main.py"), default_timeout=120).run()
    at.text_input(key="login_name").input("admin")
    at.text_input(key="login_password").input("admin")
    at.button(key="login_submit").click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Choose a new password"]  # nothing else
    old_token = at.query_params["session"]
    at.text_input(key="own_pw_new").input("short")
    at.text_input(key="own_pw_again").input("short")
    at.button(key="own_pw_submit").click().run()
    assert "at least 8 characters" in at.error[0].value
    at.text_input(key="own_pw_new").input("a-good-new-password")
    at.text_input(key="own_pw_again").input("a-good-new-password")
    at.button(key="own_pw_submit").click().run()
    assert not at.exception, at.exception
    assert "Choose a new password" not in [t.value for t in at.title]
    assert not store.get_user(url, "admin").must_change_password
    new_token = at.query_params["session"]
    assert new_token != old_token  # a new token; the old one no longer works
    assert store.resume_session(url, str(old_token)) is None
    assert store.resume_session(url, str(new_token)) is not None
    assert store.authenticate(url, "admin", "admin") is None


def test_login_page_says_when_to_retry(sqlite_url: str, monkeypatch: pytest.MonkeyPatch):
    store.add_user(sqlite_url, "ann", "annotator", "pw-ann-123")
    monkeypatch.setenv("QAEVAL_DATABASE_URL", sqlite_url)
    at = AppTest.from_file(str(APP / "main.py"), default_timeout=120).run()
    for _ in range(accounts.THROTTLE_FAILURES + 1):
        at.text_input(key="login_name").input("ann")
        at.text_input(key="login_password").input("wrong")
        at.button(key="login_submit").click().run()
    assert not at.exception, at.exception
    assert "Too many failed logins" in at.error[0].value and "UTC" in at.error[0].value
