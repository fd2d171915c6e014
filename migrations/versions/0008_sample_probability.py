"""deal items' inclusion probability: labels chosen by doubt can still count in estimates

``deal_items.inclusion_probability`` is the probability with which the deal drew the item
(issue 24, item 1): a probabilistic triage deal draws every item at random with a known
probability that grows with the judge's doubt, so inverse-probability-weighted estimates can use
the labels it asks for; an audit deal's uniform sample records ``size / items``. NULL: not known
(deterministic triage deals, which pick the most doubtful items, and every deal made before this
revision).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("deal_items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("inclusion_probability", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deal_items", schema=None) as batch_op:
        batch_op.drop_column("inclusion_probability")
