"""``skills.fallback_models`` (an Agent-tier skill's models tried after its own), ``skills.hook_digest``
(the SHA-256 of its ``POST /hooks/<skill>`` token; the token itself is never stored) and ``runs.model``
(the model that answered a run). Existing skills have no fallback and no hook; existing runs, no model.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    skills = {c["name"] for c in inspector.get_columns("skills")}
    if "fallback_models" not in skills:
        op.add_column("skills", sa.Column("fallback_models", sa.JSON(), nullable=False, server_default=sa.text("'[]'")))
    if "hook_digest" not in skills:
        op.add_column("skills", sa.Column("hook_digest", sa.String(), nullable=True))
    if "model" not in {c["name"] for c in inspector.get_columns("runs")}:
        op.add_column("runs", sa.Column("model", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("model")
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("hook_digest")
        batch.drop_column("fallback_models")
