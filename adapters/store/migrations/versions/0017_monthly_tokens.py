"""``skills.max_tokens_per_month``: an Agent-tier skill's tokens in any 30 days, past which its fires are skipped
(the owner told once). Existing skills have no cap.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "max_tokens_per_month" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}:
        op.add_column("skills", sa.Column("max_tokens_per_month", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("max_tokens_per_month")
