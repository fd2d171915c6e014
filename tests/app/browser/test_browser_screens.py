"""Screens on a laptop, in a real Chromium at 1366x768 (issue 21, items 5, 7 and 11).

* Item 5: after a keyboard label and Enter, the question, the label buttons, the Save button
  and the status line ("Saved item ...: ...") all lie inside the 1366x768 viewport, unscrolled: the
  annotator sees the feedback of every key without scrolling.
* Item 7: reopening a skipped, unlabelled item (after the queue ran out) does not show the
  previous item's "Saved: unclear" as if it were this item's.
* Item 11: on the login page, Tab goes from the user name to the password to the Log in
  button (not to the password field's "show password" eye), pressed as a person does.

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

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1366, 768

#: A realistic item: a long-ish question, two references, a two-sentence answer.
ANSWER = (
    "The Washington Redskins play their home games at FedExField in Landover, Maryland, a "
    "suburb east of the capital; the team's headquarters and training facility are in Ashburn, "
    "Virginia, so people often say it is based in the Washington metropolitan area."
)


def _rows(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}{i}",
            "question": f"where are the washington redskins based out of, and where do they play "
            f"their home games ({prefix}{i})?",
            "references": ["FedExField in Landover, Maryland", "the Washington metropolitan area"],
            "candidate": ANSWER,
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """One server: ``laptop`` has 5 items in ``fold``; ``skipper`` has 2 items in ``skips``.
    Both datasets use the default guidelines (seven rules with descriptions)."""
    need_browser()
    tmp = tmp_path_factory.mktemp("screens")
    url = f"sqlite:///{tmp / 'screens.sqlite'}"
    store_session.upgrade(url)
    store.import_items(url, "fold", _rows("f", 5), source="browser test")
    store.import_items(url, "skips", _rows("s", 2), source="browser test")
    for name in ("laptop", "skipper"):
        store.add_user(url, name, "annotator", f"pw-{name}")
    store.deal(url, "fold", ["laptop"])
    store.deal(url, "skips", ["skipper"])
    with streamlit_app(url, tmp) as base:
        yield base, url


@pytest.fixture
def page(served: tuple[str, str], tmp_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with (
        sync_playwright() as pw,
        chromium_context(pw, str(tmp_path / "profile"), WIDTH, HEIGHT) as context,
    ):
        yield context.new_page()


def _wait_item(page: Any, external_id: str) -> None:
    """Until the picker shows ``external_id`` and is ready for keys."""
    page.wait_for_function(
        "(id) => { const h = document.querySelector('[data-qp-item]');"
        " return h && h.getAttribute('data-qp-item') === id"
        " && !h.hasAttribute('data-qp-pending'); }",
        arg=external_id,
    )


def _in_viewport(locator: Any) -> tuple[bool, Any]:
    """Whether the element's whole box lies inside the viewport (as laid out, not scrolled to)."""
    box = locator.bounding_box()
    inside = (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= WIDTH
        and box["y"] + box["height"] <= HEIGHT
    )
    return inside, box


def test_save_and_status_are_on_screen_at_1366x768_after_a_keyboard_label(
    served: tuple[str, str], page: Any
) -> None:
    from playwright.sync_api import expect

    base, url = served
    log_in(page, "laptop", "pw-laptop", base=base)
    _wait_item(page, "f0")
    page.keyboard.press("u")
    page.keyboard.press("Enter")
    _wait_item(page, "f1")
    status = page.locator("[data-qp=status]")
    expect(status).to_contain_text("Saved item f0: unclear")
    page.keyboard.press("y")
    expect(page.get_by_role("button", name="Clearly correct")).to_have_attribute(
        "aria-pressed", "true"
    )
    seen = {
        "question": page.locator(".question"),
        "answer": page.locator("[data-qp=answer]"),
        "label Y": page.get_by_role("button", name="Clearly correct"),
        "label N": page.get_by_role("button", name="Clearly incorrect"),
        "Save": page.get_by_role("button", name="Save & next"),
        "status": status,
    }
    off = {}
    for what, locator in seen.items():
        inside, box = _in_viewport(locator)
        if not inside:
            off[what] = box
    assert off == {}, f"off screen at {WIDTH}x{HEIGHT}: {off}"
    saved = store.label_history_frame(url, "fold")
    assert list(zip(saved["external_id"], saved["value"].astype(int), strict=True)) == [("f0", 1)]


