"""How the browser tests (and ``scripts/screenshot_calibrate.py``) start Debian's Chromium, and
the steps every browser test repeats (logging in, picking from a select box)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Headless, no sandbox (containers run as root), and nothing that reaches the network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


#: The checkout (the app and the package the server imports).
REPO = Path(__file__).resolve().parents[1]


def chromium_path() -> str | None:
    """``QAEVAL_CHROMIUM`` if set, else ``chromium`` on the PATH, else None."""
    return os.environ.get("QAEVAL_CHROMIUM") or shutil.which("chromium")


def need_browser() -> str:
    """Skip the test, saying why, unless Playwright (Python) and Chromium are both here;
    returns Chromium's path."""
    import pytest

    pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
    path = chromium_path()
    if not path:
        pytest.skip("Chromium is not installed (apt-get install chromium, or set QAEVAL_CHROMIUM)")
    return path


@contextmanager
def chromium_context(
    pw: Any, profile: str | Path, width: int = 1400, height: int = 1000
) -> Iterator[Any]:
    """Chromium with a fresh user-data-dir ``profile`` and a ``width`` x ``height`` viewport,
    actions waiting up to 30 s (a loaded machine); closed afterwards, also when the test
    fails."""
    context = pw.chromium.launch_persistent_context(
        str(profile),
        executable_path=need_browser(),
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": width, "height": height},
    )
    context.set_default_timeout(30_000)
    try:
        yield context
    finally:
        context.close()


@contextmanager
def streamlit_app(url: str, workdir: Path) -> Iterator[str]:
    """``streamlit run app/main.py`` on the store ``url`` (loopback, a free port); yields the
    base URL once the health check answers, stops the server afterwards. Fails the test with
    the server's log when it does not start within 90 s."""
    import pytest

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = dict(os.environ, QAEVAL_DATABASE_URL=url, PYTHONPATH=str(REPO))
    log_path = workdir / "streamlit.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(REPO / "app" / "main.py"),
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"streamlit did not start:\n{log_path.read_text()}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def log_in(
    page: Any,
    name: str,
    password: str,
    *,
    base: str | None = None,
    new_password: str | None = None,
    by_keyboard: bool = False,
) -> None:
    """Log in as ``name`` on the login form (opened at ``base`` when given, else the page as it
    is). ``by_keyboard`` types into the focused field and Tabs between fields as a person does,
    instead of filling them; ``new_password`` answers the forced change of a temporary password.
    Returns once the sidebar says who is signed in."""
    from playwright.sync_api import expect

    if base is not None:
        page.goto(base)
    # The page has settled. A server's first run imports the whole app, which takes more than
    # the default 5 s on a loaded machine: wait longer here (a wait, not a time bound).
    expect(page.get_by_text("No account yet?")).to_be_visible(timeout=120_000)
    if by_keyboard:
        page.get_by_label("User name").focus()
        page.keyboard.type(name)
        page.keyboard.press("Tab")
        page.keyboard.type(password)
        expect(page.get_by_label("User name")).to_have_value(name)
    else:
        page.get_by_label("User name").fill(name)
        page.get_by_role("textbox", name="Password").fill(password)
    page.keyboard.press("Enter")
    if new_password is not None:
        expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
        page.get_by_role("textbox", name="New password", exact=True).fill(new_password)
        page.get_by_role("textbox", name="Repeat the new password").fill(new_password)
        page.get_by_role("button", name="Change password").click()
        expect(page.get_by_role("heading", name="Choose a new password")).to_be_hidden()
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()


def pick(page: Any, widget: Any, option: str | re.Pattern[str], search: str | None = None) -> None:
    """Open a select box / multiselect and choose an option (a click during a rerun can land
    on a widget being remounted, and a rerun can close the open list before the option is
    clicked: open it again, up to five times). ``search`` is typed first: a long list only
    renders the options in view."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect

    choice = page.get_by_role("option", name=option, exact=isinstance(option, str)).first
    for _ in range(5):
        widget.click()
        if search:
            page.keyboard.type(search)
        try:
            expect(choice).to_be_visible(timeout=3_000)
            choice.click(timeout=5_000)
            return
        except (AssertionError, PlaywrightError):  # PlaywrightError: the click timed out
            page.keyboard.press("Escape")
    raise AssertionError(f"could not pick {option!r}: the list closed five times before a click")


def settled(page: Any) -> None:
    """Wait until no element of the last run is left over: during a rerun Streamlit keeps the
    old elements (marked ``data-stale``) until it replaces them, and a file set, a field typed
    or a button clicked on an old element is lost when the fresh one replaces it (on the
    loaded 2-core machine the Data page's Import click was lost this way)."""
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")


#: The item the picker shows once it is ready for keys (null while a message is on its way).
READY_JS = (
    "() => { const h = document.querySelector('[data-qp-item]');"
    " return h && !h.hasAttribute('data-qp-pending') ? h.getAttribute('data-qp-item') : null; }"
)
#: True once the picker shows another item than ``prev`` (ready), or the queue is done.
MOVED_JS = (
    "(prev) => { if (document.body.innerText.includes('Your queue is done')) return true;"
    " const h = document.querySelector('[data-qp-item]');"
    " return !!h && !h.hasAttribute('data-qp-pending')"
    " && h.getAttribute('data-qp-item') !== prev; }"
)
