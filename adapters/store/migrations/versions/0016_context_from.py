"""``skills.context_from``: ``self`` or skill names whose last delivered result a run is given as context
(``skills.run.recall``). The result itself is read from ``runs`` when a run needs it, never kept twice.
Existing skills remember nothing.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "context_from" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}:
        op.add_column("skills", sa.Column("context_from", sa.JSON(), nullable=False, server_default=sa.text("'[]'")))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("context_from")
