"""``approvals``: what waits for the owner's answer (a run's tool call, a chat's proposed change),
and the skill columns that ask for it: ``approval_required_tools`` and ``approval_timeout_minutes``.
A store made before it has no approvals and no skill that needs one.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    existing = {c["name"] for c in inspector.get_columns("skills")}
    if "approval_required_tools" not in existing:
        op.add_column("skills", sa.Column("approval_required_tools", sa.JSON(), nullable=False,
                                          server_default=sa.text("'[]'")))
    if "approval_timeout_minutes" not in existing:
        op.add_column("skills", sa.Column("approval_timeout_minutes", sa.Integer(), nullable=True))
    if "approvals" in inspector.get_table_names():
        return
    op.create_table(
        "approvals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("request_key", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("skill_id", sa.Integer(), nullable=True),
        sa.Column("skill_name", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=True),
        sa.Column("workflow_id", sa.String(), nullable=True),
        sa.Column("session_id", sa.String(), nullable=True),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("request_key"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_approvals_status", "approvals", ["status"])
    op.create_index("ix_approvals_skill_id", "approvals", ["skill_id"])
    op.create_index("ix_approvals_session_id", "approvals", ["session_id"])


def downgrade() -> None:
    op.drop_table("approvals")
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("approval_timeout_minutes")
        batch.drop_column("approval_required_tools")
