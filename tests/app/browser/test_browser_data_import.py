"""Harness logs uploaded on the Data page in Chromium give the items ``qaeval import`` gives
(issue 32, items 1, 2 and 4): an Inspect ``.eval`` zip, an lm-eval samples file with its
results file, and an OpenCompass predictions file with a refused row, imported with "import the
valid rows" and a model named on the page.

Skips, saying why, without Chromium or Playwright (as ``tests/app/browser/test_browser.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import chromium_context, log_in, need_browser, settled, streamlit_app
from _paths import TEST_DATA

from qaeval_core import store
from qaeval_core.cli.main import main as cli_main
from qaeval_core.store import session as store_session

pytestmark = pytest.mark.browser
FIX = TEST_DATA / "formats"


def _one(pattern: str) -> Path:
    (found,) = sorted(FIX.glob(pattern))
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    need_browser()
    url = f"sqlite:///{tmp_path / 'data.sqlite'}"
    store_session.upgrade(url)
    store.add_user(url, "res", "researcher", "pw-res")
    with streamlit_app(url, tmp_path) as base:
        yield base, url


def _items(url: str, dataset: str) -> list[tuple[Any, ...]]:
    frame = store.list_items(url, dataset)
    return sorted(
        (
            r["external_id"],
            r["question"],
            tuple(r["references"]),
            r["candidate"],
            r["qa_model"],
            r["meta"]["qid"],
        )
        for r in frame.to_dict("records")
    )


def test_harness_logs_uploaded_import_as_the_cli_imports_them(
    served: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, url = served
    samples = _one("lm_eval/acme__qa-small/samples_nq_local_*.jsonl")
    results = _one("lm_eval/acme__qa-small/results_*.json")
    predictions = FIX / "opencompass" / "20250101_000000" / "predictions" / "qa-small"
    cases = [
        ("inspect", [FIX / "inspect" / "trivia_qa.eval"], [], "6 item(s) added"),
        ("lm", [samples, results], [], "24 item(s) added"),
        ("oc", [predictions / "nq_open.json"], ["--model", "acme/qa-small"], "5 item(s) added"),
    ]
    with (
        sync_playwright() as pw,
        chromium_context(pw, str(tmp_path / "chromium-profile"), 1366, 768) as context,
    ):
        page = context.new_page()
        page.goto(base)
        log_in(page, "res", "pw-res")
        page.get_by_role("link", name="Data").click()
        expect(page.get_by_text("Import a file")).to_be_visible(timeout=120_000)
        for name, files, flags, added in cases:
            settled(page)  # never type into the form of a run about to be replaced
            page.locator("input[type=file]").set_input_files([str(f) for f in files])
            for f in files:  # uploaded before the form is sent
                remove = page.get_by_role("button", name=f"Remove {f.name}", exact=True)
                expect(remove).to_be_visible(timeout=60_000)
            page.get_by_role("textbox", name="Dataset", exact=True).fill(f"web-{name}")
            model = "acme/qa-small" if "--model" in flags else ""
            page.get_by_role("textbox", name="Model name (optional)").fill(model)
            skip_label = "Import the valid rows; refuse the invalid ones"
            skip = page.get_by_text(skip_label)
            if name == "oc":
                skip.click()
            if name == "oc":
                expect(page.get_by_role("checkbox", name=skip_label)).to_be_checked()
            settled(page)
            page.get_by_role("button", name="Import", exact=True).click()
            expect(page.get_by_text(added)).to_be_visible(timeout=120_000)
            expect(page.get_by_text("Detected:", exact=False).first).to_be_visible()
            if name == "oc":
                expect(page.get_by_text("1 row(s) refused")).to_be_visible()
                expect(page.get_by_text("Download the refused rows (JSON lines)")).to_be_visible()
            # leave the page and come back: the uploader starts empty for the next case
            page.get_by_role("link", name="Taught answers").click()
            expect(page.get_by_text("Import a file")).to_be_hidden()
            page.get_by_role("link", name="Data").click()
            expect(page.get_by_text("Import a file")).to_be_visible(timeout=60_000)
    for name, files, flags, _ in cases:
        args = ["import", str(files[0]), "-d", f"cli-{name}", "--db", url, *flags]
        if name == "oc":
            args += ["--on-invalid", "skip", "--rejects", str(tmp_path / "rejects.jsonl")]
        assert cli_main(args) == 0
        web, cli = _items(url, f"web-{name}"), _items(url, f"cli-{name}")
        assert web == cli and web, name
