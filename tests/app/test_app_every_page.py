"""Every page of the router opened by every role that may see it, and refused to every other.

The pages come from the router's own table (:data:`app.routes.PAGES`, which ``app/main.py``
serves), not from a list in this file: a page added to the router is opened here without
editing the test. Each case logs in through the login form (the real path) on the demo store,
opens the page from the menu and checks that it ran without an exception and showed its title.
The behaviour of each page is tested in its own module (test_app_pages.py, test_app_analysis.py,
...); this module only says that none of them is broken for anyone who can open it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _apptest import APP, build_demo_store, finish_store, logged_in
from streamlit.testing.v1 import AppTest

from app.routes import LOGIN_PAGE, PAGES, VIEWS, PageSpec, pages_for
from qaeval_core import store as qstore
from qaeval_core.vocabulary import LOGIN_ROLES

#: One account per role that can log in (``build_demo_store`` adds ``res`` and ``ann``; the
#: demo's own ``admin`` must change its password first, so a second admin is added).
ACCOUNTS = {"annotator": "ann", "researcher": "res", "admin": "boss"}
#: A page may pass, as a known bug, only while it is listed here with the bug's description
#: (strict: once the page opens, the mark must go).
KNOWN_BROKEN: dict[str, str] = {}


def allowed_cases() -> list[tuple[PageSpec, str]]:
    """(page, role) for every page of the router and every role that sees it in the menu."""
    return [(spec, role) for role in LOGIN_ROLES for spec in pages_for(role)]


def refused_cases() -> list[tuple[PageSpec, str]]:
    """(page, role) for every page of the router and every role it is not for."""
    return [(spec, role) for spec in PAGES for role in LOGIN_ROLES if role not in spec.roles]


def as_params(cases: list[tuple[PageSpec, str]], *, known_bugs: bool) -> list[object]:
    """Pytest parameters named ``page-role``; with ``known_bugs``, a page of
    :data:`KNOWN_BROKEN` is a strict expected failure."""
    return [
        pytest.param(
            spec,
            role,
            id=f"{spec.path.removesuffix('.py')}-{role}",
            marks=(
                [pytest.mark.xfail(reason=KNOWN_BROKEN[spec.path], strict=True)]
                if known_bugs and spec.path in KNOWN_BROKEN
                else []
            ),
        )
        for spec, role in cases
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo store (scored with the demo's fast metrics) with one account per role, made
    the app's store for the whole module: opening a page reads, it does not change what the
    next page shows."""
    with pytest.MonkeyPatch.context() as patch:
        _, url = build_demo_store(tmp_path_factory.mktemp("every-page"))
        qstore.add_user(url, ACCOUNTS["admin"], "admin", f"pw-{ACCOUNTS['admin']}")
        finish_store(url)
        patch.setenv("QAEVAL_DATABASE_URL", url)
        yield url


# ----------------------------------------------------------------------------- the list


def test_the_cases_are_the_routers_pages_and_roles() -> None:
    """The cases below are the router's table read per role, not a list kept here."""
    assert {spec.path for spec, _ in allowed_cases()} == {spec.path for spec in PAGES}
    assert len(allowed_cases()) + len(refused_cases()) == len(PAGES) * len(LOGIN_ROLES)
    assert set(ACCOUNTS) == set(LOGIN_ROLES)
    unknown = {role for spec in PAGES for role in spec.roles} - set(LOGIN_ROLES)
    assert unknown == set(), "a page names a role nobody can log in with"
    assert set(KNOWN_BROKEN) <= {spec.path for spec in PAGES}


def test_every_page_file_is_in_the_router() -> None:
    """A file under app/views/ the router does not list is a page nobody can reach."""
    on_disk = {p.name for p in (APP / VIEWS).glob("*.py") if p.name != "__init__.py"}
    routed = {spec.path for spec in PAGES} | {LOGIN_PAGE}
    assert on_disk == routed


@pytest.mark.parametrize("role", LOGIN_ROLES)
def test_the_menu_is_the_routers_list_for_the_role(store: str, role: str) -> None:
    """What the running app lets this role open is exactly ``pages_for(role)``."""
    at = logged_in(ACCOUNTS[role])
    reachable = []
    for spec in PAGES:
        try:
            at.switch_page(VIEWS + spec.path)
        except ValueError as exc:
            assert "Could not find a navigation page" in str(exc)
        else:
            reachable.append(spec)
    assert reachable == pages_for(role)


# ----------------------------------------------------------------------------- the pages


@pytest.mark.parametrize(("spec", "role"), as_params(allowed_cases(), known_bugs=True))
def test_the_page_opens_for_the_role(store: str, spec: PageSpec, role: str) -> None:
    at = logged_in(ACCOUNTS[role])
    at.switch_page(VIEWS + spec.path).run()
    assert not at.exception, f"{spec.path} as {role}: {at.exception}"
    assert [t.value for t in at.title] == [spec.title]


@pytest.mark.parametrize(("spec", "role"), as_params(refused_cases(), known_bugs=False))
def test_the_page_itself_refuses_other_roles(store: str, spec: PageSpec, role: str) -> None:
    """Run the page file directly (as a URL the menu does not offer would): the page's own
    role check stops it before it shows anything."""
    at = AppTest.from_file(str(APP / VIEWS / spec.path), default_timeout=60)
    info = qstore.get_user(store, ACCOUNTS[role])
    at.session_state["qaeval_user"] = {"id": info.id, "name": info.name, "role": role}
    at.run()
    assert not at.exception, at.exception
    assert "cannot open" in at.error[0].value
    assert not at.title and not at.button and not at.dataframe
