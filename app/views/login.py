"""Log in with a local account (created by ``qaeval user add`` / ``qaeval demo`` or an admin)."""

from __future__ import annotations

import streamlit as st

from app.components import auth
from qaeval_core.errors import PermissionDenied
from qaeval_core.store.repo import users as accounts

st.title("qaeval")
st.caption("Judge whether QA answers are actually correct. Log in to label or manage data.")
with st.form("login", enter_to_submit=True):
    name = st.text_input("User name", key="login_name", autocomplete="username")
    password = st.text_input(
        "Password", type="password", key="login_password", autocomplete="current-password"
    )
    submitted = st.form_submit_button("Log in", type="primary", key="login_submit")
if submitted:
    try:
        user = auth.log_in(name, password)
    except PermissionDenied as exc:  # locked out after repeated failures
        st.error(str(exc))
    else:
        if user is not None:
            st.rerun()
        locked = accounts.throttled_until(auth.store_url(), name.strip())
        if locked is None:
            st.error("Unknown user name or wrong password.")
        else:
            st.error(
                f"Unknown user name or wrong password. Too many failed logins for this name: "
                f"try again after {locked:%H:%M} UTC."
            )
st.caption("No account yet? An admin creates one: `qaeval user add NAME --role annotator`.")
