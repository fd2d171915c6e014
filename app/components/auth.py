"""Who is using the app: logging in and out, login sessions, and the role check every page
starts with.

Every page starts with :func:`page_setup`, which re-reads the logged-in account from the store
and checks its role on the server, so hiding a link is never the only protection: a page opened
by URL, or by an account whose role changed since login, stops before it renders anything; an
account with a temporary password (the demo's ``admin``, or one an admin set) gets the
change-password form before anything else.
:func:`store_url` (the store this app serves, schema upgraded once per process) lives here too,
because the login check is the first thing that needs it on every run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import streamlit as st

from app.components import password_tab
from qaeval_core import store
from qaeval_core.errors import NotFoundError, QAEvalError
from qaeval_core.store import auth as passwords
from qaeval_core.store import session as store_session
from qaeval_core.store import users as accounts

__all__ = [
    "LABELLERS",
    "RESEARCHERS",
    "ADMINS",
    "SessionUser",
    "store_url",
    "current_user",
    "log_in",
    "log_out",
    "login_token",
    "page_setup",
    "password_change_form",
]

#: Roles allowed on a page (the router's table in app/routes.py shows the link, page_setup
#: enforces it).
LABELLERS = ("annotator", "researcher", "admin")
RESEARCHERS = ("researcher", "admin")
ADMINS = ("admin",)

_USER_KEY = "qaeval_user"
_TOKEN_KEY = "qaeval_session_token"
#: The URL query parameter that carries the login session token.
SESSION_PARAM = "session"


@dataclass(frozen=True)
class SessionUser:
    """The logged-in account as the pages need it (never the password hash)."""

    id: int
    name: str
    role: str
    must_change_password: bool = False


def _as_dict(user: SessionUser) -> dict[str, object]:
    # Session state keeps a plain dict: Streamlit may re-import this module between runs, and
    # an instance of the old class would then fail isinstance checks.
    return {"id": user.id, "name": user.name, "role": user.role}


@st.cache_resource(show_spinner=False)
def _upgraded(url: str) -> str:
    """Bring the schema up to date once per server process and store URL."""
    return store_session.upgrade(url)


def store_url() -> str:
    """The store this app serves (``QAEVAL_DATABASE_URL`` or the default), schema upgraded."""
    return _upgraded(store_session.resolve_url(None))


def _start_session(user_id: int) -> None:
    """A new login session (a new random token) for this browser; the one it held, if any,
    ends, so a token is never reused across logins."""
    old = st.session_state.get(_TOKEN_KEY) or st.query_params.get(SESSION_PARAM)
    if old:
        store.close_session(store_url(), str(old))
    token = store.open_session(store_url(), user_id)
    st.session_state[_TOKEN_KEY] = token
    st.query_params[SESSION_PARAM] = token


def log_in(name: str, password: str) -> SessionUser | None:
    """Check credentials against the store; remember the account in this browser session and
    open a login session whose token goes into the page URL, so a reload keeps the user in.

    Raises :class:`~qaeval_core.store.users.LoginThrottled` while the name is locked out
    after repeated failures (its message says when to retry).
    """
    info = store.authenticate(store_url(), name.strip(), password)
    if info is None:
        return None
    user = SessionUser(info.id, info.name, info.role, info.must_change_password)
    st.session_state[_USER_KEY] = _as_dict(user)
    _start_session(info.id)
    return user


def log_out() -> None:
    """End the login session and forget everything about this browser session (account,
    queues, selections)."""
    token = st.session_state.get(_TOKEN_KEY) or st.query_params.get(SESSION_PARAM)
    if token:
        store.close_session(store_url(), str(token))
    st.query_params.pop(SESSION_PARAM, None)
    for key in list(st.session_state.keys()):
        del st.session_state[key]


def _resume() -> dict[str, object] | None:
    """After a reload: the account of the login session named in the URL, if still live."""
    token = st.query_params.get(SESSION_PARAM)
    if not token:
        return None
    info = store.resume_session(store_url(), str(token))
    if info is None:
        st.query_params.pop(SESSION_PARAM, None)  # expired or ended: the login form shows
        return None
    raw = _as_dict(SessionUser(info.id, info.name, info.role))
    st.session_state[_USER_KEY] = raw
    st.session_state[_TOKEN_KEY] = str(token)
    return raw


def login_token() -> str | None:
    """The token of this browser's login session, for the store's writes to check again.

    A callback (a key + Enter on the Annotate page) runs before the page re-reads the account,
    so its write passes this token and the store refuses it, in the write's own transaction,
    once the login has ended (:func:`qaeval_core.store.users.require_live_login`).
    """
    token = st.session_state.get(_TOKEN_KEY)
    return str(token) if token else None


def current_user() -> SessionUser | None:
    """The logged-in account, re-validated against the store on every run.

    A deactivated, deleted or re-roled account takes effect on the next click, not at the next
    login, and logging out in one tab ends the login in the others. Page navigation clears the
    URL's query parameters, so the session token is put back on every run; a reload finds it.
    """
    raw = st.session_state.get(_USER_KEY)
    if not isinstance(raw, dict):
        raw = _resume()
    if not isinstance(raw, dict):
        return None
    token = st.session_state.get(_TOKEN_KEY)
    if token and st.query_params.get(SESSION_PARAM) != token:
        st.query_params[SESSION_PARAM] = token
    remembered = SessionUser(int(raw["id"]), str(raw["name"]), str(raw["role"]))
    try:
        # With a login session, the session itself must still be live: logging out in one tab
        # ends every tab's login on its next click.
        found = store.resume_session(store_url(), str(token)) if token else None
        info = found if token else store.get_user(store_url(), remembered.name)
    except NotFoundError:
        info = None
    if info is None or not info.active or info.role == "external" or info.id != remembered.id:
        log_out()
        # Said on the login form that replaces the page: a key pressed on a page whose login
        # had ended was refused by the store (login_token), never saved.
        st.warning(
            "Your login has ended (logged out in another tab, password changed, account "
            "deactivated or idle too long). Nothing was saved after it ended; log in again."
        )
        return None
    if info.role != remembered.role:
        remembered = SessionUser(info.id, info.name, info.role)
        st.session_state[_USER_KEY] = _as_dict(remembered)
    return SessionUser(info.id, info.name, info.role, info.must_change_password)


def password_change_form(user: SessionUser, *, forced: bool = False) -> None:
    """The form that sets a new password for ``user`` (asked for before anything else when
    ``forced``). Every other login of the account ends; this browser gets a new session."""
    if forced:
        st.title("Choose a new password")
        st.info(
            "Your password is a temporary one (set by `qaeval demo` or an admin). Choose a new "
            f"one of at least {passwords.MIN_PASSWORD_LENGTH} characters before you go on."
        )
    password_tab.skip_show_password_buttons(key="own_password_tab")
    with st.form("own_password", clear_on_submit=True):
        new = st.text_input(
            "New password", type="password", key="own_pw_new", autocomplete="new-password"
        )
        again = st.text_input(
            "Repeat the new password",
            type="password",
            key="own_pw_again",
            autocomplete="new-password",
        )
        submitted = st.form_submit_button("Change password", type="primary", key="own_pw_submit")
    if not submitted:
        return
    if new != again:
        st.error("The two passwords differ; nothing was changed.")
        return
    try:
        passwords.check_new_password(new)
        accounts.set_password(store_url(), user.name, new)
    except QAEvalError as exc:
        st.error(str(exc))
        return
    _start_session(user.id)
    st.success("Password changed.")
    if forced:
        st.rerun()


def page_setup(title: str, roles: Iterable[str], *, caption: str | None = None) -> SessionUser:
    """Start a page: require a logged-in user with one of ``roles``, then show the title.

    Stops the script (``st.stop``) otherwise, so nothing below the call runs for a user who
    may not see it.
    """
    user = current_user()
    allowed = tuple(roles)
    if user is None:
        st.warning("Please log in first.")
        st.stop()
    if user.must_change_password:
        password_change_form(user, forced=True)
        st.stop()
    if user.role not in allowed:
        st.error(
            f"Your account ({user.role}) cannot open {title!r}; it is for "
            f"{' or '.join(allowed)} accounts. Ask an admin if you need access."
        )
        st.stop()
    st.title(title)
    if caption:
        st.caption(caption)
    return user
