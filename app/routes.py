"""The router's table: every page of the app, with the roles that see it.

A module of its own (data only, no Streamlit calls) so that the router (``app/main.py``) and the
tests read the same list: a page added here is shown by the router and opened by
tests/app/test_app_every_page.py for every role it names, without editing the test. To add a
page, append a :class:`PageSpec`; its file must also call ``auth.page_setup`` with the same
title and roles, which enforces them on the server.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.components import auth

#: Where the page files live, relative to ``app/main.py`` (not ``pages/``, which would switch
#: Streamlit to its legacy multipage mode next to ``st.navigation``).
VIEWS = "views/"
#: The page logged-out visitors get, and the only one.
LOGIN_PAGE = "login.py"
LOGIN_TITLE = "Log in"
LOGIN_ICON = ":material/login:"


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


def pages_for(role: str) -> list[PageSpec]:
    """The pages an account of ``role`` sees, in menu order."""
    return [spec for spec in PAGES if role in spec.roles]
