"""A run always ends: a bug in SkillRun's own code fails the run (recorded, counted, notified) instead
of retrying the workflow task for ever; a run has an execution timeout from its skill's limits; a run
row left `running` past it is closed by Maintenance; a skill whose fires are being skipped behind a
run still going is noticed once.

Real worker, real Temporal dev server, real store; the store rows are written directly only to put
in a value the front door refuses (that is the point: one got in some other way)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from adapters.store import Store
from adapters.store.tables import RunRow, SkillRow
from config.settings import Settings
from skills.display import span
from skills.errors import SkillRunFailed
from skills.messages.maintenance import MaintenanceReport
from skills.run.deadline import RunLimits, run_timeout
from skills.spec.models import RunRecord, Skill
from tests.conftest import ROOT, Engine, eventually, trigger_schedule, write_mcp_config

FAKES = ROOT / "tests" / "fakes"


def _store(settings: Settings) -> Store:
    return Store.open(settings.store_url, schedule_prefix=settings.task_queue)


def _set_columns(settings: Settings, skill_id: int, **values: object) -> None:
    """Write a skill's row as no registration would (the bounds refuse these values at the door)."""
    store = _store(settings)
    with store.session() as session:
        session.execute(update(SkillRow).where(SkillRow.id == skill_id).values(**values))  # type: ignore[arg-type]
        session.commit()


async def _closed_run(engine: Engine, name: str, status: str) -> RunRecord:
    async def probe() -> RunRecord | None:
        runs = [r for r in await engine.skills.runs(name) if r.status == status]
        return runs[0] if runs else None

    return await eventually(probe, timeout=60)


async def test_an_exception_in_the_workflow_code_fails_the_run_instead_of_retrying_for_ever(
        client: Client, engine: Engine) -> None:
    """notify_interval_minutes so large that the completion check overflows inside SkillRun's code,
    after the run was recorded a success: once the workflow task retried for ever (Running, every later
    fire skipped by the overlap policy, nothing recorded, no notice)."""
    skill = (await engine.skills.register({
        "name": "overflowing", "instructions": "x", "schedule": "0 0 1 1 *", "notify_on_completion": True,
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})).skill
    assert skill is not None and skill.schedule_id is not None
    _set_columns(engine.settings, skill.id, notify_interval_minutes=2_000_000_000_000)

    await trigger_schedule(client, skill.schedule_id)
    run = await _closed_run(engine, "overflowing", "error")
    assert run.trigger == "schedule"
    assert run.summary.startswith("internal error: OverflowError: "), run.summary

    # The workflow ended, failed like any failed run, with the recorded run as its details.
    handle = client.get_workflow_handle(run.workflow_id)
    with pytest.raises(WorkflowFailureError) as ended:
        await handle.result()
    cause = ended.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == SkillRunFailed.failure_type()
    assert cause.non_retryable and RunRecord.model_validate(cause.details[0]).status == "error"
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED

    # Counted by the backoff, and notified through the normal failure path.
    stored = await engine.skills.get("overflowing")
    assert stored.consecutive_failures == 1 and stored.backoff_until is not None
    assert stored.last_run_status == "error"
    notices = [m["message"] for m in engine.outbox() if m["message"].startswith("❌")]
    assert len(notices) == 1 and "OverflowError" in notices[0]
    # The schedule is free: nothing is left running to make it skip the next fire.
    info = (await client.get_schedule_handle(skill.schedule_id).describe()).info
    assert not info.running_actions


async def test_every_run_has_an_execution_timeout_from_its_skills_limits(client: Client, engine: Engine) -> None:
    """The schedule's action, an event's run and a manual run each carry the skill's deadline."""
    limits = engine.settings.run_limits
    skill = (await engine.skills.register({
        "name": "timed", "instructions": "x", "schedule": "0 0 1 1 *",
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})).skill
    assert skill is not None and skill.schedule_id is not None
    deadline = run_timeout(skill, limits)
    assert timedelta(minutes=10) < deadline < timedelta(hours=2)
    await _given_as_execution_timeout(client, engine, skill, deadline)

    await engine.skills.register({
        "name": "on-event", "instructions": "x", "trigger_type": "event", "trigger_config": {"event": "ping"},
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "pong"}}]})
    emitted = await engine.skills.emit("ping")
    [started] = emitted.started
    agent = (await engine.skills.get("on-event"))
    described = await client.get_workflow_handle(started.workflow_id).describe()
    assert described.raw_description.execution_config.workflow_execution_timeout.ToTimedelta() == \
        run_timeout(agent, limits)
    # The deadline grows with what a run may do, and is bounded whatever the skill says.
    assert run_timeout(agent.model_copy(update={"execution_plan": None, "max_steps": 10}), RunLimits()) > deadline
    assert run_timeout(agent.model_copy(update={"execution_plan": None, "max_steps": 10**15}),
                       RunLimits()) == timedelta(days=7)


