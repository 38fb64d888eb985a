"""``skills.approval_exempt_tools``: tools marked destructive by their server (``destructiveHint: true``)
that a skill's runs call without asking. Every other destructive tool's call now waits for the owner's
approval; existing skills exempt none.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "approval_exempt_tools" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}:
        op.add_column("skills", sa.Column("approval_exempt_tools", sa.JSON(), nullable=False,
                                          server_default=sa.text("'[]'")))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("approval_exempt_tools")
