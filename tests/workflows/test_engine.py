"""End to end on a real dev server: register -> Temporal Schedule -> fire -> Direct-tier tool call."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.client import Client, ScheduleOverlapPolicy, WorkflowExecution, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from client import SkillsClient
from search_attributes import SKILL_AGENT, SKILL_NAME, SKILL_TIER
from skills.errors import SkillNotFoundError, SkillValidationError, WorkerUnavailableError, WorkflowInputError
from skills.messages.agent import AgentLoopState
from skills.messages.run import AgentResume, RunStart, SkillRunInput
from skills.spec.models import RunRecord
from tests.conftest import Engine, eventually, schedule_exists
from tests.fakes.llm_server import ScriptedLLM, say


def reminder(name: str = "drink water", message: str = "Drink water!", **trigger: object) -> dict[str, object]:
    return {
        "name": name,
        "instructions": "Remind the user to drink water",
        "execution_plan": [{"id": "remind", "toolName": "outbox_send_message", "parameters": {"message": message}}],
        "notify_on_completion": False,
        **trigger,
    }


def soon(seconds: int = 3) -> dict[str, float]:
    """A one-shot a few seconds ahead, counted from when the registration is normalized
    (an absolute `at` computed here could be in the past by then on a busy machine)."""
    return {"in_minutes": seconds / 60}


async def test_a_registered_one_shot_fires_through_its_schedule(engine: Engine, client: Client) -> None:
    result = await engine.skills.register(reminder(**soon(3)))
    skill = result.skill
    assert skill is not None and skill.tier == "direct" and skill.schedule_id == f"{engine.settings.task_queue}-{skill.id}-drink-water"
    assert result.next_fire is not None

    messages = await eventually(engine.outbox, timeout=30)
    assert [m["message"] for m in messages] == ["Drink water!"]

    runs = await eventually(lambda: _finished_runs(engine), timeout=30)
    assert runs[0].status == "success" and runs[0].trigger == "schedule" and runs[0].scheduled_at is not None
    assert runs[0].tool_calls[0].tool == "outbox_send_message" and runs[0].tool_calls[0].ok
    assert (await engine.skills.get("drink water")).last_run_status == "success"

    # The run is visible the way a user would look for it.
    query = f"SkillName = 'drink water' AND TaskQueue = '{engine.settings.task_queue}'"
    async def listed_runs() -> list[WorkflowExecution]:  # visibility lags a moment behind the run
        return [w async for w in client.list_workflows(query)]

    listed = await eventually(listed_runs, timeout=30)
    assert len(listed) == 1 and listed[0].id.startswith(skill.schedule_id)
    assert listed[0].typed_search_attributes.get(SKILL_TIER) == "direct"


async def test_the_schedule_carries_the_skill(engine: Engine, client: Client) -> None:
    result = await engine.skills.register(reminder(schedule="*/5 * * * *", agentId="main"))
    assert result.skill is not None and result.skill.schedule_id is not None
    description = await client.get_schedule_handle(result.skill.schedule_id).describe()
    attributes = description.typed_search_attributes
    assert (attributes.get(SKILL_NAME), attributes.get(SKILL_AGENT), attributes.get(SKILL_TIER)) == (
        "drink water", "main", "direct")
    assert await description.memo_value("trigger") == {"schedule": "*/5 * * * *"}
    assert description.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
    assert description.schedule.policy.catchup_window == engine.settings.catchup_window
    times = description.info.next_action_times
    # A reminder (a Direct plan) is not spread: each fire at its exact time.
    assert description.schedule.spec.jitter is None
    assert times and all(t.minute % 5 == 0 and t.second == 0 for t in times)


async def test_a_refused_registration_stores_nothing(engine: Engine, client: Client) -> None:
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.register(reminder(schedule="0 25 * * *", required_tools=["outbox_send_mesage"]))
    fields = {e.field for e in refused.value.errors}
    assert fields == {"trigger_config.schedule", "required_tools"}
    assert await engine.skills.list() == []
    assert not await schedule_exists(client, f"{engine.settings.task_queue}-1-drink-water")


async def test_a_duplicate_name_is_refused_and_the_first_skill_kept(engine: Engine) -> None:
    first = await engine.skills.register(reminder(schedule="0 9 * * *"))
    with pytest.raises(SkillValidationError, match="already has a skill named 'drink water'"):
        await engine.skills.register(reminder(schedule="0 10 * * *"))
    kept = await engine.skills.get("drink water")
    assert first.skill is not None and kept.id == first.skill.id
    assert kept.trigger_config is not None and kept.trigger_config.schedule == "0 9 * * *"


async def test_update_rename_pause_resume_delete(engine: Engine, client: Client) -> None:
    created = (await engine.skills.register(reminder(schedule="0 9 * * *"))).skill
    assert created is not None and created.schedule_id is not None

    updated = (await engine.skills.update("drink water", {"cron": "30 7 * * 1-5", "name": "hydrate"})).skill
    assert updated is not None and updated.id == created.id and updated.schedule_id == f"{engine.settings.task_queue}-{created.id}-hydrate"
    assert not await schedule_exists(client, created.schedule_id)
    assert await schedule_exists(client, updated.schedule_id)
    description = await client.get_schedule_handle(updated.schedule_id).describe()
    assert await description.memo_value("trigger") == {"schedule": "30 7 * * 1-5"}
    assert all(t.hour == 7 and timedelta(0) <= t - t.replace(minute=30, second=0, microsecond=0) <= timedelta(minutes=5)
               and t.weekday() < 5 for t in description.info.next_action_times)

    paused = await engine.skills.pause("hydrate")
    assert not paused.enabled and paused.disabled_reason == "by user"
    state = (await client.get_schedule_handle(updated.schedule_id).describe()).schedule.state
    assert state.paused and state.note == "disabled: by user"

    resumed = await engine.skills.resume(str(created.id))
    assert resumed.enabled and resumed.disabled_reason is None
    assert not (await client.get_schedule_handle(updated.schedule_id).describe()).schedule.state.paused

    await engine.skills.delete("hydrate")
    with pytest.raises(SkillNotFoundError):
        await engine.skills.get("hydrate")
    assert not await schedule_exists(client, updated.schedule_id)


async def test_a_manual_skill_has_no_schedule_and_runs_on_demand(engine: Engine, client: Client) -> None:
    skill = (await engine.skills.register(reminder(name="ping", message="pong"))).skill
    assert skill is not None and skill.trigger_type == "manual" and skill.schedule_id is None
    assert not await schedule_exists(client, f"{engine.settings.task_queue}-{skill.id}-ping")

    run = await engine.skills.run("ping")
    assert run.status == "success" and run.trigger == "manual"
    assert [m["message"] for m in engine.outbox()] == ["pong"]
    assert [r.run_id for r in await engine.skills.runs("ping")] == [run.run_id]


async def test_a_tool_error_fails_the_run(engine: Engine) -> None:
    # Arguments the schema accepts (a missing one is refused at registration), that the tool refuses.
    await engine.skills.register(
        {"name": "broken", "instructions": "x",
         "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "  ", "chat_id": "c1"}}]}
    )
    run = await engine.skills.run("broken")
    assert run.status == "error" and "outbox_send_message failed" in run.summary
    assert "message is empty" in run.summary
    # A failure that opens an incident notifies, through the notifier (the outbox by default).
    [incident] = await engine.skills.incidents("broken")
    assert [m["message"] for m in engine.outbox()] == [
        f"❌ broken: {run.summary}. Incident {incident.id}: while it fails the same way you hear nothing more; "
        f"`skills incidents` shows it, `skills runs {run.skill_id}` every run."]


async def test_a_worker_restarted_between_registration_and_fire(engine: Engine, client: Client) -> None:
    await engine.skills.register(reminder(**soon(6)))
    await engine.stop()
    assert engine.outbox() == []

    restarted = await Engine(engine.settings, client).start()
    try:
        messages = await eventually(restarted.outbox, timeout=40)
        assert [m["message"] for m in messages] == ["Drink water!"]
    finally:
        await restarted.stop()


async def _finished_runs(engine: Engine):  # noqa: ANN202
    runs = await engine.skills.runs()
    return runs if runs and all(r.status != "running" for r in runs) else None


async def test_a_plan_pipes_an_earlier_result_into_a_later_step(engine: Engine) -> None:
    await engine.skills.register(reminder(name="first", message="hello from the past"))
    await engine.skills.run("first")
    result = await engine.skills.register({
        "name": "echo last", "instructions": "Repeat the newest outbox message", "notify_on_completion": False,
        "execution_plan": [
            {"id": "fetch", "toolName": "outbox_list_messages", "parameters": {"limit": "1"}},
            {"id": "send", "toolName": "outbox_send_message",
             "parameters": {"message": "Last: {{steps.fetch.messages.0.message}}"}},
        ],
    })
    assert result.skill is not None and result.skill.tier == "direct"
    run = await engine.skills.run("echo last")
    assert run.status == "success" and run.prompt_tokens == 0
    assert engine.outbox()[-1]["message"] == "Last: hello from the past"
    # "1" became 1 on the way to the tool, and the run says so.
    assert run.tool_calls[0].adjusted and "limit" in run.tool_calls[0].adjusted[0]

    await engine.skills.update("echo last", {"execution_plan": [
        {"id": "fetch", "toolName": "outbox_list_messages", "parameters": {"limit": 1}},
        {"id": "send", "toolName": "outbox_send_message", "parameters": {"message": "{{fetch.nothing.here}}"}},
    ]})
    failed = await engine.skills.run("echo last")
    assert failed.status == "error" and "step send could not be prepared" in failed.summary
    assert "has no 'nothing.here'" in failed.summary


async def test_with_no_worker_a_chat_turn_says_so_soon(client: Client) -> None:
    """Within WORKER_GRACE, not after the chat turn's 15-minute timeout."""
    queue = f"nobody-{uuid.uuid4().hex[:8]}"
    with pytest.raises(WorkerUnavailableError) as refused:
        await SkillsClient(client, queue).chat("remind me in 5 minutes to stretch")
    assert f"no worker is polling task queue '{queue}'" in str(refused.value)
    assert "`skills worker`" in str(refused.value)


