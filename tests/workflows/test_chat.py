"""Talking to it: a message, the cron-scheduling playbook, the management tools, a skill on a schedule.

The model is the scripted OpenAI-compatible server; everything else is real: the SKILL.md
playbook matched and disclosed, the management tools taking the registration road, the
store, the schedule."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

import workflows.chat
from config.settings import Settings
from skills.errors import SkillsError
from tests.conftest import Engine, schedule_exists
from tests.fakes.llm_server import ScriptedLLM, call, say

MANAGEMENT = ["get_tool_catalog", "memory_store_skill", "memory_update_skill", "memory_list_skills",
              "memory_get_skill", "memory_delete_skill", "memory_next_fires", "emit_event", "memory_undo"]


async def test_remind_me_in_5_minutes_becomes_a_one_shot(assistant: Engine, llm: ScriptedLLM,
                                                         client: Client) -> None:
    # The model's usual slips: everything flattened, camelCase, the plan and the tools as strings.
    llm.script("chat", [
        call("get_tool_catalog", {}),
        call("memory_store_skill", {
            "name": "drink water", "instructions": "Remind the user to drink water", "in_minutes": "5",
            "executionPlan": json.dumps([{"toolName": "outbox_send_message",
                                          "parameters": {"message": "Time to drink water!"}}]),
            "requiredTools": "outbox_send_message", "notifyOnCompletion": "false",
        }),
        say("Done: I'll remind you to drink water in 5 minutes."),
    ])
    before = datetime.now(UTC)
    reply = await assistant.skills.chat("Remind me in 5 minutes to drink water", session_id="water")
    assert reply.ok and reply.reply == "Done: I'll remind you to drink water in 5 minutes."
    assert "cron-scheduling" in reply.matched
    # Proposed, not made (docs/chat-confirmation.md): the user's plain yes makes it.
    [proposal] = reply.proposals
    assert reply.changes == [] and "tier: Direct" in proposal.summary and "once at " in proposal.summary
    # What it will do in the next 30 days, before the yes: one run, its one message.
    assert "next 30 days: 1 run; 1 message (1 each: 1 from the plan)" in proposal.summary
    reply = await assistant.skills.chat("yes", session_id="water")
    [change] = reply.changes
    assert (change["action"], change["name"], change["tier"]) == ("created", "drink water", "direct")

    skill = await assistant.skills.get("drink water")
    assert skill.trigger_config is not None and skill.trigger_config.at is not None
    assert timedelta(minutes=4) < skill.trigger_config.at - before < timedelta(minutes=6)
    assert skill.execution_plan and skill.execution_plan[0].parameters == {"message": "Time to drink water!"}
    assert not skill.notify_on_completion and skill.schedule_id
    assert await schedule_exists(client, skill.schedule_id)

    first = llm.requests_for("chat")[0]
    # The management tools, and `skill` for the playbook's details (its references/ files).
    assert sorted(first.tool_names) == sorted([*MANAGEMENT, "skill"])
    system = first.messages[0]["content"]
    assert "cron-scheduling" in system and "in_minutes" in system  # the playbook, disclosed
    stored = llm.requests_for("chat")[2].messages[-1]
    assert stored["role"] == "tool" and "in_minutes=5 converted to at=" in stored["content"]


async def test_remind_me_every_5_minutes_becomes_a_recurring_skill(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [
        call("memory_store_skill", {"name": "stretch", "instructions": "Remind me to stretch",
                                    "cronExpression": "*/5 * * * *",
                                    "execution_plan": [{"toolName": "outbox_send_message",
                                                        "parameters": {"message": "Stretch!"}}]}),
        say("Every 5 minutes I'll remind you to stretch."),
    ])
    [proposal] = (await assistant.skills.chat("Remind me EVERY 5 minutes to stretch", session_id="st")).proposals
    assert "next fires: " in proposal.summary
    [change] = (await assistant.skills.chat("ok", session_id="st")).changes
    assert change["trigger"]["schedule"] == "*/5 * * * *" and change["next_fire"]
    skill = await assistant.skills.get("stretch")
    assert skill.trigger_config is not None
    assert (skill.trigger_config.schedule, skill.trigger_config.timezone) == ("*/5 * * * *", "UTC")


async def test_a_bad_cron_comes_back_to_the_model_which_corrects_it(assistant: Engine, llm: ScriptedLLM) -> None:
    plan = [{"toolName": "outbox_send_message", "parameters": {"message": "Stand up"}}]
    llm.script("chat", [
        call("memory_store_skill", {"name": "stand up", "instructions": "x", "schedule": "0 25 * * *",
                                    "execution_plan": plan}),
        call("memory_store_skill", {"name": "stand up", "instructions": "x", "schedule": "0 15 * * *",
                                    "execution_plan": plan}),
        say("Scheduled for 15:00 every day."),
    ])
    reply = await assistant.skills.chat("every day at 25 o'clock tell me to stand up", session_id="up")
    assert reply.ok and len(reply.proposals) == 1  # the refused call proposed nothing
    reply = await assistant.skills.chat("yes", session_id="up")
    assert reply.ok and [c["action"] for c in reply.changes] == ["created"]
    refusal = llm.requests_for("chat")[1].messages[-1]["content"]
    assert "trigger_config.schedule" in refusal and "hour 25 is out of range" in refusal
    assert "Fix these fields and call memory_store_skill again" in refusal
    skill = await assistant.skills.get("stand up")
    assert skill.trigger_config is not None and skill.trigger_config.schedule == "0 15 * * *"


async def test_the_model_reads_the_playbooks_details_when_it_asks(assistant: Engine, llm: ScriptedLLM) -> None:
    """Progressive disclosure's last tier: the first request carries the playbook's core; its references
    are read through the `skill` tool. Only the skill's own resource files: no path leads out."""
    llm.script("chat", [
        call("skill", {"skill_name": "cron-scheduling", "file": "references/schedules.md"}),
        call("skill", {"skill_name": "cron-scheduling", "file": "../../../../../../etc/passwd"}),
        call("skill", {"skill_name": "cron-scheduling", "file": "SKILL.md"}),
        call("skill", {"skill_name": "no-such-skill"}),
        say("Every working day at 9, not on holidays."),
    ])
    reply = await assistant.skills.chat("every working day at 9 remind me to file my hours", session_id="detail")
    assert reply.ok
    first, *later = llm.requests_for("chat")
    assert "business_days_only" not in first.messages[0]["content"]  # a detail, not in the core
    answers = [r.messages[-1]["content"] for r in later]
    assert "business_days_only" in answers[0] and "skip_holidays" in answers[0]
    assert answers[1].startswith("Error: skill 'cron-scheduling' has no file") and "root:" not in answers[1]
    assert "references/schedules.md" in answers[1]  # the files it may ask for
    assert answers[2].startswith("Error: skill 'cron-scheduling' has no file")
    assert answers[3].startswith("Error: Skill 'no-such-skill' not found")


