"""A new team's walk in a real Chromium (issue 14): everything through the UI, checked in the store.

The store is what ``qaeval demo`` leaves (the demo dataset, scored; an ``admin`` with a
temporary password) plus a first version of the demo's guidelines, so the admin's edit becomes
version 2. Then, in three browser contexts (three people at three desks):

1. the admin logs in, chooses a new password, and creates two annotators with temporary
   passwords on the Users page;
2. on the Assign page deals "the next 40 items nobody has yet" to both, with the default 20%
   overlap (an overlap item goes to both);
3. each annotator logs in, chooses a new password and labels their whole queue with the
   keyboard only (the two work at the same time, as a team would);
4. the admin settles one of their disagreements on the Disagreements page and edits the
   guidelines on the Guidelines page; an annotator then sees version 2 on the Annotate page.

The checks read the store through ``qaeval_core``: every label is the one pressed for the item
that was on screen, each annotator's count, the adjudication and the guidelines version.

With ``QAEVAL_SCREENSHOTS=1`` it also saves the README's screenshots ``docs/img/annotate.png``
(an annotator mid-queue), ``assign.png`` (the deal's summary) and ``agreement.png`` (with the
annotator-quality table); without it, checked-in files are left alone. Skips, saying why,
without Chromium or Playwright (as ``tests/app/browser/test_browser.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _browser import (
    CHROMIUM_ARGS,
    MOVED_JS,
    READY_JS,
    REPO,
    chromium_path,
    log_in,
    need_browser,
    pick,
    streamlit_app,
)

from qaeval_core import analysis, store
from qaeval_core.cli.demo import DEMO_DATASET, install_demo
from qaeval_core.store import session as store_session

pytestmark = pytest.mark.browser

ADMIN_TEMP, ADMIN_PW = "admin", "admin-walk-2024"
TEAM = {"maya": "maya-labels-1", "theo": "theo-labels-1"}  # name -> the password they choose
TEMP = "start-123"  # the temporary password the admin gives both
TITLES = {"y": "Clearly correct", "u": "Unclear", "n": "Clearly incorrect"}
VALUES = {"y": 2, "u": 1, "n": 0}
GUIDE_V2 = "Team note: an answer that hedges between two entities is unclear (U), not correct."
SHOTS = REPO / "docs" / "img"


def _screenshots() -> bool:
    return os.environ.get("QAEVAL_SCREENSHOTS") == "1"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``qaeval demo``'s store (scored, admin with a temporary password), guidelines v1."""
    need_browser()
    url = f"sqlite:///{tmp_path / 'walk.sqlite'}"
    store_session.upgrade(url)
    install_demo(url, ADMIN_TEMP)
    start = store.get_guidelines(url, DEMO_DATASET)
    store.save_guidelines(
        url,
        DEMO_DATASET,
        "admin",
        text=start.text,
        rules=start.rules,
        label_keys=start.label_keys,
        idle_cap_seconds=start.idle_cap_seconds,
        roles=("admin",),
    )
    with streamlit_app(url, tmp_path) as base:
        yield base, url


# ----------------------------------------------------------------------------- page helpers


def _form(page: Any, button: str) -> Any:
    return page.get_by_test_id("stForm").filter(
        has=page.get_by_role("button", name=button, exact=True)
    )


def _settled(page: Any) -> None:
    """Wait until no element of the last run is left over: during a rerun Streamlit keeps the
    old elements (marked ``data-stale``) until it replaces them, and typing into an old form
    types into one about to be swapped for a fresh, empty one."""
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")


def _ready(page: Any) -> str:
    """The external id of the item on screen once the picker takes keys."""
    return str(page.wait_for_function(READY_JS, timeout=60_000).json_value())


