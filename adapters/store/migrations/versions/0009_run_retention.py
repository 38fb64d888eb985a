"""Indexes for the run history's retention (Maintenance prunes it in bounded batches): runs by start,
for the runs past the retention window, oldest first; and a skill's runs by start, for the runs past
``max_runs_per_skill``, newest first. Both walks then read only the rows they delete (plus the ones
kept), on SQLite and PostgreSQL alike, however long the history.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

INDEXES = {"ix_runs_started_at": ["started_at"], "ix_runs_skill_started": ["skill_id", "started_at"]}


def upgrade() -> None:
    existing = {index["name"] for index in sa.inspect(op.get_bind()).get_indexes("runs")}
    for name, columns in INDEXES.items():
        if name not in existing:
            op.create_index(name, "runs", columns)


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name="runs")