async def test_a_session_goes_on_over_several_turns(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [say("Hello! What should I schedule?"), call("memory_list_skills", {}),
                        say("You have no skills yet.")])
    first = await assistant.skills.chat("hi", session_id="s1")
    second = await assistant.skills.chat("what do I have?", session_id="s1")
    assert (first.reply, second.reply) == ("Hello! What should I schedule?", "You have no skills yet.")
    history = [m for m in llm.requests_for("chat")[1].messages if m["role"] != "system"]
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "hi"), ("assistant", "Hello! What should I schedule?"), ("user", "what do I have?")]
    # Every request has exactly one system prompt: this turn's.
    assert sum(m["role"] == "system" for m in llm.requests_for("chat")[1].messages) == 1
    other = await _fresh_session(assistant, llm)
    assert [m["content"] for m in other if m["role"] == "user"] == ["hello again"]


async def _fresh_session(assistant: Engine, llm: ScriptedLLM) -> list[dict[str, object]]:
    llm.script("chat", [say("Hi.")])
    await assistant.skills.chat("hello again", session_id="s2")
    return llm.requests_for("chat")[-1].messages


async def test_a_bug_in_a_chat_turns_own_code_fails_the_turn_instead_of_retrying_it_for_ever(
        client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any exception of workflow code that is not a Temporal failure fails the workflow *task*, which
    Temporal retries for ever: the person would wait out the client's 15 minutes for nothing. Here the
    turn's first line raises (a stand-in for a bug: a helper the workflow calls), and the turn fails."""

    def broken(session_id: str) -> str:
        raise ValueError("a bug in the engine's own code")

    # The workflow module is passed through the sandbox (service.workflow_sandbox.WORKFLOW_RUNNER): its global is what it calls.
    monkeypatch.setattr(workflows.chat, "chat_conversation_id", broken)
    engine = await Engine(settings, client).start()
    try:
        with pytest.raises(SkillsError, match="ChatTurn failed: a bug in the engine's own code"):
            await asyncio.wait_for(engine.skills.chat("hello", session_id="bug"), 60)
        [listed] = [w async for w in client.list_workflows(
            f"TaskQueue='{settings.task_queue}' AND WorkflowType='ChatTurn'")]
        described = await client.get_workflow_handle(listed.id).describe()  # the list's status may lag
        assert described.status == WorkflowExecutionStatus.FAILED
    finally:
        await engine.stop()