def test_reopened_skipped_item_does_not_show_the_previous_items_saved_status(
    served: tuple[str, str], page: Any
) -> None:
    from playwright.sync_api import expect

    base, url = served
    log_in(page, "skipper", "pw-skipper", base=base)
    _wait_item(page, "s0")
    page.keyboard.press("s")  # skip the first item
    _wait_item(page, "s1")
    page.keyboard.press("u")
    page.keyboard.press("Enter")  # label the last one unclear: only the skipped one is left
    expect(page.get_by_text("Only skipped or flagged items are left (1).")).to_be_visible()
    page.get_by_role("button", name="Revisit skipped items").click()
    _wait_item(page, "s0")
    status = page.locator("[data-qp=status]")
    expect(status).to_contain_text("skipped item(s) are back in your queue")
    assert "Saved" not in (status.text_content() or "")
    assert store.current_label(url, "skipper", repo_item_id(url, "skips", "s0")) is None


def repo_item_id(url: str, dataset: str, external_id: str) -> int:
    """The store id of an item, found by its external id."""
    items = store.load_items(url, dataset)
    return next(int(it.meta["item_id"]) for it in items if it.id == external_id)


def test_tab_goes_from_user_name_to_password_to_log_in(served: tuple[str, str], page: Any) -> None:
    from playwright.sync_api import expect

    base, _ = served
    page.goto(base)
    expect(page.get_by_text("No account yet?")).to_be_visible(timeout=120_000)  # first run
    page.get_by_label("User name").focus()
    page.keyboard.type("laptop")
    page.keyboard.press("Tab")
    expect(page.get_by_role("textbox", name="Password")).to_be_focused()
    page.keyboard.type("pw-laptop")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Log in")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Signed in as laptop")).to_be_visible()


def test_tab_in_the_new_password_form_skips_the_show_password_buttons(
    served: tuple[str, str], page: Any
) -> None:
    """Issue 33: Tab from "New password" landed on the field's show-password eye; it now goes
    field -> field -> "Change password", and the eye still works with the mouse."""
    from playwright.sync_api import expect

    base, url = served
    store.add_user(url, "fresh", "annotator", "temporary-pw", must_change_password=True)
    page.goto(base)
    expect(page.get_by_text("No account yet?")).to_be_visible(timeout=120_000)
    page.get_by_label("User name").fill("fresh")
    page.get_by_role("textbox", name="Password").fill("temporary-pw")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
    new = page.get_by_role("textbox", name="New password", exact=True)
    again = page.get_by_role("textbox", name="Repeat the new password")
    page.wait_for_function(  # the component has run on the form's eyes
        "() => { const b = [...document.querySelectorAll(\"button[aria-label='Show password']\")];"
        " return b.length >= 2 && b.every((x) => x.getAttribute('tabindex') === '-1'); }"
    )
    new.focus()
    page.keyboard.type("a-new-password-1")
    page.keyboard.press("Tab")
    expect(again).to_be_focused()
    page.keyboard.type("a-new-password-1")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Change password")).to_be_focused()
    page.get_by_role("button", name="Show password").first.click()  # the mouse still shows it
    expect(new).to_have_attribute("type", "text")
    page.get_by_role("button", name="Change password").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Signed in as fresh")).to_be_visible()


def test_assign_inputs_the_items_choice_ignores_are_disabled_in_the_browser(
    served: tuple[str, str], page: Any
) -> None:
    """Issue 33: N / FIRST / LAST stayed live under "All items" (the deal form only read the
    choice on submit); the choice now reruns the page and disables what it ignores."""
    from playwright.sync_api import expect

    base, url = served
    store.add_user(url, "boss", "researcher", "pw-boss")
    log_in(page, "boss", "pw-boss", base=base)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Assign", exact=True).click()
    n = page.get_by_role("spinbutton", name="N", exact=True)
    first = page.get_by_role("spinbutton", name="FIRST", exact=True)
    last = page.get_by_role("spinbutton", name="LAST", exact=True)
    expect(n).to_be_disabled(timeout=60_000)
    expect(first).to_be_disabled()
    expect(last).to_be_disabled()
    page.get_by_text("The next N items nobody has yet").click()
    expect(n).to_be_enabled()
    expect(first).to_be_disabled()
    page.get_by_text("Items FIRST to LAST (import order)").click()
    expect(first).to_be_enabled()
    expect(last).to_be_enabled()
    expect(n).to_be_disabled()
