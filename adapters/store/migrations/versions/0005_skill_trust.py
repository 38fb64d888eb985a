"""``skill_trust``: the owner's trust in a SKILL.md skill's executable parts (its toolsets and scripts),
pinned by their digest (``skills trust NAME``). A store made before it has no record: every skill with
executable parts is untrusted until trusted, bundled skills excepted (they need no record).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "skill_trust" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "skill_trust",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("digest", sa.String(), nullable=False),
        sa.Column("covers", sa.JSON(), nullable=False),
        sa.Column("trusted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("skill_trust")
