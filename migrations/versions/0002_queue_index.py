"""covering index for the annotation queue (next_item)

``next_item`` walks one annotator's assignments in queue order and stops at the first item
without a label; with (user_id, position, item_id) it reads only the index, never the table,
so it stays fast with 100,000 items.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_assignments_user_position_item", ["user_id", "position", "item_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_index("ix_assignments_user_position_item")
