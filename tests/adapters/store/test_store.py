"""The store on both backends it supports, SQLite and PostgreSQL (``store_url`` runs each test on
each): skills, runs, failure counters and backoff, one-shots, tokens, conversations, state. And
what only several workers on one PostgreSQL store do: runs of one skill finishing at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import inspect

from adapters.store import Store
from skills.agent import ChatMessage
from skills.approvals import ApprovalRequest
from skills.backoff import BackoffPolicy
from skills.budget import BudgetPolicy
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.messages import SkillFilter
from skills.models import BUDGET, FAILURES, FIRED, RunRecord, SkillSpec, ToolCallRecord

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
POLICY = BackoffPolicy(steps=[timedelta(minutes=1), timedelta(minutes=5)], limit=3)


@pytest.fixture
def store(store_url: str) -> Store:
    return Store.open(store_url, schedule_prefix="q")


def spec(name: str = "tick", agent: str = "a", **fields: object) -> SkillSpec:
    return SkillSpec.model_validate({"agent_id": agent, "name": name, "trigger_type": "cron", "instructions": "do it",
                                     "trigger_config": {"interval_minutes": 5}, **fields})


def create(store: Store, s: SkillSpec, now: datetime = T0) -> int:
    return store.skills.create_skill(s, trigger_as_written=None, disabled_reason=None, now=now).id


def run(skill_id: int, n: int, status: str = "running", *, scheduled: datetime | None = None,
        trigger: str = "schedule", tokens: int = 0, **fields: object) -> RunRecord:
    at = scheduled or T0 + timedelta(minutes=n)
    return RunRecord.model_validate({
        "run_id": f"run-{skill_id}-{n}", "skill_id": skill_id, "skill_name": "tick", "workflow_id": f"wf-{n}",
        "trigger": trigger, "scheduled_at": at if trigger == "schedule" else None, "started_at": at,
        "status": status, "tier": "agent" if tokens else "direct", "prompt_tokens": tokens,
        **({"finished_at": at + timedelta(seconds=2)} if status != "running" else {}), **fields})


def finish(store: Store, record: RunRecord, status: str, summary: str = "", budget: BudgetPolicy | None = None):
    store.runs.start_run(record)
    return store.runs.record_outcome(record.model_copy(update={
        "status": status, "summary": summary, "finished_at": record.started_at + timedelta(seconds=2)}), POLICY, budget)


def test_a_skill_is_stored_found_listed_changed_and_deleted(store: Store) -> None:
    skill = store.skills.create_skill(spec(required_tools=["outbox.send"], notify_on_completion=None),
                                      trigger_as_written={"in_minutes": 5}, disabled_reason=None, now=T0)
    assert skill.id > 0 and skill.schedule_id == f"q-{skill.id}-tick" and skill.created_at == T0
    assert skill.trigger_as_written == {"in_minutes": 5} and skill.notify_on_completion is None
    assert store.skills.find_skill("TICK").id == skill.id == store.skills.find_skill(str(skill.id)).id
    create(store, spec("tick", agent="b"))
    with pytest.raises(SkillNotFoundError, match="several agents"):
        store.skills.find_skill("tick")
    assert store.skills.find_skill("tick", agent_id="b").agent_id == "b"
    with pytest.raises(SkillValidationError, match="already has a skill named 'tick'"):
        create(store, spec("tick"))

    later = T0 + timedelta(hours=1)
    changed = store.skills.replace_skill(skill.id, spec("tock", enabled=False, trigger_type="manual", trigger_config=None),
                                         trigger_as_written=None, disabled_reason="by user", now=later)
    assert (changed.name, changed.schedule_id, changed.disabled_reason, changed.updated_at) == ("tock", None, "by user", later)
    assert [s.name for s in store.skills.list_skills(SkillFilter(agent_id="a"))] == ["tock"]
    assert [s.agent_id for s in store.skills.list_skills(SkillFilter(enabled=True))] == ["b"]
    assert store.skills.set_enabled(skill.id, True, None, later).enabled

    store.runs.start_run(run(skill.id, 1))
    deleted = store.skills.delete_skill(skill.id)
    assert deleted.name == "tock" and store.runs.list_runs(skill.id) == []
    with pytest.raises(SkillNotFoundError):
        store.skills.get_skill(skill.id)
    # Ids are never reused: schedule ids derive from them.
    assert create(store, spec("new")) > skill.id


def test_restore_puts_a_skill_back_exactly(store: Store) -> None:
    before = store.skills.get_skill(create(store, spec()))
    store.skills.replace_skill(before.id, spec("other", description="changed"), trigger_as_written=None,
                               disabled_reason=None, now=T0 + timedelta(days=1))
    store.skills.restore_skill(before)
    assert store.skills.get_skill(before.id) == before
    store.skills.delete_skill(before.id)
    store.skills.restore_skill(before)  # the undo of a deletion made it again, with its id
    assert store.skills.get_skill(before.id) == before


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


def test_conversations_and_state(store: Store) -> None:
    assert store.conversations.append_messages("c1", [ChatMessage(role="user", content="hi")], T0) == 1
    last = store.conversations.append_messages("c1", [
        ChatMessage(role="assistant", content=None, tool_calls=[{"id": "t1", "name": "x.y", "arguments": "{}"}]),
        ChatMessage(role="tool", content="ok", tool_call_id="t1")], T0)
    assert last == 3 and [m.role for m in store.conversations.load_messages("c1")] == ["user", "assistant", "tool"]
    assert store.conversations.get_message("c1", 2).tool_calls[0].name == "x.y"  # type: ignore[union-attr]
    assert store.conversations.has_tool_result("c1", "t1") and not store.conversations.has_tool_result("c2", "t1")
    assert store.conversations.get_state("llm") is None
    store.conversations.set_state("llm", {"ok": False}, T0)
    store.conversations.set_state("llm", {"ok": True}, T0)
    assert store.conversations.get_state("llm") == {"ok": True}
    store.skills.mark_notified(create(store, spec()), T0)


def test_opening_again_changes_nothing(store_url: str, store: Store) -> None:
    skill_id = create(store, spec())
    tables = set(inspect(store.engine).get_table_names())
    assert {"skills", "runs", "messages", "engine_state", "seen_events", "alembic_version"} <= tables
    again = Store.open(store_url)
    assert again.skills.get_skill(skill_id).name == "tick"


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


# --- approvals ------------------------------------------------------------------------------


def approval_request(key: str = "run-1:step1:0", **fields: object) -> ApprovalRequest:
    return ApprovalRequest.model_validate({
        "kind": "tool_call", "request_key": key, "skill_id": 1, "skill_name": "tick", "run_id": "r1",
        "workflow_id": "w1", "tool": "outbox_send_message", "arguments": {"message": "hi"},
        "summary": "send 'hi'", "requested_at": T0, "expires_at": T0 + timedelta(hours=1), **fields})


def test_an_approval_is_recorded_once_per_request_and_answered_once(store: Store) -> None:
    first = store.approvals.add_approval(approval_request())
    again = store.approvals.add_approval(approval_request(summary="a retried step records it again"))
    assert again == first and first.pending and first.expires_at == T0 + timedelta(hours=1)
    other = store.approvals.add_approval(approval_request("chat:s1:3:0", kind="change", session_id="s1", workflow_id=None))
    assert other.id > first.id
    assert [a.id for a in store.approvals.list_approvals()] == [other.id, first.id]
    assert [a.id for a in store.approvals.list_approvals(session_id="s1")] == [other.id]

    decided, changed = store.approvals.decide_approval(first.id, "approved", now=T0 + timedelta(minutes=3), by="cli")
    assert changed and decided.status == "approved" and decided.decided_by == "cli"
    assert decided.decided_at == T0 + timedelta(minutes=3)
    # A second answer (a Telegram button pressed after `skills deny`) changes nothing, and says so.
    late, changed = store.approvals.decide_approval(first.id, "denied", now=T0 + timedelta(minutes=4), reason="no")
    assert not changed and late.status == "approved" and late.reason is None
    assert [a.id for a in store.approvals.list_approvals()] == [other.id]
    assert {a.id for a in store.approvals.list_approvals(status=None)} == {first.id, other.id}
    store.approvals.record_approval_outcome(first.id, "sent")
    assert store.approvals.get_approval(first.id).outcome == "sent"
    assert store.approvals.find_approval("run-1:step1:0") == store.approvals.get_approval(first.id)
    with pytest.raises(SkillNotFoundError, match="no approval with id 999"):
        store.approvals.get_approval(999)


def test_two_answers_at_once_decide_an_approval_once(store: Store) -> None:
    pending = store.approvals.add_approval(approval_request())
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def answer(i: int) -> None:
        barrier.wait()
        results.append(store.approvals.decide_approval(pending.id, "approved" if i % 2 else "denied", now=T0)[1])

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1


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


def test_every_change_keeps_one_revision_with_it(store: Store) -> None:
    skill_id = create(store, spec(), T0)
    store.skills.replace_skill(skill_id, spec(trigger_config={"interval_minutes": 10}), trigger_as_written=None,
                               disabled_reason=None, now=T0 + timedelta(minutes=1), by="cli")
    store.skills.set_enabled(skill_id, False, "paused", T0 + timedelta(minutes=2), by="mcp")
    store.skills.set_enabled(skill_id, False, "paused", T0 + timedelta(minutes=3), by="mcp")  # no change: no revision
    assert store.skills.get_skill(skill_id).revision == 3
    deleted = store.skills.delete_skill(skill_id, by="chat:s1", now=T0 + timedelta(minutes=4))
    assert deleted.revision == 3  # as it was
    revs = store.revisions.list_revisions(skill_id)
    assert [(r.rev, r.action, r.by) for r in revs] == [
        (4, "deleted", "chat:s1"), (3, "updated", "mcp"), (2, "updated", "cli"), (1, "created", "client")]
    assert [(c.field, c.before, c.after) for c in revs[1].diff] == [("enabled", True, False)]
    assert [c.field for c in revs[2].diff] == ["trigger_config"]
    assert revs[2].spec["trigger_config"]["interval_minutes"] == 10 and revs[2].at == T0 + timedelta(minutes=1)
    assert revs[0].spec["enabled"] is False and revs[0].diff == []  # a delete keeps the spec it had
    assert [r.skill_id for r in store.revisions.deleted_skill_revisions("TICK")] == [skill_id]
    assert store.revisions.get_revision(skill_id, 2).spec == revs[2].spec
    with pytest.raises(SkillNotFoundError):
        store.revisions.get_revision(skill_id, 9)


def test_a_refused_change_writes_no_revision_and_an_undo_forgets_its_own(store: Store) -> None:
    first, second = create(store, spec()), create(store, spec("tock"))
    with pytest.raises(SkillValidationError):  # the name is taken: neither the change nor its revision
        store.skills.replace_skill(second, spec(), trigger_as_written=None, disabled_reason=None, now=T0)
    assert [r.rev for r in store.revisions.list_revisions(second)] == [1]
    before = store.skills.get_skill(first)
    store.skills.replace_skill(first, spec(max_steps=3), trigger_as_written=None, disabled_reason=None, now=T0)
    store.skills.restore_skill(before)  # the schedule could not follow
    assert store.skills.get_skill(first).revision == 1 and [r.rev for r in store.revisions.list_revisions(first)] == [1]
    store.skills.delete_skill(second, by=None)  # the undo of a creation: as if it never was
    assert store.revisions.list_revisions(second) == [] and store.revisions.deleted_skill_revisions("tock") == []


def test_revisions_are_bounded_per_skill(store: Store) -> None:
    store.max_revisions = 3
    skill_id = create(store, spec())
    for steps in range(2, 7):
        store.skills.replace_skill(skill_id, spec(max_steps=steps), trigger_as_written=None, disabled_reason=None, now=T0)
    assert [r.rev for r in store.revisions.list_revisions(skill_id)] == [6, 5, 4]
    store.skills.delete_skill(skill_id, now=T0)
    assert store.revisions.prune_deleted_revisions(T0 + timedelta(days=1), 100) == 3
    assert store.revisions.list_revisions(skill_id) == []


def test_changes_of_one_skill_at_once_number_their_revisions_one_after_the_other(pg_url: str) -> None:
    store = Store.open(pg_url)
    skill_id = create(store, spec())
    workers = [Store.open(pg_url) for _ in range(4)]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def change(worker: Store, steps: int) -> None:
        barrier.wait()
        try:
            worker.skills.replace_skill(skill_id, spec(max_steps=steps), trigger_as_written=None, disabled_reason=None,
                                        now=T0, by=f"w{steps}")
        except BaseException as e:  # reported below, not swallowed
            errors.append(e)

    threads = [threading.Thread(target=change, args=(workers[i % 4], i + 2)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    revisions = store.revisions.list_revisions(skill_id)
    assert [r.rev for r in revisions] == list(range(9, 0, -1)) and store.skills.get_skill(skill_id).revision == 9
    # Each revision's diff starts where the one before it ended.
    for newer, older in zip(revisions, revisions[1:], strict=False):
        [changed] = newer.diff
        assert changed.before == older.spec["max_steps"] and changed.after == newer.spec["max_steps"]


def test_newest_skills_reads_only_what_changed_and_never_answers_stale(store: Store) -> None:
    ids = [create(store, spec(f"s{i}"), now=T0 + timedelta(minutes=i)) for i in range(4)]
    create(store, spec("other agent's", agent="b"))
    assert [s.id for s in store.skills.newest_skills("a", 3)] == ids[:0:-1]  # newest first, at most 3
    # A change, a delete and a new skill since the last answer are each seen (one store, one cache).
    store.skills.replace_skill(ids[2], spec("s2", instructions="changed"), trigger_as_written=None, disabled_reason=None,
                               now=T0 + timedelta(hours=1))
    store.skills.delete_skill(ids[3])
    newest = create(store, spec("s4"), now=T0 + timedelta(hours=2))
    found = store.skills.newest_skills("a", 3)
    assert [s.id for s in found] == [newest, ids[2], ids[1]]
    assert found[1].instructions == "changed"
    # Another store on the same database (another worker) answers the same.
    assert [s.id for s in Store.open(str(store.engine.url)).skills.newest_skills("a", 3)] == [s.id for s in found]
    # Cut instructions are kept apart from whole ones.
    store.skills.replace_skill(ids[1], spec("s1", instructions="x" * 50), trigger_as_written=None, disabled_reason=None,
                               now=T0 + timedelta(hours=3))
    assert [len(s.instructions) for s in store.skills.newest_skills("a", 3, instruction_chars=10)] == [5, 7, 11]
    assert len(store.skills.newest_skills("a", 3)[2].instructions) == 50
