"""annotate workflow: persisted skips, flags, active time, per-dataset guidelines

``assignments.skipped_at`` keeps a skip across sessions (a skipped item leaves the pending
queue until the annotator revisits it). ``flags`` holds "flag for review" with a reason, which
researchers list and resolve. ``labels.wall_seconds`` is the wall time of a label next to
``labels.seconds``, which becomes the active time (idle gaps cut to the project's cap).
``guidelines`` keeps every version of a dataset's guidelines, rule list, label keys and idle
cap. A project's rule list may hold up to 9 rules, so the rule check widens from 1-7 to 1-9.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("skipped_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("wall_seconds", sa.Float(), nullable=True))
        batch_op.drop_constraint(op.f("ck_labels_rule"), type_="check")
        batch_op.create_check_constraint(
            op.f("ck_labels_rule"), "rule IS NULL OR (rule BETWEEN 1 AND 9)"
        )
    op.create_table(
        "flags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.Integer(), nullable=True),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name=op.f("fk_flags_item_id_items"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_flags_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["resolved_by"],
            ["users.id"],
            name=op.f("fk_flags_resolved_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flags")),
    )
    op.create_index("ix_flags_item_user", "flags", ["item_id", "user_id"], unique=False)
    op.create_index(op.f("ix_flags_user_id"), "flags", ["user_id"], unique=False)
    op.create_table(
        "guidelines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("rules", sa.JSON(), nullable=False),
        sa.Column("label_keys", sa.JSON(), nullable=False),
        sa.Column("idle_cap_seconds", sa.Float(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_guidelines_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_guidelines_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_guidelines")),
        sa.UniqueConstraint("dataset_id", "version", name="uq_guidelines_dataset_version"),
    )


def downgrade() -> None:
    op.drop_table("guidelines")
    op.drop_index(op.f("ix_flags_user_id"), table_name="flags")
    op.drop_index("ix_flags_item_user", table_name="flags")
    op.drop_table("flags")
    # Rules 8 and 9 do not fit the old check: such labels lose their rule (value and note stay).
    op.execute("UPDATE labels SET rule = NULL WHERE rule > 7")
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_labels_rule"), type_="check")
        batch_op.create_check_constraint(
            op.f("ck_labels_rule"), "rule IS NULL OR (rule BETWEEN 1 AND 7)"
        )
        batch_op.drop_column("wall_seconds")
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_column("skipped_at")
