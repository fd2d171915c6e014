"""The qaeval web app's entry point: only a router.

``PAGES`` lists every page with the roles that see it; to add a page, append a
:class:`~app.ui.PageSpec` (its file must also call ``ui.page_setup`` with the same roles, which
enforces them on the server). Logged-out visitors only get the login page.

Run with ``qaeval app`` (or ``streamlit run app/main.py`` with ``QAEVAL_DATABASE_URL`` set).
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from app import ui

PAGES: list[ui.PageSpec] = [
    ui.PageSpec("pages/annotate.py", "Annotate", ui.LABELLERS, ":material/edit_note:"),
    ui.PageSpec("pages/assign.py", "Assign", ui.RESEARCHERS, ":material/group_add:", "Manage"),
    ui.PageSpec("pages/data.py", "Data", ui.RESEARCHERS, ":material/database:", "Manage"),
    ui.PageSpec("pages/users.py", "Users", ui.ADMINS, ":material/manage_accounts:", "Manage"),
    ui.PageSpec(
        "pages/agreement.py", "Agreement", ui.RESEARCHERS, ":material/handshake:", "Analyse"
    ),
    ui.PageSpec(
        "pages/disagreements.py", "Disagreements", ui.RESEARCHERS, ":material/gavel:", "Analyse"
    ),
    ui.PageSpec(
        "pages/explorer.py", "Metric explorer", ui.RESEARCHERS, ":material/troubleshoot:", "Analyse"
    ),
    ui.PageSpec(
        "pages/leaderboard.py", "Leaderboard", ui.RESEARCHERS, ":material/leaderboard:", "Analyse"
    ),
    ui.PageSpec("pages/calibrate.py", "Calibrate", ui.RESEARCHERS, ":material/tune:", "Analyse"),
]


def _navigation(user: ui.SessionUser | None) -> StreamlitPage:
    """The pages this user may open; everything else is unreachable, even by URL."""
    if user is None:
        return st.navigation([st.Page("pages/login.py", title="Log in", icon=":material/login:")])
    sections: dict[str, list[StreamlitPage]] = {}
    for spec in PAGES:
        if user.role in spec.roles:
            page = st.Page(spec.path, title=spec.title, icon=spec.icon)
            sections.setdefault(spec.section, []).append(page)
    return st.navigation(sections)


st.set_page_config(page_title="qaeval", page_icon=":material/fact_check:", layout="wide")
current = ui.current_user()
if current is not None:
    with st.sidebar:
        st.caption(f"Signed in as **{ui.escape_markdown(current.name)}** ({current.role})")
        if st.button("Log out", icon=":material/logout:", key="logout"):
            ui.log_out()
            st.rerun()
_navigation(current).run()
