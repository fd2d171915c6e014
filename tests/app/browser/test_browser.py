"""A real browser against a real ``streamlit run``: log in, label three items with the keyboard
only, and find the labels in the store.

AppTest cannot press keyboard shortcuts or run the frontend, so this drives Debian's Chromium
through Playwright (Python). It skips, saying why, when Chromium or Playwright is missing
(``apt-get install chromium``; the browser path can be set with ``QAEVAL_CHROMIUM``). Set
``QAEVAL_SCREENSHOT=path.png`` to keep a screenshot of the annotate page.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser import chromium_context, log_in, need_browser, streamlit_app

from qaeval_core import store
from qaeval_core.store import session as store_session

pytestmark = pytest.mark.browser

ROWS = [
    {
        "id": "b0",
        "question": "Who wrote Hamlet?",
        "references": ["William Shakespeare"],
        "candidate": "Hamlet was written by William Shakespeare.",
    },
    {
        "id": "b1",
        "question": "What is the capital of France?",
        "references": ["Paris"],
        "candidate": "<script>alert('xss')</script> ![x](http://127.0.0.1:9/x.png) Lyon.",
    },
    {
        "id": "b2",
        "question": "How many legs does a spider have?",
        "references": ["8", "eight"],
        "candidate": "Spiders usually have eight legs, though some lose one.",
    },
    {"id": "b3", "question": "Largest planet?", "references": ["Jupiter"], "candidate": "Jupiter."},
]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A store with 4 items dealt to ``ann1`` and ``streamlit run`` serving it."""
    need_browser()
    url = f"sqlite:///{tmp_path / 'browser.sqlite'}"
    store_session.upgrade(url)
    store.import_items(url, "ds", ROWS, source="browser test")
    store.add_user(url, "ann1", "annotator", "pw-ann1")
    store.deal(url, "ds", ["ann1"])
    with streamlit_app(url, tmp_path) as base:
        yield base, url


def test_label_three_items_with_the_keyboard_only(served: tuple[str, str], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, url = served
    dialogs: list[str] = []
    with (
        sync_playwright() as pw,
        chromium_context(pw, str(tmp_path / "chromium-profile")) as context,
    ):
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(base)

        log_in(page, "ann1", "pw-ann1", by_keyboard=True)  # Tab between fields, Enter submits
        expect(page.get_by_text("Item b0", exact=True)).to_be_visible()
        expect(page.get_by_text("0 of 4 labelled")).to_be_visible()
        assert page.evaluate("document.activeElement.tagName") == "BODY"  # no field focused

        def chosen(label: str) -> None:
            button = page.get_by_role("button", name=label)
            expect(button).to_have_attribute("aria-pressed", "true")

        def press_value(key: str, label: str) -> None:
            """Press a label key until its button shows as chosen. The item and its keys are
            one component, so a key pressed once the item shows is applied; pressing again
            (as a person would) only guards against a machine too busy to answer in 4 s."""
            button = page.get_by_role("button", name=label)
            for _ in range(5):
                page.keyboard.press(key)
                try:
                    expect(button).to_have_attribute("aria-pressed", "true", timeout=4_000)
                    return
                except AssertionError:
                    continue
            chosen(label)  # fails with the locator's own message

        # Item 1: clearly correct (Y), rule 1, Enter.
        press_value("y", "Clearly correct")
        page.keyboard.press("1")
        chosen("1 · Entity aliasing")
        page.keyboard.press("Enter")
        expect(page.get_by_text("Item b1", exact=True)).to_be_visible()

        # Item 2 (hostile text stays inert): clearly incorrect (N), rule 6, a note, Enter.
        expect(page.get_by_text("<script>alert('xss')</script>", exact=False)).to_be_visible()
        assert page.locator("img[src*='x.png']").count() == 0
        assert page.locator("a[href*='x.png']").count() == 0  # not even a link
        press_value("n", "Clearly incorrect")
        page.keyboard.press("6")
        chosen("6 · Irrelevant information")
        page.keyboard.press("/")  # the key that moves to the note field
        expect(page.get_by_label("Note (optional)")).to_be_focused()
        page.keyboard.type("wrong city")
        page.keyboard.press("Enter")  # Enter in the note saves
        expect(page.get_by_text("Item b2", exact=True)).to_be_visible()
        # The next item gets a new note field: the cursor is not left in the old one.
        assert page.evaluate(
            "() => { const h = document.querySelector('[data-qp-item]');"
            " return h.shadowRoot.activeElement === null; }"
        )

        # Item 3: unclear (U), no rule, Enter.
        press_value("u", "Unclear")
        page.keyboard.press("Enter")
        expect(page.get_by_text("Item b3", exact=True)).to_be_visible()
        expect(page.get_by_text("3 of 4 labelled")).to_be_visible()

        # Back (B) opens the last label for editing, with its label chosen.
        page.keyboard.press("b")
        expect(page.get_by_text("Item b2", exact=True)).to_be_visible()
        chosen("Unclear")
        if shot := os.environ.get("QAEVAL_SCREENSHOT"):
            page.keyboard.press("q")
            expect(page.get_by_text("Item b3", exact=True)).to_be_visible()
            page.screenshot(path=shot, full_page=True)

        # A reload keeps the annotator logged in: the login session's token is in the URL.
        assert "session=" in page.url
        page.reload()
        expect(page.get_by_text("3 of 4 labelled")).to_be_visible()
        assert page.get_by_text("No account yet?").count() == 0

        # Typing a researcher page's address starts a new session: the router knows no such
        # page for a logged-out visitor ("Page not found"), and after logging in the annotator
        # lands on the annotate page, never on the researcher page.
        page.goto(f"{base}/assign")
        expect(page.get_by_text("Page not found")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.get_by_text("Page not found")).to_be_hidden()
        log_in(page, "ann1", "pw-ann1", by_keyboard=True)
        expect(page.get_by_role("heading", name="Annotate")).to_be_visible()
        assert page.get_by_text("Deal items").count() == 0

    assert not dialogs, f"a script ran in the page: {dialogs}"
    labels = store.label_history_frame(url, "ds")
    labels = labels.astype(object).where(labels.notna(), None)
    got = [(r.external_id, int(r.value), r.rule, r.note) for r in labels.itertuples()]
    assert got == [("b0", 2, 1, None), ("b1", 0, 6, "wrong city"), ("b2", 1, None, None)]
    assert all(s > 0 for s in labels["seconds"])
    assert set(labels["user"]) == {"ann1"}
