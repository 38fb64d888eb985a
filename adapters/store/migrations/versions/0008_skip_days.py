"""``skills.skip_holidays``, ``business_days_only`` and ``skips_until``: the days a skill's schedule skips
(public holidays of a country, the weekend), and when the skip list written into its schedule runs out,
so Maintenance finds the schedules to renew by an index instead of describing each one.

A store made before it has no skill that skips a day: the columns start empty (false).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

INDEX = "ix_skills_skips_until"


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    existing = {c["name"] for c in inspector.get_columns("skills")}
    if "skip_holidays" not in existing:
        op.add_column("skills", sa.Column("skip_holidays", sa.String(), nullable=True))
    if "business_days_only" not in existing:
        op.add_column("skills", sa.Column("business_days_only", sa.Boolean(), nullable=False,
                                          server_default=sa.false()))
    if "skips_until" not in existing:
        op.add_column("skills", sa.Column("skips_until", sa.DateTime(timezone=True), nullable=True))
    if INDEX not in {i["name"] for i in inspector.get_indexes("skills")}:
        op.create_index(INDEX, "skills", ["skips_until"])


def downgrade() -> None:
    op.drop_index(INDEX, table_name="skills")
    with op.batch_alter_table("skills") as batch:
        for name in ("skips_until", "business_days_only", "skip_holidays"):
            batch.drop_column(name)
