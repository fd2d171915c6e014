"""How the browser tests (and ``scripts/screenshot_calibrate.py``) start Debian's Chromium."""

from __future__ import annotations

import os
import shutil

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


def chromium_path() -> str | None:
    """``QAEVAL_CHROMIUM`` if set, else ``chromium`` on the PATH, else None."""
    return os.environ.get("QAEVAL_CHROMIUM") or shutil.which("chromium")
