"""The qaeval web app's entry point: only a router.

The pages and the roles that see them are listed in :mod:`app.routes` (``PAGES``), which the
tests read too; to add a page, append it there. Logged-out visitors only get the login page.
Code the views share lives in ``app/components/``.

Run with ``qaeval app`` (or ``streamlit run app/main.py`` with ``QAEVAL_DATABASE_URL`` set).
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from app.components import auth
from app.components.safe_text import escape_markdown
from app.routes import LOGIN_ICON, LOGIN_PAGE, LOGIN_TITLE, VIEWS, pages_for


def _navigation(user: auth.SessionUser | None) -> StreamlitPage:
    """The pages this user may open; everything else is unreachable, even by URL."""
    if user is None:
        return st.navigation([st.Page(VIEWS + LOGIN_PAGE, title=LOGIN_TITLE, icon=LOGIN_ICON)])
    sections: dict[str, list[StreamlitPage]] = {}
    for spec in pages_for(user.role):
        page = st.Page(VIEWS + spec.path, title=spec.title, icon=spec.icon)
        sections.setdefault(spec.section, []).append(page)
    return st.navigation(sections)


st.set_page_config(page_title="qaeval", page_icon=":material/fact_check:", layout="wide")
current = auth.current_user()
if current is not None:
    with st.sidebar:
        st.caption(f"Signed in as **{escape_markdown(current.name)}** ({current.role})")
        if st.button("Log out", icon=":material/logout:", key="logout"):
            auth.log_out()
            st.rerun()
_navigation(current).run()
