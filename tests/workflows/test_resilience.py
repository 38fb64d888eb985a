"""Runs that look after themselves: durable backoff, auto-disable, pre-flight, notifications, one-shots."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from skills.errors import SkillValidationError
from skills.spec.models import RunRecord, Skill
from tests.conftest import ROOT, Engine, eventually, schedule_exists, trigger_schedule, write_mcp_config
from tests.fakes.llm_server import ScriptedLLM, call, say

FAKES = ROOT / "tests" / "fakes"


def broken(name: str = "broken", **extra: object) -> dict[str, object]:
    """A Direct skill whose only call always fails (the outbox refuses a message without text)."""
    return {"name": name, "instructions": "x", "schedule": "0 0 1 1 *", "notify_on_completion": False,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": " ", "chat_id": "c"}}],
            **extra}


async def fire(client: Client, engine: Engine, schedule_id: str) -> RunRecord:
    """Trigger the skill's schedule (a real scheduled fire) and return that fire's run."""
    previous = {r.run_id for r in await engine.skills.runs(limit=100)}
    await trigger_schedule(client, schedule_id)
    return await eventually(lambda: _new_scheduled_run(engine, previous), timeout=30)


async def _new_scheduled_run(engine: Engine, previous: set[str]) -> RunRecord | None:
    new = [r for r in await engine.skills.runs(limit=100) if r.run_id not in previous and r.trigger == "schedule"]
    return new[0] if new and new[0].status != "running" else None


@pytest.fixture
def backoff_settings(settings: Settings) -> Settings:
    # The first window is long enough that a fire right after a failure is always inside it.
    return settings.model_copy(update={"backoff_steps": [timedelta(seconds=60), timedelta(seconds=1)],
                                       "failure_limit": 5})


async def test_backoff_skips_scheduled_fires_and_the_limit_disables(client: Client, backoff_settings: Settings) -> None:
    engine = await Engine(backoff_settings, client).start()
    try:
        skill = (await engine.skills.register(broken())).skill
        assert skill is not None and skill.schedule_id is not None

        run = await fire(client, engine, skill.schedule_id)
        assert run.status == "error"
        stored = await engine.skills.get("broken")
        assert stored.consecutive_failures == 1 and stored.last_error and stored.last_failure_at

        run = await fire(client, engine, skill.schedule_id)
        assert run.status == "skipped" and run.summary.startswith("backoff: 1 consecutive failure")
        assert (await engine.skills.get("broken")).consecutive_failures == 1  # a skip changes nothing

        # A manual run is never skipped by backoff, but its result counts.
        for expected in (2, 3, 4):
            run = await engine.skills.run("broken")
            assert run.status == "error" and run.trigger == "manual"
            assert (await engine.skills.get("broken")).consecutive_failures == expected
        assert (await engine.skills.get("broken")).enabled

        await engine.skills.run("broken")
        disabled = await engine.skills.get("broken")
        assert (disabled.enabled, disabled.disabled_reason, disabled.consecutive_failures) == (False, "failures", 5)
        state = (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.state
        assert state.paused and state.note.startswith("disabled: failures (5 in a row); last error: outbox_send_message")
        messages = [m["message"] for m in engine.outbox()]
        # Failures 1-4 have one cause: one incident, one notice when it opened.
        assert sum(m.startswith("❌ broken") for m in messages) == 1
        assert messages[-1].startswith("⛔ broken was disabled (5 consecutive failures). Last error:")

        # A fire of the paused schedule (an operator's trigger) is accounted as skipped.
        run = await fire(client, engine, skill.schedule_id)
        assert run.status == "skipped" and run.summary == "disabled: failures"

        # Fixed and resumed, a success resets the count.
        await engine.skills.update("broken", {"execution_plan": [
            {"toolName": "outbox_send_message", "parameters": {"message": "fixed"}}]})
        await engine.skills.resume("broken")
        assert (await engine.skills.run("broken")).status == "success"
        healed = await engine.skills.get("broken")
        assert healed.enabled and healed.consecutive_failures == 0 and healed.disabled_reason is None
    finally:
        await engine.stop()


async def test_an_incident_is_told_once_when_it_opens_and_once_when_it_recovers(client: Client,
                                                                               settings: Settings) -> None:
    engine = await Engine(settings.model_copy(update={"failure_limit": 10}), client).start()
    try:
        skill = (await engine.skills.register(broken())).skill
        assert skill is not None
        for _ in range(3):
            assert (await engine.skills.run("broken")).status == "error"
        [incident] = await engine.skills.incidents()
        assert (incident.skill_name, incident.failures, incident.open) == ("broken", 3, True)
        assert incident.first_error.startswith("outbox_send_message failed")

        # Another cause: the open incident closes, a new one opens (and is told).
        await engine.skills.update("broken", {"execution_plan": [
            {"toolName": "outbox_list_messages", "parameters": {"limit": 0}}]})
        assert (await engine.skills.run("broken")).status == "error"
        # Fixed: the next success closes it, and says so once.
        await engine.skills.update("broken", {"execution_plan": [
            {"toolName": "outbox_send_message", "parameters": {"message": "fixed", "chat_id": "c"}}]})
        assert (await engine.skills.run("broken")).status == "success"
        assert (await engine.skills.run("broken")).status == "success"

        notices = [m["message"] for m in engine.outbox() if m["message"] != "fixed"]
        assert len(notices) == 3, notices
        assert notices[0].startswith("❌ broken: outbox_send_message failed") and f"Incident {incident.id}:" in notices[0]
        assert notices[1].startswith("❌ broken: ") and "outbox_list_messages" in notices[1]
        assert notices[2].startswith(f"✅ broken recovered: incident {incident.id + 1} lasted ")
        assert "(1 failed run, " in notices[2]
        assert await engine.skills.incidents() == []
        closed = await engine.skills.incidents("broken", closed=True)
        assert [(i.id, i.closed_by, i.failures) for i in closed] == [
            (incident.id + 1, "recovered", 1), (incident.id, "cause changed", 3)]
    finally:
        await engine.stop()


async def test_failure_count_survives_a_worker_restart(client: Client, backoff_settings: Settings) -> None:
    engine = await Engine(backoff_settings, client).start()
    skill = (await engine.skills.register(broken())).skill
    assert skill is not None and skill.schedule_id is not None
    await engine.skills.run("broken")
    await engine.stop()

    restarted = await Engine(backoff_settings, client).start()
    try:
        assert (await restarted.skills.get("broken")).consecutive_failures == 1
        run = await fire(client, restarted, skill.schedule_id)
        assert run.status == "skipped" and run.summary.startswith("backoff")
    finally:
        await restarted.stop()


@pytest.fixture
def gmail(tmp_path: Path, settings: Settings) -> tuple[Path, Settings]:
    state = tmp_path / "gmail.json"
    config = write_mcp_config(tmp_path / "mcp.json", {
        "gmail": {"command": sys.executable, "args": [str(FAKES / "gmail_server.py")],
                  "env": {"FAKE_GMAIL_STATE": str(state)}},
    })
    return state, settings.model_copy(update={"mcp_config": config})


def calls(state: Path) -> list[dict[str, object]]:
    path = Path(f"{state}.calls.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_automatic_preflight_skips_a_meeting_skill_without_events(client: Client,
                                                                         gmail: tuple[Path, Settings]) -> None:
    state, settings = gmail
    engine = await Engine(settings, client).start()
    try:
        result = await engine.skills.register({
            "name": "Meeting prep", "instructions": "Prepare me for my next meeting",
            "required_tools": ["gmail_list_events"], "notify_on_completion": False,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "meeting soon"}}],
        })
        assert result.skill is not None
        assert [c.tool for c in result.skill.preflight] == ["gmail_list_events"] and result.skill.preflight[0].automatic
        assert "pre-flight check added: skip when no calendar events in the next 2 hours" in result.notes

        run = await engine.skills.run("Meeting prep")
        assert (run.status, run.summary) == ("skipped", "pre-flight: no calendar events in the next 2 hours")
        assert engine.outbox() == [] and run.prompt_tokens == 0
        window = calls(state)[0]["arguments"]
        start, end = (datetime.fromisoformat(window[k]) for k in ("timeMin", "timeMax"))
        assert end - start == timedelta(hours=2) and abs(start - datetime.now(UTC)) < timedelta(minutes=1)

        state.write_text(json.dumps({"events": [{"summary": "1:1"}]}))
        run = await engine.skills.run("Meeting prep")
        assert run.status == "success" and [m["message"] for m in engine.outbox()] == ["meeting soon"]
    finally:
        await engine.stop()


async def test_declared_preflight_with_a_path(client: Client, gmail: tuple[Path, Settings]) -> None:
    state, settings = gmail
    engine = await Engine(settings, client).start()
    try:
        await engine.skills.register({
            "name": "inbox zero", "instructions": "Tell me when the inbox is empty", "notify_on_completion": False,
            "preflight": [{"toolName": "gmail_get_new_emails", "skipIf": "not empty", "path": "emails",
                           "description": "there are new emails"}],
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "inbox zero!"}}],
        })
        state.write_text(json.dumps({"new_emails": [{"subject": "hi"}]}))
        run = await engine.skills.run("inbox zero")
        assert (run.status, run.summary) == ("skipped", "pre-flight: there are new emails")
        state.write_text(json.dumps({"new_emails": []}))
        run = await engine.skills.run("inbox zero")
        assert run.status == "success"
        # Every call carries its idempotency key: the run's (a manual run: its workflow id), then the place.
        prefix = f"skill-{run.skill_id}/run-{run.workflow_id}"
        assert [(c.step_id, c.idempotency_key) for c in run.tool_calls] == [
            ("preflight-1", f"{prefix}/preflight-1/1"), ("step1", f"{prefix}/step-step1/1")]
        assert [m["idempotency_key"] for m in engine.outbox()] == [f"{prefix}/step-step1/1"]
    finally:
        await engine.stop()


async def test_completion_notifications_are_throttled(client: Client, settings: Settings) -> None:
    engine = await Engine(settings.model_copy(update={"notify_interval": timedelta(hours=1)}), client).start()
    try:
        await engine.skills.register({
            "name": "tea", "instructions": "tea", "notify_on_completion": True,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Tea time"}}],
        })
        await engine.skills.run("tea")
        await engine.skills.run("tea")
        messages = [m["message"] for m in engine.outbox()]
        assert messages.count("Tea time") == 2
        notes = [m for m in messages if m.startswith("✅ tea: outbox_send_message: Message")]
        assert len(notes) == 1
        [note] = [m for m in engine.outbox() if m["message"] in notes]
        assert note["idempotency_key"].startswith("skill-") and note["idempotency_key"].endswith("/notify/1")
        assert (await engine.skills.get("tea")).last_notified_at is not None
    finally:
        await engine.stop()


async def test_a_fired_one_shot_is_retired_and_kept(engine: Engine, client: Client) -> None:
    skill = (await engine.skills.register({
        "name": "once", "instructions": "x", "in_minutes": 0.05, "notify_on_completion": False,
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "once"}}],
    })).skill
    assert skill is not None and skill.schedule_id

    retired = await eventually(lambda: _retired(engine), timeout=30)
    assert (retired.enabled, retired.disabled_reason, retired.schedule_id) == (False, "fired", None)
    # The store first, then the schedule follows (deleted by the same run, a moment later).
    schedule_id = skill.schedule_id
    await eventually(lambda: _gone(client, schedule_id), timeout=30)
    runs = await engine.skills.runs("once")
    assert [r.status for r in runs] == ["success"] and [m["message"] for m in engine.outbox()] == ["once"]


async def _gone(client: Client, schedule_id: str) -> bool:
    return not await schedule_exists(client, schedule_id)


async def _retired(engine: Engine):  # noqa: ANN202
    skill = await engine.skills.get("once")
    return skill if skill.disabled_reason == "fired" else None


async def test_a_skill_waiting_for_its_tools_is_enabled_when_they_arrive(client: Client, settings: Settings,
                                                                        tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {})
    engine = await Engine(settings.model_copy(update={"mcp_config": config}), client).start()
    try:
        waiting = {"name": "utc time", "instructions": "x", "schedule": "0 9 * * *", "notify_on_completion": False,
                   "execution_plan": [{"toolName": "time_get_current_time", "parameters": {"timezone": "UTC"}}]}
        with pytest.raises(SkillValidationError, match="unknown tool 'time_get_current_time'"):
            await engine.skills.register(waiting)
        skill = (await engine.skills.register({**waiting, "enabled": False})).skill
        assert skill is not None and skill.schedule_id and skill.disabled_reason == "missing tools"
        assert (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.state.paused
        one_shot = {**waiting, "name": "once", "schedule": None,
                    "at": (datetime.now(UTC) + timedelta(hours=1)).isoformat(), "enabled": False}
        assert (await engine.skills.register(one_shot)).skill.disabled_reason == "missing tools"  # type: ignore[union-attr]

        # The tool's server appears in the config file; the worker picks it up without a restart.
        write_mcp_config(config, {"time": {"command": str(Path(sys.executable).parent / "mcp-server-time")}})
        await eventually(lambda: _has_tool(engine, "time_get_current_time"), timeout=30)
        await engine.skills.register({**waiting, "name": "mine"})
        await engine.skills.pause("mine")

        await trigger_schedule(client, f"{settings.task_queue}-maintenance")
        enabled = await eventually(lambda: _enabled(engine, "utc time"), timeout=30)
        assert enabled.disabled_reason is None
        # The store first, then the schedule follows.
        await eventually(lambda: _unpaused(client, skill.schedule_id), timeout=30)
        # Only "missing tools" comes back by itself: a skill the user paused, and a one-shot, stay.
        assert (await engine.skills.get("mine")).disabled_reason == "by user"
        assert (await engine.skills.get("once")).disabled_reason == "missing tools"
    finally:
        await engine.stop()


async def _has_tool(engine: Engine, name: str) -> bool:
    return name in (await engine.skills.catalog()).tool_names()


async def _unpaused(client: Client, schedule_id: str) -> bool:
    return not (await client.get_schedule_handle(schedule_id).describe()).schedule.state.paused


async def _enabled(engine: Engine, name: str):  # noqa: ANN202
    skill = await engine.skills.get(name)
    return skill if skill.enabled else None


async def test_a_notifier_slower_than_the_heartbeat_timeout_still_delivers(client: Client, settings: Settings,
                                                                          tmp_path: Path) -> None:
    slow_log = tmp_path / "slow.log"
    settings = settings.model_copy(update={"notifier_tool": "slow_notify", "mcp_config": write_mcp_config(
        tmp_path / "mcp.json", {"slow": {"command": sys.executable, "args": [str(FAKES / "slow_server.py")],
                                         "env": {"FAKE_SLOW_LOG": str(slow_log)}}})})
    engine = await Engine(settings, client).start()
    try:
        await engine.skills.register({"name": "hello", "instructions": "x", "notify_on_completion": True,
                                      "execution_plan": [
            {"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})
        run = await engine.skills.run("hello")
        assert run.status == "success"
        # The notice takes 12 s, past notify_user's 10 s heartbeat timeout: it heartbeats, so it is
        # delivered once and recorded (last_notified_at is set only after the notifier said ok).
        notified = await eventually(lambda: _notified(engine), timeout=60)
        assert notified.last_notified_at is not None
        lines = slow_log.read_text().splitlines()
        assert [line for line in lines if line.startswith("start")] == ["start ✅ hello: outbox_send_message: " +
                                                                         run.tool_calls[0].result]
    finally:
        await engine.stop()


async def test_an_agent_tool_call_slower_than_the_heartbeat_timeout_is_made_once(
        client: Client, settings: Settings, tmp_path: Path, llm: ScriptedLLM) -> None:
    """agent_tool heartbeats while its call runs, as call_tool does: a call past its 10 s heartbeat timeout
    (a slow tool, or a chat's proposal on a loaded machine) is neither timed out nor made again."""
    slow_log = tmp_path / "slow.log"
    settings = settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": "patient",
        "mcp_config": write_mcp_config(tmp_path / "mcp.json", {"slow": {
            "command": sys.executable, "args": [str(FAKES / "slow_server.py")], "env": {"FAKE_SLOW_LOG": str(slow_log)}}})})
    # 15 s: the first attempt would time out at 10 s and its retry start at 12 s, while it still runs.
    llm.script("patient", [call("slow_slow", {"seconds": 15, "message": "m"}), say("Done.")])
    engine = await Engine(settings, client).start()
    try:
        await engine.skills.register({"name": "patient", "instructions": "Call the slow tool once.",
                                      "required_tools": ["slow_slow"], "notify_on_completion": False})
        run = await engine.skills.run("patient")
        assert (run.status, run.summary) == ("success", "Done.")
        assert slow_log.read_text().splitlines() == ["start m", "done m"]
    finally:
        await engine.stop()


