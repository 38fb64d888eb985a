"""``skills.remind_after_minutes``: while an incident stays open, tell it again after this many minutes
(0: once when it opens, once when it ends). Existing skills remind never, as before.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "remind_after_minutes" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}:
        op.add_column("skills", sa.Column("remind_after_minutes", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("remind_after_minutes")