async def test_a_run_started_with_an_input_it_cannot_run_fails_instead_of_retrying(engine: Engine,
                                                                                    client: Client) -> None:
    """A bad input is not a fault a retry fixes: the run fails at once, non-retryable, with the
    engine's own failure type and a message that says what is wrong (not a bare assert)."""
    now = datetime.now(UTC)
    bad = SkillRunInput(skill_id=1, resume=AgentResume(
        start=RunStart(skill=None, run=None),
        run=RunRecord(run_id="r", skill_id=1, skill_name="x", workflow_id="w", started_at=now, tier="agent"),
        loop=AgentLoopState(conversation_id="c", model="m", tools=[])))
    with pytest.raises(WorkflowFailureError) as failed:
        await client.execute_workflow("SkillRun", bad, id=f"bad-input-{uuid.uuid4().hex[:8]}",
                                      task_queue=engine.settings.task_queue, execution_timeout=timedelta(seconds=60))
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == WorkflowInputError.failure_type()
    assert cause.non_retryable and "must carry its skill" in cause.message


async def test_a_server_too_busy_to_say_whether_a_worker_polls_does_not_fail_the_chat(
        assistant: Engine, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    # Seen under load: the dev server answered the client's "is a worker polling?" with CANCELLED, and the
    # chat turn failed before it started. That check is a courtesy; the turn itself was never in doubt.
    service = assistant.skills.client.workflow_service
    real, refused = service.describe_task_queue, []

    async def busy(*args: Any, **kwargs: Any) -> Any:
        if len(refused) < 2:
            refused.append(args)
            raise RPCError("operation was canceled", RPCStatusCode.CANCELLED, b"")
        return await real(*args, **kwargs)

    monkeypatch.setattr(service, "describe_task_queue", busy)
    llm.script("chat", [say("Hello!")])
    reply = await assistant.skills.chat("hi", session_id="busy")
    assert len(refused) == 2 and reply.ok and reply.reply == "Hello!", reply
