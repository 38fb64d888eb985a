"""``skills.deliver`` (whether a successful run's result reaches the owner: always, on_change, never),
``skills.delivered_digest`` (the SHA-256 of the last result delivered, what ``on_change`` compares; the
text is not kept twice) and ``runs.unchanged`` (a success not delivered because its result had not
changed). Existing skills deliver always and have delivered nothing yet; existing runs are not unchanged.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    skills = {c["name"] for c in inspector.get_columns("skills")}
    if "deliver" not in skills:
        op.add_column("skills", sa.Column("deliver", sa.String(), nullable=False, server_default="always"))
    if "delivered_digest" not in skills:
        op.add_column("skills", sa.Column("delivered_digest", sa.String(), nullable=True))
    if "unchanged" not in {c["name"] for c in inspector.get_columns("runs")}:
        op.add_column("runs", sa.Column("unchanged", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("unchanged")
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("delivered_digest")
        batch.drop_column("deliver")
