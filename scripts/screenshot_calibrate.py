"""Screenshot of the calibration page after a fit: docs/img/calibrate.png.

Usage: .venv/bin/python scripts/screenshot_calibrate.py [WORKDIR]. Makes a demo store in WORKDIR,
starts `qaeval app` on a free port, logs in as the demo admin in Debian's Chromium (Playwright),
fits on 200 labels with a few CPU metrics, captures the whole page, and stops the server.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from _browser import CHROMIUM_ARGS, chromium_path  # noqa: E402  (the tests' browser settings)

tmp = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/qaeval-shot")
tmp.mkdir(parents=True, exist_ok=True)
OUT = REPO / "docs/img/calibrate.png"
db = f"sqlite:///{tmp / 'store.sqlite'}"
if (tmp / "store.sqlite").exists():
    (tmp / "store.sqlite").unlink()
subprocess.run(
    [str(REPO / ".venv/bin/qaeval"), "demo", "--db", db], check=True, capture_output=True
)
# The demo's admin/admin is temporary (the app asks for a new one first): set a lasting one.
subprocess.run(
    [
        str(REPO / ".venv/bin/qaeval"),
        "user",
        "passwd",
        "admin",
        "--password",
        "admin-shot",
        "--db",
        db,
    ],
    check=True,
    capture_output=True,
)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
log = open(tmp / "app.log", "w")  # noqa: SIM115 - closed in finally
proc = subprocess.Popen(
    [str(REPO / ".venv/bin/qaeval"), "app", "--db", db, "--port", str(port), "--host", "127.0.0.1"],
    cwd=tmp,
    stdout=log,
    stderr=subprocess.STDOUT,
    env=dict(
        os.environ, STREAMLIT_SERVER_HEADLESS="true", STREAMLIT_BROWSER_GATHER_USAGE_STATS="false"
    ),
)
print("pid", proc.pid, flush=True)
base = f"http://127.0.0.1:{port}"
try:
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.3)
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp / "profile"),
            executable_path=chromium_path() or "chromium",
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        ctx.set_default_timeout(20_000)
        page = ctx.new_page()
        page.goto(base)
        page.get_by_label("User name").fill("admin")
        page.get_by_role("textbox", name="Password").fill("admin-shot")
        page.get_by_role("button", name="Log in").click()
        page.locator('[data-testid="stSidebarNav"]').get_by_text("Calibrate").click()
        expect(page.get_by_role("heading", name="Calibrate", exact=True)).to_be_visible()
        ms = page.locator('[data-testid="stMultiSelect"]').first
        ms.locator('[aria-label="Clear all"]').click()
        page.wait_for_timeout(500)
        for m in ("em", "f1", "contains", "rougeL", "meteor", "number_match", "brevity"):
            ms.get_by_role("combobox").click()
            page.keyboard.type(m)
            page.get_by_role("option", name=m, exact=True).click()
            page.wait_for_timeout(300)
        page.keyboard.press("Escape")
        page.mouse.click(1300, 140)
        page.get_by_role("spinbutton", name="Max. labels").fill("200")
        page.keyboard.press("Tab")
        page.get_by_test_id("stBaseButton-primaryFormSubmit").or_(
            page.get_by_role("button", name="Fit", exact=True)
        ).first.click()
        expect(page.get_by_text("Cross-validated quality", exact=True)).to_be_visible(
            timeout=240_000
        )
        expect(page.get_by_text("More labels for this interval width", exact=True)).to_be_visible(
            timeout=300_000
        )
        page.wait_for_timeout(3000)
        h = page.evaluate(
            "Math.max(...[...document.querySelectorAll("
            "'[data-testid=stMain], [data-testid=stMainBlockContainer]')]"
            ".map(e => e.scrollHeight))"
        )
        page.set_viewport_size({"width": 1400, "height": int(h) + 80})
        page.wait_for_timeout(3000)
        page.screenshot(path=str(OUT), full_page=True)
        ctx.close()
finally:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