@dataclass
class Labeller:
    """One annotator's desk: their page and what they pressed for which item."""

    name: str
    page: Any
    chooser: Any  # (labeller, external id, k) -> key
    pressed: dict[str, int] = field(default_factory=dict)
    on_screen: str | None = None
    done: bool = False

    def press(self, k: int, shot: Path | None = None) -> None:
        """Pick a label for the item on screen with its key, then Enter (saves)."""
        from playwright.sync_api import expect

        if self.done:
            return
        if self.page.get_by_text("Your queue is done").count():
            self.done = True
            return
        item = _ready(self.page)
        key = self.chooser(self, item, k)
        button = self.page.get_by_role("button", name=TITLES[key])
        for _ in range(5):  # a key pressed while listeners mount can be lost: press again
            self.page.keyboard.press(key)
            try:
                expect(button).to_have_attribute("aria-pressed", "true", timeout=4_000)
                break
            except AssertionError:
                continue
        expect(button).to_have_attribute("aria-pressed", "true")
        assert _ready(self.page) == item  # the pick is on the item we read
        if shot is not None:
            self.page.screenshot(path=str(shot))
        self.page.keyboard.press("Enter")
        self.pressed[item] = VALUES[key]
        self.on_screen = item

    def settle(self) -> None:
        """Wait until the save came back: another item shows, or the queue is done."""
        if self.done or self.on_screen is None:
            return
        for _ in range(3):
            try:
                self.page.wait_for_function(MOVED_JS, arg=self.on_screen, timeout=20_000)
                break
            except Exception:  # Enter lost while busy: the item is still there, press again
                self.page.keyboard.press("Enter")
        else:
            self.page.wait_for_function(MOVED_JS, arg=self.on_screen, timeout=20_000)
        self.on_screen = None


# ----------------------------------------------------------------------------- the walk


