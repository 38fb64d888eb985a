"""``skills.deliver_to`` (where a skill's result goes: send tools with their fixed arguments; empty, the
notifier as before) and ``runs.deliveries`` (each destination's outcome: delivered, failed, unknown).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if "deliver_to" not in {c["name"] for c in inspector.get_columns("skills")}:
        op.add_column("skills", sa.Column("deliver_to", sa.JSON(), nullable=False, server_default="[]"))
    if "deliveries" not in {c["name"] for c in inspector.get_columns("runs")}:
        op.add_column("runs", sa.Column("deliveries", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("deliveries")
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("deliver_to")