async def test_a_skill_timeout_longer_than_its_calls_sits_under_the_execution_timeout(
        client: Client, engine: Engine) -> None:
    """A one-step skill with `timeout_minutes: 600`: its calls take at most about 50 minutes, and the execution
    timeout used to be just that, so Temporal ended the run (nothing recorded, "timed out" never said) long
    before its own timer. Now the schedule's action and a manual run leave the timer room to fire and close."""
    skill = (await engine.skills.register({
        "name": "patient", "instructions": "x", "schedule": "0 0 1 1 *", "timeout_minutes": 600,
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})).skill
    assert skill is not None and skill.schedule_id is not None
    deadline = run_timeout(skill, engine.settings.run_limits)
    assert deadline > timedelta(minutes=600 + 30)
    await _given_as_execution_timeout(client, engine, skill, deadline)


async def _given_as_execution_timeout(client: Client, engine: Engine, skill: Skill, deadline: timedelta) -> None:
    """The schedule's action and a manual run of ``skill`` both carry ``deadline`` as their execution timeout."""
    assert skill.schedule_id is not None
    action = (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.action
    assert action.execution_timeout == deadline  # type: ignore[attr-defined]
    manual = await engine.skills.run(skill.id)
    assert isinstance(manual, RunRecord)
    described = await client.get_workflow_handle(manual.workflow_id).describe()
    assert described.raw_description.execution_config.workflow_execution_timeout.ToTimedelta() == deadline


@pytest.fixture
def slow_log(tmp_path: Path) -> Path:
    return tmp_path / "slow.log"


@pytest.fixture
async def slow_engine(client: Client, settings: Settings, slow_log: Path,
                      tmp_path: Path) -> AsyncIterator[Engine]:
    """A worker with the slow server's `slow_slow(seconds, message)`: a run that is still going."""
    config = write_mcp_config(tmp_path / "mcp.json", {"slow": {
        "command": sys.executable, "args": [str(FAKES / "slow_server.py")], "env": {"FAKE_SLOW_LOG": str(slow_log)}}})
    running = await Engine(settings.model_copy(update={"mcp_config": config, "overlap_notice_fires": 1}),
                           client).start()
    yield running
    await running.stop()


def _held(name: str, schedule: str = "0 0 1 1 *") -> dict[str, object]:
    """A skill whose run holds on a 10-minute tool call."""
    return {"name": name, "instructions": "x", "schedule": schedule, "notify_on_completion": False,
            "execution_plan": [{"toolName": "slow_slow", "parameters": {"seconds": 600, "message": name}}]}


async def _running_run(engine: Engine, name: str, slow_log: Path) -> RunRecord:
    """The skill's run once it is inside its slow call."""
    await eventually(lambda: slow_log.exists() and f"start {name}" in slow_log.read_text().splitlines(), timeout=60)
    [run] = await engine.skills.runs(name)
    assert run.status == "running"
    return run


async def _maintenance(client: Client, engine: Engine) -> MaintenanceReport:
    """A maintenance round, fired by its schedule, and what it reported."""
    handle = client.get_schedule_handle(f"{engine.settings.task_queue}-maintenance")
    before = {a.action.workflow_id for a in (await handle.describe()).info.recent_actions}  # type: ignore[attr-defined]
    await trigger_schedule(client, handle.id)

    async def started() -> str | None:
        ids = {a.action.workflow_id for a in (await handle.describe()).info.recent_actions} - before  # type: ignore[attr-defined]
        return ids.pop() if ids else None

    workflow_id = await eventually(started, timeout=30)
    result: Any = await client.get_workflow_handle(workflow_id).result()
    return MaintenanceReport.model_validate(result)


async def test_a_run_whose_workflow_ended_without_recording_it_is_closed_by_maintenance(
        client: Client, slow_engine: Engine, slow_log: Path) -> None:
    """A run's workflow terminated in the middle of a call (as a store outage longer than finish_run's
    retries, or a timeout, would end it): its row stayed `running` for ever, with no notice. Past the
    run's deadline the maintenance round closes it as an error, counts it once and sends its notice."""
    engine = slow_engine
    skill = (await engine.skills.register(_held("held"))).skill
    assert skill is not None and skill.schedule_id is not None
    await trigger_schedule(client, skill.schedule_id)
    run = await _running_run(engine, "held", slow_log)
    await client.get_workflow_handle(run.workflow_id).terminate("the test ends it mid-run")

    # Within its deadline the run may still be going somewhere: left alone. This is where a run whose
    # workflow ended without recording it stayed for ever: `running`, uncounted, and nobody told.
    assert (await _maintenance(client, engine)).closed == []
    assert [r.status for r in await engine.skills.runs("held")] == ["running"]
    assert engine.outbox() == [] and (await engine.skills.get("held")).consecutive_failures == 0

    # Past it (the row's start moved back, as time would), closed as an error with the reason.
    deadline = run_timeout(skill, engine.settings.run_limits)
    store = _store(engine.settings)
    with store.session() as session:
        session.execute(update(RunRow).where(RunRow.run_id == run.run_id)  # type: ignore[arg-type]
                        .values(started_at=run.started_at - deadline - timedelta(minutes=1)))
        session.commit()
    report = await _maintenance(client, engine)
    assert report.closed == [run.run_id]
    [closed] = await engine.skills.runs("held")
    reason = f"no end recorded within {span(deadline)}: the run's workflow ended without recording it"
    assert (closed.status, closed.summary) == ("error", reason) and closed.finished_at is not None
    stored = await engine.skills.get("held")
    assert stored.consecutive_failures == 1 and stored.last_run_status == "error"
    notices = [m["message"] for m in engine.outbox()]
    assert len(notices) == 1 and notices[0].startswith(f"❌ held: {reason}. Scheduled fires resume after ")

    # Counted once, notified once.
    assert (await _maintenance(client, engine)).closed == []
    assert (await engine.skills.get("held")).consecutive_failures == 1 and len(engine.outbox()) == 1


async def test_a_skill_whose_fires_are_skipped_behind_a_run_still_going_gets_one_notice(
        client: Client, slow_engine: Engine, slow_log: Path) -> None:
    """A run that holds its schedule: every later fire is skipped by the overlap policy, and until now
    nothing said so before the next run started. Past `overlap_notice_fires` skipped fires (1 here), the
    maintenance round sends one notice for that run, not one per round."""
    engine = slow_engine
    skill = (await engine.skills.register(_held("every-minute", "* * * * *"))).skill
    assert skill is not None and skill.schedule_id is not None
    schedule = client.get_schedule_handle(skill.schedule_id)
    await trigger_schedule(client, skill.schedule_id)
    run = await _running_run(engine, "every-minute", slow_log)
    try:
        # Nothing skipped yet: nothing to say.
        assert (await _maintenance(client, engine)).stuck == []
        # The next minute's fire, skipped by Temporal because the run is still going.
        await eventually(lambda: _skipped(schedule), timeout=75, interval=1)
        assert (await _maintenance(client, engine)).stuck == ["every-minute"]
        notices = [m["message"] for m in engine.outbox()]
        assert len(notices) == 1 and notices[0].startswith("⏳ every-minute: its run started ")
        assert "scheduled fire since were skipped behind it" in notices[0] and run.workflow_id in notices[0]
        # One notice for the episode, however many rounds see it.
        assert (await _maintenance(client, engine)).stuck == []
        assert len(engine.outbox()) == 1
    finally:
        await client.get_workflow_handle(run.workflow_id).terminate("test over")


async def _skipped(schedule: Any) -> bool:
    return (await schedule.describe()).info.num_actions_skipped_overlap >= 1


async def test_a_waiting_run_is_not_closed_for_a_deadline_its_skill_was_given_after_it_started(
        client: Client, engine: Engine) -> None:
    """A run waiting for the owner with a week to wait (its workflow's deadline says so); its skill is then
    updated to wait 5 minutes. The round reckoned the deadline from the skill as it is now: the 3-hour-old
    row was past it, so it was closed as an error while its workflow went on waiting. A row is closed
    only once its workflow is no longer running."""
    await engine.skills.register({
        "name": "patient approval", "instructions": "x", "approval_timeout_minutes": 7 * 24 * 60,
        "notify_on_completion": False, "approval_required_tools": ["outbox_send_message"],
        "execution_plan": [{"id": "send", "toolName": "outbox_send_message", "parameters": {"message": "hi"}}]})
    workflow_id = await engine.skills.run("patient approval", wait=False)
    assert isinstance(workflow_id, str)
    [approval] = await eventually(engine.skills.approvals, timeout=30)
    [run] = await engine.skills.runs("patient approval")
    assert run.status == "waiting"
    await engine.skills.update("patient approval", {"approval_timeout_minutes": 5})
    # Three hours in (the row's start moved back, as time would): past the deadline reckoned from the
    # skill as it is now, well within the one its workflow runs under.
    updated = await engine.skills.get("patient approval")
    assert run_timeout(updated, engine.settings.run_limits) < timedelta(hours=3)
    store = _store(engine.settings)
    with store.session() as session:
        session.execute(update(RunRow).where(RunRow.run_id == run.run_id)  # type: ignore[arg-type]
                        .values(started_at=run.started_at - timedelta(hours=3)))
        session.commit()
    handle = client.get_workflow_handle(workflow_id)
    # How the round knows the chain is this row's (an Agent loop continues as new under a new run id).
    assert (await handle.describe()).raw_description.workflow_execution_info.first_run_id == run.run_id
    try:
        assert (await _maintenance(client, engine)).closed == []
        assert [r.status for r in await engine.skills.runs("patient approval")] == ["waiting"]
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        assert engine.outbox() == [] and (await engine.skills.get("patient approval")).consecutive_failures == 0
        # Once its workflow has ended without recording it, the next round closes the row.
        await handle.terminate("the test ends it while it waits")
        assert (await _maintenance(client, engine)).closed == [run.run_id]
        [closed] = await engine.skills.runs("patient approval")
        assert closed.status == "error" and closed.summary.startswith("no end recorded within ")
    finally:
        if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await handle.terminate("test over")


async def _inside_a_minute() -> None:
    """Register and trigger well inside a minute: a run started by the minute's own fire would not be the test's."""
    await eventually(lambda: 2 <= datetime.now(UTC).second < 30, timeout=60, interval=0.2)


async def test_a_skill_that_allows_overlap_skips_nothing_and_gets_no_notice(
        client: Client, slow_engine: Engine, slow_log: Path) -> None:
    """With `overlap: allow` the next fire starts a run of its own beside the one still going: nothing was
    skipped. The round counted it skipped all the same, and sent the "skipped behind it" notice; with two runs
    going the per-skill record flipped between them, a notice again each round."""
    engine = slow_engine
    await _inside_a_minute()
    skill = (await engine.skills.register({**_held("side by side", "* * * * *"), "overlap": "allow"})).skill
    assert skill is not None and skill.schedule_id is not None
    await trigger_schedule(client, skill.schedule_id)
    first = await _running_run(engine, "side by side", slow_log)
    try:
        # The next minute's fire: a second run, going beside the first.
        await eventually(lambda: _open_runs(engine, "side by side", 2), timeout=75, interval=1)
        info = (await client.get_schedule_handle(skill.schedule_id).describe()).info
        assert info.num_actions_skipped_overlap == 0
        for _ in range(2):
            assert (await _maintenance(client, engine)).stuck == []
        assert engine.outbox() == []
    finally:
        await engine.skills.pause("side by side")
        for run in [first, *await engine.skills.runs("side by side")]:
            handle = client.get_workflow_handle(run.workflow_id)
            if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handle.terminate("test over")


async def test_a_fire_buffered_behind_a_run_is_not_counted_skipped(
        client: Client, slow_engine: Engine, slow_log: Path) -> None:
    """With `overlap: buffer_one` the first fire behind a run still going is held to start when it ends: not
    skipped. Only the ones after it are, and the notice counts those."""
    engine = slow_engine
    await _inside_a_minute()
    skill = (await engine.skills.register({**_held("buffered", "* * * * *"), "overlap": "buffer_one"})).skill
    assert skill is not None and skill.schedule_id is not None
    schedule = client.get_schedule_handle(skill.schedule_id)
    await trigger_schedule(client, skill.schedule_id)
    run = await _running_run(engine, "buffered", slow_log)
    try:
        await eventually(lambda: _buffered(schedule), timeout=75, interval=1)
        assert (await schedule.describe()).info.num_actions_skipped_overlap == 0
        assert (await _maintenance(client, engine)).stuck == []
        assert engine.outbox() == []
        # The minute after: one buffered already, this one is skipped.
        await eventually(lambda: _skipped(schedule), timeout=75, interval=1)
        assert (await _maintenance(client, engine)).stuck == ["buffered"]
        [notice] = [m["message"] for m in engine.outbox()]
        assert "and 1 scheduled fire since were skipped behind it" in notice, notice
        assert (await _maintenance(client, engine)).stuck == [] and len(engine.outbox()) == 1
    finally:
        await engine.skills.delete("buffered")  # its schedule with it: the buffered fire never starts
        await client.get_workflow_handle(run.workflow_id).terminate("test over")


async def _open_runs(engine: Engine, name: str, count: int) -> bool:
    return [r.status for r in await engine.skills.runs(name)] == ["running"] * count


async def _buffered(schedule: Any) -> bool:
    return (await schedule.describe()).raw_description.info.buffer_size >= 1


async def test_runs_waiting_for_the_owner_do_not_hide_a_stuck_skill(
        client: Client, slow_engine: Engine, slow_log: Path) -> None:
    """The round looks at a bounded batch of open runs, oldest first. Runs waiting for the owner may wait for
    days, and are never stuck: 500 of them filled the batch, and a skill stuck behind a newer run went
    unnoticed."""
    engine = slow_engine
    waiter = (await engine.skills.register({
        "name": "waits", "instructions": "x", "approval_required_tools": ["outbox_send_message"],
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "hi"}}]})).skill
    assert waiter is not None
    store = _store(engine.settings)
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    for i in range(500):  # as many runs would have left them (none has a workflow: they are not closed here)
        store.runs.start_run(RunRecord(run_id=f"waiting-{i}", skill_id=waiter.id, skill_name="waits",
                                       workflow_id=f"waiting-{i}", trigger="manual", started_at=long_ago,
                                       status="waiting", tier="direct"))
    await _inside_a_minute()
    skill = (await engine.skills.register(_held("hidden", "* * * * *"))).skill
    assert skill is not None and skill.schedule_id is not None
    await trigger_schedule(client, skill.schedule_id)
    run = await _running_run(engine, "hidden", slow_log)
    try:
        await eventually(lambda: _skipped(client.get_schedule_handle(skill.schedule_id)), timeout=75, interval=1)
        assert (await _maintenance(client, engine)).stuck == ["hidden"]
    finally:
        await client.get_workflow_handle(run.workflow_id).terminate("test over")


