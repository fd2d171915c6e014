"""pending import rows: items and labels an import into an existing dataset has not committed

``items.import_id`` and ``labels.import_id`` name the hidden dataset of the import into an
existing dataset that wrote the row, until that import has committed and cleared them (issue 31,
item 1): the import writes its rows in many short transactions (so annotators' saves never wait
long), and every reader skips the rows of an import that has not reached its commit point, so a
killed import is never seen in part. A partial index on each holds only the marked rows (empty
when no import runs), by which the import clears them and a cleanup deletes a killed one's.

The staging tables of migration 0007 (where such an import kept its rows until it moved them
in, chunk by chunk and visibly) are dropped. Rows an import killed under that design left staged
are first moved in, marked, so the next cleanup ends that import as it ends a new one: it
deletes them (killed before its commit point) or clears their marks (killed while moving in).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MARKED = sa.text("import_id IS NOT NULL")
#: As in ``qaeval_core.store.orm`` at this revision (a migration does not import the ORM).
_HIDDEN_PREFIX = ".qaeval-import-in-progress:"
_COMMITTED_SUFFIX = ":committed"
_ITEM_COLUMNS = (
    "external_id",
    "question",
    "references",
    "candidate",
    "context",
    "choices",
    "wrong_answers",
    "qa_model",
    "meta",
    "content_hash",
)
_LABEL_COLUMNS = ("user_id", "value", "rule", "note", "seconds")


def upgrade() -> None:
    for table in ("items", "labels"):
        op.add_column(table, sa.Column("import_id", sa.Integer(), nullable=True))
        op.create_index(
            f"ix_{table}_import_id",
            table,
            ["import_id"],
            sqlite_where=_MARKED,
            postgresql_where=_MARKED,
        )
    _mark_staged_rows(op.get_bind())
    op.drop_index("ix_import_stage_labels_import_item", table_name="import_stage_labels")
    op.drop_table("import_stage_labels")
    op.drop_table("import_stage_items")


def _mark_staged_rows(conn: sa.Connection) -> None:
    """Move what killed imports left in the staging tables into items and labels, marked."""
    ds = sa.table("datasets", sa.column("id"), sa.column("name"), sa.column("description"))
    st = sa.table(
        "import_stage_items", *map(sa.column, ("import_id", "seq", "known_item_id", *_ITEM_COLUMNS))
    )
    sl = sa.table(
        "import_stage_labels", *map(sa.column, ("import_id", "seq", "item_seq", *_LABEL_COLUMNS))
    )
    it = sa.table(
        "items", *map(sa.column, ("id", "dataset_id", "created_at", "import_id", *_ITEM_COLUMNS))
    )
    lt = sa.table(
        "labels", *map(sa.column, ("item_id", "source", "created_at", "import_id", *_LABEL_COLUMNS))
    )
    now = datetime.now(UTC)
    hidden = sa.select(ds.c.id, ds.c.name, ds.c.description).where(
        ds.c.name.like(_HIDDEN_PREFIX + "%")
    )
    for hid, name, description in conn.execute(hidden).all():
        try:
            state = json.loads(description or "[]")
        except ValueError:
            continue
        into = state.get("into") if isinstance(state, dict) else None
        if (
            not isinstance(into, int)
            or conn.scalar(sa.select(ds.c.id).where(ds.c.id == into)) is None
        ):
            continue  # a new dataset's import, or its target deleted: the cleanup deletes it
        new_items = (
            sa.select(
                sa.literal(into),
                sa.literal(now),
                sa.literal(hid),
                *(st.c[c] for c in _ITEM_COLUMNS),
            )
            .where(st.c.import_id == hid, st.c.known_item_id.is_(None))
            .order_by(st.c.seq)
        )
        item_cols = ["dataset_id", "created_at", "import_id", *_ITEM_COLUMNS]
        conn.execute(sa.insert(it).from_select(item_cols, new_items))
        copied = sa.and_(
            st.c.known_item_id.is_(None),
            it.c.dataset_id == into,
            it.c.external_id == st.c.external_id,
        )
        labels = (
            sa.select(
                sa.func.coalesce(st.c.known_item_id, it.c.id),
                sa.literal("import"),
                sa.literal(now),
                sa.literal(hid),
                *(sl.c[c] for c in _LABEL_COLUMNS),
            )
            .select_from(
                sl.join(
                    st, (st.c.import_id == sl.c.import_id) & (st.c.seq == sl.c.item_seq)
                ).outerjoin(it, copied)
            )
            .where(sl.c.import_id == hid)
            .order_by(sl.c.seq)
        )
        label_cols = ["item_id", "source", "created_at", "import_id", *_LABEL_COLUMNS]
        conn.execute(sa.insert(lt).from_select(label_cols, labels))
        if state.get("adopting"):  # past its commit point: the cleanup finishes it
            conn.execute(sa.update(ds).where(ds.c.id == hid).values(name=name + _COMMITTED_SUFFIX))


def downgrade() -> None:
    # rows of imports not yet committed would become visible without their mark: deleted (the
    # earlier cleanup then deletes their hidden datasets, as of an import that staged nothing)
    pending = "SELECT id FROM datasets WHERE name LIKE :hidden AND name NOT LIKE :committed"
    for table in ("labels", "items"):
        op.execute(
            sa.text(f"DELETE FROM {table} WHERE import_id IN ({pending})").bindparams(
                hidden=_HIDDEN_PREFIX + "%", committed="%" + _COMMITTED_SUFFIX
            )
        )
    for table in ("labels", "items"):
        op.drop_index(f"ix_{table}_import_id", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("import_id")
    path = Path(__file__).with_name("0007_import_stage.py")
    spec = importlib.util.spec_from_file_location("qaeval_migration_0007", path)
    assert spec is not None and spec.loader is not None
    m0007 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m0007)
    m0007.upgrade()  # the staging tables again, empty
