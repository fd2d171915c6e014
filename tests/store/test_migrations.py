"""The schema comes only from Alembic migrations, and they match the ORM models exactly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Base

TABLES = {
    "datasets", "items", "users", "assignments", "labels", "adjudications", "scores",
    "calibrations",
}  # fmt: skip


def schema_diff(url: str) -> list:
    with store_session.get_engine(url).connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, Base.metadata)


def tables(url: str) -> set[str]:
    return set(inspect(store_session.get_engine(url)).get_table_names())


def test_migrated_schema_equals_the_orm_metadata(db_url: str):
    assert store_session.current_revision(db_url) == store_session.head_revision()
    assert schema_diff(db_url) == []


def test_downgrade_to_base_and_upgrade_again(db_url: str):
    assert tables(db_url) >= TABLES
    store_session.downgrade(db_url, "base")
    assert tables(db_url) & TABLES == set()
    assert store_session.current_revision(db_url) is None
    store_session.upgrade(db_url)
    assert tables(db_url) >= TABLES
    assert store_session.current_revision(db_url) == store_session.head_revision()
    assert schema_diff(db_url) == []


def test_upgrade_is_idempotent(db_url: str):
    store_session.upgrade(db_url)
    store_session.upgrade(db_url)
    assert store_session.current_revision(db_url) == store_session.head_revision()


def test_sqlite_store_uses_wal_and_foreign_keys(sqlite_url: str):
    with store_session.get_engine(sqlite_url).connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


def test_every_revision_steps_up_and_down(db_url: str):
    """Each migration's downgrade undoes it (checked one step at a time, newest first)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(store_session._alembic_config(db_url))
    revisions = [r.revision for r in script.walk_revisions()]  # newest first
    for rev in revisions:
        assert store_session.current_revision(db_url) == rev
        store_session.downgrade(db_url, "-1")
    assert tables(db_url) & TABLES == set()
    for rev in reversed(revisions):
        store_session.upgrade(db_url, "+1")
        assert store_session.current_revision(db_url) == rev
    assert schema_diff(db_url) == []
