"""The schedule's shape: ``skills.timeout_minutes``, ``end_at``, ``max_runs``, ``jitter_seconds``,
``overlap``, ``catch_up``, and ``scheduled_runs``, the count ``max_runs`` is measured against.

Existing skills keep what they did: no run limit but the engine's, no end, no jitter, overlap ``skip``,
catch-up ``once``. ``scheduled_runs`` is filled in from the runs table: each fire its schedule started
once (one workflow id a fire; the rows a fire wrote for the times before it share that id), the fires
Temporal never started (``missed``) not counted.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COLUMNS = {
    "timeout_minutes": (sa.Float(), None),
    "end_at": (sa.DateTime(timezone=True), None),
    "max_runs": (sa.Integer(), None),
    "jitter_seconds": (sa.Integer(), "0"),
    "overlap": (sa.String(), "skip"),
    "catch_up": (sa.String(), "once"),
    "scheduled_runs": (sa.Integer(), "0"),
}


def upgrade() -> None:
    existing = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("skills")}
    for name, (kind, default) in COLUMNS.items():
        if name not in existing:
            op.add_column("skills", sa.Column(name, kind, nullable=default is None,
                                              server_default=sa.text(default if default.isdigit() else f"'{default}'")
                                              if default is not None else None))
    op.execute(sa.text(
        "UPDATE skills SET scheduled_runs = (SELECT COUNT(DISTINCT r.workflow_id) FROM runs r "
        "WHERE r.skill_id = skills.id AND r.\"trigger\" = 'schedule' AND r.status <> 'missed')"))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
