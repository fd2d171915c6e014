"""The qaeval web app's entry point: only a router.

``PAGES`` lists every page (a file under ``app/views/``) with the roles that see it; to add a
page, append a :class:`PageSpec` (its file must also call ``auth.page_setup`` with the same
roles, which enforces them on the server). Logged-out visitors only get the login page. Code
the views share lives in ``app/components/``.

Run with ``qaeval app`` (or ``streamlit run app/main.py`` with ``QAEVAL_DATABASE_URL`` set).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from app.components import auth
from app.components.safe_text import escape_markdown

#: Where the page files live, relative to this file (not ``pages/``, which would switch
#: Streamlit to its legacy multipage mode next to ``st.navigation``).
VIEWS = "views/"


@dataclass(frozen=True)
class PageSpec:
    """One entry of the router: file in app/views/, title, allowed roles, icon, menu section."""

    path: str
    title: str
    roles: tuple[str, ...]
    icon: str | None = None
    section: str = "Labelling"


PAGES: list[PageSpec] = [
    PageSpec("annotate.py", "Annotate", auth.LABELLERS, ":material/edit_note:"),
    PageSpec("assign.py", "Assign", auth.RESEARCHERS, ":material/group_add:", "Manage"),
    PageSpec("data.py", "Data", auth.RESEARCHERS, ":material/database:", "Manage"),
    PageSpec("users.py", "Users", auth.ADMINS, ":material/manage_accounts:", "Manage"),
    PageSpec("agreement.py", "Agreement", auth.RESEARCHERS, ":material/handshake:", "Analyse"),
    PageSpec("disagreements.py", "Disagreements", auth.RESEARCHERS, ":material/gavel:", "Analyse"),
    PageSpec(
        "explorer.py", "Metric explorer", auth.RESEARCHERS, ":material/troubleshoot:", "Analyse"
    ),
    PageSpec(
        "leaderboard.py", "Leaderboard", auth.RESEARCHERS, ":material/leaderboard:", "Analyse"
    ),
    PageSpec("calibrate.py", "Calibrate", auth.RESEARCHERS, ":material/tune:", "Analyse"),
    PageSpec("flags.py", "Flags", auth.RESEARCHERS, ":material/flag:", "Manage"),
    PageSpec("guidelines.py", "Guidelines", auth.RESEARCHERS, ":material/menu_book:", "Manage"),
    PageSpec("knowledge.py", "Taught answers", auth.RESEARCHERS, ":material/school:", "Analyse"),
]


def _navigation(user: auth.SessionUser | None) -> StreamlitPage:
    """The pages this user may open; everything else is unreachable, even by URL."""
    if user is None:
        return st.navigation([st.Page(VIEWS + "login.py", title="Log in", icon=":material/login:")])
    sections: dict[str, list[StreamlitPage]] = {}
    for spec in PAGES:
        if user.role in spec.roles:
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
