"""One run record per scheduled fire: a unique index on the runs of a skill's schedule by their
scheduled time. Several workers on one store (or a retried, reset or restarted workflow, whose
run id is new) can then never record one fire twice; the store inserts or ignores.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SCHEDULED = sa.text("\"trigger\" = 'schedule'")


def upgrade() -> None:
    op.create_index("uq_runs_scheduled_fire", "runs", ["skill_id", "scheduled_at"], unique=True,
                    sqlite_where=SCHEDULED, postgresql_where=SCHEDULED)


def downgrade() -> None:
    op.drop_index("uq_runs_scheduled_fire", table_name="runs")
