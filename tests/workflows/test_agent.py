"""The Agent tier against a scripted OpenAI-compatible server on loopback, with real MCP tools,
a real store and real schedules: the loop, the sandbox, retries, tokens and budgets."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio.client import Client

from adapters.store import Store
from config.settings import Settings
from tests.conftest import Engine, eventually, schedule_exists, trigger_schedule
from tests.fakes.llm_server import (
    ScriptedLLM,
    call,
    calls,
    error,
    hang_until,
    long,
    say,
    scripted_llm_fixture,
)
from tests.history import replayer
from workflows.run import SkillRun

KEY = "sk-test-key"


llm = scripted_llm_fixture(api_key=KEY)


@pytest.fixture
def agent_settings(settings: Settings, llm: ScriptedLLM) -> Settings:
    return settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": KEY, "llm_model": "default"})


@pytest.fixture
async def agent(client: Client, agent_settings: Settings) -> AsyncIterator[Engine]:
    engine = await Engine(agent_settings, client).start()
    yield engine
    await engine.stop()


def briefing(name: str = "briefing", model: str = "default", **extra: object) -> dict[str, object]:
    return {"name": name, "instructions": "Send me a short good-morning note.", "model": model,
            "required_tools": ["outbox_send_message"], "notify_on_completion": False, **extra}


async def test_an_agent_skill_fires_through_its_schedule(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [
        call("outbox_send_message", {"message": "Good morning!"}, prompt_tokens=120, completion_tokens=15),
        say("Sent a good-morning note.", prompt_tokens=150, completion_tokens=8),
    ])
    await agent.skills.register(briefing(in_minutes=0.05, timezone="Europe/Paris"))
    messages = await eventually(agent.outbox, timeout=30)
    assert [m["message"] for m in messages] == ["Good morning!"]

    run = (await eventually(lambda: _finished(agent, "briefing"), timeout=30))[0]
    assert (run.status, run.trigger, run.tier, run.summary) == ("success", "schedule", "agent",
                                                                "Sent a good-morning note.")
    assert (run.prompt_tokens, run.completion_tokens) == (270, 23)
    assert [(c.tool, c.ok) for c in run.tool_calls] == [("outbox_send_message", True)]

    first, second = llm.requests_for("default")
    assert first.tool_names == ["outbox_send_message"]  # the sandbox: only required_tools are offered
    system = first.messages[0]["content"]
    assert "Europe/Paris" in system and "outbox_send_message" in system
    assert first.messages[1]["content"].startswith("Send me a short good-morning note.")
    assert second.messages[-1]["role"] == "tool" and "stored in the outbox" in second.messages[-1]["content"]


async def test_a_forbidden_tool_is_never_executed(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [
        call("outbox_send_message", {"message": "I should not be here"}),
        say("I could not send it."),
    ])
    await agent.skills.register(briefing(required_tools=["outbox_list_messages"]))
    run = await agent.skills.run("briefing")
    assert agent.outbox() == []
    assert run.status == "success" and run.tool_calls[0].refused and not run.tool_calls[0].ok
    told = llm.requests_for("default")[1].messages[-1]
    assert told["role"] == "tool" and "not available to this skill" in told["content"]


async def test_the_loop_ends_at_max_steps(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [call("outbox_list_messages", {}), call("outbox_list_messages", {})])
    await agent.skills.register(briefing(required_tools=["outbox_list_messages"], max_steps=2))
    run = await agent.skills.run("briefing")
    assert run.status == "error" and run.summary == "stopped: max_steps (2) reached without a final answer"
    assert len(llm.requests_for("default")) == 2


async def test_malformed_tool_calls_are_told_then_end_the_run(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [
        call("outbox_send_message", '{"message": "unclosed'),
        call("outbox_send_message", {"message": "fixed"}),
        say("Sent after fixing my call."),
    ])
    await agent.skills.register(briefing())
    run = await agent.skills.run("briefing")
    assert run.status == "success" and [m["message"] for m in agent.outbox()] == ["fixed"]
    assert "not valid JSON" in llm.requests_for("default")[1].messages[-1]["content"]

    llm.script("stubborn", [call("outbox_send_message", "not json")] * 3)
    await agent.skills.register(briefing(name="stubborn", model="stubborn"))
    stubborn = await agent.skills.run("stubborn")
    assert stubborn.status == "error" and "malformed tool calls 3 turns in a row" in stubborn.summary


async def test_rate_limits_and_server_errors_retry_a_bad_key_does_not(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [error(429, retry_after=1), error(500), say("Fine in the end.")])
    await agent.skills.register(briefing())
    run = await agent.skills.run("briefing")
    assert (run.status, run.summary) == ("success", "Fine in the end.")
    asked = llm.requests_for("default")
    assert [r.status for r in asked] == [429, 500, 200]
    # One turn, one Idempotency-Key for its three attempts; a digest, which names neither skill nor workflow.
    [key] = {r.headers.get("idempotency-key") for r in asked}
    assert key and re.fullmatch(r"[0-9a-f]{32}", key), key

    llm.script("refused", [error(401)])
    await agent.skills.register(briefing(name="refused", model="refused"))
    refused = await agent.skills.run("refused")
    assert refused.status == "error" and "refused the API key: set SKILLS_LLM_API_KEY" in refused.summary
    assert len(llm.requests_for("refused")) == 1  # not retried


async def test_a_slow_endpoint_is_reported_as_timed_out_not_unreachable_and_fails_over(
        client: Client, agent_settings: Settings, llm: ScriptedLLM) -> None:
    """An endpoint that is reached but answers after SKILLS_LLM_TIMEOUT (a local model on CPU): the run
    says it timed out, after how long and which setting to raise; the same prompt is not sent again
    behind the one the server is still working on, and a fallback model is tried."""
    release = threading.Event()
    llm.script("slow", [hang_until(release, say("too late"), timeout=30)])
    llm.script("slow-too", [hang_until(release, say("too late"), timeout=30)])
    llm.script("quick", [say("Done in time.")])
    # 3 s: the quick model's answer, in this loaded process, comes well within it; the slow ones never do.
    engine = await Engine(agent_settings.model_copy(update={"llm_timeout": timedelta(seconds=3)}), client).start()
    try:
        await engine.skills.register(briefing(name="slow", model="slow"))
        slow = await engine.skills.run("slow")
        assert slow.status == "error"
        assert "timed out after 3 s without a word for the model 'slow'" in slow.summary, slow.summary
        assert "SKILLS_LLM_TIMEOUT" in slow.summary and "could not be reached" not in slow.summary
        assert len(llm.requests_for("slow")) == 1  # not asked again

        await engine.skills.register(briefing(name="patient", model="slow-too", fallback_models=["quick"]))
        patient = await engine.skills.run("patient")
        assert (patient.status, patient.summary, patient.model) == ("success", "Done in time.", "quick")
    finally:
        release.set()
        await engine.stop()


async def test_a_very_long_answer_is_kept_in_the_store_not_in_the_run(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [long(200_000, completion_tokens=1000)])
    await agent.skills.register(briefing())
    run = await agent.skills.run("briefing")
    assert run.status == "success" and len(run.summary) == 2000, run.summary[:500]
    stored = Store.open(agent.settings.store_url).conversations.load_messages(run.run_id)
    assert len(stored[-1].content or "") == 200_000


async def test_direct_runs_make_no_request_to_the_endpoint(agent: Engine, llm: ScriptedLLM) -> None:
    await agent.skills.register({"name": "water", "instructions": "x", "notify_on_completion": False,
                                 "execution_plan": [{"toolName": "outbox_send_message",
                                                     "parameters": {"message": "Drink water"}}]})
    run = await agent.skills.run("water")
    assert run.status == "success" and (run.prompt_tokens, run.completion_tokens) == (0, 0)
    assert [r for r in llm.requests if r.path.endswith("/chat/completions")] == []


async def test_the_run_token_cap_ends_a_run(client: Client, agent_settings: Settings, llm: ScriptedLLM) -> None:
    engine = await Engine(agent_settings.model_copy(update={"run_token_cap": 1000}), client).start()
    try:
        llm.script("default", [call("outbox_list_messages", {}, prompt_tokens=900, completion_tokens=200),
                               say("never reached")])
        await engine.skills.register(briefing(required_tools=["outbox_list_messages"]))
        run = await engine.skills.run("briefing")
        assert run.status == "error" and run.summary == "stopped: the run used 1,100 tokens, over its cap of 1,000"
        assert llm.remaining("default") == 1
    finally:
        await engine.stop()


async def test_a_skill_over_its_daily_budget_pauses(client: Client, agent_settings: Settings,
                                                    llm: ScriptedLLM) -> None:
    engine = await Engine(agent_settings.model_copy(update={"skill_daily_tokens": 500}), client).start()
    try:
        llm.script("default", [say("one", prompt_tokens=300, completion_tokens=10),
                               say("two", prompt_tokens=300, completion_tokens=10)])
        skill = (await engine.skills.register(briefing(schedule="0 7 * * *"))).skill
        assert skill is not None and skill.schedule_id
        assert (await engine.skills.run("briefing")).status == "success"
        assert (await engine.skills.get("briefing")).enabled
        await engine.skills.run("briefing")
        paused = await engine.skills.get("briefing")
        assert (paused.enabled, paused.disabled_reason) == (False, "budget")
        await eventually(lambda: _paused(client, skill.schedule_id), timeout=30)
        alert = engine.outbox()[-1]["message"]
        assert alert.startswith("⛔ briefing was disabled (budget). the skill used 620 tokens in 24 hours")
        assert "daily budget is 500" in alert and "300 prompt + 10 completion tokens" in alert
    finally:
        await engine.stop()


async def test_a_spike_pauses_the_skill(client: Client, agent_settings: Settings, llm: ScriptedLLM) -> None:
    engine = await Engine(agent_settings.model_copy(update={"spike_floor": 1000}), client).start()
    try:
        llm.script("default", [say("usual", prompt_tokens=90, completion_tokens=10)] * 3
                   + [say("huge", prompt_tokens=4000, completion_tokens=1000)])
        await engine.skills.register(briefing())
        for _ in range(3):
            await engine.skills.run("briefing")
        assert (await engine.skills.get("briefing")).enabled
        await engine.skills.run("briefing")
        paused = await engine.skills.get("briefing")
        assert paused.disabled_reason == "budget"
        assert "5,000 tokens, 50.0x the skill's usual 100" in engine.outbox()[-1]["message"]
    finally:
        await engine.stop()


async def test_past_the_global_budget_agent_fires_are_skipped(client: Client, agent_settings: Settings,
                                                              llm: ScriptedLLM) -> None:
    engine = await Engine(agent_settings.model_copy(update={"daily_tokens": 100}), client).start()
    try:
        llm.script("default", [say("spent", prompt_tokens=200, completion_tokens=1)])
        skill = (await engine.skills.register(briefing(schedule="0 7 * * *"))).skill
        await engine.skills.register(briefing(name="other", schedule="0 8 * * *"))
        await engine.skills.run("briefing")
        other = (await engine.skills.get("other")).schedule_id
        assert skill is not None and other
        await trigger_schedule(client, other)
        runs = await eventually(lambda: _finished(engine, "other"), timeout=30)
        assert runs[0].status == "skipped" and runs[0].summary.startswith("budget: all skills used 201 tokens")
        assert len(llm.requests_for("default")) == 1
    finally:
        await engine.stop()


async def test_the_endpoint_going_down_and_back_alerts_once_each(agent: Engine, client: Client,
                                                                 llm: ScriptedLLM) -> None:
    maintenance = client.get_schedule_handle(f"{agent.settings.task_queue}-maintenance")
    alerts = lambda: [m["message"] for m in agent.outbox() if "LLM endpoint" in m["message"]]  # noqa: E731
    llm.down()
    await _maintenance_now(client, agent)
    await eventually(lambda: len(alerts()) == 1, timeout=30)
    assert alerts()[0].startswith("⚠️ The LLM endpoint is unreachable")
    await _maintenance_now(client, agent)
    await agent.stop()
    await agent.start()  # a restart neither repeats nor forgets the alert
    await _maintenance_now(client, agent)
    assert len(alerts()) == 1
    llm.up()
    await _maintenance_now(client, agent)
    await eventually(lambda: len(alerts()) == 2, timeout=30)
    assert alerts()[1] == "✅ The LLM endpoint is reachable again."
    assert await schedule_exists(client, maintenance.id)


async def test_the_sandbox_holds_across_a_worker_restart_and_replay(agent: Engine, llm: ScriptedLLM,
                                                                   client: Client) -> None:
    llm.script("default", [
        calls([("outbox_send_message", {"message": "forbidden"}), ("outbox_list_messages", {"limit": 1})]),
        say("Done."),
    ])
    await agent.skills.register(briefing(required_tools=["outbox_list_messages"]))
    workflow_id = await agent.skills.run("briefing", wait=False)
    assert isinstance(workflow_id, str)
    await llm.wait_for("default", count=1)
    await agent.stop()
    await agent.start()
    run = await client.get_workflow_handle(workflow_id).result()
    assert run["status"] == "success" and agent.outbox() == []
    assert [(c["tool"], c["refused"]) for c in run["tool_calls"]] == [
        ("outbox_send_message", True), ("outbox_list_messages", False)]
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    await replayer(SkillRun).replay_workflow(history)


async def _maintenance_now(client: Client, engine: Engine) -> None:
    """One maintenance round, run now and waited for."""
    await client.execute_workflow("Maintenance", id=f"maintenance-{_seq()}", task_queue=engine.settings.task_queue)


_counter = iter(range(1_000_000))


def _seq() -> int:
    return next(_counter)


async def _paused(client: Client, schedule_id: str) -> bool:
    return (await client.get_schedule_handle(schedule_id).describe()).schedule.state.paused


async def test_with_no_llm_agent_skills_wait_disabled_and_runs_say_what_to_set(
        client: Client, settings: Settings, agent_settings: Settings, llm: ScriptedLLM) -> None:
    """No endpoint and no key: a scheduled Agent-tier skill is stored disabled (not left to fail
    every fire), a run and a chat turn fail at once naming the settings, and the skill enables
    itself on the first maintenance round of a worker that has an LLM."""
    engine = await Engine(settings, client).start()  # the test settings configure no LLM
    try:
        result = await engine.skills.register(briefing(schedule="0 7 * * *"))
        assert result.skill is not None and not result.skill.enabled and result.skill.disabled_reason == "no LLM"
        assert any("no LLM is configured" in note for note in result.notes)
        assert result.skill.schedule_id and await _paused(client, result.skill.schedule_id)

        run = await engine.skills.run("briefing")  # a manual run is never skipped
        assert run.status == "error" and "no LLM is configured: set SKILLS_LLM_BASE_URL" in run.summary
        history = await client.get_workflow_handle(run.workflow_id).fetch_history()
        attempts = [e.activity_task_started_event_attributes.attempt for e in history.events
                    if e.HasField("activity_task_started_event_attributes")]
        assert max(attempts) == 1  # not retried: nothing will change until the worker is configured

        reply = await engine.skills.chat("hello")
        assert not reply.ok and "SKILLS_LLM_BASE_URL" in reply.reply
    finally:
        await engine.stop()

    engine = await Engine(agent_settings, client).start()
    try:
        await _maintenance_now(client, engine)
        skill = await engine.skills.get("briefing")
        assert skill.enabled and skill.disabled_reason is None
        assert skill.schedule_id and not await _paused(client, skill.schedule_id)
        assert llm.requests_for("default") == []  # enabling asks the model nothing
    finally:
        await engine.stop()


async def _finished(engine: Engine, name: str):  # noqa: ANN202
    runs = await engine.skills.runs(name)
    return runs if runs and all(r.status != "running" for r in runs) else None


def _json(value: object) -> str:
    return json.dumps(value)
