"""The HTML report draws its charts in a real Chromium, offline (issue 21, item 10).

plotly.js is embedded compressed and unpacked by the browser (see
:mod:`qaeval_core.analysis.report`); this opens the written file from disk with every network
request refused and checks that each chart is drawn and no script failed.

Skips, saying why, when Chromium or Playwright is missing (see tests/app/browser/test_browser.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _browser import CHROMIUM_ARGS, chromium_path, need_browser
from _report_frames import EVIL, report_frames

from qaeval_core.analysis.report import build_report, write_report

pytestmark = pytest.mark.browser


@pytest.fixture
def frames() -> dict[str, Any]:
    return report_frames()


def test_report_charts_draw_offline(frames: dict[str, Any], tmp_path: Path) -> None:
    need_browser()
    from playwright.sync_api import sync_playwright

    report = build_report(
        frames["items"],
        frames["labels"],
        frames["adjudications"],
        frames["scores"],
        thresholds={"noisy": 0.5, EVIL: 0.5},
        n_boot=20,
    )
    path = tmp_path / "report.html"
    write_report(report, html_path=path)
    n_charts = path.read_text(encoding="utf-8").count("class='qaeval-figure-spec'")
    assert n_charts >= 5
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page()
        requests: list[str] = []
        page.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()))
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(path.as_uri())
        page.wait_for_function("() => document.body.dataset.charts === 'drawn'", timeout=60_000)
        drawn = page.locator(".qaeval-figure .main-svg").count()
        browser.close()
    assert errors == []
    assert drawn >= n_charts  # every chart has its plot
    assert [u for u in requests if not u.startswith("file:")] == []  # nothing from the network