async def _notified(engine: Engine) -> Skill | None:
    skill = await engine.skills.get("hello")
    return skill if skill.last_notified_at is not None else None


async def test_a_completion_notice_only_when_the_run_did_not_message_the_user(engine: Engine) -> None:
    """notify_on_completion unset: a notice unless the run itself sent the user a message;
    true: always; false: never."""
    def plan(tool: str, **parameters: object) -> list[dict[str, object]]:
        return [{"toolName": tool, "parameters": parameters}]

    await engine.skills.register({"name": "drink water", "instructions": "x",
                                  "execution_plan": plan("outbox_send_message", message="Drink water!")})
    await engine.skills.register({"name": "count", "instructions": "x",
                                  "execution_plan": plan("outbox_list_messages", limit=1)})
    await engine.skills.register({"name": "quiet", "instructions": "x", "notify_on_completion": False,
                                  "execution_plan": plan("outbox_list_messages", limit=1)})
    await engine.skills.register({"name": "loud", "instructions": "x", "notify_on_completion": True,
                                  "execution_plan": plan("outbox_send_message", message="Loud!")})
    assert (await engine.skills.get("drink water")).notify_on_completion is None  # unset stays automatic

    for name in ("drink water", "count", "quiet", "loud"):
        assert (await engine.skills.run(name)).status == "success"
    # A run's notice is sent before its workflow ends: the outbox is complete now.
    messages = [m["message"] for m in engine.outbox()]
    assert messages[0] == "Drink water!" and messages[2] == "Loud!"
    assert messages[1].startswith("✅ count: outbox_list_messages: ")
    assert messages[3].startswith("✅ loud: outbox_send_message: Message ")
    assert len(messages) == 4


