"""The schedule read from the user's words in a real chat turn: a plain reminder proposed with no model,
and a model's proposal that contradicts the message flagged.

Everything is real (the worker, ChatTurn, the registration road, the store's approvals, the schedule)
but the model: the scripted server, which counts every request it gets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client

from config.settings import Settings
from tests.conftest import BUNDLED_DIR, Engine, schedule_exists
from tests.fakes.llm_server import ScriptedLLM, call, say


@pytest.fixture
async def reader(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    """The chat as the owner runs it: plain reminders read with no model (the suite's default is off)."""
    running = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": "chat",
        "bundled_skills_dir": BUNDLED_DIR, "chat_plain_reminders": True,
    }), client).start()
    yield running
    await running.stop()


async def test_a_plain_reminder_is_proposed_and_made_with_no_model(reader: Engine, llm: ScriptedLLM,
                                                                    client: Client) -> None:
    before = datetime.now(UTC)
    reply = await reader.skills.chat("remind me in 10 minutes to check the oven", session_id="oven")
    assert llm.requests == []  # not one request: no tokens
    assert reply.ok and reply.reply.startswith("Read without the model (0 tokens): a reminder in 10 minutes")
    assert reply.said_by == "engine"
    assert (reply.prompt_tokens, reply.completion_tokens) == (0, 0)
    [proposal] = reply.proposals
    assert (proposal.tool, proposal.status, proposal.session_id) == ("memory_store_skill", "pending", "oven")
    assert "tier: Direct" in proposal.summary and 'outbox_send_message {"message": "Reminder: Check the oven"}' \
        in proposal.summary and "check:" not in proposal.summary
    assert await reader.skills.list() == []  # proposed, not made

    done = await reader.skills.chat("yes", session_id="oven")
    assert llm.requests == []
    [change] = done.changes
    assert (change["action"], change["tier"]) == ("created", "direct")
    skill = await reader.skills.get(change["id"])
    assert skill.trigger_config is not None and skill.trigger_config.at is not None
    assert timedelta(minutes=9) < skill.trigger_config.at - before < timedelta(minutes=11)
    assert skill.schedule_id and await schedule_exists(client, skill.schedule_id)


async def test_a_recurring_reminder_with_no_model(reader: Engine, llm: ScriptedLLM) -> None:
    reply = await reader.skills.chat("every weekday at 9 remind me to stand up", session_id="up")
    assert llm.requests == [] and "weekdays at 09:00" in reply.reply
    [proposal] = reply.proposals
    assert "cron '0 9 * * 1-5' (UTC)" in proposal.summary
    await reader.skills.chat("yes", session_id="up")
    [skill] = await reader.skills.list()
    assert skill.trigger_config is not None and skill.trigger_config.schedule == "0 9 * * 1-5"
    assert skill.execution_plan and skill.execution_plan[0].parameters == {"message": "Reminder: Stand up"}


async def test_what_is_not_plainly_a_reminder_goes_to_the_model(reader: Engine, llm: ScriptedLLM) -> None:
    # Each answer twice: a turn whose model answered a request for a skill without a call may ask it again.
    llm.script("chat", [say("At 03:00 or 15:00?")] * 2)
    reply = await reader.skills.chat("remind me at 3 to call mum", session_id="m")
    assert reply.reply.startswith("At 03:00 or 15:00?") and reply.proposals == [] and llm.requests_for("chat")
    assert reply.said_by == "model"
    asked = len(llm.requests_for("chat"))
    llm.script("chat", [say("A summary of which messages?")] * 2)
    reply = await reader.skills.chat("every monday at 8am send me a summary of what came in", session_id="m")
    # (The answer is whichever the script has left: a turn not asked again leaves the first one's second.)
    assert not reply.reply.startswith("Read without") and reply.proposals == [] \
        and len(llm.requests_for("chat")) > asked


async def test_a_reminder_whose_name_is_taken_goes_to_the_model(reader: Engine, llm: ScriptedLLM) -> None:
    await reader.skills.register({"name": "reminder: stand up", "instructions": "x", "schedule": "0 9 * * *",
                                  "execution_plan": [{"toolName": "outbox_send_message",
                                                      "parameters": {"message": "up"}}]})
    llm.script("chat", [say("You already have that one.")] * 2)
    reply = await reader.skills.chat("every weekday at 9 remind me to stand up", session_id="dup")
    assert reply.reply.startswith("You already have that one.") and llm.requests_for("chat")
    assert reply.proposals == []


async def test_a_models_schedule_that_contradicts_the_message_is_read_from_the_words_instead(
        assistant: Engine, llm: ScriptedLLM) -> None:
    """The small model's habit: "every weekday" stored as every day. Where the engine reads the words for sure,
    the proposal takes its reading, and says what the model had proposed."""
    plan = [{"toolName": "outbox_send_message", "parameters": {"message": "Stand up!"}}]
    llm.script("chat", [call("memory_store_skill", {"name": "stand up", "instructions": "Remind me to stand up",
                                                    "schedule": "0 9 * * *", "execution_plan": plan}),
                        say("Reply yes."),
                        call("memory_store_skill", {"name": "stand up", "instructions": "Remind me to stand up",
                                                    "schedule": "0 9 * * 1-5", "execution_plan": plan}),
                        say("Reply yes.")])
    reply = await assistant.skills.chat("every weekday at 9 remind me to stand up", session_id="c")
    [proposal] = reply.proposals
    assert proposal.arguments["data"]["trigger_config"]["schedule"] == "0 9 * * 1-5"
    assert ("check: the model proposed cron '0 9 * * *' (UTC), but you said weekdays; this fires every day: "
            "proposed as your words say instead") in proposal.summary
    assert "check: you said weekdays" not in proposal.summary  # the schedule proposed agrees with the words
    assert "proposed as your words say" in llm.requests_for("chat")[1].messages[-1]["content"]  # the model reads it
    right = await assistant.skills.chat("every weekday at 9 remind me to stand up", session_id="c")
    assert "check:" not in right.proposals[0].summary
