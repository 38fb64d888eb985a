"""``skills.spread``: whether a cron with no ``jitter_seconds`` takes the default spread (``skills.when.spread``).

Existing skills keep what their owners approved, each fire at its exact time: false. A skill registered new
takes the spread unless it asks for an exact time (``skills.spec.normalize``).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "spread" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}:
        op.add_column("skills", sa.Column("spread", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("spread")
