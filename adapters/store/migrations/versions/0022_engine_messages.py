"""``messages.by_engine``: the engine wrote the message, not the model (``ChatMessage.by_engine``).

A turn retried after its answer was stored reads the answer back: without this it took the engine's own answer
(a service no tool reaches, the list of skills) for the model's. Messages stored before were not marked: false.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "by_engine" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("messages")}:
        op.add_column("messages", sa.Column("by_engine", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("by_engine")
