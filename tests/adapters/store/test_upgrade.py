"""A store made by an earlier version opens with the current tables, its skills intact: the
migrations (adapters/store/migrations) bring it to the newest revision."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine

from adapters.store import Store, migrations
from adapters.store.engine import make_engine
from adapters.store.tables import RunRow
from skills.llm.agent import ChatMessage
from skills.spec.models import SkillSpec

# The skills table as versions with a boolean notify_on_completion (NOT NULL) created it.
OLD_SKILLS = """
CREATE TABLE skills (
    id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, agent_id VARCHAR NOT NULL, name VARCHAR NOT NULL,
    description VARCHAR NOT NULL, enabled BOOLEAN NOT NULL, disabled_reason VARCHAR,
    trigger_type VARCHAR NOT NULL, trigger_config JSON, trigger_as_written JSON, instructions TEXT NOT NULL,
    required_tools JSON NOT NULL, execution_plan JSON, max_steps INTEGER NOT NULL,
    notify_on_completion BOOLEAN NOT NULL, notify_interval_minutes INTEGER NOT NULL, preflight JSON NOT NULL,
    model VARCHAR, schedule_id VARCHAR, consecutive_failures INTEGER NOT NULL, last_failure_at DATETIME,
    last_error TEXT, last_notified_at DATETIME, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL,
    CONSTRAINT uq_skill_agent_name UNIQUE (agent_id, name)
);
CREATE INDEX ix_skills_agent_id ON skills (agent_id);
"""


def old_row(id: int, name: str, notify: int) -> str:
    return (f"INSERT INTO skills VALUES ({id}, 'main', '{name}', '', 1, NULL, 'manual', NULL, NULL, 'x', '[]', "
            f"NULL, 10, {notify}, 0, '[]', NULL, NULL, 0, NULL, NULL, NULL, "
            "'2025-01-01 00:00:00.000000', '2025-01-01 00:00:00.000000')")


def spec(name: str, notify: bool | None) -> SkillSpec:
    return SkillSpec(agent_id="main", name=name, trigger_type="manual", instructions="x",
                     notify_on_completion=notify)


def test_an_old_store_keeps_its_skills_and_takes_an_automatic_notice(tmp_path: Path) -> None:
    path = tmp_path / "skills.db"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SKILLS)
        db.execute(old_row(1, "always", 1))
        db.execute(old_row(2, "never", 0))
        db.execute(old_row(3, "deleted", 1))
        db.execute("DELETE FROM skills WHERE id = 3")

    store = Store.open(f"sqlite:///{path}")
    # Stored choices keep their meaning; nothing else changed.
    assert sorted((s.id, s.name, s.notify_on_completion) for s in store.skills.list_skills()) == [
        (1, "always", True), (2, "never", False)]
    now = datetime.now(UTC)
    auto = store.skills.create_skill(spec("auto", None), trigger_as_written=None, disabled_reason=None, now=now)
    assert auto.notify_on_completion is None
    assert auto.id == 4  # ids are never reused (schedule ids derive from them)
    with sqlite3.connect(path) as db:
        indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "ix_skills_agent_id" in indexes

    # Opening it again changes nothing.
    again = Store.open(f"sqlite:///{path}")
    assert sorted((s.id, s.notify_on_completion) for s in again.skills.list_skills()) == [(1, True), (2, False), (4, None)]


def insert_old(engine: Engine, name: str, notify: bool) -> None:
    """A skill as the previous version wrote it: notify_on_completion NOT NULL, ids from the counter."""
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO skills (agent_id, name, description, enabled, trigger_type, instructions, required_tools, "
            "max_steps, notify_on_completion, notify_interval_minutes, preflight, consecutive_failures, created_at, "
            "updated_at) VALUES ('main', :name, '', true, 'manual', 'x', '[]', 10, :notify, 0, '[]', 0, :at, :at)"),
            {"name": name, "notify": notify, "at": datetime(2025, 1, 1, tzinfo=UTC)})


@pytest.mark.parametrize("versioned", [True, False], ids=["from-0001", "before-alembic"])
def test_a_store_of_the_previous_schema_is_upgraded(store_url: str, versioned: bool) -> None:
    """On SQLite and PostgreSQL: a store at the first revision, with its version recorded or made
    before migrations existed (no alembic_version, some tables missing), comes up to head."""
    engine = make_engine(store_url)
    migrations.upgrade(engine, "0001")
    for name, notify in (("always", True), ("never", False), ("deleted", True)):
        insert_old(engine, name, notify)
    # A fire recorded twice by an earlier version (missed, then run late): the run is kept.
    at = datetime(2025, 1, 2, 9, 0, tzinfo=UTC)
    fire = {"skill_id": 1, "skill_name": "always", "workflow_id": "wf", "trigger": "schedule", "scheduled_at": at,
            "started_at": at, "finished_at": at, "summary": "", "tier": "direct", "tool_calls": [],
            "prompt_tokens": 0, "completion_tokens": 0}
    with engine.begin() as conn:
        conn.execute(RunRow.__table__.insert(), [  # type: ignore[attr-defined]
            {**fire, "run_id": "noted-missed", "status": "missed"},
            {**fire, "run_id": "ran-late", "status": "success", "started_at": at + timedelta(minutes=30)},
            {**fire, "run_id": "manual", "status": "success", "trigger": "manual", "scheduled_at": None}])
        conn.execute(text("DELETE FROM skills WHERE name = 'deleted'"))
        if not versioned:
            conn.execute(text("DROP TABLE alembic_version"))
            conn.execute(text("DROP TABLE seen_events"))
    assert not next(c for c in inspect(engine).get_columns("skills") if c["name"] == "notify_on_completion")["nullable"]
    engine.dispose()

    store = Store.open(store_url)
    assert migrations.current(store.engine) == migrations.head()
    assert sorted((s.id, s.name, s.notify_on_completion) for s in store.skills.list_skills()) == [
        (1, "always", True), (2, "never", False)]
    assert sorted(r.run_id for r in store.runs.list_runs(1)) == ["manual", "ran-late"]
    auto = store.skills.create_skill(spec("auto", None), trigger_as_written=None, disabled_reason=None, now=datetime.now(UTC))
    assert auto.id == 4 and auto.notify_on_completion is None
    assert store.events.claim_event("e", "1", "me", datetime.now(UTC), timedelta(hours=1)) is None  # seen_events exists
    assert Store.open(store_url).skills.get_skill(4).name == "auto"


def test_messages_stored_before_0022_are_read_as_the_models(store_url: str) -> None:
    """On SQLite and PostgreSQL: a message stored before migration 0022 does not say who wrote it; it is read as
    the model's, and one stored since keeps the engine's mark. Down to 0021 and up again, the column goes and comes
    back (marks cleared, messages kept)."""
    from alembic import command

    engine = make_engine(store_url)
    migrations.upgrade(engine, "0021")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO messages (conversation_id, seq, role, content, tool_calls, prompt_tokens, completion_tokens, "
            "created_at) VALUES ('c', 1, 'assistant', 'old', '[]', 0, 0, :at)"), {"at": datetime(2025, 1, 1, tzinfo=UTC)})
    engine.dispose()

    store = Store.open(store_url)
    store.conversations.append_messages("c", [ChatMessage(role="assistant", content="new", by_engine=True)],
                                        datetime.now(UTC))
    assert [(m.content, m.by_engine) for m in store.conversations.load_messages("c")] == [("old", False), ("new", True)]
    with store.engine.begin() as conn:
        command.downgrade(migrations.alembic_config(conn), "0021")
    assert "by_engine" not in {c["name"] for c in inspect(store.engine).get_columns("messages")}
    store.engine.dispose()
    again = Store.open(store_url)
    assert migrations.current(again.engine) == migrations.head()
    assert [(m.content, m.by_engine) for m in again.conversations.load_messages("c")] == [("old", False), ("new", False)]


# The runs table as those versions created it (unchanged since).
OLD_RUNS = """
CREATE TABLE runs (
    run_id VARCHAR NOT NULL PRIMARY KEY, skill_id INTEGER NOT NULL, skill_name VARCHAR NOT NULL,
    workflow_id VARCHAR NOT NULL, "trigger" VARCHAR NOT NULL, scheduled_at DATETIME, started_at DATETIME NOT NULL,
    finished_at DATETIME, status VARCHAR NOT NULL, summary TEXT NOT NULL, tier VARCHAR NOT NULL,
    tool_calls JSON NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL
);
"""


def old_run(run_id: str, skill_id: int, started: str, finished: str | None, status: str, summary: str) -> str:
    end = f"'{finished}'" if finished else "NULL"
    return (f"INSERT INTO runs VALUES ('{run_id}', {skill_id}, 's', 'w', 'schedule', NULL, '{started}', {end}, "
            f"'{status}', '{summary}', 'direct', '[]', 0, 0)")


def test_an_old_store_takes_each_skills_last_run_from_its_runs(tmp_path: Path) -> None:
    """last_run_* moved from a query on every load to columns: an old store's are filled in once."""
    path = tmp_path / "skills.db"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SKILLS + OLD_RUNS)
        db.execute(old_row(1, "ran", 1))
        db.execute(old_row(2, "never ran", 1))
        db.execute(old_run("a", 1, "2025-01-01 09:00:00.000000", "2025-01-01 09:00:02.000000", "error", "boom"))
        db.execute(old_run("b", 1, "2025-01-02 09:00:00.000000", "2025-01-02 09:00:03.000000", "success", "sent"))
        # Neither a run still going nor a missed fire counts as the last run.
        db.execute(old_run("c", 1, "2025-01-03 09:00:00.000000", None, "running", ""))
        db.execute(old_run("d", 1, "2025-01-04 09:00:00.000000", "2025-01-04 09:00:00.000000", "missed", "x"))

    store = Store.open(f"sqlite:///{path}")
    ran, never = store.skills.get_skill(1), store.skills.get_skill(2)
    assert (ran.last_run_at, ran.last_run_status, ran.last_run_summary) == (
        datetime(2025, 1, 2, 9, 0, 3, tzinfo=UTC), "success", "sent")
    assert (never.last_run_at, never.last_run_status, never.last_run_summary) == (None, None, None)
    assert ran.notify_on_completion is True  # the other upgrade ran too
    # Opening it again changes nothing.
    assert Store.open(f"sqlite:///{path}").skills.get_skill(1).last_run_status == "success"
