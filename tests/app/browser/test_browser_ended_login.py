"""An account deactivated while its Annotate page is open cannot label any more (issue 21,
item 12), in a real Chromium against ``streamlit run``.

The annotator labels one item, an admin deactivates the account (the store call the Users page
makes), and the annotator, whose page still shows the next item, presses a label key and Enter:
the page must say the label was not saved (the login form replaces the item, with the reason)
and the store must hold no label for that item. The same after an admin's password change and
after a logout in another tab.

Skips, saying why, when Chromium or Playwright is missing (see tests/app/browser/test_browser.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import chromium_context, log_in, need_browser, streamlit_app

from qaeval_core import store
from qaeval_core.store import session as store_session
from qaeval_core.store import users as accounts

pytestmark = pytest.mark.browser

ROWS = [
    {
        "id": f"e{i}",
        "question": f"Question number {i}?",
        "references": [f"answer {i}"],
        "candidate": f"It is answer {i}.",
    }
    for i in range(4)
]


ENDINGS = ("deactivated", "password changed", "logged out in another tab")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """4 items dealt to one annotator per way a login ends (``ann0``, ``ann1``, ``ann2``), an
    admin, and ``streamlit run`` serving the store."""
    need_browser()
    tmp = tmp_path_factory.mktemp("ended")
    url = f"sqlite:///{tmp / 'ended.sqlite'}"
    store_session.upgrade(url)
    store.import_items(url, "ds", ROWS, source="browser test")
    store.add_user(url, "boss", "admin", "pw-boss-long")
    names = [f"ann{k}" for k in range(len(ENDINGS))]
    for name in names:
        store.add_user(url, name, "annotator", f"pw-{name}")
    store.deal(url, "ds", names, options=store.DealOptions(base=len(names)))
    with streamlit_app(url, tmp) as base:
        yield base, url


def _labels(url: str, name: str) -> list[tuple[str, int]]:
    frame = store.label_history_frame(url, "ds")
    return [(r.external_id, int(r.value)) for r in frame.itertuples() if r.user == name]


def _wait_item(page: Any, external_id: str) -> None:
    page.wait_for_function(
        "(id) => { const h = document.querySelector('[data-qp-item]');"
        " return h && h.getAttribute('data-qp-item') === id"
        " && !h.hasAttribute('data-qp-pending'); }",
        arg=external_id,
    )


def _log_out_in_another_tab(context: Any, page: Any) -> None:
    """A second tab on the same login (its URL carries the session), where Log out is pressed."""
    from playwright.sync_api import expect

    other = context.new_page()
    other.goto(page.url)
    expect(other.get_by_text("Signed in as")).to_be_visible()
    other.get_by_role("button", name="Log out").click()
    expect(other.get_by_text("No account yet?")).to_be_visible()
    other.close()


@pytest.mark.parametrize("ending", ENDINGS)
def test_key_and_enter_after_the_login_ended_is_refused_and_stores_nothing(
    served: tuple[str, str], tmp_path: Path, ending: str
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, url = served
    name = f"ann{ENDINGS.index(ending)}"
    expect.set_options(timeout=30_000)  # the first run of a page is slow on a loaded machine
    with sync_playwright() as pw, chromium_context(pw, str(tmp_path / "profile")) as context:
        page = context.new_page()
        log_in(page, name, f"pw-{name}", base=base, by_keyboard=True)
        _wait_item(page, "e0")
        page.keyboard.press("y")
        page.keyboard.press("Enter")
        _wait_item(page, "e1")
        assert _labels(url, name) == [("e0", 2)]

        if ending == "deactivated":  # what the Users page does
            accounts.set_active(url, name, False)
        elif ending == "password changed":
            accounts.set_password(url, name, "an-admin-set-password")
        else:
            _log_out_in_another_tab(context, page)
        page.bring_to_front()
        _wait_item(page, "e1")  # the page still shows the item
        page.keyboard.press("n")
        expect(page.get_by_role("button", name="Clearly incorrect")).to_have_attribute(
            "aria-pressed", "true"
        )
        page.keyboard.press("Enter")
        expect(page.get_by_text("Nothing was saved after it ended")).to_be_visible()
        expect(page.get_by_text("No account yet?")).to_be_visible()  # the login form
        expect(page.locator("[data-qp-item]")).to_have_count(0)  # the item is gone
    assert _labels(url, name) == [("e0", 2)]  # e1 was not labelled