async def test_an_agent_run_that_sent_a_message_gets_no_completion_notice(client: Client, settings: Settings,
                                                                          llm: ScriptedLLM) -> None:
    engine = await Engine(settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key",
                                                      "llm_model": "default"}), client).start()
    try:
        llm.script("default", [call("outbox_send_message", {"message": "Good morning!"}), say("Sent.")])
        llm.script("quiet", [say("Nothing new today.")])
        for name, model in (("sender", "default"), ("answerer", "quiet")):
            await engine.skills.register({"name": name, "instructions": "Good morning", "model": model,
                                          "required_tools": ["outbox_send_message"]})
            assert (await engine.skills.run(name)).status == "success"
        assert [m["message"] for m in engine.outbox()] == ["Good morning!", "✅ answerer: Nothing new today."]
    finally:
        await engine.stop()


async def test_a_failed_one_shot_says_so_without_a_next_fire(engine: Engine, client: Client) -> None:
    skill = (await engine.skills.register(broken("once", schedule=None, in_minutes=0.05))).skill
    assert skill is not None and skill.schedule_id
    retired = await eventually(lambda: _retired(engine), timeout=30)
    assert retired.disabled_reason == "fired" and retired.last_run_status == "error"
    run = (await engine.skills.runs("once"))[0]
    # A one-shot has no later fire to resume after; the summary gets one full stop.
    await eventually(engine.outbox, timeout=30)
    assert [m["message"] for m in engine.outbox()] == [f"❌ once: {run.summary}."]
    assert "Scheduled fires resume" not in engine.outbox()[0]["message"]
