"""``notices``: which run a delivered notice told of, by the chat and message it was sent as (the
telegram notifier's ``chat_id`` and ``message_ids``), so a reply to it continues with that run as
context (docs/chat.md, "Replying to a result"). A store made before it knows no notice: replies to
notices sent before the upgrade are answered as plain messages.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "notices" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "notices",
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("message_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", "message_id"),
    )
    op.create_index("ix_notices_run_id", "notices", ["run_id"])


def downgrade() -> None:
    op.drop_table("notices")
