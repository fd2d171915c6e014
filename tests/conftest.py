"""Shared fixtures: a fresh migrated store per test (SQLite file by default).

Set ``QAEVAL_TEST_POSTGRES_URL`` (``scripts/test-services.sh`` does) to also run the tests
marked ``postgres`` against a real PostgreSQL server; without it they skip with the reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from qaeval_core.store import session as store_session

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A migrated SQLite store in a fresh file."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    store_session.upgrade(url)
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A migrated, empty PostgreSQL database (a new one per test, dropped afterwards)."""
    base = os.environ.get("QAEVAL_TEST_POSTGRES_URL")
    if not base:
        pytest.skip(
            "no PostgreSQL server: QAEVAL_TEST_POSTGRES_URL is unset "
            "(scripts/test-services.sh starts one where apt and root are available)"
        )
    name = f"qaeval_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.rsplit("/", 1)[0] + f"/{name}"
    store_session.upgrade(url)
    try:
        yield url
    finally:
        store_session.get_engine(url).dispose()
        store_session.get_engine.cache_clear()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Run a store test against SQLite and (when available) PostgreSQL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("postgres_url")
