"""The migrations and the models agree, a new store comes up at the newest revision, and
workers opening one store at once upgrade it once, one after the other, each waiting for the
others' lock (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlmodel import SQLModel

from adapters.store import Store, migrations
from adapters.store.engine import make_engine
from tests.conftest import ROOT, eventually


def test_the_models_and_the_migrations_agree(store_url: str) -> None:
    """A change to adapters/store/tables.py without a migration fails here (on both backends):
    write one with `python -m adapters.store.migrations revision "what changed"`."""
    from alembic.autogenerate import compare_metadata  # a quarter of a second that no other test needs

    engine = make_engine(store_url)
    migrations.upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    assert diff == []


def test_the_revisions_form_one_line() -> None:
    script = ScriptDirectory.from_config(migrations.alembic_config())
    assert len(script.get_heads()) == 1
    assert [r.revision for r in script.walk_revisions("base", "heads")][-1] == "0001"
    # Numbered in order: the newest file is the head (a store at it opens without importing Alembic).
    assert migrations.newest_file() == script.get_current_head()


def test_a_new_store_is_at_the_newest_revision(store_url: str) -> None:
    store = Store.open(store_url)
    assert migrations.current(store.engine) == migrations.head()
    assert "uq_runs_scheduled_fire" in {i["name"] for i in inspect(store.engine).get_indexes("runs")}


OPENER = """
import json, sys
from config.settings import Settings

settings = Settings.from_env()  # SKILLS_DATABASE_URL, as in production
if sys.argv[1] == "cli":
    from starter.setup import prepare_store  # `skills setup`
else:
    from adapters.store import Store  # the worker (worker.run_worker)

    def prepare_store(settings):
        Store.from_settings(settings).engine.dispose()
        return "opened"
print("ready", flush=True)
sys.stdin.readline()  # every opener at once
try:
    print(json.dumps({"opened": prepare_store(settings)}))
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
"""


def test_four_workers_and_the_cli_opening_a_new_store_together_each_open_it(store_url: str, tmp_path: Path) -> None:
    """Four workers and `skills setup` open one new store at the same instant, each in its own process: all of
    them open it, at the newest revision, none refused for a lock another holds (the lock makes them wait)."""
    env = {**os.environ, "SKILLS_DATABASE_URL": store_url, "SKILLS_DATA_DIR": str(tmp_path)}
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, role], cwd=ROOT, env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for role in ["worker"] * 4 + ["cli"]]
    try:
        for opener in openers:  # each has imported what it opens the store with
            assert opener.stdout is not None and opener.stdout.readline() == "ready\n", opener.communicate()[1]
        for opener in openers:
            assert opener.stdin is not None
            opener.stdin.write("go\n")
            opener.stdin.flush()
        outcomes = [opener.communicate(timeout=120) for opener in openers]
    finally:
        for opener in openers:
            opener.kill()
    results = [json.loads(out.splitlines()[-1]) if out.strip() else {"error": err} for out, err in outcomes]
    assert results[:4] == [{"opened": "opened"}] * 4
    assert results[4]["opened"].endswith(f"at schema revision {migrations.head()}")
    engine = make_engine(store_url)
    assert migrations.current(engine) == migrations.head()
    engine.dispose()


def test_workers_starting_together_upgrade_the_store_once(store_url: str) -> None:
    """Four threads of one process, as the suite first ran it: SQLite's locks between connections of one
    process are the tightest race (one run in 20 failed so, before the opener waited for WAL mode)."""
    barrier = threading.Barrier(4)
    opened: list[Store] = []
    errors: list[BaseException] = []

    def open_store() -> None:
        barrier.wait()
        try:
            opened.append(Store.open(store_url))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(opened) == 4
    assert migrations.current(opened[0].engine) == migrations.head()


@contextlib.contextmanager
def upgrade_lock_held(store_url: str) -> Iterator[Callable[[], bool]]:
    """Another process's hold on the lock a new store's first opener takes (SQLite: the write lock of a file not
    yet in WAL mode; PostgreSQL: the upgrade's advisory lock), and a probe: is an opener waiting for it?"""
    if store_url.startswith("sqlite:///"):
        holder = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("CREATE TABLE another_process_starting (x)")  # a rollback-journal write, as WAL's switch is
        handler, logger = _Records(), logging.getLogger("adapters.store")
        level = logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            yield lambda: any("locked by another connection" in record.getMessage() for record in handler.records)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            holder.execute("ROLLBACK")
            holder.close()
        return
    import psycopg

    plain = store_url.replace("+psycopg", "")
    with psycopg.connect(plain, autocommit=True) as holder, psycopg.connect(plain, autocommit=True) as observer:
        holder.execute("SELECT pg_advisory_lock(%s)", (migrations.LOCK_KEY,))

        def waiting() -> bool:
            row = observer.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                   "AND wait_event_type = 'Lock' AND wait_event = 'advisory'").fetchone()
            return bool(row and row[0])

        yield waiting
        holder.execute("SELECT pg_advisory_unlock(%s)", (migrations.LOCK_KEY,))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_an_opener_that_finds_the_new_store_locked_waits_for_the_lock(store_url: str) -> None:
    """SQLite refuses at once, without its busy timeout, to switch a new file to WAL mode while another connection
    holds the write lock: a worker starting beside another failed with "database is locked". It waits instead,
    and opens the store once the lock is free (PostgreSQL waits on the advisory lock)."""
    with upgrade_lock_held(store_url) as waiting:
        opening = asyncio.create_task(asyncio.to_thread(Store.open, store_url))
        await eventually(lambda: waiting() or opening.done(), timeout=60)
        assert not opening.done(), opening.exception()
    store = await asyncio.wait_for(opening, timeout=60)
    assert migrations.current(store.engine) == migrations.head()
    store.engine.dispose()


FIRST_LOOK_FAILS = """
import json, sys
from sqlalchemy import event
from adapters.store import migrations
from adapters.store.engine import make_engine

engine = make_engine({url!r})
failed = []

@event.listens_for(engine, "before_cursor_execute")
def busy(conn, cursor, statement, parameters, context, executemany):
    if statement == "SELECT version_num FROM alembic_version" and not failed:  # the first look: no lock held
        failed.append(statement)
        raise conn.dialect.loaded_dbapi.OperationalError("database is locked")

migrations.upgrade(engine)
print(json.dumps({{"failed": len(failed), "alembic": "alembic" in sys.modules, "at": migrations._recorded(engine)}}))
"""


@pytest.mark.parametrize("before", ["newest", "0020", "never"])
def test_a_store_whose_first_look_at_its_revision_fails_is_read_again_under_the_lock(store_url: str,
                                                                                     before: str) -> None:
    """The upgrade's first look at the revision holds no lock, and on a loaded machine it can fail (a busy
    SQLite file; once in a full suite run). Read again under the lock: a store at the newest revision
    opens without importing Alembic, and one behind, or never migrated, is still brought up to it."""
    if before != "never":
        engine = make_engine(store_url)
        migrations.upgrade(engine, "head" if before == "newest" else before)
        engine.dispose()
    done = subprocess.run([sys.executable, "-c", FIRST_LOOK_FAILS.format(url=store_url)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    opened = json.loads(done.stdout.splitlines()[-1])
    assert opened == {"failed": 1, "alembic": before != "newest", "at": migrations.newest_file()}
