"""A real browser against a real ``streamlit run``: the triage loop end to end.

The store is the demo dataset with the labels of every tenth item left out, a lexical
calibration saved with a 20% triage band (made in the setup with ``calibrate_dataset``, to stay
fast) and a seeded random audit sample dealt to ``ann2`` (whose imported labels count as random
at once). In Chromium, a researcher routes the judge's uncertain items to ``ann1`` on the Assign
page; ``ann1`` labels them with the keyboard only; the researcher then finds the final labels
by source on the Data page and the three accuracy estimates on the Leaderboard.

Skips, saying why, without Chromium or Playwright (as ``tests/app/browser/test_browser.py``). Set
``QAEVAL_SCREENSHOTS=DIR`` to save ``DIR/leaderboard.png`` (the README's is
``QAEVAL_SCREENSHOTS=docs/img``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser import chromium_context, log_in, need_browser, pick, streamlit_app
from _paths import REPO_ROOT

from qaeval_core import store, workflows
from qaeval_core.calibrate.options import CrossValidation, TriagePolicy
from qaeval_core.store import session as store_session

pytestmark = pytest.mark.browser

REPO = REPO_ROOT
DATA = REPO / "qaeval_core" / "data" / "demo_nq301.jsonl"
DATASET, CAL = "nq", "nq-judge"


def _make_store(url: str) -> None:
    """Demo rows (every tenth without labels), users, a saved banded calibration, an audit."""
    store_session.upgrade(url)
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    for k, row in enumerate(rows):
        if k % 10 == 3:
            row.pop("human", None)
    store.import_items(url, DATASET, rows, source="browser triage test")
    for name, role in (("res", "researcher"), ("ann1", "annotator"), ("ann2", "annotator")):
        store.add_user(url, name, role, f"pw-{name}")
    fit = workflows.calibrate_dataset(
        url,
        DATASET,
        metrics=["em", "f1", "contains"],
        candidates=["threshold", "fusion"],
        cv=CrossValidation(n_splits=3, n_boot=200),
        triage=TriagePolicy(human_share=0.2),
        name=CAL,
    )
    store.save_calibration(url, CAL, fit.judge.to_config(), dataset=DATASET, created_by="res")
    store.deal(
        url,
        DATASET,
        ["ann2"],
        store.AuditSample(fraction=0.4),
        store.DealOptions(seed=0, created_by="res"),
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    need_browser()
    url = f"sqlite:///{tmp_path / 'triage.sqlite'}"
    _make_store(url)
    with streamlit_app(url, tmp_path) as base:
        yield base, url


def test_route_label_and_estimate_in_the_browser(served: tuple[str, str], tmp_path: Path) -> None:
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

        def log_in_as(name: str) -> None:
            log_in(page, name, f"pw-{name}")

        def log_out() -> None:
            page.get_by_role("button", name="Log out").click()

        def tile(label: str):
            return page.get_by_test_id("stMetric").filter(has_text=label).first

        # 1. The researcher routes the judge's uncertain items to ann1.
        log_in_as("res")
        page.get_by_role("link", name="Assign").click()
        form = page.get_by_test_id("stForm").filter(
            has=page.get_by_role("button", name="Route", exact=True)
        )
        expect(page.get_by_role("combobox", name="Saved calibration")).to_have_value(
            re.compile(f"^{CAL} ")
        )
        annotators = form.get_by_test_id("stMultiSelect")
        for _ in range(3):  # a pick during a rerun can be dropped: check it shows, else again
            pick(page, annotators, "ann1")
            page.keyboard.press("Escape")
            try:
                expect(annotators).to_contain_text("ann1", timeout=3_000)
                break
            except AssertionError:
                continue
        expect(annotators).to_contain_text("ann1")
        form.get_by_role("button", name="Route", exact=True).click()
        expect(page.get_by_text(re.compile(r"Routed \d+ of \d+ selected item"))).to_be_visible()
        dealt = store.user_progress(url, "ann1", DATASET).assigned
        assert dealt >= 1
        expect(tile("Dealt")).to_contain_text(str(dealt))
        expect(tile("Skipped: labelled")).to_be_visible()
        log_out()

        # 2. ann1 labels them with the keyboard only.
        log_in_as("ann1")
        expect(page.get_by_text(f"0 of {dealt} labelled")).to_be_visible()

        def press_value(key: str, label: str) -> None:
            """Press a label key until its button shows as chosen (a key pressed while the page
            still mounts its listeners can be lost; pressing it again cannot change anything)."""
            button = page.get_by_role("button", name=label)
            for _ in range(5):
                page.keyboard.press(key)
                try:
                    expect(button).to_have_attribute("aria-pressed", "true", timeout=4_000)
                    return
                except AssertionError:
                    continue
            expect(button).to_have_attribute("aria-pressed", "true")

        for k in range(dealt):
            key, label = (("y", "Clearly correct"), ("n", "Clearly incorrect"))[k % 2]
            press_value(key, label)
            page.keyboard.press("Enter")
            expect(page.get_by_text(f"{k + 1} of {dealt} labelled")).to_be_visible()
        expect(page.get_by_text("Your queue is done")).to_be_visible()
        log_out()

        # 3. The researcher sees the final labels by source ...
        final = workflows.final_labels(url, DATASET, CAL)
        counts = final["source"].value_counts()
        assert int(counts.get("judge", 0)) >= 1
        log_in_as("res")
        page.get_by_role("link", name="Data").click()
        what = page.get_by_role("combobox", name="What")
        for _ in range(3):
            pick(
                page,
                page.get_by_test_id("stSelectbox").filter(has_text="What"),
                "Final labels (with their source)",
            )
            try:
                expect(what).to_have_value("Final labels (with their source)", timeout=3_000)
                break
            except AssertionError:
                continue
        expect(page.get_by_text("Final labels by source")).to_be_visible()
        expect(page.get_by_role("combobox", name="Judge for items nobody labelled")).to_have_value(
            re.compile(f"^{CAL} ")
        )
        for source, name in (("annotators", "Annotators"), ("judge", "Judge")):
            expect(tile(name)).to_contain_text(str(int(counts.get(source, 0))))

        # 4. ... and the Leaderboard's three estimates per QA model.
        page.get_by_role("link", name="Leaderboard").click()
        expect(page.get_by_text("Model accuracy with valid confidence intervals")).to_be_visible()
        for label in ("PPI: judge + random labels", "Random labels only", "Judge accuracy"):
            expect(tile(label)).to_be_visible()
        expect(tile("PPI: judge + random labels")).to_contain_text(re.compile(r"0\.\d{3} \["))
        chart = page.get_by_test_id("stPlotlyChart").first
        expect(chart).to_be_visible()
        expect(page.get_by_text("Do two models differ?")).to_be_visible()
        if shots := os.environ.get("QAEVAL_SCREENSHOTS"):
            # Streamlit scrolls its main area, not the page: a tall viewport shows it all.
            page.set_viewport_size({"width": 1600, "height": 2000})
            heading = page.get_by_text("Model accuracy with valid confidence intervals")
            heading.scroll_into_view_if_needed()
            page.wait_for_timeout(1_500)  # let plotly redraw at the new size
            top, end = heading.bounding_box(), chart.bounding_box()
            assert top and end
            page.screenshot(
                path=str(Path(shots) / "leaderboard.png"),
                clip={
                    "x": 0,
                    "y": max(0, top["y"] - 100),
                    "width": 1600,
                    "height": end["y"] + end["height"] - max(0, top["y"] - 100) + 20,
                },
            )

    assert not dialogs, f"a script ran in the page: {dialogs}"
    labels = store.label_history_frame(url, DATASET)
    mine = labels[labels["user"] == "ann1"]
    assert len(mine) == dealt and set(mine["value"].astype(int)) <= {0, 2}
    routed = workflows.final_labels(url, DATASET, CAL)
    routed = routed[routed["label_sample"] == "triage"]
    assert len(routed) == dealt and set(routed["source"]) == {"annotators"}
