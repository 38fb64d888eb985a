"""The engine that opens the store's database (SQLite or PostgreSQL), with SQLAlchemy's core alone: a worker
opens its store, migrates it and answers ``/readyz`` with it before any table is read, and loads the ORM, SQLModel
and the tables (``adapters.store.tables``) with the first repository a call uses (docs/performance.md, "Worker
RSS")."""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine

from config.secrets import mask_url

logger = logging.getLogger(__name__)


SQLITE_BUSY_TIMEOUT = 30.0
"""Seconds a statement on a SQLite store waits for another connection's lock (SQLite's busy timeout), and
how long a new connection keeps asking for WAL mode while another holds the lock (``wal_mode``)."""


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the settings SQLite needs for a multi-threaded worker."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            # WAL lets the CLI-driven activities read while a run is being recorded.
            wal_mode(dbapi_connection, url)
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        return engine
    return create_engine(url, pool_pre_ping=True)


def wal_mode(dbapi_connection: Any, url: str, patience: float = SQLITE_BUSY_TIMEOUT) -> None:
    """Put a new connection's database in WAL mode, waiting up to ``patience`` seconds for another's lock.

    A database not yet in WAL mode (a new store) is switched by a write to its header, which SQLite asks for
    from inside a read: it answers "database is locked" at once, without its busy timeout, while another
    connection holds the write lock (SQLite's deadlock avoidance), as one of several workers starting together
    on a new store found. So ask again, with backoff, until the lock is free. A database already in WAL mode
    takes no lock here; one that cannot be in WAL mode (in memory) keeps its mode, as before."""
    deadline = time.monotonic() + patience
    delay = 0.005
    waited = False
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if not _busy(e) or time.monotonic() + delay > deadline:
                raise
        if not waited:
            logger.info("the store %s is locked by another connection (one opening or migrating it): waiting up "
                        "to %.0f s", mask_url(url), patience)
            waited = True
        time.sleep(delay * random.uniform(0.5, 1.5))  # jitter: openers started together drift apart
        delay = min(delay * 2, 0.25)


def _busy(error: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY, extended codes too (mcp_servers/once.py's keys file meets the same on its first calls)."""
    return getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY or "database is locked" in str(error)
