"""Users (admins): list accounts and add annotators, researchers and admins.

Passwords are stored as argon2 hashes by :func:`qaeval_core.store.repo.add_user`; this page
never shows or logs them.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import auth, safe_text
from qaeval_core.errors import QAEvalError
from qaeval_core.store import repo

LOGIN_ROLES = ["annotator", "researcher", "admin"]


def _add_form(url: str) -> None:
    safe_text.section("Add a user")
    with st.form("add_user", clear_on_submit=True):
        c1, c2 = st.columns(2)
        name = c1.text_input("User name", key="user_name")
        role = c2.selectbox("Role", LOGIN_ROLES, key="user_role")
        c3, c4 = st.columns(2)
        password = c3.text_input("Password", type="password", key="user_password")
        confirm = c4.text_input("Repeat password", type="password", key="user_confirm")
        submitted = st.form_submit_button("Add user", type="primary", key="user_submit")
    if not submitted:
        return
    if password != confirm:
        st.error("The two passwords differ; nothing was created.")
        return
    try:
        info = repo.add_user(url, name, role, password)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    st.success(f"Created {info.role} {info.name!r}. They can log in now.")


def _password_form(url: str, names: list[str]) -> None:
    with st.expander("Set a new password"):
        with st.form("set_password", clear_on_submit=True):
            name = st.selectbox("User", names, key="pw_user")
            password = st.text_input("New password", type="password", key="pw_new")
            submitted = st.form_submit_button("Set password", key="pw_submit")
        if submitted:
            try:
                repo.set_password(url, name, password)
            except QAEvalError as exc:
                safe_text.show_error(exc)
            else:
                st.success(f"Password of {name!r} changed.")


def main() -> None:
    auth.page_setup("Users", auth.ADMINS, caption="Accounts that can log in, and external raters.")
    url = auth.store_url()
    _add_form(url)
    users = repo.list_users(url)
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
    _password_form(url, [u.name for u in users if u.role != "external"])


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
