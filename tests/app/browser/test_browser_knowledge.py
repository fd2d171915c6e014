"""A real browser against a real ``streamlit run``: a researcher accepts an answer people taught
the judge and sees the verdicts it changed (issue 24, item 2).

The store: one question answered by five QA models; two answers labelled correct ("It is
Paris", which contains the reference, and "The City of Light", which does not), one labelled
wrong, two unlabelled ("city of light!" and "Lutetia, the City of Light"). In Chromium the
researcher opens Taught answers, accepts "The City of Light" as a reference, and the page lists
the two verdicts of other models' answers (and the labelled one) that turned correct.

Skips, saying why, without Chromium or Playwright (as ``tests/app/browser/test_browser.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import chromium_context, log_in, need_browser, pick, streamlit_app

from qaeval_core import store
from qaeval_core.store import session as store_session
from qaeval_core.store.answer_knowledge import knowledge_decisions

pytestmark = pytest.mark.browser
DATASET = "capitals"


def _row(i: int, candidate: str, model: str, label: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": f"r{i}",
        "question": "What is the capital of France?",
        "references": ["Paris"],
        "candidate": candidate,
        "model": model,
        "meta": {"qid": "1"},
    }
    if label is not None:
        row["human"] = {"scale": "three", "raters": [{"rater": "ann", "label": label}]}
    return row


ROWS = [
    _row(0, "It is Paris", "m1", 2),
    _row(1, "The City of Light", "m2", 2),
    _row(2, "London", "m3", 0),
    _row(3, "city of light!", "m4", None),
    _row(4, "Lutetia, the City of Light", "m5", None),
]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    need_browser()
    url = f"sqlite:///{tmp_path / 'knowledge.sqlite'}"
    store_session.upgrade(url)
    store.import_items(url, DATASET, ROWS, source="browser knowledge test")
    store.add_user(url, "res", "researcher", "pw-res")
    with streamlit_app(url, tmp_path) as base:
        yield base, url


def test_accept_a_suggestion_and_see_the_rescored_verdicts(
    served: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, url = served
    with (
        sync_playwright() as pw,
        chromium_context(pw, str(tmp_path / "chromium-profile")) as context,
    ):
        page = context.new_page()
        page.goto(base)
        log_in(page, "res", "pw-res")
        page.get_by_role("link", name="Taught answers").click()
        # the page's first run imports the scoring stack: wait longer (a wait, not a bound)
        expect(page.get_by_text("2 of 2 suggestion(s)")).to_be_visible(timeout=120_000)
        expect(page.get_by_text("Nothing accepted yet")).to_be_visible()

        suggestion = page.get_by_test_id("stSelectbox").filter(has_text="Suggestion")
        pick(page, suggestion, re.compile(r"accept as a reference 'The City of Light'"))
        page.get_by_role("button", name="Accept", exact=True).click()

        accepted = page.get_by_text("Accepted 'The City of Light' (decision 1).")
        expect(accepted).to_be_visible(timeout=60_000)
        summary = re.compile(r"5 answer\(s\) .* rescored; 3 verdict\(s\) changed")
        expect(page.get_by_text(summary)).to_be_visible()
        changes = page.get_by_test_id("stDataFrame").last
        expect(changes).to_be_visible()
        for line in (
            "r1 (m2) 'The City of Light': incorrect -> correct",
            "r3 (m4) 'city of light!': incorrect -> correct",
            "r4 (m5) 'Lutetia, the City of Light': incorrect -> correct",
        ):
            expect(page.get_by_text(line, exact=True)).to_be_visible()
    decided = knowledge_decisions(url, DATASET)
    assert decided[["answer", "decision", "decided_by"]].values.tolist() == [
        ["The City of Light", "accepted", "res"]
    ]
