"""One run record per scheduled fire: a unique index on the runs of a skill's schedule by their
scheduled time. Several workers on one store (or a retried, reset or restarted workflow, whose
run id is new) can then never record one fire twice; the store inserts or ignores.

Earlier versions could record a fire twice (a one-shot recorded as missed by the maintenance
round, then run late; a reset workflow). Of such records the one that tells what happened is
kept: a run before a ``missed`` or ``skipped`` note, then the first started.

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
NOTES = ("missed", "skipped")


def upgrade() -> None:
    bind = op.get_bind()
    slots = bind.execute(sa.text(
        "SELECT skill_id, scheduled_at FROM runs WHERE \"trigger\" = 'schedule' AND scheduled_at IS NOT NULL "
        "GROUP BY skill_id, scheduled_at HAVING COUNT(*) > 1")).all()
    for skill_id, scheduled_at in slots:
        rows = bind.execute(sa.text(
            "SELECT run_id, status, started_at FROM runs WHERE \"trigger\" = 'schedule' AND skill_id = :skill "
            "AND scheduled_at = :at"), {"skill": skill_id, "at": scheduled_at}).all()
        keep = min(rows, key=lambda r: (r.status in NOTES, str(r.started_at), r.run_id))
        for row in rows:
            if row.run_id != keep.run_id:
                bind.execute(sa.text("DELETE FROM runs WHERE run_id = :run"), {"run": row.run_id})
    op.create_index("uq_runs_scheduled_fire", "runs", ["skill_id", "scheduled_at"], unique=True,
                    sqlite_where=SCHEDULED, postgresql_where=SCHEDULED)


def downgrade() -> None:
    op.drop_index("uq_runs_scheduled_fire", table_name="runs")
