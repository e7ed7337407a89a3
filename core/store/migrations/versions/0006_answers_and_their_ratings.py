"""Answers and their ratings (issue 26, feedback): each answer is recorded with where it was
given and what made it (model, skills, tools; never its text), and people's 👍/👎 on it, one
per person (the last click wins).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "answers",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("channel", sa.String(length=128), nullable=False),
        sa.Column("thread", sa.String(length=128), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("skills", sa.String(length=500), nullable=False),
        sa.Column("tools", sa.String(length=500), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.create_index(
            "ix_answers_tenant", ["platform", "tenant", "created_at"], unique=False
        )

    op.create_table(
        "answer_ratings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("answer_id", sa.String(length=64), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("channel", sa.String(length=128), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("value", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.String(length=300), nullable=True),
        sa.Column("link", sa.String(length=500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["answer_id"], ["answers.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("answer_id", "user", name="uq_answer_ratings_user"),
    )
    with op.batch_alter_table("answer_ratings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_answer_ratings_tenant", ["platform", "tenant", "updated_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("answer_ratings", schema=None) as batch_op:
        batch_op.drop_index("ix_answer_ratings_tenant")

    op.drop_table("answer_ratings")
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.drop_index("ix_answers_tenant")

    op.drop_table("answers")