async def test_a_rehearsal_left_open_is_closed_without_counting_or_telling(client: Client, engine: Engine) -> None:
    """A rehearsal whose workflow ended without recording it: the round closes its row like any run's, and
    nothing more (no failure counted on the skill it rehearsed, no incident, no notice)."""
    skill = (await engine.skills.register({"name": "tried", "instructions": "x", "schedule": "0 9 * * *",
                                           "execution_plan": [{"toolName": "outbox_send_message",
                                                               "parameters": {"message": "hi"}}]})).skill
    assert skill is not None
    store = _store(engine.settings)
    long_ago = datetime.now(UTC) - timedelta(days=2)
    store.runs.start_run(RunRecord(run_id="rehearsal-lost", skill_id=skill.id, skill_name="tried",
                                   workflow_id="rehearsal-that-is-gone", trigger="rehearsal", started_at=long_ago,
                                   tier="direct"))
    report = await _maintenance(client, engine)
    assert report.closed == []  # nothing to tell
    [closed] = [r for r in await engine.skills.runs("tried") if r.run_id == "rehearsal-lost"]
    assert closed.status == "error" and "no end recorded" in closed.summary
    after = await engine.skills.get("tried")
    assert (after.consecutive_failures, after.last_run_at) == (0, None)
    assert engine.outbox() == [] and await engine.skills.incidents("tried") == []
