"""The migrations and the models agree, a new store comes up at the newest revision, and
workers opening one store at once upgrade it once, one after the other (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlmodel import SQLModel

from adapters.store import Store, migrations
from adapters.store.tables import make_engine
from tests.conftest import ROOT


def test_the_models_and_the_migrations_agree(store_url: str) -> None:
    """A change to adapters/store/tables.py without a migration fails here (on both backends):
    write one with `python -m adapters.store.migrations revision "what changed"`."""
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


def test_workers_starting_together_upgrade_the_store_once(store_url: str) -> None:
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


FIRST_LOOK_FAILS = """
import json, sys
from sqlalchemy import event
from adapters.store import migrations
from adapters.store.tables import make_engine

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
