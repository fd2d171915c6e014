"""answer knowledge: researchers' decisions on answers people taught the judge

``answer_knowledge`` holds, per dataset, each decision a researcher made on a suggested answer
of a question (issue 24, item 2): a correct answer that contains no reference suggested as an
alias, or a wrong one as a known wrong answer; ``accepted`` or ``rejected``, by whom and when.
Append-only: the highest ``version`` of a suggestion is its current decision; the unique
(dataset, suggestion, version) makes two decisions on the same suggestion at once collide.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "answer_knowledge",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("suggestion_hash", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("question_key", sa.Text(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("answer_key", sa.Text(), nullable=False),
        sa.Column("decision", sa.String(length=10), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("decided_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "decision IN ('accepted', 'rejected')", name=op.f("ck_answer_knowledge_decision")
        ),
        sa.CheckConstraint("kind IN ('alias', 'wrong')", name=op.f("ck_answer_knowledge_kind")),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_answer_knowledge_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["decided_by"],
            ["users.id"],
            name=op.f("fk_answer_knowledge_decided_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_knowledge")),
        sa.UniqueConstraint(
            "dataset_id", "suggestion_hash", "version", name="uq_answer_knowledge_version"
        ),
    )
    with op.batch_alter_table("answer_knowledge", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_answer_knowledge_dataset_id"), ["dataset_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("answer_knowledge", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_answer_knowledge_dataset_id"))
    op.drop_table("answer_knowledge")
