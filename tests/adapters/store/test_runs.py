"""Runs in the store, on SQLite and PostgreSQL: failure counters and backoff, one-shots, one record per
scheduled fire, tokens and budgets, incidents. And what only several workers on one PostgreSQL store do:
runs of one skill finishing at once."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from adapters.store import Store
from skills.run.backoff import BackoffPolicy
from skills.run.budget import BudgetPolicy
from skills.spec.models import BUDGET, FAILURES, FIRED, RunRecord, ToolCallRecord
from tests.adapters.store.helpers import POLICY, T0, create, finish, run, spec


def test_failures_count_back_off_disable_and_a_success_resets(store: Store) -> None:
    skill_id = create(store, spec())
    first = finish(store, run(skill_id, 1), "error", "boom " * 500)
    assert first.skill.consecutive_failures == 1 and first.skill.last_error == ("boom " * 500)[:1000]
    assert first.retry_after == first.run.finished_at + timedelta(minutes=1)
    assert finish(store, run(skill_id, 2), "success").skill.consecutive_failures == 0
    for n in (3, 4):
        outcome = finish(store, run(skill_id, n), "error")
    assert outcome.skill.consecutive_failures == 2 and outcome.retry_after == outcome.run.finished_at + timedelta(minutes=5)
    third = finish(store, run(skill_id, 5), "error")
    assert third.disabled == FAILURES and not third.skill.enabled and third.skill.disabled_reason == FAILURES
    assert store.skills.get_skill(skill_id).last_run_status == "error"


def test_a_one_shot_retires_once(store: Store) -> None:
    skill_id = create(store, spec(trigger_config={"at": (T0 + timedelta(minutes=1)).isoformat()}))
    schedule = store.skills.get_skill(skill_id).schedule_id
    assert schedule is not None
    outcome = finish(store, run(skill_id, 1), "success")
    assert (outcome.disabled, outcome.retired_schedule, outcome.skill.enabled) == (FIRED, schedule, False)
    again = store.runs.record_outcome(outcome.run, POLICY)  # a retried finish: nothing left to retire
    assert again.retired_schedule is None and again.disabled is None


def test_one_record_per_scheduled_fire(store: Store) -> None:
    skill_id = create(store, spec())
    first = store.runs.start_run(run(skill_id, 1))
    assert store.runs.start_run(run(skill_id, 1)) == first  # a retried activity
    # Another workflow run of the same fire (a reset, a second worker's retry) finds the first.
    other = run(skill_id, 1).model_copy(update={"run_id": "someone-else"})
    assert store.runs.start_run(other).run_id == first.run_id
    # Manual runs carry no scheduled time: as many as asked.
    store.runs.start_run(run(skill_id, 2, trigger="manual"))
    store.runs.start_run(run(skill_id, 3, trigger="manual", scheduled=T0 + timedelta(minutes=2)))
    assert len(store.runs.list_runs(skill_id)) == 3
    assert not store.runs.has_scheduled_runs(create(store, spec("other")))
    assert store.runs.has_scheduled_runs(skill_id)


def test_runs_are_listed_newest_first_and_the_previous_fire_is_found(store: Store) -> None:
    skill_id = create(store, spec())
    for n in (1, 3, 2):
        finish(store, run(skill_id, n, tool_calls=[ToolCallRecord(step_id="s", tool="t.x", ok=True, duration_ms=3)]),
               "success")
    listed = store.runs.list_runs(skill_id)
    assert [r.run_id for r in listed] == [f"run-{skill_id}-{n}" for n in (3, 2, 1)]
    assert listed[0].tool_calls[0].tool == "t.x" and listed[0].finished_at.tzinfo is not None
    previous = store.runs.previous_scheduled_run(skill_id, before=T0 + timedelta(minutes=3))
    assert previous is not None and previous.run_id == f"run-{skill_id}-2"


def test_tokens_are_summed_and_a_budget_pauses(store: Store) -> None:
    skill_id = create(store, spec())
    other_id = create(store, spec("other"))
    finish(store, run(other_id, 1, tokens=500), "success")
    finish(store, run(skill_id, 2, tokens=300), "success")
    assert store.runs.tokens_since(T0) == 800 and store.runs.tokens_since(T0 + timedelta(minutes=3)) == 0
    usage = store.runs.usage(run(skill_id, 3, tokens=100), since=T0)
    assert (usage.skill_day, usage.day, usage.recent) == (300, 800, [300])
    budget = BudgetPolicy(run_cap=10_000, skill_daily=350, daily=100_000, spike_factor=100, spike_floor=100_000)
    paused = finish(store, run(skill_id, 3, tokens=100), "success", budget=budget)
    assert paused.disabled == BUDGET and store.skills.get_skill(skill_id).disabled_reason == BUDGET


def test_failures_of_concurrent_runs_are_all_counted(pg_url: str) -> None:
    """Several workers finishing failed runs of one skill at once: no update is lost, and the
    limit-th failure is the one that disables the skill."""
    store = Store.open(pg_url)
    skill_id = create(store, spec())
    policy = BackoffPolicy(steps=[timedelta(minutes=1)], limit=1000)
    records = [run(skill_id, n) for n in range(40)]
    for record in records:
        store.runs.start_run(record)
    workers = [Store.open(pg_url) for _ in range(4)]  # as many engines (connection pools) as workers
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def fail(worker: Store, mine: list[RunRecord]) -> None:
        barrier.wait()
        try:
            for record in mine:
                worker.runs.record_outcome(record.model_copy(update={"status": "error", "finished_at": T0}), policy)
        except BaseException as e:  # reported below, not swallowed
            errors.append(e)

    threads = [threading.Thread(target=fail, args=(workers[i % 4], records[i::8])) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.skills.get_skill(skill_id).consecutive_failures == 40

    # Racing to the limit: exactly one run disables the skill.
    limit = BackoffPolicy(steps=[timedelta(minutes=1)], limit=45)
    more = [run(skill_id, n) for n in range(40, 50)]
    for record in more:
        store.runs.start_run(record)
    disabled: list[str | None] = []
    barrier = threading.Barrier(len(more))

    def one(record: RunRecord, worker: Store) -> None:
        barrier.wait()
        disabled.append(worker.runs.record_outcome(record.model_copy(update={"status": "error", "finished_at": T0}),
                                                   limit).disabled)

    threads = [threading.Thread(target=one, args=(r, workers[i % 4])) for i, r in enumerate(more)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(disabled) == 10 and disabled.count(FAILURES) == 1
    assert store.skills.get_skill(skill_id).consecutive_failures == 50


def test_an_open_incident_is_told_again_after_remind_after_minutes(store: Store) -> None:
    """The same failure again and again is one incident, silent while it repeats; a skill that asks for
    reminders hears of it again once its minutes have passed since it was last told, then silence again."""
    skill_id = create(store, spec(remind_after_minutes=30))
    policy = BackoffPolicy(steps=[timedelta(minutes=1)], limit=100)

    def fail(n: int, at: datetime) -> str | None:
        record = run(skill_id, n, trigger="manual").model_copy(update={"started_at": at})
        store.runs.start_run(record)
        note = store.runs.record_outcome(record.model_copy(update={
            "status": "error", "summary": f"HTTP 503 from the mail server (request {n})", "finished_at": at}),
            policy).incident
        return note.event if note else None

    events = [fail(n, T0 + timedelta(minutes=minutes)) for n, minutes in
              enumerate((0, 10, 29, 30, 45, 59, 61), start=1)]
    assert events == ["opened", "repeated", "repeated", "reminded", "repeated", "repeated", "reminded"]
    [incident] = store.runs.list_incidents(skill_id)
    assert (incident.failures, incident.last_notified_at) == (7, T0 + timedelta(minutes=61))

    skill_id = create(store, spec("quiet"))  # remind_after_minutes 0: told once, whatever the time
    assert [fail(n, T0 + timedelta(days=n)) for n in range(20, 23)] == ["opened", "repeated", "repeated"]
