"""import staging: the rows of an import into an existing dataset, until they are moved in

``import_stage_items`` and ``import_stage_labels`` hold the items and labels of an import into
an existing dataset, keyed by the import's hidden dataset (``import_id``), while the file is
checked and until the import's commit point; then they move into ``items`` and ``labels`` a
chunk per transaction (issue 21: an import held SQLite's write lock for the whole file, and
annotators' saves waited seconds). Plain tables keyed by (import, place in the import), so
staging writes no index of ``items``. Both are empty whenever no such import is running.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "import_stage_items",
        sa.Column("import_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("known_item_id", sa.Integer(), nullable=True),
        sa.Column("external_id", sa.String(length=300), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("references", sa.JSON(), nullable=False),
        sa.Column("candidate", sa.Text(), nullable=False),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("choices", sa.JSON(), nullable=True),
        sa.Column("wrong_answers", sa.JSON(), nullable=True),
        sa.Column("qa_model", sa.Text(), nullable=True),
        sa.Column("meta", sa.JSON(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["datasets.id"],
            name=op.f("fk_import_stage_items_import_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("import_id", "seq", name=op.f("pk_import_stage_items")),
    )
    op.create_table(
        "import_stage_labels",
        sa.Column("import_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("item_seq", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("rule", sa.Integer(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["datasets.id"],
            name=op.f("fk_import_stage_labels_import_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_import_stage_labels_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("import_id", "seq", name=op.f("pk_import_stage_labels")),
    )
    op.create_index(
        "ix_import_stage_labels_import_item",
        "import_stage_labels",
        ["import_id", "item_seq"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_import_stage_labels_import_item", table_name="import_stage_labels")
    op.drop_table("import_stage_labels")
    op.drop_table("import_stage_items")