def test_a_new_team_walks_through_the_app(served: tuple[str, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, url = served
    shots = _screenshots()
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )

        def desk() -> Any:
            """A browser context of its own: one person at one desk, with their own login."""
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.set_default_timeout(30_000)
            page = context.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            return page

        # 1. The admin chooses a password and creates two annotators.
        admin = desk()
        log_in(admin, "admin", ADMIN_TEMP, base=base, new_password=ADMIN_PW)
        admin.get_by_role("link", name="Users").click()
        add = _form(admin, "Add user")
        for name in TEAM:
            add.get_by_label("User name").fill(name)
            add.get_by_role("textbox", name="Password", exact=True).fill(TEMP)
            add.get_by_role("textbox", name="Repeat password").fill(TEMP)
            add.get_by_role("button", name="Add user").click()
            expect(admin.get_by_text(f"Created annotator '{name}'")).to_be_visible()
        for name in TEAM:
            assert store.get_user(url, name).role == "annotator"

        # 2. ... and deals the next 40 items to both, 20% of them to both (the defaults).
        admin.get_by_role("link", name="Assign").click()
        # The deal is a bordered container, not a form (its "Items" choice disables inputs it
        # ignores): the innermost block holding both the annotator picker and "Deal".
        deal = (
            admin.get_by_test_id("stVerticalBlock")
            .filter(has=admin.get_by_role("button", name="Deal", exact=True))
            .filter(has=admin.get_by_test_id("stMultiSelect"))
            .last
        )
        people = deal.get_by_test_id("stMultiSelect")
        for name in TEAM:
            for _ in range(3):  # a pick during a rerun can be dropped: check it shows
                pick(admin, people, name)
                admin.keyboard.press("Escape")
                try:
                    expect(people).to_contain_text(name, timeout=3_000)
                    break
                except AssertionError:
                    continue
        deal.get_by_text("The next N items nobody has yet").click()
        expect(deal.get_by_role("spinbutton", name="N", exact=True)).to_have_value("40")
        deal.get_by_role("button", name="Deal", exact=True).click()
        summary = admin.get_by_text(re.compile(r"Dealt 48 new assignment\(s\) over 40 items"))
        expect(summary).to_be_visible()
        expect(summary).to_contain_text("maya: +24, theo: +24")
        queues = {n: store.queue_entries(url, n, DEMO_DATASET, "pending") for n in TEAM}
        overlap = {e.external_id for e in queues["maya"]} & {e.external_id for e in queues["theo"]}
        assert len(overlap) == 8
        if shots:
            admin.set_viewport_size({"width": 1400, "height": 1900})
            heading = admin.get_by_text("Deal items")
            progress = admin.get_by_test_id("stDataFrame").first
            expect(progress).to_be_visible()
            admin.wait_for_timeout(500)  # the data grid draws on a canvas after it shows
            top, end = heading.bounding_box(), progress.bounding_box()
            assert top and end
            admin.screenshot(
                path=str(SHOTS / "assign.png"),
                clip={
                    "x": 0,
                    "y": max(0, top["y"] - 70),
                    "width": 1400,
                    "height": end["y"] + end["height"] - max(0, top["y"] - 70) + 24,
                },
            )
            admin.set_viewport_size({"width": 1400, "height": 1000})

        # 3. Both annotators log in and label their queues with the keyboard, at the same time.
        #    maya says correct mostly; theo disagrees with her on every other overlap item.
        def maya(me: Labeller, item: str, k: int) -> str:
            return "n" if k % 5 == 3 else "u" if k == 7 else "y"

        def theo(me: Labeller, item: str, k: int) -> str:
            if item in overlap:
                return "n" if sorted(overlap).index(item) % 2 == 0 else "y"
            return "n" if k % 4 == 1 else "y"

        team = [Labeller(n, desk(), c) for n, c in zip(TEAM, (maya, theo), strict=True)]
        for person in team:
            log_in(person.page, person.name, TEMP, base=base, new_password=TEAM[person.name])
            expect(person.page.get_by_text("0 of 24 labelled")).to_be_visible()
        for k in range(24):
            for person in team:
                shot = (
                    SHOTS / "annotate.png" if shots and person.name == "maya" and k == 9 else None
                )
                person.press(k, shot)
            for person in team:
                person.settle()
        for person in team:
            expect(person.page.get_by_text("Your queue is done")).to_be_visible()
            expect(person.page.get_by_text("24 of 24 labelled")).to_be_visible()

        # 4. The admin settles a disagreement between them ...
        labels = store.label_history_frame(url, DEMO_DATASET)
        ours = labels[labels["user"].isin(list(TEAM))]
        split = ours.groupby("external_id")["value"].nunique()
        disputed = sorted(split[split > 1].index)
        assert disputed, "the walk should leave maya and theo disagreeing on some item"
        frames = analysis.load_frames(url, DEMO_DATASET)
        item_id = int(frames.items.set_index("external_id").loc[disputed[0], "item_id"])
        # The admin sides with most of the item's raters (the demo's and ours), and says why.
        on_item = labels[labels["external_id"] == disputed[0]]
        on_item = on_item.groupby("user").tail(1)["value"].astype(int)  # oldest first: current
        decided = int(on_item.value_counts().sort_index(ascending=False).idxmax())
        final = analysis.label_text(decided)
        admin.get_by_role("link", name="Disagreements").click()
        expect(admin.get_by_text("Ties (no majority)")).to_be_visible()
        pick(
            admin,
            admin.get_by_test_id("stSelectbox").filter(has_text="Item"),
            re.compile(rf"^{re.escape(disputed[0])} · "),
            search=f"{disputed[0]} · ",
        )
        decide = _form(admin, "Save final label")
        expect(decide).to_be_visible()
        expect(admin.get_by_role("combobox", name="Item")).to_have_value(
            re.compile(rf"^{re.escape(disputed[0])} · ")
        )
        # The item's own form is mounted once its detail shows (the form is keyed by item); the
        # page names the item as annotators see it.
        expect(admin.get_by_text(f"Item {disputed[0]} · dataset")).to_be_visible()
        _settled(admin)
        choice, reason = decide.get_by_role("radio", name=final), "Most raters saw it so."
        for _ in range(3):  # a click during a rerun can land on the form being replaced
            decide.get_by_text(final, exact=True).click()
            decide.get_by_label("Reason").fill(reason)
            decide.get_by_label("Reason").press("Tab")  # a text area commits on leaving it
            try:
                expect(choice).to_be_checked(timeout=3_000)
                expect(decide.get_by_label("Reason")).to_have_value(reason, timeout=3_000)
                break
            except AssertionError:
                continue
        decide.get_by_role("button", name="Save final label").click()
        expect(
            admin.get_by_text(f"Item {disputed[0]}: final label {final} saved by admin")
        ).to_be_visible()

        # ... and edits the guidelines: version 2.
        admin.get_by_role("link", name="Guidelines").click()
        expect(admin.get_by_text("Editing version 1")).to_be_visible()
        _settled(admin)
        text = admin.get_by_label("Guidelines (markdown)")
        text.fill(f"{store.get_guidelines(url, DEMO_DATASET).text}\n{GUIDE_V2}\n")
        text.press("Control+Enter")  # commit the text area, as the preview shows
        expect(admin.get_by_test_id("stMarkdown").filter(has_text=GUIDE_V2)).to_be_visible()
        admin.get_by_role("button", name="Save as a new version").click()
        expect(admin.get_by_text(f"Saved version 2 of {DEMO_DATASET}'s guidelines")).to_be_visible()

        # An annotator sees version 2 in the task.
        theo_page = team[1].page
        theo_page.reload()
        guide = theo_page.get_by_text("Guidelines (version 2)")
        expect(guide).to_be_visible()
        guide.click()
        expect(theo_page.get_by_text(GUIDE_V2)).to_be_visible()

        # The Agreement page, with the annotator-quality table.
        admin.get_by_role("link", name="Agreement", exact=True).click()
        expect(admin.get_by_role("heading", name="Annotator quality")).to_be_visible(
            timeout=120_000
        )
        if shots:
            admin.set_viewport_size({"width": 1900, "height": 1600})  # every quality column
            heading = admin.get_by_role("heading", name="Each rater against the others' majority")
            heading.evaluate("e => e.scrollIntoView({block: 'start'})")
            caption = admin.get_by_text("Dawid-Skene (crowd-kit) weighs each rater")
            expect(caption).to_be_visible()
            admin.wait_for_timeout(1_500)  # the data grids redraw at the new size
            top, end = heading.bounding_box(), caption.bounding_box()
            assert top and end and end["y"] + end["height"] < 1600
            admin.screenshot(
                path=str(SHOTS / "agreement.png"),
                clip={
                    "x": 0,
                    "y": max(0, top["y"] - 30),
                    "width": 1900,
                    "height": end["y"] + end["height"] - max(0, top["y"] - 30) + 20,
                },
            )
        browser.close()

    assert not dialogs, f"a script ran in the page: {dialogs}"
    # Every label is the one pressed for the item on screen, one per item, nothing else.
    labels = store.label_history_frame(url, DEMO_DATASET)
    for person in team:
        mine = labels[labels["user"] == person.name]
        assert dict(zip(mine["external_id"], mine["value"].astype(int), strict=True)) == (
            person.pressed
        )
        assert len(mine) == len(person.pressed) == 24
        assert set(mine["external_id"]) == {e.external_id for e in queues[person.name]}
        assert (mine["seconds"] > 0).all()
        progress = store.user_progress(url, person.name, DEMO_DATASET)
        assert (progress.assigned, progress.labelled) == (24, 24)
    history = analysis.adjudication_history(url, item_id)
    assert history[["user", "value"]].values.tolist() == [["admin", decided]]
    assert history["reason"].iloc[0] == "Most raters saw it so."
    guide_now = store.get_guidelines(url, DEMO_DATASET)
    assert guide_now.version == 2 and GUIDE_V2 in guide_now.text
    assert guide_now.created_by == "admin"
