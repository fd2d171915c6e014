"""How the browser tests (and ``scripts/screenshot_calibrate.py``) start Debian's Chromium."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app" / "main.py"),
         "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
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
