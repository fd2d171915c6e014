"""Log in with a local account (created by ``qaeval user add`` / ``qaeval demo`` or an admin)."""

from __future__ import annotations

import streamlit as st

from app.components import auth

st.title("qaeval")
st.caption("Judge whether QA answers are actually correct. Log in to label or manage data.")
with st.form("login", enter_to_submit=True):
    name = st.text_input("User name", key="login_name", autocomplete="username")
    password = st.text_input(
        "Password", type="password", key="login_password", autocomplete="current-password"
    )
    submitted = st.form_submit_button("Log in", type="primary", key="login_submit")
if submitted:
    if auth.log_in(name, password) is None:
        st.error("Unknown user name or wrong password.")
    else:
        st.rerun()
st.caption("No account yet? An admin creates one: `qaeval user add NAME --role annotator`.")
