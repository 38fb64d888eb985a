"""A run always ends: a bug in SkillRun's own code fails the run (recorded, counted, notified) instead
of retrying the workflow task for ever; a run has an execution timeout from its skill's limits; a run
row left `running` past it is closed by Maintenance; a skill whose fires are being skipped behind a
run still going is noticed once.

Real worker, real Temporal dev server, real store; the store rows are written directly only to put
in a value the front door refuses (that is the point: one got in some other way)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.store import Store
from activities.tables import SkillRow
from config.settings import Settings
from skills.deadline import RunLimits, run_timeout
from skills.errors import SkillRunFailed
from skills.models import RunRecord
from tests.conftest import Engine, eventually, trigger_schedule


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
    action = (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.action
    assert action.execution_timeout == deadline  # type: ignore[attr-defined]

    manual = await engine.skills.run("timed")
    assert isinstance(manual, RunRecord)
    described = await client.get_workflow_handle(manual.workflow_id).describe()
    assert described.raw_description.execution_config.workflow_execution_timeout.ToTimedelta() == deadline

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
