"""The store fixtures of tests/conftest.py give the same store a fresh migration gives.

``sqlite_url`` copies one file migrated per test process and ``postgres_url`` creates its
database from a migrated template (running the migrations for each test cost 1.2-3 s). Here a
fixture's store is compared with one upgraded from nothing, on each backend: the revision, every
table with its columns, indexes, keys and constraints, and no row anywhere but Alembic's.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, text

from qaeval_core.store import session as store_session


def _schema(url: str) -> dict[str, Any]:
    """Every table's columns, primary key, foreign keys, indexes, unique and check constraints,
    and its number of rows."""
    engine = store_session.get_engine(url)
    insp = inspect(engine)
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        for table in sorted(insp.get_table_names()):
            out[table] = {
                "columns": [
                    (c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
                    for c in insp.get_columns(table)
                ],
                "pk": insp.get_pk_constraint(table)["constrained_columns"],
                "fks": sorted(
                    (tuple(f["constrained_columns"]), f["referred_table"])
                    for f in insp.get_foreign_keys(table)
                ),
                "indexes": sorted(
                    (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                    for i in insp.get_indexes(table)
                ),
                "unique": sorted(
                    tuple(u["column_names"]) for u in insp.get_unique_constraints(table)
                ),
                "checks": sorted(str(c["sqltext"]) for c in insp.get_check_constraints(table)),
                "rows": conn.execute(text(f'SELECT COUNT(*) FROM "{table}"')).scalar_one(),
            }
    return out


@pytest.fixture
def fresh_postgres_url() -> Iterator[str]:
    """A PostgreSQL database migrated from nothing (no template), dropped afterwards."""
    base = os.environ.get("QAEVAL_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("no PostgreSQL server: QAEVAL_TEST_POSTGRES_URL is unset")
    name = f"qaeval_fresh_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.rsplit("/", 1)[0] + f"/{name}"
    try:
        store_session.upgrade(url)
        yield url
    finally:
        store_session.get_engine(url).dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _compare(fixture_url: str, fresh_url: str) -> None:
    assert store_session.current_revision(fixture_url) == store_session.head_revision()
    got, want = _schema(fixture_url), _schema(fresh_url)
    assert "items" in want and "alembic_version" in want  # the comparison is not of nothing
    assert got == want
    assert {t: s["rows"] for t, s in got.items() if s["rows"]} == {"alembic_version": 1}


def test_the_sqlite_fixture_is_a_freshly_migrated_store(sqlite_url: str, tmp_path: Path) -> None:
    fresh = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    store_session.upgrade(fresh)
    _compare(sqlite_url, fresh)


@pytest.mark.postgres
def test_the_postgres_fixture_is_a_freshly_migrated_store(
    postgres_url: str, fresh_postgres_url: str
) -> None:
    _compare(postgres_url, fresh_postgres_url)


def test_each_sqlite_store_is_a_file_of_its_own(sqlite_url: str, sqlite_template: Path) -> None:
    """A write to a test's store reaches neither the template nor the next test's store."""
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    assert path.exists() and path != sqlite_template
    with store_session.get_engine(sqlite_url).begin() as conn:
        conn.execute(text("DELETE FROM alembic_version"))
    assert store_session.current_revision(sqlite_url) is None
    template = f"sqlite:///{sqlite_template}"
    try:
        assert store_session.current_revision(template) == store_session.head_revision()
    finally:
        store_session.get_engine(template).dispose()
