"""``revisions``: every change to a skill (who made it, when, the spec after it and what changed), for
``skills history`` and ``skills revert`` (``skills.spec.revisions``); ``skills.revision``, the newest one's
number. Existing skills have no revision yet (0): their next change is their first.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if "revision" not in {c["name"] for c in inspector.get_columns("skills")}:
        op.add_column("skills", sa.Column("revision", sa.Integer(), nullable=False, server_default=sa.text("0")))
    if "revisions" in inspector.get_table_names():
        return
    op.create_table(
        "revisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("skill_id", sa.Integer(), nullable=False),
        sa.Column("skill_name", sa.String(), nullable=False),
        sa.Column("agent_id", sa.String(), nullable=False),
        sa.Column("rev", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("by", sa.String(), nullable=False),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("diff", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("skill_id", "rev", name="uq_revisions_skill_rev"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("revisions")
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("revision")
