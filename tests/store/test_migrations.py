"""The schema comes only from Alembic migrations, and they match the ORM models exactly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Base

TABLES = {
    "datasets",
    "items",
    "users",
    "assignments",
    "labels",
    "adjudications",
    "scores",
    "calibrations",
}


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


def test_0010_hands_rows_left_staged_by_killed_imports_to_the_cleanup(db_url: str):
    """Migration 0010 drops the staging tables of 0007; what an import killed under that design
    left staged is moved in, marked, so the cleanup removes it (killed before its commit point:
    never seen) or finishes it (killed while moving in: seen whole from the upgrade on)."""
    import json
    import socket
    import subprocess
    import sys

    from sqlalchemy import text

    from qaeval_core import store
    from qaeval_core.store.orm import IMPORTING_PREFIX, utcnow

    store_session.downgrade(db_url, "0009")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    host = socket.gethostname()[:60]
    now = {"now": utcnow()}
    with store_session.write_scope(db_url) as s:

        def add(sql: str, **params: object) -> int | None:
            return s.execute(text(sql + " RETURNING id"), {**now, **params}).scalar()

        d = add("INSERT INTO datasets (name, created_at) VALUES ('d', :now)")
        user = add(
            "INSERT INTO users (name, role, active, created_at) "
            "VALUES ('r', 'external', TRUE, :now)"
        )
        item = (
            'INSERT INTO items (dataset_id, external_id, question, "references", candidate, '
            "content_hash, created_at) VALUES (:d, 'old', 'q', '[\"r\"]', 'c', 'old', :now)"
        )
        old = add(item, d=d)
        for tag, adopting, value in (("moving", True, 0), ("staging", False, 1)):
            desc = json.dumps({"raters": [], "into": d, **({"adopting": True} if adopting else {})})
            hid = add(
                "INSERT INTO datasets (name, description, created_at) VALUES (:n, :desc, :now)",
                n=f"{IMPORTING_PREFIX}{host}:{dead}:{tag}",
                desc=desc,
            )
            for seq, known, ext in ((1, None, tag), (2, old, "old")):
                s.execute(
                    text(
                        "INSERT INTO import_stage_items (import_id, seq, known_item_id, "
                        'external_id, question, "references", candidate, content_hash) '
                        "VALUES (:h, :seq, :known, :ext, 'q', '[\"r\"]', 'c', :ext)"
                    ),
                    {"h": hid, "seq": seq, "known": known, "ext": ext},
                )
                s.execute(  # a label on the new item, one on "old"
                    text(
                        "INSERT INTO import_stage_labels (import_id, seq, item_seq, user_id, "
                        "value) VALUES (:h, :seq, :seq, :u, :v)"
                    ),
                    {"h": hid, "seq": seq, "u": user, "v": value},
                )
    store_session.upgrade(db_url)
    assert not {"import_stage_items", "import_stage_labels"} & tables(db_url)
    items = set(store.list_items(db_url, "d")["external_id"])
    assert items == {"old", "moving"}  # the committed import whole, the other not at all
    labels = store.current_labels(db_url, "d")
    assert sorted(zip(labels["external_id"], labels["value"], strict=True)) == [
        ("moving", 0),
        ("old", 0),
    ]
    done = store.cleanup_imports(db_url)
    assert (done.removed, done.finished) == (1, ("d",))
    assert set(store.list_items(db_url, "d")["external_id"]) == {"old", "moving"}
    with store_session.session_scope(db_url) as s:
        assert s.scalar(text("SELECT COUNT(*) FROM items WHERE import_id IS NOT NULL")) == 0
        assert s.scalar(text("SELECT COUNT(*) FROM labels WHERE import_id IS NOT NULL")) == 0
        assert s.scalar(text("SELECT COUNT(*) FROM items")) == 2
        assert s.scalar(text("SELECT COUNT(*) FROM datasets")) == 1
