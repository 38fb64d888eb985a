"""The run history's retention on both backends: runs past the retention window and past the cap per
skill are deleted in bounded batches, with their Agent conversations, never a run still going nor a
skill's newest scheduled fire (the next fire reckons missed fires from it); the walks follow an index.
And the overdue reckoning: a scheduled fire with no run or recorded skip past the threshold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from activities import retention, watch
from activities.retention import RetentionActivities
from activities.watch import WatchActivities
from adapters.store import ScheduledSkill, Store
from adapters.store.runs import old_runs, runs_beyond, scheduled_with_last_fire
from adapters.store.tables import SkillRow
from config.settings import Settings
from skills.llm.agent import ChatMessage
from skills.messages.maintenance import OverdueQuery
from skills.messages.manage import RunsQuery, SkillRef
from tests.adapters.store.helpers import create, run, spec

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def store(store_url: str) -> Store:
    return Store.open(store_url, schedule_prefix="q")


def closed(skill_id: int, n: int, at: datetime, status: str = "success", trigger: str = "schedule"):  # noqa: ANN201
    return run(skill_id, n, status, scheduled=at, trigger=trigger)


def ids(store: Store, skill_id: int) -> set[str]:
    return {r.run_id for r in store.runs.list_runs(skill_id, limit=10_000)}


def test_runs_past_the_window_go_with_their_conversations_but_not_the_newest_fire_nor_a_running_one(
        store: Store) -> None:
    old = NOW - timedelta(days=40)
    quiet = create(store, spec("quiet"))   # fired long ago, not since: its newest fire stays
    busy = create(store, spec("busy"))
    for n in range(3):
        store.runs.start_run(closed(quiet, n, old + timedelta(minutes=n)))
        store.runs.start_run(closed(busy, n, old + timedelta(minutes=n)))
    store.runs.start_run(closed(busy, 10, NOW - timedelta(days=1)))
    store.runs.start_run(closed(busy, 11, old, trigger="manual"))
    store.runs.start_run(run(busy, 12, "running", scheduled=old - timedelta(hours=1)))  # Maintenance closes these
    store.conversations.append_messages(f"run-{busy}-0", [ChatMessage(role="user", content="old talk")], old)
    store.conversations.append_messages(f"run-{busy}-10", [ChatMessage(role="user", content="new talk")], NOW)

    assert store.runs.prune_old_runs(NOW - timedelta(days=30), limit=2) == 2  # a batch at most
    assert store.runs.prune_old_runs(NOW - timedelta(days=30), limit=100) == 4
    assert store.runs.prune_old_runs(NOW - timedelta(days=30), limit=100) == 0
    assert ids(store, quiet) == {f"run-{quiet}-2"}
    assert ids(store, busy) == {f"run-{busy}-10", f"run-{busy}-12"}
    assert store.conversations.load_messages(f"run-{busy}-0") == []
    assert [m.content for m in store.conversations.load_messages(f"run-{busy}-10")] == ["new talk"]
    # The newest fire kept is what the next fire reckons its gaps from.
    assert store.runs.previous_scheduled_run(quiet, before=NOW).run_id == f"run-{quiet}-2"  # type: ignore[union-attr]


def test_a_skill_keeps_its_newest_runs_up_to_the_cap(store: Store) -> None:
    skill = create(store, spec())
    other = create(store, spec("other"))
    for n in range(12):
        store.runs.start_run(closed(skill, n, NOW - timedelta(hours=12 - n)))
    store.runs.start_run(closed(other, 0, NOW - timedelta(hours=20)))
    assert store.runs.prune_skill_runs(skill, keep=5, limit=4) == 4
    assert store.runs.prune_skill_runs(skill, keep=5, limit=100) == 3
    assert ids(store, skill) == {f"run-{skill}-{n}" for n in range(7, 12)}
    assert len(ids(store, other)) == 1


def test_the_walks_follow_an_index_not_the_whole_table(store: Store) -> None:
    """The store's own statements, planned by SQLite: every table read is an index search, none a scan of
    the runs (PostgreSQL's planner picks by statistics, so its plan on an empty table says nothing)."""
    if store.engine.dialect.name != "sqlite":
        pytest.skip("EXPLAIN QUERY PLAN is SQLite's")

    def plan(statement: Any) -> list[str]:
        compiled = statement.compile(dialect=store.engine.dialect)
        params = tuple("2026-01-01 00:00:00" if isinstance(compiled.params[k], datetime) else compiled.params[k]
                       for k in compiled.positiontup)
        with store.engine.connect() as connection:
            return [str(row[-1]) for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + str(compiled), params)]

    by_age = plan(old_runs(NOW, 1000))
    assert by_age[0] == "SEARCH runs USING INDEX ix_runs_started_at (started_at<?)", by_age
    by_skill = plan(runs_beyond(1, 1000, 1000))
    assert any("USING INDEX ix_runs_skill_started (skill_id=?)" in step for step in by_skill), by_skill
    last_fires = plan(scheduled_with_last_fire())
    for steps in (by_age, by_skill, last_fires):
        searches = [step for step in steps if step.startswith(("SEARCH runs", "SCAN runs"))]
        assert searches and all(" USING " in step and "SCAN runs" not in step for step in searches), steps
        assert not any("TEMP B-TREE" in step for step in steps), steps


