"""Log in with a local account (created by ``qaeval user add`` / ``qaeval demo`` or an admin).

Tab goes user name -> password -> Log in (issue 21, item 11). Streamlit's password field
always adds a "show password" eye button that takes the next Tab stop and cannot be taken out
of the tab order by any option; a static style rule hides it on this form only (a hidden
element is no Tab stop), so the keyboard reaches the button. Enter in either field logs in as
well. The eye stays on the password-change form, where seeing a new password matters.
"""

from __future__ import annotations

import streamlit as st

from app.components import auth
from qaeval_core.errors import PermissionDenied
from qaeval_core.store import users as accounts

#: Hides the login form's "show password" button (see the module docstring). Static text, no
#: user content: st.html only injects the style rule.
_NO_EYE = (
    "<style>.st-key-login_password button[aria-label='Show password'],"
    ".st-key-login_password button[aria-label='Hide password'] { display: none; }</style>"
)

st.html(_NO_EYE)
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
