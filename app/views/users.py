"""Users (admins): list accounts, add annotators, researchers and admins, set passwords,
change roles, deactivate and re-activate accounts.

Passwords are stored as argon2 hashes by :func:`qaeval_core.store.add_user`; this page
never shows or logs them. A password an admin sets here is temporary: its owner must choose a
new one at the next login. The last active admin can be neither deactivated nor demoted.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import auth, password_tab, safe_text
from qaeval_core import store
from qaeval_core.errors import QAEvalError
from qaeval_core.store import auth as passwords
from qaeval_core.store import users as accounts

LOGIN_ROLES = list(accounts.LOGIN_ROLES)
TEMPORARY = (
    f"A temporary password (at least {passwords.TEMPORARY_MIN_LENGTH} characters): the user "
    "chooses a new one at the first login."
)


def _add_form(url: str) -> None:
    safe_text.section("Add a user")
    password_tab.skip_show_password_buttons(key="users_password_tab")  # both password forms
    with st.form("add_user", clear_on_submit=True):
        c1, c2 = st.columns(2)
        name = c1.text_input("User name", key="user_name")
        role = c2.selectbox("Role", LOGIN_ROLES, key="user_role")
        c3, c4 = st.columns(2)
        password = c3.text_input("Password", type="password", key="user_password", help=TEMPORARY)
        confirm = c4.text_input("Repeat password", type="password", key="user_confirm")
        submitted = st.form_submit_button("Add user", type="primary", key="user_submit")
    if not submitted:
        return
    if password != confirm:
        st.error("The two passwords differ; nothing was created.")
        return
    try:
        passwords.check_new_password(password, min_length=passwords.TEMPORARY_MIN_LENGTH)
        info = store.add_user(url, name, role, password, must_change_password=True)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    st.success(
        f"Created {info.role} {info.name!r}. They can log in now and will choose their own "
        "password."
    )


def _password_form(url: str, names: list[str]) -> None:
    with st.expander("Set a new password for someone"):
        with st.form("set_password", clear_on_submit=True):
            name = st.selectbox("User", names, key="pw_user")
            password = st.text_input("New password", type="password", key="pw_new", help=TEMPORARY)
            submitted = st.form_submit_button("Set password", key="pw_submit")
        if submitted:
            try:
                passwords.check_new_password(password, min_length=passwords.TEMPORARY_MIN_LENGTH)
                accounts.set_password(url, name, password, must_change_password=True)
            except QAEvalError as exc:
                safe_text.show_error(exc)
            else:
                st.success(f"Password of {name!r} changed; their login sessions ended.")


def _manage_form(url: str, users: list[store.UserInfo]) -> None:
    """Deactivate / re-activate an account, or change its role."""
    with st.expander("Deactivate, re-activate or change a role"):
        names = [u.name for u in users]
        name = st.selectbox("User", names, key="manage_user")
        user = next((u for u in users if u.name == name), None)
        if user is None:
            return
        c1, c2, c3 = st.columns(3)
        role = c1.selectbox(
            "Role", LOGIN_ROLES, index=LOGIN_ROLES.index(user.role), key="manage_role"
        )
        try:
            if c1.button("Set role", key="manage_set_role"):
                accounts.set_role(url, name, role)
                st.success(f"{name!r} is now {role}.")
            if user.active and c2.button("Deactivate", key="manage_deactivate"):
                accounts.set_active(url, name, False)
                st.success(f"Deactivated {name!r}; their login sessions ended.")
            if not user.active and c3.button("Activate", key="manage_activate"):
                accounts.set_active(url, name, True)
                st.success(f"Activated {name!r}.")
        except QAEvalError as exc:
            safe_text.show_error(exc)


def main() -> None:
    me = auth.page_setup(
        "Users", auth.ADMINS, caption="Accounts that can log in, and external raters."
    )
    url = auth.store_url()
    _add_form(url)
    users = store.list_users(url)
    safe_text.section("Accounts")
    st.dataframe(
        pd.DataFrame(
            {
                "name": [u.name for u in users],
                "role": [u.role for u in users],
                "active": [u.active for u in users],
                "can log in": [u.has_password and u.role != "external" for u in users],
                "created": [u.created_at for u in users],
            }
        ),
        hide_index=True,
    )
    others = [u for u in users if u.role != "external" and u.name != me.name]
    _password_form(url, [u.name for u in others])
    _manage_form(url, [u for u in users if u.role != "external"])
    with st.expander("Change my password"):
        auth.password_change_form(me)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
