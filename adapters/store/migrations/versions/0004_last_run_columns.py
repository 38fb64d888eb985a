"""``skills.last_run_at``, ``last_run_status`` and ``last_run_summary``: each skill's newest finished
run, kept on its row and written with the run's outcome in one transaction, instead of derived by a
query on every load (a fire's hot path).

Filled in from the runs table by the rule the derived value followed: the newest run by start that is
neither ``running`` nor ``missed``; the time shown is its end, else its start.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = {
    "last_run_at": sa.DateTime(timezone=True),
    "last_run_status": sa.String(),
    "last_run_summary": sa.Text(),
}
NEWEST = ("FROM runs r WHERE r.skill_id = skills.id AND r.status NOT IN ('running', 'missed') "
          "ORDER BY r.started_at DESC LIMIT 1")


def upgrade() -> None:
    existing = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}
    for name, kind in COLUMNS.items():
        if name not in existing:
            op.add_column("skills", sa.Column(name, kind, nullable=True))
    op.execute(sa.text(
        f"UPDATE skills SET last_run_at = (SELECT COALESCE(r.finished_at, r.started_at) {NEWEST}), "
        f"last_run_status = (SELECT r.status {NEWEST}), last_run_summary = (SELECT r.summary {NEWEST})"))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
