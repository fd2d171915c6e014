"""What the AppTest page tests share: a demo store built once per module and copied per test,
and logging in through the login form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from qaeval_core import store
from qaeval_core.cli.main import main as cli_main
from qaeval_core.store import session as store_session

APP = Path(__file__).resolve().parents[1] / "app"
DEMO = "demo-nq301"


def build_demo_store(folder: Path) -> tuple[Path, str]:
    """``qaeval demo`` in ``folder`` plus a researcher ``res`` and an annotator ``ann``
    (passwords ``pw-<name>``); returns the file and its URL for a module to add to."""
    path = folder / "demo.sqlite"
    url = f"sqlite:///{path}"
    # The study's dataset only: the app tests count its items; the loop dataset that ``qaeval
    # demo`` also makes has its own tests (tests/cli/test_cli_demo_loop.py).
    assert cli_main(["demo", "--no-loop", "--db", url]) == 0
    store.add_user(url, "res", "researcher", "pw-res")
    store.add_user(url, "ann", "annotator", "pw-ann")
    return path, url


def finish_store(url: str) -> None:
    """Fold the WAL into the file so that copying the file copies everything."""
    store_session.get_engine(url).dispose()


def copy_store(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private copy of a module's store for one test, made the app's store."""
    path = tmp_path / "store.sqlite"
    shutil.copy(source, path)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("QAEVAL_DATABASE_URL", url)
    return url


def logged_in(name: str, *, timeout: float = 120) -> AppTest:
    """The app after ``name`` logged in with password ``pw-<name>``."""
    at = AppTest.from_file(str(APP / "main.py"), default_timeout=timeout).run()
    at.text_input(key="login_name").input(name)
    at.text_input(key="login_password").input(f"pw-{name}")
    at.button(key="login_submit").click().run()
    assert not at.exception, at.exception
    return at


def chart_axes(at: AppTest) -> list[tuple[str, str]]:
    """Each plotly chart on the page as (x axis title, y axis title): what it shows."""
    out = []
    for chart in at.get("plotly_chart"):
        layout = json.loads(chart.proto.spec).get("layout", {})
        titles = [
            ((layout.get(a) or {}).get("title") or {}).get("text", "") for a in ("xaxis", "yaxis")
        ]
        out.append((titles[0], titles[1]))
    return out
