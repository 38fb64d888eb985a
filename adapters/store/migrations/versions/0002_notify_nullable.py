"""``skills.notify_on_completion`` becomes nullable: None means automatic (``skills.run.notify``).
Stored values keep their meaning (true: always, false: never).

A store made before Alembic by a version that already had the nullable column is left as it is.
SQLite cannot drop a NOT NULL: the table is rebuilt (Alembic's batch mode), keeping its rows,
its indexes and its id counter (ids are never reused: schedule ids derive from them).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    column = next(c for c in sa.inspect(bind).get_columns("skills") if c["name"] == "notify_on_completion")
    if column["nullable"]:
        return
    if bind.dialect.name != "sqlite":
        op.alter_column("skills", "notify_on_completion", existing_type=sa.Boolean(), nullable=True)
        return
    counter = bind.execute(sa.text("SELECT seq FROM sqlite_sequence WHERE name = 'skills'")).scalar()
    with op.batch_alter_table("skills", recreate="always", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.alter_column("notify_on_completion", existing_type=sa.Boolean(), nullable=True)
    if counter is not None:
        kept = bind.execute(sa.text("SELECT seq FROM sqlite_sequence WHERE name = 'skills'")).scalar()
        if kept is None:
            bind.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('skills', :counter)"),
                         {"counter": counter})
        else:
            bind.execute(sa.text("UPDATE sqlite_sequence SET seq = :counter WHERE name = 'skills'"),
                         {"counter": max(counter, kept)})


def downgrade() -> None:
    with op.batch_alter_table("skills", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.alter_column("notify_on_completion", existing_type=sa.Boolean(), nullable=False)
