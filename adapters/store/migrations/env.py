"""Alembic's environment for the store: always given a connection by ``adapters.store.migrations``
(no alembic.ini, no URL here), so the upgrade runs inside the caller's transaction and lock."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import adapters.store.tables  # noqa: F401 - the models fill SQLModel.metadata (for autogenerate)

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=SQLModel.metadata, render_as_batch=True,
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()
