"""account security: forced password change, login throttling, idle timeout

``users.must_change_password`` marks a temporary password (the demo's ``admin``/``admin``, or
one an admin set): the app asks for a new one before anything else. ``login_throttle`` counts
failed logins per typed name so that repeated guesses are refused for a growing delay, across
processes. ``login_sessions.last_seen_at`` is the last request of a login session, from which
its idle timeout counts.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "must_change_password", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
    with op.batch_alter_table("login_sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "login_throttle",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("first_failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_login_throttle")),
    )


def downgrade() -> None:
    op.drop_table("login_throttle")
    with op.batch_alter_table("login_sessions", schema=None) as batch_op:
        batch_op.drop_column("last_seen_at")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("must_change_password")
