"""deals: every dealing of items into queues is recorded (queue, audit or triage)

``deals`` holds each deal's kind (``queue``: a whole dataset; ``audit``: a seeded uniform random
sample; ``triage``: items a calibrated judge is unsure of), seed, parameters, author and time;
``deal_items`` the items an audit or triage deal drew; ``assignments.deal_id`` the deal that put
an item in a queue. Assignments that exist already keep ``deal_id`` NULL: they were all dealt by
queue deals, the only kind before this revision.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("n_items", sa.Integer(), nullable=False),
        sa.Column("added", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('queue', 'audit', 'triage')", name=op.f("ck_deals_kind")),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_deals_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_deals_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deals")),
    )
    with op.batch_alter_table("deals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_deals_dataset_id"), ["dataset_id"], unique=False)

    op.create_table(
        "deal_items",
        sa.Column("deal_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["deal_id"], ["deals.id"], name=op.f("fk_deal_items_deal_id_deals"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name=op.f("fk_deal_items_item_id_items"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("deal_id", "item_id", name=op.f("pk_deal_items")),
    )
    with op.batch_alter_table("deal_items", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_deal_items_item_id"), ["item_id"], unique=False)

    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deal_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_assignments_deal_id"), ["deal_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_assignments_deal_id_deals"),
            "deals",
            ["deal_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_assignments_deal_id_deals"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_assignments_deal_id"))
        batch_op.drop_column("deal_id")
    with op.batch_alter_table("deal_items", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deal_items_item_id"))
    op.drop_table("deal_items")
    with op.batch_alter_table("deals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deals_dataset_id"))
    op.drop_table("deals")
