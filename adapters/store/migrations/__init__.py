"""The store's schema migrations (Alembic), run by ``Store.open``: every process that opens the
store (the worker, ``skills setup``, the dev launcher) brings it to the newest revision first.

No alembic.ini: the configuration is built here, the migrations ship inside the package. The
upgrade holds a lock for its transaction (PostgreSQL: an advisory lock; SQLite: the file's write
lock, waited for up to ``engine.SQLITE_BUSY_TIMEOUT``, as a new connection waits to switch a new file to WAL
mode), so processes starting together upgrade one after the other (the later ones find nothing
to do). A store made before
migrations existed (tables, no ``alembic_version``) is upgraded from the start: the first
revisions create only what is missing and change only what still has the old shape.

A new revision, after changing ``adapters/store/tables.py``::

    python -m adapters.store.migrations revision "what changed"

writes ``versions/<rev>_....py`` from the difference between the models and the newest
revision (on a scratch SQLite store); read it, then commit it. ``tests/adapters/store/test_migrations.py``
fails while models and migrations disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic itself (12 MB resident) is imported only when a store is not at the newest revision: a
# store already up to date is told apart by one query against the numbered revision files (asked
# again under the upgrade's lock when it fails or disagrees).

HERE = Path(__file__).resolve().parent
LOCK_KEY = 0x736B696C6C73  # "skills": the advisory lock every upgrade of one PostgreSQL database takes


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(HERE))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision."""
    from alembic.script import ScriptDirectory

    revision = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert revision is not None
    return revision


def current(engine: Engine) -> str | None:
    """The revision the database is at (None: never migrated)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to ``revision`` (the newest by default), in one transaction where the
    backend allows it, one process at a time on PostgreSQL."""
    if revision == "head" and _recorded(engine) == newest_file():
        return
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # the file's write lock: other processes wait (busy timeout)
        # Read again under the lock, still without Alembic: the look above takes no lock and may have
        # failed on a busy store (a loaded machine), or another process may have upgraded it since.
        if revision == "head" and _recorded_in(conn) == newest_file():
            return
        from alembic import command

        command.upgrade(alembic_config(conn), revision)


def newest_file() -> str:
    """The newest revision by its file's number (``versions/0004_....py`` is ``0004``): revisions are
    numbered in order (``python -m adapters.store.migrations revision``), so this is the head."""
    return max(path.name.split("_", 1)[0] for path in (HERE / "versions").glob("[0-9]*_*.py"))


def _recorded(engine: Engine) -> str | None:
    """The revision ``alembic_version`` records, by one plain query (None: none, no such table, or the
    query failed: ``upgrade`` reads it again under its lock)."""
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:
        return None


def _recorded_in(conn: Connection) -> str | None:
    """The revision ``alembic_version`` records, read in the caller's transaction (None: no such table).
    The table is looked for first: a failed query would abort a PostgreSQL transaction."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