def test_the_maintenance_activity_prunes_in_rounds_and_walks_every_skill(
        store: Store, store_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    settings = Settings(database_url=store_url, data_dir=tmp_path, run_retention_days=30, max_runs_per_skill=2)
    skills = [create(store, spec(f"s{i}")) for i in range(5)]
    for skill in skills:
        for n in range(4):
            store.runs.start_run(closed(skill, n, NOW - timedelta(hours=10 - n)))
    store.runs.start_run(closed(skills[0], 9, NOW - timedelta(days=31), trigger="manual"))
    monkeypatch.setattr(retention, "SKILLS_PER_ROUND", 2)  # three rounds see the five skills
    activities = RetentionActivities(store, settings)
    first = activities.prune_runs()
    assert (first.by_age, first.by_count) == (1, 4)
    assert activities.prune_runs().by_count == 4 and activities.prune_runs().by_count == 2
    assert all(len(ids(store, s)) == 2 for s in skills)
    assert activities.prune_runs().by_count == 0  # the walk started over, and found nothing more
    history = activities.run_history(RunsQuery(skill=SkillRef(ref="s1")))
    assert (history.retention_days, history.max_runs_per_skill) == (30, 2)
    assert history.oldest == NOW - timedelta(hours=8)


def test_a_skill_is_overdue_when_its_fire_has_no_run_past_the_threshold(store: Store, store_url: str,
                                                                         tmp_path) -> None:  # noqa: ANN001
    settings = Settings(database_url=store_url, data_dir=tmp_path, overdue_after=timedelta(minutes=10))
    fired = create(store, spec("fired"), now=NOW - timedelta(hours=1))      # every 5 minutes
    late = create(store, spec("late"), now=NOW - timedelta(hours=1))
    fresh = create(store, spec("fresh"), now=NOW - timedelta(minutes=8))    # its first fire is not 10 min late yet
    paused = create(store, spec("paused", enabled=False), now=NOW - timedelta(hours=1))
    last = NOW - timedelta(minutes=4)
    store.runs.start_run(closed(fired, 0, last.replace(second=0)))
    store.runs.start_run(closed(late, 0, NOW - timedelta(minutes=40)))
    watcher = WatchActivities(store, settings, clock=lambda: NOW)  # NOW is the import's time, the run's is later
    found = watcher.find_overdue_skills(OverdueQuery())
    assert found.count == 1 and [o.skill.name for o in found.skills] == ["late"], found
    assert found.skills[0].last_fire == NOW - timedelta(minutes=40)
    assert {fresh, paused}.isdisjoint({o.skill.id for o in found.skills})
    # A resume counts from the resume: fires while it was paused were no fires of its schedule.
    with store.session() as session:
        session.execute(update(SkillRow).where(SkillRow.id == late).values(updated_at=NOW - timedelta(minutes=3)))  # type: ignore[arg-type]
        session.commit()
    assert WatchActivities(store, settings, clock=lambda: NOW).find_overdue_skills(OverdueQuery()).count == 0


def test_a_fire_on_a_skipped_day_is_not_due() -> None:
    """A weekday skill's Saturday and Sunday fires never come (the schedule skips them): after Friday's
    fire, the next one due is Monday's, and a Christmas Day fire of a skill skipping holidays neither."""
    friday = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    weekdays = ScheduledSkill(id=1, name="standup", schedule_id="q-1-standup",
                              trigger_config={"schedule": "0 9 * * *", "timezone": "UTC"},
                              created_at=friday - timedelta(days=30), updated_at=friday - timedelta(days=30),
                              last_fire=friday, business_days_only=True)
    assert watch._next_fire(weekdays, friday) == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    every_day = weekdays._replace(business_days_only=False)
    assert watch._next_fire(every_day, friday) == datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    christmas_eve = datetime(2026, 12, 24, 9, 0, tzinfo=UTC)
    holidays = every_day._replace(skip_holidays="GB")
    assert watch._next_fire(holidays, christmas_eve) == datetime(2026, 12, 27, 9, 0, tzinfo=UTC)


def test_a_notice_names_its_run_until_the_run_is_pruned(store: Store) -> None:
    old = NOW - timedelta(days=40)
    skill = create(store, spec("digest"))
    for n in range(2):
        store.runs.start_run(run(skill, n, "success", scheduled=old + timedelta(minutes=n), trigger="manual",
                                 run_id=f"0123abcd-{n}"))
    store.runs.start_run(run(skill, 5, "success", scheduled=NOW - timedelta(days=1), run_id="0123abce-5"))
    store.conversations.record_notice("42", [7, 8], "0123abcd-0", old)  # a notice in two parts
    store.conversations.record_notice("42", [7], "0123abcd-0", old)     # told again (a retried notify): the same
    store.conversations.record_notice("42", [9], "0123abce-5", NOW)
    assert store.conversations.notice_run("42", 8) == "0123abcd-0" and store.conversations.notice_run("-100", 8) is None

    # A run is named by its id, or by 8+ characters beginning it (two runs: ambiguous, both given back).
    assert [r.run_id for r in store.runs.find_runs("0123abce")] == ["0123abce-5"]
    assert [r.run_id for r in store.runs.find_runs("0123abcd-1")] == ["0123abcd-1"]
    assert len(store.runs.find_runs("0123abcd")) == 2 and store.runs.find_runs("0123abc") == []
    assert store.runs.find_runs("0123abc_") == [] and store.runs.find_runs("%%%%%%%%") == []  # LIKE's wildcards are text

    store.runs.prune_old_runs(NOW - timedelta(days=30), limit=100)
    assert store.conversations.notice_run("42", 7) is None and store.conversations.notice_run("42", 8) is None
    assert store.conversations.notice_run("42", 9) == "0123abce-5"
